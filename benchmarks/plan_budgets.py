"""Planned budgets against the hand-made split, on the shipped store and a 10k-entry store.

    python benchmarks/plan_budgets.py

For each store, ``plan_pools`` gets the demo's total (1400 tokens), first with
the always tier inside it, then on top of it (as the hand-made split loads its
corrections); it plans on three quarters of the queries and the table shows
best-entry coverage per type on the quarter held out, next to the target, and
the hand-made split (``SPLIT_POOLS``) on the same held-out queries.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench_retrieve import NOW, make_queries, make_store  # noqa: E402

from poolsplit_core.demo import (  # noqa: E402
    DEMO_NOW,
    DEMO_QUERIES,
    SPLIT_POOLS,
    TOTAL_TOKENS,
    load_sample_store,
)
from poolsplit_core.plan import best_entry_coverage, plan_pools, sample_queries  # noqa: E402

TARGET = 0.9


def report(name, store, queries, now):
    held = queries[3::4]  # plan_pools(holdout=0.25) holds out every fourth query
    hand = best_entry_coverage(store, SPLIT_POOLS, held, now=now)
    print(f"\n{name}: {len(store)} entries, {len(queries)} queries"
          f" ({len(queries) - len(held)} to plan on, {len(held)} held out), target {TARGET}")
    try:
        inside = plan_pools(store, queries, TOTAL_TOKENS, target=TARGET, now=now)
        always = inside.always_tokens
    except ValueError as exc:
        print(f"  {TOTAL_TOKENS} tokens, always tier inside: refused: {exc}")
        inside = None
        always = int(str(exc).split(" needs ")[1].split(" token")[0])
    start = time.perf_counter()
    on_top = plan_pools(store, queries, TOTAL_TOKENS + always, target=TARGET, now=now)
    took = time.perf_counter() - start
    plans = [(f"{TOTAL_TOKENS} incl. always", inside),
             (f"{TOTAL_TOKENS}+{always} always", on_top)]
    header = f"  {'type':<11} {'hand-made':>9}"
    for label, _ in plans:
        header += f"  {label:>22}"
    print(header)
    for kind, rate in hand.items():
        line = f"  {kind:<11} {rate.share:>9.2f}"
        for _, plan in plans:
            cell = "-" if plan is None else (
                f"{plan.types[kind].held_out.share:.2f} ({plan.types[kind].max_tokens} tok)")
            line += f"  {cell:>22}"
        print(line)
    for label, plan in plans:
        if plan is not None:
            verdict = "reached" if plan.held_out_lowest >= TARGET else "NOT reached"
            print(f"  {label}: held-out lowest {plan.held_out_lowest:.2f} ({verdict});"
                  f" smallest total for {TARGET} on the planning queries:"
                  f" {plan.tokens_for_target}")
    print(f"  plan_pools took {took:.2f} s")


def main() -> int:
    sample = load_sample_store()
    report("shipped sample store, the demo's 32 queries", sample, list(DEMO_QUERIES), DEMO_NOW)
    report("shipped sample store, 200 queries drawn from it", sample,
           sample_queries(sample, 200), DEMO_NOW)
    report("benchmark store (bench_retrieve.make_store), 200 queries", make_store(10_000),
           make_queries(200), NOW)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
