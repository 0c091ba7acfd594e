"""The vendoring promise: poolsplit.py copied alone into a project works there.

Standard library only, no relative imports, nothing newer than Python 3.9.
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

import poolsplit_core.poolsplit as core

SOURCE = Path(core.__file__)
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


@pytest.fixture
def vendored(tmp_path):
    """A project directory holding nothing but a copy of poolsplit.py."""
    shutil.copyfile(SOURCE, tmp_path / "poolsplit.py")
    return tmp_path


def test_vendored_copy_imports_and_runs_alone_in_an_isolated_interpreter(vendored):
    # -I: no environment variables, no user site, no script dir on sys.path;
    # -S: no site-packages either, so only the standard library and the copy exist.
    run = subprocess.run([sys.executable, "-I", "-S", "-c", USE_IT, str(vendored)],
                         cwd=vendored, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "{'work': ['fix', 'n2'], 'skills': ['s1']}"


def test_vendored_copy_passes_its_own_doctests(vendored):
    run = subprocess.run([sys.executable, "-I", "-S", "-m", "doctest", "-v", "poolsplit.py"],
                         cwd=vendored, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "0 failed" in run.stdout
    assert " passed" in run.stdout and "\n0 passed" not in run.stdout


# vermin has no __main__ module: call its console entry point with this interpreter.
VERMIN = "import sys; from vermin import main; sys.exit(main())"


def vermin(path):
    return subprocess.run(
        [sys.executable, "-c", VERMIN, "--target=3.9-", "--violations", "--no-tips",
         "--eval-annotations", str(path)],
        capture_output=True, text=True, timeout=120)


def test_core_needs_nothing_newer_than_python_3_9():
    run = vermin(SOURCE)
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


def test_core_file_carries_the_whole_licence_text_version_and_all():
    # The file travels alone: its opening comment holds the LICENSE file's
    # text word for word, copyright line included.
    text = SOURCE.read_text(encoding="utf-8")
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
