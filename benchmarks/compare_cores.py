"""Two versions of the core file, timed side by side on the same stores and queries.

Run with ``make bench-compare BASE=<git revision>`` (or ``python
benchmarks/compare_cores.py OLD_FILE [--old-prepared OLD_PREPARED] [--size 10000]
[--profiles flat]``): ``OLD_FILE`` is a copy of ``poolsplit_core/poolsplit.py``
as it was, e.g. ``git show c88fe01:poolsplit_core/poolsplit.py > /tmp/old.py``,
and ``OLD_PREPARED`` the same revision's ``poolsplit_core/prepared.py`` when it
has one (before that file existed, the core file held the prepared store).
Both sides are loaded into one process, each builds a prepared store from the
same entries, and every query is timed on both, alternately and in alternating
order, for several rounds: so both see the same machine load, and the ratio
new / old is the figure to read (absolute times move with the load).

Paths: the stateless ``retrieve_pools``, the prepared store's query (the new
file's stdlib engine, ``engine="python"``, which the vendored file uses), and
the build. Every answer of the new file is checked against the old one's.
Profiles whose store needs what an old file may lack (a tenant filter, a
configured scorer) are left out.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import statistics
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any, NamedTuple

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_retrieve import NOW, POOLS  # noqa: E402
from profiles import PROFILES  # noqa: E402

# The profiles an old core can read: no where=, no configured scorer.
COMPARABLE = ("standard", "wide", "flat", "heavy-always", "long")


def load(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


class Side(NamedTuple):
    """One side of the comparison: a core file's functions and its prepared store."""

    Pool: Any
    retrieve_pools: Any
    PreparedStore: Any


def load_side(core_path: Path, prepared_path: Path | None, name: str) -> Side:
    """The core file at ``core_path``, with the prepared store of ``prepared_path``.

    A core file that holds its own PreparedStore (revisions before prepared.py)
    needs no prepared file. ``prepared.py`` imports the core copied beside it as
    the top-level module ``poolsplit``: that name is this side's core while it loads.
    """
    core = load(core_path, name)
    if hasattr(core, "PreparedStore"):
        return Side(core.Pool, core.retrieve_pools, core.PreparedStore)
    if prepared_path is None:
        raise SystemExit(f"{core_path} holds no PreparedStore: name its prepared.py too")
    saved = sys.modules.get("poolsplit")
    sys.modules["poolsplit"] = core
    try:
        prepared = load(prepared_path, f"{name}_prepared")
    finally:
        if saved is None:
            del sys.modules["poolsplit"]
        else:
            sys.modules["poolsplit"] = saved
    return Side(core.Pool, core.retrieve_pools, prepared.PreparedStore)


def pools_of(module: Side) -> list[Any]:
    """The benchmark's pools as the module's own Pool objects."""
    return [module.Pool(p.name, max_tokens=p.max_tokens, max_entries=p.max_entries,
                        types=p.types) for p in POOLS]


def ids(answer: dict[str, list[dict]]) -> list[list[Any]]:
    return [[e["id"] for e in answer[pool.name]] for pool in POOLS]


def p95(times: list[float]) -> float:
    return statistics.quantiles(times, n=20)[18] if len(times) > 1 else times[0]


def compare(old: Side, new: Side, profile: str, n: int, queries: int,
            rounds: int, stateless: int | None = None) -> dict[str, dict[str, float]]:
    store = PROFILES[profile].make(n)
    contexts = PROFILES[profile].queries(queries, 11)
    # Builds are timed as they run, and again with the collector off around
    # both (an old core that switched it off itself is then timed alike).
    # Each build runs with no other store alive: the heap the collector scans
    # is the same for both (the entries and the process's own objects).
    builds: dict[str, dict[str, list[float]]] = {
        how: {"old": [], "new": []} for how in ("build", "build, gc off")}
    stores: dict[str, Any] = {}
    pools = {"old": pools_of(old), "new": pools_of(new)}
    for r in range(3 if n < 100_000 else 1):
        for how in builds:
            for side in (("old", "new") if r % 2 == 0 else ("new", "old")):
                module = old if side == "old" else new
                stores.clear()
                gc.collect()
                if how != "build":
                    gc.disable()
                try:
                    start = time.perf_counter()
                    stores[side] = (module.PreparedStore(store) if side == "old"
                                    else module.PreparedStore(store, engine="python"))
                    builds[how][side].append(time.perf_counter() - start)
                finally:
                    gc.enable()
    stores = {"old": old.PreparedStore(store), "new": new.PreparedStore(store, engine="python")}
    times: dict[str, dict[str, list[float]]] = {
        path: {"old": [], "new": []} for path in ("prepared", "stateless")}
    stateless_count = min(queries, stateless if stateless is not None
                          else 3 if n >= 100_000 else 10)
    for r in range(rounds + 1):  # round 0 warms both up, untimed
        for q, context in enumerate(contexts):
            first_old = (r + q) % 2 == 0
            answers = {}
            for side in (("old", "new") if first_old else ("new", "old")):
                start = time.perf_counter()
                answers[side] = stores[side].retrieve_pools(pools[side], context, now=NOW)
                if r:
                    times["prepared"][side].append(time.perf_counter() - start)
            if ids(answers["old"]) != ids(answers["new"]):
                raise SystemExit(f"{profile} {n}: query {q} answers differ")
            if r == 1 and q < stateless_count:
                for side in (("old", "new") if first_old else ("new", "old")):
                    module = old if side == "old" else new
                    start = time.perf_counter()
                    module.retrieve_pools(store, pools[side], context, now=NOW)
                    times["stateless"][side].append(time.perf_counter() - start)
    out: dict[str, dict[str, float]] = {}
    for path, sides in times.items():
        out[path] = {
            "old_ms": statistics.median(sides["old"]) * 1e3,
            "new_ms": statistics.median(sides["new"]) * 1e3,
            "old_p95_ms": p95(sides["old"]) * 1e3,
            "new_p95_ms": p95(sides["new"]) * 1e3,
        }
    for how, sides in builds.items():
        out[how] = {"old_ms": statistics.median(sides["old"]) * 1e3,
                    "new_ms": statistics.median(sides["new"]) * 1e3,
                    "old_p95_ms": max(sides["old"]) * 1e3,
                    "new_p95_ms": max(sides["new"]) * 1e3}
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old", type=Path, help="the old core file")
    parser.add_argument("--old-prepared", type=Path,
                        help="the old prepared.py (when the old core file has no PreparedStore)")
    parser.add_argument("--new", type=Path, default=ROOT / "poolsplit_core" / "poolsplit.py")
    parser.add_argument("--new-prepared", type=Path,
                        default=ROOT / "poolsplit_core" / "prepared.py")
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--profiles", nargs="+", default=list(COMPARABLE), choices=COMPARABLE)
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--stateless", type=int,
                        help="queries timed on the stateless path (default: 10, 3 at 100k)")
    args = parser.parse_args()
    old = load_side(args.old, args.old_prepared, "poolsplit_old")
    new = load_side(args.new, args.new_prepared, "poolsplit_new")
    print(f"new / old, {args.size} entries, {args.queries} queries x {args.rounds} rounds,"
          " alternating; ms (median, p95; build: median, max)")
    print(f"{'profile':<13} {'path':<13} | {'old':>15} | {'new':>15} | {'new/old':>13}")
    worst = 0.0
    for profile in args.profiles:
        got = compare(old, new, profile, args.size, args.queries, args.rounds,
                      args.stateless)
        for path, f in got.items():
            ratio, ratio95 = f["new_ms"] / f["old_ms"], f["new_p95_ms"] / f["old_p95_ms"]
            if path != "build, gc off":
                worst = max(worst, ratio)
            print(f"{profile:<13} {path:<13} | {f['old_ms']:7.2f} {f['old_p95_ms']:7.2f} |"
                  f" {f['new_ms']:7.2f} {f['new_p95_ms']:7.2f} | {ratio:5.2f} {ratio95:5.2f}x")
    print(f"slowest median ratio: {worst:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
