"""The documentation a user reads: the site builds strictly and offline, and says what is true.

- ``mkdocs build --strict`` succeeds with every socket refused, as ``make docs``
  builds it: every page in the nav, every link and anchor resolving, every
  public module's docstrings rendered (``mkdocs.yml`` turns each of those into a
  warning, and ``--strict`` a warning into a failure);
- the README stays a README (at most 30 KB), and the user docs carry no issue
  numbers, commit hashes or mutation-run tallies: those belong in commit messages;
- every test a guarantee names exists, in the README and on the guarantees page,
  and every test the README names is on that page;
- every example of the README and the pages (a block fenced with a language) fits the
  ``COLUMN`` characters a code block of the site holds at a desktop width (measured in a
  browser by ``tests/test_site_browser.py``), a CJK character counting as two.

The examples of every page run in ``tests/test_readme.py``.
"""

from __future__ import annotations

import doctest
import importlib
import importlib.util
import inspect
import os
import re
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
GUARANTEES = DOCS / "guarantees.md"
#: What a reader of the site or the README sees: the text that must stay free of history.
USER_DOCS = [README, ROOT / "README.zh-CN.md", *sorted(DOCS.rglob("*.md"))]

# The build, in a fresh interpreter whose sockets all refuse: a fetch fails the build.
OFFLINE_BUILD = """
import sys
import pytest_socket
pytest_socket.disable_socket()
from mkdocs.__main__ import cli
cli.main(args=["build", "--strict", "--site-dir", sys.argv[1]], prog_name="mkdocs")
"""


#: The characters of the code font a code block of the site holds across at 1280 px.
COLUMN = 80


def build_site(out: Path) -> Path:
    """Build the site into ``out`` as ``make docs`` does, offline; fail on any warning."""
    done = subprocess.run([sys.executable, "-c", OFFLINE_BUILD, str(out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert done.returncode == 0, f"mkdocs build --strict failed:\n{done.stdout}\n{done.stderr}"
    return out


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_site(tmp_path_factory.mktemp("site"))


def test_the_site_builds_strictly_with_the_network_refused(site):
    for source in DOCS.rglob("*.md"):
        page = source.relative_to(DOCS).with_suffix("")
        built = site / (page.parent if page.name == "index" else page) / "index.html"
        assert built.is_file(), f"{source.relative_to(ROOT)} was not built"


def test_the_api_reference_renders_every_public_module(site):
    expected = {
        "poolsplit_core.poolsplit": ["Pool", "retrieve_pools", "explain_pools", "make_scorer",
                                     "AlwaysScopeOverflowError"],
        "poolsplit_core.prepared": ["PreparedStore"],
        "poolsplit_core.checks": ["check_entries"],
        "poolsplit_core.plan": ["plan_pools", "coverage", "load_pools", "save_pools"],
        "poolsplit_integrations.langchain": ["PoolSplitRetriever", "PoolSplitCompressor"],
        "poolsplit_integrations.llama_index": ["PoolSplitRetriever", "PoolSplitPostprocessor",
                                               "PoolSplitMemoryBlock"],
        "poolsplit_integrations.langgraph": ["PoolSplitStore", "PoolSplitStoreRetriever"],
    }
    for module, names in expected.items():
        page = module.rsplit(".", 1)[1]
        html = (site / "reference" / page / "index.html").read_text(encoding="utf-8")
        missing = [name for name in names if f'id="{module}.{name}"' not in html]
        assert not missing, f"reference/{page}: {missing} have no section"
        # Markdown reads an unfenced ``>>>`` line as three nested quotes.
        assert "<blockquote>" not in html, f"reference/{module}: a doctest rendered as prose"


#: Each reference page that lists its members by hand (docs/reference/*.md): its first section.
MAIN_FIRST = {"poolsplit_core.poolsplit": "Pool", "poolsplit_core.plan": "plan_pools",
              "poolsplit_integrations.langchain": "PoolSplitRetriever",
              "poolsplit_integrations.llama_index": "PoolSplitRetriever",
              "poolsplit_integrations.langgraph": "PoolSplitStore"}
REFERENCE = ["poolsplit_core.poolsplit", "poolsplit_core.prepared", "poolsplit_core.multilingual",
             "poolsplit_core.checks", "poolsplit_core.plan", "poolsplit_integrations.langchain",
             "poolsplit_integrations.llama_index", "poolsplit_integrations.langgraph"]


def reference_page(site: Path, module: str) -> str:
    return (site / "reference" / module.rsplit(".", 1)[1] / "index.html").read_text(
        encoding="utf-8")


@pytest.mark.parametrize("module", REFERENCE)
def test_the_api_reference_has_a_section_for_every_public_class_and_function(site, module):
    # A page that lists its members in order must list a class or function added later too.
    imported = importlib.import_module(module)
    public = [name for name, value in vars(imported).items() if not name.startswith("_")
              and (inspect.isclass(value) or inspect.isfunction(value))
              and value.__module__ == module]
    html = reference_page(site, module)
    missing = [name for name in public if f'id="{module}.{name}"' not in html]
    assert not missing, (f"reference/{module}: no section for {missing}; add them to the"
                         f" members of docs/reference/{module.rsplit('.', 1)[1]}.md")
    sections = re.findall(rf'<h2 id="{re.escape(module)}\.(\w+)"', html)
    if module in MAIN_FIRST:
        assert sections[0] == MAIN_FIRST[module], f"reference/{module} opens with {sections[0]}"


@pytest.mark.parametrize("module", REFERENCE)
def test_the_api_reference_reads_as_markdown_with_public_bases_and_formatted_signatures(
        site, module):
    html = reference_page(site, module)
    text = re.sub(r"<[^>]+>", "", html)
    assert ".. code-block" not in text, f"reference/{module}: a reST code-block shows as text"
    assert not re.search(r"::\s*$", text, re.M), f"reference/{module}: a reST '::' shows"
    for bases in re.findall(r'<p class="doc doc-class-bases">(.*?)</p>', html, re.S):
        shown = re.sub(r"<[^>]+>|\s", "", bases)
        assert not re.search(r"[:,]_", shown), f"reference/{module}: a private base in {shown}"
    # "Key init args" (Setup / Key init args / Instantiate, as LangChain documents its
    # components) is a list, one item an argument, not one paragraph
    for section in re.findall(r"<summary>Key init args</summary>(.*?)</details>", html, re.S):
        assert section.count("<li>") >= 3, f"reference/{module}: Key init args is not a list"
    # ruff formats a long signature one parameter a line (without it: one long line)
    widest = max((len(line) for code in re.findall(
        r'<div class="doc-signature highlight"><pre>(.*?)</pre>', html, re.S)
        for line in re.sub(r"<[^>]+>", "", code).splitlines()), default=0)
    assert widest <= COLUMN, f"reference/{module}: a signature line of {widest} characters"


@pytest.mark.parametrize("plot", ["profiles.png", "langgraph.png"])
def test_the_performance_page_shows_the_plots_make_bench_writes(site, plot):
    assert (site / "assets" / plot).read_bytes() == (ROOT / "benchmarks" / plot).read_bytes()
    html = (site / "performance" / "index.html").read_text(encoding="utf-8")
    assert f"assets/{plot}" in html


def test_the_site_asks_no_font_or_script_from_another_host(site):
    for page in site.rglob("*.html"):
        html = page.read_text(encoding="utf-8")
        fetched = re.findall(r'<(?:link|script)[^>]+(?:href|src)="(https?://[^"]+)"', html)
        assert not fetched, f"{page.relative_to(site)} loads {fetched}"


def test_the_readme_is_at_most_30_kb():
    size = README.stat().st_size
    assert size <= 30_000, f"README.md is {size} bytes; move a section to a page under docs/"


def columns(line: str) -> int:
    """How many columns ``line`` takes in a monospaced font: two for a wide (CJK) character."""
    return sum(2 if unicodedata.east_asian_width(char) in "WF" else 1 for char in line)


def examples(markdown: Path) -> list[tuple[int, list[str]]]:
    """The examples of a page: ``(first line number, lines)`` of each block fenced with a
    language (``text`` or a bare fence shows a program's output as it prints it)."""
    found: list[tuple[int, list[str]]] = []
    language, start, lines = None, 0, []
    for number, line in enumerate(markdown.read_text(encoding="utf-8").splitlines(), 1):
        if language is None:
            if fence := re.fullmatch(r"\s*```(\w*).*", line):
                language, start, lines = fence.group(1), number + 1, []
        elif line.strip() == "```":
            if language not in ("", "text"):
                found.append((start, lines))
            language = None
        else:
            lines.append(line)
    return found


@pytest.mark.parametrize("path", USER_DOCS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_example_fits_the_column_of_the_site(path):
    too_wide = [f"line {start + offset}: {columns(line)} columns"
                for start, lines in examples(path) for offset, line in enumerate(lines)
                if columns(line) > COLUMN]
    assert not too_wide, (f"{path.relative_to(ROOT)}: examples wider than the {COLUMN} columns"
                          f" a code block shows: {too_wide}")


HISTORY = {
    "an issue number": re.compile(r"\bissues? #?\d+|(?<![\w&/])#\d+\b", re.I),
    "a commit hash": re.compile(r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b"),
    "a tally of a mutation run": re.compile(r"\b\d+ (?:mutants|killed|survived|survivors)\b"),
    "a list of mutants": re.compile(r"`[\w.]+` \d+(?:[,\u2013-] ?\d+)+"),
}


@pytest.mark.parametrize("path", USER_DOCS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_the_user_docs_carry_no_issue_numbers_commit_hashes_or_mutation_tallies(path):
    text = path.read_text(encoding="utf-8")
    found = {what: pattern.findall(text) for what, pattern in HISTORY.items()}
    found = {what: hits for what, hits in found.items() if hits}
    assert not found, f"{path.relative_to(ROOT)} holds history a user does not need: {found}"


def named_tests(markdown: Path, heading: str | None = None) -> list[tuple[str, str | None]]:
    """The ``(file, test name or None)`` pairs of every guarantee table's "proved by" cells.

    ``::name`` continues the file named last in the same cell.
    """
    text = markdown.read_text(encoding="utf-8")
    if heading is not None:
        text = text.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]
    named = []
    for row in re.findall(r"^\| (.+) \|$", text, re.M):
        cells = row.split(" | ")
        if len(cells) != 2 or cells[1] == "proved by" or set(cells[1]) <= {"-", " "}:
            continue
        current = None
        for span in re.findall(r"`([^`]+)`", cells[1]):
            file, _, name = span.partition("::")
            if file.startswith("tests/") and file.endswith(".py"):
                current = file
            elif file or current is None:
                continue  # not a test reference, e.g. `langchain-tests`
            named.append((current, name or None))
    return named


def defines(file: str, name: str) -> bool:
    text = (ROOT / file).read_text(encoding="utf-8")
    pattern = rf"^\s*(?:async\s+def|def|class)\s+{re.escape(name)}\b"
    return re.search(pattern, text, re.M) is not None


@pytest.mark.parametrize("where", ["README.md", "docs/guarantees.md"])
def test_every_test_a_guarantee_names_exists(where):
    named = named_tests(ROOT / where, "Guarantees" if where == "README.md" else None)
    assert len(named) >= 40, f"{where}: the guarantee table names only {len(named)} tests"
    missing = [f"{file}::{name}" if name else file for file, name in named
               if not (ROOT / file).is_file() or (name and not defines(file, name))]
    assert not missing, f"{where} names tests that do not exist: {missing}"


def test_every_test_the_readme_names_is_on_the_guarantees_page():
    on_page = set(named_tests(GUARANTEES))
    missing = sorted(f"{f}::{n}" if n else f for f, n in
                     set(named_tests(README, "Guarantees")) - on_page)
    assert not missing, f"the README's guarantees name tests docs/guarantees.md does not: {missing}"


def test_the_docs_build_helpers_do_what_their_examples_say():
    spec = importlib.util.spec_from_file_location("docs_hooks", ROOT / "scripts" / "docs_hooks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    failed, tried = doctest.testmod(module)
    assert tried >= 2 and failed == 0
    text = "Intro:\n    >>> f(1)\n    2\n\n```\n>>> not a doctest\n```\n"
    assert module.fence_doctests(text).splitlines() == [
        "Intro:", "", "    ```pycon", "    >>> f(1)", "    2", "    ```", "",
        "```", ">>> not a doctest", "```"]
