"""A store of one's own class derived from LangGraph's PostgreSQL stores keeps the database engine.

Users subclass ``PostgresStore`` for a hook or a serialisation of their own;
pool-split reads must go to its database (one snapshot per read, scored there
once ``setup()`` ran) as they do for the class itself, never to a per-worker
copy that only polls for other writers' changes.
"""

from __future__ import annotations

import asyncio
import random
import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from langgraph.store.postgres import AsyncPostgresStore, PostgresStore
from psycopg import sql
from psycopg.conninfo import make_conninfo
from psycopg.rows import dict_row

from poolsplit_core.poolsplit import Pool
from poolsplit_integrations import _pgengine
from poolsplit_integrations.langgraph import PoolSplitStore

NS = ("memories", "subclass")
POOLS = [Pool("work", 400, 6, ("task",)), Pool("rest", 300, 4)]
CONTEXT = {"message": "deploy the database release"}
WORDS = "deploy release database budget rotate memory schema review".split()


class HookedStore(PostgresStore):
    """A PostgresStore with a hook on every batch (as a user's audit log would be)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.seen: list[str] = []

    def batch(self, ops):  # type: ignore[no-untyped-def]
        listed = list(ops)
        self.seen += [type(op).__name__ for op in listed]
        return super().batch(listed)


class HookedAsyncStore(AsyncPostgresStore):
    """The async twin: a hook on every abatch."""

    async def abatch(self, ops):  # type: ignore[no-untyped-def]
        return await super().abatch(list(ops))


@pytest.fixture
def database(postgres_uri: str) -> Iterator[str]:
    """A new database (pool-split's install is per database: this one starts without it)."""
    name = f"pssub_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(postgres_uri, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    yield make_conninfo(postgres_uri, dbname=name)
    with psycopg.connect(postgres_uri, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))


def connect(dsn: str) -> psycopg.Connection:
    return psycopg.connect(dsn, autocommit=True, prepare_threshold=0, row_factory=dict_row)


def fill(store: PoolSplitStore, count: int) -> None:
    rng = random.Random(5)
    for i in range(count):
        store.put(NS, f"k{i:04}", {"content": " ".join(rng.choices(WORDS, k=5)),
                                   "type": rng.choice(("task", "note")),
                                   "base_priority": rng.choice((3, 5, 8))})
    store.put(NS, "star", {"content": "deploy the database release now", "type": "task",
                           "base_priority": 50})


def test_a_postgresstore_subclass_is_set_up_and_scored_in_its_database(database, monkeypatch):
    monkeypatch.setattr(_pgengine, "SCORED_FROM", 0)  # (score even a small namespace there)
    scored: list[int] = []
    decide = _pgengine.decide
    monkeypatch.setattr(_pgengine, "decide", lambda *a, **k: scored.append(1) or decide(*a, **k))
    with connect(database) as conn:
        hooked = HookedStore(conn)
        store = PoolSplitStore(hooked)
        store.setup()  # LangGraph's migrations, then pool-split's install, for the subclass too
        assert _pgengine.setup_done(conn) and _pgengine.entries_kept(conn)
        fill(store, 40)
        got = store.retrieve_pools(NS, POOLS, CONTEXT)
        assert got["work"][0].key == "star"
        assert scored == [1]  # the database scored the read
        explained = store.explain_pools(NS, POOLS, CONTEXT)
        assert explained.engine == "snapshot" and explained.staleness == 0.0
        assert explained.read_from == "primary"
        assert "PutOp" in hooked.seen  # the hook ran: the subclass is what was written through
        # the same answer as the class itself gives over the same database
        assert {n: [i.key for i in items] for n, items in got.items()} == {
            n: [i.key for i in items]
            for n, items in PoolSplitStore(PostgresStore(conn)).retrieve_pools(
                NS, POOLS, CONTEXT).items()}


def test_a_delete_by_another_writer_is_never_served_by_a_subclass_store(database):
    clock = [0.0]  # no time passes: an index would not have polled, let alone reconciled
    with connect(database) as mine, connect(database) as theirs:
        reader = PoolSplitStore(HookedStore(mine), clock=lambda: clock[0])
        reader.setup()
        writer = PoolSplitStore(HookedStore(theirs))
        fill(writer, 30)
        assert reader.retrieve_pools(NS, POOLS, CONTEXT)["work"][0].key == "star"
        writer.delete(NS, "star")  # "forget this", by another worker
        loaded = {i.key for items in reader.retrieve_pools(NS, POOLS, CONTEXT).values()
                  for i in items}
        assert "star" not in loaded and loaded
        explained = reader.explain_pools(NS, POOLS, CONTEXT)
        assert "star" not in {d.entry["id"] for d in explained.decisions}
        assert explained.engine == "snapshot"


def test_an_asyncpostgresstore_subclass_reads_its_database_too(database):
    with connect(database) as conn:
        PoolSplitStore(PostgresStore(conn)).setup()

    async def main() -> tuple[str, list[str]]:
        async with await psycopg.AsyncConnection.connect(
                database, autocommit=True, prepare_threshold=0, row_factory=dict_row) as conn:
            store = PoolSplitStore(HookedAsyncStore(conn))
            await store.aput(NS, "fix", {"content": "never deploy on friday",
                                         "scope": "always"})
            await store.aput(NS, "t1", {"content": "deploy the release", "type": "task"})
            explained = await store.aexplain_pools(NS, POOLS, CONTEXT)
            got = await store.aretrieve_pools(NS, POOLS, CONTEXT)
            return explained.engine, [i.key for items in got.values() for i in items]

    engine, keys = asyncio.run(main())
    assert engine == "snapshot" and set(keys) == {"fix", "t1"}


def test_a_store_with_its_own_deserializer_is_read_whole_not_scored_from_the_readings(
        database):
    with connect(database) as conn:
        PoolSplitStore(PostgresStore(conn)).setup()
        own = PoolSplitStore(PostgresStore(conn, deserializer=lambda raw: {"content": "x"}))
        assert own._database and not own._scores_in_database()
        assert PoolSplitStore(PostgresStore(conn))._scores_in_database()
