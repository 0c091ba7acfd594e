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

The keys are the core's (:data:`ENTRY_KEYS`, one tuple for the command line and
the adapters). The machinery every component shares lives beside this module,
one concern each: the options (:mod:`~poolsplit_integrations._options`),
tenant filters (:mod:`~poolsplit_integrations._tenancy`), the living store
(:mod:`~poolsplit_integrations._live`), the call itself
(:mod:`~poolsplit_integrations._select`) and serialisation
(:mod:`~poolsplit_integrations._serialise`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from poolsplit_core._plain import ENTRY_KEYS
from poolsplit_core.poolsplit import Decision

__all__ = [
    "BOOKKEEPING_KEYS", "ENTRY_KEYS", "RESULT_KEYS", "item_entry_id", "item_to_entry",
    "rank_similarities", "readable_text", "result_metadata", "to_entry",
]

#: Metadata keys poolsplit adds to the documents it returns.
RESULT_KEYS = ("poolsplit_id", "poolsplit_pool", "poolsplit_score", "poolsplit_always",
               "poolsplit_similarity")
#: The metadata keys the core scores and keeps books with (:data:`ENTRY_KEYS` without
#: ``id`` and ``content``, which are not metadata), then :data:`RESULT_KEYS`: what a
#: returned node hides from the prompt and the embedding, keeping it in its metadata.
BOOKKEEPING_KEYS = tuple(key for key in ENTRY_KEYS if key not in ("id", "content")) + RESULT_KEYS


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
    """A copy of ``metadata`` with the five ``poolsplit_*`` keys of one loaded entry added.

    ``poolsplit_id`` repeats the entry's id (``Document.id``, the node id, the
    store key) in the metadata, where tracers that read only a document's
    content and metadata (OpenInference's LangChain instrumentation) see it.

    >>> from poolsplit_core.poolsplit import Decision
    >>> loaded = Decision({"id": "t1", "similarity": 0.83}, 0, "selected", "work", score=4.5)
    >>> result_metadata({"type": "task"}, loaded)  # doctest: +NORMALIZE_WHITESPACE
    {'type': 'task', 'poolsplit_id': 't1', 'poolsplit_pool': 'work', 'poolsplit_score': 4.5,
     'poolsplit_always': False, 'poolsplit_similarity': 0.83}
    """
    out = dict(metadata or {})
    out["poolsplit_id"] = loaded.entry.get("id")
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
#                      all: the readable text of it (of the whole value),
#                      :func:`readable_text` -- what words are matched,
#                      tokens counted and a returned Document's
#                      ``page_content``: one rendering
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
    {'kind': 'Profile', 'content': 'name: Ana', 'id': 'p', 'type': 'Profile'}

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
        entry["content"] = readable_text(value)
    elif not isinstance(content, str):
        entry["content"] = readable_text(content)
    entry["id"] = item_entry_id(namespace, key, read_from)
    kind = entry.get("kind")
    if entry.get("type") is None and isinstance(kind, str) and kind:
        entry["type"] = kind
    if entry.get("created") is None and created_at is not None:
        entry["created"] = created_at
    if score is not None:
        entry["similarity"] = score
    return entry


def readable_text(value: Any) -> str:
    """A store value as text a person (and an LLM) reads: ``key: value`` lines.

    >>> print(readable_text({"timezone": "CET", "name": "Ana"}))
    name: Ana
    timezone: CET
    >>> print(readable_text({"name": "Ana", "langs": ["pt", "en"], "home": {"city": "Porto"}}))
    home:
      city: Porto
    langs:
      - pt
      - en
    name: Ana

    Keys are sorted (as text), so the rendering is the same whichever order
    a store gives them back in (PostgreSQL's ``jsonb`` keeps none); a nested
    mapping or list is indented under its key, a list item is ``- item``. A
    str is itself; ``None``, booleans and an empty mapping or list are their
    JSON (``null``, ``true``, ``{}``); anything else is ``str()`` of it.
    """
    return "\n".join(_readable_lines(value, ""))


def _readable_lines(value: Any, indent: str) -> list[str]:
    """The lines of :func:`readable_text`, each prefixed by ``indent``."""
    if isinstance(value, Mapping) and value:
        lines = []
        for key in sorted(value, key=str):
            lines.extend(_readable_item(f"{indent}{key}:", value[key], indent))
        return lines
    if isinstance(value, (list, tuple)) and value:
        lines = []
        for item in value:
            lines.extend(_readable_item(f"{indent}-", item, indent))
        return lines
    return [indent + _scalar_text(value)]


def _readable_item(label: str, value: Any, indent: str) -> list[str]:
    """``label value`` on one line, or ``label`` above the nested lines of a container."""
    if isinstance(value, (Mapping, list, tuple)) and value:
        return [label, *_readable_lines(value, indent + "  ")]
    return [f"{label} {_scalar_text(value)}"]


def _scalar_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if value is None or isinstance(value, (bool, Mapping, list, tuple)):
        return json.dumps(value if not isinstance(value, tuple) else list(value))
    return str(value)


def item_entry_id(
    namespace: Sequence[str], key: str, read_from: Sequence[str] | None = None
) -> Any:
    """The entry id of an item: its key, or ``(*labels below read_from, key)``.

    >>> item_entry_id(("m", "ana"), "k1", ("m", "ana")), item_entry_id(("m", "ana"), "k1", ("m",))
    ('k1', ('ana', 'k1'))
    """
    below = tuple(namespace)[len(read_from):] if read_from is not None else ()
    return (*below, key) if below else key
