"""The notebooks' figures are legible: no text on text, nothing cut off, legends clear of the data.

Each notebook's code cells run in this process on matplotlib's Agg backend (IPython line magics
such as ``%matplotlib inline`` are skipped, ``plt.show`` keeps the figure open). Every figure the
notebook made is then drawn and checked with matplotlib's own bounding boxes, in display pixels:

- no visible text (titles, axis labels, tick labels, legend texts, annotations, figure texts)
  overlaps another visible text;
- no visible text or legend leaves the figure;
- no legend covers a bar, or a point of a plotted line or marker, in its axes;
- no visible marker of a plotted line is clipped by its axes' edge;
- an image or mesh (a heat map) has a colour bar, or, when its colours are a few discrete ones
  (a ``ListedColormap`` of at most 8), a legend naming each of them; a heat map of two values
  (a binary map) has exactly that: two colours and a legend, not a continuous colour scale;
- a label cut from a longer string the notebook holds (a query's message) is cut on a word
  boundary and ends with an ellipsis.

Texts that are empty or invisible are ignored; boxes may touch within a 1 px tolerance.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

matplotlib = pytest.importorskip("matplotlib")
nbformat = pytest.importorskip("nbformat")
matplotlib.use("Agg", force=True)

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.collections import QuadMesh  # noqa: E402
from matplotlib.colors import ListedColormap, to_rgba  # noqa: E402
from matplotlib.image import AxesImage  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402
from matplotlib.text import Text  # noqa: E402
from matplotlib.transforms import Bbox  # noqa: E402

NOTEBOOK_DIR = Path(__file__).resolve().parent.parent / "notebooks"
NOTEBOOKS = sorted(
    path
    for path in NOTEBOOK_DIR.glob("*.ipynb")
    if "matplotlib" in path.read_text(encoding="utf-8")
)
TOL = 1.0  # pixels
# Unrotated tick labels of one axis closer than half an em run together ("0" against "10^1").
GAP_EM = 0.5


def code(cell_source: str) -> str:
    """The cell's source without IPython line magics and shell escapes."""
    return "\n".join(
        "pass" if line.lstrip().startswith(("%", "!")) else line
        for line in cell_source.splitlines()
    )


def run_figures(path: Path, monkeypatch) -> list:
    """Run the notebook's code cells here; the figures it made, in order."""
    nb = nbformat.read(path, as_version=4)
    plt.close("all")
    monkeypatch.chdir(NOTEBOOK_DIR)
    monkeypatch.setattr(plt, "show", lambda *args, **kwargs: None)
    namespace: dict = {"__name__": "__main__"}
    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "code":
            exec(compile(code(cell.source), f"{path.name}[cell {index}]", "exec"), namespace)
    figures = [plt.figure(number) for number in plt.get_fignums()]
    return figures, namespace


def texts(fig) -> list:
    """Every visible, non-empty text of the figure that is drawn."""
    undrawn = set()
    for axes in fig.axes:
        for axis in (axes.xaxis, axes.yaxis):
            drawn = set(map(id, axis._update_ticks()))  # ticks outside the view are not drawn
            for tick in axis.get_major_ticks() + axis.get_minor_ticks():
                if id(tick) not in drawn or not tick.get_visible():
                    undrawn.update((id(tick.label1), id(tick.label2)))
    found = []
    for artist in fig.findobj(Text):
        if not artist.get_text().strip() or not artist.get_visible() or id(artist) in undrawn:
            continue
        if artist.axes is not None and not artist.axes.get_visible():
            continue
        found.append(artist)
    return found


def name(text: Text) -> str:
    return repr(text.get_text())


def overlap(a: Bbox, b: Bbox, tol: float = TOL) -> bool:
    return (min(a.x1, b.x1) - max(a.x0, b.x0) > tol) and (min(a.y1, b.y1) - max(a.y0, b.y0) > tol)


def inside(box: Bbox, outer: Bbox, tol: float = TOL) -> bool:
    return (
        box.x0 >= outer.x0 - tol
        and box.y0 >= outer.y0 - tol
        and box.x1 <= outer.x1 + tol
        and box.y1 <= outer.y1 + tol
    )


def data_boxes(axes, renderer) -> list:
    """Display boxes of the axes' bars and of each plotted line's points and markers."""
    boxes = []
    for patch in axes.patches:
        if isinstance(patch, Rectangle) and patch.get_visible() and patch.get_height() != 0:
            boxes.append(("bar", patch.get_window_extent(renderer)))
    for line in axes.get_lines():
        if not line.get_visible() or not isinstance(line, Line2D):
            continue
        if line.get_label().startswith("_"):  # axhline/axvline guides and the like
            continue
        xy = line.get_transform().transform(line.get_xydata())
        for x, y in xy:
            boxes.append(
                (f"line {line.get_label()!r}", Bbox.from_extents(x - 2, y - 2, x + 2, y + 2))
            )
    return boxes


def cut_labels(fig, sources) -> list:
    """Texts cut from one of the sources mid-word or without an ellipsis."""
    found = []
    for text in texts(fig):
        label = text.get_text().lstrip("▸ ").strip()
        for source in sources:
            if label == source or len(label) < 4:
                continue
            stem = label[:-1].rstrip() if label.endswith("…") else label
            if not source.startswith(stem) or len(stem) >= len(source):
                continue
            rest = source[len(stem) :]
            if not label.endswith("…") or rest[0].isalnum():
                found.append(
                    f"figure {fig.number}: {label!r} cuts {source!r} mid-word or without '…'"
                )
    return found


def notebook_strings(namespace) -> list:
    """The query messages a notebook works with (the sources of its labels)."""
    queries = namespace.get("queries") or namespace.get("DEMO_QUERIES") or []
    return [
        q["message"] for q in queries if isinstance(q, dict) and isinstance(q.get("message"), str)
    ]


def problems(fig) -> list:
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    found = []
    title = fig._suptitle.get_text() if fig._suptitle is not None else ""
    where = f"figure {fig.number} {title!r}"
    shown = [(t, t.get_window_extent(renderer)) for t in texts(fig)]
    shown = [(t, box) for t, box in shown if box.width > 0 and box.height > 0]
    frame = fig.bbox
    ticks = {
        id(label): axis
        for axes in fig.axes
        for axis in (axes.xaxis, axes.yaxis)
        for label in axis.get_ticklabels()
    }
    for t, box in shown:
        if not inside(box, frame):
            found.append(
                f"{where}: text {name(t)} leaves the figure ({box.bounds} vs {frame.bounds})"
            )
    for (a, box_a), (b, box_b) in itertools.combinations(shown, 2):
        same_axis = (
            id(a) in ticks
            and ticks[id(a)] is ticks.get(id(b))
            and a.get_rotation() % 180 == 0
            and b.get_rotation() % 180 == 0
        )
        gap = GAP_EM * max(a.get_fontsize(), b.get_fontsize()) * fig.dpi / 72 / 2
        if overlap(box_a, box_b) or (
            same_axis and overlap(box_a.padded(gap), box_b.padded(gap), 0)
        ):
            found.append(f"{where}: texts {name(a)} and {name(b)} overlap or crowd each other")
    bars = [
        a.colorbar
        for axes in fig.axes
        for a in axes.get_images() + axes.collections
        if getattr(a, "colorbar", None) is not None
    ]
    for axes in fig.axes:
        legend = axes.get_legend()
        if legend is not None and legend.get_visible():
            box = legend.get_window_extent(renderer)
            if not inside(box, frame):
                found.append(f"{where}: the legend of {axes.get_title()!r} leaves the figure")
            for kind, data in data_boxes(axes, renderer):
                if overlap(box, data):
                    found.append(f"{where}: the legend of {axes.get_title()!r} covers a {kind}")
                    break
        for line in axes.get_lines():
            marker = line.get_marker()
            if (
                not line.get_visible()
                or marker in (None, "", "None", " ", ",")
                or not line.get_clip_on()
            ):
                continue
            half = line.get_markersize() * fig.dpi / 72 / 2
            for x, y in line.get_transform().transform(line.get_xydata()):
                mark = Bbox.from_extents(x - half, y - half, x + half, y + half)
                if not inside(mark, axes.bbox):
                    found.append(
                        f"{where}: a {marker!r} marker of {line.get_label()!r} in "
                        f"{axes.get_title()!r} is clipped by the axes' edge"
                    )
                    break
        if getattr(axes, "_colorbar", None) is not None:  # a colour bar's own mesh is no heat map
            continue
        heat = [
            a
            for a in axes.get_images() + axes.collections
            if isinstance(a, (AxesImage, QuadMesh)) and a.get_visible()
        ]
        for mappable in heat:
            values = set(np.ma.asarray(mappable.get_array()).compressed().tolist())
            if len(values) <= 2 and not discrete(
                mappable
            ):
                found.append(
                    f"{where}: the heat map in {axes.get_title()!r} holds two values on a"
                    " continuous colour scale: give it two colours and a legend naming them"
                )
                continue
            if discrete(mappable) and legend_names_colours(fig, axes, mappable):
                continue
            # Its own colour bar, or one shared with a heat map on the same colours and scale.
            if not any(
                bar.mappable.get_cmap().name == mappable.get_cmap().name
                and tuple(bar.mappable.get_clim()) == tuple(mappable.get_clim())
                for bar in bars
            ):
                found.append(f"{where}: the heat map in {axes.get_title()!r} has no colour bar")
    return found


def discrete(mappable) -> bool:
    """Whether a heat map's colours are a few distinct ones (a short ``ListedColormap``)."""
    cmap = mappable.get_cmap()
    return isinstance(cmap, ListedColormap) and cmap.N <= 8


def legend_names_colours(fig, axes, mappable) -> bool:
    """Whether a visible legend of the axes or the figure shows every colour of the map."""
    legends = [axes.get_legend(), *fig.legends]
    shown = {
        tuple(round(v, 3) for v in to_rgba(handle.get_facecolor()))
        for legend in legends
        if legend is not None and legend.get_visible()
        for handle in legend.legend_handles
        if hasattr(handle, "get_facecolor")
    }
    cmap = mappable.get_cmap()
    return all(tuple(round(v, 3) for v in cmap(i)) in shown for i in range(cmap.N))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_figures_are_legible(path: Path, monkeypatch):
    monkeypatch.setenv("MPLBACKEND", "Agg")
    figures, namespace = run_figures(path, monkeypatch)
    try:
        assert figures, f"{path.name} made no figure"
        found = [problem for fig in figures for problem in problems(fig)]
        sources = notebook_strings(namespace)
        found += [problem for fig in figures for problem in cut_labels(fig, sources)]
        assert not found, f"{path.name}:\n" + "\n".join(found)
    finally:
        plt.close("all")


def test_the_checks_catch_a_covered_bar_and_overlapping_text():
    fig, ax = plt.subplots(figsize=(3, 2))
    ax.bar([0, 1], [1, 1], label="bars")
    ax.legend(loc="center")
    ax.text(0.5, 0.5, "W" * 40, transform=ax.transAxes)
    ax.imshow([[0, 1], [1, 0]])
    ax.plot([1.5], [1], "x", markersize=20, label="edge")
    ax.set_yticks([0, 1], ["a query that is long", "x"])
    try:
        found = "\n".join(problems(fig) + cut_labels(fig, ["a query that is long enough"]))
        assert "clipped" in found
        assert "mid-word" in found
        assert "covers a bar" in found
        assert "leaves the figure" in found
        assert "overlap" in found
        assert "continuous colour scale" in found  # [[0, 1], [1, 0]] on viridis
    finally:
        plt.close(fig)
    fig, ax = plt.subplots(figsize=(3, 2))
    ax.imshow([[0, 0.5], [0.25, 1]])  # four values: a continuous map needs its colour bar
    try:
        assert any("no colour bar" in problem for problem in problems(fig))
        fig.colorbar(ax.images[0], ax=ax)
        assert not any("heat map" in problem for problem in problems(fig))
    finally:
        plt.close(fig)


def test_a_two_colour_heat_map_needs_a_legend_naming_both_colours():
    from matplotlib.patches import Patch

    colours = ListedColormap(["white", "red"])
    fig, ax = plt.subplots(figsize=(3, 2))
    ax.imshow([[0, 1], [1, 0]], cmap=colours, vmin=0, vmax=1)
    try:
        assert any("no colour bar" in problem for problem in problems(fig))
        fig.legend(handles=[Patch(facecolor=colours(0), label="loaded")], loc="upper left")
        assert any("no colour bar" in problem for problem in problems(fig))  # one of two
        fig.legend(handles=[Patch(facecolor=colours(0), label="loaded"),
                            Patch(facecolor=colours(1), label="starved")], loc="lower left")
        assert not any("heat map" in problem for problem in problems(fig))
    finally:
        plt.close(fig)
