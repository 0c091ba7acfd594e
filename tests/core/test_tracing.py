"""OpenTelemetry spans of PreparedStore's reads: one each, explain_pools' ledger, no content.

The spans reach an in-memory exporter (``tests/otel_support.py``); each one's
attributes must all be in ``poolsplit_core.tracing.ATTRIBUTES``, the one
table of names.
"""

from __future__ import annotations

import json
import random
import sys

import pytest

from poolsplit_core import tracing
from poolsplit_core.poolsplit import AlwaysScopeOverflowError, Pool, explain_pools
from poolsplit_core.prepared import PreparedStore
from tests.core import strategies as s
from tests.otel_support import assert_ledger, only_span, read_spans

# The GenAI memory span's attributes as the OpenTelemetry semantic conventions
# (semantic-conventions-genai, its attribute registry for gen_ai, and error.type) spell them.
CONVENTIONS = {
    "gen_ai.operation.name", "gen_ai.provider.name", "gen_ai.memory.store.id",
    "gen_ai.memory.record.id", "gen_ai.memory.record.count", "gen_ai.memory.query.text",
    "gen_ai.memory.records", "error.type",
}
CONTENT = {"gen_ai.memory.query.text", "gen_ai.memory.records", "poolsplit.user_id"}

STORE = [
    {"id": "fix", "type": "correction", "scope": "always", "content": "Never force-push."},
    {"id": "t1", "type": "task", "content": "deploy the api", "user_id": "ana"},
    {"id": "t2", "type": "task", "content": "water the plants " * 30, "user_id": "ana"},
    {"id": "old", "type": "task", "status": "retired", "content": "deploy the old api"},
    {"id": "odd", "type": "recipe", "content": "bake bread"},
]
POOLS = [Pool("work", max_tokens=20, max_entries=3, types=("task", "correction"))]


def test_the_table_names_only_the_conventions_and_poolsplit_attributes():
    for name, attribute in tracing.ATTRIBUTES.items():
        assert name in CONVENTIONS or name.startswith("poolsplit."), name
        assert attribute.when in ("always", "content"), name
    assert {n for n, a in tracing.ATTRIBUTES.items() if a.when == "content"} == CONTENT


@pytest.mark.parametrize("read", ["retrieve_pools", "decide"])
def test_one_span_per_read_with_the_conventions_attributes(spans, read):
    store = PreparedStore(STORE)
    got = getattr(store, read)(POOLS, {"message": "deploy"})
    span = only_span(spans)
    assert span.name == "search_memory PreparedStore"
    attributes = span.attributes
    assert attributes["gen_ai.operation.name"] == "search_memory"
    assert attributes["gen_ai.provider.name"] == "poolsplit"
    assert attributes["gen_ai.memory.store.id"] == "PreparedStore"
    assert attributes["gen_ai.memory.record.count"] == sum(map(len, got.values())) == 2
    assert attributes["poolsplit.engine"] == store.engine
    assert attributes["poolsplit.user_filter"] is False
    assert not CONTENT & set(attributes)


def test_a_read_that_falls_back_to_decide_is_still_one_span(spans):
    def scorer(entry, context):  # not the default score: retrieve_pools runs decide's path
        return len(entry.get("content", ""))

    PreparedStore(STORE, scorer=scorer).retrieve_pools(POOLS, {"message": "deploy"})
    only_span(spans)


def test_the_ledger_is_explain_pools_on_seeded_random_stores(spans):
    for seed in range(40):
        rng = random.Random(seed)
        entries = s.near_tie_store(rng)
        pools, context, now = s.near_tie_pools(rng), s.near_tie_context(rng), s.near_tie_now(rng)
        spans.clear()
        got = PreparedStore(entries).retrieve_pools(pools, context, now=now)
        span = only_span(spans)
        assert_ledger(span, explain_pools(entries, pools, context, now=now))
        assert span.attributes["gen_ai.memory.record.count"] == sum(map(len, got.values()))


def test_a_user_filter_is_said_but_the_user_only_with_content_capture(spans):
    store = PreparedStore(STORE)
    store.decide(POOLS, {"message": "deploy"}, where={"user_id": "ana"})
    span = only_span(spans)
    assert span.attributes["poolsplit.user_filter"] is True
    assert "poolsplit.user_id" not in span.attributes
    spans.clear()
    tracing.capture_content(True)
    store.decide(POOLS, {"message": "deploy"}, where={"user_id": "ana"})
    assert only_span(spans).attributes["poolsplit.user_id"] == "ana"


@pytest.mark.parametrize("how", ["env", "option"])
def test_content_is_recorded_only_when_opted_in(spans, monkeypatch, how):
    store = PreparedStore(STORE)
    if how == "env":
        monkeypatch.setenv(tracing.CONTENT_ENV, "true")
    else:
        tracing.capture_content(True)
    store.retrieve_pools(POOLS, {"message": "deploy"})
    attributes = only_span(spans).attributes
    assert attributes["gen_ai.memory.query.text"] == "deploy"
    records = json.loads(attributes["gen_ai.memory.records"])
    assert [(r["id"], r["pool"], r["always"]) for r in records] == [
        ("fix", "work", True), ("t1", "work", False)]
    assert records[1]["content"] == "deploy the api" and records[1]["score"] > 0


def test_the_option_turns_content_off_over_the_env(spans, monkeypatch):
    monkeypatch.setenv(tracing.CONTENT_ENV, "true")
    tracing.capture_content(False)
    PreparedStore(STORE).retrieve_pools(POOLS, {"message": "deploy"})
    assert not CONTENT & set(only_span(spans).attributes)
    with pytest.raises(TypeError, match="capture_content takes True, False or None, got 'yes'"):
        tracing.capture_content("yes")


def test_a_refused_read_is_an_error_span_without_its_message(spans):
    from opentelemetry.trace import StatusCode

    store = PreparedStore(STORE)
    with pytest.raises(AlwaysScopeOverflowError):
        store.decide(POOLS, {"message": "deploy"}, max_always_tokens=0)
    span = only_span(spans)
    assert span.status.status_code is StatusCode.ERROR
    assert span.status.description is None  # the message names entries: content
    assert span.attributes["error.type"] == "poolsplit_core.poolsplit.AlwaysScopeOverflowError"
    spans.clear()
    with pytest.raises(TypeError):
        store.retrieve_pools(["work"], {"message": "deploy"})
    span = only_span(spans)
    assert span.status.status_code is StatusCode.ERROR
    assert span.attributes["error.type"] == "TypeError"


def test_no_provider_no_span_and_the_same_answer(spans, monkeypatch):
    from opentelemetry import trace

    store = PreparedStore(STORE)
    traced = store.retrieve_pools(POOLS, {"message": "deploy"})
    monkeypatch.setattr(trace, "_TRACER_PROVIDER", None)
    spans.clear()
    assert store.retrieve_pools(POOLS, {"message": "deploy"}) == traced
    assert read_spans(spans) == []
    assert tracing.read("PreparedStore") is tracing._OFF


def test_without_opentelemetry_every_read_is_untraced(monkeypatch):
    monkeypatch.setitem(sys.modules, "opentelemetry", None)  # import opentelemetry fails
    monkeypatch.setattr(tracing, "_otel", [])
    assert tracing.read("PreparedStore") is tracing._OFF
    assert tracing._otel == [None, (), None]
    store = PreparedStore(STORE)
    assert [e["id"] for e in store.retrieve_pools(POOLS, {"message": "deploy"})["work"]] == [
        "fix", "t1"]


def test_the_planner_reads_are_not_traced(spans):
    from poolsplit_core.plan import plan_pools

    entries = [{"id": f"e{n}", "type": ("task", "skill")[n % 2],
                "content": f"deploy step {n} of the api"} for n in range(40)]
    plan_pools(entries, [{"message": f"deploy step {n}"} for n in range(8)], total_tokens=60)
    assert read_spans(spans) == []
