"""The database scores pool-split reads once PoolSplitStore.setup() ran: how, and never wrongly.

The differential (``test_postgres_differential.py``) compares the answers with
the core on thousands of namespaces; these tests pin the machinery: setup is
idempotent (and, run again, costs a few statements whatever the store's size),
the triggers keep each row's readings in the writing transaction,
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
    assert not kept["odd"]["regular"]  # read whole, scored in Python: no other reading kept
    odd = bare.conn.execute("SELECT * FROM poolsplit_v1.entry WHERE key = 'odd'").fetchone()
    assert {k for k, v in odd.items() if v is not None} == {
        "prefix", "key", "updated_at", "created_at", "regular", "carries_user"}
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


def spoil(bare, how):
    """Leave the reading of 'star' behind its row, as a write that bypassed the triggers can."""
    if how == "missing":
        bare.conn.execute("DELETE FROM poolsplit_v1.entry WHERE key = 'star'")
    elif how == "stale":
        bare.conn.execute("UPDATE poolsplit_v1.entry SET base = 0.001,"
                          " updated_at = updated_at - interval '1 day' WHERE key = 'star'")
    else:  # a reading of a row deleted with the triggers bypassed
        bare.conn.execute("INSERT INTO poolsplit_v1.entry SELECT prefix, 'ghost', updated_at,"
                          " created_at, regular, active, always, etype, cost, base * 100,"
                          " created_us, created_text, words, tags, project, carries_user"
                          " FROM poolsplit_v1.entry WHERE key = 'star'")


def star_store(bare):
    rng = random.Random(11)
    bare.batch([PutOp(NS, f"k{i:03}", value(rng, i)) for i in range(120)])
    bare.put(NS, "star", {"content": "deploy deploy database", "type": "task",
                          "base_priority": 50})


@pytest.mark.parametrize("how", ["missing", "stale", "ghost"])
def test_a_recheck_repairs_a_reading_left_behind_by_a_write_that_bypassed_the_triggers(
        bare, monkeypatch, how):
    monkeypatch.setattr(_pgengine, "SCORED_FROM", 0)
    star_store(bare)
    before = readings(bare)
    spoil(bare, how)
    assert readings(bare) != before
    PoolSplitStore(bare).setup()  # done already: a few statements, no row re-checked
    assert readings(bare) != before
    assert _pgengine.setup_entries(bare.conn, recheck=True) == 1  # (poolsplit-postgres recheck)
    assert readings(bare) == before
    context = {"message": "deploy the database"}
    want, _ = expected(bare, context)
    got = keys(PoolSplitStore(bare).retrieve_pools(NS, POOLS, context, now=NOW))
    assert got == want and got["work"][0] == "star"


@pytest.mark.parametrize("how", ["stale", "ghost"])
def test_a_read_that_meets_a_reading_behind_its_row_is_answered_from_the_rows(
        bare, monkeypatch, caplog, how):
    monkeypatch.setattr(_pgengine, "SCORED_FROM", 0)
    star_store(bare)
    # the reading says the best task is the best by far: the scoring meets it first
    bare.conn.execute("UPDATE poolsplit_v1.entry SET base = 1e6,"
                      " updated_at = updated_at - interval '1 day' WHERE key = 'star'"
                      if how == "stale" else "SELECT 1")
    if how == "ghost":
        spoil(bare, how)
    context = {"message": "deploy the database"}
    want, _ = expected(bare, context)
    wrapped = PoolSplitStore(bare)
    with caplog.at_level("WARNING", logger="poolsplit"):
        assert keys(wrapped.retrieve_pools(NS, POOLS, context, now=NOW)) == want
    assert "answered from its rows" in caplog.text
    assert "run poolsplit-postgres recheck" in caplog.text


def test_readings_are_used_only_once_setup_recorded_them_whole(bare):
    assert PoolSplitStore(bare)._scores_in_database()
    bare.conn.execute("DELETE FROM poolsplit_v1.kept")
    assert not PoolSplitStore(bare)._scores_in_database()  # (a fill under way, say)
    PoolSplitStore(bare).setup()
    assert PoolSplitStore(bare)._scores_in_database()
    bare.conn.execute("ALTER TABLE store DISABLE TRIGGER poolsplit_v1_entry")
    try:
        assert not PoolSplitStore(bare)._scores_in_database()
    finally:
        bare.conn.execute("ALTER TABLE store ENABLE TRIGGER poolsplit_v1_entry")


@pytest.mark.parametrize("page", [1, 3])
def test_pools_that_read_many_pages_of_many_groups_answer_as_the_core(bare, monkeypatch, page):
    """Tiny pages: every group is read a few rows at a time, bounds decide what is handed on."""
    monkeypatch.setattr(_pgengine, "SCORED_FROM", 0)
    monkeypatch.setattr(_pgengine, "PAGE", page)
    monkeypatch.setattr(_pgengine, "PAGE_MOST", page)
    rng = random.Random(5)
    bare.batch([PutOp(NS, f"k{i:03}", value(rng, i)) for i in range(300)])
    pools = [Pool("few", 150, 3, ("task",)), Pool("many", 10**6, 120), Pool("tight", 9, 50)]
    wrapped = PoolSplitStore(bare)
    pages = []
    fetch = _pgengine._cursor_pages
    monkeypatch.setattr(_pgengine, "_cursor_pages", lambda conn: (
        lambda statement, params: pages.append(1) or fetch(conn)(statement, params)))
    for context in ({"message": "deploy the database schema", "tags": ["db"]},
                    {"message": "budget review", "project": "x"}, None):
        entries = expected(bare, context)[1]
        want = {name: [e["id"] for e in got] for name, got in retrieve_pools(
            entries, pools, context, now=NOW, always_pool=True).items()}
        assert keys(wrapped.retrieve_pools(NS, pools, context, now=NOW)) == want
    assert len(pages) > 30  # (many pages were read: the walk was exercised)


@pytest.mark.parametrize("page", [2, 16])
def test_a_read_pages_each_row_once_though_several_pools_draw_from_its_group(
        bare, monkeypatch, page):
    """A later pool takes up a group where an earlier one left it: no row is paged twice."""
    monkeypatch.setattr(_pgengine, "SCORED_FROM", 0)
    monkeypatch.setattr(_pgengine, "PAGE", page)
    rng = random.Random(8)
    bare.batch([PutOp(NS, f"k{i:03}", value(rng, i)) for i in range(400)])
    # three pools over the same types, and a catch-all: each reads the groups the ones
    # before it read, and the budgets differ (the pages keep what the largest could take)
    pools = [Pool("tasks", 60, 2, ("task",)), Pool("more", 400, 5, ("task", "fact")),
             Pool("rest", 150, 6)]
    paged: list[str] = []
    fetch = _pgengine._cursor_pages

    def spy(conn):
        def read(statement, params):
            rows = fetch(conn)(statement, params)
            if statement is _pgengine._PAGE:
                paged.extend(row["key"] for row in rows)
            return rows
        return read

    monkeypatch.setattr(_pgengine, "_cursor_pages", spy)
    wrapped = PoolSplitStore(bare)
    for context in ({"message": "deploy the database schema", "tags": ["db"]},
                    {"message": "budget review"}):
        paged.clear()
        entries = expected(bare, context)[1]
        want = {name: [e["id"] for e in got] for name, got in retrieve_pools(
            entries, pools, context, now=NOW, always_pool=True).items()}
        assert keys(wrapped.retrieve_pools(NS, pools, context, now=NOW)) == want
        assert paged and len(paged) == len(set(paged))


@pytest.mark.parametrize("scored_from", [0, 10_000], ids=["walked", "one statement"])
def test_expired_rows_are_left_out_as_the_store_leaves_them_out(bare, monkeypatch, scored_from):
    """A store that omits expired rows: no pool loads one, whichever way the read goes."""
    from langgraph.store.postgres import PostgresStore

    monkeypatch.setattr(_pgengine, "SCORED_FROM", scored_from)
    monkeypatch.setattr(_pgengine, "PAGE", 2)
    rng = random.Random(13)
    bare.batch([PutOp(NS, f"k{i:03}", value(rng, i)) for i in range(240)])
    expiring = PostgresStore(bare.conn, ttl={"default_ttl": 60, "omit_expired": True})
    gone = [f"k{i:03}" for i in range(0, 240, 3)]  # corrections among them (every 40th)
    bare.conn.execute("UPDATE store SET expires_at = pg_catalog.now() - interval '1 minute'"
                      " WHERE prefix = %s AND key = ANY (%s)", (".".join(NS), gone))
    wrapped = PoolSplitStore(expiring)
    assert wrapped._scores_in_database()
    for context in ({"message": "deploy the database schema", "tags": ["db"]},
                    {"message": "budget review"}, None):
        want, entries = expected(expiring, context)
        assert len(entries) == 240 - len(gone)
        got = keys(wrapped.retrieve_pools(NS, POOLS, context, now=NOW))
        assert got == want
        assert not set(gone) & {key for picked in got.values() for key in picked}


def test_setup_upgrades_an_install_made_before_the_readings_knew_their_users(bare):
    """An earlier install: no record of whole readings, no user flag, the old index."""
    star_store(bare)
    bare.put(NS, "u1", {"content": "deploy notes", "type": "task", "user_id": "ana"})
    bare.conn.execute("UPDATE poolsplit_v1.entry SET carries_user = NULL")
    bare.conn.execute("DELETE FROM poolsplit_v1.kept")
    bare.conn.execute("DROP INDEX poolsplit_v1.entry_walk")
    bare.conn.execute("CREATE INDEX entry_contextual ON poolsplit_v1.entry (prefix, etype)")
    assert not PoolSplitStore(bare)._scores_in_database()
    PoolSplitStore(bare).setup()
    flags = {row["key"]: row["carries_user"] for row in bare.conn.execute(
        "SELECT key, carries_user FROM poolsplit_v1.entry").fetchall()}
    assert flags["u1"] is True and flags["star"] is False and None not in flags.values()
    indexes = {row["indexname"] for row in bare.conn.execute(
        "SELECT indexname FROM pg_catalog.pg_indexes WHERE schemaname = 'poolsplit_v1'")}
    assert {"entry_walk", "entry_whole", "entry_users"} <= indexes
    assert "entry_contextual" not in indexes
    assert PoolSplitStore(bare)._scores_in_database()


@pytest.mark.parametrize("page", [1, 16])
def test_an_older_row_whose_tags_match_is_not_passed_over_by_fresher_ones(bare, monkeypatch, page):
    """A group's bound carries the tag factor's ceiling: the old tagged row still comes first."""
    monkeypatch.setattr(_pgengine, "SCORED_FROM", 0)
    monkeypatch.setattr(_pgengine, "PAGE", page)
    ops = [PutOp(NS, f"t{i:02}", {"content": "a fresh task", "type": "task", "tags": ["ops"],
                                  "created": (NOW - timedelta(hours=i)).isoformat()})
           for i in range(40)]  # tagged, but not with the context's tag: factor 1
    ops.append(PutOp(NS, "plain", {"content": "a fresh untagged task", "type": "task",
                                   "created": NOW.isoformat()}))
    ops.append(PutOp(NS, "old", {"content": "an old task", "type": "task", "tags": ["db"],
                                 "created": (NOW - timedelta(days=30)).isoformat()}))
    bare.batch(ops)
    pools = [Pool("one", 10**6, 1, ("task",)), Pool("two", 10**6, 2, ("task",))]
    context = {"tags": ["db"]}
    want = {name: [e["id"] for e in got] for name, got in retrieve_pools(
        expected(bare, context)[1], pools, context, now=NOW, always_pool=True).items()}
    got = keys(PoolSplitStore(bare).retrieve_pools(NS, pools, context, now=NOW))
    assert got == want and got["one"] == ["old"] and got["two"][0] == "plain"
