"""The tests' OpenTelemetry: an SDK provider with an in-memory exporter, for one test at a time.

The provider is put in place of the global one for the test only (and the
global one restored after it), so the rest of the suite runs untraced.
"""

from __future__ import annotations

import pytest

from poolsplit_core import tracing


@pytest.fixture
def spans(monkeypatch):
    """The exporter every span of the test reaches; content capture off until turned on."""
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    monkeypatch.setattr(trace, "_TRACER_PROVIDER", provider)
    monkeypatch.delenv(tracing.CONTENT_ENV, raising=False)
    tracing.capture_content(None)
    yield exporter
    tracing.capture_content(None)


def read_spans(exporter):
    """The finished poolsplit read spans, each attribute checked against the one table."""
    found = [span for span in exporter.get_finished_spans()
             if (span.attributes or {}).get("gen_ai.provider.name") == "poolsplit"]
    for span in found:
        unknown = set(span.attributes) - set(tracing.ATTRIBUTES)
        assert not unknown, f"{span.name} carries attributes outside tracing.ATTRIBUTES: {unknown}"
    return found


def only_span(exporter):
    """The one read span the test made (and an assertion that there is exactly one)."""
    found = read_spans(exporter)
    assert len(found) == 1, [span.name for span in found]
    return found[0]


def expected_ledger(explanation):
    """The ``poolsplit.*`` ledger a span must carry, read from an Explanation field by field."""
    ledgers = list(explanation.ledgers.values())
    outcomes = [d.outcome for d in explanation.decisions]
    return {
        "poolsplit.pools": tuple(ledger.pool for ledger in ledgers),
        "poolsplit.pool.max_tokens": tuple(ledger.max_tokens for ledger in ledgers),
        "poolsplit.pool.max_entries": tuple(ledger.max_entries for ledger in ledgers),
        "poolsplit.pool.tokens_used": tuple(ledger.tokens_used for ledger in ledgers),
        "poolsplit.pool.selected": tuple(ledger.selected for ledger in ledgers),
        "poolsplit.pool.always": tuple(ledger.always for ledger in ledgers),
        "poolsplit.pool.always_tokens": tuple(ledger.always_tokens for ledger in ledgers),
        # (an entry a pool skipped counts in that pool, though a later pool decided it)
        "poolsplit.pool.over_tokens": tuple(ledger.skipped_tokens for ledger in ledgers),
        "poolsplit.pool.over_entries": tuple(ledger.skipped_entries for ledger in ledgers),
        "poolsplit.always_tokens": sum(ledger.always_tokens for ledger in ledgers),
        "poolsplit.inactive": outcomes.count("inactive"),
        "poolsplit.no_pool": outcomes.count("no_pool"),
    }


def assert_ledger(span, explanation):
    """The span's ``poolsplit.*`` ledger is the explanation's."""
    want = expected_ledger(explanation)
    assert {key: span.attributes.get(key) for key in want} == want
