"""PoolSplitStore's in-process index under races: what it answers equals what the store holds.

Each test drives one race deterministically through :class:`Hooked`, a
``BaseStore`` around an ``InMemoryStore`` or ``SqliteStore`` that runs a
hook between or around the wrapped store's calls (another writer's write
between two reads, a read-back held back until a later write is done, a
read-back that fails):

- a full read of a namespace is one ``search`` call (one snapshot): another
  writer's delete or update between calls never drops an untouched item or
  correction;
- a read-back is applied only when it can be ordered; two read-backs of one
  key in flight together, or one overlapped by a full read, make the key be
  read again before the next answer, which then equals the store's state;
- a read-back that fails leaves the write returned and the namespace read in
  full before its next answer;
- namespaces are evicted (``max_namespaces``, ``evict_after``) and read cold,
  exactly, next time.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import threading
from collections.abc import Callable, Iterable

import pytest
from langgraph.store.base import BaseStore, GetOp, Item, Op, PutOp, Result, SearchOp
from langgraph.store.memory import InMemoryStore
from langgraph.store.sqlite import SqliteStore

from poolsplit_core.poolsplit import Pool
from poolsplit_integrations.langgraph import PoolSplitStore

NS = ("memories", "ana")
ALL = [Pool("all", max_tokens=100_000, max_entries=1000)]
WAIT = 5.0  # seconds a hook waits for the other side at most (never reached when correct)


class Clock:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Hooked(BaseStore):
    """A store around ``inner`` that runs hooks around its calls, one hook per call.

    ``after_search``: each runs after a search call returned (with the op and
    its result) -- another writer between two reads. ``after_get``: each runs
    after a batch of only GetOps read its result (a read-back), before it is
    returned; it may wait or raise. ``after_put``: each runs after a batch
    holding a PutOp ran; it may raise (the write happened).
    """

    def __init__(self, inner: BaseStore) -> None:
        self.inner = inner
        self.after_search: list[Callable[[SearchOp, list[Item]], None]] = []
        self.after_get: list[Callable[[], None]] = []
        self.aafter_get: list[Callable[[], object]] = []
        self.after_put: list[Callable[[], None]] = []
        self.searches: list[SearchOp] = []

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        listed = list(ops)
        results = self.inner.batch(listed)
        self._after(listed, results)
        if listed and all(isinstance(op, GetOp) for op in listed) and self.after_get:
            self.after_get.pop(0)()
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        listed = list(ops)
        results = await self.inner.abatch(listed)
        self._after(listed, results)
        if listed and all(isinstance(op, GetOp) for op in listed) and self.aafter_get:
            await self.aafter_get.pop(0)()  # type: ignore[misc]
        return results

    def _after(self, ops: list[Op], results: list[Result]) -> None:
        for op, result in zip(ops, results):
            if isinstance(op, SearchOp):
                self.searches.append(op)
                if self.after_search:
                    self.after_search.pop(0)(op, result)  # type: ignore[arg-type]
        if any(isinstance(op, PutOp) for op in ops) and self.after_put:
            self.after_put.pop(0)()


@pytest.fixture(params=["memory", "sqlite"])
def inner(request: pytest.FixtureRequest):
    """An empty InMemoryStore or SqliteStore (both keep the in-process index)."""
    if request.param == "memory":
        yield InMemoryStore()
        return
    conn = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
    store = SqliteStore(conn)
    store.setup()
    yield store
    conn.close()


def answered(store: PoolSplitStore, namespace: tuple[str, ...] = NS) -> dict[str, dict]:
    """Every item a pool-split read loads, key -> value (one pool that takes everything)."""
    got = store.retrieve_pools(namespace, ALL, {"message": "deploy"})
    return {item.key: item.value for items in got.values() for item in items}


def stored(inner: BaseStore, namespace: tuple[str, ...] = NS) -> dict[str, dict]:
    """What the store holds under ``namespace``, key -> value."""
    return {item.key: item.value for item in inner.search(namespace, limit=10_000)}


def seed(inner: BaseStore, count: int, *, corrections: int = 0) -> None:
    for i in range(count):
        inner.put(NS, f"k{i:02}", {"content": f"deploy note {i}", "type": "note"})
    for i in range(corrections):
        inner.put(NS, f"fix{i:02}", {"content": f"always do {i}", "scope": "always"})


# --------------------------------------------------------------------------
# 1. A full read is one snapshot
# --------------------------------------------------------------------------


def other_writer(inner: BaseStore, touched: set[str]) -> Callable[[SearchOp, list[Item]], None]:
    """Between two reads: delete the first item listed and update the second."""

    def write(op: SearchOp, page: list[Item]) -> None:
        if len(page) >= 2:
            first, second = page[0], page[1]
            inner.delete(first.namespace, first.key)
            inner.put(second.namespace, second.key, {**second.value, "content": "changed"})
            touched.update((first.key, second.key))

    return write


@pytest.mark.parametrize("how", ["cold", "poll", "reconcile", "refresh"])
def test_a_full_read_never_drops_an_item_another_writer_left_untouched(inner, how):
    seed(inner, 12)
    clock = Clock()
    hooked = Hooked(inner)
    store = PoolSplitStore(hooked, clock=clock, page_size=5)
    touched: set[str] = set()
    if how != "cold":
        assert set(answered(store)) == set(stored(inner))
        clock.now += {"poll": 5, "reconcile": 60, "refresh": 0}[how]
    hooked.searches.clear()
    hooked.after_search += [other_writer(inner, touched)] * 3
    if how == "refresh":
        store.refresh(NS)
    got = answered(store)
    untouched = set(stored(inner)) - touched
    assert len(untouched) >= 6
    assert untouched <= set(got)  # nothing untouched was dropped
    full = [op for op in hooked.searches if op.filter is None]
    assert full and all(op.offset == 0 for op in full)  # never paged
    hooked.after_search.clear()
    store.refresh()
    assert answered(store) == stored(inner)  # and after a full read, exactly the store


def test_a_correction_is_never_lost_to_another_writer_between_reads(inner):
    seed(inner, 3, corrections=8)
    hooked = Hooked(inner)
    store = PoolSplitStore(hooked, page_size=3)
    assert set(answered(store)) == set(stored(inner))
    touched: set[str] = set()
    hooked.after_search += [other_writer(inner, touched)] * 3  # the corrections' live read
    got = answered(store)
    corrections = {key for key, value in stored(inner).items()
                   if value.get("scope") == "always"}
    assert len(corrections - touched) >= 6
    assert corrections - touched <= set(got)


def test_page_size_bounds_a_poll_and_a_larger_change_is_read_in_full(inner):
    seed(inner, 4)
    clock = Clock()
    hooked = Hooked(inner)
    store = PoolSplitStore(hooked, clock=clock, page_size=2)
    answered(store)
    seed(inner, 9)  # more changes than one poll call holds
    clock.now += 5
    hooked.searches.clear()
    assert answered(store) == stored(inner)
    limits = [op.limit for op in hooked.searches if op.filter is None]
    assert limits[0] == 2 and max(limits) > 9  # the poll's call, then one full read


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "10"])
def test_page_size_is_checked_naming_it(bad):
    with pytest.raises(ValueError, match=rf"page_size must be an int >= 1, got {bad!r}"):
        PoolSplitStore(InMemoryStore(), page_size=bad)


# --------------------------------------------------------------------------
# 2. A read-back is applied only when it can be ordered
# --------------------------------------------------------------------------

V1 = {"content": "deploy version one", "type": "note"}
V2 = {"content": "deploy version two", "type": "note"}


def write(store: BaseStore, value: dict | None) -> None:
    if value is None:
        store.delete(NS, "k")
    else:
        store.put(NS, "k", value)


def held_back(hooked: Hooked) -> tuple[threading.Event, threading.Event]:
    """The next read-back waits, its result read, until ``release`` is set."""
    read, release = threading.Event(), threading.Event()

    def hold() -> None:
        read.set()
        assert release.wait(WAIT)

    hooked.after_get.append(hold)
    return read, release


@pytest.mark.parametrize(("first", "second"), [(V1, V2), (None, V2), (V1, None)],
                         ids=["put-put", "delete-put", "put-delete"])
def test_an_older_read_back_arriving_last_never_wins(inner, first, second):
    inner.put(NS, "k", {"content": "deploy version zero", "type": "note"})
    inner.put(NS, "other", {"content": "deploy other", "type": "note"})
    hooked = Hooked(inner)
    store = PoolSplitStore(hooked)
    answered(store)  # an index over NS: every write is read back
    read, release = held_back(hooked)
    thread = threading.Thread(target=write, args=(store, first))
    thread.start()
    assert read.wait(WAIT)  # the first write's read-back has read the store ...
    write(store, second)  # ... the second write is done, read back and applied ...
    release.set()  # ... then the first read-back arrives
    thread.join(WAIT)
    assert not thread.is_alive()
    assert stored(inner) == answered(store)
    assert ("k" in answered(store)) == (second is not None)


def test_a_read_back_overlapped_by_a_full_read_is_read_again(inner):
    inner.put(NS, "k", V1)
    hooked = Hooked(inner)
    store = PoolSplitStore(hooked)
    answered(store)
    read, release = held_back(hooked)
    thread = threading.Thread(target=store.delete, args=(NS, "k"))
    thread.start()
    assert read.wait(WAIT)  # the delete read back None ...
    inner.put(NS, "k", V2)  # ... another writer puts the key again ...
    store.refresh(NS)  # ... a full read holds it ...
    release.set()  # ... then the older None arrives
    thread.join(WAIT)
    assert answered(store) == stored(inner) == {"k": V2}


def test_interleaved_async_puts_of_one_key_answer_the_last_write():
    inner = InMemoryStore()  # SqliteStore has no async calls
    inner.put(NS, "k", {"content": "deploy version zero", "type": "note"})
    hooked = Hooked(inner)
    store = PoolSplitStore(hooked)
    answered(store)

    async def run() -> None:
        first_read, second_done = asyncio.Event(), asyncio.Event()

        async def hold() -> None:
            first_read.set()
            await asyncio.wait_for(second_done.wait(), WAIT)

        hooked.aafter_get.append(hold)

        async def second() -> None:
            await asyncio.wait_for(first_read.wait(), WAIT)
            await store.aput(NS, "k", V2)
            second_done.set()

        await asyncio.gather(store.aput(NS, "k", V1), second())

    asyncio.run(run())
    assert stored(inner)["k"] == V2
    assert answered(store)["k"] == V2


def test_a_read_back_no_other_read_overlapped_is_applied_without_a_read(inner):
    hooked = Hooked(inner)
    store = PoolSplitStore(hooked)
    answered(store)
    store.put(NS, "k", V1)
    store.put(NS, "k", V2)
    hooked.searches.clear()
    gets: list[None] = []
    hooked.after_get.append(lambda: gets.append(None))
    assert answered(store) == {"k": V2}
    assert gets == []  # nothing was marked to read again


# --------------------------------------------------------------------------
# 3. A failed read-back
# --------------------------------------------------------------------------


def lost() -> None:
    raise ConnectionError("server closed the connection unexpectedly")


@pytest.mark.parametrize("error", [ConnectionError, OSError])
def test_a_write_whose_read_back_fails_returns_and_the_next_answer_has_it(inner, caplog, error):
    inner.put(NS, "a", {"content": "deploy alpha", "type": "note"})
    hooked = Hooked(inner)
    store = PoolSplitStore(hooked)
    answered(store)

    def fail() -> None:
        raise error("server closed the connection unexpectedly")

    hooked.after_get.append(fail)
    with caplog.at_level(logging.WARNING, logger="poolsplit"):
        assert store.put(NS, "b", {"content": "deploy beta", "type": "note"}) is None
    assert "could not read" in caplog.text and "'b'" in caplog.text
    assert answered(store) == stored(inner) == {
        "a": {"content": "deploy alpha", "type": "note"},
        "b": {"content": "deploy beta", "type": "note"}}


def test_a_delete_whose_read_back_fails_is_gone_from_the_next_answer(inner):
    inner.put(NS, "a", {"content": "deploy alpha", "type": "note"})
    inner.put(NS, "b", {"content": "deploy beta", "type": "note"})
    hooked = Hooked(inner)
    store = PoolSplitStore(hooked)
    answered(store)
    hooked.after_get.append(lost)
    store.delete(NS, "a")
    assert set(answered(store)) == set(stored(inner)) == {"b"}


def test_an_async_put_whose_read_back_fails_returns():
    inner = InMemoryStore()  # SqliteStore has no async calls
    hooked = Hooked(inner)
    store = PoolSplitStore(hooked)
    answered(store)

    async def fail() -> None:
        raise ConnectionError("connection lost")

    hooked.aafter_get.append(fail)
    asyncio.run(store.aput(NS, "b", V1))
    assert answered(store) == {"b": V1}


def test_a_write_that_raises_after_it_committed_is_in_the_next_answer(inner):
    hooked = Hooked(inner)
    store = PoolSplitStore(hooked)
    answered(store)
    hooked.after_put.append(lost)  # committed, then the connection went
    with pytest.raises(ConnectionError):
        store.put(NS, "b", V1)
    assert answered(store) == stored(inner) == {"b": V1}


# --------------------------------------------------------------------------
# 4. Eviction
# --------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [0, -3, 2.5, True, None])
def test_max_namespaces_is_checked_naming_it(bad):
    with pytest.raises(ValueError, match=rf"max_namespaces must be an int >= 1, got {bad!r}"):
        PoolSplitStore(InMemoryStore(), max_namespaces=bad)


@pytest.mark.parametrize("bad", [0, -1.0, True, "600", None])
def test_evict_after_is_checked_naming_it(bad):
    with pytest.raises(ValueError, match=rf"evict_after must be a number of seconds > 0.*"
                                         rf"got {bad!r}"):
        PoolSplitStore(InMemoryStore(), evict_after=bad)


def test_the_defaults_bound_namespaces_and_idle_time():
    store = PoolSplitStore(InMemoryStore())
    assert (store.max_namespaces, store.evict_after) == (1024, 600.0)


def namespace(i: int) -> tuple[str, ...]:
    return ("memories", f"user{i:03}")


def test_views_stay_bounded_over_many_namespaces_least_recently_read_first(inner):
    for i in range(40):
        inner.put(namespace(i), "k", {"content": f"deploy {i}", "type": "note"})
    store = PoolSplitStore(inner, clock=Clock(), max_namespaces=4)
    for i in range(40):
        assert answered(store, namespace(i)) == {"k": {"content": f"deploy {i}", "type": "note"}}
        assert len(store._views) <= 4
    assert list(store._views) == [namespace(i) for i in (36, 37, 38, 39)]
    answered(store, namespace(37))  # read again: the most recent
    answered(store, namespace(0))  # read cold: 36, the least recently read, goes
    assert list(store._views) == [namespace(i) for i in (38, 39, 37, 0)]


def test_a_namespace_not_read_for_evict_after_is_dropped(inner):
    clock = Clock()
    store = PoolSplitStore(inner, clock=clock, evict_after=30)
    answered(store, namespace(1))
    clock.now += 20
    answered(store, namespace(2))
    clock.now += 15  # namespace 1 idle 35 s, namespace 2 idle 15 s
    answered(store, namespace(3))
    assert list(store._views) == [namespace(2), namespace(3)]


def test_the_answer_after_eviction_is_exact(inner):
    clock = Clock()
    store = PoolSplitStore(inner, clock=clock, refresh_interval=10_000,
                           reconcile_interval=10_000, evict_after=30, max_namespaces=2)
    store.put(NS, "a", {"content": "deploy alpha", "type": "note"})
    store.put(NS, "b", {"content": "deploy beta", "type": "note"})
    assert set(answered(store)) == {"a", "b"}
    # Another writer, around this object: the index would not see it for 10,000 s ...
    inner.delete(NS, "a")
    inner.put(NS, "c", {"content": "deploy gamma", "type": "note"})
    assert set(answered(store)) == {"a", "b"}  # (the index as last read)
    clock.now += 30  # ... but NS went unread for evict_after: read cold, exactly
    assert answered(store) == stored(inner)
    assert set(answered(store)) == {"b", "c"}
    # Evicted for max_namespaces, then written through this object: read cold too.
    answered(store, namespace(1))
    answered(store, namespace(2))
    assert NS not in store._views
    store.put(NS, "d", {"content": "deploy delta", "type": "note"})
    inner.delete(NS, "b")
    assert answered(store) == stored(inner)
    assert set(answered(store)) == {"c", "d"}
