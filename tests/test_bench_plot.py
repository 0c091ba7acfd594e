"""The LangGraph benchmark's plot draws from the result dict its run returns.

``benchmarks/bench_langgraph.py`` writes ``benchmarks/langgraph.png``, which the performance
page shows; here a made-up result (no database, no timing) goes through ``plot`` and must come
out as a PNG, and ``--plot-only`` must draw from a saved result without running anything.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import bench_langgraph

PNG = b"\x89PNG\r\n\x1a\n"


def _summary(median: float, p95: float, n: int = 10) -> dict[str, float]:
    return {"median_ms": median, "p95_ms": p95, "max_ms": p95 * 1.2, "n": n}


def _big(median: float) -> dict[str, object]:
    return {**_summary(median, median * 1.3), "read_whole": _summary(median * 4, median * 5),
            "search_whole": _summary(median * 2, median * 3)}


def fake_result(*, with_100k: bool, untriggered: bool = False) -> dict[str, object]:
    sizes = ["10000"] + (["100000"] if with_100k else [])
    return {
        "postgres": "18.0", "rows": 30_000,
        "small": {"retrieve_pools": _summary(2.9, 4.3), "search_limit10": _summary(0.9, 1.2),
                  "p95_ratio": 4.3 / 1.2},
        "inmemory_small": {"retrieve_pools": _summary(0.8, 1.0)},
        "big": {n: _big(75.0 * int(n) / 10_000) for n in sizes},
        "inmemory_big": {n: _summary(11.7, 17.8) for n in sizes},
        "put_plain": {"postgres_put": _summary(0.5, 0.7), "poolsplit_put": _summary(0.6, 0.8)},
        "put": {"postgres_put": _summary(0.7, 0.9), "poolsplit_put": _summary(1.0, 1.4),
                **({"untriggered_put": _summary(0.4, 0.6)} if untriggered else {})},
    }


@pytest.mark.parametrize("with_100k", [False, True], ids=["10k", "10k+100k"])
def test_plot_writes_a_png(tmp_path, with_100k):
    out = tmp_path / "langgraph.png"
    assert bench_langgraph.plot(fake_result(with_100k=with_100k), out)
    data = out.read_bytes()
    assert data.startswith(PNG) and len(data) > 1000


def test_every_target_is_drawn_in_its_panel():
    panels = bench_langgraph.plot_panels(fake_result(with_100k=True))
    assert [p["title"] for p in panels] == ["100-memory namespace", "10,000-memory namespace",
                                            "100,000-memory namespace", "put"]
    limits = [p["target"][0] for p in panels]
    assert limits == pytest.approx([1.5 * 1.2, 20.0, 100.0, 2 * 0.7])


def test_the_put_target_is_against_the_untriggered_put_when_measured():
    # (the same table in the same minutes, the triggers off for that connection)
    panels = bench_langgraph.plot_panels(fake_result(with_100k=False, untriggered=True))
    assert panels[-1]["target"][0] == pytest.approx(2 * 0.6)
    assert "triggers off" in panels[-1]["bars"][-1][0]


def test_plot_only_draws_from_a_saved_result_without_running(tmp_path, monkeypatch):
    saved = tmp_path / "results_langgraph.json"
    saved.write_text(json.dumps(fake_result(with_100k=False)), encoding="utf-8")
    drawn: list[Path] = []
    monkeypatch.setattr(bench_langgraph, "plot", lambda result, out: drawn.append(out) or True)
    monkeypatch.setattr(bench_langgraph, "run", lambda *a: pytest.fail("ran the benchmark"))
    monkeypatch.setattr(sys, "argv", ["bench_langgraph.py", "--plot-only", str(saved)])
    assert bench_langgraph.main() == 0
    assert drawn == [bench_langgraph.ROOT / "benchmarks" / "langgraph.png"]
