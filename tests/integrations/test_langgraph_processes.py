"""Two processes, one PostgreSQL namespace: every read of either is the database now.

The other process is a real one (a subprocess with its own connection and its
own PoolSplitStore). This process's clock never moves: no interval is waited
for, because a pool-split read over PostgreSQL keeps nothing between reads.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from datetime import datetime, timezone

import psycopg
import pytest
from langgraph.store.postgres import PostgresStore
from psycopg.rows import dict_row

from poolsplit_core.poolsplit import Pool
from poolsplit_integrations.langgraph import PoolSplitStore

NOW = datetime(2026, 3, 1, tzinfo=timezone.utc)
NS = ("memories", "two-processes")
POOLS = [Pool("work", max_tokens=60, max_entries=3, types=("task",)),
         Pool("notes", max_tokens=60, max_entries=3)]

OTHER = textwrap.dedent("""
    import json, sys
    from datetime import datetime, timezone
    from poolsplit_core.poolsplit import Pool
    from poolsplit_integrations.langgraph import PoolSplitStore

    uri, writes = sys.argv[1], json.loads(sys.argv[2])
    ns = ("memories", "two-processes")
    pools = [Pool("work", max_tokens=60, max_entries=3, types=("task",)),
             Pool("notes", max_tokens=60, max_entries=3)]
    with PoolSplitStore.from_conn_string(uri) as store:
        for key, value in writes:
            if value is None:
                store.delete(ns, key)
            else:
                store.put(ns, key, value)
        got = store.retrieve_pools(ns, pools, {"message": "deploy the release"},
                                   now=datetime(2026, 3, 1, tzinfo=timezone.utc))
    print(json.dumps({name: [item.key for item in items] for name, items in got.items()}))
""")


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def other_process(uri: str, writes: list) -> dict:
    done = subprocess.run([sys.executable, "-c", OTHER, uri, json.dumps(writes)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.fixture
def mine(postgres_ready):
    conn = psycopg.connect(postgres_ready, autocommit=True, prepare_threshold=0,
                           row_factory=dict_row)
    conn.execute("TRUNCATE store CASCADE")
    clock = Clock()
    yield PoolSplitStore(PostgresStore(conn), refresh_interval=5, reconcile_interval=30,
                         clock=clock), clock
    conn.close()


def keys(got):
    return {name: [item.key for item in items] for name, items in got.items()}


def test_two_processes_on_one_namespace_agree_at_once(mine, postgres_ready):
    store, clock = mine
    for i in range(12):
        store.put(NS, f"t{i}", {"content": f"task {i} deploy", "type": "task"})
        store.put(NS, f"n{i}", {"content": f"note {i} the release", "type": "note"})
    context = {"message": "deploy the release"}
    first = keys(store.retrieve_pools(NS, POOLS, context, now=NOW))

    # The other process writes a correction and a strong new task, and deletes
    # one of our loaded notes; then it reads the namespace (cold, its own index).
    loaded_note = first["notes"][0]
    theirs = other_process(postgres_ready, [
        ["fix", {"content": "Deploy with just.", "scope": "always", "type": "correction"}],
        ["hot", {"content": "deploy deploy release", "type": "task", "base_priority": 9}],
        [loaded_note, None],
    ])
    assert theirs["notes"][0] == "fix" and theirs["work"][0] == "hot"

    # Next turn here, no time passed: the correction, the new task and the
    # delete are all in; both processes agree.
    agreed = keys(store.retrieve_pools(NS, POOLS, context, now=NOW))
    assert agreed == theirs and loaded_note not in agreed["notes"]
    assert clock.now == 0.0

    # And the other way round: what this process writes, the other reads at once.
    store.put(NS, "mine", {"content": "deploy the release deploy", "type": "note",
                           "base_priority": 9})
    ours = keys(store.retrieve_pools(NS, POOLS, context, now=NOW))
    assert ours["notes"][:2] == ["fix", "mine"]
    assert other_process(postgres_ready, []) == ours


def test_an_unreachable_database_is_a_clear_error_and_nothing_is_kept(mine, postgres_ready):
    store, _ = mine
    store.put(NS, "a", {"content": "alpha"})
    assert [e["id"] for e in store.entries(NS)] == ["a"]
    store.store.conn.close()  # the database goes away
    with pytest.raises(ConnectionError, match=r"could not complete a write of \('memories',"
                                              r" 'two-processes'\) key 'b'.*PostgresStore"):
        store.put(NS, "b", {"content": "beta"})
    with pytest.raises(ConnectionError, match=r"could not read namespace \('other',\)"
                                              r".*PostgresStore"):
        store.retrieve_pools(("other",), POOLS)
    with pytest.raises(ConnectionError, match=r"could not read namespace \('memories', "):
        store.retrieve_pools(NS, POOLS)  # no older copy answers in the database's place
    assert store._views == {}
    with pytest.raises(ConnectionError, match=r"cannot connect to the PostgreSQL server at"
                                              r" postgresql://poolsplit:\*\*\*@"):
        with PoolSplitStore.from_conn_string(
                "postgresql://poolsplit:secret@/nowhere?host=/nonexistent-socket-dir"):
            pass


def test_own_writes_never_hide_another_writer_s_older_stamped_write(mine):
    store, clock = mine
    store.put(NS, "a", {"content": "alpha", "type": "note"})
    conn = store.store.conn
    conn.execute("UPDATE store SET updated_at = now() - interval '60 seconds'")
    store.refresh(NS)  # the watermark is now a minute old
    other = PoolSplitStore(store.store)
    other.put(NS, "x", {"content": "written by the other process", "type": "note"})
    # ... committed late: stamped well before the write this process makes next.
    conn.execute("UPDATE store SET updated_at = now() - interval '30 seconds' WHERE key = 'x'")
    store.put(NS, "y", {"content": "written here", "type": "note"})
    clock.now += 5  # refresh_interval
    assert sorted(e["id"] for e in store.entries(NS)) == ["a", "x", "y"]
