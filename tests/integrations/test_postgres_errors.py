"""A PostgreSQL store that cannot start says why: the server's or the driver's reason, at once.

Each case is a mistake a new user makes with ``PoolSplitStore.from_conn_string``
(a wrong database name or password, a host that does not resolve, a malformed
URL, a store whose ``setup()`` never ran), run against the suite's real server;
the wrong password against a server of this module's own, whose ``pg_hba.conf``
asks one role for a password.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator

import psycopg
import psycopg_pool
import pytest
from langgraph.store.postgres import AsyncPostgresStore
from psycopg import sql
from psycopg.conninfo import make_conninfo

from poolsplit_core.poolsplit import Pool
from poolsplit_integrations._throwaway import throwaway_server
from poolsplit_integrations.langgraph import PoolSplitStore

NS = ("memories", "errors")
POOLS = [Pool("all", 100, 5)]


@pytest.fixture
def no_connection(monkeypatch) -> list[str]:
    """Records every connection or pool opened (none should be, for a malformed string)."""
    opened: list[str] = []

    def connect(*args, **kwargs):
        opened.append("connection")
        raise AssertionError("a connection was attempted")

    class Pool(psycopg_pool.ConnectionPool):
        def __init__(self, *args, **kwargs):
            opened.append("pool")
            raise AssertionError("a pool was opened")

    monkeypatch.setattr(psycopg, "connect", connect)
    monkeypatch.setattr(psycopg.Connection, "connect", connect)
    monkeypatch.setattr(psycopg_pool, "ConnectionPool", Pool)
    monkeypatch.setattr("langgraph.store.postgres.base.ConnectionPool", Pool)
    return opened


@pytest.mark.parametrize("malformed", ["postgres//localhost/db", "postgres//ana:s3cret@db/mem",
                                       "host=localhost dbname"])
def test_a_malformed_connection_string_is_refused_before_anything_connects(malformed,
                                                                           no_connection):
    with pytest.raises(ValueError) as raised:
        with PoolSplitStore.from_conn_string(malformed):
            pass
    message = str(raised.value)
    assert message.startswith("conn_string is not a PostgreSQL connection string (")
    assert "postgresql://user:password@host:5432/dbname" in message  # what to write instead
    assert "s3cret" not in message
    assert no_connection == []


def test_a_malformed_standby_connection_string_is_refused_too(no_connection):
    with pytest.raises(ValueError, match=r"^standby_conn_string is not a PostgreSQL"):
        with PoolSplitStore.from_conn_string("postgresql://db/mem",
                                             standby_conn_string="replica//db"):
            pass
    assert no_connection == []


def test_a_wrong_database_name_says_that_database_does_not_exist(postgres_uri):
    name = f"no_such_db_{uuid.uuid4().hex[:8]}"
    with pytest.raises(ConnectionError) as raised:
        with PoolSplitStore.from_conn_string(make_conninfo(postgres_uri, dbname=name)):
            pass
    message = str(raised.value)
    assert message.startswith("cannot connect to the PostgreSQL server at ")
    assert f'database "{name}" does not exist' in message
    assert "couldn't get a connection" not in message and "\n" not in message


def test_a_host_that_does_not_resolve_says_so():
    with pytest.raises(ConnectionError) as raised:
        with PoolSplitStore.from_conn_string("postgresql://ana:s3cret@no-such-host.invalid/mem"):
            pass
    message = str(raised.value)
    assert message.startswith("cannot connect to the PostgreSQL server at"
                              " postgresql://ana:***@no-such-host.invalid/mem: ")
    assert "resolve host 'no-such-host.invalid'" in message
    assert "s3cret" not in message


@pytest.fixture(scope="module")
def password_server() -> Iterator[str]:
    """A server of its own where the role ``pw_user`` must give its password ('right')."""
    with throwaway_server(prefix="pspw") as server:
        hba = server.pgdata / "pg_hba.conf"
        hba.write_text("local all pw_user scram-sha-256\n" + hba.read_text())
        with psycopg.connect(server.get_uri(), autocommit=True) as conn:
            conn.execute("SET password_encryption = 'scram-sha-256'")
            conn.execute("CREATE ROLE pw_user LOGIN PASSWORD 'right'")
            conn.execute("SELECT pg_reload_conf()")
        yield server.get_uri()


def test_a_wrong_password_says_authentication_failed(password_server):
    right = make_conninfo(password_server, user="pw_user", password="right")
    with psycopg.connect(right) as conn:  # the role and its password work
        assert conn.execute("SELECT current_user").fetchone() == ("pw_user",)
    wrong = make_conninfo(password_server, user="pw_user", password="wr0ng-one")
    with pytest.raises(ConnectionError) as raised:
        with PoolSplitStore.from_conn_string(wrong, setup=False):
            pass
    message = str(raised.value)
    assert message.startswith("cannot connect to the PostgreSQL server at ")
    assert 'password authentication failed for user "pw_user"' in message
    assert "wr0ng-one" not in message and "password=***" in message


@pytest.fixture
def empty_database(postgres_uri: str) -> Iterator[str]:
    """The DSN of a new database in which no store's setup() has run."""
    name = f"psnosetup_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(postgres_uri, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    yield make_conninfo(postgres_uri, dbname=name)
    with psycopg.connect(postgres_uri, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))


NO_SETUP = r"^the store's tables are not in this database: run setup\(\) on the store once"


@pytest.mark.parametrize("call", ["put", "get", "search", "list_namespaces", "retrieve_pools",
                                  "explain_pools", "delete"])
def test_a_store_whose_setup_never_ran_says_to_run_setup(empty_database, call):
    calls = {
        "put": lambda s: s.put(NS, "a", {"content": "alpha"}),
        "get": lambda s: s.get(NS, "a"),
        "search": lambda s: s.search(NS),
        "list_namespaces": lambda s: s.list_namespaces(),
        "retrieve_pools": lambda s: s.retrieve_pools(NS, POOLS),
        "explain_pools": lambda s: s.explain_pools(NS, POOLS),
        "delete": lambda s: s.delete(NS, "a"),
    }
    with PoolSplitStore.from_conn_string(empty_database, setup=False) as store:
        with pytest.raises(psycopg.errors.UndefinedTable, match=NO_SETUP) as raised:
            calls[call](store)
    assert str(raised.value).endswith('the server said: relation "store" does not exist')
    # once set up, the same calls work
    with PoolSplitStore.from_conn_string(empty_database) as store:
        calls[call](store)


def test_an_async_store_whose_setup_never_ran_says_to_run_setup(empty_database):
    async def main() -> None:
        async with AsyncPostgresStore.from_conn_string(empty_database) as bare:
            store = PoolSplitStore(bare)
            with pytest.raises(psycopg.errors.UndefinedTable, match=NO_SETUP):
                await store.aput(NS, "a", {"content": "alpha"})
            with pytest.raises(psycopg.errors.UndefinedTable, match=NO_SETUP):
                await store.asearch(NS)
            with pytest.raises(psycopg.errors.UndefinedTable, match=NO_SETUP):
                await store.aretrieve_pools(NS, POOLS)

    asyncio.run(main())
