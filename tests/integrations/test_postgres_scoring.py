"""The database scores pool-split reads once PoolSplitStore.setup() ran: how, and never wrongly.

The differential (``test_postgres_differential.py``) compares the answers with
the core on thousands of namespaces; these tests pin the machinery: setup is
idempotent, the triggers keep each row's readings in the writing transaction,
a missing or stale reading is never used, and a namespace above the threshold
is scored by the database.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone

import pytest
from langgraph.store.base import PutOp

from poolsplit_core.poolsplit import Pool, explain_pools, retrieve_pools
from poolsplit_integrations import _pgengine
from poolsplit_integrations._entries import item_to_entry
from poolsplit_integrations.langgraph import PoolSplitStore
from tests.integrations.conftest import open_store

NOW = datetime(2026, 3, 1, tzinfo=timezone.utc)
NS = ("memories", "scored")
POOLS = [Pool("work", 300, 4, ("task",)), Pool("facts", 200, 3, ("fact", "skill")),
         Pool("rest", 300, 5)]
WORDS = "deploy release database budget rotate memory schema review incident cache".split()


@pytest.fixture
def bare(postgres_ready):
    store, close = open_store("postgres", postgres_ready)
    PoolSplitStore(store).setup()
    yield store
    close()


def value(rng: random.Random, i: int) -> dict:
    out = {"content": " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 9))),
           "type": rng.choice(("task", "fact", "skill", "note")),
           "base_priority": rng.choice((3, 5, 5, 8)),
           "created": (NOW - timedelta(days=rng.randint(0, 200))).isoformat()}
    if i % 40 == 0:
        out.update(scope="always", type="correction")
    if rng.random() < 0.3:
        out["tags"] = rng.sample(["db", "ops", "api"], rng.randint(1, 2))
    return out


def expected(bare, context):
    items = sorted(bare.search(NS, limit=100_000), key=lambda i: (".".join(i.namespace), i.key))
    entries = [item_to_entry(i.namespace, i.key, i.value, created_at=i.created_at, read_from=NS)
               for i in items]
    got = retrieve_pools(entries, POOLS, context, now=NOW, always_pool=True)
    return {name: [e["id"] for e in picked] for name, picked in got.items()}, entries


def keys(got):
    return {name: [item.key for item in items] for name, items in got.items()}


def readings(bare):
    return {row["key"]: row for row in bare.conn.execute(
        "SELECT key, updated_at, regular, etype, cost FROM poolsplit_v1.entry WHERE prefix = %s",
        (".".join(NS),)).fetchall()}


def test_setup_twice_is_harmless_and_the_store_then_scores_in_the_database(bare):
    wrapped = PoolSplitStore(bare)
    wrapped.setup()  # again: nothing changes, nothing fails
    assert wrapped._scores_in_database()
    assert not PoolSplitStore(bare, token_counter=lambda text: 1)._scores_in_database()


def test_the_triggers_keep_each_row_s_readings_in_the_writing_transaction(bare):
    wrapped = PoolSplitStore(bare)
    wrapped.put(NS, "t1", {"content": "deploy the release", "type": "task"})
    wrapped.put(NS, "odd", {"content": {"not": "a str"}, "type": "task"})
    kept = readings(bare)
    stored = {i.key: i for i in bare.search(NS)}
    assert kept["t1"]["updated_at"] == stored["t1"].updated_at and kept["t1"]["regular"]
    assert (kept["t1"]["etype"], kept["t1"]["cost"]) == ("task", len("deploy the release") // 4)
    assert not kept["odd"]["regular"]  # read whole, scored in Python
    wrapped.put(NS, "t1", {"content": "now a fact", "type": "fact"})
    assert readings(bare)["t1"]["etype"] == "fact"
    wrapped.delete(NS, "t1")
    assert "t1" not in readings(bare)
    bare.conn.execute("TRUNCATE store")
    assert readings(bare) == {}


def test_a_namespace_above_the_threshold_is_scored_by_the_database_and_equals_the_core(
        bare, monkeypatch):
    rng = random.Random(7)
    bare.batch([PutOp(NS, f"k{i:04}", value(rng, i)) for i in range(_pgengine.SCORED_FROM + 200)])
    wrapped = PoolSplitStore(bare)
    scored = []
    decide = _pgengine.decide
    monkeypatch.setattr(_pgengine, "decide", lambda *a, **k: scored.append(1) or decide(*a, **k))
    for context in ({"message": "deploy the database schema", "tags": ["db"]},
                    {"message": "budget review"}, None):
        want, entries = expected(bare, context)
        assert keys(wrapped.retrieve_pools(NS, POOLS, context, now=NOW)) == want
        # explain_pools reads every item: the core's account of the same snapshot
        explained = wrapped.explain_pools(NS, POOLS, context, now=NOW)
        core = explain_pools(entries, POOLS, context, now=NOW, always_pool=True)
        assert explained.ledgers == core.ledgers
    assert len(scored) == 3


@pytest.mark.parametrize("spoil", ["missing", "stale"])
def test_a_missing_or_stale_reading_is_never_used(bare, monkeypatch, spoil):
    monkeypatch.setattr(_pgengine, "SCORED_FROM", 0)
    wrapped = PoolSplitStore(bare)
    rng = random.Random(11)
    bare.batch([PutOp(NS, f"k{i:03}", value(rng, i)) for i in range(120)])
    bare.put(NS, "star", {"content": "deploy deploy database", "type": "task",
                          "base_priority": 50})
    # The reading of the strongest task is lost, or left from an older version of it
    # (as a write racing setup()'s first fill can leave it): the row is read whole.
    if spoil == "missing":
        bare.conn.execute("DELETE FROM poolsplit_v1.entry WHERE key = 'star'")
    else:
        bare.conn.execute("UPDATE poolsplit_v1.entry SET base = 0.001,"
                          " updated_at = updated_at - interval '1 day' WHERE key = 'star'")
    context = {"message": "deploy the database"}
    want, _ = expected(bare, context)
    got = keys(wrapped.retrieve_pools(NS, POOLS, context, now=NOW))
    assert got == want and got["work"][0] == "star"


def test_a_stale_reading_on_the_first_page_does_not_end_the_pages(bare, monkeypatch):
    """A page the store join thins out (a stale reading) is not taken for the last one."""
    monkeypatch.setattr(_pgengine, "SCORED_FROM", 0)
    rng = random.Random(5)
    bare.batch([PutOp(NS, f"k{i:03}", value(rng, i)) for i in range(3 * _pgengine.PAGE)])
    bare.conn.execute("UPDATE poolsplit_v1.entry SET base = 1e6,"
                      " updated_at = updated_at - interval '1 day' WHERE key = 'k001'")
    pools = [Pool("many", 10**6, 2 * _pgengine.PAGE)]  # it needs the second page
    want = {name: [e["id"] for e in got] for name, got in retrieve_pools(
        expected(bare, None)[1], pools, None, now=NOW, always_pool=True).items()}
    got = keys(PoolSplitStore(bare).retrieve_pools(NS, pools, None, now=NOW))
    contextual = [key for key in got["many"] if int(key[1:]) % 40]  # (every 40th: a correction)
    assert got == want and len(contextual) == 2 * _pgengine.PAGE
