# prepared.py -- pool-split retrieval prepared once, queried many times.
#
# MIT License
#
# Copyright (c) 2026 The poolsplit authors
#
# Permission is hereby granted, free of charge, to any person obtaining a copy
# of this software and associated documentation files (the "Software"), to deal
# in the Software without restriction, including without limitation the rights
# to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
# copies of the Software, and to permit persons to whom the Software is
# furnished to do so, subject to the following conditions:
#
# The above copyright notice and this permission notice shall be included in all
# copies or substantial portions of the Software.
#
# THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
# IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
# FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
# AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
# LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
# OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
# SOFTWARE.
"""PreparedStore: pool-split retrieval prepared once for many queries, same answers.

:func:`retrieve_pools` of ``poolsplit.py`` reads, scores and measures every
entry on every call: right for a store of hundreds, slow for one of a hundred
thousand queried on every turn. A :class:`PreparedStore` reads each entry
once, when it is written, and indexes it, so that a query scores only the
entries that can still load; it answers exactly what ``retrieve_pools``
answers over its entries (the same objects in the same order, bit for bit),
and ``add``, ``upsert`` and ``delete`` keep it current without a rebuild. It
is speed machinery beside the core, not a second definition of pool-split:
the fill, the always-scope step and the score are the core's.

Standard library only, Python 3.9+. Copy it beside ``poolsplit.py`` (it
imports the core as its package sibling, else as the top-level module
``poolsplit``) and ``from prepared import PreparedStore``; ``core`` below is
``poolsplit.py``.

>>> from datetime import datetime, timezone
>>> store = PreparedStore([
...     {"id": "c1", "type": "correction", "scope": "always",
...      "content": "Never force-push to main."},
...     {"id": "t1", "type": "task", "base_priority": 9, "content": "Ship the release notes."},
...     {"id": "s1", "type": "skill", "base_priority": 2, "content": "Bisect with git bisect run."},
... ])
>>> pools = [core.Pool("work", max_tokens=50, max_entries=5, types=("task", "correction")),
...          core.Pool("skills", max_tokens=50, max_entries=2, types=("skill",))]
>>> now = datetime(2026, 1, 1, tzinfo=timezone.utc)
>>> picked = store.retrieve_pools(pools, {"message": "release"}, now=now)
>>> {name: [e["id"] for e in got] for name, got in picked.items()}
{'work': ['c1', 't1'], 'skills': ['s1']}
>>> picked == core.retrieve_pools(store.entries, pools, {"message": "release"}, now=now)
True
"""

from __future__ import annotations

import bisect
import dataclasses
import heapq
import math
import sys
import threading
from array import array
from collections import Counter, defaultdict
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import datetime
from itertools import accumulate, chain, filterfalse, groupby
from operator import attrgetter, itemgetter, methodcaller
from types import MappingProxyType
from typing import (
    TYPE_CHECKING,
    AbstractSet,
    Any,
    Callable,
    Collection,
    DefaultDict,
    Dict,
    Iterable,
    Iterator,
    List,
    Mapping,
    MutableSequence,
    NamedTuple,
    Optional,
    Protocol,
    Sequence,
    Set,
    Tuple,
    Union,
    cast,
)

if TYPE_CHECKING or __package__:  # the package's poolsplit_core.poolsplit
    from . import poolsplit as core
else:  # copied beside poolsplit.py: both are top-level modules
    import poolsplit as core

__version__ = "0.1.0"

__all__ = ["IndexEngine", "PreparedStore", "PythonEngine", "default_engine", "register_engine"]

# The core's names this file uses: the same objects, defined once in poolsplit.py.
# (explain_pools is called as core.explain_pools, so that a spy on the core's
# function sees the prepared store's stateless fallback too.)
Pool = core.Pool
Decision = core.Decision
Explanation = core.Explanation
Scorer = core.Scorer
TokenCounter = core.TokenCounter
ActivityTest = core.ActivityTest
WordReader = core.WordReader
ConfiguredScorer = core.ConfiguredScorer
default_scorer = core.default_scorer
default_token_counter = core.default_token_counter
default_is_active = core.default_is_active
_Query = core._Query
Candidate = core.Candidate
Filled = core.Filled
Room = core.Room
_Key = core._Key
_Marker = core._Marker
_new = core._new
_default_score = core._default_score
_entry_score = core._entry_score
_recency_of = core._recency_of
_score = core._score
_recency = core._recency
_base_priority = core._base_priority
_word_sets = core._word_sets
_cost = core._cost
_options_of = core._options_of
_read_words = core._read_words
_tag_set = core._tag_set
_content = core._content
_utc_now = core._utc_now
_epoch_us = core._epoch_us
_time_us = core._time_us
_sort_text = core._sort_text
_hashable = core._hashable
_label = core._label
_check_entries = core._check_entries
_check_pools = core._check_pools
_call_pools = core._call_pools
_check_score = core._check_score


#: The span of a read, given the component, context, filter and engine: set by
#: the package (poolsplit_core.tracing.read); None, copied alone: no read is traced.
_traced_read: Optional[Callable[..., Any]] = None


# -- PreparedStore: the same answers, prepared once for many queries ---------


class PreparedStore:
    """A memory store prepared once and queried many times, same answers as the functions.

    >>> from datetime import datetime, timezone
    >>> store = PreparedStore([{"id": "fix", "scope": "always"},
    ...                        {"id": "a", "content": "deploy the api"}, {"id": "b"}])
    >>> got = store.retrieve_pools([Pool("all", max_tokens=10, max_entries=1)],
    ...                            {"message": "deploy"},
    ...                            now=datetime(2026, 1, 1, tzinfo=timezone.utc))
    >>> [e["id"] for e in got["all"]]
    ['fix', 'a']
    >>> store.add({"id": "c", "content": "deploy the api now"})
    >>> store.upsert({"id": "a", "content": "deploy the web app"})  # replaces "a" in place
    >>> store.delete("b")
    >>> [e["id"] for e in store.entries]
    ['fix', 'a', 'c']

    Building reads every entry once: activity, type, scope, cost, parsed
    ``created``, tags and the words of its content. Entries of one type,
    priority and project form a group whose order by score is known before
    any query (recency only falls with age), and per type and project every
    word and tag lists its entries newest first. A default-scorer query walks these lists
    best-first, each behind an upper bound of what it can still yield, and
    stops when the pool's cap or budget is met: it scores exactly only the
    entries that can still matter. Results are identical to
    :func:`retrieve_pools` over :attr:`entries` (same objects, same order).

    A living store: :meth:`add` appends, :meth:`upsert` replaces the entry
    with the same ``id`` in its place (so ties break as before) or appends,
    :meth:`delete` removes one by ``id`` -- none of them rebuilds. Entries
    without an ``id`` can be added but not upserted or deleted; an ``id``
    held by several stored entries (allowed, as in a plain list) makes
    upsert and get refuse it as ambiguous, and delete removes every entry
    holding it. An entry is read when it is
    written: one the default scorer would refuse (a non-numeric
    ``base_priority``, ``tags`` that are not strings) is refused then, naming
    it, rather than on every later query. The store notices nothing changed
    inside an entry afterwards: upsert the changed entry, or :meth:`rebuild`.

    Tenants: with ``partition_key="user_id"`` the store is prepared per value
    of that key, and a query whose ``where`` names that key (as a tenant
    filter does) walks only that tenant's entries, so it costs what the
    tenant's share costs.

    Filters on any other key need no declaring: a ``where`` without the
    partition key (any ``where``, on an unpartitioned store) walks a *view*.
    The first query that filters on a key groups the entries by their value
    of it (one pass, then kept current by every write), and the first query
    for a value indexes that value's entries alone, so it too costs what the
    matching share costs, and answers exactly the same. Memory: a view costs
    one index per value queried (a key's values hold each entry at most
    once: at most one more index of the store per key) and 8 bytes per entry
    for its groups; the store keeps the views of at most four keys, dropping
    the least recently used. A key that some entry holds an unhashable value
    for (a list, a set: it may equal a filter's value, as a set equals a
    frozenset) gets no parts; on an unpartitioned store a value more than
    half the entries hold walks the whole index, filtered (about what its
    matching half would cost, at most twice), rather than copy most of it.
    On a partitioned store, a filter none of whose keys a view serves
    reads every entry (stateless).

    ``scorer`` is what queries score with unless they name another; a
    :func:`make_scorer` scorer is indexed with its word reader
    (``PreparedStore(entries, scorer=make_scorer(words=unicode_words))``
    prepares a Chinese store) and walked like the default one, whatever its
    relevance, evergreen and decay options (an entry that carries a
    ``similarity``, as an ``extra=`` candidate does, is scored exactly
    rather than streamed). A query with a scorer the index cannot bound (a
    custom callable, or another word reader) falls back to the stateless
    path, correctly. The store may be
    shared by threads: queries and writes take one lock, so a query never
    sees a write half done.

    ``engine`` chooses how the store is indexed and walked, never what it
    answers: ``"python"`` is this file's best-first walk (standard library
    only); ``"numpy"`` scores every candidate of a query at once in columns
    and sorts only the best of each pool, so its time does not depend on how
    the store's scores are spread (``pip install 'poolsplit[fast]'``; it
    ships with the poolsplit package, not with this file alone). ``"auto"``
    (the default) takes numpy when it is there. Both give the same answers,
    bit for bit.
    """

    def __init__(
        self,
        entries: Iterable[Mapping[str, Any]] = (),
        *,
        scorer: Scorer = default_scorer,
        token_counter: TokenCounter = default_token_counter,
        is_active: ActivityTest = default_is_active,
        partition_key: Optional[str] = None,
        engine: Union[str, IndexEngine] = "auto",
    ) -> None:
        for name, fn in (("scorer", scorer), ("token_counter", token_counter),
                         ("is_active", is_active)):
            if not callable(fn):
                raise TypeError(f"{name} must be callable, got {type(fn).__name__}")
        if partition_key is not None and not isinstance(partition_key, str):
            raise TypeError(f"partition_key must be a str or None, got {partition_key!r}")
        #: The engine that indexes and walks the store: "python" or "numpy".
        self._engine = _engine_of(engine)
        self.engine: str = self._engine.name
        self.scorer = scorer
        options = _options_of(scorer)
        self.words: Optional[WordReader] = options.words if options is not None else None
        self.token_counter = token_counter
        self.is_active = is_active
        self.partition_key = partition_key
        self._lock = threading.Lock()
        self._slots: List[Mapping[str, Any]] = []
        self.rebuild(entries)

    # invariants:
    # 1) _slots holds every entry ever written since the last rebuild, in
    #    write order; a deleted one is _DELETED there, and its position is in
    #    _gaps (sorted; a delete puts a new list there, as a query's positions
    #    may read the old one after the lock is released). The live entries,
    #    in order, are the store's entries.
    # 2) Each part (one per partition value; one in all when unpartitioned)
    #    is an _Index over its entries in slot order, with slots[n] the slot
    #    of its n-th entry (None for the one part: the n-th slot); a deleted
    #    entry is _DELETED in its part too. A part's slots are only ever
    #    appended to, never changed in the middle (positions read them late).
    # 3) _by_id maps each hashable id held by one entry to its slot, and
    #    _shared_ids each id held by several to their slots.
    # 4) _views maps at most _VIEW_KEYS filter keys, least recently queried
    #    first, to a _View. In the view of key k, members[v] lists ascending
    #    the live slots whose entry holds k with a hashable value that a dict
    #    files under v, and members[_ODD] those holding an unhashable value;
    #    an entry lacking k is in no list, and no list is empty. parts[v],
    #    when built, is a part as in 2) whose live slots are members[v]: the
    #    index of members[v] at its build, kept since (an add appends, an
    #    upsert in place replaces, a delete leaves _DELETED). A write that
    #    would put a slot in the middle of a built part's slots drops that
    #    part instead (it is built again, from members, when next queried),
    #    and a view that holds _ODD has no parts at all.

    @property
    def entries(self) -> List[Mapping[str, Any]]:
        """The stored entries, in the order they were added (a new list)."""
        with self._lock:
            return [entry for entry in self._slots if entry is not _DELETED]

    def __len__(self) -> int:
        return len(self._slots) - len(self._gaps)

    def rebuild(self, entries: Optional[Iterable[Mapping[str, Any]]] = None) -> None:
        """Prepare again from ``entries`` (default: the stored ones)."""
        listed = _check_entries(self.entries if entries is None else entries)
        key = self.partition_key
        parts: Dict[Any, _Part] = {}
        common: Dict[str, Any] = {}  # what the new partitions' indexes share
        if key is None:
            part = parts[_WHOLE] = _Part(self._engine.index, self.token_counter,
                                         self.is_active, None, self.words, common)
            part.index.build(list(listed))
        else:
            members: Dict[Any, List[int]] = {}  # partition value -> its slots
            for slot, entry in enumerate(listed):
                value = entry.get(key, _MISSING)
                try:
                    group = members.get(value)
                except TypeError:  # unhashable: refused, naming the entry
                    _partition_of(entry, key, slot)
                    raise
                if group is None:
                    group = members[value] = []
                group.append(slot)
            for value, slots in members.items():
                part = parts[value] = _Part(self._engine.index, self.token_counter,
                                            self.is_active, _positions(slots), self.words,
                                            common)
                part.index.build(list(map(listed.__getitem__, slots)))
        gaps: List[int] = []
        shared_ids: Dict[Any, List[int]] = {}
        by_id = _unique_ids(listed)
        if by_id is None:  # some id is missing, unhashable or held twice: one by one
            by_id = {}
            for slot, entry in enumerate(listed):
                _file_id(by_id, shared_ids, entry.get("id"), slot)
        views: Dict[str, _View] = {}  # every view is made again when next queried
        with self._lock:
            self._slots, self._gaps, self._parts = listed, gaps, parts
            self._by_id, self._shared_ids, self._views = by_id, shared_ids, views
            self._common = common

    def add(self, entry: Mapping[str, Any]) -> None:
        """Add one entry at the end, without a rebuild; it is never mutated."""
        with self._lock:
            self._check_new(entry)
            self._append(entry)

    def upsert(self, entry: Mapping[str, Any]) -> None:
        """Replace the stored entry with this entry's ``id`` in its place, or add it.

        >>> store = PreparedStore([{"id": "a", "content": "old"}, {"id": "b"}])
        >>> store.upsert({"id": "a", "content": "new"})
        >>> [(e["id"], e.get("content")) for e in store.entries]
        [('a', 'new'), ('b', None)]

        Raises ValueError for an entry without an ``id`` (use :meth:`add`),
        for an ``id`` that several stored entries hold, and for a
        replacement that would move the entry to another partition.
        """
        with self._lock:
            self._check_new(entry)
            slot = self._slot_of(entry.get("id"), "upsert", entry_without_id=True)
            if slot is None:
                self._append(entry)
                return
            part, n = self._locate(slot)
            if self.partition_key is not None:
                old = _partition_of(self._slots[slot], self.partition_key, slot)
                new = _partition_of(entry, self.partition_key, slot)
                if old != new:
                    raise ValueError(
                        f"{_label(entry, slot)}: upsert cannot move an entry to another"
                        f" partition ({self.partition_key}={old!r} to {new!r});"
                        f" delete it, then add the new one"
                    )
            part.index.replace(n, entry)
            replaced, self._slots[slot] = self._slots[slot], entry
            self._keep_views(slot, replaced, entry)

    def delete(self, entry_id: Any) -> None:
        """Remove every stored entry with this ``id``, without a rebuild.

        >>> store = PreparedStore([{"id": "a"}, {"id": "b"}, {"id": "a", "content": "twin"}])
        >>> store.delete("a")
        >>> [e["id"] for e in store.entries]
        ['b']

        One entry, unless the store was given several with one ``id`` (as a
        plain list may hold): then all of them, so that an id can always be
        forgotten. Raises KeyError when no stored entry has the id.
        """
        with self._lock:
            self._check_id(entry_id, "delete")
            slots = self._shared_ids.pop(entry_id, None)
            if slots is None:
                slot = self._by_id.pop(entry_id, None)
                if slot is None:
                    raise KeyError(f"no stored entry has id={entry_id!r}")
                slots = [slot]
            gaps = self._gaps[:]  # a new list (invariant 1)
            for slot in slots:
                part, n = self._locate(slot)
                part.index.remove(n)
                deleted, self._slots[slot] = self._slots[slot], _DELETED
                bisect.insort(gaps, slot)
                self._keep_views(slot, deleted, None)
            self._gaps = gaps

    def _holding(self, entry_id: Any) -> List[Mapping[str, Any]]:
        """The stored entries with this ``id``, in store order (none for None or unhashable)."""
        if entry_id is None or not _hashable(entry_id):
            return []
        with self._lock:
            slots = self._shared_ids.get(entry_id)
            if slots is None:
                slot = self._by_id.get(entry_id)
                slots = [] if slot is None else [slot]
            return [self._slots[slot] for slot in slots]

    def get(self, entry_id: Any, default: Optional[Mapping[str, Any]] = None,
            ) -> Optional[Mapping[str, Any]]:
        """The stored entry with this ``id``, or ``default`` when none has it.

        >>> store = PreparedStore([{"id": "a", "content": "old"}])
        >>> store.get("a")["content"], store.get("b")
        ('old', None)

        Raises ValueError when several stored entries hold the id (as upsert
        does; delete removes them all), TypeError for an unhashable id.
        """
        if entry_id is None:
            return default
        with self._lock:
            slot = self._slot_of(entry_id, "get")
            return default if slot is None else self._slots[slot]

    def retrieve_pools(
        self,
        pools: Sequence[Pool],
        context: Optional[Mapping[str, Any]] = None,
        *,
        scorer: Optional[Scorer] = None,
        now: Optional[datetime] = None,
        where: Optional[Mapping[str, Any]] = None,
        max_always_tokens: Optional[int] = None,
        always_pool: bool = False,
        strict: bool = False,
    ) -> Dict[str, List[Mapping[str, Any]]]:
        """What :func:`retrieve_pools` gives over the stored entries (``where`` as for decide).

        ``scorer=None`` (in every query method) is the store's own scorer;
        ``always_pool`` (in every query method) is as for :func:`retrieve_pools`,
        over the kept entries. ``strict=True`` (in every query method) first
        refuses the kept entries (and ``extra``) as :func:`retrieve_pools`
        does, naming every problem: it reads each of them, so such a query
        costs what a stateless one does (to keep a query's speed, check the
        entries once, as they are written: ``poolsplit_core.check_entries``).
        """
        with self._span(context, where) as span:
            checked = _check_pools(pools)
            scorer = self.scorer if scorer is None else scorer
            self._refuse_bad(strict, [], where, None, now)
            walked = self._walk(_call_pools(checked, always_pool), context, scorer, now, [],
                                where, None, max_always_tokens, lists=True)
            if walked is None:
                decided = self._decide(checked, context, scorer, now, (), where, None,
                                       max_always_tokens, always_pool, False)
                got = {name: [d.entry for d in picked] for name, picked in decided.items()}
            else:
                got = cast(Dict[str, List[Mapping[str, Any]]], walked[0])
            span.loaded(sum(map(len, got.values())), lambda: self.explain_pools(
                checked, context, scorer=scorer, now=now, where=where,
                max_always_tokens=max_always_tokens, always_pool=always_pool))
        return got

    def explain_pools(
        self,
        pools: Sequence[Pool],
        context: Optional[Mapping[str, Any]] = None,
        *,
        scorer: Optional[Scorer] = None,
        now: Optional[datetime] = None,
        extra: Sequence[Mapping[str, Any]] = (),
        where: Optional[Mapping[str, Any]] = None,
        include: Optional[Callable[[Mapping[str, Any]], bool]] = None,
        max_always_tokens: Optional[int] = None,
        always_pool: bool = False,
        strict: bool = False,
    ) -> Explanation:
        """What :func:`explain_pools` gives over the stored entries (every entry is read).

        ``extra``, ``where`` and ``include`` are as for :meth:`decide`;
        entries they reject get no record at all (another tenant's entries
        are not even named). A Decision's ``index`` is its position among the
        stored entries followed by ``extra``.
        """
        checked = _check_pools(pools)
        scorer = self.scorer if scorer is None else scorer
        extra = _check_entries(extra)
        self._refuse_bad(strict, extra, where, include, now)
        keep = _both(_matcher(where), include)
        entries = self._entries_with(extra)
        return self._stateless(entries, checked, context, scorer, now, keep, max_always_tokens,
                               always_pool)

    def decide(
        self,
        pools: Sequence[Pool],
        context: Optional[Mapping[str, Any]] = None,
        *,
        scorer: Optional[Scorer] = None,
        now: Optional[datetime] = None,
        extra: Sequence[Mapping[str, Any]] = (),
        where: Optional[Mapping[str, Any]] = None,
        include: Optional[Callable[[Mapping[str, Any]], bool]] = None,
        max_always_tokens: Optional[int] = None,
        always_pool: bool = False,
        strict: bool = False,
    ) -> Dict[str, List[Decision]]:
        """The loaded entries of each pool as Decisions (score, cost, rank), in load order.

        ``extra`` entries join this query only (e.g. a vector search's
        candidates), after the stored ones. ``where`` keeps only the entries
        that hold every one of its keys with an equal value, and ``include``
        only those it accepts -- always-scope ones too -- before pool-split
        runs (a tenant filter; an entry lacking a key does not match). On a
        partitioned store, a ``where`` naming the partition key walks that
        partition alone. The result equals ``explain_pools(...).loaded()``
        over the kept entries; a Decision's ``index`` is its position among
        the stored entries followed by ``extra``. ``max_always_tokens`` is as
        for :func:`retrieve_pools`, over the kept entries, and so is
        ``always_pool`` (an always-scope entry filtered out does not load).
        """
        with self._span(context, where) as span:
            got = self._decide(pools, context, scorer, now, extra, where, include,
                               max_always_tokens, always_pool, strict)
            span.loaded(sum(map(len, got.values())), lambda: self.explain_pools(
                pools, context, scorer=scorer, now=now, extra=extra, where=where,
                include=include, max_always_tokens=max_always_tokens, always_pool=always_pool))
        return got

    def _span(self, context: Optional[Mapping[str, Any]],
              where: Optional[Mapping[str, Any]]) -> Any:
        """The span of one read (a no-op unless tracing is on: ``poolsplit_core.tracing``)."""
        if _traced_read is None:
            return _UNTRACED
        return _traced_read("PreparedStore", context, where, self.engine)

    def _decide(
        self,
        pools: Sequence[Pool],
        context: Optional[Mapping[str, Any]],
        scorer: Optional[Scorer],
        now: Optional[datetime],
        extra: Sequence[Mapping[str, Any]],
        where: Optional[Mapping[str, Any]],
        include: Optional[Callable[[Mapping[str, Any]], bool]],
        max_always_tokens: Optional[int],
        always_pool: bool,
        strict: bool = False,
    ) -> Dict[str, List[Decision]]:
        """:meth:`decide` untraced (the planner's many reads, a traced read's inner one)."""
        checked = _check_pools(pools)
        scorer = self.scorer if scorer is None else scorer
        extra = _check_entries(extra)
        self._refuse_bad(strict, extra, where, include, now)
        if extra and not len(self):  # nothing indexed: indexing the extras costs more
            return self._decided_unindexed(_call_pools(checked, always_pool), context, scorer,
                                           now, extra, _both(_matcher(where), include),
                                           max_always_tokens)
        walked = self._walk(_call_pools(checked, always_pool), context, scorer, now, extra,
                            where, include, max_always_tokens)
        if walked is None:
            entries = self._entries_with(extra)
            keep = _both(_matcher(where), include)
            return self._stateless(entries, checked, context, scorer, now, keep,
                                   max_always_tokens, always_pool).loaded()
        chosen, filled, positions, cost = walked
        return _decisions(filled, cast(Dict[int, Mapping[str, Any]], chosen).__getitem__,
                          positions, cost)

    def _refuse_bad(self, strict: bool, extra: List[Mapping[str, Any]],
                    where: Optional[Mapping[str, Any]],
                    include: Optional[Callable[[Mapping[str, Any]], bool]],
                    now: Optional[datetime]) -> None:
        """``strict=True``: refuse the entries a query reads (kept, then ``extra``), as the core."""
        if core._check_strict(strict):
            keep = _both(_matcher(where), include)
            entries = self._entries_with(extra)
            core._refuse(core._store_problems(
                entries if keep is None else list(filter(keep, entries)), _utc_now(now)))

    def _decided_unindexed(
        self,
        pools: List[Pool],
        context: Optional[Mapping[str, Any]],
        scorer: Scorer,
        now: Optional[datetime],
        extra: List[Mapping[str, Any]],
        keep: Optional[Callable[[Mapping[str, Any]], bool]],
        max_always_tokens: Optional[int],
    ) -> Dict[str, List[Decision]]:
        """:meth:`decide` over the extras alone, by the core's stateless engine (no index)."""
        kept = list(range(len(extra))) if keep is None else [
            i for i, entry in enumerate(extra) if keep(entry)]
        call = core._Call([extra[i] for i in kept], context, scorer, self.token_counter,
                          self.is_active, now)
        return _decisions(core.fill_pools(call, pools, max_always_tokens),
                          call.entries.__getitem__, lambda numbers: [kept[n] for n in numbers],
                          call.cost)

    def _walk(
        self,
        pools: List[Pool],
        context: Optional[Mapping[str, Any]],
        scorer: Scorer,
        now: Optional[datetime],
        extra: List[Mapping[str, Any]],
        where: Optional[Mapping[str, Any]],
        include: Optional[Callable[[Mapping[str, Any]], bool]],
        max_always_tokens: Optional[int],
        lists: bool = False,
    ) -> Optional[Tuple[Union[Dict[int, Mapping[str, Any]], Dict[str, List[Mapping[str, Any]]]],
                        Dict[str, Filled], Callable[[List[int]], List[int]],
                        Callable[[int], int]]]:
        """The prepared walk: the loaded entries, each pool's fill, positions and costs.

        The loaded entries are read under the lock: by number, or with
        ``lists=True`` (:meth:`retrieve_pools`) as each pool's list in load
        order. ``positions`` maps a list of the walk's entry numbers to their
        positions among the live entries (then the extras); the costs are
        those of the always-scope entries loaded (none with ``lists=True``).

        None when the walk cannot answer: a scorer other than the default
        score with this index's word reader, or a partitioned store queried
        with no filter a part serves (:meth:`_part_for`).
        """
        keep = _both(_matcher(where), include)
        options = _options_of(scorer)
        if options is None or not options._walks_with(self.words):
            return None
        with self._lock:  # a query never sees a write half done
            part = self._part_for(where)
            if part is None:
                return None
            index = part.index
            entries = index.entries + extra if extra else index.entries
            query = index.query(entries, context, now, keep, max_always_tokens, options)
            filled = query.run(pools)
            stored, live = len(index.entries), len(self)
            slots = part.slots
            gaps = self._gaps

            def position(n: int) -> int:  # among the live entries, then the extras
                if n >= stored:
                    return live + n - stored
                slot = n if slots is None else slots[n]
                return slot - bisect.bisect_left(gaps, slot)

            def positions(numbers: List[int]) -> List[int]:
                if slots is None and not gaps and not extra:  # a whole store, nothing deleted
                    return numbers
                return [position(n) for n in numbers]

            # The loaded entries and their costs, read under the lock: a write
            # after it replaces the index's list items in place.
            get = entries.__getitem__
            if lists:
                return ({name: [*map(get, got.always), *map(get, map(_POSITION, got.selected))]
                         for name, got in filled.items()}, filled, positions, int)
            chosen = {i: entries[i] for got in filled.values()
                      for i in chain(got.always, map(_POSITION, got.selected))}
            cost = query.cost
            kept = {i: cost(i) for got in filled.values() for i in got.always}
            return chosen, filled, positions, kept.__getitem__

    def _check_new(self, entry: Any) -> None:
        if not isinstance(entry, Mapping):
            raise TypeError(
                f"entry at index {len(self._slots)} must be a mapping (dict),"
                f" got {type(entry).__name__}"
            )

    def _append(self, entry: Mapping[str, Any]) -> None:
        slot = len(self._slots)
        if self.partition_key is None:
            part = self._parts[_WHOLE]
        else:
            value = _partition_of(entry, self.partition_key, slot)
            if value not in self._parts:
                self._parts[value] = _Part(self._engine.index, self.token_counter, self.is_active,
                                           _positions(), self.words, self._common)
            part = self._parts[value]
        part.index.insert(entry)  # reads (and may refuse) the entry before anything changes
        if part.slots is not None:
            part.slots.append(slot)
        self._slots.append(entry)
        _file_id(self._by_id, self._shared_ids, entry.get("id"), slot)
        self._keep_views(slot, None, entry)

    def _part_for(self, where: Optional[Mapping[str, Any]]) -> Optional[_Part]:
        """The part a query filtered by ``where`` walks (under the lock); None: no part serves.

        A ``where`` naming the partition key walks that partition; else one
        of its keys walks its view's part (:meth:`_view_part`); else an
        unpartitioned store walks its whole index. ``where`` itself still
        filters every entry the walk reads.
        """
        key = self.partition_key
        if key is not None and where is not None and key in where:
            value = where[key]
            part = self._parts.get(value) if _hashable(value) else None
            return part if part is not None else self._part_of([])
        part = self._view_part(where) if where else None
        if part is None and key is None:
            return self._parts[_WHOLE]
        return part

    def _view_part(self, where: Mapping[str, Any]) -> Optional[_Part]:
        """The part of ``where``'s value in the view of one of its keys; None: no view serves.

        Keys already viewed are tried first, then the others, each in
        ``where``'s order; a key is viewed when first tried. A view passes
        when an entry holds an unhashable value for its key, and so does a
        value more than half the entries hold on an unpartitioned store
        (its whole index, filtered, costs about what that half would, at
        most twice, and is not copied).
        """
        views = self._views
        keys = [key for key, value in where.items() if _hashable(value)]
        keys.sort(key=lambda key: key not in views)  # (a stable sort: where's order within)
        for key in keys:
            view = views.pop(key, None)
            if view is None:
                view = self._view_of(key)
                while len(views) >= _VIEW_KEYS:
                    del views[next(iter(views))]  # the least recently queried key
            views[key] = view  # the most recently queried key last
            if _ODD in view.members:
                continue
            members = view.members.get(where[key])
            if members is None:
                return self._part_of([])
            part = view.parts.get(where[key])
            if part is None:
                if self.partition_key is None and 2 * len(members) > len(self):
                    continue
                part = view.parts[where[key]] = self._part_of(members)
            return part
        return None

    def _view_of(self, key: str) -> _View:
        """The view of ``key``: the live entries' slots grouped by value, in one pass."""
        view = _View()
        members = view.members
        for slot, entry in enumerate(self._slots):
            value = _view_value(entry, key)  # (a deleted slot holds no key)
            if value is not _MISSING:
                if value not in members:
                    members[value] = _positions()
                members[value].append(slot)
        return view

    def _part_of(self, members: Sequence[int]) -> _Part:
        """A part indexing the entries of these live slots (ascending)."""
        part = _Part(self._engine.index, self.token_counter, self.is_active, _positions(members),
                     self.words, self._common)
        part.index.build([self._slots[slot] for slot in members])
        return part

    def _keep_views(self, slot: int, old: Optional[Mapping[str, Any]],
                    new: Optional[Mapping[str, Any]]) -> None:
        """Keep every view current (invariant 4) as ``slot`` changes from ``old`` to ``new``.

        None is no entry: ``old`` of an add, ``new`` of a delete.
        """
        for key, view in self._views.items():
            members, parts = view.members, view.parts
            before, after = _view_value(old, key), _view_value(new, key)
            group = members.get(before)  # None: the entry was in no group
            if group is not None and group is members.get(after):  # the same group: in place
                part = parts.get(before)
                if part is not None:
                    part.index.replace(_slot_at(part, slot), cast(Mapping[str, Any], new))
                continue
            if group is not None:  # out of its old group
                del group[bisect.bisect_left(group, slot)]
                part = parts.get(before)
                if not group:
                    del members[before]
                    parts.pop(before, None)
                elif part is not None and new is None:
                    part.index.remove(_slot_at(part, slot))
                elif part is not None:
                    del parts[before]  # (a part's slots never lose one: invariant 2)
            if after is not _MISSING:  # into its new group
                group = members.get(after)
                if group is None:
                    group = members[after] = _positions()
                bisect.insort(group, slot)
                part = parts.get(after)
                if part is not None:
                    held = cast(MutableSequence[int], part.slots)
                    if held and held[-1] > slot:
                        del parts[after]  # built again, in slot order, when next queried
                    else:
                        held.append(slot)
                        part.index.insert(cast(Mapping[str, Any], new))
            if _ODD in members:
                parts.clear()

    def _locate(self, slot: int) -> Tuple[_Part, int]:
        """The part that holds a stored slot, and the slot's position in it."""
        if self.partition_key is None:
            return self._parts[_WHOLE], slot
        part = self._parts[_partition_of(self._slots[slot], self.partition_key, slot)]
        return part, bisect.bisect_left(cast(MutableSequence[int], part.slots), slot)

    def _slot_of(self, entry_id: Any, verb: str, entry_without_id: bool = False) -> Optional[int]:
        self._check_id(entry_id, verb, entry_without_id)
        slots = self._shared_ids.get(entry_id)
        if slots is not None:
            at = ", ".join(str(s - bisect.bisect_left(self._gaps, s)) for s in slots)
            raise ValueError(f"{verb}: id={entry_id!r} is held by {len(slots)} stored entries"
                             f" (at {at}); {verb} needs a unique id (delete removes every"
                             " entry holding one)")
        return self._by_id.get(entry_id)

    @staticmethod
    def _check_id(entry_id: Any, verb: str, entry_without_id: bool = False) -> None:
        if entry_id is None:
            raise ValueError(
                f"{verb} needs an entry with an 'id'" + (
                    "; add() takes entries without one" if entry_without_id else ", got None")
            )
        if not _hashable(entry_id):
            raise TypeError(f"{verb}: id must be hashable, got {entry_id!r}")

    def _entries_with(self, extra: List[Mapping[str, Any]]) -> List[Mapping[str, Any]]:
        """The stored entries then ``extra``, copied under the lock for a stateless pass.

        A copy, not the stored list: a write may land while the pass runs.
        """
        with self._lock:
            return [*(entry for entry in self._slots if entry is not _DELETED), *extra]

    def _stateless(
        self,
        entries: List[Mapping[str, Any]],
        pools: List[Pool],
        context: Optional[Mapping[str, Any]],
        scorer: Scorer,
        now: Optional[datetime],
        include: Optional[Callable[[Mapping[str, Any]], bool]],
        max_always_tokens: Optional[int],
        always_pool: bool = False,
    ) -> Explanation:
        """explain_pools over the kept entries, with indices into ``entries``."""
        kept = list(range(len(entries))) if include is None else [
            i for i, entry in enumerate(entries) if include(entry)]
        got = core.explain_pools([entries[i] for i in kept], pools, context, scorer=scorer,
                                 token_counter=self.token_counter, is_active=self.is_active,
                                 now=now, max_always_tokens=max_always_tokens,
                                 always_pool=always_pool)
        if include is None:
            return got
        return Explanation(
            tuple(dataclasses.replace(d, index=kept[d.index]) for d in got.decisions),
            got.ledgers,
        )


class _Untraced:
    """The span of a read when this file is copied alone: it records nothing."""

    def __enter__(self) -> _Untraced:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    def loaded(self, count: int, explain: Callable[[], Explanation]) -> None:
        """Nothing to record."""


_UNTRACED = _Untraced()


class IndexEngine(Protocol):
    """How a :class:`PreparedStore` indexes its entries and walks them: ``engine=`` takes one.

    ``index(token_counter, is_active, words)`` makes an empty index, whose
    ``query(...)`` is a :class:`poolsplit.Engine` (the core's one fill pulls
    each pool's candidates from it). An engine changes the work a query
    does, never its answer.
    """

    @property
    def name(self) -> str:
        """The engine's name, as ``PreparedStore.engine`` reports it."""

    def index(self, token_counter: TokenCounter, is_active: ActivityTest,
              words: Optional[WordReader]) -> _Index:
        """An empty index of this engine."""


class PythonEngine:
    """This file's engine, standard library only: a best-first walk behind score bounds.

    A word or tag list read ``split_after`` entries deep is split by message
    factor (each part bounded by its own) when its kind's lists of the
    message's words hold at most ``split_ratio`` of the kind's entries:
    counting them costs little then, while on long texts that share many
    words a pass over them would cost more than the loose bound it tightens.
    Neither changes an answer; ``PythonEngine(split_after=1,
    split_ratio=math.inf)`` splits every list it reads.
    """

    name = "python"

    def __init__(self, *, split_after: int = 2, split_ratio: float = 0.25) -> None:
        if isinstance(split_after, bool) or not isinstance(split_after, int) or split_after < 1:
            raise ValueError(f"split_after must be an int >= 1, got {split_after!r}")
        if isinstance(split_ratio, bool) or not isinstance(split_ratio, (int, float)) or not (
                split_ratio >= 0):
            raise ValueError(f"split_ratio must be a number >= 0, got {split_ratio!r}")
        self.split_after, self.split_ratio = split_after, float(split_ratio)

    def index(self, token_counter: TokenCounter, is_active: ActivityTest,
              words: Optional[WordReader]) -> _Index:
        """An empty index walked with this engine's tuning."""
        index = _Index(token_counter, is_active, words)
        index.split_after, index.split_ratio = self.split_after, self.split_ratio
        return index

    def __repr__(self) -> str:
        return f"PythonEngine(split_after={self.split_after}, split_ratio={self.split_ratio})"


#: The engines a PreparedStore can index and walk with, by name. "python" is
#: this file's; the poolsplit package registers "numpy" when numpy is installed
#: (``pip install 'poolsplit[fast]'``: ``poolsplit_core.NumpyEngine``).
_ENGINES: Dict[str, IndexEngine] = {"python": PythonEngine()}


def register_engine(engine: IndexEngine) -> IndexEngine:
    """Let ``PreparedStore(engine=engine.name)`` build ``engine``; returns it.

    The numpy engine registers itself so when ``poolsplit_core`` is imported
    with numpy installed, and ``engine="auto"`` then takes it; an engine of
    your own registers the same way (or is passed as an object, unregistered).
    Registering a name again replaces its engine; ``"auto"`` and ``"python"``
    (this file's) cannot be replaced.

    >>> register_engine(PythonEngine(split_after=1))
    Traceback (most recent call last):
    ...
    ValueError: the engine name 'python' is taken by this file's engine; give yours another name
    """
    name = getattr(engine, "name", None)
    if not callable(getattr(engine, "index", None)) or not isinstance(name, str) or not name:
        raise TypeError("an engine has a non-empty str name and an index(token_counter,"
                        f" is_active, words) method (see IndexEngine), got {engine!r}")
    if name in ("auto", "python"):
        raise ValueError(f"the engine name {name!r} is taken by "
                         + ("the default choice" if name == "auto" else "this file's engine")
                         + "; give yours another name")
    _ENGINES[name] = engine
    return engine
_DEFAULT: ContextVar[Optional[IndexEngine]] = ContextVar("poolsplit_default_engine",
                                                          default=None)


@contextmanager
def default_engine(engine: Union[str, IndexEngine]) -> Iterator[IndexEngine]:
    """Within the block, ``PreparedStore(engine="auto")`` builds ``engine``.

    ``engine`` is a name or an engine object. The test suite holds every
    engine to the same answers this way; it is a context variable, so
    another thread or task keeps its own default.

    >>> with default_engine(PythonEngine(split_after=1)) as chosen:
    ...     PreparedStore().engine
    'python'
    """
    chosen = _engine_of(engine)
    token = _DEFAULT.set(chosen)
    try:
        yield chosen
    finally:
        _DEFAULT.reset(token)


def _engine_of(engine: Any) -> IndexEngine:
    """The engine ``engine`` names or is: "auto" is the default one, else the fastest installed."""
    if engine == "auto":
        chosen = _DEFAULT.get()
        if chosen is not None:
            return chosen
        return _ENGINES["numpy" if "numpy" in _ENGINES else "python"]
    if isinstance(engine, str):
        if engine in _ENGINES:
            return _ENGINES[engine]
        if engine == "numpy":
            raise ImportError("engine='numpy' needs numpy and the poolsplit package:"
                              " pip install 'poolsplit[fast]'")
    elif callable(getattr(engine, "index", None)) and isinstance(getattr(engine, "name", None),
                                                                  str):
        return cast(IndexEngine, engine)
    raise ValueError("engine must be 'auto', 'python', 'numpy' or an engine object"
                     f" (PythonEngine(...)), got {engine!r}")


_UNDATED = -(1 << 62)  # sorts before every real time key: undated counts as newest
#: What a deleted entry's position holds: no list of an index names it.
_DELETED: Mapping[str, Any] = MappingProxyType({})
_WHOLE = object()  # the one part of an unpartitioned store


def _positions(positions: Iterable[int] = ()) -> MutableSequence[int]:
    """A list of entry positions, compact (8 bytes each), that changes in place.

    Made from a packed list (a ``bytearray``, see :func:`_opened`), it holds
    its 8-byte positions: iterating the packed list itself gives its bytes.
    """
    return array("q", positions)


def _opened(lists: Dict[str, Sequence[int]], item: str) -> MutableSequence[int]:
    """The list of ``item`` in a kind's ``lists``, opened: an array (an empty one if none).

    A build packs each word and tag list into a ``bytearray`` (8 bytes a
    position): a store holds hundreds of thousands of them, which the
    garbage collector would scan on every full collection if they were
    containers it tracks (lists, or ``array`` since Python 3.10) and which
    would make the build itself trigger those collections. A list is
    opened, once, when a query first reads it or a change first touches it.
    """
    postings = lists.get(item)
    if type(postings) is not array:
        postings = lists[item] = _positions(postings or ())
    return cast(MutableSequence[int], postings)


_FIRST = itemgetter(0)
_PACKED = sys.byteorder  # a position packed as array('q') holds it

_MISSING = object()  # the partition of entries without the partition key


class _Part:
    """One partition of a PreparedStore: an index and the store slot of each of its entries."""

    __slots__ = ("index", "slots")

    def __init__(self, engine: Callable[..., _Index], token_counter: TokenCounter,
                 is_active: ActivityTest, slots: Optional[MutableSequence[int]],
                 words: Optional[WordReader], common: Dict[str, Any]) -> None:
        self.index = engine(token_counter, is_active, words)
        self.index.common = common
        self.slots = slots  # ascending; None: the n-th entry is in the n-th slot


def _slot_at(part: _Part, slot: int) -> int:
    """The position of a store slot in a part that holds it."""
    return bisect.bisect_left(cast(MutableSequence[int], part.slots), slot)


_VIEW_KEYS = 4  # a PreparedStore keeps the views of this many filter keys at most
_ODD = object()  # a view's group of the entries whose value is unhashable


class _View:
    """A PreparedStore's entries grouped by their value of one filter key (invariant 4)."""

    __slots__ = ("members", "parts")

    def __init__(self) -> None:
        self.members: Dict[Any, MutableSequence[int]] = {}  # value -> its live slots, ascending
        self.parts: Dict[Any, _Part] = {}  # value -> the part of its members, once queried


def _view_value(entry: Optional[Mapping[str, Any]], key: str) -> Any:
    """The group of ``entry`` in the view of ``key``: its value, _ODD, or _MISSING (no group).

    An entry lacking the key is in no group, as a ``where`` on it keeps no
    such entry; neither is "no entry" (None).
    """
    if entry is None or key not in entry:
        return _MISSING
    value = entry[key]
    return value if _hashable(value) else _ODD


class _Facts:
    """What the prepared path keeps of one active entry (:data:`_INACTIVE` for the rest)."""

    __slots__ = ("active", "always", "base", "cost", "created_us", "group", "sort_key", "tags",
                 "type", "words")

    def __init__(self, entry: Mapping[str, Any], i: int, token_counter: TokenCounter) -> None:
        self.active = True
        self.type: Any = entry.get("type", "note")
        self.always = entry.get("scope") == "always"
        self.cost = _cost(entry, i, token_counter)
        self.group: Optional[Tuple[Any, float, Any]] = None  # None: scored exactly
        self.base = 0.0
        self.created_us: Optional[int] = None
        self.sort_key: Tuple[str, str] = ("", "")
        self.tags: Tuple[str, ...] = ()
        self.words: Collection[str] = ()  # W(content), filled in by _Index.facts_of
        if self.always:
            return
        self.sort_key = (_sort_text(entry, "created"), _sort_text(entry, "id"))
        self.created_us = _time_us(entry.get("created"))
        # What the default scorer would refuse is refused now, naming the entry
        # (the label is built only then: a build reads every entry).
        try:
            base = _base_priority(entry, "")
            tags = tuple(_tag_set(entry.get("tags"), ""))
        except (TypeError, ValueError):
            base, tags = math.nan, ()
        if base != base:  # refused above: check again, this time naming the entry
            label = _label(entry, i)
            base = _base_priority(entry, label)
            tags = tuple(_tag_set(entry.get("tags"), f"{label}: tags"))
        project = entry.get("project")
        if not _hashable((self.type, project)) or entry.get("similarity") is not None:
            return  # irregular: scored exactly (a make_scorer option may weigh its similarity)
        # Only positive, comfortably finite priorities have a known order
        # (newest first) inside their group; the rest are scored exactly.
        if 0 < base < 1e300:
            self.group = (self.type, base, project)
            self.base, self.tags = base, tags

    @property
    def time_key(self) -> int:
        return _UNDATED if self.created_us is None else -self.created_us


#: The facts of every inactive entry: nothing loads it.
_INACTIVE = _Facts.__new__(_Facts)
_INACTIVE.active, _INACTIVE.always, _INACTIVE.type, _INACTIVE.cost = False, False, None, 0
_INACTIVE.group, _INACTIVE.base, _INACTIVE.created_us = None, 0.0, None
_INACTIVE.sort_key, _INACTIVE.tags, _INACTIVE.words = ("", ""), (), ()


class _Index:
    """The prepared data of a PreparedStore (made by :meth:`PythonEngine.index`)."""

    split_after: int  # the PythonEngine's tuning
    split_ratio: float

    def __init__(self, token_counter: TokenCounter, is_active: ActivityTest,
                 words: Optional[WordReader] = None) -> None:
        self.token_counter, self.is_active = token_counter, is_active
        self.words = words  # the word reader; None: W(text)
        # What the indexes of one store's partitions share, set by the store before a
        # build: an engine may keep there what every partition would make alike (the
        # numpy engine: one word and tag vocabulary). This engine keeps nothing there.
        self.common: Dict[str, Any] = {}
        self.entries: List[Mapping[str, Any]] = []
        self.facts: List[_Facts] = []
        self.always: Dict[Any, List[int]] = {}  # type -> always-scope entries, store order
        self.always_unhashable: List[Tuple[Any, List[int]]] = []  # (type, [entry]) pairs
        self.irregular: List[int] = []
        self.groups: Dict[Tuple[Any, float, Any], MutableSequence[int]] = {}  # newest first
        self.min_cost: Dict[Tuple[Any, float, Any], List[int]] = {}  # of group[j:]
        # (type, project) -> word or tag -> entries, newest first
        self.by_word: Dict[Tuple[Any, Any], Dict[str, Sequence[int]]] = {}
        self.by_tag: Dict[Tuple[Any, Any], Dict[str, Sequence[int]]] = {}
        self.max_base: Dict[Tuple[Any, Any], float] = {}  # highest regular priority
        self.kind_size: Dict[Tuple[Any, Any], int] = defaultdict(int)  # regular entries
        # (is a tag, kind, word or tag) -> suffix-minimum cost of that list, made when a
        # query first reads the list and dropped when the list changes.
        self.list_low: Dict[Tuple[bool, Tuple[Any, Any], str], List[int]] = {}
        self.vocabulary: Dict[str, str] = {}  # one string object per distinct word
        # Pool types -> its groups and (type, project) kinds; cleared when either set grows.
        self.layout: Dict[Any, Tuple[List[Tuple[Any, float, Any]], List[Tuple[Any, Any]]]] = {}
        # (pool types, query project) -> group streams and ceilings; cleared with the layout.
        self.streams_cache: Dict[Any, Tuple[List[_Stream], List[float]]] = {}

    def facts_of(self, entries: Sequence[Mapping[str, Any]], start: int) -> List[_Facts]:
        """The facts of ``entries`` (store indices from ``start``); words are read in bulk."""
        facts = [_Facts(entry, i, self.token_counter) if self.is_active(entry) else _INACTIVE
                 for i, entry in enumerate(entries, start)]
        reader = self.words
        if reader is None:
            # (Positions, not (facts, entry) pairs: tuples that hold objects stay
            # in the collector's lists, and a long build would promote them all.)
            regular = [n for n, f in enumerate(facts) if f.group is not None]
            texts = [_content(entries[n]) for n in regular]
            for n, words in zip(regular, _word_sets(texts)):
                facts[n].words = tuple(words)
            return facts
        for i, (f, entry) in enumerate(zip(facts, entries), start):
            if f.group is not None:
                f.words = _entry_words(reader, _content(entry), entry, i)
        return facts

    def build(self, entries: List[Mapping[str, Any]]) -> None:
        """Index ``entries`` into this empty index.

        Regular entries are indexed newest first, so every group, word and
        tag list comes out in order; and one (type, project) kind after
        another, whose word and tag lists are packed (:func:`_opened`).
        """
        self.entries = entries
        self.facts = every = self.facts_of(entries, 0)
        kinds: Dict[Tuple[Any, Any], int] = {}
        order = []
        for i, facts in enumerate(every):
            self.register(i, facts)
            if facts.group is not None:
                number = kinds.setdefault((facts.type, facts.group[2]), len(kinds))
                order.append((number, facts.time_key, i))
        order.sort()
        for _, run in groupby(order, _FIRST):
            members = [i for _, _, i in run]
            for i in members:
                kind = self.file_group(i, every[i])
            words: DefaultDict[str, bytearray] = defaultdict(bytearray)
            tags: DefaultDict[str, bytearray] = defaultdict(bytearray)
            for i in members:
                facts = every[i]
                code = i.to_bytes(8, _PACKED)
                for item in facts.words:
                    words[item] += code
                for item in facts.tags:
                    tags[item] += code
            self.by_word[kind], self.by_tag[kind] = dict(words), dict(tags)
        self.min_cost = {g: self.suffix_min(members) for g, members in self.groups.items()}

    def register(self, i: int, facts: _Facts) -> None:
        """File an always-scope or irregular entry (kept in store order)."""
        if facts.active and facts.always:
            if _hashable(facts.type):
                bisect.insort(self.always.setdefault(facts.type, []), i)
            else:  # a type no dict can key (a list): the scorer still takes it
                pairs = self.always_unhashable  # rare: kept in store order by hand
                pairs.insert(bisect.bisect([members[0] for _, members in pairs], i),
                             (facts.type, [i]))
        elif facts.active and facts.group is None:
            bisect.insort(self.irregular, i)

    def file(self, i: int, facts: _Facts) -> None:
        """Append a regular entry to its group and to its kind's word and tag lists."""
        kind = self.file_group(i, facts)
        for by, items in ((self.by_word, facts.words), (self.by_tag, facts.tags)):
            lists = by.setdefault(kind, {})
            for item in items:
                _opened(lists, item).append(i)

    def file_group(self, i: int, facts: _Facts) -> Tuple[Any, Any]:
        """Append a regular entry to its group; its (type, project) kind."""
        group = cast(Tuple[Any, float, Any], facts.group)
        vocabulary = self.vocabulary.setdefault
        facts.words = tuple(map(vocabulary, facts.words, facts.words))
        if group not in self.groups:
            self.groups[group] = _positions()
            self.layout.clear()
            self.streams_cache.clear()
        self.groups[group].append(i)
        kind = (facts.type, group[2])
        self.kind_size[kind] += 1
        if facts.base > self.max_base.get(kind, 0.0):
            if kind not in self.max_base:
                self.layout.clear()
                self.streams_cache.clear()
            self.max_base[kind] = facts.base
        return kind

    def time_key(self, i: int) -> int:
        return self.facts[i].time_key

    def query(
        self,
        entries: List[Mapping[str, Any]],
        context: Optional[Mapping[str, Any]],
        now: Optional[datetime],
        include: Optional[Callable[[Mapping[str, Any]], bool]],
        max_always_tokens: Optional[int],
        options: Optional[ConfiguredScorer],
    ) -> _PreparedQuery:
        """One query over this index (and ``entries`` past its own: the query's extras)."""
        return _PreparedQuery(self, entries, context, now, include, max_always_tokens, options)

    def layout_for(self, pool: Pool) -> Tuple[List[Tuple[Any, float, Any]],
                                              List[Tuple[Any, Any]]]:
        """The groups and (type, project) kinds a pool draws from (cached)."""
        got = self.layout.get(pool.types)
        if got is None:
            got = ([g for g in self.groups if pool.accepts(g[0])],
                   [kind for kind in self.max_base if pool.accepts(kind[0])])
            self.layout[pool.types] = got
        return got

    def group_streams(self, pool: Pool, query: _Query) -> Tuple[List[_Stream], List[float]]:
        """The pool's group streams and their ceilings, which depend on the query's project only.

        Cached per (pool types, project) beside the layout, and cleared with
        it: a group's members change in place, its key never does.
        """
        cache_key = (pool.types, query.project) if _hashable(query.project) else None
        got = self.streams_cache.get(cache_key) if cache_key is not None else None
        if got is None:
            no_tag, no_word = query.tag_factor(0, 0), query.message_factors[0]  # both 1.0
            top_recency = _recency(None, 0)  # recency is at most this (age 0)
            streams, ceilings = [], []
            for group in self.layout_for(pool)[0]:
                project = query.project_factor(group[2])
                streams.append(_new(_Stream, (self.groups[group], group, self.min_cost[group],
                                              no_tag, project, no_word)))
                ceilings.append(_score(group[1], top_recency, no_tag, project, no_word))
            got = (streams, ceilings)
            if cache_key is not None:
                if len(self.streams_cache) > 256:  # projects are the users': keep it small
                    self.streams_cache.clear()
                self.streams_cache[cache_key] = got
        return got

    def suffix_min(self, members: Sequence[int]) -> List[int]:
        """The lowest cost of ``members[j:]`` for each ``j``."""
        out = list(accumulate(map(_COST, map(self.facts.__getitem__, reversed(members))), min))
        out.reverse()
        return out

    def list_min(self, is_tag: bool, kind: Tuple[Any, Any], item: str) -> List[int]:
        """The suffix-minimum cost of a word or tag list (made once, until the list changes)."""
        key = (is_tag, kind, item)
        low = self.list_low.get(key)
        if low is None:
            members = _opened((self.by_tag if is_tag else self.by_word)[kind], item)
            low = self.list_low[key] = self.suffix_min(members)
        return low

    def insert(self, entry: Mapping[str, Any]) -> None:
        """Add one entry at the end, keeping every list in order."""
        i = len(self.entries)
        facts = self.facts_of([entry], i)[0]  # may refuse the entry: nothing changed yet
        self.entries.append(entry)
        self.facts.append(facts)
        self.place(i)

    def replace(self, i: int, entry: Mapping[str, Any]) -> None:
        """Put ``entry`` at position ``i`` in place of the entry there."""
        facts = self.facts_of([entry], i)[0]  # may refuse the entry: nothing changed yet
        self.unplace(i)
        self.entries[i], self.facts[i] = entry, facts
        self.place(i)

    def remove(self, i: int) -> None:
        """Delete the entry at position ``i``; the position stays, holding nothing."""
        self.unplace(i)
        self.entries[i], self.facts[i] = _DELETED, _INACTIVE

    def place(self, i: int) -> None:
        """File entry ``i`` into every list it belongs to, each kept in order."""
        facts = self.facts[i]
        self.register(i, facts)
        if facts.active and not facts.always and facts.group is not None:
            self.place_regular(i, facts)

    def place_regular(self, i: int, facts: _Facts) -> None:
        """File a regular entry into its group and its kind's word and tag lists, in order."""
        self.file(i, facts)  # appends at the end of each list; put it in its place
        group = cast(Tuple[Any, float, Any], facts.group)
        key = self.time_key
        members = self.groups[group]
        members.pop()
        at = _insort(members, i, key)
        low = self.min_cost.setdefault(group, [])
        low.insert(at, min(facts.cost, low[at]) if at < len(low) else facts.cost)
        j = at - 1
        while j >= 0 and low[j] > facts.cost:
            low[j] = facts.cost
            j -= 1
        kind = (facts.type, group[2])
        drop = self.list_low.pop
        for is_tag, lists, items in ((False, self.by_word[kind], facts.words),
                                     (True, self.by_tag[kind], facts.tags)):
            for item in items:
                postings = _opened(lists, item)
                postings.pop()
                _insort(postings, i, key)
                drop((is_tag, kind, item), None)

    def unplace(self, i: int) -> None:
        """Take entry ``i`` out of every list it is in (the inverse of :meth:`place`).

        The kind's top priority stays as it was: a bound may only be loose,
        never low.
        """
        facts = self.facts[i]
        if not facts.active:
            return
        if facts.always:
            if _hashable(facts.type):
                self.always[facts.type].remove(i)
            else:
                self.always_unhashable.remove(next(
                    pair for pair in self.always_unhashable if pair[1][0] == i))
            return
        if facts.group is None:
            self.irregular.remove(i)
            return
        self.unplace_regular(i, facts)

    def unplace_regular(self, i: int, facts: _Facts) -> None:
        """Take a regular entry out of its group and its kind's word and tag lists."""
        key = self.time_key
        members = self.groups[cast(Tuple[Any, float, Any], facts.group)]
        self.kind_size[(facts.type, cast(Tuple[Any, float, Any], facts.group)[2])] -= 1
        at = _locate(members, i, key)
        del members[at]
        low = self.min_cost[cast(Tuple[Any, float, Any], facts.group)]
        del low[at]
        every = self.facts
        for j in range(at - 1, -1, -1):  # the suffix minimums before it may rise
            was = low[j]
            low[j] = min(every[members[j]].cost, low[j + 1]) if j + 1 < len(low) else (
                every[members[j]].cost)
            if low[j] == was:
                break
        kind = (facts.type, cast(Tuple[Any, float, Any], facts.group)[2])
        drop = self.list_low.pop
        for is_tag, lists, items in ((False, self.by_word[kind], facts.words),
                                     (True, self.by_tag[kind], facts.tags)):
            for item in items:
                postings = _opened(lists, item)
                del postings[_locate(postings, i, key)]
                drop((is_tag, kind, item), None)


def _locate(members: Sequence[int], i: int, key: Callable[[int], int]) -> int:
    """Where ``i`` stands in ``members`` (sorted by ``key``, equals in any order)."""
    target, lo, hi = key(i), 0, len(members)
    while lo < hi:
        mid = (lo + hi) // 2
        if key(members[mid]) < target:
            lo = mid + 1
        else:
            hi = mid
    while members[lo] != i:
        lo += 1
    return lo


def _insort(members: MutableSequence[int], i: int, key: Callable[[int], int]) -> int:
    """Insert ``i`` into ``members`` (sorted by ``key``) after its equals; return where."""
    target, lo, hi = key(i), 0, len(members)
    while lo < hi:
        mid = (lo + hi) // 2
        if key(members[mid]) <= target:
            lo = mid + 1
        else:
            hi = mid
    members.insert(lo, i)
    return lo


_POSITION = itemgetter(0)  # a Candidate's position
_COST = attrgetter("cost")  # a _Facts' cost


# The kinds of a prepared walk's _Marker (the core's _LAZY is the stateless one's).
_STREAM = -1  # prepared: a started stream's next entry
_START = -2  # prepared: the streams not started yet


class _Stream(NamedTuple):
    """Entries newest first that one heap marker stands for, and how to bound them.

    A group stream (type, priority, project) owes entries that share no tag
    and no word with the query: its tag and message factors are 1. A word or
    tag stream of a (type, project) kind owes entries that may share both: it
    carries the kind's top priority and the largest tag and message factors.
    """

    members: Sequence[int]
    group: Tuple[Any, float, Any]  # (type, base priority or the kind's top one, project)
    low: Sequence[int]  # the lowest cost of members[j:], for each j
    tags: float  # the largest tag factor an entry of this stream can have
    project: float  # the project factor of every entry of this stream
    message: float  # the largest message factor an entry of this stream can have


class _Lists(NamedTuple):
    """The word or the tag lists of one (type, project) kind that a query reads.

    They share one bound before they are read, so they start together, when
    the walk reaches that bound: a list never started costs nothing but its
    name here (a query names hundreds of lists and reads a few).
    """

    is_tag: bool
    kind: Tuple[Any, Any]
    lists: Dict[str, Sequence[int]]  # the kind's lists, by word or tag (see _opened)
    items: Collection[str]  # the query's words or tags among them
    group: Tuple[Any, float, Any]  # (type, the kind's top priority, project)
    tags: float  # the largest tag factor of an entry in these lists
    project: float
    message: float  # the largest message factor of an entry in these lists


class _PreparedQuery:
    """One default-scorer query over a prepared index: a best-first walk with bounds.

    The heap holds :class:`_Key` items (entries scored exactly) and
    :class:`_Marker` items (bounds standing for entries not yet read).

    # invariants:
    1) A stream's marker bound is >= the score of every entry the stream still
       owes: it is :func:`_score` of the same factor functions, each at its
       largest for what is left (recency of the stream's next entry, as
       streams run newest first and recency only falls with age).
    2) Every unread entry that can still load is owed by at least one stream
       with a marker in the heap, or by the _START marker, whose bound (recency
       at most 1) is >= every not-yet-started stream's (a group stream, or a
       kind's word or tag lists, which start together: :class:`_Lists`).
    3) A marker sorts before every candidate of an equal score, so a candidate
       pops only when nothing unread can beat it: the fill order is the
       stateless one, ``(-score, created, id, index)``.
    4) A stream skips an entry only when it can never load in this pool: taken
       by an earlier pool, filtered out by ``include``, already seen, or
       costing more than the tokens left (tokens only decrease); a stream's
       suffix-minimum cost skips its whole tail at once.
    5) Always-scope entries are never in a stream: :class:`_AlwaysTier` loads
       them first, outside the budget.
    6) A word or tag list that is split stops; its parts, which hold every
       unread entry it owed, newest first, take its place under their own
       (lower or equal) bounds, so 1) and 2) hold on.
    """

    def __init__(
        self,
        index: _Index,
        entries: List[Mapping[str, Any]],
        context: Optional[Mapping[str, Any]],
        now: Optional[datetime],
        include: Optional[Callable[[Mapping[str, Any]], bool]],
        max_always_tokens: Optional[int],
        options: Optional[ConfiguredScorer] = None,
    ) -> None:
        self.index, self.entries, self.include = index, entries, include
        self.max_always_tokens = max_always_tokens
        self.query = _Query.from_context(context, index.words, options)
        self.now = _utc_now(now)
        self.now_us = _epoch_us(self.now)
        self.facts = index.facts
        stored = len(index.entries)
        extras = range(stored, len(entries))
        if extras:  # this query's extras
            self.facts = index.facts + index.facts_of(entries[stored:], stored)
        facts = self.facts
        self.exact = list(index.irregular) + [
            i for i in extras if facts[i].active and not facts[i].always]
        by_type: Iterable[Tuple[Any, Sequence[int]]] = index.always.items()
        extra_always = [(facts[i].type, (i,)) for i in extras if facts[i].always]
        if extra_always or index.always_unhashable:
            by_type = [*by_type, *index.always_unhashable, *extra_always]
        self.always = by_type
        self.scores: Dict[int, float] = {}
        # The message factor of each count of shared words (for the split lists).
        self.message_factors = self.query.message_factors
        # Per (type, project) kind, each entry's count of shared message words
        # (made when the kind is first read), and the fill's whole lists.
        self.shared: Dict[Tuple[Any, Any], Tuple[Optional[Mapping[int, int]],
                                                 AbstractSet[int]]] = {}
        self.unsplit: Dict[int, Tuple[bool, Tuple[Any, Any]]] = {}  # (is a tag, kind)
        # Per stream, the recency of the entry its marker stands on (read next).
        self.next_recency: Dict[int, float] = {}

    def run(self, pools: List[Pool]) -> Dict[str, Filled]:
        """The core's one fill over this query's candidates."""
        return core.fill_pools(self, pools, self.max_always_tokens)

    def always_scope(self) -> Tuple[Iterable[Tuple[Any, Sequence[int]]],
                                    Optional[Callable[[int], bool]]]:
        include, entries = self.include, self.entries
        return self.always, None if include is None else (lambda i: bool(include(entries[i])))

    def cost(self, i: int) -> int:
        return self.facts[i].cost

    def usable(self, i: int, pool: Pool, taken: AbstractSet[int]) -> bool:
        facts = self.facts[i]
        entry = self.entries[i]
        return (facts.active and pool.accepts(facts.type) and id(entry) not in taken
                and (self.include is None or bool(self.include(entry))))

    def score(self, i: int, recency: Optional[float] = None) -> float:
        """Entry ``i``'s score; ``recency``, when given, is its :func:`_recency_of` (the walk's)."""
        if i not in self.scores:
            facts = self.facts[i]
            group = facts.group
            if group is not None:
                # Regular entries: 0 < base < 1e300 keeps the product finite.
                query = self.query
                shared = len(query.words.intersection(facts.words)) if query.words else 0
                if recency is None:
                    recency = _recency_of(query, facts.type, facts.created_us, self.now_us)
                # (A regular entry has no similarity: its similarity factor is 1.0.)
                self.scores[i] = _entry_score(facts.base, recency, facts.tags, group[2],
                                              self.message_factors[shared], query)
            else:
                entry = self.entries[i]
                label = _label(entry, i)
                value = _default_score(entry, self.query, self.now, label)
                self.scores[i] = _check_score(value, label)
        return self.scores[i]

    def exact_keys(self, pool: Pool, taken: AbstractSet[int]) -> List[_Key]:
        """The pool's candidates scored exactly now: irregular entries, this query's extras."""
        return [self.key(i) for i in self.exact if self.usable(i, pool, taken)]

    def candidates(self, pool: Pool, taken: AbstractSet[int], room: Room
                   ) -> Iterator[Candidate]:
        facts = self.facts
        heap: List[Any] = self.exact_keys(pool, taken)  # keys, and markers beside them
        streams, starts, ceilings = self.streams(pool)
        split_after = self.index.split_after
        order = sorted(range(len(starts)), key=ceilings.__getitem__, reverse=True)
        if order:
            heap.append(_new(_Marker, (-ceilings[order[0]], "", "", _START, 0)))
        cursor = [0] * len(streams)
        seen: Set[int] = set()
        heapq.heapify(heap)
        push, pop, push_pop = heapq.heappush, heapq.heappop, heapq.heappushpop
        held: Optional[_Marker] = None  # a marker on its way into the heap
        while True:
            # Pushing the held marker and popping the least item, in one step
            # (the marker itself, untouched, when it is still the least).
            if held is not None:
                item, held = push_pop(heap, held), None
            elif heap:
                item = pop(heap)
            else:
                break
            if type(item) is _Marker:
                if item.kind == _START:  # start the next streams, and stand for the rest
                    at = item.ref
                    what = starts[order[at]]
                    for s in ((what,) if isinstance(what, int) else
                              self.start(what, streams, cursor)):
                        marker = self.marker(streams, cursor, s, taken, room.tokens, seen)
                        if marker is not None:
                            push(heap, marker)
                    if at + 1 < len(order):
                        held = _new(_Marker, (-ceilings[order[at + 1]], "", "", _START, at + 1))
                    continue
                s = item.ref  # a started stream: visit its next entry
                if cursor[s] >= split_after and s in self.unsplit:
                    parts = self.split(streams, s, cursor)
                    if parts is not None:  # the parts owe the rest of it
                        for part in parts:
                            marker = self.marker(streams, cursor, part, taken, room.tokens,
                                                 seen)
                            if marker is not None:
                                push(heap, marker)
                        continue
                i = streams[s].members[cursor[s]]
                cursor[s] += 1
                if i not in seen and self.visitable(i, pool, taken, room.tokens):
                    seen.add(i)
                    push(heap, self.key(i, self.next_recency[s]))
                held = self.marker(streams, cursor, s, taken, room.tokens, seen)
                continue
            i = item.position
            yield _new(Candidate, (i, self.scores[i], facts[i].cost))

    def streams(self, pool: Pool) -> Tuple[List[_Stream], List[Union[int, _Lists]],
                                           List[float]]:
        """The pool's group streams, what the walk starts, and a bound for each before it starts.

        What starts is a group stream (its index) or a kind's word or tag
        lists (:class:`_Lists`, made streams by :meth:`start`). The lists
        are bounded as if their entries shared every message word the kind
        holds; read past their first ``split_after`` entries, the rest of a
        list is split by its entries' real message factors (:meth:`split`),
        each part bounded by its own.
        """
        index, query = self.index, self.query
        _, kinds = index.layout_for(pool)
        group_streams, group_ceilings = index.group_streams(pool, query)
        streams, ceilings = list(group_streams), list(group_ceilings)
        starts: List[Union[int, _Lists]] = list(range(len(streams)))
        no_tag = query.tag_factor(0, 0)  # 1.0
        top_recency = _recency(None, 0)  # recency is at most this (age 0)
        all_tags = query.tag_factor(len(query.tags), len(query.tags))  # every query tag shared
        self.unsplit = {}
        for kind in kinds:
            words = index.by_word.get(kind) or {}
            tags = index.by_tag.get(kind) or {}
            # An entry can share at most the message words this kind has at all.
            present = words.keys() & query.words
            shared_tags = tags.keys() & query.tags if tags else ()
            if not present and not shared_tags:
                continue
            top = index.max_base[kind]
            message = query.message_factors[len(present)]
            # Entries with a shared tag are owed by the tag lists (tag factor
            # up to all_tags); the word lists owe the rest, whose tag factor is 1.
            project = query.project_factor(kind[1])
            group = (kind[0], top, kind[1])
            for is_tag, lists, items, tag_factor in ((False, words, present, no_tag),
                                                     (True, tags, shared_tags, all_tags)):
                if items:
                    starts.append(_new(_Lists, (is_tag, kind, lists, items, group, tag_factor,
                                                project, message)))
                    ceilings.append(_score(top, top_recency, tag_factor, project, message))
        return streams, starts, ceilings

    def start(self, lists: _Lists, streams: List[_Stream], cursor: List[int]) -> Sequence[int]:
        """The streams a kind's word or tag lists start as (added to ``streams``)."""
        index, first = self.index, len(streams)
        for item in lists.items:
            self.unsplit[len(streams)] = (lists.is_tag, lists.kind)
            streams.append(_new(_Stream, (_opened(lists.lists, item), lists.group,
                                          index.list_min(lists.is_tag, lists.kind, item),
                                          lists.tags, lists.project, lists.message)))
            cursor.append(0)
        return range(first, len(streams))

    def split(self, streams: List[_Stream], s: int, cursor: List[int]
              ) -> Optional[Sequence[int]]:
        """Split the unread rest of word or tag list ``s`` by message factor: the new streams.

        Each part (:meth:`levels`) is bounded by its own factor: the word
        lists owe the entries whose message factor is above 1 and that share
        no tag, the tag lists every entry that shares a tag; the group
        streams owe the rest. None, and ``s`` read on whole, when its kind's
        lists of the message's words hold more than ``split_ratio`` of its
        entries (see there).
        """
        is_tag, kind = self.unsplit.pop(s)
        whole, at = streams[s], cursor[s]
        shared, hot = self.shared_words(kind, self.index.by_word.get(kind) or {})
        if shared is None:
            return None
        started = []
        for message, part, low in self.levels(is_tag, whole.members[at:], whole.low[at:],
                                              shared, hot):
            started.append(len(streams))
            streams.append(whole._replace(members=part, low=low, message=message))
            cursor.append(0)
        return started

    def shared_words(self, kind: Tuple[Any, Any], words: Dict[str, Sequence[int]]
                     ) -> Tuple[Optional[Mapping[int, int]], AbstractSet[int]]:
        """Each entry of a kind with its count of shared message words, and those above 1.

        The second is the set of entries whose message factor is above 1.
        Counted once per query and kind (C-level counts over the word lists);
        ``(None, ...)`` when those lists hold more than ``split_ratio`` of the
        kind's entries: reading the counts would cost more than the loose bounds
        it tightens.
        """
        got = self.shared.get(kind)
        if got is not None:
            return got
        lists = [_opened(words, word) for word in self.query.words if word in words]
        if sum(map(len, lists)) > self.index.split_ratio * self.index.kind_size.get(kind, 0):
            got = (None, frozenset())
        else:
            counts: Counter[int] = Counter()
            for members in lists:
                counts.update(members)
            factors = self.message_factors
            least = next((k for k, factor in enumerate(factors) if factor > 1.0), len(factors))
            got = (counts, {i for i, k in counts.items() if k >= least} if counts else set())
        self.shared[kind] = got
        return got

    def levels(self, is_tag: bool, members: Sequence[int], whole_low: Sequence[int],
               shared: Mapping[int, int], hot: AbstractSet[int]
               ) -> Iterator[Tuple[float, Sequence[int], Sequence[int]]]:
        """A word or tag list split by message factor: (factor, entries newest first, low).

        A word list keeps only its entries above factor 1 (the rest are the
        group streams'). A tag list keeps every entry: those sharing no word
        in one part, the others by their count. (Filters in C keep the large
        parts cheap; only entries that share words are read one by one.)
        """
        index = self.index
        if is_tag:
            wordy = list(filter(shared.__contains__, members)) if shared else []
            if not wordy:  # one part: the whole list, its low the list's own
                yield self.message_factors[0], members, whole_low
                return
            plain = list(filterfalse(shared.__contains__, members))
            if plain:
                yield self.message_factors[0], plain, index.suffix_min(plain)
        else:
            wordy = list(filter(hot.__contains__, members)) if hot else []
        factors, counts = self.message_factors, shared.__getitem__
        parts: Dict[float, List[int]] = {}
        for i in wordy:
            factor = factors[counts(i)]
            part = parts.get(factor)
            if part is None:
                part = parts[factor] = []
            part.append(i)
        for factor, part in parts.items():
            yield factor, part, index.suffix_min(part)

    def key(self, i: int, recency: Optional[float] = None) -> _Key:
        sort_key = self.facts[i].sort_key
        return _new(_Key, (-self.score(i, recency), sort_key[0], sort_key[1], i))

    def visitable(self, i: int, pool: Pool, taken: AbstractSet[int], tokens_left: int) -> bool:
        # An entry that cannot fit now never will: tokens only decrease.
        return self.facts[i].cost <= tokens_left and self.usable(i, pool, taken)

    def marker(self, streams: List[_Stream], cursor: List[int], s: int,
               taken: AbstractSet[int], tokens_left: int, seen: AbstractSet[int]
               ) -> Optional[_Marker]:
        """A marker bounding what stream ``s`` still owes, after skipping dead entries.

        None when it owes nothing that can load.
        """
        stream = streams[s]
        members, group = stream.members, stream.group
        at, end = cursor[s], len(members)
        low = stream.low
        facts, entries, include = self.facts, self.entries, self.include
        while at < end:
            if low[at] > tokens_left:
                at = end  # nothing left in this stream can fit
                break
            i = members[at]
            # Every member is active and of an accepted type; the rest is visitable().
            if (i not in seen and facts[i].cost <= tokens_left
                    and (not taken or id(entries[i]) not in taken)
                    and (include is None or include(entries[i]))):
                break
            at += 1
        cursor[s] = at
        if at == end:
            return None
        # Invariant 1: the scorer's factors, each at its largest for what is left.
        # (One stream holds one type: the next entry's recency is its own score's.)
        recency = self.next_recency[s] = _recency_of(self.query, group[0],
                                                     facts[members[at]].created_us, self.now_us)
        bound = _score(group[1], recency, stream.tags, stream.project, stream.message)
        return _new(_Marker, (-bound, "", "", _STREAM, s))


# -- Private helpers ---------------------------------------------------------


def _decisions(filled: Dict[str, Filled], entry: Callable[[int], Mapping[str, Any]],
               positions: Callable[[List[int]], List[int]], cost: Callable[[int], int]
               ) -> Dict[str, List[Decision]]:
    """Each pool's loaded Decisions, in load order, from the fill's ``filled``.

    ``entry`` and ``cost`` read an engine's entry by its number; ``positions``
    maps a list of numbers to the Decisions' indices. A selected candidate
    carries its own cost.
    """
    out: Dict[str, List[Decision]] = {}
    for name, got in filled.items():
        decided = [_loaded(entry(i), at, "always", name, None, cost(i), rank)
                   for rank, (i, at) in enumerate(zip(got.always, positions(got.always)))]
        ranked = len(decided)
        selected = [p.position for p in got.selected]
        decided += [_loaded(entry(i), at, "selected", name, p.score, p.cost, ranked + n)
                    for n, (i, at, p) in enumerate(zip(selected, positions(selected),
                                                       got.selected))]
        out[name] = decided
    return out


def _loaded(entry: Mapping[str, Any], index: int, outcome: str, pool: str,
            score: Optional[float], cost: int, rank: int) -> Decision:
    """``Decision(entry, index, outcome, pool, score=..., cost=..., rank=...)``, cheaper.

    A frozen dataclass's ``__init__`` sets each of its nine fields through
    ``object.__setattr__``, and :meth:`PreparedStore.decide` builds one per
    loaded entry (2,000 a query with a large always tier): this fills the new
    instance's fields in one step instead, at under half the cost.
    """
    decision = object.__new__(Decision)
    object.__setattr__(decision, "__dict__", {
        "entry": entry, "index": index, "outcome": outcome, "pool": pool, "score": score,
        "cost": cost, "tokens_left": None, "rank": rank, "notes": ()})
    return decision


def _entry_words(reader: WordReader, text: str, entry: Mapping[str, Any],
                 i: int) -> AbstractSet[str]:
    """:func:`_read_words` of a stored entry's text (a build reads every entry).

    The entry's label is built only to name it when the words are refused.
    """
    try:
        return _read_words(reader, text, "")
    except TypeError:  # refused: again, this time naming the entry
        return _read_words(reader, text, _label(entry, i))


def _partition_of(entry: Mapping[str, Any], key: str, slot: int) -> Any:
    value = entry.get(key, _MISSING)
    if not _hashable(value):
        raise TypeError(f"{_label(entry, slot)}: partition key {key!r} must be hashable,"
                        f" got {value!r}")
    return value


def _unique_ids(entries: Sequence[Mapping[str, Any]]) -> Optional[Dict[Any, int]]:
    """Each id -> its slot, in one C-level step, when every entry holds its own hashable id.

    None otherwise (as when an id is None or shared): :func:`_file_id` then
    files them one at a time.
    """
    try:
        by_id = dict(zip(map(_GET_ID, entries), range(len(entries))))
    except TypeError:  # an unhashable id
        return None
    return by_id if len(by_id) == len(entries) and None not in by_id else None


_GET_ID = methodcaller("get", "id")


def _file_id(by_id: Dict[Any, int], shared: Dict[Any, List[int]], entry_id: Any,
             slot: int) -> None:
    """Record that ``slot`` holds ``entry_id`` (ids held twice move to ``shared``)."""
    if entry_id is None or not _hashable(entry_id):
        return
    if entry_id in shared:
        shared[entry_id].append(slot)
    elif entry_id in by_id:
        shared[entry_id] = [by_id.pop(entry_id), slot]
    else:
        by_id[entry_id] = slot


def _matcher(where: Any) -> Optional[Callable[[Mapping[str, Any]], bool]]:
    """Equality on every key of ``where`` (an entry lacking a key does not match)."""
    if where is None:
        return None
    if not isinstance(where, Mapping):
        raise TypeError(f"where must be a mapping or None, got {type(where).__name__}")
    for key in where:
        if not isinstance(key, str):
            raise TypeError(f"where keys must be str, got {key!r}")
    items = tuple(where.items())
    if not items:
        return None

    def keep(entry: Mapping[str, Any]) -> bool:
        return all(key in entry and entry[key] == value for key, value in items)

    return keep


def _both(
    first: Optional[Callable[[Mapping[str, Any]], bool]],
    second: Optional[Callable[[Mapping[str, Any]], bool]],
) -> Optional[Callable[[Mapping[str, Any]], bool]]:
    if first is None or second is None:
        return first or second
    return lambda entry: first(entry) and bool(second(entry))
