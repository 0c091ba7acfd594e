"""Speed of pool-split retrieval: literal reference vs stateless core vs prepared store.

Run with ``make bench`` (or ``python benchmarks/bench_retrieve.py [--sizes 1000 10000]``).
One run measures every path side by side on the same deterministic store and
queries, checks that every path returns the reference's answer, prints a
table and writes ``benchmarks/results.json``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import logging
import platform
import random
import statistics
import sys
import time
import tracemalloc
from datetime import datetime, timedelta, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from poolsplit_core.multilingual import cjk_token_counter, unicode_words  # noqa: E402
from poolsplit_core.poolsplit import Pool, make_scorer, retrieve_pools  # noqa: E402
from poolsplit_core.prepared import _ENGINES, PreparedStore  # noqa: E402
from tests.reference import ref_retrieve_pools  # noqa: E402

NOW = datetime(2026, 11, 1, tzinfo=timezone.utc)
# PreparedStore's engines as the package registered them, the stdlib one first
# (numpy's too with poolsplit[fast]).
ENGINES = ("python", *sorted(e for e in _ENGINES if e != "python"))
BUILDS = 3  # the build time shown is the median of this many builds

def _vocabulary(size: int, seed: int = 3) -> list[str]:
    """Pseudo-English words, most frequent first (sampled with Zipf weights)."""
    rng = random.Random(seed)
    consonants, vowels = "bcdfghklmnprstvwz", "aeiou"
    words: list[str] = []
    seen: set[str] = set()
    while len(words) < size:
        word = "".join(rng.choice(consonants) + rng.choice(vowels)
                       for _ in range(rng.randrange(2, 5)))
        if word not in seen:
            seen.add(word)
            words.append(word)
    return words


GLUE = ("the and for with from into over when then that this was are will of to in on a is"
        " it as at by be or").split()
WORDS = _vocabulary(20_000)
# Zipf-Mandelbrot: in English the top ~100 ranks are function words (GLUE and
# the like, drawn separately above); content words continue the curve from
# there, so the r-th content word has weight 1 / (r + 100).
CUM_WEIGHTS = list(itertools.accumulate(1 / (r + 100) for r in range(len(WORDS))))
TAGS = WORDS[:40]


# Skewed type mix: plentiful high-priority types, fewer low-priority ones.
TYPES = [("task", 8, 0.22), ("fact", 7, 0.22), ("note", 6, 0.20), ("preference", 7, 0.10),
         ("procedure", 7, 0.10), ("skill", 3, 0.08), ("growth", 2, 0.06)]
PROJECTS = [None, "atlas", "hermes", "home", "infra", "research"]
POOLS = [
    Pool("work", max_tokens=1200, max_entries=8, types=("task", "procedure", "correction")),
    Pool("knowledge", max_tokens=800, max_entries=6, types=("fact", "note", "preference")),
    Pool("skills", max_tokens=400, max_entries=3, types=("skill",)),
    Pool("growth", max_tokens=300, max_entries=2, types=("growth",)),
]


def make_store(n: int, seed: int = 7) -> list[dict]:
    """A deterministic, realistic memory store of ``n`` entries."""
    rng = random.Random(seed)
    names, weights = [t[0] for t in TYPES], [t[2] for t in TYPES]
    priority = {t[0]: t[1] for t in TYPES}
    store = []
    for i in range(n):
        if rng.random() < 0.02:
            entry_type, scope = "correction", "always"
        else:
            entry_type, scope = rng.choices(names, weights)[0], None
        length = int(rng.uniform(20, 800))
        parts: list[str] = []
        size = 0
        while size < length:
            word = (rng.choices(WORDS, cum_weights=CUM_WEIGHTS)[0] if rng.random() < 0.55
                    else rng.choice(GLUE))
            parts.append(word)
            size += len(word) + 1
        entry: dict = {
            "id": f"m{i:06d}",
            "type": entry_type,
            "content": " ".join(parts)[:length],
            "created": (NOW - timedelta(seconds=rng.randrange(365 * 86400))).isoformat(),
            "base_priority": priority.get(entry_type, 9) + rng.choice((-1, 0, 0, 1)),
            "tags": rng.sample(TAGS, rng.randrange(0, 4)),
            "project": rng.choice(PROJECTS),
        }
        if scope:
            entry["scope"] = scope
        if rng.random() < 0.30:
            entry["token_count"] = max(1, len(entry["content"]) // 4 + rng.randrange(-3, 4))
        if rng.random() < 0.05:
            entry["status"] = "retired" if rng.random() < 0.5 else "active"
            entry["superseded_by"] = f"m{rng.randrange(n):06d}"
        store.append(entry)
    return store


def make_queries(count: int, seed: int = 11) -> list[dict]:
    """Deterministic contexts: a message of 3-12 words, sometimes a project and tags."""
    rng = random.Random(seed)
    return [
        {
            "message": " ".join(
                rng.choices(WORDS, cum_weights=CUM_WEIGHTS)[0] if rng.random() < 0.6
                else rng.choice(GLUE) for _ in range(rng.randrange(3, 13))),
            "project": rng.choice(PROJECTS),
            "tags": rng.sample(TAGS, rng.randrange(0, 3)),
        }
        for _ in range(count)
    ]


def timed(fn, queries):
    """Per-query seconds and answers for ``fn(context)`` over ``queries``."""
    times, answers = [], []
    for context in queries:
        start = time.perf_counter()
        answers.append(fn(context))
        times.append(time.perf_counter() - start)
    return times, answers


def summary(times: list[float]) -> dict:
    ordered = sorted(times)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {"median_ms": statistics.median(times) * 1e3, "p95_ms": p95 * 1e3, "n": len(times)}


def same(a: dict, b: dict) -> bool:
    """Same pools, same entry objects, same order."""
    return {k: [id(e) for e in v] for k, v in a.items()} == {
        k: [id(e) for e in v] for k, v in b.items()}


def time_writes(prepared, replacements: list[dict]) -> tuple[list[float], list[float]]:
    """Seconds per ``upsert`` of each replacement, then per ``delete`` of each one's id."""
    upsert_t, delete_t = [], []
    for entry in replacements:
        start = time.perf_counter()
        prepared.upsert(entry)
        upsert_t.append(time.perf_counter() - start)
    for entry in replacements:
        start = time.perf_counter()
        prepared.delete(entry["id"])
        delete_t.append(time.perf_counter() - start)
    return upsert_t, delete_t


def bench_size(n: int, queries: list[dict]) -> dict:
    store = make_store(n)
    few = queries[: 3 if n >= 100_000 else 10]
    ref_t, ref_a = timed(lambda c: ref_retrieve_pools(store, POOLS, c, now=NOW), few)
    core_n = queries[: 10 if n >= 100_000 else 30]
    core_t, core_a = timed(lambda c: retrieve_pools(store, POOLS, c, now=NOW), core_n)

    builds = []
    for _ in range(BUILDS):
        start = time.perf_counter()
        prepared = PreparedStore(store)
        builds.append(time.perf_counter() - start)
    build_s = statistics.median(builds)
    # A prepared store serves repeated queries: time its steady state, after
    # one untimed pass over the same queries.
    timed(lambda c: prepared.retrieve_pools(POOLS, c, now=NOW), queries)
    prep_t, prep_a = timed(lambda c: prepared.retrieve_pools(POOLS, c, now=NOW), queries)

    tracemalloc.start()
    measured = PreparedStore(store)
    bytes_used = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    del measured

    agree = (all(same(a, b) for a, b in zip(ref_a, core_a))
             and all(same(a, b) for a, b in zip(ref_a, prep_a))
             and all(same(a, b) for a, b in zip(core_a, prep_a)))

    extra = make_store(200, seed=99)
    add_t = []
    for entry in extra:
        entry["id"] = "new-" + entry["id"]
        start = time.perf_counter()
        prepared.add(entry)
        add_t.append(time.perf_counter() - start)
    # Supersede and delete stored memories: replacements drawn like the store's.
    rng = random.Random(5)
    targets = rng.sample(range(n), 200)
    upsert_t, delete_t = time_writes(
        prepared, [{**entry, "id": store[i]["id"]}
                   for i, entry in zip(targets, make_store(200, seed=98))])
    live = prepared.entries
    agree = agree and all(
        same(prepared.retrieve_pools(POOLS, c, now=NOW), retrieve_pools(live, POOLS, c, now=NOW))
        for c in queries[:3])

    ref, core, prep = summary(ref_t), summary(core_t), summary(prep_t)
    return {
        "n": n,
        "reference": ref,
        "stateless": core,
        "prepared": prep,
        "build_s": build_s,
        "build_s_each": builds,
        "bytes_per_entry": bytes_used / n,
        "add_ms_median": statistics.median(add_t) * 1e3,
        "add_ms_max": max(add_t) * 1e3,
        "upsert_ms": summary(upsert_t),
        "delete_ms": summary(delete_t),
        "stateless_speedup": ref["median_ms"] / core["median_ms"],
        "prepared_speedup": ref["median_ms"] / prep["median_ms"],
        "identical": agree,
    }


def bench_tenants(n: int, tenants: int, queries: list[dict]) -> dict:
    """One tenant's query in a store partitioned by ``user_id``, against its entries alone."""
    store = [{**entry, "user_id": f"u{i % tenants:04d}"} for i, entry in enumerate(make_store(n))]
    shared = PreparedStore(store, partition_key="user_id")
    picked = [f"u{k:04d}" for k in range(0, tenants, max(1, tenants // 10))][:10]
    alone = {t: PreparedStore([e for e in store if e["user_id"] == t]) for t in picked}
    shared_t, alone_t, agree = [], [], True
    for rounds in range(2):  # the first round is untimed: steady state, as for the store
        for t in picked:
            for context in queries[:10]:
                start = time.perf_counter()
                got = shared.retrieve_pools(POOLS, context, now=NOW, where={"user_id": t})
                mid = time.perf_counter()
                want = alone[t].retrieve_pools(POOLS, context, now=NOW)
                end = time.perf_counter()
                if rounds:
                    shared_t.append(mid - start)
                    alone_t.append(end - mid)
                    agree = agree and same(got, want)
    one, own = summary(shared_t), summary(alone_t)
    return {"n": n, "tenants": tenants, "shared": one, "alone": own,
            "ratio": one["median_ms"] / own["median_ms"], "identical": agree}


def _tenant_profile(n: int, count: int) -> tuple[list[dict], list[dict], list[str]]:
    """The ``tenants`` profile's store (100 entries a tenant), contexts, random tenants."""
    from profiles import PROFILES  # (profiles imports this module: not at the top)

    profile = PROFILES["tenants"]
    store = profile.make(n)
    rng = random.Random(37)
    users = sorted({entry["user_id"] for entry in store})
    return store, profile.queries(count, 31), [rng.choice(users) for _ in range(count)]


def first_uses(query, tenants: list[str], contexts: list[dict]) -> tuple[float, list[float]]:
    """Seconds of the first query on the key, then of the first query of each other tenant."""
    start = time.perf_counter()
    query(tenants[0], contexts[0])
    first_key = time.perf_counter() - start
    first_value = []
    for tenant, context in zip(tenants, contexts):
        if tenant != tenants[0] and tenant not in tenants[:tenants.index(tenant)]:
            start = time.perf_counter()
            query(tenant, context)
            first_value.append(time.perf_counter() - start)
    return first_key, first_value


def bench_undeclared(n: int, count: int) -> dict:
    """A filter on a key no store declared: ``where={"user_id": t}`` on a store without partitions.

    The ``tenants`` profile (1,000 tenants at 100k) in a PreparedStore built
    without ``partition_key``, queried for ``count`` random tenants, against
    the same query on a PreparedStore of that tenant's entries alone, per
    engine. The first query on the key (grouping every entry by it) and the
    first query of each tenant (indexing its entries) are timed apart; the
    steady figures follow them. ``stateless`` is ``explain_pools`` with the
    same filter: every entry read, the path such a filter took before views.
    """
    store, contexts, tenants = _tenant_profile(n, count)
    mine: dict[str, list[dict]] = {}
    for entry in store:
        mine.setdefault(entry["user_id"], []).append(entry)
    out: dict = {"n": n, "tenants": len({e["user_id"] for e in store}), "queries": count,
                 "engines": {}}
    for engine in ENGINES:
        shared = PreparedStore(store, engine=engine)  # no partition_key: the filter is undeclared
        alone = {t: PreparedStore(mine[t], engine=engine) for t in set(tenants)}

        def query(tenant: str, context: dict, shared=shared) -> dict:
            return shared.retrieve_pools(POOLS, context, now=NOW, where={"user_id": tenant})

        first_key, first_value = first_uses(query, tenants, contexts)
        for tenant, context in zip(tenants, contexts):  # untimed: the same steady state
            alone[tenant].retrieve_pools(POOLS, context, now=NOW)
        shared_t, alone_t, agree = [], [], True
        for tenant, context in zip(tenants, contexts):
            start = time.perf_counter()
            got = query(tenant, context)
            mid = time.perf_counter()
            want = alone[tenant].retrieve_pools(POOLS, context, now=NOW)
            alone_t.append(time.perf_counter() - mid)
            shared_t.append(mid - start)
            agree = agree and same(got, want)
        stateless_t, _ = timed(lambda pair, shared=shared: shared.explain_pools(
            POOLS, pair[1], now=NOW, where={"user_id": pair[0]}), list(zip(tenants, contexts))[:20])
        one, own = summary(shared_t), summary(alone_t)
        out["engines"][engine] = {
            "first_key_ms": first_key * 1e3, "first_tenant": summary(first_value),
            "filtered": one, "alone": own, "stateless": summary(stateless_t),
            "ratio": one["median_ms"] / own["median_ms"],
            "ratio_p95": one["p95_ms"] / own["p95_ms"], "identical": agree}
        del shared, alone
    return out


def bench_undeclared_langchain(n: int, count: int) -> dict | None:
    """The same through LangChain's retriever: ``invoke(q, filter={"team": t})``, undeclared.

    Each tenant is a team here (metadata ``team``), and the retriever is
    built with ``require_filter_keys=()``; against a retriever over that
    team's documents alone. None when LangChain is not installed.
    """
    try:
        from langchain_core.documents import Document

        from poolsplit_integrations import langchain as lc
    except ImportError:
        return None
    for name in ("poolsplit", "poolsplit_integrations"):  # (no correction type in a pool's data)
        logging.getLogger(name).setLevel(logging.ERROR)
    store, contexts, tenants = _tenant_profile(n, count)
    teams = ["t" + tenant[1:] for tenant in tenants]
    docs = [Document(id=e["id"], page_content=e["content"],
                     metadata={**{k: v for k, v in e.items() if k not in ("id", "content")},
                               "team": "t" + e["user_id"][1:]})
            for e in store]
    start = time.perf_counter()
    shared = lc.PoolSplitRetriever(documents=docs, pools=POOLS, now=NOW, require_filter_keys=())
    build_s = time.perf_counter() - start
    alone = {team: lc.PoolSplitRetriever(
        documents=[d for d in docs if d.metadata["team"] == team], pools=POOLS, now=NOW,
        require_filter_keys=()) for team in set(teams)}

    def query(team: str, context: dict) -> list:
        return shared.invoke(context["message"], filter={"team": team})

    first_key, first_value = first_uses(query, teams, contexts)
    for team, context in zip(teams, contexts):
        alone[team].invoke(context["message"])
    shared_t, alone_t, agree = [], [], True
    for team, context in zip(teams, contexts):
        start = time.perf_counter()
        got = query(team, context)
        mid = time.perf_counter()
        want = alone[team].invoke(context["message"])
        alone_t.append(time.perf_counter() - mid)
        shared_t.append(mid - start)
        agree = agree and [d.id for d in got] == [d.id for d in want]
    one, own = summary(shared_t), summary(alone_t)
    return {"n": n, "queries": count, "engine": shared._live.store.engine, "build_s": build_s,
            "first_key_ms": first_key * 1e3, "first_tenant": summary(first_value),
            "filtered": one, "alone": own, "ratio": one["median_ms"] / own["median_ms"],
            "ratio_p95": one["p95_ms"] / own["p95_ms"], "identical": agree}


def print_undeclared(core: dict, chain: dict | None) -> None:
    """The undeclared-filter figures as a small table (ms; median and p95)."""
    print(f"undeclared filter -- {core['n']} entries, {core['tenants']} tenants, no"
          f" partition_key; {core['queries']} queries over random tenants, one tenant's"
          " query against the same query on a store of its entries alone")
    head = (f"{'path':<40} | {'first key':>9} | {'first tenant':>16} | {'filtered':>16} |"
            f" {'tenant alone':>16} | {'ratio':>11} | {'stateless':>9} | same")
    print(head)
    print("-" * len(head))
    lines = [(f'PreparedStore {engine}, where={{"user_id"}}', row)
             for engine, row in core["engines"].items()]
    if chain is not None:
        lines.append((f'LangChain ({chain["engine"]}), filter={{"team"}}', chain))
    for name, row in lines:
        f, o, a = row["first_tenant"], row["filtered"], row["alone"]
        stateless = f"{row['stateless']['median_ms']:>9.1f}" if "stateless" in row else " " * 9
        print(f"{name:<40} | {row['first_key_ms']:>9.1f} | {f['median_ms']:>6.2f} p95"
              f" {f['p95_ms']:>5.2f} | {o['median_ms']:>6.2f} p95 {o['p95_ms']:>5.2f} |"
              f" {a['median_ms']:>6.2f} p95 {a['p95_ms']:>5.2f} |"
              f" {row['ratio']:>4.2f} / {row['ratio_p95']:>4.2f} | {stateless} |"
              f" {'yes' if row['identical'] else 'NO'}", flush=True)
    print("(first key: the first query on the key, grouping every entry; first tenant: the first"
          " query of each other tenant, indexing its entries; ratio: filtered / alone, median /"
          " p95; stateless: explain_pools with the filter, median of 20, every entry read)")


# The CJK profile: Chinese text without spaces, read with the Unicode reader
# (CJK runs as overlapping bigrams) and counted with the CJK counter.
UNICODE = make_scorer(words=unicode_words)
# Common Chinese characters (CJK unified ideographs), most frequent first.
HANZI = ("的一是不了人我在有他这中大来上个国到说们为子和你地出道也时年得就那要下以生会自着去之过"
         "家学对可里后小么心多天而能好都然没日于起还发成事只作当想看文无开手十用主行方又如前所本"
         "见经头面公同三已老从动两长知民样现分将外但身些与高意进把法此实回二理美点月明其种声全工"
         "己话儿者向情部正名定女问力机给等几很业最间新什打便位因重被走电四第门相次东政海口使教西"
         "再平真听世气信北少关并内加化由却代军产入先山五太水万市眼体别处总才场师书比住员九笑性通"
         "目华报立马命张活难神数件安表原车白应路期叫死常提感金何更反合放做系计或司利受光王果亲界"
         "及今京务制解各任至清物台象记边共风战干接它许八特觉望直服毛林题建南度统色字请交爱让认算")


def _cjk_vocabulary(size: int, seed: int = 5) -> list[str]:
    """Two- to four-character words drawn from HANZI, skewed to frequent characters."""
    rng = random.Random(seed)
    weights = list(itertools.accumulate(1 / (r + 10) for r in range(len(HANZI))))
    words, seen = [], set()
    while len(words) < size:
        word = "".join(rng.choices(HANZI, cum_weights=weights, k=rng.randrange(2, 5)))
        if word not in seen:
            seen.add(word)
            words.append(word)
    return words


CJK_WORDS = _cjk_vocabulary(5_000)
CJK_CUM = list(itertools.accumulate(1 / (r + 50) for r in range(len(CJK_WORDS))))


def _cjk_text(rng: random.Random, length: int) -> str:
    parts: list[str] = []
    size = 0
    while size < length:
        word = rng.choices(CJK_WORDS, cum_weights=CJK_CUM)[0]
        parts.append(word + ("\uff0c" if rng.random() < 0.1 else ""))
        size += len(parts[-1])
    return "".join(parts)[:length] + "。"


def make_cjk_store(n: int, seed: int = 13) -> list[dict]:
    """The shape of :func:`make_store` with Chinese content of 10-300 characters."""
    rng = random.Random(seed)
    store = make_store(n, seed=seed)
    for entry in store:
        entry["content"] = _cjk_text(rng, int(rng.uniform(10, 300)))
        entry.pop("token_count", None)
    return store


def make_cjk_queries(count: int, seed: int = 17) -> list[dict]:
    rng = random.Random(seed)
    return [{**query, "message": _cjk_text(rng, rng.randrange(6, 24))}
            for query in make_queries(count, seed=seed)]


def bench_cjk(n: int, queries: list[dict]) -> dict:
    """The CJK profile at ``n`` entries: the same paths, all with the Unicode reader."""
    store = make_cjk_store(n)
    hooks = {"scorer": UNICODE, "token_counter": cjk_token_counter}
    few = queries[:10]
    ref_t, ref_a = timed(lambda c: ref_retrieve_pools(store, POOLS, c, now=NOW, **hooks), few)
    core_t, core_a = timed(lambda c: retrieve_pools(store, POOLS, c, now=NOW, **hooks),
                           queries[:30])
    builds = []
    for _ in range(BUILDS):
        start = time.perf_counter()
        prepared = PreparedStore(store, **hooks)
        builds.append(time.perf_counter() - start)
    timed(lambda c: prepared.retrieve_pools(POOLS, c, now=NOW), queries)
    prep_t, prep_a = timed(lambda c: prepared.retrieve_pools(POOLS, c, now=NOW), queries)
    agree = (all(same(a, b) for a, b in zip(ref_a, core_a))
             and all(same(a, b) for a, b in zip(ref_a, prep_a))
             and all(same(a, b) for a, b in zip(core_a, prep_a)))
    ref, core, prep = summary(ref_t), summary(core_t), summary(prep_t)
    return {"n": n, "reference": ref, "stateless": core, "prepared": prep,
            "build_s": statistics.median(builds), "build_s_each": builds,
            "prepared_speedup": ref["median_ms"] / prep["median_ms"], "identical": agree}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--tenants", type=int, default=1_000,
                        help="tenants in the largest size's multi-tenant store (0: skip)")
    parser.add_argument("--cjk-sizes", type=int, nargs="*", default=[1_000, 10_000],
                        help="sizes of the CJK profile (Unicode reader, CJK counter); none: skip")
    parser.add_argument("--undeclared-n", type=int, default=100_000,
                        help="entries of the undeclared-filter store (tenants profile; 0: skip)")
    parser.add_argument("--undeclared-queries", type=int, default=200,
                        help="queries over random tenants in the undeclared-filter section")
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results.json"))
    args = parser.parse_args()
    queries = make_queries(args.queries)
    rows = []
    print(f"poolsplit benchmark -- {len(POOLS)} pools, default scorer, Python "
          f"{platform.python_version()}, {args.queries} queries per prepared run")
    head = (f"{'N':>7} | {'reference ms':>17} | {'stateless ms':>17} | {'prepared ms':>15} |"
            f" {'x core':>6} | {'x prep':>7} | {'build s':>7} | {'B/entry':>7} |"
            f" {'add ms':>6} | {'upsert ms':>9} | {'delete ms':>9} | same")
    print(head)
    print("-" * len(head))
    for n in args.sizes:
        row = bench_size(n, queries)
        rows.append(row)
        r, c, p = row["reference"], row["stateless"], row["prepared"]
        print(f"{n:>7} | {r['median_ms']:>8.1f} p95 {r['p95_ms']:>5.0f} |"
              f" {c['median_ms']:>8.1f} p95 {c['p95_ms']:>5.0f} |"
              f" {p['median_ms']:>6.2f} p95 {p['p95_ms']:>5.2f} |"
              f" {row['stateless_speedup']:>5.1f}x | {row['prepared_speedup']:>6.0f}x |"
              f" {row['build_s']:>7.2f} | {row['bytes_per_entry']:>7.0f} |"
              f" {row['add_ms_median']:>6.3f} | {row['upsert_ms']['median_ms']:>9.3f} |"
              f" {row['delete_ms']['median_ms']:>9.3f} | {'yes' if row['identical'] else 'NO'}",
              flush=True)
    tenancy = None
    if args.tenants:
        n = max(args.sizes)
        tenancy = bench_tenants(n, args.tenants, queries)
        s, a = tenancy["shared"], tenancy["alone"]
        print(f"tenants: {n} entries over {args.tenants} tenants, partitioned by user_id --"
              f" one tenant's query {s['median_ms']:.2f} ms (p95 {s['p95_ms']:.2f}) against"
              f" {a['median_ms']:.2f} ms (p95 {a['p95_ms']:.2f}) on its entries alone:"
              f" {tenancy['ratio']:.2f}x; same answers: {'yes' if tenancy['identical'] else 'NO'}")
    cjk_rows = []
    if args.cjk_sizes:
        cjk_queries = make_cjk_queries(args.queries)
        print("CJK profile -- Chinese text, make_scorer(words=unicode_words), cjk_token_counter")
        print(f"{'N':>7} | {'reference ms':>17} | {'stateless ms':>17} | {'prepared ms':>15} |"
              f" {'x prep':>7} | {'build s':>7} | same")
        for n in args.cjk_sizes:
            row = bench_cjk(n, cjk_queries)
            cjk_rows.append(row)
            r, c, p = row["reference"], row["stateless"], row["prepared"]
            print(f"{n:>7} | {r['median_ms']:>8.1f} p95 {r['p95_ms']:>5.0f} |"
                  f" {c['median_ms']:>8.1f} p95 {c['p95_ms']:>5.0f} |"
                  f" {p['median_ms']:>6.2f} p95 {p['p95_ms']:>5.2f} |"
                  f" {row['prepared_speedup']:>6.0f}x | {row['build_s']:>7.2f} |"
                  f" {'yes' if row['identical'] else 'NO'}", flush=True)
    undeclared: dict | None = None
    if args.undeclared_n:
        undeclared = {"core": bench_undeclared(args.undeclared_n, args.undeclared_queries),
                      "langchain": bench_undeclared_langchain(args.undeclared_n,
                                                              args.undeclared_queries)}
        print_undeclared(undeclared["core"], undeclared["langchain"])
    out = Path(args.out)
    out.write_text(json.dumps({"pools": [p.name for p in POOLS], "rows": rows,
                               "tenants": tenancy, "cjk": cjk_rows, "undeclared": undeclared},
                              indent=2) + "\n")
    shown = out.relative_to(ROOT) if out.is_relative_to(ROOT) else out
    print("(median and p95 per query; prepared: after one untimed pass over the queries;"
          f" build: median of {BUILDS}; x = reference median / path median; written to {shown})")
    agree = (all(row["identical"] for row in rows + cjk_rows)
             and (tenancy is None or tenancy["identical"])
             and (undeclared is None or all(
                 row["identical"] for row in [*undeclared["core"]["engines"].values(),
                                              undeclared["langchain"] or {"identical": True}])))
    return 0 if agree else 1


if __name__ == "__main__":
    raise SystemExit(main())
