"""LangChain adapter: pool-split retrieval as a retriever and as a compressor.

Two components, one code path:

- :class:`PoolSplitRetriever` -- a ``BaseRetriever`` over a memory store of
  ``Document`` objects (optionally merged with a candidate retriever's
  results); it goes anywhere a retriever goes: LCEL chains, ``batch``,
  ``ainvoke``, ``as_tool()``, tracing.
- :class:`PoolSplitCompressor` -- a ``BaseDocumentCompressor`` applying the
  same pool-split to documents another retriever found, with ``pinned``
  corrections that always join the candidates.

Both map each ``Document`` to an entry dict through
:mod:`poolsplit_integrations._entries` (the mapping table lives there and in
the user guide's Entries page), let the core decide, and return new ``Document`` objects with
``poolsplit_pool``, ``poolsplit_score``, ``poolsplit_always`` and ``poolsplit_similarity``
(the candidate's retriever score, or its rank when the retriever gave none) added to a
copy of the metadata. Input documents are never modified.

Each component holds one prepared store (:class:`~poolsplit_integrations._live.LiveStore`)
and writes to it through the core's API: ``add_documents``/``delete`` are
seen by the next call, with nothing rebuilt. Tenancy (``filter``,
``require_filter_keys``: filters only narrow) and the always-tier ceiling
(``max_always_tokens``) are the Selector's; the adapters only pass them on.
Documents whose type no pool takes are named in a warning on this module's
logger when they are written.

Both refuse unknown arguments -- at construction and per call -- naming the
accepted ones. Both serialise what is data: ``model_dump()`` and
``model_dump_json()`` write the pools as plain dicts and the documents as
LangChain writes them, and ``model_validate``/``model_validate_json`` rebuild
an equal component. What is code (a custom ``scorer``, ``token_counter`` or
``is_active``) or a live object (``base_retriever``) cannot be written as
JSON: ``model_dump_json()`` refuses it by name (a ``TypeError``); exclude the
field and pass it again when rebuilding. A configured scorer
(``make_scorer(words="unicode")``) is data: it is written as its options.

Needs the ``langchain`` extra: ``pip install 'poolsplit[langchain]'``.
"""

# The imports below must follow the require() call, which turns a missing
# langchain-core into an ImportError naming the extra to install.
# ruff: noqa: E402

from __future__ import annotations

from poolsplit_integrations._extras import require

require("langchain_core", "langchain")

import logging
import numbers
import uuid
import warnings
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from typing import Any, ClassVar, NoReturn, cast

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
    Callbacks,
)
from langchain_core.documents import Document
from langchain_core.documents.compressor import BaseDocumentCompressor
from langchain_core.embeddings import Embeddings
from langchain_core.retrievers import BaseRetriever, LangSmithRetrieverParams
from langchain_core.runnables import RunnableConfig, ensure_config
from langchain_core.vectorstores import InMemoryVectorStore, VectorStore
from pydantic import (
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationInfo,
    field_serializer,
    field_validator,
    model_validator,
)
from typing_extensions import Self

from poolsplit_core import tracing
from poolsplit_core.poolsplit import Decision, Explanation, Pool
from poolsplit_integrations._candidates import (
    DEFAULT_TYPE,
    Reading,
    VectorSource,
    best_first,
    check_search_size,
    explain,
    select,
    takes_untyped,
)
from poolsplit_integrations._entries import result_metadata, to_entry
from poolsplit_integrations._live import LiveStore
from poolsplit_integrations._models import OptionsModel
from poolsplit_integrations._options import OPTION_CHECKS, Options, model_arguments, refuse_unknown
from poolsplit_integrations._select import Selector, check_query, warn_unpooled
from poolsplit_integrations._serialise import excluded, refuse_unserialisable
from poolsplit_integrations._tenancy import DEFAULT, USER_KEY, config_filter, refuse_unbound

#: Warnings about documents that cannot load (a type no pool takes).
logger = logging.getLogger(__name__)

__all__ = ["PoolSplitCompressor", "PoolSplitRetriever", "VectorStoreSource"]

# Keyword arguments ``PoolSplitRetriever.invoke(query, **kwargs)`` accepts.
_CALL_KWARGS = ("project", "tags", "k", "filter")
# ``explain`` takes the same context and filter; ``k`` does not apply to it.
_EXPLAIN_KWARGS = ("project", "tags", "filter")
# LangChain's invoke() reads ``verbose`` itself and then forwards it to us.
_FRAMEWORK_KWARGS = frozenset({"verbose"})


# --------------------------------------------------------------------------
# Private helpers: Documents in, Documents out (framework-side only)
# --------------------------------------------------------------------------


def _check_documents(value: Any, field: str) -> Any:
    """Refuse anything but a list of ``Document`` (pydantic would coerce dicts).

    A dict is taken only in the form ``Document.model_dump()`` writes (its
    ``"type"`` is ``"Document"``), so a dumped component validates back.
    """
    if isinstance(value, (str, bytes, Mapping, Document)) or not isinstance(value, Sequence):
        raise TypeError(f"{field} must be a list of Document, got {type(value).__name__}")
    documents = []
    for i, doc in enumerate(value):
        if isinstance(doc, Mapping) and doc.get("type") == "Document":
            doc = Document.model_validate(doc)
        if not isinstance(doc, Document):
            raise TypeError(f"{field}[{i}] must be a Document, got {type(doc).__name__}")
        documents.append(doc)
    return documents


def _freeze(value: Any) -> Hashable:
    """A hashable stand-in for ``value`` so that equal metadata gives equal keys."""
    if isinstance(value, Mapping):
        items = sorted(((repr(k), _freeze(v)) for k, v in value.items()), key=lambda kv: kv[0])
        return ("map", tuple(items))
    if isinstance(value, (list, tuple)):
        return ("seq", tuple(_freeze(v) for v in value))
    if isinstance(value, (set, frozenset)):
        return ("set", tuple(sorted(repr(v) for v in value)))
    try:
        hash(value)
    except TypeError:
        return ("repr", repr(value))
    frozen: Hashable = value
    return frozen


def _doc_key(doc: Document) -> Hashable:
    """The duplicate key of a candidate: its ``Document.id``, else content and metadata.

    Never ``metadata["id"]``: that is the application's data, not the entry id.
    """
    if doc.id is not None:
        return ("id", doc.id)
    return _content_key(doc)


def _content_key(doc: Document) -> Hashable:
    return ("content", doc.page_content, _freeze(doc.metadata))


def _new_ids(n: int) -> list[str]:
    """``n`` new uuid4 ids, sorted: ties among the documents they name still break in order.

    (The core breaks a tie by ``id``, then by position.)
    """
    return sorted(str(uuid.uuid4()) for _ in range(n))


class _DocKeys:
    """The duplicate keys of a stored Document (``LiveStore(key=...)``), and the ids it generated.

    A stored Document is found by its id. One given without an id got a
    generated one (:meth:`identify`); it is found by its content and metadata
    too, as before it had an id, so a candidate without an id equal to it is
    still kept once (:func:`_doc_key`).
    """

    def __init__(self) -> None:
        self.generated: set[str] = set()

    def __call__(self, doc: Document) -> tuple[Hashable, ...]:
        if doc.id in self.generated:
            return ("id", doc.id), _content_key(doc)
        return (_doc_key(doc),)

    def identify(self, documents: Sequence[Document],
                 ids: Sequence[str | None] | None = None) -> list[Document]:
        """``documents``, each with its id: ``ids[i]``, else ``Document.id``, else a new uuid4.

        A document whose id changes is a copy (the input is never changed);
        the others are returned as they are.
        """
        given = [(ids[i] if ids is not None else None) or doc.id
                 for i, doc in enumerate(documents)]
        new = iter(_new_ids(sum(not doc_id for doc_id in given)))
        out = []
        for doc, doc_id in zip(documents, given):
            if not doc_id:
                doc_id = next(new)
                self.generated.add(doc_id)
            out.append(doc if doc_id == doc.id else doc.model_copy(update={"id": doc_id}))
        return out


#: Where LangChain retrievers and compressors put a candidate's score in metadata.
_SCORE_KEYS = ("score", "relevance_score", "similarity_score")


def _similarity(doc: Document) -> float | None:
    """A candidate's retriever score (the first number of :data:`_SCORE_KEYS`), if any."""
    for key in _SCORE_KEYS:
        score = doc.metadata.get(key)
        if isinstance(score, numbers.Real) and not isinstance(score, bool):
            return float(score)
    return None


def _call_overrides(
    kwargs: Mapping[str, Any], owner: str, method: str = "invoke",
    accepted: Sequence[str] = _CALL_KWARGS,
) -> dict[str, Any]:
    """The per-call ``project``/``tags``/``k``/``filter`` overrides; anything else is a typo."""
    if method == "explain" and "k" in kwargs:
        raise TypeError(
            f"{owner}.explain() does not take k: it reports the core's decisions, and k"
            " only cuts invoke()'s contextual documents afterwards (each pool keeps its"
            " first ones); explain without k and read the loaded records in order"
        )
    refuse_unknown(f"{owner}.{method}()", set(kwargs) - _FRAMEWORK_KWARGS, accepted)
    return {key: kwargs[key] for key in accepted if key in kwargs}


def _to_document(doc: Document, loaded: Decision) -> Document:
    """A copy of ``doc`` (its class, id and text) whose metadata adds the ``poolsplit_*`` keys.

    A candidate that came without an id gets one: its content and metadata's
    uuid5, the same on every call (a trace can follow it). ``doc`` is
    untouched: the copy gets a new metadata dict. (Copying reads the stored
    Document once; building a new one validates every field again.)
    """
    update: dict[str, Any] = {"metadata": result_metadata(doc.metadata, loaded)}
    if doc.id is None:  # a candidate without one: named by what makes it one (a trace's key)
        entry_id = loaded.entry.get("id")
        update["id"] = str(entry_id) if entry_id is not None else str(uuid.uuid5(
            _CANDIDATE_IDS, repr((doc.page_content, sorted(doc.metadata.items(), key=repr)))))
    return doc.model_copy(update=update)


#: The namespace of the ids given to candidate Documents that came without one.
_CANDIDATE_IDS = uuid.UUID("6f1c8a52-43a1-4d1e-9f5e-2b8d7c0e4a11")


class _DocumentsView(Sequence[Document]):
    """The stored Documents, read-only and always current (writes go through the retriever).

    ``append`` and its kin raise instead of being silently ignored: the
    store is prepared, so a list edited in place would never be seen.
    """

    def __init__(self, live: LiveStore) -> None:
        self._live = live
        self._version = -1
        self._cache: list[Document] = []

    def _current(self) -> list[Document]:
        version = self._live.version  # read first: a write landing meanwhile re-reads next time
        if self._version != version:
            self._cache, self._version = self._live.objects(), version
        return self._cache

    def __getitem__(self, i: Any) -> Any:
        return self._current()[i]

    def __len__(self) -> int:
        return len(self._live.store)

    def __iter__(self) -> Iterator[Document]:
        return iter(self._current())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence) and not isinstance(other, (str, bytes)):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return repr(tuple(self._current()))

    def __add__(self, other: Any) -> list[Document]:
        return [*self, *other]

    def _read_only(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise TypeError(
            "documents is read-only: write with add_documents(documents, ids=...) and"
            " delete(ids), which update the prepared store in place"
        )

    append = extend = insert = remove = pop = clear = __setitem__ = __delitem__ = _read_only
    __iadd__ = _read_only


def _live_store(documents: Sequence[Document], options: Options,
                what: str = "documents") -> LiveStore:
    """The prepared store of ``documents`` (partitioned by the first required filter key).

    A Document without an id is stored as a copy with a new uuid4 id, which
    the results carry and ``delete`` takes. Strict, two Documents with one
    id are refused, naming both positions in ``what``; with ``strict=False``
    both are kept (and ``delete`` of that id removes both).
    """
    keys = _DocKeys()
    return LiveStore(
        [(to_entry(doc.page_content, doc.metadata, doc.id), doc)
         for doc in keys.identify(documents)],
        scorer=options.scorer, token_counter=options.token_counter, is_active=options.is_active,
        partition_key=options.partition_key, key=keys, strict=options.strict, what=what,
    )


def _doc_entry(doc: Document, similarity: float | None) -> dict[str, Any]:
    """A candidate Document's entry, through the one mapping."""
    return to_entry(doc.page_content, doc.metadata, doc.id, similarity=similarity)


#: How a candidate Document joins the stored ones (the shared merge,
#: :func:`~poolsplit_integrations._candidates.merge`): duplicates, of the store or of
#: each other, by :func:`_doc_key`, kept once; its ``metadata["score"]`` (or
#: ``relevance_score``, ``similarity_score``) is the entry key ``similarity``, and when
#: no candidate has one (``vectorstore.as_retriever()``), their order is: the ``i``-th
#: of ``n`` gets ``1 - i/n``.
_CANDIDATES: Reading[Document] = Reading(key=_doc_key, score=_similarity, entry=_doc_entry)


def _pool_split(
    selector: Selector,
    query: str,
    candidates: Sequence[Document] = (),
    overrides: Mapping[str, Any] | None = None,
    bound: Mapping[str, Any] | None = None,
) -> list[Document]:
    """The one code path of both components: merge, select, map back to Documents.

    ``candidates`` join the stored documents (:data:`_CANDIDATES`). The
    Selector filters (tenant), orders, caps, and checks the always tier.
    """
    loaded = select(selector, query, candidates, _CANDIDATES, bound=bound, **(overrides or {}))
    return [_to_document(doc, d) for doc, d in loaded]


#: The custom event a retriever's run gets: the read's ledger (tracing.ledger_data).
LEDGER_EVENT = "poolsplit_ledger"


def _send_ledger(run_manager: CallbackManagerForRetrieverRun
                 | AsyncCallbackManagerForRetrieverRun, selector: Selector, query: str,
                 candidates: Sequence[Document], overrides: Mapping[str, Any],
                 bound: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The read's ledger for the run's handlers (LangSmith's tracer among them), or None.

    Computed only when one of the run's handlers takes custom events: it costs
    an ``explain``.
    """
    if all(getattr(handler, "ignore_custom_event", False) for handler in run_manager.handlers):
        return None
    context = {key: value for key, value in overrides.items() if key != "k"}
    return tracing.ledger_data(explain(selector, query, candidates, _CANDIDATES, bound=bound,
                                       **context))


class VectorStoreSource(VectorSource[Document]):
    """Where a :class:`PoolSplitRetriever` reads memory that lives in a LangChain ``VectorStore``.

    Built by :meth:`PoolSplitRetriever.from_vector_store`; on every query it
    reads:

    - **the always tier by metadata filter**: every document with
      ``scope == "always"`` and the tenant's keys. An ``InMemoryVectorStore``
      is read directly (a filter over its documents); any other store is
      asked for ``always_limit`` documents with the filter
      ``{"scope": "always", **tenant}``, and a store holding more is refused
      (a correction is never dropped silently);
    - **per pool, a filtered search** (``similarity_search_with_relevance_scores``,
      ``search_k`` documents; the cosine similarity of ``InMemoryVectorStore``,
      which has no relevance function): ``type`` in the pool's types and the
      tenant; the score becomes the entry key ``similarity``.

    Filters are a callable for ``InMemoryVectorStore`` and the common dict
    form (``{"type": {"$in": [...]}, "user_id": "ana"}``, as ``PGVector``,
    Chroma and others read it) for every other store; a store whose search
    takes no filter is refused by name. A document without a ``type`` is a
    ``"note"``, as for the core: a pool whose types name ``"note"`` also
    searches for those (``{"type": {"$exists": False}, **tenant}``; a store
    whose filter cannot say so is searched without the type filter, the same
    ``search_k``, and its untyped hits kept) and keeps the best ``search_k``
    of both searches. The plan is the one both
    adapters share (:class:`~poolsplit_integrations._candidates.VectorSource`);
    this class holds LangChain's calls.
    """

    def __init__(self, vector_store: Any, *, search_k: int | None = None,
                 always_limit: int = 1000) -> None:
        if not isinstance(vector_store, VectorStore):
            raise TypeError(f"vector_store must be a LangChain VectorStore,"
                            f" got {type(vector_store).__name__}")
        check_search_size("search_k", search_k)
        if always_limit is not None and (isinstance(always_limit, bool)
                                         or not isinstance(always_limit, int) or always_limit < 1):
            raise ValueError(f"always_limit must be an int >= 1, got {always_limit!r}")
        if vector_store.embeddings is None:
            raise ValueError(f"{type(vector_store).__name__} has no embeddings to search with")
        self.vector_store, self.search_k, self.always_limit = vector_store, search_k, always_limit

    @property
    def search_size(self) -> int | None:
        """``search_k``, the per-pool search size (None: 3 x the pool's entry cap)."""
        return self.search_k

    def _prepare(self, query: str, tenant: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        self._check_dimension(query)
        return query, tenant

    def _always(self, ready: tuple[str, dict[str, Any]]) -> list[Document]:
        """The tenant's always-scope documents, without a score."""
        return [self._unscored(doc) for doc in self._always_scoped(ready[1])]

    def _search(self, ready: tuple[str, dict[str, Any]], pool: Pool) -> list[Document]:
        """One pool's hits, each score in ``metadata["score"]``."""
        return [Document(id=doc.id, page_content=self._text(doc),
                         metadata={**doc.metadata, "score": score})
                for doc, score in self._hits(*ready, pool)]

    def _check_dimension(self, query: str) -> None:
        store = self.vector_store
        held = getattr(store, "_embedding_length", None)
        if held is None and isinstance(store, InMemoryVectorStore) and store.store:
            held = len(next(iter(store.store.values()))["vector"])
        if held is None:
            return  # the store's own error, if any, is named by _run
        given = len(cast(Embeddings, store.embeddings).embed_query(query))
        if given != held:
            raise ValueError(
                f"embedding dimension mismatch: the embeddings give {given}-dimensional"
                f" vectors, {self.name} holds {held}-dimensional ones")

    def _text(self, doc: Document) -> str:
        if not doc.page_content:
            raise ValueError(f"{self.name} returned document {doc.id!r} without text"
                             " (page_content is empty): memory needs the text it stores")
        return doc.page_content

    def _unscored(self, doc: Document) -> Document:
        metadata = {k: v for k, v in doc.metadata.items() if k not in _SCORE_KEYS}
        return Document(id=doc.id, page_content=self._text(doc), metadata=metadata)

    def _always_scoped(self, tenant: Mapping[str, Any]) -> list[Document]:
        wanted = {"scope": "always", **tenant}
        store = self.vector_store
        if isinstance(store, InMemoryVectorStore):
            return [Document(id=doc_id, page_content=item["text"], metadata=item["metadata"])
                    for doc_id, item in store.store.items()
                    if all(item["metadata"].get(k) == v for k, v in wanted.items())]
        hits = self._run(lambda: store.similarity_search(
            "", k=self.always_limit + 1, filter=wanted))
        if len(hits) > self.always_limit:
            raise ValueError(
                f"{self.name} holds more than always_limit={self.always_limit} always-scope"
                f" documents for {tenant or 'this store'}; raise always_limit (none is"
                " dropped silently)")
        return list(hits)

    def _hits(self, query: str, tenant: Mapping[str, Any],
              pool: Pool) -> list[tuple[Document, float]]:
        types = pool.types
        store = self.vector_store
        if isinstance(store, InMemoryVectorStore):
            def keep(doc: Document) -> bool:  # no type: a note, as the core reads it
                return ((types is None or doc.metadata.get("type", DEFAULT_TYPE) in types)
                        and all(doc.metadata.get(k) == v for k, v in tenant.items()))
            # its score is the cosine similarity already (it has no relevance function)
            return list(store.similarity_search_with_score(query, k=self.top_k(pool),
                                                           filter=keep))
        where = {**({"type": {"$in": list(types)}} if types is not None else {}), **tenant}
        hits: list[tuple[Document, float]] = self._run(
            lambda: self._relevance(query, where, self.top_k(pool)))
        if takes_untyped(pool):
            hits = best_first(hits, self._untyped(query, tenant, self.top_k(pool)),
                              self.top_k(pool), score=lambda hit: hit[1])
        return hits

    def _relevance(self, query: str, where: Mapping[str, Any],
                   k: int) -> list[tuple[Document, float]]:
        with warnings.catch_warnings():  # a score outside [0, 1]: the scorer clamps it
            warnings.filterwarnings("ignore", "Relevance scores must be between 0 and 1")
            return list(self.vector_store.similarity_search_with_relevance_scores(
                query, k=k, filter=dict(where) or None))

    def _untyped(self, query: str, tenant: Mapping[str, Any],
                 k: int) -> list[tuple[Document, float]]:
        """The ``k`` best documents without a ``type``: by ``$exists``, else found type-free."""
        try:
            hits = self._relevance(query, {"type": {"$exists": False}, **tenant}, k)
        except (TypeError, NotImplementedError, ValueError):  # no "$exists" in its filters
            hits = self._run(lambda: self._relevance(query, tenant, k))
        return [(doc, score) for doc, score in hits if "type" not in doc.metadata]

    def _run(self, call: Callable[[], Any]) -> Any:
        try:
            return call()
        except (TypeError, NotImplementedError) as err:
            raise ValueError(f"{self.name} cannot express the metadata filter of a pool-split"
                             f" search: {err}") from err
        except Exception as err:  # a driver's error: name a dimension mismatch
            if "dimension" in str(err).lower():
                raise ValueError(f"embedding dimension mismatch in {self.name}: {err}") from err
            raise


#: The private keyword ``invoke`` uses to hand the run's bound tenant to the retrieval.
_BOUND = "poolsplit_bound_filter"
#: Fields that shape the prepared store: changing one means another store.
_STORE_FIELDS = frozenset({"documents", "pinned", "token_counter", "is_active"})


class _Component(OptionsModel):
    """What both components share: the options, refusals, serialisation, the store.

    Unknown init args are typos, refused naming the fields; assigning an
    option is validated and seen by the next call (the options are read per
    call; the prepared store does not depend on them). Pools serialise as
    plain dicts; hooks serialise to JSON only as their defaults (null), and a
    live object not at all -- refused by name before pydantic would fail inside.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid",
                              validate_assignment=True)

    #: Fields holding live objects, which JSON cannot carry.
    _LIVE: ClassVar[tuple[str, ...]] = ()
    #: The field holding the stored Documents.
    _DOCUMENTS: ClassVar[str] = "documents"
    #: How a caller names the tenant a call lacks ({filter}: a filter of the missing keys).
    _HOW: ClassVar[str] = ("pass filter={filter} or config={{'configurable': {filter}}}, or"
                           " bind it with with_filter()")

    _live: LiveStore = PrivateAttr()

    @field_validator("documents", "pinned", mode="before", check_fields=False)
    @classmethod
    def _validate_documents(cls, value: Any, info: ValidationInfo) -> Any:
        return _check_documents(value, info.field_name or cls._DOCUMENTS)

    @field_serializer("documents", "pinned", check_fields=False)
    def _documents_as_list(self, documents: Sequence[Document]) -> list[Document]:
        return list(documents)

    def model_post_init(self, context: Any, /) -> None:
        """Map and prepare the stored Documents once; say which types no pool takes."""
        super().model_post_init(context)
        self._prepare(getattr(self, self._DOCUMENTS))

    def _prepare(self, documents: Sequence[Document]) -> None:
        options = self.options()
        try:
            self._live = _live_store(documents, options, self._DOCUMENTS)
        except (TypeError, ValueError) as err:
            raise type(err)(f"{type(self).__name__}: {self._DOCUMENTS}: {err}") from err
        self.__dict__[self._DOCUMENTS] = _DocumentsView(self._live)
        warn_unpooled(logger, type(self).__name__, self._live.store.entries, options.pools,
                      all_memory=self._DOCUMENTS == "documents"
                      and getattr(self, "base_retriever", None) is None)

    def _selector(self) -> Selector:
        return Selector(self._live, self.options(), owner=f"this {type(self).__name__}",
                        how=self._HOW)

    def model_dump(self, **kwargs: Any) -> dict[str, Any]:
        """Pydantic's ``model_dump``; with ``mode="json"``, code is refused by name first."""
        if kwargs.get("mode") == "json":
            self._refuse_code(kwargs.get("exclude"))
        return super().model_dump(**kwargs)

    def model_dump_json(self, **kwargs: Any) -> str:
        """Pydantic's ``model_dump_json``, refusing code and live objects by name first.

        Raises:
            NotSerializableError: a custom ``scorer``, ``token_counter`` or
                ``is_active``, or a ``base_retriever`` (a ``TypeError``) --
                unless that field is excluded.
        """
        self._refuse_code(kwargs.get("exclude"))
        return super().model_dump_json(**kwargs)

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """Pydantic's ``model_copy``: the copy shares the prepared store, as :meth:`with_filter`.

        An ``update`` key that is not a field is refused; one that shapes the
        store (the documents, ``token_counter``, ``is_active``) gives the
        copy a store of its own, as does ``deep=True``. Options in ``update``
        are checked as at construction.
        """
        changes = dict(update or {})
        refuse_unknown(f"{type(self).__name__}.model_copy(update=...)", changes,
                       model_arguments(type(self)))
        for name in set(changes) & set(OPTION_CHECKS):
            changes[name] = OPTION_CHECKS[name](changes[name])
        if self._DOCUMENTS in changes:
            changes[self._DOCUMENTS] = _check_documents(changes[self._DOCUMENTS],
                                                        self._DOCUMENTS)
        copied = super().model_copy(update=changes, deep=deep)
        if deep or _STORE_FIELDS & set(changes):
            copied._prepare(list(getattr(copied, self._DOCUMENTS)))
        return copied

    def _refuse_code(self, exclude: Any) -> None:
        refuse_unserialisable(
            type(self).__name__, {**{name: getattr(self, name) for name in type(self).model_fields},
                                  "vector_store": getattr(self, "_source", None)},
            live=(*self._LIVE, "vector_store"), skip=excluded(exclude),
            hint="dump without it (exclude={{'{name}'}}) and pass {name}= again when you"
                 " rebuild the component",
        )


# --------------------------------------------------------------------------
# PoolSplitRetriever
# --------------------------------------------------------------------------


class PoolSplitRetriever(_Component, BaseRetriever):
    r"""Pool-split retriever: reserved budgets per entry type, corrections first.

    Each :class:`~poolsplit_core.poolsplit.Pool` reserves a token budget and
    an entry cap for a group of entry types, so high-priority types cannot
    crowd out low-priority ones. Documents whose metadata says
    ``scope="always"`` (behavioural corrections) load first, outside every
    budget: a burst of fresh documents never pushes them out.

    Setup:
        Install the extra:

        ```bash
        pip install 'poolsplit[langchain]'
        ```

    Key init args:
        - ``documents`` (``list[Document]``): The memory store; each Document
          is one entry. Its metadata holds the entry keys (``type``, ``scope``,
          ``tags``, ``project``, ``created``, ``base_priority``, ...);
          ``Document.id`` is the entry id (a metadata ``id`` stays plain
          metadata), and a Document without one is stored as a copy with a new
          uuid4 id, which ``invoke`` returns and ``delete`` takes. Mapped to
          entries once, here. Two Documents with one id are refused
          (``strict=False`` keeps both).
        - ``pools`` (``list[Pool]``): The reserved budgets, filled in order,
          unique names; an empty list loads only the corrections (and says so
          in a warning).
        - ``k`` (``int | None``): Cap on the number of *contextual* documents
          across pools, filled round-robin in pool order. Always-scope
          documents are never cut and not counted.
        - ``context`` (``dict | None``): Default retrieval context, e.g.
          ``{"project": "atlas", "tags": ["db"]}``. The query becomes
          ``context["message"]``.
        - ``scorer``, ``token_counter``, ``is_active`` (``callables``): The
          core's hooks; default to the core's defaults.
        - ``now`` (``datetime | None``): A fixed clock for reproducible scoring
          (``None``: current time).
        - ``base_retriever`` (``BaseRetriever | None``): Optional candidate
          source (e.g. a vector store's retriever). Its results join
          ``documents`` on every query (duplicates by id, else by content and
          metadata, kept once); its run is traced as a child of ours.
          Always-scope ``documents`` load whatever it returns.

        - ``filter`` (``dict | None``): Tenant filter (equality on every key),
          applied before pool-split to every document, always-scope included.
          See *Tenancy*.
        - ``require_filter_keys`` (``tuple[str, ...]``): Keys every call's
          filter must hold; a call lacking one is refused.
        - ``max_always_tokens`` (``int | None``): Always-tier ceiling; more
          raises ``AlwaysScopeOverflowError``.

        Unknown init args are refused. Assigning an option (``retriever.k = 2``)
        is validated and seen by the next call. ``documents``,
        ``token_counter`` and ``is_active`` are frozen: they shape the
        prepared store. Write with ``add_documents(documents, ids=None)``
        (upsert by id) and ``delete(ids)``; the next call sees the write.
        ``documents`` is a read-only view (``append`` raises).

    Instantiate:
        ```python
        from datetime import datetime, timezone

        from langchain_core.documents import Document

        from poolsplit_core import Pool
        from poolsplit_integrations.langchain import PoolSplitRetriever

        store = [
            Document(id="c1", page_content="Never force-push to main.",
                     metadata={"type": "correction", "scope": "always"}),
            Document(id="t1", page_content="Ship the release notes on Friday.",
                     metadata={"type": "task", "base_priority": 8}),
            Document(id="s1", page_content="Use git bisect run to find a regression.",
                     metadata={"type": "skill", "base_priority": 3}),
        ]
        retriever = PoolSplitRetriever(
            documents=store,
            pools=[
                Pool("work", max_tokens=200, max_entries=3, types=("task", "correction")),
                Pool("skills", max_tokens=100, max_entries=1, types=("skill",)),
            ],
            now=datetime(2026, 1, 1, tzinfo=timezone.utc),
        )
        ```

    Invoke:
        ```python
        docs = retriever.invoke("release notes")
        print([(d.id, d.metadata["poolsplit_pool"]) for d in docs])
        # [('c1', 'work'), ('t1', 'work'), ('s1', 'skills')]

        # Per-call context, cap and filter: project=, tags=, k=, filter=
        # (k counts contextual only).
        docs = retriever.invoke("release notes", k=1)
        print([d.id for d in docs])
        # ['c1', 't1']
        ```

    Use within a chain:
        ```python
        from langchain_core.language_models.fake_chat_models import (
            ParrotFakeChatModel,
        )
        from langchain_core.output_parsers import StrOutputParser
        from langchain_core.prompts import ChatPromptTemplate
        from langchain_core.runnables import RunnablePassthrough

        def format_docs(docs):
            return "\n".join(d.page_content for d in docs)

        prompt = ChatPromptTemplate.from_template(
            "Memory:\n{context}\n\nQuestion: {question}"
        )
        llm = ParrotFakeChatModel()  # any chat model; this one echoes the prompt
        chain = (
            {"context": retriever | format_docs, "question": RunnablePassthrough()}
            | prompt
            | llm
            | StrOutputParser()
        )
        print(chain.invoke("Can I push the release notes to main?"))
        # Memory:
        # Never force-push to main.
        # ...
        ```

    Tenancy:
        ``filter`` keeps only documents whose metadata equals every item of
        it -- a document lacking a key does not match -- *before* pool-split,
        always-scope corrections included: a correction written for one user
        never loads for another. Filters only narrow: ``invoke(query,
        filter={...})`` is ANDed with the retriever's filter (a different
        value for a key it sets is a ``ValueError``; ``filter=None`` keeps
        it), as is ``with_filter(filter)``, which shares the prepared store,
        and the tenant a run's ``config["configurable"]`` names for a key of
        ``require_filter_keys`` (how ``as_tool()`` and LangGraph nodes bind
        it). With ``require_filter_keys``, a call whose filter lacks one of
        those keys, or gives it ``None`` or an empty value, is refused with a
        ``ValueError`` (fail closed, not open); the store is partitioned by
        the first of them, so a tenant's query walks only its documents.
        ``max_always_tokens`` caps the always tier: when the corrections that
        pass the filter cost more, the call raises ``AlwaysScopeOverflowError``
        (a ``ValueError``) naming them and their total, rather than drop one.
        Without it, a warning on the ``"poolsplit"`` logger names the
        corrections when they alone cost more than all pools' ``max_tokens``.

        ```python
        from poolsplit_core import AlwaysScopeOverflowError

        memories = [
            Document(id="ana-fix", page_content="Answer Ana in Portuguese.",
                     metadata={"user_id": "ana", "type": "correction",
                               "scope": "always"}),
            Document(id="ana-t1", page_content="Ana ships the release notes on Friday.",
                     metadata={"user_id": "ana", "type": "task", "base_priority": 8}),
            Document(id="ana-t2",
                     page_content="Ana drafts the migration guide for the next release.",
                     metadata={"user_id": "ana", "type": "task"}),
            Document(id="ben-t1", page_content="Ben reviews the release notes.",
                     metadata={"user_id": "ben", "type": "task"}),
            Document(id="shared", page_content="The release notes live in docs/releases.",
                     metadata={"type": "note"}),  # no user_id: no tenant sees it
        ]
        tenants = PoolSplitRetriever(
            documents=memories,
            pools=[Pool("memory", max_tokens=15, max_entries=3)],
            require_filter_keys=("user_id",),  # no user_id in the filter: refused
            max_always_tokens=50,  # costlier corrections: an error, never a drop
            now=datetime(2026, 1, 1, tzinfo=timezone.utc),
        )
        print([d.id for d in tenants.invoke("release notes", filter={"user_id": "ana"})])
        # ['ana-fix', 'ana-t1']
        print([d.id for d in tenants.invoke("release notes", filter={"user_id": "ben"})])
        # ['ben-t1']
        try:
            tenants.invoke("release notes")  # no filter: fail closed
        except ValueError as err:
            print(isinstance(err, ValueError), "user_id" in str(err))
        # True True

        strict = tenants.model_copy(update={"max_always_tokens": 5})
        try:
            strict.invoke("release notes", filter={"user_id": "ana"})
        except AlwaysScopeOverflowError as err:
            print(err)
        # always-scope entries cost 6 tokens, more than max_always_tokens=5: entry id='ana-fix'
        ```

    Explain:
        ``explain(query, **kwargs)`` takes ``invoke``'s context and filter
        (``project=``, ``tags=``, ``filter=``; ``k`` is refused, see
        :meth:`explain`) and returns the core's account of that call: a
        record per document the filter kept -- its outcome (``always``,
        ``selected``, ``inactive``, ``no_pool``, ``over_tokens``,
        ``over_entries``), pool, score, cost and, for ``over_tokens``, the
        tokens that were left -- and a ledger per pool. Other tenants'
        documents get no record. The returned documents carry the same
        account per document: ``poolsplit_pool``, ``poolsplit_score``,
        ``poolsplit_always``.

        ```python
        explanation = tenants.explain("release notes", filter={"user_id": "ana"})
        for d in explanation.decisions:
            print(d.entry["id"], d.outcome, d.cost, d.tokens_left)
        # ana-fix always 6 None
        # ana-t1 selected 9 None
        # ana-t2 over_tokens 13 6
        ledger = explanation.ledgers["memory"]
        print(ledger.tokens_used, ledger.tokens_left, ledger.always_tokens)
        # 9 6 6
        ```
    """

    documents: Sequence[Document] = Field(default=(), frozen=True)
    """The stored Documents, read-only: write with :meth:`add_documents` and :meth:`delete`."""
    base_retriever: BaseRetriever | None = None
    """Optional candidate source merged with ``documents`` on every query."""

    _LIVE: ClassVar[tuple[str, ...]] = ("base_retriever",)
    _source: VectorStoreSource | None = PrivateAttr(default=None)

    @classmethod
    def from_vector_store(
        cls,
        vector_store: VectorStore,
        pools: Sequence[Pool] = (),
        *,
        search_k: int | None = None,
        always_limit: int = 1000,
        **kwargs: Any,
    ) -> PoolSplitRetriever:
        """Read memory from any LangChain ``VectorStore`` on every query, corrections first.

        Each query reads the always tier by metadata filter (``scope ==
        "always"`` and the tenant) and runs one filtered search per pool (its
        types, the tenant; ``search_k`` documents each, default
        ``max(10, 3 x max_entries)``), then pool-splits them (see
        :class:`VectorStoreSource`). Other keyword arguments are fields
        (``k``, ``context``, ``scorer``, ``filter``, ``require_filter_keys``,
        ...; ``documents=`` adds static documents).

        Raises:
            TypeError: ``vector_store`` is not a LangChain ``VectorStore``.
            ValueError: bad ``search_k``/``always_limit``; and, on a query, a
                document without text, an embedding dimension that is not the
                store's, a filter the store cannot express, or more
                always-scope documents than ``always_limit``.
        """
        source = VectorStoreSource(vector_store, search_k=search_k, always_limit=always_limit)
        retriever = cls(pools=list(pools), **kwargs)
        retriever._source = source
        return retriever

    @property
    def source(self) -> VectorStoreSource | None:
        """The vector store this retriever reads on every query (:meth:`from_vector_store`)."""
        return self._source

    def _source_candidates(self, selector: Selector, query: str, overrides: Mapping[str, Any],
                           bound: Mapping[str, Any] | None) -> list[Document]:
        """The vector store's always tier and per-pool hits, for this call's tenant."""
        if self._source is None:
            return []
        active = selector.active_filter(overrides.get("filter", DEFAULT), bound)
        return self._source.candidates(query, self.pools, active)

    @field_validator("base_retriever", mode="before")
    @classmethod
    def _validate_base_retriever(cls, value: Any) -> Any:
        if value is not None and not isinstance(value, BaseRetriever):
            raise TypeError(
                f"base_retriever must be a LangChain BaseRetriever or None, got"
                f" {type(value).__name__} (a dumped retriever cannot be rebuilt from its data;"
                " pass the retriever itself)"
            )
        return value

    # -- writes ------------------------------------------------------------

    def add_documents(
        self, documents: Sequence[Document], ids: Sequence[str] | None = None, **kwargs: Any
    ) -> list[str]:
        """Add or replace documents by id, as LangChain's vector stores do; no rebuild.

        Each document's id is ``ids[i]`` when given, else ``Document.id``,
        else a new uuid4. A document whose id is stored replaces it in place
        (a superseded correction); the others are appended. Two of
        ``documents`` with one id are refused (``strict=False``: written in
        order, so the last one stays). The next call sees the write. Inputs
        are copied, never changed.

        Args:
            documents: The Documents to write.
            ids: Optional ids, one per document.
            **kwargs: None accepted; a keyword is refused (``TypeError``).

        Returns:
            The ids written, in order: the entry ids, which ``delete`` takes
            and the returned Documents carry as ``Document.id``. A metadata
            ``id`` is never one: it stays plain metadata.

        Raises:
            TypeError: An item is not a Document, or an unknown keyword.
            ValueError: A document the scorer would refuse (e.g. a
                non-numeric ``base_priority``), or (strict) one with a
                problem or an id another of ``documents`` has, named;
                nothing is written.
        """
        refuse_unknown(f"{type(self).__name__}.add_documents()", kwargs, ())
        docs = _check_documents(documents, "documents")
        if ids is not None and len(ids) != len(docs):
            raise ValueError(f"add_documents got {len(docs)} documents but {len(ids)} ids")
        keys = self._live.key if isinstance(self._live.key, _DocKeys) else _DocKeys()
        items = []
        for doc in keys.identify(docs, ids):
            copied = Document(id=doc.id, page_content=doc.page_content,
                              metadata=dict(doc.metadata))
            items.append((to_entry(copied.page_content, copied.metadata, copied.id), copied))
        try:
            written = self._live.write(items, what="documents")
        except (TypeError, ValueError) as err:
            raise type(err)(f"{type(self).__name__}.add_documents: {err}") from err
        warn_unpooled(logger, type(self).__name__, [entry for entry, _ in items], self.pools,
                      written=True)
        return [str(entry_id) for entry_id in written]

    async def aadd_documents(
        self, documents: Sequence[Document], ids: Sequence[str] | None = None, **kwargs: Any
    ) -> list[str]:
        """Async :meth:`add_documents` (the write itself is in memory and immediate)."""
        return self.add_documents(documents, ids=ids, **kwargs)

    def delete(self, ids: Sequence[str], **kwargs: Any) -> None:
        """Delete stored documents by id; the next call no longer sees them; no rebuild.

        An id that several stored documents hold (kept with ``strict=False``)
        deletes them all.

        Raises:
            KeyError: An id no stored document has (nothing is deleted).
        """
        refuse_unknown(f"{type(self).__name__}.delete()", kwargs, ())
        if isinstance(ids, str):
            ids = [ids]
        self._live.delete(ids)

    async def adelete(self, ids: Sequence[str], **kwargs: Any) -> None:
        """Async :meth:`delete`."""
        self.delete(ids, **kwargs)

    def with_filter(self, filter: Mapping[str, Any]) -> PoolSplitRetriever:
        """This retriever narrowed to ``filter``, sharing the prepared store (no rebuild).

        The new retriever's filter is this one's AND ``filter``: it can add
        keys, never change one (a conflict is a ``ValueError``). Writes to
        either are seen by both. Refused when the result still lacks a key
        of ``require_filter_keys``, or gives one no value.
        """
        owner = f"{type(self).__name__}.with_filter"
        options = Selector(self._live, self.options(), owner=owner).narrowed(filter)
        return self.model_copy(update={"filter": options.filter})

    # -- reads -------------------------------------------------------------

    def invoke(self, input: str, config: RunnableConfig | None = None,
               **kwargs: Any) -> list[Document]:
        """LangChain's ``invoke``; the tenant may also come from ``config["configurable"]``.

        For each key of ``require_filter_keys`` that the run's configurable
        holds (``{"configurable": {"user_id": "ana"}}``, as LangGraph passes
        it), the call is narrowed to that value -- so ``as_tool()`` and graph
        nodes, which cannot pass ``filter=``, serve the run's tenant. ``input``
        is the query string (a chain whose input is a dict maps it first:
        ``itemgetter("question") | retriever``).
        """
        check_query(input, f"{type(self).__name__}.invoke()")
        return super().invoke(input, config, **self._bind(config, kwargs))

    async def ainvoke(self, input: str, config: RunnableConfig | None = None,
                      **kwargs: Any) -> list[Document]:
        """Async :meth:`invoke`, with the same tenant from ``config``."""
        check_query(input, f"{type(self).__name__}.ainvoke()")
        return await super().ainvoke(input, config, **self._bind(config, kwargs))

    def _bind(self, config: RunnableConfig | None, kwargs: dict[str, Any]) -> dict[str, Any]:
        kwargs.pop(_BOUND, None)  # only the run's config binds a tenant
        keys = self._selector().required_keys()
        if self.require_filter_keys is None and USER_KEY not in keys and (
                self._source is not None or self.base_retriever is not None):
            keys = (*keys, USER_KEY)  # memory found per call may be anyone's: the run's user
        bound = config_filter(ensure_config(config).get("configurable"), keys)
        return {**kwargs, _BOUND: bound} if bound else kwargs

    def _start(self, kwargs: Mapping[str, Any], method: str = "invoke",
               accepted: Sequence[str] = _CALL_KWARGS,
               ) -> tuple[Selector, dict[str, Any], dict[str, Any] | None]:
        """The call's selector, overrides and bound tenant, refused first if it is unbound.

        Fail closed before any work: a refused call never queries the base retriever.
        """
        bound = kwargs.get(_BOUND)
        overrides = _call_overrides({k: v for k, v in kwargs.items() if k != _BOUND},
                                    type(self).__name__, method, accepted)
        selector = self._selector()
        selector.active_filter(overrides.get("filter", DEFAULT), bound)
        return selector, overrides, bound

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        """Pool-split ``documents`` (plus ``base_retriever``'s results) for ``query``.

        Args:
            query: The query; it becomes ``context["message"]``.
            run_manager: The callback manager of this run.
            **kwargs: Per-call overrides: ``project=``, ``tags=``, ``k=``, and
                ``filter=`` (narrows the retriever's filter for this call;
                ``None`` keeps it).

        Returns:
            Always-scope documents of every pool first, then the contextual
            ones pool by pool, as new Documents with ``poolsplit_*`` metadata.

        Raises:
            ValueError: The call's filter lacks a key of ``require_filter_keys``
                (or gives it no value), or conflicts with the retriever's.
            AlwaysScopeOverflowError: The always-scope documents that pass the
                filter cost more than ``max_always_tokens``.
        """
        with tracing.read(type(self).__name__, {"message": query}):  # a refusal: its error
            selector, overrides, bound = self._start(kwargs)
            candidates = self._source_candidates(selector, query, overrides, bound)
            if self.base_retriever is not None:
                candidates += self.base_retriever.invoke(
                    query, config={"callbacks": run_manager.get_child()}
                )
            got = _pool_split(selector, query, candidates, overrides, bound)
        ledger = _send_ledger(run_manager, selector, query, candidates, overrides, bound)
        if ledger is not None:
            # the retriever's run is the event's: LangSmith shows it there
            run_manager.get_child().on_custom_event(LEDGER_EVENT, ledger,
                                                    run_id=run_manager.run_id)
        return got

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        """Async :meth:`_get_relevant_documents`; awaits ``base_retriever.ainvoke``.

        Args:
            query: The query; it becomes ``context["message"]``.
            run_manager: The async callback manager of this run.
            **kwargs: Per-call overrides: ``project=``, ``tags=``, ``k=``, ``filter=``.

        Returns:
            The same documents :meth:`_get_relevant_documents` returns.
        """
        with tracing.read(type(self).__name__, {"message": query}):  # a refusal: its error
            selector, overrides, bound = self._start(kwargs)
            candidates = self._source_candidates(selector, query, overrides, bound)
            if self.base_retriever is not None:
                candidates += await self.base_retriever.ainvoke(
                    query, config={"callbacks": run_manager.get_child()}
                )
            got = _pool_split(selector, query, candidates, overrides, bound)
        ledger = _send_ledger(run_manager, selector, query, candidates, overrides, bound)
        if ledger is not None:
            await run_manager.get_child().on_custom_event(LEDGER_EVENT, ledger,
                                                          run_id=run_manager.run_id)
        return got

    def _get_ls_params(self, **kwargs: Any) -> LangSmithRetrieverParams:
        """LangSmith's names for this retriever: ``poolsplit``, and the vector store it reads."""
        params = LangSmithRetrieverParams(ls_retriever_name="poolsplit")
        if self._source is not None:
            params["ls_vector_store_provider"] = type(self._source.vector_store).__name__
        return params

    def explain(self, query: str, config: RunnableConfig | None = None,
                **kwargs: Any) -> Explanation:
        """The core's records and ledgers for the call ``invoke(query, config, **kwargs)`` makes.

        One :class:`~poolsplit_core.poolsplit.Decision` per entry the call's
        filter keeps (outcome, pool, score, cost, near miss, rank) and one
        :class:`~poolsplit_core.poolsplit.Ledger` per pool. Entries the filter
        rejects get no record: another tenant's entries are not even named.
        ``Explanation.loaded()`` gives, per pool and in order, the documents
        ``invoke`` returns for that pool.

        Args:
            query: The query; it becomes ``context["message"]``.
            config: As for ``invoke``: its configurable may bind the tenant.
            **kwargs: As for ``invoke``: ``project=``, ``tags=``, ``filter=``.
                ``k`` is refused (``TypeError``): it only cuts ``invoke``'s
                contextual documents after the core decides, each pool keeping
                its first ones, so a capped ``invoke`` returns a prefix of
                each pool's loaded records.

        Returns:
            The core's :class:`~poolsplit_core.poolsplit.Explanation`; a
            Decision's ``entry`` is the mapped entry (its ``id`` is the
            Document's) and its ``index`` counts ``documents`` then the
            ``base_retriever`` candidates that joined.

        Raises:
            ValueError: The call's filter is refused, exactly as ``invoke``
                would refuse it.

        ``explain`` never raises :class:`AlwaysScopeOverflowError` and logs no
        warning: it is where an overflow is read (each ledger's
        ``always_tokens``). With a ``base_retriever``, it is invoked without
        this run's callbacks, for the same candidates ``invoke`` merges.
        """
        check_query(query, f"{type(self).__name__}.explain()", None)
        selector, overrides, bound = self._start(self._bind(config, kwargs), "explain",
                                                 _EXPLAIN_KWARGS)
        candidates = self._source_candidates(selector, query, overrides, bound)
        if self.base_retriever is not None:
            candidates += self.base_retriever.invoke(query)
        return explain(selector, query, candidates, _CANDIDATES, bound=bound, **overrides)

    async def aexplain(self, query: str, config: RunnableConfig | None = None,
                       **kwargs: Any) -> Explanation:
        """Async :meth:`explain`; awaits ``base_retriever.ainvoke``.

        Args:
            query: The query; it becomes ``context["message"]``.
            config: As for :meth:`explain`.
            **kwargs: As for :meth:`explain`.

        Returns:
            What :meth:`explain` returns.
        """
        check_query(query, f"{type(self).__name__}.aexplain()", None)
        selector, overrides, bound = self._start(self._bind(config, kwargs), "explain",
                                                 _EXPLAIN_KWARGS)
        candidates = self._source_candidates(selector, query, overrides, bound)
        if self.base_retriever is not None:
            candidates += await self.base_retriever.ainvoke(query)
        return explain(selector, query, candidates, _CANDIDATES, bound=bound, **overrides)


# --------------------------------------------------------------------------
# PoolSplitCompressor
# --------------------------------------------------------------------------


class PoolSplitCompressor(_Component, BaseDocumentCompressor):
    """Pool-split applied to documents another retriever found, corrections pinned.

    The compressor-pipeline idiom: a similarity search proposes candidates,
    this compressor assembles the context by pools. ``pinned`` documents
    (typically the ``scope="always"`` corrections) join the candidates on
    every call, so a correction loads even when the search missed it. Where a
    vector store put a ``metadata["score"]`` on a candidate, a custom scorer
    reads it as the entry key ``similarity``.

    Setup:
        ```bash
        pip install 'poolsplit[langchain]'
        ```

    Key init args:
        - ``pools`` (``list[Pool]``): The reserved budgets, filled in order,
          unique names; an empty list loads only the corrections (and says so
          in a warning).
        - ``pinned`` (``list[Document]``): Documents that always join the
          candidates (mapped once, here).
        - ``k``, ``context``, ``scorer``, ``token_counter``, ``is_active``, ``now``: As
          for :class:`PoolSplitRetriever`.
        - ``filter``, ``require_filter_keys``, ``max_always_tokens``: As for
          :class:`PoolSplitRetriever`, on the compressor only:
          ``compress_documents`` takes no per-call filter (a
          ``ContextualCompressionRetriever`` could not pass one). The filter
          applies to ``pinned`` and to the candidates alike, so neither a
          pinned correction nor a search hit of another tenant loads. For
          several tenants, one compressor each (``pinned`` is mapped once per
          compressor).

    Instantiate:
        ```python
        from langchain_core.documents import Document

        from poolsplit_core import Pool
        from poolsplit_integrations.langchain import PoolSplitCompressor

        def by_similarity(entry, context):
            return entry.get("similarity", 0.0)

        compressor = PoolSplitCompressor(
            pools=[Pool("memory", max_tokens=200, max_entries=2)],
            pinned=[Document(id="c1", page_content="Never force-push to main.",
                             metadata={"scope": "always"})],
            scorer=by_similarity,
        )
        ```

    Compress:
        ```python
        found = [  # e.g. from a vector store, with its scores in metadata
            Document(id="a", page_content="Release checklist", metadata={"score": 0.4}),
            Document(id="b", page_content="Push policy", metadata={"score": 0.9}),
        ]
        docs = compressor.compress_documents(found, "how do I push the release?")
        print([d.id for d in docs])
        # ['c1', 'b', 'a']
        ```
    """

    pinned: Sequence[Document] = Field(default=(), frozen=True)
    """Documents that join the candidates on every call (e.g. corrections); read-only."""

    _DOCUMENTS: ClassVar[str] = "pinned"
    _HOW: ClassVar[str] = ("build it with filter={filter} (compress_documents takes no"
                           " per-call filter)")

    @model_validator(mode="after")
    def _refuse_unbound_filter(self) -> Self:
        # No per-call filter here, so a filter lacking a required key could
        # never serve a call: refuse it now (and on assignment), not on every call.
        refuse_unbound(self.filter, self.require_filter_keys or (), owner="PoolSplitCompressor",
                       how=self._HOW)
        return self

    def compress_documents(
        self,
        documents: Sequence[Document],
        query: str,
        callbacks: Callbacks | None = None,
    ) -> Sequence[Document]:
        """Pool-split ``pinned`` plus ``documents`` for ``query``.

        Args:
            documents: The candidates another retriever found.
            query: The query; it becomes ``context["message"]``.
            callbacks: Unused; accepted for the compressor interface.

        Returns:
            Always-scope documents first, then the contextual ones pool by
            pool, as new Documents with ``poolsplit_*`` metadata.

        Raises:
            ValueError: ``filter`` lacks a key of ``require_filter_keys``.
            AlwaysScopeOverflowError: The always-scope documents that pass the
                filter cost more than ``max_always_tokens``.
        """
        _check_documents(documents, "documents")
        check_query(query, "PoolSplitCompressor.compress_documents()", None)
        return _pool_split(self._selector(), query, documents)
