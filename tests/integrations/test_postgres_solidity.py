"""PoolSplitStore over real PostgreSQL under churn, races, two processes, a killed server.

Over LangGraph's ``PostgresStore`` / ``AsyncPostgresStore`` every pool-split
read is one SQL statement (one snapshot) and nothing is kept between reads.
These tests hold the wrapper to that on a real server:

* churn: while another connection deletes, updates and adds items, every
  answer holds every item no one touched, and never one whose delete had
  returned before the read started;
* racing writers on one key: the next read is the database's final state;
* two processes: each one's next read reflects the other's writes, with no
  clock or interval involved;
* a server stopped and restarted under the same store object (a throwaway
  server of this module's own): clear ConnectionErrors while it is down, no
  acknowledged write lost, the same store answers again; a statement timeout
  cancels a read that would otherwise hang;
* the async twins inside a running event loop, concurrently with writes;
* 2,000 namespaces read through one store leave no per-namespace state.

No sleep: threads meet at barriers and events, and the killed server is
stopped and started with ``pg_ctl -w`` (which returns when it is done).
"""

from __future__ import annotations

import asyncio
import json
import random
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import psycopg
import pytest
from langgraph.store.base import PutOp
from langgraph.store.postgres import AsyncPostgresStore, PostgresStore
from psycopg.rows import dict_row

import poolsplit_integrations.langgraph as lg
from poolsplit_core.poolsplit import Pool
from poolsplit_integrations._throwaway import embedded_postgres, throwaway_server
from poolsplit_integrations.langgraph import PoolSplitStore, PoolSplitStoreRetriever

NOW = datetime(2026, 3, 1, tzinfo=timezone.utc)
CONTEXT = {"message": "deploy the release"}
#: Pools large enough to load every task and note; corrections load under "always".
ALL = [Pool("work", max_tokens=10**8, max_entries=10**6, types=("task",)),
       Pool("notes", max_tokens=10**8, max_entries=10**6, types=("note",))]


def connect(uri: str) -> psycopg.Connection:
    return psycopg.connect(uri, autocommit=True, prepare_threshold=0, row_factory=dict_row)


def correction(text: str) -> dict[str, Any]:
    return {"content": text, "scope": "always", "type": "correction"}


def task(text: str, kind: str = "task") -> dict[str, Any]:
    return {"content": text, "type": kind}


def by_pool(got: dict[str, list[Any]]) -> dict[str, list[str]]:
    """The keys each pool loaded, in load order."""
    return {name: [item.key for item in items] for name, items in got.items()}


def flat(got: dict[str, list[Any]]) -> dict[str, Any]:
    """Every loaded item's key -> value; a key loaded twice fails."""
    out: dict[str, Any] = {}
    for items in got.values():
        for item in items:
            assert item.key not in out, f"{item.key!r} loaded twice"
            out[item.key] = item.value
    return out


class Stores:
    """Wrapped PostgresStores, each over its own connection; all closed at the end."""

    def __init__(self, uri: str) -> None:
        self.uri = uri
        self.conns: list[psycopg.Connection] = []

    def conn(self) -> psycopg.Connection:
        conn = connect(self.uri)
        self.conns.append(conn)
        return conn

    def wrapped(self, **options: Any) -> PoolSplitStore:
        return PoolSplitStore(PostgresStore(self.conn()), **options)

    def close(self) -> None:
        for conn in self.conns:
            conn.close()


@pytest.fixture
def stores(postgres_ready: str) -> Iterator[Stores]:
    made = Stores(postgres_ready)
    made.conn().execute("TRUNCATE store CASCADE")
    yield made
    made.close()


def database_value(conn: psycopg.Connection, namespace: tuple[str, ...], key: str) -> Any:
    """The item's value as the database holds it now (None: absent), by plain SQL."""
    row = conn.execute("SELECT value FROM store WHERE prefix = %s AND key = %s",
                       (".".join(namespace), key)).fetchone()
    return None if row is None else row["value"]


# --------------------------------------------------------------------------
# 1. Churn while reading
# --------------------------------------------------------------------------


class Churn:
    """What the writer thread has done, as the reader may rely on it.

    ``deleted``: deletes that returned; ``deleting``: deletes that started
    (returned or not); ``added``: adds that returned; ``version``: the last
    update of each key that returned. Deleted keys are never written again.
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.deleted: set[str] = set()
        self.deleting: set[str] = set()
        self.added: set[str] = set()
        self.version: dict[str, int] = {}
        self.writes = 0
        self.errors: list[BaseException] = []


def version_of(value: dict[str, Any]) -> int:
    return int(value["content"].rsplit(" v", 1)[1])


def test_churn_never_drops_an_untouched_item_nor_serves_a_returned_delete(stores: Stores):
    ns = ("memories", "churn")
    untouched_fixes = {f"u-c{i:03d}" for i in range(150)}
    untouched = untouched_fixes | {f"u-t{i:03d}" for i in range(600)}
    churnable = [f"x-c{i:03d}" for i in range(150)] + [f"x-t{i:03d}" for i in range(600)]

    def value(key: str, version: int) -> dict[str, Any]:
        text = f"{key} deploy the release v{version}"
        if "-c" in key:
            return correction(text)
        return task(text, "task" if int(key[-3:]) % 2 else "note")

    reader = stores.wrapped()
    reader.batch([PutOp(ns, key, value(key, 0)) for key in sorted(untouched) + churnable])
    assert len(reader.entries(ns)) == 1500

    writer = stores.wrapped()  # another connection
    churn, stop = Churn(), threading.Event()

    def write() -> None:
        rng = random.Random(1500)
        live = list(churnable)
        made = 0
        try:
            while not stop.is_set():
                step = churn.writes % 3
                if step == 0 and live:  # delete
                    key = live.pop(rng.randrange(len(live)))
                    with churn.lock:
                        churn.deleting.add(key)
                    writer.delete(ns, key)
                    with churn.lock:
                        churn.deleted.add(key)
                elif step == 1 and live:  # update
                    key = rng.choice(live)
                    version = churn.version.get(key, 0) + 1
                    writer.put(ns, key, value(key, version))
                    with churn.lock:
                        churn.version[key] = version
                else:  # add (a new key, a correction every third time)
                    made += 1
                    key = f"n-c{made:05d}" if made % 3 == 0 else f"n-t{made:05d}"
                    writer.put(ns, key, value(key, 0))
                    live.append(key)
                    with churn.lock:
                        churn.added.add(key)
                with churn.lock:
                    churn.writes += 1
        except BaseException as exc:  # reported by the reader's assertions
            churn.errors.append(exc)

    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    reads = overlapped = 0
    try:
        while (reads < 60 or overlapped < 50) and reads < 400 and not churn.errors:
            with churn.lock:
                deleted = set(churn.deleted)
                added = set(churn.added)
                versions = dict(churn.version)
                writes_before = churn.writes
            if reads % 2:
                got = reader.retrieve_pools(ns, ALL, CONTEXT)
                values = flat(got)
                fixes = {item.key for item in got.get("always", [])}
            else:
                explained = reader.explain_pools(ns, ALL, CONTEXT)
                assert explained.engine == "snapshot" and explained.staleness == 0.0
                loaded = explained.loaded()
                values = {d.entry["id"]: d.entry for picked in loaded.values() for d in picked}
                assert len(values) == sum(len(picked) for picked in loaded.values())
                fixes = {d.entry["id"] for d in loaded.get("always", [])}
            with churn.lock:
                deleting = set(churn.deleting)
                if churn.writes > writes_before:
                    overlapped += 1
            reads += 1
            missing = untouched - values.keys()
            assert not missing, f"read {reads}: untouched items missing: {sorted(missing)[:10]}"
            assert untouched_fixes <= fixes, (
                f"read {reads}: untouched corrections not loaded as corrections:"
                f" {sorted(untouched_fixes - fixes)[:10]}")
            served = deleted & values.keys()
            assert not served, f"read {reads}: items deleted before it started: {sorted(served)}"
            lost = (added - deleting) - values.keys()
            assert not lost, f"read {reads}: items added before it started missing: {sorted(lost)}"
            stale = {key: (version_of(values[key]), version)
                     for key, version in versions.items()
                     if key in values and version_of(values[key]) < version}
            assert not stale, f"read {reads}: older values than a returned update: {stale}"
    finally:
        stop.set()
        thread.join(30)
    assert not churn.errors, churn.errors
    assert not thread.is_alive()
    assert reads >= 60 and overlapped >= 50, (reads, overlapped)
    assert len(churn.deleted) >= 30 and churn.writes >= 100, (len(churn.deleted), churn.writes)
    assert reader._views == {} and writer._views == {}
    # And after the churn, the answer is the database's exact content.
    final = flat(reader.retrieve_pools(ns, ALL, CONTEXT))
    check = stores.conn()
    rows = check.execute("SELECT key, value FROM store WHERE prefix = %s", (".".join(ns),))
    assert final == {row["key"]: row["value"] for row in rows}


# --------------------------------------------------------------------------
# 2. Concurrent writers on one key
# --------------------------------------------------------------------------


def test_racing_writers_on_one_key_then_the_next_read_is_the_database(stores: Stores):
    ns = ("memories", "one-key")
    threads_n, rounds = 4, 60
    writers = [stores.wrapped() for _ in range(threads_n)]
    reader = stores.wrapped()
    check = stores.conn()
    reader.put(ns, "other", task("an item no one races on"))
    outcomes = {"present": 0, "absent": 0, "correction": 0}

    for round_ in range(rounds):
        barrier = threading.Barrier(threads_n)
        errors: list[BaseException] = []

        def race(t: int, round_: int = round_, barrier: threading.Barrier = barrier,
                 errors: list[BaseException] = errors) -> None:
            try:
                barrier.wait(10)
                for step in range(3):
                    choice = (round_ * 7 + t * 3 + step) % 5
                    label = f"v{round_}-{t}-{step}"
                    if choice == 4:
                        writers[t].delete(ns, "k")
                    elif choice % 2:
                        writers[t].put(ns, "k", correction(f"Correction {label}."))
                    else:
                        writers[t].put(ns, "k", task(f"task {label}", "task" if choice else "note"))
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=race, args=(t,)) for t in range(threads_n)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        assert not errors, errors
        final = database_value(check, ns, "k")
        for store in [reader, *writers]:
            got = store.retrieve_pools(ns, ALL, CONTEXT, now=NOW)
            values = flat(got)
            assert values.get("k") == final, (round_, values.get("k"), final)
            assert "other" in values
            if final is not None and final.get("scope") == "always":
                assert "k" in by_pool(got)["always"]
            explained = store.explain_pools(ns, ALL, CONTEXT, now=NOW)
            assert {d.entry["id"] for d in explained.decisions} == (
                {"other"} | ({"k"} if final is not None else set()))
        outcomes["absent" if final is None else "present"] += 1
        outcomes["correction"] += final is not None and final.get("scope") == "always"
    # the rounds ended both ways, so both kinds of final state were checked
    assert outcomes["present"] and outcomes["absent"] and outcomes["correction"], outcomes
    assert all(store._views == {} for store in [reader, *writers])


# --------------------------------------------------------------------------
# 3. Two processes
# --------------------------------------------------------------------------

OTHER = textwrap.dedent("""
    import json, sys
    from datetime import datetime, timezone
    from poolsplit_core.poolsplit import Pool
    from poolsplit_integrations.langgraph import PoolSplitStore

    uri, ns = sys.argv[1], tuple(json.loads(sys.argv[2]))
    pools = [Pool("work", max_tokens=10**8, max_entries=10**6, types=("task",)),
             Pool("notes", max_tokens=10**8, max_entries=10**6, types=("note",))]
    now = datetime(2026, 3, 1, tzinfo=timezone.utc)
    with PoolSplitStore.from_conn_string(uri) as store:
        print(json.dumps({"ready": True}), flush=True)
        for line in sys.stdin:
            cmd = json.loads(line)
            if cmd["op"] == "put":
                store.put(ns, cmd["key"], cmd["value"])
                out = {"done": cmd["key"]}
            elif cmd["op"] == "delete":
                store.delete(ns, cmd["key"])
                out = {"done": cmd["key"]}
            else:
                got = store.retrieve_pools(ns, pools, {"message": "deploy the release"},
                                           now=now)
                out = {name: [[item.key, item.value] for item in items]
                       for name, items in got.items()}
            print(json.dumps(out), flush=True)
""")


class Other:
    """The other process: one command a line in, one JSON answer a line out."""

    def __init__(self, uri: str, ns: tuple[str, ...]) -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", OTHER, uri, json.dumps(ns)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        # a watchdog, so a stuck child fails the test instead of hanging it
        self.watchdog = threading.Timer(60, self.proc.kill)
        self.watchdog.start()
        assert self._answer() == {"ready": True}

    def _answer(self) -> Any:
        line = self.proc.stdout.readline()
        assert line, f"the other process ended: {self.proc.stderr.read()}"
        return json.loads(line)

    def __call__(self, op: str, key: str | None = None, value: Any = None) -> Any:
        self.proc.stdin.write(json.dumps({"op": op, "key": key, "value": value}) + "\n")
        self.proc.stdin.flush()
        return self._answer()

    def close(self) -> None:
        self.watchdog.cancel()
        self.proc.stdin.close()
        assert self.proc.wait(30) == 0, self.proc.stderr.read()


class FrozenClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_two_processes_each_read_the_other_s_last_write_at_once(stores: Stores):
    ns = ("memories", "two-processes-solid")
    clock = FrozenClock()
    mine = stores.wrapped(refresh_interval=3600, reconcile_interval=3600, clock=clock)
    for i in range(5):
        mine.put(ns, f"t{i}", task(f"task {i} deploy"))
        mine.put(ns, f"n{i}", task(f"note {i} the release", "note"))

    def read() -> dict[str, list[str]]:
        return by_pool(mine.retrieve_pools(ns, ALL, CONTEXT, now=NOW))

    def loaded(answer: dict[str, list[str]]) -> set[str]:
        return {key for keys in answer.values() for key in keys}

    other = Other(stores.uri, ns)
    try:
        # The other process writes; this process's very next read has it.
        other("put", "fix", correction("Deploy with just."))
        assert "fix" in read().get("always", [])
        other("put", "fix", task("deploy with just, as a task now"))  # demoted
        answer = read()
        assert "fix" in answer["work"] and "fix" not in answer.get("always", [])
        other("put", "old", correction("Deploy on Fridays."))
        assert "old" in read()["always"]
        other("put", "new", correction("Never deploy on Fridays."))
        other("put", "old", {**correction("Deploy on Fridays."), "superseded_by": "new"})
        answer = read()
        assert "new" in answer["always"] and "old" not in loaded(answer)
        other("delete", "fix")
        other("delete", "t0")
        answer = read()
        assert not {"fix", "t0"} & loaded(answer)

        # And the other way: what this process writes, the other reads at once.
        def theirs() -> dict[str, list[str]]:
            return {name: [key for key, _ in items] for name, items in other("read").items()}

        mine.put(ns, "mine", correction("Tag every release."))
        assert "mine" in theirs()["always"]
        mine.put(ns, "mine", task("tag every release, a note now", "note"))
        answer = theirs()
        assert "mine" in answer["notes"] and "mine" not in answer["always"]
        mine.put(ns, "mine2", correction("Sign every release tag."))
        mine.put(ns, "new", {**correction("Never deploy on Fridays."), "superseded_by": "mine2"})
        answer = theirs()
        assert "mine2" in answer["always"] and "new" not in loaded(answer)
        mine.delete(ns, "mine")
        mine.delete(ns, "n1")
        answer = theirs()
        assert not {"mine", "n1"} & loaded(answer)
        assert answer == read()  # both processes agree, key for key and in order
        assert other("read") == {name: [[item.key, item.value] for item in items]
                                 for name, items in mine.retrieve_pools(
                                     ns, ALL, CONTEXT, now=NOW).items()}
    finally:
        other.close()
    assert clock.now == 0.0 and mine._views == {}


# --------------------------------------------------------------------------
# 4. A server killed and restarted under the same store; a statement timeout
# --------------------------------------------------------------------------


class Killable:
    """This module's own throwaway server, stopped and started on the same data directory."""

    def __init__(self, server: Any) -> None:
        self.server = server
        self.uri = server.get_uri()

    def running(self) -> bool:
        # (not the postmaster process: once stopped it may linger as a zombie)
        return (Path(self.server.pgdata) / "postmaster.pid").exists()

    def stop(self, mode: str = "immediate") -> None:
        embedded_postgres().pg_ctl(["-w", "-m", mode, "stop"], pgdata=self.server.pgdata,
               user=self.server.system_user, timeout=30)
        assert not self.running()

    def start(self) -> None:
        with self.server._lock:
            self.server.ensure_postgres_running()
        assert self.running() and self.server.get_uri() == self.uri


@pytest.fixture(scope="module")
def own_server() -> Iterator[Killable]:
    # A short prefix: the server's socket lives in its data directory when it fits.
    with throwaway_server(prefix="pskill") as server:
        yield Killable(server)


@pytest.fixture
def killable(own_server: Killable) -> Iterator[Killable]:
    """The own server, running at the start and at the end of the test."""
    if not own_server.running():
        own_server.start()
    yield own_server
    if not own_server.running():
        own_server.start()


def test_a_killed_server_loses_no_acknowledged_write_and_the_same_store_answers_again(
        killable: Killable):
    ns = ("memories", "killed")
    with PoolSplitStore.from_conn_string(killable.uri, connect_timeout=1,
                                         pool_size=2) as store:
        fixes = [f"fix{i}" for i in range(5)]
        for key in fixes:
            store.put(ns, key, correction(f"Correction {key}."))
        acknowledged: list[str] = []
        failed: list[BaseException] = []
        enough = threading.Event()

        def write() -> None:
            i = 0
            while True:
                key = f"w{i:05d}"
                try:
                    store.put(ns, key, task(f"write {i} deploy", "task" if i % 2 else "note"))
                except BaseException as exc:
                    failed.append(exc)
                    enough.set()
                    return
                acknowledged.append(key)
                if len(acknowledged) == 40:
                    enough.set()
                i += 1

        writer = threading.Thread(target=write, daemon=True)
        writer.start()
        assert enough.wait(30) and not failed, failed
        killable.stop("immediate")  # mid-stream: the writer is writing
        writer.join(15)
        assert not writer.is_alive(), "a write hung on a stopped server"
        assert len(failed) == 1 and len(acknowledged) >= 40
        kept = list(acknowledged)

        # While the server is down, a read is one clear ConnectionError naming the namespace.
        with pytest.raises(ConnectionError, match=r"namespace \('memories', 'killed'\)"):
            store.retrieve_pools(ns, ALL, CONTEXT)
        with pytest.raises(ConnectionError, match=r"namespace \('memories', 'killed'\)"):
            store.explain_pools(ns, ALL, CONTEXT)
        assert store._views == {}

        killable.start()
        # The same store object, not rebuilt, answers again (its pool reconnects on
        # its own; a call before it has is a ConnectionError, within connect_timeout),
        # with every acknowledged write.
        deadline = time.monotonic() + 20
        while True:
            try:
                got = store.retrieve_pools(ns, ALL, CONTEXT)
                break
            except ConnectionError as exc:
                assert time.monotonic() < deadline, f"no answer 20 s after the restart: {exc}"
        values = flat(got)
        lost = set(kept) - values.keys()
        assert not lost, f"acknowledged writes lost: {sorted(lost)}"
        assert set(fixes) <= set(by_pool(got)["always"])
        assert set(values) - set(kept) - set(fixes) <= {f"w{len(kept):05d}"}  # the one in flight
        store.put(ns, "after", correction("Written after the restart."))
        assert "after" in by_pool(store.retrieve_pools(ns, ALL, CONTEXT))["always"]
        assert store.explain_pools(ns, ALL, CONTEXT).engine == "snapshot"
        assert store._views == {}


def test_the_next_call_after_a_restart_reconnects(killable: Killable):
    """``from_conn_string``: "after a server restart the next call reconnects".

    The server stays down a while (every read meanwhile a ConnectionError
    naming the namespace), then comes back: the very next call must answer,
    whatever the pool's reconnection backoff has reached by then.
    """
    ns = ("memories", "next-call")
    with PoolSplitStore.from_conn_string(killable.uri, connect_timeout=1) as store:
        store.put(ns, "fix", correction("Acknowledged before the stop."))
        assert by_pool(store.retrieve_pools(ns, ALL, CONTEXT))["always"] == ["fix"]
        killable.stop("immediate")
        # Down for at least 9 s and 5 failed reads: long enough for the pool's
        # reconnection pauses to have grown past connect_timeout.
        stopped = time.monotonic()
        down = 0
        while time.monotonic() - stopped < 9 or down < 5:
            with pytest.raises(ConnectionError, match=r"namespace \('memories', 'next-call'\)"):
                store.retrieve_pools(ns, ALL, CONTEXT)
            down += 1
        killable.start()
        got = store.retrieve_pools(ns, ALL, CONTEXT)  # the next call
        assert by_pool(got)["always"] == ["fix"]


def test_a_write_while_the_server_is_down_is_one_clear_connection_error(killable: Killable):
    ns = ("memories", "down-write")
    with PoolSplitStore.from_conn_string(killable.uri, connect_timeout=1) as store:
        store.put(ns, "a", task("before the stop"))
        killable.stop("fast")
        with pytest.raises(ConnectionError, match=r"could not complete a write of .*'b'"):
            store.put(ns, "b", task("while the server is down"))
        killable.start()
        store.put(ns, "c", task("after the restart"))
        assert set(flat(store.retrieve_pools(ns, ALL, CONTEXT))) >= {"a", "c"}


def test_a_statement_timeout_cancels_a_blocked_read_instead_of_hanging(postgres_ready: str):
    ns = ("memories", "timeout")
    with PoolSplitStore.from_conn_string(postgres_ready, statement_timeout=0.05) as store:
        store.put(ns, "a", task("a task"))
        assert set(flat(store.retrieve_pools(ns, ALL, CONTEXT))) == {"a"}
        locker = psycopg.connect(postgres_ready)  # not autocommit: the lock stays held
        try:
            locker.execute("LOCK TABLE store IN ACCESS EXCLUSIVE MODE")
            # Should the read wait for the lock, the lock goes after 20 s and the
            # read then succeeds: no TimeoutError, the test fails instead of hanging.
            release = threading.Timer(20, locker.rollback)
            release.start()
            try:
                with pytest.raises(TimeoutError, match="statement timeout"):
                    store.retrieve_pools(ns, ALL, CONTEXT)
            finally:
                release.cancel()
        finally:
            locker.rollback()
            locker.close()
        # the lock gone, the same store answers
        assert set(flat(store.retrieve_pools(ns, ALL, CONTEXT))) == {"a"}


# --------------------------------------------------------------------------
# 5. Async, in the event loop
# --------------------------------------------------------------------------


def test_async_reads_in_the_event_loop_match_a_sync_read_and_survive_concurrent_writes(
        stores: Stores):
    ns = ("memories", "ana")
    sync = stores.wrapped()
    kept = {f"t{i}": task(f"task {i} deploy the release") for i in range(20)}
    kept |= {f"n{i}": task(f"note {i} about the release", "note") for i in range(20)}
    kept |= {f"fix{i}": correction(f"Correction {i}: deploy with just.") for i in range(5)}
    sync.batch([PutOp(ns, key, value) for key, value in kept.items()])
    sync.batch([PutOp(ns, f"gone{i}", task(f"to delete {i}")) for i in range(10)])
    template = ("memories", "{user_id}")
    config = {"configurable": {"user_id": "ana"}}

    def docs(found: list[Any]) -> list[tuple[str, dict[str, Any]]]:
        return [(doc.page_content, doc.metadata) for doc in found]

    sync_answer = by_pool(sync.retrieve_pools(ns, ALL, CONTEXT, now=NOW))
    sync_docs = docs(PoolSplitStoreRetriever(store=sync, namespace=template, pools=ALL,
                                             now=NOW).invoke("deploy the release", config))
    assert len(sync_docs) == 55

    async def main() -> dict[str, Any]:
        conn = await psycopg.AsyncConnection.connect(
            stores.uri, autocommit=True, prepare_threshold=0, row_factory=dict_row)
        async with conn:
            wrapped = PoolSplitStore(AsyncPostgresStore(conn))
            out: dict[str, Any] = {}
            out["answer"] = by_pool(await wrapped.aretrieve_pools(ns, ALL, CONTEXT, now=NOW))
            out["engine"] = (await wrapped.aexplain_pools(ns, ALL, CONTEXT, now=NOW)).engine
            retriever = PoolSplitStoreRetriever(store=wrapped, namespace=template, pools=ALL,
                                                now=NOW)
            out["docs"] = docs(await retriever.ainvoke("deploy the release", config))
            # a sync read of the AsyncPostgresStore from another thread, the loop running
            out["threaded"] = by_pool(await asyncio.to_thread(
                wrapped.retrieve_pools, ns, ALL, CONTEXT, now=NOW))

            # Many concurrent reads while writes happen, in the loop and from a thread.
            async def read() -> dict[str, Any]:
                return flat(await wrapped.aretrieve_pools(ns, ALL, CONTEXT, now=NOW))

            async def write(i: int) -> None:
                await wrapped.aput(ns, f"a{i}", task(f"async write {i}"))

            async def delete(i: int) -> None:
                await wrapped.adelete(ns, f"gone{i}")

            def thread_writes() -> None:
                for i in range(15):
                    sync.put(ns, f"s{i}", task(f"sync write {i}", "note"))

            results = await asyncio.gather(
                *(read() for _ in range(40)), *(write(i) for i in range(15)),
                *(delete(i) for i in range(10)), asyncio.to_thread(thread_writes),
                *(retriever.ainvoke("deploy", config) for _ in range(10)),
                return_exceptions=True)
            out["errors"] = [r for r in results if isinstance(r, BaseException)]
            out["reads"] = [r for r in results[:40] if isinstance(r, dict)]
            out["after"] = flat(await wrapped.aretrieve_pools(ns, ALL, CONTEXT, now=NOW))
            out["views"] = dict(wrapped._views)
            return out

    out = asyncio.run(main())
    assert out["errors"] == []
    assert out["engine"] == "snapshot"
    assert out["answer"] == sync_answer
    assert out["threaded"] == sync_answer
    assert out["docs"] == sync_docs
    assert len(out["reads"]) == 40
    for values in out["reads"]:
        assert kept.keys() <= values.keys()
        assert all(values[key] == value for key, value in kept.items())
    after = out["after"]
    assert {f"a{i}" for i in range(15)} | {f"s{i}" for i in range(15)} <= after.keys()
    assert not {f"gone{i}" for i in range(10)} & after.keys()
    assert out["views"] == {}
    # and a sync PostgresStore read agrees with the async one after the writes
    assert flat(sync.retrieve_pools(ns, ALL, CONTEXT, now=NOW)) == after


# --------------------------------------------------------------------------
# 6. Memory
# --------------------------------------------------------------------------


def test_reading_2000_namespaces_keeps_no_view_and_bounded_verdicts(
        stores: Stores, monkeypatch: pytest.MonkeyPatch):
    # A bound 2,000 namespaces of two items overflow, so it is seen to hold.
    monkeypatch.setattr(lg, "VERDICTS_KEPT", 1000)
    wrapped = stores.wrapped()
    users = [f"u{i:04d}" for i in range(2000)]
    ops = []
    for user in users:
        ops.append(PutOp(("memories", user), "t", task(f"{user} deploys the release")))
        ops.append(PutOp(("memories", user), "fix", correction(f"{user}: deploy with just.")))
    for start in range(0, len(ops), 1000):
        wrapped.batch(ops[start:start + 1000])
    for user in users:
        got = by_pool(wrapped.retrieve_pools(("memories", user), ALL, CONTEXT, now=NOW))
        assert got == {"work": ["t"], "notes": [], "always": ["fix"]}, (user, got)
        assert len(wrapped._verdicts) <= lg.VERDICTS_KEPT
    assert wrapped._views == {}
    assert len(wrapped._verdicts) <= lg.VERDICTS_KEPT == 1000
    assert wrapped._in_flight == {} and wrapped._contested == set()
    assert wrapped._warned == set()
    # the verdicts kept are the most recent namespaces' (least recently read go first)
    assert ("memories", users[-1]) in {ns for ns, _ in wrapped._verdicts}
    assert ("memories", users[0]) not in {ns for ns, _ in wrapped._verdicts}
