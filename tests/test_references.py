"""Every document the repository cites exists: no reader is sent to a missing file.

Docstrings once cited a specification file that shipped neither in the repository nor
in the wheel. Now a ``.md`` file named in any text file must be a file of the
repository, and the shipped packages may cite only the README (the project's
page on PyPI); every relative link of the README must resolve.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SKIP_DIRS = {".git", ".venv", "build", "dist", "__pycache__", ".pytest_cache", ".mypy_cache",
             ".ruff_cache", ".hypothesis", "site"}  # site: the built documentation
TEXT_SUFFIXES = {".py", ".md", ".toml", ".ipynb", ".txt", ".cfg", ".jsonl"}
SHIPPED = ("poolsplit_core", "poolsplit_integrations")
# The vendored core's own stale citation is replaced in its restructuring, not here.


def text_files() -> list[Path]:
    found = []
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS and not d.endswith(".egg-info")]
        found += [Path(folder, name) for name in files
                  if Path(name).suffix in TEXT_SUFFIXES or name == "Makefile"]
    return sorted(found)


def cited_documents(path: Path) -> set[str]:
    text = path.read_text(encoding="utf-8", errors="replace")
    return set(re.findall(r"(?<![\w/.-])([\w/.-]+\.md)\b", text))


def relative(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def cases() -> list[object]:
    return [
        pytest.param(path, id=relative(path))
        for path in text_files() if cited_documents(path)
    ]


def test_the_scan_sees_the_shipped_code_and_the_tests():
    names = {relative(path) for path in text_files()}
    assert {"README.md", "poolsplit_integrations/_entries.py", "tests/reference.py"} <= names


@pytest.mark.parametrize("path", cases())
def test_every_cited_markdown_file_exists(path):
    existing = {relative(p) for p in text_files() if p.suffix == ".md"}
    for cited in sorted(cited_documents(path)):
        name = cited.lstrip("./")
        assert name in existing or any(e.endswith("/" + name) for e in existing), (
            f"{relative(path)} cites {cited}, which is not in the repository")
        if relative(path).startswith(SHIPPED):
            assert name == "README.md", (
                f"{relative(path)} ships in the wheel and cites {cited}, which does not")


def test_every_relative_link_of_the_readme_resolves():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", readme)
    local = [link for link in links if "://" not in link]
    assert local, "the README links no file of the repository"
    missing = [link for link in local if not (ROOT / link).exists()]
    assert not missing, f"README links missing files: {missing}"
