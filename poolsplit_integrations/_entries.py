"""The one mapping between framework documents and poolsplit entry dicts.

Both adapters (LangChain ``Document``, LlamaIndex ``TextNode``) reduce their
objects to ``(text, metadata, id)`` and call :func:`to_entry`; results go back
through :func:`result_metadata`. Nothing here imports a framework.

============================  =================================================
entry key                      comes from
============================  =================================================
``content``                    the text (``page_content`` / node text)
``id``                         the framework id: ``Document.id`` (or ``ids=``),
                               the node id; never ``metadata["id"]``
``type``                       ``metadata["type"]`` (missing: ``"note"``)
``scope``                      ``metadata["scope"]`` (``"always"`` = correction)
``tags``                       ``metadata["tags"]`` (a str is one tag)
``project``                    ``metadata["project"]``
``created``                    ``metadata["created"]`` (ISO-8601 or datetime)
``token_count``                ``metadata["token_count"]`` (positive int)
``base_priority``              ``metadata["base_priority"]`` (default 5)
``status``                     ``metadata["status"]`` (default ``"active"``)
``superseded_by``              ``metadata["superseded_by"]``
``similarity``                 a candidate's retriever score, when it has one
any other key                  passed through for a custom scorer (a
                               metadata ``id`` excepted: it is not copied)
============================  =================================================

Results carry four added metadata keys: ``poolsplit_pool`` (the pool's
name), ``poolsplit_score`` (the score, ``None`` for always-scope),
``poolsplit_always`` (bool) and ``poolsplit_similarity`` (the candidate's
retriever score, its entry key ``similarity``; ``None`` for a stored entry
that carries none). Metadata is always copied, never changed in place.

A retriever that gives no score at all (LangChain's ``as_retriever()``) still
ranks its candidates: :func:`rank_similarities` turns that order into the
fallback ``similarity`` ``1 - i/n`` (the first of ``n`` gets 1.0), never 0.0
for all.

Also shared by every component: the ten options as one value
(:class:`Options`, checked by :data:`OPTION_CHECKS`), the living store each
component holds (:class:`LiveStore`), tenant filters that only narrow
(:func:`narrow`, :func:`refuse_unbound`), the call itself (:class:`Selector`),
the refusal of unknown keyword arguments
(:func:`refuse_unknown`), and serialisation -- pools as plain data
(``{"name", "max_tokens", "max_entries", "types"}``), callables refused by
name (:func:`refuse_unserialisable`).
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from poolsplit_core._plain import pool_from_data, pool_to_data
from poolsplit_core.poolsplit import (
    ConfiguredScorer,
    Decision,
    Explanation,
    Pool,
    PreparedStore,
    _check_pools,
    default_is_active,
    default_scorer,
    default_token_counter,
    make_scorer,
)

logger = logging.getLogger("poolsplit")

#: The entry keys the README gives a meaning to ("Entries and the framework mapping"),
#: read from metadata -- except ``id``, which is the framework's (see :func:`to_entry`).
ENTRY_KEYS = (
    "id", "type", "scope", "tags", "project", "created",
    "token_count", "base_priority", "status", "superseded_by",
)
#: Metadata keys poolsplit adds to the documents it returns.
RESULT_KEYS = ("poolsplit_pool", "poolsplit_score", "poolsplit_always", "poolsplit_similarity")


def to_entry(
    text: str,
    metadata: Mapping[str, Any] | None,
    doc_id: str | None = None,
    *,
    similarity: float | None = None,
) -> dict[str, Any]:
    """Map ``(text, metadata, id)`` to a new entry dict; ``metadata`` is copied.

    >>> to_entry("Never force-push.", {"scope": "always", "id": "row-7"}, "d1")
    {'scope': 'always', 'content': 'Never force-push.', 'id': 'd1'}

    The entry's ``id`` is ``doc_id``, the framework's id (``Document.id``,
    ``add_documents(ids=...)``, the node id), and nothing else: it is what
    writes replace and deletes remove, so a metadata ``id`` (a row number, a
    source key: the application's data) is left out of the entry -- it could
    otherwise stand in for the framework id, or make two objects with
    different ids one entry. It stays in the metadata of the returned
    Documents and nodes, which are copies of the stored ones. Without a
    ``doc_id`` the entry has no ``id``.
    """
    entry = {key: value for key, value in (metadata or {}).items() if key != "id"}
    entry["content"] = text
    if doc_id is not None:
        entry["id"] = doc_id
    if similarity is not None:
        entry["similarity"] = similarity
    return entry


def result_metadata(metadata: Mapping[str, Any] | None, loaded: Decision) -> dict[str, Any]:
    """A copy of ``metadata`` with the four ``poolsplit_*`` keys of one loaded entry added.

    >>> from poolsplit_core.poolsplit import Decision
    >>> loaded = Decision({"similarity": 0.83}, 0, "selected", "work", score=4.5)
    >>> result_metadata({"type": "task"}, loaded)  # doctest: +NORMALIZE_WHITESPACE
    {'type': 'task', 'poolsplit_pool': 'work', 'poolsplit_score': 4.5,
     'poolsplit_always': False, 'poolsplit_similarity': 0.83}
    """
    out = dict(metadata or {})
    out["poolsplit_pool"] = loaded.pool
    out["poolsplit_score"] = None if loaded.score is None else float(loaded.score)
    out["poolsplit_always"] = loaded.outcome == "always"
    out["poolsplit_similarity"] = loaded.entry.get("similarity")
    return out


def rank_similarities(scores: Sequence[float | None]) -> list[float | None]:
    """The candidates' similarities: their scores, or their rank when none has a score.

    >>> rank_similarities([0.9, None, 0.2])
    [0.9, None, 0.2]
    >>> rank_similarities([None, None, None, None])
    [1.0, 0.75, 0.5, 0.25]

    A retriever that scores nothing still ranks its results best first: the
    ``i``-th of ``n`` (from 0) gets ``1 - i/n``, so a similarity-weighing
    scorer keeps its order rather than reading 0.0 for every candidate.
    """
    if any(score is not None for score in scores):
        return list(scores)
    n = len(scores)
    return [1.0 - i / n for i in range(n)]


def build_context(
    default: Mapping[str, Any] | None, message: str, **overrides: Any
) -> dict[str, Any]:
    """The retrieval context of one call: defaults, then overrides, then the query.

    >>> build_context({"project": "atlas", "tags": ["db"]}, "why?", tags=["ops"])
    {'project': 'atlas', 'tags': ['ops'], 'message': 'why?'}

    Overrides whose value is ``None`` are ignored, so ``project=None`` keeps
    the default.
    """
    context = dict(default or {})
    context.update({key: value for key, value in overrides.items() if value is not None})
    context["message"] = message
    return context


def assemble(loaded: Mapping[str, Sequence[Decision]], k: int | None = None) -> list[Decision]:
    """Flatten one call's loaded entries into the order adapters return.

    Every always-scope entry of every pool comes first (pool order, then
    store order), then the contextual entries pool by pool in selection
    order. ``k`` caps the contextual entries across pools, filled fairly:
    round-robin over the pools in pool order, each pool's best first. It
    never cuts an always-scope entry. ``loaded`` is the loaded Decisions per
    pool, in load order (:meth:`PreparedStore.decide` or ``Explanation.loaded()``);
    an always-scope one has no score.
    """
    always = [d for picked in loaded.values() for d in picked if d.outcome == "always"]
    contextual = [[d for d in picked if d.outcome == "selected"] for picked in loaded.values()]
    if k is not None:
        keep = _round_robin_counts([len(picked) for picked in contextual], k)
        contextual = [picked[:n] for picked, n in zip(contextual, keep)]
    return always + [d for picked in contextual for d in picked]


def _round_robin_counts(sizes: Sequence[int], k: int) -> list[int]:
    """How many of each pool's entries a fair cap of ``k`` keeps.

    >>> _round_robin_counts([5, 1, 3], 6)
    [3, 1, 2]
    """
    keep = [0] * len(sizes)
    budget = k
    while budget > 0 and any(n < size for n, size in zip(keep, sizes)):
        for i, size in enumerate(sizes):
            if budget > 0 and keep[i] < size:
                keep[i] += 1
                budget -= 1
    return keep


def check_k(k: Any) -> int | None:
    """Validate a contextual cap: None, or an int >= 0."""
    return _optional_count("k", k)


def _optional_count(name: str, value: Any) -> int | None:
    """None, or an int >= 0 (not a bool); the error names ``name`` and the value."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int or None, got {value!r}")
    if value < 0:
        raise ValueError(f"{name} must be >= 0, got {value}")
    return value


def check_pools_arg(pools: Iterable[Any]) -> list[Any]:
    """Validate an adapter's pool list at construction: non-empty, unique names.

    A pool may be given as plain data (``{"name", "max_tokens", "max_entries",
    "types"}``, as serialised), so a component rebuilt from its dict gets Pools.

    >>> check_pools_arg([{"name": "all", "max_tokens": 10, "max_entries": 2}])
    [Pool(name='all', max_tokens=10, max_entries=2, types=None)]
    """
    if isinstance(pools, (list, tuple)):
        pools = [pool_from_data(pool, f"pools[{i}]") if isinstance(pool, Mapping) else pool
                 for i, pool in enumerate(pools)]
    checked = _check_pools(pools)
    for pool in checked:
        if pool.name == ALWAYS_POOL:
            raise ValueError(
                f"pools: the name {ALWAYS_POOL!r} is the pool under which the corrections no"
                f" other pool takes load; give {pool!r} another name"
            )
    return checked


#: The pool under which every active always-scope entry that no pool's types
#: take is loaded (the core's ``always_pool=True``, on in every component).
ALWAYS_POOL = "always"


class _Default:
    def __repr__(self) -> str:
        return "DEFAULT"


#: "Not given": keep the component's own setting (same as ``None``).
DEFAULT: Any = _Default()


# --------------------------------------------------------------------------
# Tenant filters: they only narrow
# --------------------------------------------------------------------------


def narrow(
    base: Mapping[str, Any] | None, *more: Any, owner: str = "this retriever"
) -> dict[str, Any] | None:
    """``base`` AND each filter of ``more``: a filter can add keys, never widen.

    ``None`` (or :data:`DEFAULT`) in ``more`` keeps what is there; the same
    key with an equal value is kept once; a different value for a key already
    set is a ``ValueError`` -- never a silent widening to another tenant.

    >>> narrow({"user_id": "ana"}, {"type": "task"}, None)
    {'user_id': 'ana', 'type': 'task'}
    >>> narrow({"user_id": "ana"}, {"user_id": "bo"})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: this retriever is bound to user_id='ana'; a filter cannot change it to 'bo' ...
    """
    out = check_filter(base)
    for extra in more:
        if extra is None or extra is DEFAULT:
            continue
        for key, value in (check_filter(extra) or {}).items():
            if out is not None and key in out and out[key] != value:
                raise ValueError(
                    f"{owner} is bound to {key}={out[key]!r}; a filter cannot change it"
                    f" to {value!r} (filters only narrow)"
                )
            out = {**(out or {}), key: value}
    return out


def _blank(value: Any) -> bool:
    """A filter value that names no tenant: None, or an empty str/collection."""
    if value is None:
        return True
    try:
        return len(value) == 0
    except TypeError:
        return False


def refuse_unbound(
    filter: Mapping[str, Any] | None, required: Sequence[str], *,
    owner: str = "this retriever", hint: str = "",
) -> None:
    """Fail closed: a ValueError unless ``filter`` holds every required key with a real value.

    A required key given as ``None`` or empty (``""``, ``[]``) names no
    tenant, so it is refused like a missing one.
    """
    active = dict(filter or {})
    missing = [key for key in required if key not in active]
    blank = [key for key in required if key in active and _blank(active[key])]
    if missing or blank:
        lacks = " and ".join(
            ([f"lacks {missing}"] if missing else [])
            + ([f"gives no value for {blank}"] if blank else []))
        how = (f"; name the user with filter={{'{USER_KEY}': '<user>'}}, the run's"
               f" config={{'configurable': {{'{USER_KEY}': '<user>'}}}} or"
               f" with_filter({{'{USER_KEY}': '<user>'}})" if USER_KEY in missing + blank else "")
        raise ValueError(
            f"{owner} requires a filter on {missing + blank}; its filter {active!r} {lacks}"
            + how + (f"; {hint}" if hint else "")
        )


#: The metadata key that names a memory's user. A component whose memories carry
#: it serves several users: every query must name one (fail closed).
USER_KEY = "user_id"


def check_user(value: Any, where: str) -> str:
    """``value`` if it names a user: a non-empty str that is not only whitespace.

    >>> check_user("ana", "filter")
    'ana'
    >>> check_user(False, "filter")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: filter: user_id must be a non-empty string naming one user, got False ...

    None, ``""``, ``"  "``, ``False``, ``0`` and lists name no user: each
    would otherwise select a shared bucket (every request whose id resolved
    to ``False`` would see the same memories).
    """
    if not isinstance(value, str) or not value.strip():
        raise ValueError(
            f"{where}: {USER_KEY} must be a non-empty string naming one user, got {value!r}"
            f" (pass filter={{'{USER_KEY}': '<user>'}} or config={{'configurable':"
            f" {{'{USER_KEY}': '<user>'}}}})"
        )
    return value


def carries_user(entry: Mapping[str, Any]) -> bool:
    """Whether an entry belongs to a user: it has a ``user_id`` that is not None."""
    return entry.get(USER_KEY) is not None


def config_filter(configurable: Mapping[str, Any] | None,
                  keys: Sequence[str]) -> dict[str, Any] | None:
    """The tenant a run's ``config["configurable"]`` names: its values for ``keys``.

    >>> config_filter({"user_id": "ana", "thread_id": "t1"}, ("user_id",))
    {'user_id': 'ana'}
    """
    if not configurable:
        return None
    found = {key: configurable[key] for key in keys if key in configurable}
    return found or None


# --------------------------------------------------------------------------
# The shared options, as one value
# --------------------------------------------------------------------------


#: The options every component shares, in the order they are documented.
OPTION_NAMES = (
    "pools", "k", "context", "scorer", "token_counter", "is_active", "now",
    "filter", "require_filter_keys", "max_always_tokens", "strict",
)


@dataclass(frozen=True)
class Options:
    """The ten options every component shares, checked once, as one value.

    >>> Options([Pool("all", 100, 5)], k=2).k
    2

    Components read it from their fields on every call (:meth:`of`), so
    assigning ``retriever.k = 2`` needs nothing rebuilt: the prepared store
    depends only on the entries, ``token_counter`` and ``is_active`` (and
    indexes with the scorer's word reader, :func:`~poolsplit_core.poolsplit.make_scorer`:
    a scorer assigned later with another reader is still obeyed, by the
    stateless path).
    """

    pools: Sequence[Pool]
    k: int | None = None
    context: Mapping[str, Any] | None = None
    scorer: Any = default_scorer
    token_counter: Any = default_token_counter
    is_active: Any = default_is_active
    now: datetime | None = None
    filter: Mapping[str, Any] | None = None
    require_filter_keys: tuple[str, ...] | None = None
    max_always_tokens: int | None = None
    strict: bool = True

    def __post_init__(self) -> None:
        for name, check in OPTION_CHECKS.items():
            object.__setattr__(self, name, check(getattr(self, name)))
        object.__setattr__(self, "context", dict(self.context or {}))

    @classmethod
    def of(cls, component: Any) -> Options:
        """The options a component's attributes hold (one per name of :data:`OPTION_NAMES`)."""
        return cls(**{name: getattr(component, name) for name in OPTION_NAMES})

    @property
    def partition_key(self) -> str | None:
        """The key a tenant's query names for sure: the first required filter key.

        ``None`` when the keys are automatic: a query naming a user is then
        routed by the prepared store's view of ``user_id``, built on first use.
        """
        return self.require_filter_keys[0] if self.require_filter_keys else None


# --------------------------------------------------------------------------
# The living store: a PreparedStore and the framework object of each entry
# --------------------------------------------------------------------------


class LiveStore:
    """A :class:`PreparedStore` of entries plus the framework object behind each.

    Every component holds one and writes to it through the core's API
    (``upsert``/``delete``), so a write is seen by the very next query with
    nothing rebuilt. Components that share one (``with_filter``, a memory
    block over a retriever) see each other's writes.

    >>> live = LiveStore([({"id": "a", "content": "alpha"}, "doc-a")])
    >>> live.write([({"id": "b", "content": "beta"}, "doc-b")])
    ['b']
    >>> live.delete(["a"]); [live.object_of(e) for e in live.store.entries]
    ['doc-b']
    """

    def __init__(
        self,
        items: Iterable[tuple[Mapping[str, Any], Any]] = (),
        *,
        scorer: Any = default_scorer,
        token_counter: Any = default_token_counter,
        is_active: Any = default_is_active,
        partition_key: str | None = None,
        key: Callable[[Any], Any] | None = None,
        store: PreparedStore | None = None,
        strict: bool = True,
    ) -> None:
        pairs = list(items)
        self.strict = strict
        if strict:
            refuse_bad([entry for entry, _ in pairs])
        self.key = key
        self.version = 0  # counts writes, so views of the objects know when to re-read
        self._writing = threading.Lock()  # one write at a time: the bookkeeping below
        self._objects: dict[int, Any] = {id(entry): obj for entry, obj in pairs}
        self._keys: dict[Any, int] = {}
        #: The oversized always tiers already warned of: (owner, budget, cost, positions).
        self.warned: set[tuple[str, int, int, tuple[int, ...]]] = set()
        for _, obj in pairs:
            self._count(obj, 1)
        #: How many stored entries carry a ``user_id`` (kept by writes); None for a
        #: store shared with its owner, who writes to it directly: read per call.
        self.users: int | None = None if store is not None else sum(
            carries_user(entry) for entry, _ in pairs)
        self.store = store if store is not None else PreparedStore(
            [entry for entry, _ in pairs], scorer=scorer, token_counter=token_counter,
            is_active=is_active, partition_key=partition_key)

    def user_counts(self) -> tuple[int, int]:
        """How many stored entries carry a ``user_id``, and how many in all."""
        if self.users is None:
            entries = self.store.entries
            return sum(map(carries_user, entries)), len(entries)
        return self.users, len(self.store)

    def __deepcopy__(self, memo: dict[int, Any]) -> LiveStore:
        """An independent store holding the same objects (a lock cannot be copied)."""
        entries = self.store.entries
        pairs = [(dict(entry), self.object_of(entry)) for entry in entries]
        return LiveStore(pairs, scorer=self.store.scorer, token_counter=self.store.token_counter,
                         is_active=self.store.is_active,
                         partition_key=self.store.partition_key, key=self.key,
                         strict=self.strict)

    def object_of(self, entry: Mapping[str, Any]) -> Any:
        """The framework object an entry was mapped from (the entry itself if none)."""
        return self._objects.get(id(entry), entry)

    def objects_of(self, loaded: Sequence[Decision], extra: Sequence[Mapping[str, Any]] = (),
                   extra_objects: Sequence[Any] = ()) -> list[Any]:
        """The framework object of each loaded entry: a candidate's own, else the stored one.

        ``extra`` are the call's candidate entries, mapped from ``extra_objects``.
        """
        stored = self._objects.get
        if not extra:
            return [stored(id(d.entry), d.entry) for d in loaded]
        joined = {id(entry): obj for entry, obj in zip(extra, extra_objects)}
        return [joined.get(id(d.entry)) or stored(id(d.entry), d.entry) for d in loaded]

    def objects(self) -> list[Any]:
        """The framework objects, in store order."""
        return [self.object_of(entry) for entry in self.store.entries]

    def holds_key(self, key: Any) -> bool:
        """Whether a stored object has this duplicate key (``key(obj)`` lists an object's keys)."""
        return self._keys.get(key, 0) > 0

    def write(self, items: Sequence[tuple[Mapping[str, Any], Any]]) -> list[Any]:
        """Upsert each ``(entry, object)`` by the entry's ``id``; the ids, in order.

        Every entry is read first (a bad field refused, naming it) so a
        refused batch writes nothing.
        """
        for entry, _ in items:
            if entry.get("id") is None:
                raise ValueError(f"cannot write an entry without an id: {entry!r}")
        if self.strict:
            refuse_bad([entry for entry, _ in items])
        PreparedStore([entry for entry, _ in items],  # reads (and refuses) before any write
                      scorer=self.store.scorer, token_counter=self.store.token_counter,
                      is_active=self.store.is_active)
        with self._writing:
            return [self._upsert(entry, obj) for entry, obj in items]

    def _upsert(self, entry: Mapping[str, Any], obj: Any) -> Any:
        old = self._stored(entry["id"])
        # the object is known before the store can return its entry (queries run in threads)
        self._objects[id(entry)] = obj
        try:
            self.store.upsert(entry)
        except BaseException:
            del self._objects[id(entry)]
            raise
        if old is not None and old is not entry:
            self._forget(old)
        self._count(obj, 1)
        if self.users is not None:
            self.users += carries_user(entry) - (old is not None and carries_user(old))
        self.version += 1
        return entry["id"]

    def delete(self, ids: Iterable[Any]) -> None:
        """Delete each entry by id; a ``KeyError`` names an unknown id before any delete."""
        listed = list(ids)
        with self._writing:
            unknown = [i for i in listed if self._stored(i) is None]
            if unknown:
                raise KeyError(f"no stored entry has id {unknown[0]!r} (ids {unknown!r}"
                               " unknown); nothing was deleted")
            for entry_id in listed:
                old = self._stored(entry_id)
                if old is not None:
                    self.store.delete(entry_id)
                    self._forget(old)
                    if self.users is not None:
                        self.users -= carries_user(old)
                    self.version += 1

    def _stored(self, entry_id: Any) -> Mapping[str, Any] | None:
        """The stored entry with this id (None for an id no entry, or several, hold)."""
        if not _hashable(entry_id):
            return None
        try:
            return self.store.get(entry_id)
        except ValueError:  # held by several: as unknown, for the callers' messages
            return None

    def _forget(self, entry: Mapping[str, Any]) -> None:
        obj = self._objects.pop(id(entry), None)
        if obj is not None:
            self._count(obj, -1)

    def _count(self, obj: Any, step: int) -> None:
        """Count ``obj``'s duplicate keys in (``step=1``) or out (-1); ``key(obj)`` lists them."""
        if self.key is not None:
            for key in self.key(obj):
                self._keys[key] = self._keys.get(key, 0) + step


def refuse_bad(entries: Sequence[Mapping[str, Any]]) -> None:
    """Refuse entries the strict rules find a problem in: one ValueError naming each.

    The rules are the core's :func:`poolsplit_core.checks.check_entries`
    (``scope`` "always"/"contextual"/absent, a non-empty ``status``, a
    parseable ``created``, a positive int ``token_count``, ``tags`` not a
    bare str, ...); each entry is named by its id (the framework's), else
    its position. A component built with ``strict=False`` skips this.
    """
    from poolsplit_core.checks import refuse_bad_entries

    refuse_bad_entries(entries)


def _hashable(value: Any) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


def warn_unpooled(
    log: logging.Logger, owner: str, entries: Iterable[Mapping[str, Any]], pools: Sequence[Pool],
    *, written: bool = False, all_memory: bool = True,
) -> None:
    """Say out loud what the pools leave out: types no pool takes, types no entry has.

    A type no pool takes: its contextual entries never load (its corrections
    still do, under the ``always`` pool). A pool naming a type no entry has
    (``"tsak"`` for ``"task"``) is checked when a component is built over
    entries, not on a write (``written=True``); an empty pool list loads
    corrections only. ``explain`` says ``no_pool`` per entry; this says it
    once, when entries are read. ``all_memory=False`` says the entries are not
    all the memory (pinned ones, beside candidates found per call): no
    type is then missing for sure.
    """
    listed = list(entries)
    if not pools and listed and not written:
        log.warning("%s: no pool: only corrections (always-scope entries) load", owner)
        return
    unpooled: dict[str, list[Any]] = {}
    seen: set[Any] = set()
    for entry in listed:
        entry_type = entry.get("type", "note")
        if _hashable(entry_type):
            seen.add(entry_type)
        name = repr(entry_type)
        if (entry.get("scope") != "always" and name not in unpooled
                and not any(pool.accepts(entry_type) for pool in pools)):
            unpooled[name] = [entry.get("id")]
    if unpooled:
        named = "; ".join(f"type {name} (e.g. id={ids[0]!r})" for name, ids in unpooled.items())
        log.warning("%s: no pool takes %s -- such entries never load, but their corrections"
                    " do, under the %r pool (pools: %s)", owner, named, ALWAYS_POOL,
                    ", ".join(f"{p.name} {list(p.types) if p.types else 'every type'}"
                              for p in pools))
    if written or not listed or not all_memory:
        return
    for pool in pools:
        for missing in [t for t in pool.types or () if t not in seen]:
            log.warning("%s: pool %r names type %r, which no entry has (types: %s)", owner,
                        pool.name, missing, ", ".join(sorted(map(repr, seen), key=str)))


class Selector:
    """One call's work, shared by every component: filter, run the core, order the hits.

    >>> live = LiveStore([({"id": "fix", "scope": "always"}, None),
    ...                   ({"id": "a", "content": "alpha"}, None)])
    >>> hits = Selector(live, Options([Pool("all", max_tokens=100, max_entries=5)])
    ...                 ).select("alpha?")
    >>> [(d.entry["id"], d.outcome) for d in hits]
    [('fix', 'always'), ('a', 'selected')]

    Tenancy: the call's filter is the component's ``filter`` AND the run's
    bound tenant AND the per-call filter (:func:`narrow`); it keeps only
    entries whose keys equal every item of it, always-scope entries included,
    before pool-split runs. A call whose filter lacks a required key (or
    gives one no value) is refused -- fail closed. The required keys are
    ``require_filter_keys`` when it was given; by default (``None``) they are
    ``("user_id",)`` as soon as one memory -- stored, or a candidate of this
    call -- carries a ``user_id``, so a multi-user store never answers a query
    that names no user, and a memory without ``user_id`` in such a store is
    no user's (a warning says so once). A ``user_id`` in a filter must be a
    non-empty string. The filter goes to the core as ``where=``, which walks
    only the named tenant's entries. Every active correction loads: the core
    runs with ``always_pool=True``, and ``max_always_tokens`` goes to it too.
    """

    def __init__(self, live: LiveStore, options: Options, owner: str = "this retriever") -> None:
        self.live, self.options, self.owner = live, options, owner

    def required_keys(self, extra: Iterable[Mapping[str, Any]] = ()) -> tuple[str, ...]:
        """The keys a call's filter must hold: as given, else ``user_id`` when memories carry one.

        >>> live = LiveStore([({"id": "a", "user_id": "ana"}, None)])
        >>> Selector(live, Options([])).required_keys()
        ('user_id',)
        >>> Selector(live, Options([], require_filter_keys=())).required_keys()
        ()
        """
        keys = self.options.require_filter_keys
        if keys is not None:
            return keys
        users, total = self.live.user_counts()
        if users or any(map(carries_user, extra)):
            if users < total:
                self._warn_unowned(total - users)
            return (USER_KEY,)
        return ()

    def active_filter(
        self, filter: Any = DEFAULT, bound: Mapping[str, Any] | None = None, hint: str = "",
        extra: Iterable[Mapping[str, Any]] = (),
    ) -> dict[str, Any] | None:
        """The call's filter (component AND bound AND per call), or a ValueError: fail closed."""
        active = narrow(self.options.filter, bound, filter, owner=self.owner)
        required = self.required_keys(extra)
        if self.options.require_filter_keys is None and required:
            hint = ("its memories carry 'user_id', so it serves several users; build it with"
                    " require_filter_keys=() to serve one shared store to every caller"
                    + (f"; {hint}" if hint else ""))
        refuse_unbound(active, required, owner=self.owner, hint=hint)
        if active is not None and USER_KEY in active:
            check_user(active[USER_KEY], f"{self.owner}: its filter")
        return active

    def _warn_unowned(self, count: int) -> None:
        """Say once per component that memories without ``user_id`` are no user's."""
        situation = (self.owner, -1, count, ())
        if situation in self.live.warned:
            return
        self.live.warned.add(situation)
        logger.warning(
            "%s: %d memor%s carry no %r while others do: no user's query returns them."
            " Give each a %r, or build the component with require_filter_keys=() to"
            " serve one shared store", self.owner, count, "y" if count == 1 else "ies",
            USER_KEY, USER_KEY)

    def select(
        self,
        message: str,
        extra: Sequence[Mapping[str, Any]] = (),
        *,
        k: int | None = None,
        filter: Any = DEFAULT,
        bound: Mapping[str, Any] | None = None,
        **overrides: Any,
    ) -> list[Decision]:
        """Run pool-split for one query over the store plus ``extra``: loaded, in adapter order.

        ``overrides`` (``project``, ``tags``) replace the default context for
        this call; ``k`` replaces the default cap.
        """
        refuse_unknown("Selector.select()", overrides, CONTEXT_KWARGS)
        options = self.options
        where = self.active_filter(filter, bound, extra=extra)
        decided = self.live.store.decide(
            options.pools, build_context(options.context, message, **overrides),
            scorer=options.scorer, now=options.now, extra=extra, where=where,
            max_always_tokens=options.max_always_tokens, always_pool=True)
        self._warn_always(decided)
        return assemble(decided, options.k if k is None else check_k(k))

    def explain(
        self,
        message: str,
        extra: Sequence[Mapping[str, Any]] = (),
        *,
        filter: Any = DEFAULT,
        bound: Mapping[str, Any] | None = None,
        **overrides: Any,
    ) -> Explanation:
        """The core's records and ledgers for the call :meth:`select` would make.

        Same context and filter (and the same refusals); ``k`` does not apply,
        and an always tier above ``max_always_tokens`` is reported, not raised.
        Entries the filter rejects get no record.
        """
        refuse_unknown("Selector.explain()", overrides, CONTEXT_KWARGS)
        options = self.options
        where = self.active_filter(filter, bound, extra=extra)
        return self.live.store.explain_pools(
            options.pools, build_context(options.context, message, **overrides),
            scorer=options.scorer, now=options.now, extra=extra, where=where,
            always_pool=True)

    def _warn_always(self, decided: Mapping[str, Sequence[Decision]]) -> None:
        if self.options.max_always_tokens is not None:
            return  # the core raised if the tier was over its ceiling
        always = [d for picked in decided.values() for d in picked if d.outcome == "always"]
        total = sum(d.cost or 0 for d in always)
        budget = sum(pool.max_tokens for pool in self.options.pools)
        if total > budget:
            # Once per tier and budget: the same tier on every turn is one situation.
            # A write or another tenant's tier is another.
            seen = self.live.warned
            situation = (self.owner, budget, total, tuple(d.index for d in always))
            if situation in seen:
                return
            if len(seen) >= 256:  # tenants are the users': keep it small
                seen.clear()
            seen.add(situation)
            logger.warning(
                "always-scope entries cost %d tokens, more than all pools' max_tokens together"
                " (%d): %s; set max_always_tokens to make this an error", total, budget,
                ", ".join(str(d.entry.get("id", f"index {d.index}")) for d in always),
            )


def check_filter(filter: Any) -> dict[str, Any] | None:
    """Validate a filter: None, or a mapping with str keys (copied)."""
    if filter is None:
        return None
    if not isinstance(filter, Mapping):
        raise TypeError(f"filter must be a dict or None, got {type(filter).__name__}")
    for key in filter:
        if not isinstance(key, str):
            raise TypeError(f"filter keys must be str, got {key!r}")
    return dict(filter)


def check_required_keys(keys: Any) -> tuple[str, ...] | None:
    """Validate ``require_filter_keys``: None (automatic), or an iterable of str.

    ``None``, the default, requires ``user_id`` exactly when the component's
    memories carry one; ``()`` given explicitly states a shared store; a bare
    str is one key.
    """
    if keys is None:
        return None
    if isinstance(keys, str):
        return (keys,)
    out = tuple(keys)
    for key in out:
        if not isinstance(key, str):
            raise TypeError(f"require_filter_keys must hold str, got {key!r}")
    return out


def check_strict(value: Any) -> bool:
    """Validate ``strict``: a bool."""
    if not isinstance(value, bool):
        raise TypeError(f"strict must be True or False, got {value!r}")
    return value


def check_max_always_tokens(value: Any) -> int | None:
    """Validate ``max_always_tokens``: None, or an int >= 0."""
    return _optional_count("max_always_tokens", value)


#: The options every adapter component shares, and how each is checked: one
#: pydantic ``field_validator(*OPTION_CHECKS)`` per component calls :func:`check_option`.
OPTION_CHECKS: dict[str, Callable[[Any], Any]] = {
    "pools": check_pools_arg,
    "k": check_k,
    "filter": check_filter,
    "require_filter_keys": check_required_keys,
    "max_always_tokens": check_max_always_tokens,
    "strict": check_strict,
}


def check_option(name: str | None, value: Any) -> Any:
    """Check the shared option ``name`` (a pydantic validator's ``info.field_name``)."""
    return OPTION_CHECKS[name or ""](value)


# --------------------------------------------------------------------------
# Unknown keyword arguments: refused, naming the accepted ones
# --------------------------------------------------------------------------

#: The per-call context overrides every component's calls take.
CONTEXT_KWARGS = ("project", "tags")


def refuse_unknown(owner: str, given: Iterable[Any], accepted: Iterable[str]) -> None:
    """Raise a TypeError naming the keyword arguments of ``given`` not in ``accepted``.

    A misspelt argument (``top_n=``, ``tagz=``) would otherwise be dropped
    silently, and the caller would never learn that it did nothing.

    >>> refuse_unknown("Block.get()", {"tags": [], "tagz": []}, ["project", "tags"])
    Traceback (most recent call last):
    ...
    TypeError: Block.get() got unexpected keyword argument(s) ['tagz']; it accepts project=, tags=

    Args:
        owner: the call, as the user wrote it, e.g. ``"PoolSplitRetriever.invoke()"``.
        given: the names of the keyword arguments received.
        accepted: every name the call accepts, in the order to list them.
    """
    allowed = list(accepted)
    unknown = sorted(str(name) for name in given if name not in allowed)
    if unknown:
        raise TypeError(
            f"{owner} got unexpected keyword argument(s) {unknown};"
            f" it accepts {', '.join(f'{name}=' for name in allowed)}"
        )


def model_arguments(model: Any) -> list[str]:
    """The keyword arguments a pydantic model's constructor accepts: its fields (by alias)."""
    return [field.alias or name for name, field in model.model_fields.items()]


def refuse_unknown_fields(model: Any, data: Any) -> Any:
    """A pydantic ``model_validator(mode="before")`` body: refuse keys that are not fields."""
    if isinstance(data, Mapping):
        refuse_unknown(f"{model.__name__}()", data, model_arguments(model))
    return data


# --------------------------------------------------------------------------
# Serialisation: pools as plain data, callables refused by name
# --------------------------------------------------------------------------

#: The hooks each component takes, and their defaults. A default serialises
#: as "the default" (left out, or null); a custom callable cannot serialise.
CALLABLE_DEFAULTS: dict[str, Callable[..., Any]] = {
    "scorer": default_scorer,
    "token_counter": default_token_counter,
    "is_active": default_is_active,
}


class NotSerializableError(TypeError, ValueError):
    """A component holds something that is code or a live object, not data.

    A ``TypeError``, as ``json.dumps`` raises for a value it cannot write, and a
    ``ValueError``, as pydantic's serialisation errors are.
    """


def pools_to_data(pools: Iterable[Pool]) -> list[dict[str, Any]]:
    """The pools as JSON-ready dicts (``types``: a list, or None for every type).

    >>> pools_to_data([Pool("work", 800, 6, ("task",))])
    [{'name': 'work', 'max_tokens': 800, 'max_entries': 6, 'types': ['task']}]
    """
    return [pool_to_data(pool) for pool in pools]


def default_hook(name: str, value: Any) -> Any:
    """``value``, or the default hook for ``None`` (how a serialised default reads back).

    A ``scorer`` given as a mapping is a configured scorer's options, as
    serialised: ``{"words": "unicode"}`` reads back as ``make_scorer(words="unicode")``.
    """
    if value is None:
        return CALLABLE_DEFAULTS[name]
    return scorer_from_data(value) if name == "scorer" else value


def scorer_from_data(value: Any) -> Any:
    """``value``, or the configured scorer a mapping of options describes."""
    if isinstance(value, Mapping):
        return make_scorer(**{str(key): option for key, option in value.items()})
    return value


def scorer_data(values: Mapping[str, Any], skip: Iterable[str] = ()) -> dict[str, Any]:
    """``{"scorer": options}`` when the scorer is a configured one and not skipped, else ``{}``."""
    scorer = values.get("scorer")
    if "scorer" in set(skip) or not isinstance(scorer, ConfiguredScorer):
        return {}
    return {"scorer": scorer.to_data()}


def refuse_unserialisable(
    owner: str,
    values: Mapping[str, Any],
    *,
    live: Iterable[str] = (),
    skip: Iterable[str] = (),
    hint: str,
) -> None:
    """Refuse to serialise a component holding code: a NotSerializableError naming the field.

    A hook (``scorer``, ``token_counter``, ``is_active``) serialises only as
    its default, or for the scorer as a configured scorer's named options
    (:func:`~poolsplit_core.poolsplit.make_scorer`); a ``live`` field (a base
    retriever, a live store) only as None.

    Args:
        owner: the component's class name.
        values: the component's field values by name.
        live: fields that must be None (or absent) to serialise.
        skip: fields the caller excluded from the output.
        hint: how to serialise anyway, with ``{name}`` for the field's name.
    """
    skipped = set(skip)
    for name, default in CALLABLE_DEFAULTS.items():
        value = values.get(name, default)
        if name not in skipped and isinstance(value, ConfiguredScorer):
            try:
                value.to_data()  # named options serialise as data
            except TypeError as exc:
                raise NotSerializableError(
                    f"{owner} cannot be serialised: {name} is {value!r}: {exc}; "
                    + hint.format(name=name)
                ) from None
            continue
        if name not in skipped and value is not default:
            raise NotSerializableError(
                f"{owner} cannot be serialised: {name} is a custom callable"
                f" ({_callable_name(value)}), which is code, not data; "
                + hint.format(name=name)
            )
    for name in live:
        value = values.get(name)
        if name not in skipped and value is not None:
            what = (f"is a callable ({_callable_name(value)}), which is code" if callable(value)
                    else f"holds a live object ({type(value).__name__})")
            raise NotSerializableError(
                f"{owner} cannot be serialised: {name} {what}, not data; "
                + hint.format(name=name)
            )


def excluded(exclude: Any) -> set[str]:
    """The top-level field names of a pydantic-style ``exclude`` argument."""
    if exclude is None:
        return set()
    return {str(name) for name in exclude}


def _callable_name(value: Any) -> str:
    name = getattr(value, "__qualname__", None) or getattr(value, "__name__", None)
    return str(name) if name else type(value).__name__



# ==========================================================================
# LangGraph store items -> entries (used by poolsplit_integrations.langgraph)
# ==========================================================================
#
# A LangGraph ``BaseStore`` item is ``(namespace, key, value, created_at,
# updated_at)`` with ``value`` a JSON mapping. langmem writes two shapes:
# ``{"content": "..."}`` and ``{"kind": "Profile", "content": {...}}``.
#
# ==================  ======================================================
# entry key            comes from
# ==================  ======================================================
# ``id``               the item's key (in a deeper namespace than the one
#                      read: the tuple of the extra labels, then the key)
# ``content``          ``value["content"]`` when a str; a mapping or list
#                      there (langmem's ``kind`` shape) or no ``content`` at
#                      all: the JSON text of it (of the whole value)
# ``type``             ``value["type"]``, else langmem's ``value["kind"]``
# ``created``          ``value["created"]`` when present, else the item's
#                      ``created_at`` -- which ``InMemoryStore`` and
#                      ``SqliteStore`` reset on every put of the key
# ``similarity``       a search score, when the store gave one
# any other key        copied from the value (``scope``, ``tags``, ...)
# ==================  ======================================================


def item_to_entry(
    namespace: Sequence[str],
    key: str,
    value: Any,
    *,
    created_at: datetime | None = None,
    score: float | None = None,
    read_from: Sequence[str] | None = None,
) -> dict[str, Any]:
    """Map one store item to a new entry dict; ``value`` is copied, never changed.

    >>> item_to_entry(("memories", "ana"), "m1", {"content": "Use pg-2."})
    {'content': 'Use pg-2.', 'id': 'm1'}
    >>> item_to_entry(("memories", "ana"), "p", {"kind": "Profile", "content": {"name": "Ana"}})
    {'kind': 'Profile', 'content': '{"name": "Ana"}', 'id': 'p', 'type': 'Profile'}

    ``read_from`` is the namespace (prefix) the item was read under; an item
    in a deeper namespace gets the id ``(*extra_labels, key)``, so two equal
    keys in sibling namespaces stay two entries. A value that is not a
    mapping raises a TypeError naming the namespace and key.
    """
    if not isinstance(value, Mapping):
        raise TypeError(
            f"store item {tuple(namespace)!r} key {key!r}: value must be a mapping (dict),"
            f" got {type(value).__name__}"
        )
    entry = dict(value)
    content = entry.get("content")
    if "content" not in entry:
        entry["content"] = json.dumps(dict(value), ensure_ascii=False, default=str)
    elif not isinstance(content, str):
        entry["content"] = json.dumps(content, ensure_ascii=False, default=str)
    entry["id"] = item_entry_id(namespace, key, read_from)
    kind = entry.get("kind")
    if entry.get("type") is None and isinstance(kind, str) and kind:
        entry["type"] = kind
    if entry.get("created") is None and created_at is not None:
        entry["created"] = created_at
    if score is not None:
        entry["similarity"] = score
    return entry


def item_entry_id(
    namespace: Sequence[str], key: str, read_from: Sequence[str] | None = None
) -> Any:
    """The entry id of an item: its key, or ``(*labels below read_from, key)``.

    >>> item_entry_id(("m", "ana"), "k1", ("m", "ana")), item_entry_id(("m", "ana"), "k1", ("m",))
    ('k1', ('ana', 'k1'))
    """
    below = tuple(namespace)[len(read_from):] if read_from is not None else ()
    return (*below, key) if below else key
