"""The benchmarks' plots draw from the results their runs save.

``benchmarks/bench_langgraph.py`` writes ``benchmarks/langgraph.png`` and
``benchmarks/bench_profiles.py`` ``benchmarks/profiles.png``, which the performance page shows;
here made-up results (no database, no timing) go through each ``plot`` and must come out as a
PNG, and ``--plot-only`` must draw from a saved result without running anything. The profile
plot is drawn at the width the page shows it, so its text is legible there, a panel per
profile and column, the literal reference as the yardstick rather than as one more path.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import bench_langgraph
import bench_profiles

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


# --------------------------------------------------------------------------
# The store-profile plot (benchmarks/bench_profiles.py, benchmarks/profiles.png)
# --------------------------------------------------------------------------


PROFILE_SIZES = (1_000, 10_000, 100_000)


def fake_row(profile: str, n: int, *, peers: bool = True) -> dict[str, object]:
    scale = n / 1_000
    row: dict[str, object] = {
        "profile": profile, "n": n, "reference": _summary(20.0 * scale, 25.0 * scale),
        "stateless": _summary(3.0 * scale, 4.0 * scale),
        "engines": {"python": {"query": _summary(0.4 * scale ** 0.5, 0.7 * scale ** 0.5)}},
        "prepared": _summary(0.12 * scale ** 0.3, 0.15 * scale ** 0.3),
        "adapters": {"langchain": _summary(0.3 * scale ** 0.4, 0.4 * scale ** 0.4),
                     "llamaindex": _summary(0.4 * scale ** 0.4, 0.5 * scale ** 0.4)},
    }
    if peers:
        row["peers"] = {"bm25s": {"median_ms": 0.06 * scale ** 0.6}}
    return row


def fake_rows(**kwargs: bool) -> list[dict[str, object]]:
    # out of order, as a run that is stopped and resumed might save them
    return [fake_row(p, n, **kwargs) for n in reversed(PROFILE_SIZES)
            for p in ("zh", "standard", "tenants")]


def test_the_profile_plot_is_a_panel_per_profile_and_column_in_profile_order():
    panels = bench_profiles.plot_panels(fake_rows())
    assert [(p["profile"], p["column"]) for p in panels] == [
        (name, column) for name in ("standard", "tenants", "zh") for column in (0, 1)]
    assert all(p["sizes"] == list(PROFILE_SIZES) for p in panels)
    # few lines a panel, none of them the reference
    assert all(len(p["series"]) <= 4 for p in panels)
    assert all(key != "reference" for p in panels for key, *_ in p["series"])


def test_the_reference_is_drawn_as_the_yardstick_not_as_a_path():
    rows = fake_rows()
    for panel in bench_profiles.plot_panels(rows):
        mine = sorted((r for r in rows if r["profile"] == panel["profile"]), key=lambda r: r["n"])
        if panel["column"] == 0:
            assert panel["yardstick"] == [r["reference"]["median_ms"] for r in mine]
        else:
            assert panel["yardstick"] is None
        for key, medians, p95s in panel["series"]:
            assert all(m <= p for m, p in zip(medians, p95s or medians)), key


def test_a_path_the_run_did_not_measure_is_left_out():
    panels = bench_profiles.plot_panels(fake_rows(peers=False))
    assert all("bm25s" not in [key for key, *_ in p["series"]] for p in panels)


def test_the_profile_plot_is_drawn_at_the_width_the_page_shows_it_with_legible_text(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.text import Text

    fig = bench_profiles.figure(fake_rows())
    fig.canvas.draw()  # ticks are made when drawn
    assert fig.get_size_inches()[0] * 100 == pytest.approx(bench_profiles.PAGE_WIDTH_PX)
    sizes = [t.get_fontsize() for t in fig.findobj(Text) if t.get_visible() and t.get_text()]
    px_per_pt = bench_profiles.PAGE_WIDTH_PX / (fig.get_size_inches()[0] * 72)
    assert sizes and min(sizes) * px_per_pt >= 10, f"text of {min(sizes)} pt on the page"
    out = tmp_path / "profiles.png"
    assert bench_profiles.plot(fake_rows(), out)
    data = out.read_bytes()
    assert data.startswith(PNG)
    width = int.from_bytes(data[16:20], "big")
    assert width == 2 * bench_profiles.PAGE_WIDTH_PX  # twice the page's width: sharp, not small


def test_profiles_plot_only_draws_from_a_saved_run_without_running(tmp_path, monkeypatch):
    saved = tmp_path / "profiles.json"
    saved.write_text(json.dumps({"python": "3.11", "rows": fake_rows()}), encoding="utf-8")
    drawn: list[tuple[int, Path]] = []
    monkeypatch.setattr(bench_profiles, "plot",
                        lambda rows, out: drawn.append((len(rows), out)) or True)
    monkeypatch.setattr(bench_profiles, "bench", lambda *a: pytest.fail("ran the benchmark"))
    monkeypatch.setattr(sys, "argv", ["bench_profiles.py", "--plot-only", str(saved)])
    assert bench_profiles.main() == 0
    assert drawn == [(9, bench_profiles.ROOT / "benchmarks" / "profiles.png")]
