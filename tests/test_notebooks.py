"""Every notebook runs from scratch, offline, in a kernel on this interpreter.

Outputs committed in the notebooks are cleared first, so a notebook that only
looks fine because of stale outputs fails here. A cell error fails the test
(nbclient raises ``CellExecutionError``). Kernels talk over loopback, which
pytest-socket's ``--allow-hosts=127.0.0.1,::1`` keeps open.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOK_DIR = Path(__file__).resolve().parent.parent / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))
PROBE = "poolsplit-kernel-python="

# What each notebook must show, by file-name prefix: how many PNG plots at
# least, and texts its printed output must contain (in this order).
EXPECTED = {
    # The fair baseline (one pool, always tier kept) beside the naive one, in the burst too;
    # then the planned pools' best entries and whether they reach the target.
    "01_": {"plots": 3, "texts": ["single budget", "growth", "fresh entries", "one pool",
                                  "planned burst", "target 95% (31/32) quiet"]},
    "02_": {"plots": 0, "texts": ["Never force-push to main"]},
    "03_": {"plots": 0, "texts": ["Never force-push to main"]},
    # The other process's correction is printed only after it was written, and in the
    # very next prompt; every type reaches every prompt.
    "04_": {"plots": 1, "texts": ["## Corrections (always apply)",
                                  "another process wrote a correction",
                                  "=== turn 4", "Staging API keys are rotated on Fridays",
                                  "=== turn 5",
                                  "pool-split: types covered per turn [8, 8, 8, 8, 8, 8] of 8"]},
    # Same vector store both ways: pool-split loads every correction and every type for
    # every query, before and after a burst of fresh entries; similarity alone does not.
    "05_": {"plots": 2, "texts": ["similarity-only: types covered per query",
                                  "pool-split: types covered per query [8, 8, 8, 8",
                                  "corrections loaded for their query 10/10",
                                  "burst test",
                                  "pool-split: 0: 10/10, 8.0/8, 50: 10/10, 8.0/8,"
                                  " 100: 10/10, 8.0/8, 200: 10/10, 8.0/8"]},
    "06_": {"plots": 2, "texts": ["unicode words", "split/unicode", "message only",
                                  "fresh entries", "10/10"]},
    "07_": {"plots": 3, "texts": ["Plan for 1400 tokens", "Coverage over 32 queries", "knee:",
                                  "starved cells: hand-made"]},
}


def test_the_notebooks_are_there():
    names = [path.name for path in NOTEBOOKS]
    assert "01_starvation.ipynb" in names


def run(path: Path) -> nbformat.NotebookNode:
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    nb.cells.append(nbformat.v4.new_code_cell(f"import sys\nprint({PROBE!r} + sys.executable)"))
    env = dict(os.environ)
    env["MPLBACKEND"] = "Agg"
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    client = NotebookClient(
        nb, kernel_name="python3", timeout=180, allow_errors=False,
        resources={"metadata": {"path": str(NOTEBOOK_DIR)}},
    )
    client.execute(env=env)
    return nb


def outputs(nb: nbformat.NotebookNode) -> list:
    """The outputs of the notebook's own cells (not the appended probe)."""
    return [o for c in nb.cells[:-1] if c.cell_type == "code" for o in c.outputs]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs_from_scratch(path: Path):
    nb = run(path)
    probe = "".join(o.get("text", "") for o in nb.cells[-1].outputs)
    assert probe.strip() == PROBE + sys.executable  # the kernel ran this venv's python

    produced = outputs(nb)
    assert not [o for o in produced if o.output_type == "error"]
    printed = "".join(
        o.get("text", "") if o.output_type == "stream" else o.get("data", {}).get("text/plain", "")
        for o in produced
    )
    plots = sum("image/png" in o.get("data", {}) for o in produced)
    expected = next((v for k, v in EXPECTED.items() if path.name.startswith(k)),
                    {"plots": 0, "texts": []})
    assert plots >= expected["plots"]
    assert printed.strip(), "the notebook printed nothing"
    position = 0
    for text in expected["texts"]:
        found = printed.find(text, position)
        assert found >= 0, f"{path.name}: {text!r} not printed (after position {position})"
        position = found + len(text)
