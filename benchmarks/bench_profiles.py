"""Speed on several store profiles: every path, median / p95 / max, peers from the same run.

Run with ``make bench-profiles`` (or ``python benchmarks/bench_profiles.py
[--sizes 1000 10000] [--profiles flat wide]``). For each profile of
``benchmarks/profiles.py`` and each size it times, on the same queries:

- the literal reference (``tests/reference.py``, with its own literal scorer
  and counter; on zh, the core's Unicode scorer, which it has no literal
  version of) over the entries the query's filter keeps (a few queries when
  a call reads many entries: it is slow);
- the stateless core (``retrieve_pools``) over the same entries;
- the prepared store (``PreparedStore.retrieve_pools`` with ``where=``) on each
  engine: the stdlib one (``engine="python"``, the vendored file's) and, with
  ``poolsplit[fast]``, numpy's, which the package and the adapters use;
- the prepared store through each adapter (LangChain and LlamaIndex
  retrievers), next to the core on the same message-only contexts, since an
  adapter's context is its message plus its defaults;
- the build, and one upsert and one delete;
- bm25s and rank_bm25 (what LangChain's ``BM25Retriever`` uses) ranking the same
  entries' contents for the same messages: ranks only, no budgets, types,
  recency or activity.

Every path's answer is checked against the reference's on every query it
shares with it, and against the stateless core on every other query. The run
prints one table per size, writes ``benchmarks/profiles.json`` and a plot of
latency against size, ``benchmarks/profiles.png``; ``--plot-only profiles.json``
draws the plot again from a saved run, running nothing.
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import platform
import random
import statistics
import sys
import time
from functools import partial
from operator import attrgetter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_retrieve import ENGINES, NOW, POOLS, same, summary, time_writes  # noqa: E402
from profiles import PROFILES, Profile  # noqa: E402

from poolsplit_core.poolsplit import retrieve_pools  # noqa: E402
from poolsplit_core.prepared import PreparedStore  # noqa: E402
from tests.reference import ref_retrieve_pools  # noqa: E402

PathTimes = dict[str, Any]


def _kept(store: list[dict], where: dict | None) -> list[dict]:
    if not where:
        return store
    return [e for e in store if all(k in e and e[k] == v for k, v in where.items())]


def _time(fn: Any, items: list[Any]) -> tuple[list[float], list[Any]]:
    times, answers = [], []
    for item in items:
        start = time.perf_counter()
        answers.append(fn(item))
        times.append(time.perf_counter() - start)
    return times, answers


def _stats(times: list[float]) -> dict[str, float]:
    out = summary(times)
    out["max_ms"] = max(times) * 1e3
    return out


def _ids(loaded: dict[str, list[dict]]) -> list[str]:
    return [e["id"] for pool in POOLS for e in loaded.get(pool.name, [])]


def _overhead(name: str, call: Any, items: list[Any], core_t: list[float],
              core_a: list[list[str]], floor: Any, passing: Any, ident: Any) -> dict[str, Any]:
    """An adapter against the core plus what its returned objects cost to build, per query.

    ``floor`` builds the same returned objects again from stored ones
    (copies of the stored Documents or nodes with their metadata, from a
    second set the adapter never reads, as cold as the adapter's), and
    ``passing`` hands that list back through the framework's own retriever
    call (a retriever that returns it as is): the least any adapter pays.
    Each query's three timings are taken together and its objects dropped
    before the next, as a caller's turn would: results held across queries
    would bring the collector's full passes into whichever path ran last.
    """
    call(items[0])
    times, floor_t, build_t, pass_t, ids = [], [], [], [], []
    for item in items:
        start = time.perf_counter()
        got = call(item)
        times.append(time.perf_counter() - start)
        start = time.perf_counter()
        rebuilt = floor(got)
        build_t.append(time.perf_counter() - start)
        start = time.perf_counter()
        passing(rebuilt)
        pass_t.append(time.perf_counter() - start)
        floor_t.append(build_t[-1] + pass_t[-1])
        ids.append([ident(x) for x in got])
        del got, rebuilt
    ratios = [t / (c + f) for t, c, f in zip(times, core_t, floor_t)]
    bare = [t / (c + b) for t, c, b in zip(times, core_t, build_t)]
    per = [((t - c) / len(r), f / len(r)) for t, c, f, r in zip(times, core_t, floor_t, ids)
           if r]
    nan = float("nan")
    return {
        name: _stats(times),
        f"{name}_over_core_and_docs": statistics.median(ratios),
        # the same without the framework's pass-through call in the floor
        f"{name}_over_core_and_bare_docs": statistics.median(bare),
        f"{name}_framework_ms": statistics.median(pass_t) * 1e3,
        # medians of each query's (adapter - core) and floor per returned object
        f"{name}_us_per_result": statistics.median(p[0] for p in per) * 1e6 if per else nan,
        f"{name}_floor_us_per_result": statistics.median(p[1] for p in per) * 1e6 if per else nan,
        f"{name}_results": statistics.mean(len(r) for r in ids),
        f"{name}_same": all(sorted(a) == sorted(b) for a, b in zip(ids, core_a)),
    }


def _adapters(store: list[dict], profile: Profile, n: int,
              messages: list[str], wheres: list[dict | None]) -> dict[str, Any]:
    """Each adapter's retriever on the same store and message-only contexts."""
    out: dict[str, Any] = {}
    prepared = PreparedStore(store, partition_key="user_id" if profile.name == "tenants" else None,
                             **profile.hooks)
    # A tenant filter required on every call partitions the adapters' store by it, as
    # the core's store is partitioned here: each tenant walks its own entries.
    tenancy: dict[str, Any] = (
        {"require_filter_keys": ["user_id"]} if profile.name == "tenants" else {})
    tenancy.update(profile.hooks)

    def core(item: tuple[str, dict | None]) -> list[str]:
        message, where = item
        return _ids(prepared.retrieve_pools(POOLS, {"message": message}, now=NOW, where=where))

    items = list(zip(messages, wheres))
    core(items[0])
    core_t, core_a = _time(core, items)
    out["core_message_only"] = _stats(core_t)
    try:
        from langchain_core.documents import Document
        from langchain_core.retrievers import BaseRetriever

        from poolsplit_integrations.langchain import PoolSplitRetriever as LCRetriever
    except ImportError:  # pragma: no cover - the bench extra installs both
        LCRetriever = None
    if LCRetriever is not None:
        docs = [Document(page_content=e["content"], id=e["id"],
                         metadata={k: v for k, v in e.items() if k not in ("content", "id")})
                for e in store]
        retriever = LCRetriever(documents=docs, pools=POOLS, now=NOW, **tenancy)

        def lc(item: tuple[str, dict | None]) -> list[Any]:
            message, where = item
            return retriever.invoke(message, filter=where) if where else retriever.invoke(message)

        # The floor copies its own stored Documents, made alongside the adapter's and read
        # only by it: the adapter's own were just read by the adapter, and a floor
        # copying those would find them in the cache (a tenant's are cold in every call).
        stored_docs = {d.id: d.model_copy(update={"metadata": dict(d.metadata)}) for d in docs}

        def lc_floor(got: list[Any]) -> list[Any]:
            # what the returned Documents cost to build from the stored ones, and nothing else
            return [Document(id=d.id, page_content=d.page_content, metadata=dict(d.metadata))
                    for d in map(stored_docs.__getitem__, [d.id for d in got])]

        class Passing(BaseRetriever):  # LangChain's own cost of returning a list
            found: list[Any]

            def _get_relevant_documents(self, query: str, *, run_manager: Any) -> list[Any]:
                return self.found

        passing_lc = Passing(found=[])

        def lc_passing(got: list[Any]) -> list[Any]:
            passing_lc.found = got
            return passing_lc.invoke("")

        out.update(_overhead("langchain", lc, items, core_t, core_a, lc_floor, lc_passing,
                             attrgetter("id")))
    try:
        from llama_index.core.retrievers import BaseRetriever as LIBase
        from llama_index.core.schema import NodeWithScore, TextNode

        from poolsplit_integrations.llama_index import PoolSplitRetriever as LIRetriever
    except ImportError:  # pragma: no cover
        LIRetriever = None
    if LIRetriever is not None:
        nodes = [TextNode(id_=e["id"], text=e["content"],
                          metadata={k: v for k, v in e.items() if k not in ("content", "id")})
                 for e in store]
        base = LIRetriever(nodes=nodes, pools=POOLS, now=NOW, **tenancy)
        bound: dict[str, Any] = {}

        def li(item: tuple[str, dict | None]) -> list[Any]:
            message, where = item
            r = base
            if where:
                key = json.dumps(where, sort_keys=True)
                r = bound.get(key) or bound.setdefault(key, base.with_filter(where))
            return r.retrieve(message)

        stored_nodes = {node.node_id: node.model_copy(update={"metadata": dict(node.metadata)})
                        for node in nodes}  # the floor's own, as for LangChain's

        def li_floor(got: list[Any]) -> list[Any]:
            return [NodeWithScore(node=node.model_copy(update={"metadata": dict(node.metadata)}),
                                  score=h.score)
                    for node, h in zip(map(stored_nodes.__getitem__,
                                           [h.node.node_id for h in got]), got)]

        class PassingNodes(LIBase):  # LlamaIndex's own cost of returning a list
            def __init__(self) -> None:
                super().__init__()
                self.found: list[Any] = []

            def _retrieve(self, query_bundle: Any) -> list[Any]:
                return self.found

        passing_li = PassingNodes()

        def li_passing(got: list[Any]) -> list[Any]:
            passing_li.found = got
            return passing_li.retrieve("")

        out.update(_overhead("llamaindex", li, items, core_t, core_a, li_floor, li_passing,
                             attrgetter("node.node_id")))
    return out


def _peers(store: list[dict], messages: list[str]) -> dict[str, Any]:
    """bm25s and rank_bm25 ranking the same contents: build once, time each query's top 30."""
    out: dict[str, Any] = {}
    corpus = [e["content"] for e in store]
    try:
        import bm25s

        start = time.perf_counter()
        tokens = bm25s.tokenize(corpus, stopwords="en", show_progress=False)
        index = bm25s.BM25()
        index.index(tokens, show_progress=False)
        out["bm25s_build_s"] = time.perf_counter() - start

        def bm(message: str) -> Any:
            q = bm25s.tokenize([message], stopwords="en", show_progress=False)
            return index.retrieve(q, k=min(30, len(corpus)), show_progress=False)

        bm(messages[0])
        out["bm25s"] = _stats(_time(bm, messages)[0])
    except ImportError:  # pragma: no cover - the bench extra installs it
        pass
    try:
        from rank_bm25 import BM25Okapi

        start = time.perf_counter()
        okapi = BM25Okapi([c.lower().split() for c in corpus])
        out["rank_bm25_build_s"] = time.perf_counter() - start
        few = messages[: 5 if len(store) >= 100_000 else 15]
        out["rank_bm25"] = _stats(_time(
            lambda m: okapi.get_top_n(m.lower().split(), corpus, n=30), few)[0])
    except ImportError:  # pragma: no cover
        pass
    return out


def _query(store: PreparedStore, item: tuple[dict, dict | None]) -> dict[str, list[dict]]:
    return store.retrieve_pools(POOLS, item[0], now=NOW, where=item[1])


def bench(profile: Profile, n: int, count: int, with_peers: bool) -> dict[str, Any]:
    store = profile.make(n)
    queries = profile.queries(count, 11)
    wheres = profile.where(n, count)
    items = list(zip(queries, wheres))
    # each query's kept entries, filtered outside the timing: both paths get the same
    # list; how many queries they time follows how many entries a call reads (a
    # tenant's call reads 100 of the store's entries: all 40 queries are timed)
    kept = [(q, _kept(store, w)) for q, w in items]
    reads = max(len(entries) for _, entries in kept)
    # (a call reads at least this many entries, queries the reference times, the stateless core)
    tiers = ((100_000, 2, 5), (10_000, 5, 15), (1_000, 10, 15), (0, len(kept), len(kept)))
    ref_count, core_count = next((r, c) for least, r, c in tiers if reads >= least)
    hooks, literal = profile.hooks, profile.reference_hooks  # every path scores alike
    ref_t, ref_a = _time(lambda it: ref_retrieve_pools(it[1], POOLS, it[0], now=NOW, **literal),
                         kept[:ref_count])
    core_t, core_a = _time(lambda it: retrieve_pools(it[1], POOLS, it[0], now=NOW, **hooks),
                           kept[:core_count])
    identical = all(same(a, b) for a, b in zip(ref_a, core_a))
    engines: dict[str, Any] = {}
    prepared: PreparedStore | None = None
    for engine in ENGINES:  # each engine installed: the stdlib one, then numpy's
        builds = []
        # the stdlib engine's 100k builds take up to 30 s each: one of those
        for _ in range(1 if n >= 100_000 and engine == "python" else 3):
            # each build starts with no other store alive, its garbage collected (untimed)
            prepared = None
            gc.collect()
            start = time.perf_counter()
            prepared = PreparedStore(
                store, partition_key="user_id" if profile.name == "tenants" else None,
                engine=engine, **hooks)
            builds.append(time.perf_counter() - start)
        query = partial(_query, prepared)
        _time(query, items)  # steady state: one untimed pass
        prep_t, prep_a = _time(query, items)
        identical = identical and all(same(a, b) for a, b in zip(core_a, prep_a))
        engines[engine] = {"query": _stats(prep_t), "build_s": statistics.median(builds)}
        del query

    assert prepared is not None
    rng = random.Random(5)
    targets = rng.sample(range(n), min(100, n))
    upsert_t, delete_t = time_writes(
        prepared, [{**store[i], "content": store[i]["content"][::-1]} for i in targets])
    live = prepared.entries
    identical = identical and all(
        same(prepared.retrieve_pools(POOLS, q, now=NOW, where=w),
             retrieve_pools(_kept(live, w), POOLS, q, now=NOW, **hooks))
        for q, w in items[:3])

    messages = [q["message"] for q in queries]
    row: dict[str, Any] = {
        "profile": profile.name, "n": n,
        "reference": _stats(ref_t), "stateless": _stats(core_t),
        # "prepared" is what the package uses: numpy's engine when numpy is installed
        "prepared": engines[ENGINES[-1]]["query"], "build_s": engines[ENGINES[-1]]["build_s"],
        "engines": engines, "upsert": _stats(upsert_t),
        "delete": _stats(delete_t), "identical": identical,
        "always_loaded": statistics.mean(
            sum(1 for pool in a.values() for e in pool if e.get("scope") == "always")
            for a in prep_a),
    }
    row["x_stateless"] = row["reference"]["median_ms"] / row["stateless"]["median_ms"]
    row["adapters"] = _adapters(store, profile, n, messages, wheres)
    if with_peers:
        # The peers split on spaces: a store read by another reader (zh) is given to
        # them as that reader's words (CJK bigrams), space-separated.
        reader = getattr(profile.scorer, "words", None)
        spaced = (lambda text: " ".join(sorted(reader(text)))) if reader else (lambda t: t)
        row["peers"] = _peers([{**e, "content": spaced(e["content"])} for e in store],
                              [spaced(m) for m in messages])
    return row


def _fmt(s: dict[str, float] | None) -> str:
    if not s:
        return f"{'-':>20}"
    return f"{s['median_ms']:8.2f} {s['p95_ms']:8.2f} {s['max_ms']:7.1f}"[:26].rjust(26)


def _print(rows: list[dict[str, Any]]) -> None:
    head = (f"{'profile':<12} {'N':>7} | {'reference':>9} | {'stateless med/p95/max':>26} | "
            f"{'stdlib prep med/p95/max':>26} | {'prepared med/p95/max':>26} | "
            f"{'LangChain med/p95/max':>26} | "
            f"{'LlamaIndex med/p95/max':>26} | {'LC/c+d':>11} | {'LI/c+d':>11} | {'us/doc':>9} | "
            f"{'x core':>6} | {'build s py/np':>13} | "
            f"{'upsert':>6} | {'delete':>6} | {'bm25s':>6} | {'rank_bm25':>9} | same")
    print(head)
    print("-" * len(head))
    for r in rows:
        a, p = r["adapters"], r.get("peers", {})
        same_all = r["identical"] and a.get("langchain_same", True) and a.get(
            "llamaindex_same", True)
        nan = float("nan")
        # over the floor with the framework's own call, then over the bare documents
        lc = (f"{a.get('langchain_over_core_and_docs', nan):4.2f}/"
              f"{a.get('langchain_over_core_and_bare_docs', nan):4.2f}x")
        li = (f"{a.get('llamaindex_over_core_and_docs', nan):4.2f}/"
              f"{a.get('llamaindex_over_core_and_bare_docs', nan):4.2f}x")
        per_doc = (f"{a.get('langchain_us_per_result', nan):4.1f}/"
                   f"{a.get('llamaindex_us_per_result', nan):4.1f}")
        print(f"{r['profile']:<12} {r['n']:>7} | {r['reference']['median_ms']:9.1f} |"
              f" {_fmt(r['stateless'])} | {_fmt(r['engines']['python']['query'])} |"
              f" {_fmt(r['prepared'])} |"
              f" {_fmt(a.get('langchain'))} | {_fmt(a.get('llamaindex'))} |"
              f" {lc:>11} | {li:>11} | {per_doc:>9} |"
              f" {r['x_stateless']:5.1f}x |"
              f" {r['engines']['python']['build_s']:6.2f}/{r['build_s']:6.2f} |"
              f" {r['upsert']['median_ms']:6.3f} | {r['delete']['median_ms']:6.3f} |"
              f" {p.get('bm25s', {}).get('median_ms', float('nan')):6.2f} |"
              f" {p.get('rank_bm25', {}).get('median_ms', float('nan')):9.1f} |"
              f" {'yes' if same_all else 'NO'}")


#: The width, in px, the performance page shows the plot at: the site's content column at a
#: desktop width. The figure is drawn for it (100 px an inch, saved at twice that for sharp
#: screens), so the point sizes below are what a reader sees: 1 pt = 1.39 px.
PAGE_WIDTH_PX = 688
FIGURE_WIDTH_IN = PAGE_WIDTH_PX / 100
#: The smallest text of the figure, in points (tick labels): 11 px on the page.
SMALLEST_PT = 8.0
#: Each path of the plot: label, colour, how to read its median and p95 from a row.
PATHS: dict[str, tuple[str, str, Any]] = {
    "stateless": ("stateless core", "#d95f02", lambda r: r["stateless"]),
    "stdlib": ("prepared, stdlib engine", "#7570b3",
               lambda r: r["engines"]["python"]["query"]),
    "numpy": ("prepared, numpy engine", "#1b9e77", lambda r: r["prepared"]),
    "langchain": ("through LangChain", "#1f78b4",
                  lambda r: r.get("adapters", {}).get("langchain")),
    "llamaindex": ("through LlamaIndex", "#e7298a",
                   lambda r: r.get("adapters", {}).get("llamaindex")),
    "bm25s": ("bm25s (ranks only)", "#333333",
              lambda r: r.get("peers", {}).get("bm25s")),
}
#: The two panels of a profile: the core's paths, then what wraps the prepared store and a
#: peer beside it (numpy's prepared store repeated there as the floor the adapters add to).
COLUMNS = (("the core's paths, against the literal reference", ("stateless", "stdlib", "numpy")),
           ("through the adapters, and a BM25 peer", ("numpy", "langchain", "llamaindex",
                                                      "bm25s")))


def plot_panels(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What ``plot`` draws: a panel per profile and column, profiles in ``PROFILES`` order.

    A panel has its ``profile``, ``column`` (0 or 1), ``sizes`` and ``series``: per path,
    ``(key, medians, p95s)`` (p95s ``None`` when the run has none). The left panel has the
    literal reference's medians as ``yardstick``: drawn as a reference line, not as a path.
    A path a run did not measure (no adapters, ``--no-peers``) is left out.
    """
    names = sorted({r["profile"] for r in rows}, key=list(PROFILES).index)
    panels = []
    for name in names:
        mine = sorted((r for r in rows if r["profile"] == name), key=lambda r: r["n"])
        for column, (_, keys) in enumerate(COLUMNS):
            series = []
            for key in keys:
                got = [PATHS[key][2](r) for r in mine]
                if any(g is None for g in got):
                    continue
                p95s = [g.get("p95_ms") for g in got]
                series.append((key, [g["median_ms"] for g in got],
                               None if None in p95s else p95s))
            panels.append({"profile": name, "column": column, "sizes": [r["n"] for r in mine],
                           "series": series,
                           "yardstick": ([r["reference"]["median_ms"] for r in mine]
                                         if column == 0 else None)})
    return panels


def plot(rows: list[dict[str, Any]], out: Path) -> bool:
    """Draw ``rows`` (what a run saves in ``profiles.json``) to ``out``, as :func:`figure`.

    Returns False, drawing nothing, when matplotlib is not installed.
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:  # pragma: no cover
        return False
    fig = figure(rows)
    fig.savefig(out, dpi=200)
    plt.close(fig)
    return True


def figure(rows: list[dict[str, Any]]) -> Any:
    """The plot of ``rows``: per profile, median ms per query against the store's size.

    One row of two panels per profile (the core's paths; the adapters and bm25s), log axes
    shared down each column; each path a line at its median and a band up to its p95; the
    literal reference a grey reference line, the yardstick the paths are checked against.
    """
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    panels = plot_panels(rows)
    profiles = list(dict.fromkeys(p["profile"] for p in panels))
    with plt.rc_context({"font.size": 9, "axes.titlesize": 9.5, "axes.labelsize": 9,
                         "xtick.labelsize": SMALLEST_PT, "ytick.labelsize": SMALLEST_PT,
                         "legend.fontsize": 8.5}):
        fig, axes = plt.subplots(len(profiles), 2, squeeze=False, sharex=True, sharey="col",
                                 figsize=(FIGURE_WIDTH_IN, 1.1 + 1.45 * len(profiles)),
                                 layout="constrained")
        for panel in panels:
            ax = axes[profiles.index(panel["profile"]), panel["column"]]
            sizes = panel["sizes"]
            if panel["yardstick"] is not None:
                ax.plot(sizes, panel["yardstick"], color="#999999", linewidth=5, alpha=0.35,
                        solid_capstyle="butt", zorder=1)
            for key, medians, p95s in panel["series"]:
                label, colour, _ = PATHS[key]
                floor = panel["column"] == 1 and key == "numpy"  # the adapters' floor
                if p95s is not None and not floor:
                    ax.fill_between(sizes, medians, p95s, color=colour, alpha=0.18,
                                    linewidth=0, zorder=2)
                ax.plot(sizes, medians, color=colour, zorder=3,
                        linestyle=":" if key == "bm25s" or floor else "-",
                        linewidth=1.2 if floor else 1.6,
                        marker=None if floor else "o", markersize=3.5)
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.grid(True, which="major", alpha=0.3)
            ax.margins(x=0.08)  # the last size's tick label inside the figure
            ax.tick_params(which="minor", length=0)
            ax.tick_params(labelsize=SMALLEST_PT)  # kept for ticks made when drawn
            ax.set_xticks(sizes, [f"{n:,}" for n in sizes])
            if panel["column"] == 0:
                ax.set_ylabel(f"{panel['profile']}\nms per query", fontweight="bold")
        for column, (title, _) in enumerate(COLUMNS):
            axes[0, column].set_title(title)
            axes[-1, column].set_xlabel("entries in the store")
        handles = [Line2D([], [], color="#999999", linewidth=5, alpha=0.35,
                          label="literal reference (the yardstick)")]
        for key in ("stateless", "stdlib", "numpy", "langchain", "llamaindex", "bm25s"):
            label, colour, _ = PATHS[key]
            handles.append(Line2D([], [], color=colour, marker="o", markersize=3.5,
                                  linestyle=":" if key == "bm25s" else "-", label=label))
        handles.append(Line2D([], [], color=PATHS["numpy"][1], linestyle=":", linewidth=1.2,
                              label="numpy engine alone (right)"))
        handles.append(Patch(color="#888888", alpha=0.3, label="band: median to p95"))
        fig.legend(handles=handles, loc="outside upper center", ncol=3, frameon=False,
                   columnspacing=1.2, handlelength=2.2, fontsize=8.5)
    return fig


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    parser.add_argument("--profiles", nargs="+", default=list(PROFILES), choices=list(PROFILES))
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--no-peers", action="store_true")
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "profiles.json"))
    parser.add_argument("--plot-only", metavar="JSON", type=Path,
                        help="run nothing: draw benchmarks/profiles.png from a saved"
                             " profiles.json")
    args = parser.parse_args()
    figure = ROOT / "benchmarks" / "profiles.png"
    if args.plot_only:
        saved = json.loads(args.plot_only.read_text(encoding="utf-8"))
        if not plot(saved["rows"], figure):
            print("matplotlib is not installed: nothing drawn", file=sys.stderr)
            return 1
        print(f"drew {figure.relative_to(ROOT)} from {args.plot_only}")
        return 0
    # The heavy always tier is over every pool's budget by design: its warning
    # would repeat on every query.
    logging.getLogger("poolsplit").setLevel(logging.ERROR)
    print(f"poolsplit profiles -- {len(POOLS)} pools, default scorer (zh: Unicode reader),"
          f" Python {platform.python_version()}, {args.queries} queries per prepared run; ms")
    rows = []
    for n in args.sizes:
        for name in args.profiles:
            rows.append(bench(PROFILES[name], n, args.queries, not args.no_peers))
            print(f"  {name} {n}: done", file=sys.stderr, flush=True)
        _print([r for r in rows if r["n"] == n])
        # written after each size, so a long run's smaller sizes are kept if it stops
        out = Path(args.out)
        out.write_text(json.dumps({"python": platform.python_version(), "rows": rows}, indent=1))
        plot(rows, out.with_suffix(".png"))
    return 0 if all(r["identical"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
