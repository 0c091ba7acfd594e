"""The package a user installs: built from this checkout, checked, installed alone, run.

``python -m build`` makes the sdist and the wheel (the wheel from the sdist, so a file
the sdist forgets fails here), ``twine check --strict`` reads their metadata as the
package index would, and the built wheel -- not this checkout -- is installed into a
clean virtualenv per extra, offline, from the wheels ``make test`` downloads beforehand
(``make``'s ``.wheelhouse`` step, from the committed lock). There the README's quickstarts
run and print what they promise, and the ``poolsplit`` command runs its demo from the
data the wheel carries.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest
import tomllib
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

import poolsplit_core
from tests.test_readme import RUNNER, groups, matches, promises

ROOT = Path(__file__).resolve().parent.parent
LOCK = ROOT / "requirements" / "lock.txt"
#: What ``make test`` downloads for the clean virtualenvs (the Makefile's ``.wheelhouse``).
WHEELHOUSE = Path(sys.prefix) / "wheelhouse"
#: The README sections whose blocks each install runs, by the install their tag names.
QUICKSTARTS = {
    "poolsplit": "Core quickstart",
    "poolsplit[langchain]": "LangChain",
    "poolsplit[llamaindex]": "LlamaIndex",
    "poolsplit[langgraph]": "LangGraph",
}
PACKAGES = ("poolsplit_core", "poolsplit_integrations")


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    done = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir",
                           str(out), str(ROOT)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return out


def wheel_of(dist: Path) -> Path:
    (wheel,) = dist.glob("poolsplit-*-py3-none-any.whl")
    return wheel


def test_the_sdist_and_the_wheel_pass_twine_check(dist):
    built = sorted(dist.iterdir())
    assert sorted(p.suffix for p in built) == [".gz", ".whl"], built
    done = subprocess.run([sys.executable, "-m", "twine", "check", "--strict", *map(str, built)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("PASSED") == 2, done.stdout


def test_the_wheel_holds_every_file_of_both_packages_and_its_version_is_the_cores(dist):
    with zipfile.ZipFile(wheel_of(dist)) as wheel:
        names = set(wheel.namelist())
        (meta,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        metadata = wheel.read(meta).decode()
        (entry_points,) = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
        scripts = wheel.read(entry_points).decode()
    shipped = {
        path.relative_to(ROOT).as_posix()
        for package in PACKAGES for path in (ROOT / package).rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    }
    assert {"poolsplit_core/poolsplit.py", "poolsplit_core/py.typed",
            "poolsplit_core/data/sample_store.jsonl"} <= shipped
    assert shipped <= names, sorted(shipped - names)
    assert f"\nVersion: {poolsplit_core.__version__}\n" in metadata
    assert "poolsplit = poolsplit_core.cli:main" in scripts


def test_the_changelog_names_the_version_the_package_carries():
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    versions = re.findall(r"^## (\d+\.\d+\.\d+)\b", text, flags=re.M)
    assert versions and versions[0] == poolsplit_core.__version__, versions


def test_the_lock_pins_every_requirement_of_every_extra_within_its_range():
    """The lock is compiled from pyproject.toml: each direct requirement is pinned, inside
    the range the package declares (for every Python the lock covers)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    pins: dict[str, list[str]] = {}
    for line in LOCK.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            pin = Requirement(line)
            (spec,) = pin.specifier
            assert spec.operator == "==", f"{line!r} is not a pin"
            pins.setdefault(canonicalize_name(pin.name), []).append(spec.version)
    extras = config["project"]["optional-dependencies"]
    for extra, requirements in extras.items():
        for text in requirements:
            wanted = Requirement(text)
            name = canonicalize_name(wanted.name)
            if name == "poolsplit":
                continue
            assert name in pins, f"[{extra}] needs {text}, which the lock does not pin"
            for version in pins[name]:
                assert wanted.specifier.contains(version, prereleases=True), (
                    f"the lock pins {name}=={version}, outside [{extra}]'s {text}")


def installed(dist: Path, install: str, where: Path) -> Path:
    """A clean virtualenv at ``where`` with the built wheel and ``install``'s extras; its bin."""
    assert WHEELHOUSE.is_dir(), (
        f"no wheelhouse at {WHEELHOUSE}: `make test` downloads it (the .wheelhouse step)")
    venv.EnvBuilder(with_pip=True, clear=True).create(where)
    extra = install[len("poolsplit"):]
    done = subprocess.run(
        [str(where / "bin" / "python"), "-m", "pip", "install", "-q", "--no-index",
         "--find-links", str(WHEELHOUSE), f"{wheel_of(dist)}{extra}"],
        capture_output=True, text=True, timeout=600, cwd=where)
    assert done.returncode == 0, done.stdout + done.stderr
    return where / "bin"


@pytest.mark.parametrize("install", list(QUICKSTARTS), ids=str)
def test_the_built_wheel_installs_alone_and_runs_the_readme_quickstart(install, dist,
                                                                       tmp_path):
    python = installed(dist, install, tmp_path / "venv") / "python"
    section = QUICKSTARTS[install]
    blocks = groups()[f"{section} [{install}]"]
    payload = {"blocks": [[b.line, b.code, b.continues] for b in blocks], "allowed": None,
               "readme": "README.md",
               "prelude": ("import llama_index.core\n"
                           "llama_index.core.global_tokenizer = str.split\n")
               if "llamaindex" in install else ""}
    ran = subprocess.run([str(python), str(RUNNER)], input=json.dumps(payload),
                         capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    report = json.loads(ran.stdout)
    assert report["error"] is None, report["error"]
    site = (tmp_path / "venv").resolve()
    imported = report["modules"]["poolsplit_core"]
    assert Path(imported).resolve().is_relative_to(site), f"poolsplit_core from {imported}"
    promised = {line: lines for b in blocks for line, lines in promises(b.code, b.line).items()}
    assert promised
    for line, expected in promised.items():
        got = report["printed"].get(str(line), "").splitlines()
        assert matches(got, expected), f"README line {line}: {got} != {expected}"


def test_the_command_of_the_bare_wheel_runs_the_demo_and_checks_the_store_it_ships(dist,
                                                                                   tmp_path):
    bin_ = installed(dist, "poolsplit", tmp_path / "venv")
    demo = subprocess.run([str(bin_ / "poolsplit"), "demo"], capture_output=True, text=True,
                          timeout=300, cwd=tmp_path)
    assert demo.returncode == 0, demo.stderr
    assert "Burst:" in demo.stdout and "pool-split" in demo.stdout
    where = subprocess.run(
        [str(bin_ / "python"), "-c", "import importlib.resources as r, poolsplit_core;"
         " print(r.files(poolsplit_core) / 'data' / 'sample_store.jsonl')"],
        capture_output=True, text=True, timeout=60, cwd=tmp_path)
    store = Path(where.stdout.strip())
    assert store.resolve().is_relative_to((tmp_path / "venv").resolve()), store
    check = subprocess.run([str(bin_ / "poolsplit"), "check", str(store)], capture_output=True,
                           text=True, timeout=120, cwd=tmp_path)
    assert check.returncode == 0, check.stdout + check.stderr


@pytest.mark.parametrize("page", ["README.md", "README.zh-CN.md", "docs/install.md",
                                  "docs/zh/install.md"])
def test_the_wheel_the_install_pages_name_is_the_one_make_package_builds(page):
    named = re.findall(r"dist/poolsplit-([^-]+)-py3-none-any\.whl",
                       (ROOT / page).read_text(encoding="utf-8"))
    assert named and set(named) == {poolsplit_core.__version__}, named
