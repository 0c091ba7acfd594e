"""The vendoring promise: poolsplit.py copied alone into a project works there.

Standard library only, no relative imports, nothing newer than Python 3.9. And
prepared.py copied beside it works there too: the prepared store answers as
the core's functions do, importing nothing but the standard library and the core.
"""

from __future__ import annotations

import ast
import itertools
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import poolsplit_core.multilingual as multilingual
import poolsplit_core.poolsplit as core
import poolsplit_core.prepared as prepared
import poolsplit_core.render as render

SOURCE = Path(core.__file__)
PREPARED = Path(prepared.__file__)
MULTILINGUAL = Path(multilingual.__file__)
RENDER = Path(render.__file__)
#: Every vendorable file, by the name it is copied under.
FILES = {"poolsplit.py": SOURCE, "prepared.py": PREPARED, "multilingual.py": MULTILINGUAL,
         "render.py": RENDER}
ROOT = SOURCE.parent.parent

USE_IT = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, sys.argv[1])
    from datetime import datetime, timezone
    import poolsplit
    from poolsplit import Pool, retrieve_pools

    assert poolsplit.__file__.startswith(sys.argv[1]), poolsplit.__file__
    assert not [m for m in sys.modules if m.startswith("poolsplit_")], sorted(sys.modules)
    assert "prepared" not in sys.modules and not hasattr(poolsplit, "PreparedStore")
    store = [
        {"id": "n1", "type": "note", "base_priority": 9, "content": "x" * 400},
        {"id": "fix", "type": "correction", "scope": "always", "content": "never"},
        {"id": "s1", "type": "skill", "content": "bisect"},
        {"id": "n2", "type": "note", "base_priority": 1, "content": "short"},
    ]
    pools = [Pool("work", max_tokens=10, max_entries=1, types=("note", "correction")),
             Pool("skills", max_tokens=10, max_entries=1, types=["skill"])]
    got = retrieve_pools(store, pools, {"message": "bisect"},
                         now=datetime(2026, 1, 1, tzinfo=timezone.utc))
    print({name: [e["id"] for e in picked] for name, picked in got.items()})
    """
)


# The prepared store copied beside the core: the same answers as the core's
# functions, over a store big enough for near-ties, through writes too.
USE_BOTH = textwrap.dedent(
    """
    import random, sys
    sys.path.insert(0, sys.argv[1])
    from datetime import datetime, timezone
    import poolsplit, prepared
    from prepared import PreparedStore

    assert prepared.__file__.startswith(sys.argv[1]), prepared.__file__
    assert prepared.core is poolsplit
    assert not [m for m in sys.modules if m.startswith("poolsplit_")], sorted(sys.modules)
    assert PreparedStore(engine="auto").engine == "python"  # no numpy engine beside the files
    rng = random.Random(7)
    words = ["deploy", "database", "release", "rollback", "cache", "tenant"]
    store = [{"id": f"e{n}", "type": rng.choice(["note", "task", "skill", "correction"]),
              "scope": "always" if rng.random() < 0.1 else "contextual",
              "base_priority": rng.choice([1, 5, 9]), "tags": rng.sample(words, 2),
              "created": f"2025-12-{rng.randint(1, 28):02d}T00:00:00Z",
              "content": " ".join(rng.choices(words, k=rng.randint(2, 12)))}
             for n in range(120)]
    pools = [poolsplit.Pool("work", max_tokens=30, max_entries=4, types=("task", "correction")),
             poolsplit.Pool("rest", max_tokens=20, max_entries=3)]
    now = datetime(2026, 1, 1, tzinfo=timezone.utc)
    kept = PreparedStore(store[:100])
    for entry in store[100:]:
        kept.add(entry)
    kept.delete("e3")
    answered = 0
    for words_asked in (["deploy"], ["database", "release"], ["cache", "tenant", "rollback"]):
        context = {"message": " ".join(words_asked), "tags": words_asked[:1]}
        got = kept.retrieve_pools(pools, context, now=now)
        want = poolsplit.retrieve_pools(kept.entries, pools, context, now=now)
        assert {k: [id(e) for e in v] for k, v in got.items()} == {
            k: [id(e) for e in v] for k, v in want.items()}, (got, want)
        answered += sum(map(len, got.values()))
    assert answered > 10
    print("same answers")
    """
)


@pytest.fixture
def vendored(tmp_path):
    """A project directory holding nothing but a copy of poolsplit.py."""
    shutil.copyfile(SOURCE, tmp_path / "poolsplit.py")
    return tmp_path


@pytest.fixture
def vendored_both(tmp_path):
    """A project directory holding nothing but copies of the vendorable files."""
    for name, path in FILES.items():
        shutil.copyfile(path, tmp_path / name)
    return tmp_path


def test_vendored_copy_imports_and_runs_alone_in_an_isolated_interpreter(vendored):
    # -I: no environment variables, no user site, no script dir on sys.path;
    # -S: no site-packages either, so only the standard library and the copy exist.
    run = subprocess.run([sys.executable, "-I", "-S", "-c", USE_IT, str(vendored)],
                         cwd=vendored, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "{'work': ['fix', 'n2'], 'skills': ['s1']}"


@pytest.mark.parametrize("name", list(FILES))
def test_vendored_copy_passes_its_own_doctests(vendored_both, name):
    run = subprocess.run([sys.executable, "-I", "-S", "-m", "doctest", "-v", name],
                         cwd=vendored_both, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "0 failed" in run.stdout
    assert " passed" in run.stdout and "\n0 passed" not in run.stdout


def test_vendored_prepared_store_beside_the_core_answers_as_the_core(vendored_both):
    run = subprocess.run([sys.executable, "-I", "-S", "-c", USE_BOTH, str(vendored_both)],
                         cwd=vendored_both, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "same answers"


# vermin has no __main__ module: call its console entry point with this interpreter.
VERMIN = "import sys; from vermin import main; sys.exit(main())"


def vermin(path):
    return subprocess.run(
        [sys.executable, "-c", VERMIN, "--target=3.9-", "--violations", "--no-tips",
         "--eval-annotations", str(path)],
        capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("path", list(FILES.values()), ids=list(FILES))
def test_core_needs_nothing_newer_than_python_3_9(path):
    run = vermin(path)
    assert run.returncode == 0, run.stdout + run.stderr


def test_the_python_3_9_check_does_fail_on_newer_syntax(tmp_path):
    newer = tmp_path / "newer.py"
    newer.write_text("def f(x):\n    match x:\n        case 1:\n            return 1\n")
    run = vermin(newer)
    assert run.returncode != 0
    assert "3.10" in run.stdout, run.stdout + run.stderr


def imported_modules(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names, relative = set(), []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                relative.append(node.module)
            else:
                names.add(node.module.split(".")[0])
    return names, relative


def test_core_imports_only_the_standard_library_and_nothing_relative():
    names, relative = imported_modules(SOURCE)
    assert relative == []
    assert names, "the parse found no import at all"
    assert sorted(n for n in names if n not in sys.stdlib_module_names) == []


@pytest.mark.parametrize("path", [PREPARED, MULTILINGUAL, RENDER],
                         ids=["prepared.py", "multilingual.py", "render.py"])
def test_a_file_beside_the_core_imports_only_the_standard_library_and_the_core(path):
    # in the package, the core is its sibling (relative); copied, it is top-level poolsplit
    names, relative = imported_modules(path)
    assert relative == [None]  # from . import poolsplit
    assert "from . import poolsplit as core" in path.read_text(encoding="utf-8")
    assert sorted(n for n in names if n not in sys.stdlib_module_names) == ["poolsplit"]


UNICODE_ALONE = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, sys.argv[1])
    import poolsplit
    try:
        poolsplit.make_scorer(words="unicode")
    except ValueError as error:
        print("alone:", error)
    import multilingual
    scorer = poolsplit.make_scorer(words="unicode")
    print(scorer, scorer.words is multilingual.unicode_words,
          scorer({"content": "周五前完成数据库迁移"}, {"message": "数据库迁移"}))
    """
)


def test_the_unicode_reader_is_named_once_multilingual_is_copied_beside_and_imported(
        vendored_both):
    run = subprocess.run([sys.executable, "-I", "-S", "-c", UNICODE_ALONE, str(vendored_both)],
                         cwd=vendored_both, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    alone, named = run.stdout.strip().splitlines()
    assert alone == ("alone: words must be one of 'ascii', a callable or None, got 'unicode';"
                     " 'unicode' is multilingual.py's reader: import multilingual (copy it"
                     " beside this file)")
    assert named == "ConfiguredScorer(words='unicode') True 12.5"


@pytest.mark.parametrize("path", list(FILES.values()), ids=list(FILES))
def test_core_file_carries_the_whole_licence_text_version_and_all(path):
    # The file travels alone: its opening comment holds the LICENSE file's
    # text word for word, copyright line included.
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    comment = [line[2:] if line.startswith("# ") else line.lstrip("#")
               for line in itertools.takewhile(lambda line: line.startswith("#"), lines)]
    licence = (ROOT / "LICENSE").read_text(encoding="utf-8").strip()
    assert "Copyright (c)" in licence
    assert licence in "\n".join(comment)
    tree = ast.parse(text)
    assigned = {t.id for node in tree.body if isinstance(node, ast.Assign)
                for t in node.targets if isinstance(t, ast.Name)}
    assert {"__version__", "__all__"} <= assigned
