"""The numpy engine of :class:`~poolsplit_core.prepared.PreparedStore` (``poolsplit[fast]``).

The python engine walks an index best-first behind score bounds: fast when the
bounds are tight, slow when a store's scores are spread so that they are
loose (entries alike, dates close together). This engine has no bounds to be
loose: a query scores every candidate at once, column by column, and then
sorts only the best few of each pool. Its time follows the store's size, not
its distribution.

It answers exactly as the python engine and the stateless functions do, bit
for bit: the tag, project and message factors are read from the query's
factor plan (its per-query tables, taken by index), and recency and the
product are the core's own arithmetic (``_recency_at``, ``_score``), which
numpy evaluates on whole columns with the same IEEE operations in the same
order; ties are broken by the same key ``(created, id, position)``, kept as a
rank per row.

Importing this module registers the engine as ``"numpy"``; the poolsplit
package imports it when numpy is installed, so ``PreparedStore(engine="auto")``
uses it. The vendored files (``poolsplit.py``, ``prepared.py``) never do.
"""

from __future__ import annotations

import bisect
from array import array
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from itertools import chain, count, islice, repeat
from operator import attrgetter
from typing import Any, ClassVar, cast

import numpy as np

from poolsplit_core import poolsplit as core
from poolsplit_core import prepared

# The core's recency and product arithmetic, applied here to whole columns: its
# functions are typed for floats, and numpy arrays go through the same operators.
_arithmetic: Any = core

__all__ = ["NumpyEngine", "VectorIndex", "VectorQuery"]


class NumpyEngine:
    """The numpy engine of :class:`~poolsplit_core.prepared.PreparedStore` (``poolsplit[fast]``).

    A pool's rows are sorted a chunk at a time: first its best
    ``max(first_chunk, per_slot * max_entries)`` rows by score, then twice
    as many, and so on; a pool with more than ``sample_over`` rows estimates
    each chunk's score threshold from a sample first. None of them changes
    an answer; ``NumpyEngine(first_chunk=1, per_slot=0, sample_over=4)`` cuts
    every pool into the smallest chunks.
    """

    name = "numpy"

    def __init__(self, *, first_chunk: int = 32, per_slot: int = 4,
                 sample_over: int = 4096) -> None:
        for what, value, least in (("first_chunk", first_chunk, 1), ("per_slot", per_slot, 0),
                                   ("sample_over", sample_over, 1)):
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                raise ValueError(f"{what} must be an int >= {least}, got {value!r}")
        self.first_chunk, self.per_slot, self.sample_over = first_chunk, per_slot, sample_over

    def index(self, token_counter: core.TokenCounter, is_active: core.ActivityTest,
              words: core.WordReader | None) -> VectorIndex:
        """An empty index of numpy columns, sorted in this engine's chunks."""
        return VectorIndex(token_counter, is_active, words, self)

    def __repr__(self) -> str:
        return (f"NumpyEngine(first_chunk={self.first_chunk}, per_slot={self.per_slot},"
                f" sample_over={self.sample_over})")

# Rows: every regular entry (active, contextual, a known priority, no
# similarity: what the python engine puts in its groups) is one row of the
# columns below. A write never changes a row: an added or replaced entry
# gets a new row, a replaced or deleted one's row dies, so the word and tag
# postings of a row never change either. Dead rows are dropped by a
# compaction once they outnumber the living ones.
_FIRST_CAPACITY = 64
_CHUNK_ROWS = 1024  # rows whose items a build reads in one step (see _Postings.build)
# A row's facts, read in C (a build reads every row's).
_BASE, _CREATED, _TAGS = attrgetter("base"), attrgetter("created_us"), attrgetter("tags")
_EXACT_DAYS = 1 << 53  # below this many microseconds of age, int64 -> float64 is exact


class _Vocabulary(dict[str, int]):
    """Item -> id: an item looked up for the first time takes the next id (ids dense)."""

    __slots__ = ()

    def __missing__(self, item: str) -> int:
        self[item] = k = len(self)
        return k


class _Postings:
    """Word (or tag) -> the rows holding it: a sorted block from a build, plus rows added since.

    Items are numbered by ``ids``, a vocabulary the postings of a store's
    partitions share (:meth:`vocabulary`: ids dense, in first-seen order),
    so that a partition files its items without a dict of its own. Rows are
    int32. A row holds each of its items once (items are a set), and a row
    is in the block or among the added rows, never both.
    """

    __slots__ = ("added", "first", "ids", "items", "offsets", "rows")

    def __init__(self, ids: _Vocabulary, items: np.ndarray, offsets: np.ndarray,
                 rows: np.ndarray) -> None:
        self.ids = ids  # item -> its id (shared; it may hold items this block does not)
        self.items = items  # the ids the block holds, ascending
        self.offsets = offsets  # rows[offsets[k]:offsets[k + 1]] hold item items[k]
        self.rows = rows
        self.added: dict[int, array[int]] = {}  # item id -> rows added since the build
        # the first id when the block holds a run of ids (a store's only partition):
        # item k is then at k - first, with no search
        size = len(items)
        self.first = (int(items[0]) if size and int(items[-1]) - int(items[0]) == size - 1
                      else None)

    @staticmethod
    def vocabulary(dropped: Iterable[str] = ()) -> _Vocabulary:
        """A new vocabulary: an item read for the first time takes the next id.

        ``dropped`` items take the first ids (below their count): a build
        files them under no row.
        """
        ids = _Vocabulary()
        ids.update(zip(dropped, count()))
        return ids

    @classmethod
    def empty(cls) -> _Postings:
        return cls(cls.vocabulary(), np.zeros(0, np.int64), np.zeros(1, np.int64),
                   np.zeros(0, np.int32))

    @classmethod
    def build(cls, rows_items: Iterable[Collection[str]], count_rows: int, ids: _Vocabulary,
              dropped: int = 0) -> _Postings:
        """The postings of ``rows_items`` (the items of row 0, row 1, ...) in one sorted block.

        ``ids``: the vocabulary (:meth:`vocabulary`); items of an id below
        ``dropped`` are filed under no row. A row's items may repeat (it is
        filed once): the default words are read as the runs of each text,
        and numpy drops the short runs, stopwords and repeats, rather than a
        set per row.
        """
        rows = iter(rows_items)  # read a chunk at a time: nothing per row is kept
        lookup = ids.__getitem__  # (a new item takes the next id)
        sizes, chunks = array("i"), []
        while chunk := list(islice(rows, _CHUNK_ROWS)):
            before = len(sizes)
            sizes.extend(map(len, chunk))
            chunks.append(np.fromiter(map(lookup, chain.from_iterable(chunk)), np.int32,
                                      sum(sizes[before:])))
        if len(sizes) != count_rows:
            raise RuntimeError("postings built from another number of rows")  # pragma: no cover
        item_ids = np.concatenate(chunks) if chunks else np.zeros(0, np.int32)
        keys = item_ids.astype(np.int64) << 32
        keys |= np.repeat(np.arange(count_rows, dtype=np.int64),
                          np.frombuffer(sizes, dtype=np.int32))
        if dropped:
            keys = keys[item_ids >= dropped]
        keys.sort()  # by item, then row: each item's rows ascending
        if len(keys) > 1:
            keys = keys[np.concatenate(([True], keys[1:] != keys[:-1]))]  # a row's item once
        held = keys >> 32
        starts = (np.flatnonzero(np.concatenate(([True], held[1:] != held[:-1])))
                  if len(keys) else np.zeros(0, np.int64))
        return cls(ids, held[starts], np.append(starts, len(keys)),
                   (keys & 0xFFFFFFFF).astype(np.int32))

    def add(self, row: int, items: Iterable[str]) -> None:
        ids, added = self.ids, self.added
        for item in items:
            k = ids[item]  # (a new item takes the next id)
            got = added.get(k)
            if got is None:
                got = added[k] = array("i")
            got.append(row)

    def count_into(self, counts: np.ndarray, items: Iterable[str]) -> list[np.ndarray]:
        """Add 1 to ``counts[row]`` for each of ``items`` a row holds; the postings read."""
        ids, added, offsets, first = self.ids, self.added, self.offsets, self.first
        known = [k for k in map(ids.get, items) if k is not None]
        read = []
        if first is not None:
            held = len(self.items)
            slots = [k - first for k in known if 0 <= k - first < held]
        elif known and len(self.items):  # the slots of the ids the block holds
            wanted = np.array(known, np.int64)
            at = np.minimum(np.searchsorted(self.items, wanted), len(self.items) - 1)
            slots = at[self.items[at] == wanted].tolist()
        else:
            slots = []
        for k in slots:
            read.append(self.rows[offsets[k]:offsets[k + 1]])
        for k in known:
            more = added.get(k)
            if more:
                read.append(np.frombuffer(more, dtype=np.int32))
        for rows in read:
            counts[rows] += 1
        return read

    def items_of_rows(self, count_rows: int) -> list[set[str]]:
        """Each row's items (for tests: the postings read back)."""
        names = {k: item for item, k in self.ids.items()}
        out: list[set[str]] = [set() for _ in range(count_rows)]
        for k, item in enumerate(self.items.tolist()):
            for row in self.rows[self.offsets[k]:self.offsets[k + 1]].tolist():
                out[row].add(names[item])
        for k, more in self.added.items():
            for row in more:
                out[row].add(names[k])
        return out


class _Columns:
    """Growable numpy columns sharing one length (append one row, or many at a build)."""

    DTYPES: ClassVar[dict[str, Any]] = {
        "base": np.float64, "created": np.int64, "dated": np.bool_, "type": np.int32,
        "project": np.int32, "cost": np.int64, "tags": np.int32, "alive": np.bool_,
        "position": np.int64, "rank": np.int64}

    def __init__(self, columns: Mapping[str, np.ndarray] | None = None) -> None:
        if columns is None:
            columns = {name: np.zeros(0, dtype) for name, dtype in self.DTYPES.items()}
        self.length = len(columns["base"])
        # The given columns are the capacity: the first append grows them (a
        # build of a small partition copies nothing).
        self.data: dict[str, np.ndarray] = {
            name: np.asarray(columns[name], dtype) for name, dtype in self.DTYPES.items()}

    def __getitem__(self, name: str) -> np.ndarray:
        return self.data[name][:self.length]

    def append(self, **values: Any) -> int:
        row = self.length
        if row == len(self.data["base"]):
            for name, column in self.data.items():
                grown = np.zeros(max(_FIRST_CAPACITY, 2 * len(column)), column.dtype)
                grown[:row] = column
                self.data[name] = grown
        for name, value in values.items():
            self.data[name][row] = value
        self.length += 1
        return row


class VectorIndex(prepared._Index):
    """A prepared index whose regular entries are rows of numpy columns.

    Always-scope and irregular entries are kept as the python engine keeps
    them (:meth:`register`); regular ones become rows. The python engine's
    groups and word lists stay empty.

    # invariants:
    1) ``row_of[n]`` is the row of the entry at position ``n`` when it is
       regular, else -1; ``columns["position"][row_of[n]] == n`` and that row
       is alive. Every other row is dead and never a candidate.
    2) A row's columns and postings are those of the entry it was made from,
       and never change (a write makes a new row).
    3) ``keys`` is sorted and holds ``(created, id, position)`` of every row
       ever made since the last build; ``columns["rank"]`` is each row's index
       in it, so ranks order rows as the spec's tie-break does.
    4) ``candidates[types]`` lists, ascending, every alive row whose type a
       pool of those types accepts (and maybe dead ones, filtered per query).
    """

    def __init__(self, token_counter: core.TokenCounter, is_active: core.ActivityTest,
                 words: core.WordReader | None = None, engine: NumpyEngine | None = None
                 ) -> None:
        super().__init__(token_counter, is_active, words)
        self.engine = engine or NumpyEngine()
        self._clear_rows()

    def _clear_rows(self) -> None:
        self.columns = _Columns()
        self.row_of = array("q")
        self.type_codes: dict[Any, int] = {}
        self.types: list[Any] = []
        self.project_codes: dict[Any, int] = {None: 0}
        self.projects: list[Any] = [None]
        self.words_index = _Postings.empty()
        self.tags_index = _Postings.empty()
        self.keys: list[tuple[str, str, int]] = []
        self.candidates: dict[Any, np.ndarray] = {}
        self.dead = 0
        self.oldest: int | None = None  # the range of the rows' created times (dated ones)
        self.newest: int | None = None

    @staticmethod
    def regular(facts: prepared._Facts) -> bool:
        return facts.active and not facts.always and facts.group is not None

    # -- building ----------------------------------------------------------

    def build(self, entries: list[Mapping[str, Any]]) -> None:
        """Index ``entries`` into this empty index: facts, then every row at once."""
        self.entries = entries
        self.facts = [prepared._Facts(entry, i, self.token_counter) if self.is_active(entry)
                      else prepared._INACTIVE for i, entry in enumerate(entries)]
        for i, facts in enumerate(self.facts):
            self.register(i, facts)  # always-scope and irregular entries, as the python engine
        self._make_rows()

    def _make_rows(self) -> None:
        """Every regular entry's row, columns and postings, read from the entries."""
        self._clear_rows()
        facts, entries = self.facts, self.entries
        positions = [i for i, f in enumerate(facts) if self.regular(f)]
        n = len(positions)
        self.row_of = array("q", [-1]) * len(entries)
        for row, i in enumerate(positions):
            self.row_of[i] = row
        chosen = [facts[i] for i in positions]
        created = list(map(_CREATED, chosen))
        dated = [c is not None for c in created]
        keys = sorted((*f.sort_key, i) for f, i in zip(chosen, positions))
        rank = np.empty(n, np.int64)
        rank[[self.row_of[key[2]] for key in keys]] = np.arange(n)
        type_code, project_code = self.type_codes.setdefault, self.project_codes.setdefault
        columns = {
            "base": np.fromiter(map(_BASE, chosen), np.float64, n),
            "created": np.fromiter((0 if c is None else c for c in created), np.int64, n),
            "dated": np.fromiter(dated, np.bool_, n),
            "type": np.fromiter((type_code(f.type, len(self.type_codes)) for f in chosen),
                                np.int32, n),
            "project": np.fromiter(
                (project_code(_group(f)[2], len(self.project_codes)) for f in chosen),
                np.int32, n),
            "cost": np.fromiter(map(prepared._COST, chosen), np.int64, n),
            "tags": np.fromiter(map(len, map(_TAGS, chosen)), np.int32, n),
            "alive": np.ones(n, np.bool_),
            "position": np.array(positions, np.int64),
            "rank": rank,
        }
        self.types = list(self.type_codes)
        self.projects = list(self.project_codes)
        self.columns = _Columns(columns)
        self.keys = keys
        if any(dated):
            times = columns["created"][columns["dated"]]
            self.oldest, self.newest = int(times.min()), int(times.max())
        texts = [core._content(entries[i]) for i in positions]
        reader = self.words
        # (one vocabulary of words and one of tags for every partition of the store)
        common = self.common
        if reader is None:  # W(text) is each text's runs but the short ones and stopwords
            ids = common.get("words")
            if ids is None:
                ids = common["words"] = _Postings.vocabulary(sorted(core._NOT_WORDS))
            self.words_index = _Postings.build(core._word_runs(texts), n, ids,
                                               len(core._NOT_WORDS))
        else:
            ids = common.setdefault("words", _Postings.vocabulary())
            self.words_index = _Postings.build((prepared._entry_words(reader, text, entries[i], i)
                                                for text, i in zip(texts, positions)), n, ids)
        tag_ids = common.setdefault("tags", _Postings.vocabulary())
        self.tags_index = _Postings.build((f.tags for f in chosen), n, tag_ids)
        for f in chosen:
            f.words = ()  # the postings hold them now

    # -- writes -------------------------------------------------------------

    def place_regular(self, i: int, facts: prepared._Facts) -> None:
        """A new row for a regular entry written at position ``i``."""
        while len(self.row_of) <= i:
            self.row_of.append(-1)
        key = (*facts.sort_key, i)
        at = bisect.bisect_right(self.keys, key)
        self.keys.insert(at, key)
        rank = self.columns["rank"]
        rank[rank >= at] += 1  # invariant 3: the rows after it move down one
        project = _group(facts)[2]
        if facts.type not in self.type_codes:
            self.type_codes[facts.type] = len(self.types)
            self.types.append(facts.type)
        if project not in self.project_codes:
            self.project_codes[project] = len(self.projects)
            self.projects.append(project)
        created = facts.created_us
        if created is not None:
            self.oldest = created if self.oldest is None else min(self.oldest, created)
            self.newest = created if self.newest is None else max(self.newest, created)
        row = self.columns.append(
            base=facts.base, created=0 if created is None else created,
            dated=created is not None, type=self.type_codes[facts.type],
            project=self.project_codes[project], cost=facts.cost, tags=len(facts.tags),
            alive=True, position=i, rank=at)
        self.row_of[i] = row
        self.words_index.add(row, facts.words)
        self.tags_index.add(row, facts.tags)
        facts.words = ()
        for types, rows in self.candidates.items():
            if types is None or facts.type in types:
                self.candidates[types] = np.append(rows, row)

    def unplace_regular(self, i: int, facts: prepared._Facts) -> None:
        """The row of the entry at position ``i`` dies (invariant 1)."""
        row = self.row_of[i]
        self.columns.data["alive"][row] = False
        self.row_of[i] = -1
        self.dead += 1

    def insert(self, entry: Mapping[str, Any]) -> None:
        super().insert(entry)
        self._compact_if_mostly_dead()

    def replace(self, i: int, entry: Mapping[str, Any]) -> None:
        super().replace(i, entry)
        self._compact_if_mostly_dead()

    def remove(self, i: int) -> None:
        super().remove(i)
        self._compact_if_mostly_dead()

    def _compact_if_mostly_dead(self) -> None:
        if self.dead > max(1024, self.columns.length - self.dead):
            self._make_rows()

    # -- queries ------------------------------------------------------------

    def rows_for(self, types: tuple[str, ...] | None) -> np.ndarray:
        """The rows a pool of these types draws from (invariant 4; cached)."""
        rows = self.candidates.get(types)
        if rows is None:
            if types is None:
                rows = np.flatnonzero(self.columns["alive"])
            else:
                accepted = np.array([t in types for t in self.types] or [False], np.bool_)
                rows = np.flatnonzero(self.columns["alive"] & accepted[self.columns["type"]])
            self.candidates[types] = rows
        return rows

    def query(
        self,
        entries: list[Mapping[str, Any]],
        context: Mapping[str, Any] | None,
        now: Any,
        include: Callable[[Mapping[str, Any]], bool] | None,
        max_always_tokens: int | None,
        options: core.ConfiguredScorer | None,
    ) -> VectorQuery:
        return VectorQuery(self, entries, context, now, include, max_always_tokens, options)

    def snapshot(self) -> dict[int, tuple[Any, ...]]:
        """Each regular position's row as plain data (for tests: compare with a fresh build)."""
        c = self.columns
        words = self.words_index.items_of_rows(c.length)
        tags = self.tags_index.items_of_rows(c.length)
        out = {}
        for i, row in enumerate(self.row_of):
            if row >= 0:
                out[i] = (float(c["base"][row]), int(c["created"][row]), bool(c["dated"][row]),
                          self.types[c["type"][row]], self.projects[c["project"][row]],
                          int(c["cost"][row]), int(c["tags"][row]), bool(c["alive"][row]),
                          int(c["position"][row]), frozenset(words[row]), frozenset(tags[row]),
                          self.keys[c["rank"][row]])
        return out


def _tag_column(tag_factor: Callable[[int, int], float], shared: np.ndarray,
                sizes: np.ndarray) -> np.ndarray:
    """Rows' tag factors, ``tag_factor`` (the query's table) read once per (shared, size) pair."""
    width = int(sizes.max()) + 1
    codes = shared.astype(np.int64) * width + sizes
    span = (int(shared.max()) + 1) * width
    if span <= 4 * len(codes) + 4096:  # a small range of pairs: mark those present
        present = np.zeros(span, np.bool_)
        present[codes] = True
        pairs = np.flatnonzero(present)
        table = np.ones(span)
        table[pairs] = [tag_factor(*divmod(code, width)) for code in pairs.tolist()]
        return cast(np.ndarray, table[codes])
    pairs, inverse = np.unique(codes, return_inverse=True)
    return np.array([tag_factor(*divmod(code, width)) for code in pairs.tolist()])[inverse]


def _group(facts: prepared._Facts) -> tuple[Any, float, Any]:
    return facts.group  # type: ignore[return-value]  # a regular entry's group is set


class VectorQuery(prepared._PreparedQuery):
    """One query over a :class:`VectorIndex`: every row scored at once, each pool's best sorted.

    A pool's rows are cut by a score threshold into a best chunk, which is
    sorted by ``(-score, rank)`` and filled greedily, merged with the
    exactly-scored candidates (irregular entries, extras) by the spec's key;
    only when the chunk is used up does the next one get sorted. A row that
    costs more than the tokens left is dropped before any sort: tokens only
    decrease.
    """

    index: VectorIndex

    def __init__(self, index: VectorIndex, *args: Any) -> None:
        super().__init__(index, *args)
        self._scores: np.ndarray | None = None
        self._taken_rows: np.ndarray | None = None

    def run(self, pools: list[core.Pool]) -> dict[str, core.Filled]:
        if len(pools) > 1:
            self._taken_rows = np.zeros(self.index.columns.length, np.bool_)
        return super().run(pools)

    def row_scores(self) -> np.ndarray:
        """Every row's default score at this query, factor by factor, as the core computes it.

        A tag or message factor is 1.0 for a row sharing nothing with the
        query, so only the rows that share something are read from the
        query's tables; the product is :func:`~poolsplit_core.poolsplit._score`
        of whole columns.
        """
        if self._scores is not None:
            return self._scores
        index, query, c = self.index, self.query, self.index.columns
        rows = c.length
        recency = self._recency(c)
        tags: Any = 1.0
        if query.tags:
            shared = np.zeros(rows, np.int32)
            if index.tags_index.count_into(shared, query.tags):
                hit = np.flatnonzero(shared)
                tags = np.ones(rows)
                tags[hit] = _tag_column(query.tag_factor, shared[hit], c["tags"][hit])
        project: Any = 1.0
        if len(index.projects) > 1:
            project = np.take(self._project_table(), c["project"])
        message: Any = 1.0
        if query.words:
            shared = np.zeros(rows, np.int32)
            if index.words_index.count_into(shared, query.words):
                # A row's message factor depends on its shared count alone: the
                # core's own function, once per count, read by every row.
                message = np.take(np.array(query.message_factors), shared)
        # (A regular entry has no similarity: its similarity factor is 1.0.)
        self._scores = np.asarray(_arithmetic._score(c["base"], recency, tags, project, message),
                                  np.float64)
        return self._scores

    def _recency(self, c: _Columns) -> Any:
        """Each row's recency: the core's ``_recency_at`` on a column, over each type's horizon."""
        index, query, now_us = self.index, self.query, self.now_us
        horizon: Any = core._DECAY_DAYS
        if query.options is not None:
            horizons = [query.options._horizon(t) for t in index.types]
            if any(days != core._DECAY_DAYS for days in horizons):
                horizon = np.array(horizons, np.float64)[c["type"]]
        dated = c["dated"]
        age_us = now_us - c["created"]
        if not dated.all():
            age_us[~dated] = 0  # undated counts as age 0
        recency = _arithmetic._recency_at(age_us, horizon, np.maximum)
        if index.oldest is not None and not (now_us - index.oldest < _EXACT_DAYS
                                             and cast(int, index.newest) - now_us < _EXACT_DAYS):
            # An age of 2**53 microseconds (285 years) or more is not exact as a
            # float64: those rows take the scalar function, exactly.
            far = np.flatnonzero(dated & (np.abs(now_us - c["created"]) >= _EXACT_DAYS))
            for row in far.tolist():
                recency[row] = core._recency_of(query, index.types[c["type"][row]],
                                                int(c["created"][row]), now_us)
        return recency

    def _project_table(self) -> np.ndarray:
        """The project factor of each project code at this query, from the query's table."""
        index, query = self.index, self.query
        table = np.full(len(index.projects), query.project_factors[2])  # another project
        table[0] = query.project_factor(None)  # code 0 is None
        if core._hashable(query.project):
            code = index.project_codes.get(query.project)
            if code:
                table[code] = query.project_factor(index.projects[code])
        else:  # a project no dict can key: compare it with every one
            for code, project in enumerate(index.projects):
                table[code] = query.project_factor(project)
        return table

    def candidates(self, pool: core.Pool, taken: Any, room: core.Room
                   ) -> Iterator[core.Candidate]:
        exact = self.exact_keys(pool, taken)
        exact.sort()
        index, c = self.index, self.index.columns
        entries, facts, include, exact_scores = self.entries, self.facts, self.include, self.scores
        exact_at = 0
        rows = index.rows_for(pool.types)
        scores = self.row_scores()[rows]
        # Rows that are dead, taken by an earlier pool or too costly are skipped
        # in the walk; they are cut from the rest only when a chunk runs out.
        alive = c["alive"] if index.dead else None
        taken_rows = self._taken_rows
        engine = index.engine
        chunk = max(engine.first_chunk, engine.per_slot * room.entries)
        while len(rows):
            rest = None  # the rows below this chunk, cut out only if the walk gets there
            if len(rows) <= chunk:
                best, best_scores = rows, scores
            else:
                rest = scores < _threshold(scores, chunk, engine.sample_over)
                cut = ~rest
                best, best_scores = rows[cut], scores[cut]
            order = np.lexsort((c["rank"][best], -best_scores))
            best = best[order]
            usable: Iterable[bool] = repeat(True)
            if alive is not None or taken_rows is not None:
                ok = np.ones(len(best), np.bool_)
                if alive is not None:
                    ok &= alive[best]
                if taken_rows is not None:
                    ok &= ~taken_rows[best]
                usable = ok.tolist()
            for row, score, cost, i, fits in zip(
                    best.tolist(), best_scores[order].tolist(), c["cost"][best].tolist(),
                    c["position"][best].tolist(), usable):
                if not fits:
                    # Dead or taken: its position may hold another entry now (an upsert
                    # keeps the position), so its key is not this row's to compare.
                    continue
                # The exactly-scored candidates that sort before this row come first.
                while exact_at < len(exact) and _before(exact[exact_at], score, facts[i], i):
                    j = exact[exact_at].position
                    exact_at += 1
                    yield core._new(core.Candidate, (j, exact_scores[j], facts[j].cost))
                if cost > room.tokens:
                    continue
                entry = entries[i]
                if (taken and id(entry) in taken) or (include is not None
                                                      and not include(entry)):
                    continue
                if taken_rows is not None:  # it fits: the fill loads it (the engine contract)
                    taken_rows[row] = True
                yield core._new(core.Candidate, (i, score, cost))
            if rest is None:
                break
            rows, scores = rows[rest], scores[rest]
            if len(rows):  # the next chunk: only rows that can still load
                keep = c["cost"][rows] <= room.tokens
                if alive is not None:
                    keep &= alive[rows]
                if taken_rows is not None:
                    keep &= ~taken_rows[rows]
                rows, scores = rows[keep], scores[keep]
            chunk *= 2
        for key in exact[exact_at:]:
            j = key.position
            yield core._new(core.Candidate, (j, exact_scores[j], facts[j].cost))


def _before(candidate: core._Key, score: float, facts: prepared._Facts, i: int) -> bool:
    """True when an exactly-scored candidate sorts before the row at position ``i``."""
    if candidate.neg_score != -score:
        return bool(candidate.neg_score < -score)
    return (candidate.created, candidate.id, candidate.position) < (*facts.sort_key, i)


def _threshold(scores: np.ndarray, chunk: int, sample_over: int) -> float:
    """A score that at least ``chunk`` of ``scores`` reach (more than ``chunk`` are given).

    On many candidates it is first guessed from a sample (every few scores),
    which costs a fraction of a full partition; a guess that too few reach is
    replaced by the exact ``chunk``-th largest.
    """
    n = len(scores)
    if n > sample_over:
        step = max(1, n // (8 * chunk))
        sample = scores[::step]
        k = max(2, (2 * chunk) // step)
        if k < len(sample):
            guess = float(np.partition(sample, len(sample) - k)[len(sample) - k])
            if np.count_nonzero(scores >= guess) >= chunk:
                return guess
    return float(np.partition(scores, n - chunk)[n - chunk])


prepared.register_engine(NumpyEngine())

