"""The Makefile's own promises: `make` lists every target, `.PHONY` names real ones.

The README and the documentation pages (docs/, Development above all) name `make`
targets; each must exist and be listed by `make` (the help target), or a reader
meets "No rule to make target".
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MAKEFILE = (ROOT / "Makefile").read_text(encoding="utf-8")


def rules() -> dict[str, str]:
    """Every explicit target, with its ``## `` description ('' when it has none)."""
    found = {}
    for match in re.finditer(r"^([A-Za-z0-9_.-]+):(?!=)([^\n]*)$", MAKEFILE, re.M):
        target, rest = match.groups()
        if target.startswith("."):
            continue
        found[target] = rest.split("## ", 1)[1].strip() if "## " in rest else ""
    return found


def phony() -> list[str]:
    return [name for line in re.findall(r"^\.PHONY:(.*)$", MAKEFILE, re.M)
            for name in line.split()]


@pytest.fixture(scope="module")
def help_text() -> str:
    make = shutil.which("make")
    if make is None:
        pytest.skip("make is not installed")
    done = subprocess.run([make, "-s", "--no-print-directory", "help"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_make_without_a_target_lists_every_described_target(help_text):
    listed = {line.split("\t")[0] for line in help_text.splitlines() if line.strip()}
    described = {target for target, text in rules().items() if text}
    assert "bench-build" in described
    assert described <= listed, f"`make` does not list {sorted(described - listed)}"


def test_every_phony_name_is_a_target_of_the_makefile():
    missing = sorted(set(phony()) - set(rules()))
    assert not missing, f".PHONY names targets the Makefile does not define: {missing}"


def test_every_user_facing_target_is_described_and_phony():
    # The stamp files under .venv are internal; every other target is a command.
    commands = {t for t in rules() if not t.startswith("$(")}
    undescribed = sorted(t for t in commands if not rules()[t])
    assert not undescribed, f"targets without a '## ' description: {undescribed}"
    assert commands <= set(phony()), f"not in .PHONY: {sorted(commands - set(phony()))}"


def made(path: Path) -> set[str]:
    """The targets ``path`` names: ``make NAME`` at the start of a line or in backticks."""
    text = path.read_text(encoding="utf-8")
    return (set(re.findall(r"^make ([a-z][\w-]*)", text, re.M))
            | set(re.findall(r"`make ([a-z][\w-]*)", text)))


def test_every_make_command_the_readme_names_is_a_target():
    named = made(ROOT / "README.md")
    assert {"test", "demo", "docs", "bench-build"} <= named
    missing = sorted(named - set(rules()))
    assert not missing, f"the README names make targets that do not exist: {missing}"


@pytest.mark.parametrize("page", sorted((ROOT / "docs").rglob("*.md")),
                         ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_make_command_a_docs_page_names_is_a_target(page):
    missing = sorted(made(page) - set(rules()))
    assert not missing, f"{page.relative_to(ROOT)} names make targets that do not exist: {missing}"


def test_the_development_page_names_every_described_target():
    described = {target for target, text in rules().items() if text and target != "help"}
    missing = sorted(described - made(ROOT / "docs" / "development.md"))
    assert not missing, f"docs/development.md does not say how to use: {missing}"
