"""What OpenTelemetry tracing costs a read: off, a provider without an exporter, an exporter.

Run with ``make bench`` (or ``python benchmarks/bench_tracing.py [--n 10000]``).
One process times PreparedStore's ``retrieve_pools`` on the 10k store of
``bench_retrieve.py`` five ways, interleaved round by round so that drift
hits each alike, and prints each one's median beside the plain read:

- plain: no hook at all (``prepared.py`` as copied alone);
- no otel: the hook, with ``opentelemetry`` not importable;
- off: the hook, ``opentelemetry-api`` installed, no tracer provider set;
- provider: an SDK tracer provider with no exporter (spans record, go nowhere);
- exporter: the same provider exporting every span to memory.

A recording span carries the read's ledger, which costs an ``explain_pools``:
the last two rows are that price, paid only with tracing on.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.bench_retrieve import NOW, POOLS, make_queries, make_store  # noqa: E402
from poolsplit_core import prepared, tracing  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    try:
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    except ImportError:
        print("bench_tracing: needs opentelemetry-sdk (pip install -e '.[dev]'); skipped")
        return 0

    store = prepared.PreparedStore(make_store(args.n))
    queries = make_queries(args.queries)
    quiet, recording, exported = TracerProvider(), TracerProvider(), TracerProvider()
    exporter = InMemorySpanExporter()
    exported.add_span_processor(SimpleSpanProcessor(exporter))
    hook = prepared._traced_read
    imported = list(tracing._otel) or (tracing._import() or list(tracing._otel))

    def setup(name: str) -> None:
        prepared._traced_read = None if name == "plain" else hook
        tracing._otel[:] = [None, (), None] if name == "no otel" else imported
        trace._TRACER_PROVIDER = {"provider": recording, "exporter": exported}.get(name)
        exporter.clear()

    ways = ("plain", "no otel", "off", "provider", "exporter")
    per_read: dict[str, list[float]] = {way: [] for way in ways}
    answers = {}
    try:
        for _ in range(args.rounds + 1):  # the first round warms up, untimed
            for way in ways:
                setup(way)
                start = time.perf_counter()
                got = [store.retrieve_pools(POOLS, q, now=NOW) for q in queries]
                per_read[way].append((time.perf_counter() - start) / len(queries))
                answers[way] = got
    finally:
        setup("off")
        trace._TRACER_PROVIDER = None
        del quiet
    same = all(answers[way] == answers["plain"] for way in ways)
    base = statistics.median(per_read["plain"][1:])
    print(f"\nTracing cost per read: PreparedStore.retrieve_pools, {args.n:,} entries,"
          f" {len(queries)} queries x {args.rounds} rounds (median of the rounds)")
    print(f"{'':<10}{'ms/read':>10}{'vs plain':>10}")
    for way in ways:
        median = statistics.median(per_read[way][1:])
        print(f"{way:<10}{median * 1e3:>10.3f}{(median / base - 1) * 100:>+9.1f}%")
    print("same answers on every way:", same)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
