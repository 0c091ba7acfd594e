"""``PoolSplitStore.setup()`` run again costs a few statements, whatever the store's size.

Every worker runs ``setup()`` as it starts (``from_conn_string(setup=True)``):
once a release's install has finished for the store table, a re-run only
checks that, and reads no row of the store or of its readings. What a setup
sends is counted on the wire (libpq's trace of the connection: one
``CommandComplete`` per statement the server ran), and what it read from the
server's statistics (rows read by scans of the store table and the readings
table). A setup the server cancels is reported as a setup timeout.
"""

from __future__ import annotations

import io
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator

import psycopg
import pytest
from langgraph.store.postgres import PostgresStore
from psycopg import pq, sql
from psycopg.conninfo import make_conninfo
from psycopg.rows import dict_row

from poolsplit_integrations import _pgengine
from poolsplit_integrations.langgraph import PoolSplitStore
from poolsplit_integrations.postgres_admin import main as admin

#: The few statements a re-run may send: LangGraph's own migration check, and
#: pool-split's check that its install is done (in one transaction).
FEW = 8


@pytest.fixture
def databases(postgres_uri: str) -> Iterator[Callable[[], str]]:
    """New databases, made on demand (``new()``), dropped after the test."""
    made: list[str] = []
    with psycopg.connect(postgres_uri, autocommit=True) as conn:
        def new() -> str:
            name = f"pssetup_{uuid.uuid4().hex[:12]}"
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
            made.append(name)
            return make_conninfo(postgres_uri, dbname=name)

        yield new
        for name in made:
            conn.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))


def store_of(dsn: str, rows: int) -> None:
    """LangGraph's tables holding ``rows`` items, written before pool-split was installed."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        PostgresStore(conn).setup()
        conn.execute(
            "INSERT INTO store (prefix, key, value) SELECT 'memories.big', 'k' || i,"
            " jsonb_build_object('content', 'deploy release number ' || i, 'type', 'task',"
            " 'base_priority', i %% 7) FROM generate_series(1, %s) AS i", (rows,))


def traced_setup(dsn: str) -> tuple[int, list[str]]:
    """Run ``PoolSplitStore.setup()`` on one connection: the statements run, the texts sent."""
    with psycopg.connect(dsn, autocommit=True, prepare_threshold=0,
                         row_factory=dict_row) as conn, \
            tempfile.TemporaryFile("w+") as trace:
        conn.pgconn.trace(trace.fileno())
        conn.pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS | pq.Trace.REGRESS_MODE)
        try:
            PoolSplitStore(PostgresStore(conn)).setup()
        finally:
            conn.pgconn.untrace()
        flush(conn)
        trace.seek(0)
        lines = trace.read().splitlines()
    ran = sum("\tCommandComplete\t" in line for line in lines)
    sent = [line.split("\t", 3)[3] for line in lines
            if line.startswith("F\t") and line.split("\t")[2] in ("Query", "Parse")]
    return ran, sent


def flush(conn: psycopg.Connection) -> None:
    """Have this connection's table statistics reach the server's views."""
    if conn.info.server_version >= 150000:
        conn.execute("SELECT pg_catalog.pg_stat_force_next_flush()")
        conn.execute("SELECT 1")  # (flushed as the connection went idle before this)
    else:  # (a statistics collector: sent at the end of a transaction, read a little later)
        conn.execute("SELECT 1")
        time.sleep(1.0)


def rows_read(dsn: str) -> int:
    """Rows read so far by scans of the store table and of the readings table."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("SELECT pg_catalog.pg_stat_clear_snapshot()")
        read = conn.execute(
            "SELECT coalesce(sum(coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0)), 0)"
            " FROM pg_catalog.pg_stat_user_tables"
            " WHERE (schemaname, relname) IN (('public', 'store'), ('poolsplit_v1', 'entry'))"
        ).fetchone()
    assert read is not None
    return int(read[0])


def test_setup_run_again_costs_the_same_few_statements_on_a_large_store_as_on_a_small_one(
        databases):
    measured = {}
    for rows in (5, 20_000):
        dsn = databases()
        store_of(dsn, rows)
        first, _ = traced_setup(dsn)  # installs, and gives every row its reading
        with psycopg.connect(dsn) as conn:
            assert conn.execute("SELECT count(*) FROM poolsplit_v1.entry").fetchone() == (rows,)
        before = rows_read(dsn)
        again, sent = traced_setup(dsn)
        measured[rows] = (again, rows_read(dsn) - before, sent)
        assert first > again  # (the first run does the work)
    (few, few_read, few_sent), (many, many_read, many_sent) = measured[5], measured[20_000]
    assert few == many <= FEW
    assert few_sent == many_sent  # the very same statements
    assert few_read == many_read == 0  # no row of the store or its readings was read
    assert not any("poolsplit_v1.entry" in text or "FROM public.store" in text
                   for text in many_sent)


def test_setup_run_again_still_installs_a_release_whose_sql_changed(databases):
    dsn = databases()
    store_of(dsn, 50)
    traced_setup(dsn)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("UPDATE poolsplit_v1.setup_done SET digest = 'an older release'")
        conn.execute("DELETE FROM poolsplit_v1.entry WHERE key = 'k7'")  # (a reading behind)
    again, _ = traced_setup(dsn)
    assert again > FEW  # the whole install ran again ...
    with psycopg.connect(dsn) as conn:  # ... and re-checked every row
        assert conn.execute("SELECT count(*) FROM poolsplit_v1.entry").fetchone() == (50,)
        assert _pgengine.setup_done(conn)


def test_a_setup_the_server_cancels_is_reported_as_a_setup_timeout(databases):
    dsn = databases()
    store_of(dsn, 20_000)  # giving every row its reading takes far longer than 1 ms
    with pytest.raises(TimeoutError) as raised:
        with PoolSplitStore.from_conn_string(dsn, statement_timeout=0.001):
            pass
    assert not isinstance(raised.value, ConnectionError)
    message = str(raised.value)
    assert message.startswith("PoolSplitStore.setup() of its PostgresStore was cancelled by the"
                              " server (statement_timeout): ")
    assert "poolsplit-postgres setup DSN" in message and "statement_timeout=None" in message
    assert "canceling statement due to statement timeout" in message
    assert "cannot reach" not in message and "namespace ()" not in message
    # what the message says to do works, and from then on a setup is a few statements
    assert admin(["setup", dsn], stdout=io.StringIO()) == 0
    assert traced_setup(dsn)[0] <= FEW
