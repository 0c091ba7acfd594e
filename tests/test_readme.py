"""Every example of the docs runs after the install the docs name for it, and prints what it says.

The docs are the README, the Chinese README ``README.zh-CN.md`` (its install
section is "安装") and every page of the documentation site under ``docs/``.
Each ``python`` block is tagged, on the line before it, with the install it
needs -- ``<!-- requires: poolsplit[langchain] -->`` -- and the reader must
see that ``pip install``: in the block's ``## `` section or under Install (a
README's Install section; for a page of the site, the top of the page before
its first ``## `` heading, or the site's Install page, ``docs/install.md``; for a page of
the Chinese guide under ``docs/zh/``, its own Install page, ``docs/zh/install.md``).
The blocks of a section that share a tag run in order in a fresh interpreter,
each in a fresh namespace of its own: a reader may copy any one block alone, so
each block imports and sets up what it uses. A block marked
``<!-- continues -->`` (above its tag, after a sentence that tells the reader it
continues the example above) runs in the namespace of the block before it
instead. A page's blocks before its first ``## `` heading form one section.
Then:

- every module they imported must come from a distribution the tagged install
  pulls in: the requirement closure of those requirements (extras and markers
  honoured, poolsplit's own extras read from ``pyproject.toml``). A block that
  needs numpy while ``poolsplit[langchain]`` does not bring numpy fails here,
  although numpy is installed in the test environment;
- the comment lines right after a ``print(...)`` line are that line's output,
  checked line by line, in order, as a doctest does: ``# ...`` stands for any
  number of lines, a lone ``#`` for an empty line.

The only concession to running offline: LlamaIndex's global tokenizer is set
to a whitespace split first (its default downloads a tiktoken encoding).
"""

from __future__ import annotations

import builtins
import importlib.metadata as metadata
import json
import re
import subprocess
import symtable
import sys
from functools import cache
from pathlib import Path

import pytest
import tomllib
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
README_ZH = ROOT / "README.zh-CN.md"
#: Each tested README and the title of its install section.
READMES = {README: "Install", README_ZH: "安装"}
#: The documentation site's pages, and the page that lists every install.
DOCS = ROOT / "docs"
INSTALL_PAGE = DOCS / "install.md"
#: The Chinese user guide, a page for each page of the English one, and its Install page.
ZH_DOCS = DOCS / "zh"
ZH_INSTALL_PAGE = ZH_DOCS / "install.md"
RUNNER = Path(__file__).resolve().parent / "readme_runner.py"
OFFLINE_TOKENIZER = "import llama_index.core\nllama_index.core.global_tokenizer = str.split\n"


# --------------------------------------------------------------------------
# Reading the README and the pages
# --------------------------------------------------------------------------


def doc_pages() -> list[Path]:
    """Every page of the documentation site, in path order."""
    return sorted(DOCS.rglob("*.md"))


def install_page(page: Path) -> Path:
    """The Install page a reader of ``page`` is pointed to: the Chinese one for a Chinese page."""
    return ZH_INSTALL_PAGE if page.is_relative_to(ZH_DOCS) else INSTALL_PAGE


def label(readme: Path) -> str:
    """How a README or page is named in test ids, tracebacks and messages."""
    return readme.relative_to(ROOT).as_posix()


#: The marker, above a block's ``requires`` tag, of a block that continues the one before.
CONTINUES = "<!-- continues -->"
#: What the prose before a continuing block says, so that a reader sees it (EN, ZH).
CONTINUES_SAID = ("continuing the example above", "接上例")


class Block:
    """One ``python`` block: its section, first code line, code and tagged install.

    ``continues``: marked ``<!-- continues -->``, it runs after the block before it in
    that block's namespace; ``before``: the text between the previous block and this one.
    """

    def __init__(self, section: str, line: int, code: str, requires: str | None,
                 readme: Path = README, continues: bool = False, before: str = "") -> None:
        self.section, self.line, self.code, self.requires = section, line, code, requires
        self.readme, self.continues, self.before = readme, continues, before


def heading(text: str) -> str:
    """A heading's words, without the ``{#anchor}`` the Chinese pages give it (the English slug)."""
    return re.sub(r"\s*\{#[^}]*\}\s*$", "", text).strip()


def read_blocks(readme: Path = README) -> list[Block]:
    blocks, section, tag, continues, start = [], "", None, False, 0
    lines = readme.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("## "):
            section = heading(line[3:])
        match = re.fullmatch(r"<!-- requires: (.+?) -->", line.strip())
        if line.strip() == CONTINUES:
            continues, tag = True, None
        elif match:
            tag = match.group(1)
        elif line.startswith("```python"):
            end = lines.index("```", i + 1)
            blocks.append(Block(section, i + 2, "\n".join(lines[i + 1:end]) + "\n", tag, readme,
                                continues, "\n".join(lines[start:i])))
            i, tag, continues, start = end, None, False, end + 1
        elif line.strip():
            tag, continues = None, False  # a marker or tag belongs to the block right below
        i += 1
    return blocks


def every_block() -> list[Block]:
    return [block for readme in [*READMES, *doc_pages()] for block in read_blocks(readme)]


def names_used_not_bound(code: str) -> set[str]:
    """The global names ``code`` reads but neither assigns, imports nor finds in builtins."""
    top = symtable.symtable(code, "block", "exec")
    bound = {s.get_name() for s in top.get_symbols()
             if s.is_assigned() or s.is_imported() or s.is_namespace()}
    used, todo = set(), [top]
    while todo:
        table = todo.pop()
        todo += table.get_children()
        for symbol in table.get_symbols():
            if symbol.is_referenced() and (
                    table is top or (symbol.is_global() and not symbol.is_declared_global())):
                used.add(symbol.get_name())
    return used - bound - set(dir(builtins))


def groups() -> dict[str, list[Block]]:
    """Blocks run together: same README or page, same section, same install, in its order."""
    out: dict[str, list[Block]] = {}
    for readme in [*READMES, *doc_pages()]:
        prefix = "" if readme == README else f"{label(readme)}: "
        for block in read_blocks(readme):
            section = block.section or "(top of the page)"
            out.setdefault(f"{prefix}{section} [{block.requires}]", []).append(block)
    return out


def installs_shown(section: str, readme: Path = README) -> list[set[str]]:
    """The ``pip install`` commands a reader sees in ``section`` and under Install.

    For a page of the site: in ``section``, at the top of the page, and on its Install page.
    """
    text = readme.read_text(encoding="utf-8")
    parts = re.split(r"^## (.+)$", text, flags=re.M)
    bodies = dict(zip(map(heading, parts[1::2]), parts[2::2]))
    if readme in READMES:
        shown = bodies.get(section, "") + bodies.get(READMES[readme], "")
    else:
        shown = (parts[0] + (bodies.get(section, "") if section else "")
                 + install_page(readme).read_text(encoding="utf-8"))
    return [set(command.replace("'", "").split())
            for command in re.findall(r"pip install ([^`\n#]+)", shown)]


def promises(code: str, first_line: int) -> dict[int, list[str]]:
    """Comment lines right after a ``print(...)`` line: that line's output, by README line."""
    out: dict[int, list[str]] = {}
    current = None
    for offset, line in enumerate(code.splitlines()):
        stripped = line.strip()
        if stripped.startswith("print("):
            current = first_line + offset
        elif current is not None and (stripped.startswith("# ") or stripped == "#"):
            out.setdefault(current, []).append(stripped[2:])
        else:
            current = None
    return out


def matches(printed: list[str], promised: list[str]) -> bool:
    """Doctest-style: lines equal, in order; ``...`` matches any number of lines."""
    if not promised:
        return not printed
    head, rest = promised[0], promised[1:]
    if head == "...":
        return any(matches(printed[i:], rest) for i in range(len(printed) + 1))
    return bool(printed) and printed[0].rstrip() == head and matches(printed[1:], rest)


# --------------------------------------------------------------------------
# What an install pulls in, and who owns an imported file
# --------------------------------------------------------------------------


def own_extras() -> dict[str, list[str]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return config["project"]["optional-dependencies"]


def closure(requirements: set[str]) -> set[str]:
    """Every distribution ``pip install <requirements>`` installs (canonical names)."""
    seen: dict[str, set[str]] = {}
    todo = [Requirement(r) for r in requirements]
    while todo:
        req = todo.pop()
        name = canonicalize_name(req.name)
        extras = set(req.extras)
        if name in seen and extras <= seen[name]:
            continue
        seen.setdefault(name, set()).update(extras)
        if name == "poolsplit":  # ours: the source of truth is pyproject.toml
            todo += [Requirement(r) for extra in extras for r in own_extras()[extra]]
            continue
        try:
            lines = metadata.requires(name) or []
        except metadata.PackageNotFoundError:
            continue
        for line in lines:
            dep = Requirement(line)
            if dep.marker is None or any(dep.marker.evaluate({"extra": e})
                                         for e in (extras or {""})):
                todo.append(dep)
    return set(seen)


@cache
def file_owners() -> dict[str, str]:
    owners = {}
    for dist in metadata.distributions():
        name = canonicalize_name(dist.metadata["Name"])
        for file in dist.files or ():
            owners[str(Path(dist.locate_file(file)).resolve())] = name
    return owners


def owner(path: str) -> str | None:
    resolved = Path(path).resolve()
    if resolved.is_relative_to(ROOT) and not resolved.is_relative_to(Path(sys.prefix).resolve()):
        return "poolsplit"  # the editable install of this checkout
    return file_owners().get(str(resolved))


# --------------------------------------------------------------------------
# The tests
# --------------------------------------------------------------------------


def test_every_python_block_names_the_install_it_needs_and_the_reader_sees_it():
    blocks = read_blocks()
    assert {b.section for b in blocks} >= {"Core quickstart", "LangChain", "LlamaIndex",
                                           "LangGraph"}
    for block in blocks:
        assert block.requires, f"README line {block.line}: no <!-- requires: ... --> tag"
        assert set(block.requires.split()) in installs_shown(block.section), (
            f"README line {block.line} needs `pip install {block.requires}`, which its"
            f" section '{block.section}' never shows")


def test_every_docs_block_names_the_install_it_needs_and_the_reader_sees_it():
    pages = {label(page): read_blocks(page) for page in doc_pages()}
    with_examples = {name for name, blocks in pages.items() if blocks}
    assert with_examples >= {f"docs/{lang}guide/{name}.md" for lang in ("", "zh/") for name in (
        "core", "living-store", "langchain", "llamaindex", "langgraph", "vector-stores",
        "tenancy", "hybrid-scoring", "multilingual", "planning")}
    for name, blocks in pages.items():
        for block in blocks:
            assert block.requires, f"{name} line {block.line}: no <!-- requires: ... --> tag"
            assert set(block.requires.split()) in installs_shown(block.section, block.readme), (
                f"{name} line {block.line} needs `pip install {block.requires}`, which neither"
                f" its section '{block.section}', the top of its page nor"
                f" {label(install_page(block.readme))} shows")


def test_the_chinese_readme_has_the_quickstart_and_the_adapters_tagged_and_shown():
    blocks = read_blocks(README_ZH)
    assert {b.section for b in blocks} == {"核心快速上手", "LangChain", "LlamaIndex", "LangGraph"}
    for block in blocks:
        assert block.requires, f"README.zh-CN.md line {block.line}: no requires tag"
        assert set(block.requires.split()) in installs_shown(block.section, README_ZH), (
            f"README.zh-CN.md line {block.line} needs `pip install {block.requires}`,"
            f" which its section '{block.section}' never shows")
    text = README_ZH.read_text(encoding="utf-8")
    assert "make demo" in text and "make test" in text


def test_the_readme_links_the_chinese_readme_on_its_first_screen():
    first_screen = README.read_text(encoding="utf-8").splitlines()[:12]
    assert any("(README.zh-CN.md)" in line for line in first_screen)


def test_every_block_defines_or_imports_every_name_it_uses_unless_marked_continuing():
    unbound = {}
    for block in every_block():
        missing = names_used_not_bound(block.code)
        if missing and not block.continues:
            unbound[f"{label(block.readme)} line {block.line}"] = sorted(missing)
    assert not unbound, (
        "blocks a reader cannot copy alone (import or set up these names, or mark the block"
        f" {CONTINUES} after saying so): {unbound}")


def test_a_continuing_block_follows_one_of_its_section_and_install_and_says_so():
    for readme in [*READMES, *doc_pages()]:
        blocks = read_blocks(readme)
        for before, block in zip([None, *blocks], blocks):
            if not block.continues:
                continue
            where = f"{label(readme)} line {block.line}"
            assert before is not None and (before.section, before.requires) == (
                block.section, block.requires), f"{where}: continues no block of its section"
            assert any(words in block.before.lower() for words in CONTINUES_SAID), (
                f"{where}: marked {CONTINUES}, but the text above it never tells the reader"
                f" (say one of {CONTINUES_SAID})")


def test_the_runner_runs_each_block_alone_unless_it_is_marked_continuing():
    def run(blocks):
        payload = {"blocks": blocks, "allowed": ["poolsplit"], "readme": "README.md"}
        done = subprocess.run([sys.executable, str(RUNNER)], input=json.dumps(payload),
                              capture_output=True, text=True, timeout=60, cwd=ROOT)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    alone = run([[1, "x = 1\n"], [3, "print(x)\n"]])
    assert "NameError: name 'x' is not defined" in alone["error"]
    assert "README.md block at line 3" in alone["error"]
    continued = run([[1, "x = 1\n"], [3, "print(x)\n", True]])
    assert continued["error"] is None and continued["printed"] == {"3": "1\n"}
    assert names_used_not_bound("import os\nprint(os.sep, x)\n") == {"x"}
    assert names_used_not_bound("def f():\n    return y\nclass C:\n    z = w\n") == {"y", "w"}
    assert not names_used_not_bound("for i in range(3):\n    print([j for j in (i,)])\n")


def test_promised_output_is_matched_line_by_line_in_order():
    assert matches(["a", "b", "c"], ["a", "...", "c"])
    assert matches(["a", "b"], ["a", "..."])
    assert not matches(["a", "b"], ["b", "a"])  # order counts
    assert not matches(["a b"], ["a"])  # a whole line, not a substring
    assert not matches(["a", "b"], ["a"])  # no unpromised trailing line


def test_the_closure_of_an_extra_holds_its_framework_and_not_the_others():
    langchain = closure({"poolsplit[langchain]"})
    assert {"langchain-core", "pydantic"} <= langchain
    assert "numpy" not in langchain and "llama-index-core" not in langchain
    assert "numpy" in closure({"poolsplit[llamaindex]"})


@pytest.mark.parametrize("group", list(groups()), ids=str)  # a long id stays readable
def test_readme_examples_run_after_their_install_and_print_what_they_say(group):
    blocks = groups()[group]
    requires = blocks[0].requires
    assert requires, f"{group}: untagged block"
    allowed = closure(set(requires.split())) | {"poolsplit"}
    prelude = OFFLINE_TOKENIZER if "llama_index" in "".join(b.code for b in blocks) else ""
    payload = {"prelude": prelude, "blocks": [[b.line, b.code, b.continues] for b in blocks],
               "allowed": sorted(allowed), "readme": label(blocks[0].readme)}
    done = subprocess.run([sys.executable, str(RUNNER)], input=json.dumps(payload),
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["error"] is None, f"{group} failed:\n{report['error']}"

    outside = {}
    for name, path in report["modules"].items():
        top = name.split(".")[0]
        if path is None or top in sys.stdlib_module_names:
            continue
        dist = owner(path)
        if dist is None and Path(path).resolve().is_relative_to(Path(sys.base_prefix)):
            continue  # the interpreter's own library
        if dist not in allowed:
            outside.setdefault(str(dist), name)
    assert not outside, (
        f"{group} imports modules that `pip install {requires}` does not bring:"
        f" {outside} (distribution: first module)")

    promised = {line: lines for b in blocks for line, lines in promises(b.code, b.line).items()}
    assert promised, f"{group} promises no output"
    for line, expected in promised.items():
        got = report["printed"].get(str(line), "").splitlines()
        assert matches(got, expected), (
            f"{label(blocks[0].readme)} line {line} promises:\n" + "\n".join(expected)
            + "\nbut printed:\n" + "\n".join(got))


def test_the_readme_says_how_to_open_the_notebooks_and_the_extra_brings_jupyterlab():
    text = README.read_text(encoding="utf-8")
    assert "pip install 'poolsplit[notebooks]'" in text
    assert "jupyter lab notebooks/" in text
    assert "jupyterlab" in closure({"poolsplit[notebooks]"})
    assert "jupyterlab" in closure({"poolsplit[all]"})


def test_make_test_installs_the_notebook_kernel_but_not_jupyterlab():
    dev = closure({"poolsplit[dev]"})
    assert {"ipykernel", "matplotlib", "langchain-core", "llama-index-core", "pytest"} <= dev
    assert "jupyterlab" not in dev  # CI time: no test opens JupyterLab


#: The extras a user installs; the rest (bench, docs, dev, mutate) are the project's own.
USER_EXTRAS = ("langchain", "llamaindex", "langgraph", "postgres", "agents", "vectors", "fast",
               "notebooks", "all", "mcp", "otel")


def install_section(readme: Path) -> str:
    """A README's install section, or the whole Install page of the site (English or Chinese)."""
    text = readme.read_text(encoding="utf-8")
    if readme in (INSTALL_PAGE, ZH_INSTALL_PAGE):
        return text
    parts = re.split(r"^## (.+)$", text, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2]))[READMES[readme]]


@pytest.mark.parametrize("readme", [README, README_ZH, INSTALL_PAGE, ZH_INSTALL_PAGE], ids=label)
def test_every_install_section_lists_each_user_extra_and_the_clone_install(readme):
    section = install_section(readme)
    assert set(USER_EXTRAS) <= set(own_extras()), "an extra this test names was removed"
    for extra in USER_EXTRAS:
        assert f"pip install 'poolsplit[{extra}]'" in section, f"{label(readme)}: no [{extra}]"
    assert "pip install '.[langchain]'" in section
    # The in-memory LangChain vector store needs numpy, not the PostgreSQL extra.
    assert "pip install 'poolsplit[langchain,fast]'" in section + install_page(readme).read_text(
        encoding="utf-8")
    assert "numpy" in closure({"poolsplit[langchain,fast]"})
    # [notebooks] is the three framework extras and more, not "both" frameworks.
    assert "langgraph" in closure({"poolsplit[notebooks]"})
    assert "both, plus" not in section and "以上两者" not in section


@pytest.mark.parametrize("page", [INSTALL_PAGE, ZH_INSTALL_PAGE], ids=label)
def test_the_install_page_describes_every_user_extra_in_its_table(page):
    rows = {m.group(1) for m in re.finditer(r"^\| `([\w-]+)` \|", page.read_text(
        encoding="utf-8"), flags=re.M)}
    assert rows == {*USER_EXTRAS, "notebooks-kernel"}


def test_a_block_that_needs_only_an_in_memory_vector_store_does_not_ask_for_postgres():
    for page in doc_pages():
        for block in read_blocks(page):
            if "InMemoryVectorStore" in block.code or "SimpleVectorStore" in block.code:
                assert "vectors" not in (block.requires or ""), (
                    f"{label(page)} line {block.line}: an in-memory vector store needs"
                    " [langchain,fast] or [llamaindex], not [vectors]")


def test_make_test_is_said_to_type_check_the_core_and_the_adapters():
    assert "mypy poolsplit_core poolsplit_integrations" in (ROOT / "Makefile").read_text()
    for page, words in ((README, "type-check the core and the adapters"),
                        (DOCS / "index.md", "type-check the core and the adapters"),
                        (README_ZH, "核心与适配器的类型检查")):
        line = next(line for line in page.read_text(encoding="utf-8").splitlines()
                    if line.startswith("make test"))
        assert words in line, f"{label(page)}: {line}"
