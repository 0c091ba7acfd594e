"""The database scores awaited pool-split reads over an AsyncPostgresStore once asetup() ran.

The same machinery as ``test_postgres_scoring.py`` pins for the sync store,
through the async connection: ``asetup()`` is idempotent, a large namespace is
scored by the database and answers as the core does, the fill runs off the
event loop (which keeps running while it does), and a lost connection or a
cancelled statement is the same clear error as a sync read's.
"""

from __future__ import annotations

import asyncio
import random
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from langgraph.store.base import PutOp
from langgraph.store.postgres import AsyncPostgresStore, PostgresStore
from psycopg import sql
from psycopg.conninfo import make_conninfo
from psycopg.rows import dict_row

from poolsplit_integrations import _pgengine
from poolsplit_integrations.langgraph import PoolSplitStore, PoolSplitStoreRetriever
from tests.integrations.conftest import open_store
from tests.integrations.test_postgres_scoring import NOW, NS, POOLS, expected, keys, value

CONTEXTS = ({"message": "deploy the database schema", "tags": ["db"]},
            {"message": "budget review"}, None)


@pytest.fixture
def bare(postgres_ready: str) -> Iterator[Any]:
    """A sync PostgresStore on the emptied store table, pool-split installed (the sync way)."""
    store, close = open_store("postgres", postgres_ready)
    PoolSplitStore(store).setup()
    yield store
    close()


@pytest.fixture
def large(bare: Any) -> Any:
    """``bare`` holding a namespace above the threshold (every 40th item a correction)."""
    rng = random.Random(7)
    bare.batch([PutOp(NS, f"k{i:04}", value(rng, i)) for i in range(_pgengine.SCORED_FROM + 200)])
    return bare


@pytest.fixture
def database(postgres_uri: str) -> Iterator[str]:
    """The DSN of a new, empty database (no store table, no poolsplit_v1)."""
    name = f"psasync_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(postgres_uri, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    yield make_conninfo(postgres_uri, dbname=name)
    with psycopg.connect(postgres_uri, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))


async def connect(uri: str, **kwargs: Any) -> psycopg.AsyncConnection[Any]:
    return await psycopg.AsyncConnection.connect(uri, autocommit=True, prepare_threshold=0,
                                                 row_factory=dict_row, **kwargs)


@pytest.fixture
def decided(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, bool]]:
    """Each database-scored fill: its engine's type name, and whether it ran off the main thread."""
    seen: list[tuple[str, bool]] = []
    decide = _pgengine.decide

    def counting(engine: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append((type(engine).__name__,
                     threading.current_thread() is not threading.main_thread()))
        return decide(engine, *args, **kwargs)

    monkeypatch.setattr(_pgengine, "decide", counting)
    return seen


def test_asetup_twice_is_harmless_and_the_async_store_then_scores_in_the_database(
        database: str) -> None:
    async def main() -> None:
        async with await connect(database) as conn:
            wrapped = PoolSplitStore(AsyncPostgresStore(conn))
            with pytest.raises(TypeError, match=r"await store\.asetup\(\)"):
                wrapped.setup()  # its own setup is async: a clear error, nothing half done
            assert not await wrapped._ascores_in_database()  # no store table yet
            await wrapped.asetup()
            await wrapped.asetup()  # again: nothing changes, nothing fails
            assert await wrapped._ascores_in_database()
            versions = await (await conn.execute(
                "SELECT pg_catalog.count(*) AS n FROM poolsplit_v1.installed")).fetchone()
            assert versions is not None and versions["n"] == 1
            # a write through the async store keeps its row's readings (the triggers)
            await wrapped.aput(NS, "t1", {"content": "deploy the release", "type": "task"})
            kept = await (await conn.execute(
                "SELECT etype, regular FROM poolsplit_v1.entry WHERE key = 't1'")).fetchone()
            assert kept == {"etype": "task", "regular": True}
            for other in (PoolSplitStore(AsyncPostgresStore(conn), token_counter=lambda t: 1),
                          PoolSplitStore(AsyncPostgresStore(conn), score_in_database=False)):
                assert not await other._ascores_in_database()

    asyncio.run(main())
    # and the sync store of the same database finds it set up
    with PostgresStore.from_conn_string(database) as sync:
        assert PoolSplitStore(sync)._scores_in_database()


def test_asetup_over_a_sync_store_runs_its_setup(database: str) -> None:
    with PostgresStore.from_conn_string(database) as sync:
        wrapped = PoolSplitStore(sync)
        asyncio.run(wrapped.asetup())
        assert wrapped._scores_in_database()


def test_an_async_read_of_a_large_namespace_is_scored_in_the_database_off_the_loop(
        large: Any, postgres_ready: str, decided: list[tuple[str, bool]],
        monkeypatch: pytest.MonkeyPatch) -> None:
    ticks = [0]
    during: list[int] = []  # the loop's ticks while each fill ran
    pages = [0]
    page = _pgengine.LoopPages._page

    async def counted_page(self: Any, statement: str, params: dict[str, Any]) -> list[Any]:
        pages[0] += 1
        return await page(self, statement, params)

    monkeypatch.setattr(_pgengine.LoopPages, "_page", counted_page)
    decide = _pgengine.decide

    def watched(engine: Any, *args: Any, **kwargs: Any) -> Any:
        start = ticks[0]
        deadline = time.monotonic() + 10  # (only a guard: were the loop blocked, none would come)
        while (threading.current_thread() is not threading.main_thread()
               and ticks[0] < start + 5 and time.monotonic() < deadline):
            time.sleep(0.001)
        try:
            return decide(engine, *args, **kwargs)
        finally:
            during.append(ticks[0] - start)

    monkeypatch.setattr(_pgengine, "decide", watched)
    sync_docs = [doc.page_content for doc in PoolSplitStoreRetriever(
        store=PoolSplitStore(large), namespace=NS, pools=POOLS, now=NOW).invoke("deploy")]

    async def main() -> dict[str, Any]:
        done = asyncio.Event()

        async def ticker() -> None:
            while not done.is_set():
                ticks[0] += 1
                await asyncio.sleep(0)

        ticking = asyncio.create_task(ticker())
        out: dict[str, Any] = {}
        async with await connect(postgres_ready) as conn:
            wrapped = PoolSplitStore(AsyncPostgresStore(conn))
            for n, context in enumerate(CONTEXTS):
                out[n] = keys(await wrapped.aretrieve_pools(NS, POOLS, context, now=NOW))
            retriever = PoolSplitStoreRetriever(store=wrapped, namespace=NS, pools=POOLS,
                                                now=NOW)
            out["docs"] = [doc.page_content for doc in await retriever.ainvoke("deploy")]
            out["engine"] = (await wrapped.aexplain_pools(NS, POOLS, None, now=NOW)).engine
        done.set()
        await ticking
        return out

    out = asyncio.run(main())
    for n, context in enumerate(CONTEXTS):
        assert out[n] == expected(large, context)[0]
    assert out["docs"] == sync_docs
    assert out["engine"] == "snapshot"  # explain_pools still reads every item
    # one sync fill (the sync retriever), then the four awaited ones, each in a worker thread
    assert decided == [("DatabaseEngine", False)] + [("DatabaseEngine", True)] * 4
    assert len(during) == 5
    assert all(ticks >= 5 for ticks in during[1:])  # the loop kept running during each fill
    assert pages[0] >= 4 * len(POOLS) - 1  # the async fills read their pages through the loop


def test_every_async_fill_runs_on_a_database_engine_in_a_worker_thread(
        large: Any, postgres_ready: str, decided: list[tuple[str, bool]]) -> None:
    async def main() -> list[dict[str, list[str]]]:
        async with await connect(postgres_ready) as conn:
            wrapped = PoolSplitStore(AsyncPostgresStore(conn))
            answers = await asyncio.gather(*(wrapped.aretrieve_pools(NS, POOLS, context, now=NOW)
                                             for context in CONTEXTS * 3))
            return [keys(got) for got in answers]

    answers = asyncio.run(main())
    assert answers == [expected(large, context)[0] for context in CONTEXTS * 3]
    assert decided == [("DatabaseEngine", True)] * 9


def test_score_in_database_false_reads_the_async_store_whole(
        large: Any, postgres_ready: str, decided: list[tuple[str, bool]]) -> None:
    async def main() -> dict[str, list[str]]:
        async with await connect(postgres_ready) as conn:
            wrapped = PoolSplitStore(AsyncPostgresStore(conn), score_in_database=False)
            return keys(await wrapped.aretrieve_pools(NS, POOLS, CONTEXTS[0], now=NOW))

    assert asyncio.run(main()) == expected(large, CONTEXTS[0])[0]
    assert decided == []


def test_a_statement_timeout_is_a_timeout_error_and_the_store_answers_again(
        large: Any, postgres_ready: str) -> None:
    async def main() -> None:
        async with await connect(postgres_ready, options="-c statement_timeout=50") as conn:
            wrapped = PoolSplitStore(AsyncPostgresStore(conn))
            want = expected(large, None)[0]
            assert keys(await wrapped.aretrieve_pools(NS, POOLS, None, now=NOW)) == want
            locker = await psycopg.AsyncConnection.connect(postgres_ready)  # not autocommit
            try:
                await locker.execute("LOCK TABLE store IN ACCESS EXCLUSIVE MODE")
                with pytest.raises(TimeoutError, match="statement timeout"):
                    await wrapped.aretrieve_pools(NS, POOLS, None, now=NOW)
            finally:
                await locker.rollback()
                await locker.close()
            assert keys(await wrapped.aretrieve_pools(NS, POOLS, None, now=NOW)) == want

    asyncio.run(asyncio.wait_for(main(), 60))


def test_a_connection_lost_during_the_fill_is_a_connection_error(
        large: Any, postgres_ready: str, monkeypatch: pytest.MonkeyPatch) -> None:
    decide = _pgengine.decide

    def killing(engine: Any, *args: Any, **kwargs: Any) -> Any:
        # the snapshot is open and nothing is paged yet: the server drops the connection
        with psycopg.connect(postgres_ready, autocommit=True) as admin:
            admin.execute("SELECT pg_catalog.pg_terminate_backend(%s)",
                          (engine.conn.info.backend_pid,))
        return decide(engine, *args, **kwargs)

    monkeypatch.setattr(_pgengine, "decide", killing)

    async def main() -> None:
        conn = await connect(postgres_ready)
        try:
            wrapped = PoolSplitStore(AsyncPostgresStore(conn))
            with pytest.raises(ConnectionError, match=r"namespace \('memories', 'scored'\)"):
                await wrapped.aretrieve_pools(NS, POOLS, CONTEXTS[0], now=NOW)
        finally:
            await conn.close()

    asyncio.run(asyncio.wait_for(main(), 60))
