"""What OpenTelemetry tracing costs a read: off, a provider without an exporter, an exporter.

Run with ``make bench`` (or ``python benchmarks/bench_tracing.py [--n 10000]``).
One process times PreparedStore's ``retrieve_pools`` on the 10k store of
``bench_retrieve.py`` five ways, the untraced ones alternating query by query
so that drift hits each alike, and prints each one's median and best round
beside the plain read's, then the hook's own cost timed alone:

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

    # The untraced ways alternate query by query (their differences are within a
    # query's noise); the recording ones cost an explain each and run fewer rounds.
    fast, slow = ("plain", "no otel", "off"), ("provider", "exporter")
    totals: dict[str, list[float]] = {way: [] for way in fast + slow}
    answers: dict[str, list] = {way: [] for way in fast + slow}
    try:
        for r in range(args.rounds + 1):  # the first round warms up, untimed
            spent = dict.fromkeys(fast, 0.0)
            for n, q in enumerate(queries):
                for way in fast[n % 3:] + fast[:n % 3]:  # each way first as often
                    setup(way)
                    start = time.perf_counter()
                    got = store.retrieve_pools(POOLS, q, now=NOW)
                    spent[way] += time.perf_counter() - start
                    if r == 0:
                        answers[way].append(got)
            if r:
                for way in fast:
                    totals[way].append(spent[way] / len(queries))
        for _ in range(min(args.rounds, 3)):
            for way in slow:
                setup(way)
                start = time.perf_counter()
                got = [store.retrieve_pools(POOLS, q, now=NOW) for q in queries]
                totals[way].append((time.perf_counter() - start) / len(queries))
                answers[way] = got
        # The hook alone, off: what a read pays for it, without the read's own noise.
        setup("off")
        hook_reps = 100_000
        start = time.perf_counter()
        for _ in range(hook_reps):
            with store._span(queries[0], None) as span:
                span.loaded(0, lambda: None)  # type: ignore[arg-type,return-value]
        hook = (time.perf_counter() - start) / hook_reps
    finally:
        setup("off")
        trace._TRACER_PROVIDER = None
        del quiet
    same = all(answers[way] == answers["plain"] for way in fast + slow)
    base, floor = statistics.median(totals["plain"]), min(totals["plain"])
    print(f"\nTracing cost per read: PreparedStore.retrieve_pools, {args.n:,} entries,"
          f" {len(queries)} queries, {args.rounds} rounds (recording: {min(args.rounds, 3)})")
    print(f"{'':<10}{'median ms':>10}{'vs plain':>10}{'best ms':>10}{'vs plain':>10}")
    for way in fast + slow:
        median, best = statistics.median(totals[way]), min(totals[way])
        print(f"{way:<10}{median * 1e3:>10.3f}{(median / base - 1) * 100:>+9.1f}%"
              f"{best * 1e3:>10.3f}{(best / floor - 1) * 100:>+9.1f}%")
    print(f"the hook alone, off: {hook * 1e6:.2f} us a read, {hook / base * 100:.2f}% of"
          " the plain read")
    print("same answers on every way:", same)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
