"""``poolsplit-postgres``: the operator's sql / setup / status, on the suite's real PostgreSQL.

Each test that needs a clean state gets a database of its own (created from the
session's server, dropped after): ``poolsplit_v1`` is database-wide, and these
tests install it, remove it and spoil its readings.
"""

from __future__ import annotations

import io
import socket
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
import tomllib
from psycopg import sql
from psycopg.conninfo import make_conninfo

from poolsplit_integrations import _pgengine, _pgsql, postgres_admin
from poolsplit_integrations.postgres_admin import main, read_status, script

ROOT = Path(__file__).resolve().parents[2]
MODULE = "poolsplit_integrations.postgres_admin"
NS = ("memories", "admin")
VALUES = {"a": {"content": "deploy the release", "type": "task"},
          "b": {"content": "the budget is reviewed monthly", "type": "fact"},
          "odd": {"content": {"not": "a str"}, "type": "task"}}  # read whole: regular false


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def run_process(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", MODULE, *argv], capture_output=True,
                          text=True, timeout=120, cwd=ROOT)


def connect(dsn: str) -> psycopg.Connection:
    return psycopg.connect(dsn, autocommit=True)


@pytest.fixture
def database(postgres_uri: str) -> Iterator[str]:
    """The DSN of a new, empty database (no store table, no poolsplit_v1)."""
    name = f"psadmin_{uuid.uuid4().hex[:12]}"
    with connect(postgres_uri) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    yield make_conninfo(postgres_uri, dbname=name)
    with connect(postgres_uri) as conn:
        conn.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))


def add_store(dsn: str) -> None:
    """LangGraph's migrations (the store's own setup()), then the rows of VALUES."""
    from langgraph.store.postgres import PostgresStore

    with PostgresStore.from_conn_string(dsn) as store:
        store.setup()
        for key, value in VALUES.items():
            store.put(NS, key, value)


@pytest.fixture
def with_store(database: str) -> str:
    """A new database holding LangGraph's store table and three rows; poolsplit not installed."""
    add_store(database)
    return database


def installed_objects(dsn: str) -> dict[str, object]:
    """What poolsplit put in the database: functions, tables, triggers, each row's readings."""
    with connect(dsn) as conn:
        functions = conn.execute(
            "SELECT p.proname, pg_catalog.pg_get_function_identity_arguments(p.oid),"
            " pg_catalog.md5(pg_catalog.pg_get_functiondef(p.oid))"
            " FROM pg_catalog.pg_proc AS p WHERE p.pronamespace = 'poolsplit_v1'::regnamespace"
            " ORDER BY 1, 2").fetchall()
        tables = conn.execute(
            "SELECT relname, relkind FROM pg_catalog.pg_class"
            " WHERE relnamespace = 'poolsplit_v1'::regnamespace ORDER BY 1").fetchall()
        triggers = conn.execute(
            "SELECT tgname, pg_catalog.pg_get_triggerdef(oid) FROM pg_catalog.pg_trigger"
            " WHERE tgrelid = 'store'::regclass AND NOT tgisinternal ORDER BY 1").fetchall()
        versions = conn.execute("SELECT version FROM poolsplit_v1.installed").fetchall()
        readings = conn.execute(
            "SELECT e.key, e.regular, e.etype, e.cost, e.words, e.updated_at = s.updated_at"
            " FROM poolsplit_v1.entry AS e JOIN store AS s USING (prefix, key)"
            " ORDER BY e.key").fetchall()
    return {"functions": functions, "tables": tables, "triggers": triggers,
            "versions": versions, "readings": readings}


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])  # closed again when the block ends


# -- sql ----------------------------------------------------------------------------


def test_sql_prints_the_whole_script_with_the_table_quoted_and_needs_no_database():
    code, out, err = run("sql", "--table", 'Mem."St')
    assert (code, err) == (0, "")
    assert "@STORE@" not in out
    assert out.count('ON "Mem"."""St"') == 2  # the two triggers, the name quoted
    assert 'FROM "Mem"."""St" AS t, LATERAL poolsplit_v1.readings' in out  # the backfill
    assert out.count("BEGIN;") == out.count("COMMIT;") == 4
    assert out.index("DO NOTHING;\nCOMMIT;") < out.index("INSERT INTO poolsplit_v1.kept")
    assert _pgsql.sql_text().strip() in out and _pgsql.RECORD_SQL in out
    assert out.index("CREATE SCHEMA IF NOT EXISTS") < out.index("CREATE TABLE IF NOT EXISTS"
                                                                " poolsplit_v1.entry")
    assert script() == run("sql")[1] and 'ON "public"."store"' in script()


@pytest.mark.parametrize("table", ["a.b.c", "", "schema."])
def test_sql_refuses_a_table_name_it_cannot_quote(table):
    code, out, err = run("sql", "--table", table)
    assert code == 2 and out == ""
    assert err.startswith("poolsplit-postgres: --table") and err.count("\n") == 1


def test_the_printed_sql_installs_exactly_what_setup_installs(with_store, postgres_uri):
    printed = run("sql")[1]
    with connect(with_store) as conn:
        conn.execute(printed)  # BEGIN ... COMMIT four times, as psql would run it
        assert _pgsql.installed(conn) and _pgengine.entries_kept(conn, "store")
        conn.execute(printed)  # again: nothing fails
    by_script = installed_objects(with_store)
    assert [row[0] for row in by_script["readings"]] == sorted(VALUES)
    assert all(row[5] for row in by_script["readings"])  # each row's current reading
    assert by_script["versions"] == [(_pgsql.VERSION,)]
    # The same, installed by the command's setup in a database of its own.
    other = f"psadmin_{uuid.uuid4().hex[:12]}"
    with connect(postgres_uri) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(other)))
    try:
        dsn = make_conninfo(postgres_uri, dbname=other)
        add_store(dsn)
        assert run("setup", dsn)[0] == 0
        assert installed_objects(dsn) == by_script
    finally:
        with connect(postgres_uri) as conn:
            conn.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(other)))
    assert run("status", with_store)[0] == 0


# -- setup --------------------------------------------------------------------------


def test_setup_installs_reports_and_a_second_run_changes_nothing(with_store):
    code, out, err = run("setup", with_store)
    assert (code, err) == (0, "")
    assert "version 1, installed now" in out and "(from now on)" in out
    assert f"rows given readings: {len(VALUES)}" in out and "took " in out
    first = installed_objects(with_store)
    code, out, err = run("setup", with_store)
    assert (code, err) == (0, "")
    assert "version 1, already installed" in out and "(already)" in out
    assert "set up already by this release: no row re-checked (run: poolsplit-postgres" \
        " recheck)" in out
    assert installed_objects(with_store) == first
    code, out, err = run("recheck", with_store)
    assert (code, err) == (0, "")
    assert "rows given readings: 0" in out
    assert installed_objects(with_store) == first


def test_setup_without_the_store_table_exits_2_and_installs_nothing(database):
    code, out, err = run("setup", database)
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and "run the store's setup() first" in err
    assert 'no table "store"' in err
    with connect(database) as conn:
        assert conn.execute("SELECT to_regnamespace('poolsplit_v1')").fetchone() == (None,)


def test_setup_and_status_take_a_schema_qualified_table(with_store):
    with connect(with_store) as conn:
        conn.execute("CREATE SCHEMA other")
        conn.execute("CREATE TABLE other.store (LIKE public.store INCLUDING ALL)")
        conn.execute("INSERT INTO other.store SELECT * FROM public.store")
    assert run("setup", with_store, "--table", "other.store")[0] == 0
    code, out, _ = run("status", with_store, "--table", "other.store")
    assert code == 0 and f"rows: {len(VALUES)}; without a reading: 0" in out
    with connect(with_store) as conn:  # public.store got no triggers
        assert not _pgengine.entries_kept(conn, "public.store")
        assert _pgengine.entries_kept(conn, "other.store")


# -- status -------------------------------------------------------------------------


def test_status_exit_codes_follow_what_is_installed_kept_and_stale(with_store):
    code, out, _ = run("status", with_store)
    assert code == 1 and "not installed" in out and "not kept" in out
    assert f"rows: {len(VALUES)}; without a reading: {len(VALUES)}" in out

    assert run("setup", with_store)[0] == 0
    code, out, err = run("status", with_store)
    assert (code, err) == (0, "")
    assert "installed (versions recorded: 1)" in out and "readings of \"store\": kept" in out
    assert "without a reading: 0; with a stale reading: 0" in out and "status: ok" in out
    assert 'size of "store": ' in out and "of poolsplit_v1.entry: " in out

    with connect(with_store) as conn:
        # A reading left from an older write of its row.
        conn.execute("UPDATE poolsplit_v1.entry SET updated_at = updated_at - interval '1 day'"
                     " WHERE key = 'a'")
        assert read_status(conn).stale == 1
    code, out, _ = run("status", with_store)
    assert code == 1 and "with a stale reading: 1" in out and "status: to do" in out

    with connect(with_store) as conn:
        # A write the trigger did not see: the row has no reading.
        conn.execute("ALTER TABLE store DISABLE TRIGGER poolsplit_v1_entry")
        conn.execute("INSERT INTO store (prefix, key, value) VALUES (%s, 'new', %s)",
                     (".".join(NS), '{"content": "written behind the trigger"}'))
        conn.execute("ALTER TABLE store ENABLE TRIGGER poolsplit_v1_entry")
        status = read_status(conn)
        assert (status.rows, status.missing, status.stale) == (len(VALUES) + 1, 1, 1)
        assert status.installed and status.kept and not status.ok
    code, out, _ = run("status", with_store)
    assert code == 1 and "status: to do (run: poolsplit-postgres recheck)" in out

    # setup, done for this release, leaves them; recheck fills in the missing reading
    # and repairs the stale one
    assert "no row re-checked" in run("setup", with_store)[1]
    assert run("status", with_store)[0] == 1
    assert "rows given readings: 2" in run("recheck", with_store)[1]
    assert run("status", with_store)[0] == 0
    assert "rows given readings: 0" in run("recheck", with_store)[1]

    with connect(with_store) as conn:  # set up by another release: setup runs in full again
        conn.execute("UPDATE poolsplit_v1.setup_done SET digest = 'an older release'")
    code, out, _ = run("status", with_store)
    assert code == 1 and "; setup not finished by this release" in out
    assert "status: to do (run: poolsplit-postgres setup)" in out
    assert "rows given readings: 0" in run("setup", with_store)[1]
    assert run("status", with_store)[0] == 0


def test_status_without_the_store_table_exits_1(database):
    code, out, err = run("status", database)
    assert (code, err) == (1, "")
    assert 'table "store": not found' in out and "not installed" in out


# -- errors and the process --------------------------------------------------------


@pytest.mark.parametrize("command", ["setup", "status"])
def test_a_closed_port_exits_2_with_one_line_and_no_traceback(command):
    dsn = f"postgresql://nobody@127.0.0.1:{closed_port()}/nothing?connect_timeout=5"
    code, out, err = run(command, dsn)
    assert (code, out) == (2, "")
    assert err.startswith("poolsplit-postgres: cannot connect:") and err.count("\n") == 1
    assert "Traceback" not in err


def test_the_module_runs_as_a_process(with_store):
    dsn = f"postgresql://nobody@127.0.0.1:{closed_port()}/nothing?connect_timeout=5"
    failed = run_process("status", dsn)
    assert failed.returncode == 2 and failed.stdout == ""
    assert failed.stderr.count("\n") == 1 and "Traceback" not in failed.stderr
    assert "cannot connect" in failed.stderr
    printed = run_process("sql", "--table", "store")
    assert printed.returncode == 0 and printed.stdout == script("store")
    done = run_process("setup", with_store)
    assert done.returncode == 0 and f"rows given readings: {len(VALUES)}" in done.stdout
    assert run_process("status", with_store).returncode == 0


def test_the_command_is_a_script_of_the_distribution():
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]["scripts"]
    assert scripts["poolsplit-postgres"] == f"{MODULE}:main"
    assert set(postgres_admin.__all__) <= set(dir(postgres_admin))


def test_the_printed_sql_stops_before_installing_anything_without_the_store_table(database):
    with connect(database) as conn:
        with pytest.raises(psycopg.errors.UndefinedTable,
                           match=r'relation "public\.store" does not exist'):
            conn.execute(script())
        conn.execute("ROLLBACK")  # the script's first BEGIN left a failed transaction
        assert conn.execute("SELECT to_regnamespace('poolsplit_v1')").fetchone() == (None,)
