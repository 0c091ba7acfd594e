"""Pool-split retrieval for LlamaIndex: a retriever, a node postprocessor, a memory block.

Needs ``pip install 'poolsplit[llamaindex]'`` (llama-index-core 0.14).

LlamaIndex assembles context in three places, and poolsplit plugs into each:

- :class:`PoolSplitRetriever` -- a ``BaseRetriever`` over a static set of
  nodes (and, optionally, the candidates of another retriever); use it under
  ``RetrieverQueryEngine``.
- :class:`PoolSplitPostprocessor` -- a ``BaseNodePostprocessor`` that applies
  pool-split to the candidates another retriever found, with ``pinned``
  correction nodes that always join them.
- :class:`PoolSplitMemoryBlock` -- a ``BaseMemoryBlock[str]`` for
  ``llama_index.core.memory.Memory`` that renders the agent's memory store,
  corrections first, then each pool.

The adapters only translate: a node becomes an entry dict through the shared
mapping (:func:`poolsplit_integrations._entries.to_entry`; the node's metadata
supplies ``type``, ``scope``, ``tags``, ... and the node id is the entry id),
:class:`~poolsplit_integrations._select.Selector` runs the core, and the entries it loaded
come back as ``NodeWithScore`` on copies of the nodes.

Every returned node is a copy whose metadata gains ``poolsplit_pool``,
``poolsplit_always``, ``poolsplit_score`` (the core's score; ``None`` for
always-scope) and ``poolsplit_similarity`` (the candidate's own retriever
score, kept: ``NodeWithScore.score`` holds the poolsplit score, the order of
the result). These keys and the ones the core scores with (``type``,
``scope``, ``base_priority``, ``created``, ``tags``, ``project``, ``status``,
``superseded_by``, ``token_count``) are added to the copy's
``excluded_llm_metadata_keys`` and ``excluded_embed_metadata_keys`` (after the
node's own), so they stay in ``metadata`` but never reach a prompt or an
embedding; every other metadata key shows as LlamaIndex shows it.

**The score of an always-scope node.** ``NodeWithScore.score`` is the poolsplit
score for contextual nodes. An always-scope node has no score of its own (it
loads unconditionally), so it gets one just above the best contextual score of
the same result: ``max(contextual scores) + 1`` (the next float up when ``+ 1``
is lost to rounding), or ``1.0`` when no contextual node was loaded. So a
downstream step that sorts by score (a reranker, ``SimilarityPostprocessor``
ordering, a merge of retrievers) can never push a correction below content,
whatever the sign or size of the contextual scores.

**Tenancy and accounting.** All three take a hard metadata ``filter``
(equality on every key; a node lacking a key does not match), applied before
pool-split to every node -- always-scope corrections, pinned nodes and
candidates included -- plus ``require_filter_keys`` (a call whose filter
lacks one of them is refused with a ``ValueError``: fail closed) and
``max_always_tokens`` (an always tier costing more raises
:class:`~poolsplit_core.AlwaysScopeOverflowError` instead of dropping a
correction). LlamaIndex's ``retrieve`` takes only the query, so the filter
lives on the retriever: :meth:`PoolSplitRetriever.with_filter` narrows it to a
tenant over the same prepared store (filters only narrow: a different value
for a key already set is a ``ValueError``; a required key given ``None`` or
an empty value is refused). :meth:`PoolSplitRetriever.explain` returns the
core's records and ledgers for a query.

**A living store.** Each component prepares its nodes once (partitioned by
the first required filter key, so a tenant's query walks only its nodes) and
is written through the core's API: :meth:`PoolSplitRetriever.insert_nodes`
(upsert by node id) and :meth:`PoolSplitRetriever.delete_nodes` are seen by
the very next ``retrieve``, by every retriever ``with_filter`` made from it
and by a :class:`PoolSplitMemoryBlock` reading through it. Nodes whose type
no pool takes are named in a warning on this module's logger when written.

**Arguments and serialisation.** All three refuse unknown arguments -- at
construction, in ``from_dict`` and ``from_defaults``, and per call
(``PoolSplitMemoryBlock`` takes ``project=`` and ``tags=``) -- naming the
accepted ones. All three round-trip through ``to_dict``/``from_dict`` and
``to_json``/``from_json``, as LlamaIndex components do: pools as plain dicts
(``{"name", "max_tokens", "max_entries", "types"}``), nodes as LlamaIndex's
docstore writes them. What is code -- a custom ``scorer``, ``token_counter``
or ``is_active`` -- or a live object (a ``base_retriever``, a block's
``PreparedStore`` or retriever store) is refused
by name (a ``TypeError``): serialise with ``exclude={"scorer"}`` and pass it
again, ``from_dict(data, scorer=...)``. A configured scorer
(``make_scorer(words="unicode")``) is data: it is written as its options.
"""

from __future__ import annotations

import copy
import inspect
import json
import logging
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, ClassVar, NoReturn

from poolsplit_integrations._extras import require

require("llama_index.core", "llamaindex")

from llama_index.core import VectorStoreIndex  # noqa: E402
from llama_index.core.base.base_retriever import BaseRetriever  # noqa: E402
from llama_index.core.base.embeddings.base import BaseEmbedding  # noqa: E402
from llama_index.core.base.llms.types import ChatMessage, MessageRole  # noqa: E402
from llama_index.core.bridge.pydantic import (  # noqa: E402
    Field,
    PrivateAttr,
    field_serializer,
    field_validator,
)
from llama_index.core.callbacks import CallbackManager  # noqa: E402
from llama_index.core.instrumentation.events.rerank import (  # noqa: E402
    ReRankEndEvent,
    ReRankStartEvent,
)
from llama_index.core.memory.memory import BaseMemoryBlock  # noqa: E402
from llama_index.core.node_parser.interface import NodeParser  # noqa: E402
from llama_index.core.postprocessor.types import BaseNodePostprocessor  # noqa: E402
from llama_index.core.schema import (  # noqa: E402
    BaseNode,
    Document,
    MetadataMode,
    NodeRelationship,
    NodeWithScore,
    QueryBundle,
    TextNode,
)
from llama_index.core.storage.docstore.utils import doc_to_json, json_to_doc  # noqa: E402
from llama_index.core.vector_stores.types import (  # noqa: E402
    BasePydanticVectorStore,
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
    VectorStoreQuery,
)
from llama_index.core.vector_stores.utils import build_metadata_filter_fn  # noqa: E402
from llama_index_instrumentation import get_dispatcher  # noqa: E402
from typing_extensions import Self  # noqa: E402

from poolsplit_core import render, tracing  # noqa: E402
from poolsplit_core.poolsplit import (  # noqa: E402
    Decision,
    Explanation,
    Pool,
    default_is_active,
    default_scorer,
    default_token_counter,
)
from poolsplit_core.prepared import PreparedStore  # noqa: E402
from poolsplit_integrations._candidates import (  # noqa: E402
    Reading,
    VectorSource,
    best_first,
    check_search_size,
    explain,
    merge,
    select,
    takes_untyped,
)
from poolsplit_integrations._entries import (  # noqa: E402
    BOOKKEEPING_KEYS,
    result_metadata,
    to_entry,
)
from poolsplit_integrations._live import LiveStore  # noqa: E402
from poolsplit_integrations._models import OptionsModel  # noqa: E402
from poolsplit_integrations._options import (  # noqa: E402
    ALWAYS_POOL,
    CONTEXT_KWARGS,
    OPTION_NAMES,
    Options,
    refuse_unknown,
)
from poolsplit_integrations._select import Selector, warn_unpooled  # noqa: E402
from poolsplit_integrations._serialise import (  # noqa: E402
    excluded,
    refuse_unserialisable,
    scorer_data,
)

__all__ = [
    "CORRECTIONS_HEADING",
    "PoolSplitMemoryBlock",
    "PoolSplitPostprocessor",
    "PoolSplitRetriever",
    "VectorStoreSource",
]

#: Warnings about nodes that cannot load (a type no pool takes).
logger = logging.getLogger(__name__)
#: LlamaIndex's instrumentation dispatcher: the memory block's read is a span, the
#: postprocessor's a reranker's events.
dispatcher = get_dispatcher(__name__)

#: Heading of the always-scope section in :class:`PoolSplitMemoryBlock` text (the core's
#: :data:`poolsplit_core.render.CORRECTIONS_HEADING`: the block's text is ``render_pools``').
CORRECTIONS_HEADING = render.CORRECTIONS_HEADING

#: How a caller names the tenant a retriever's call lacks: ``retrieve`` takes only the query.
_RETRIEVER_HOW = "bind it with with_filter({filter}) or build it with filter={filter}"


# --------------------------------------------------------------------------
# Private helpers: node <-> entry, and the one code path all adapters share
# --------------------------------------------------------------------------


def _node_entry(node: BaseNode, similarity: float | None = None) -> dict[str, Any]:
    """The entry dict of one node (text, metadata, node id), via the shared mapping."""
    return to_entry(
        node.get_content(metadata_mode=MetadataMode.NONE),
        node.metadata,
        node.node_id,
        similarity=similarity,
    )


def _unique_nodes(nodes: Iterable[BaseNode], seen: set[str] | None = None) -> list[BaseNode]:
    """``nodes`` with repeated node ids dropped (first kept); updates ``seen``."""
    seen = set() if seen is None else seen
    kept = []
    for node in nodes:
        if not isinstance(node, BaseNode):
            raise TypeError(f"nodes must hold LlamaIndex nodes, got {type(node).__name__}")
        if node.node_id not in seen:
            seen.add(node.node_id)
            kept.append(node)
    return kept


def _nodes_of(nodes: Iterable[BaseNode], options: Options) -> list[BaseNode]:
    """``nodes`` checked, all of them when strict (the store refuses a repeated id), else unique."""
    if not options.strict:
        return _unique_nodes(nodes)
    listed = list(nodes)
    for node in listed:
        if not isinstance(node, BaseNode):
            raise TypeError(f"nodes must hold LlamaIndex nodes, got {type(node).__name__}")
    return listed


def _above(score: float) -> float:
    """The smallest convenient float strictly above ``score``: ``score + 1``."""
    bumped = score + 1.0
    return bumped if bumped > score else math.nextafter(score, math.inf)


def _result_node(node: BaseNode, loaded: Decision) -> BaseNode:
    """A copy of ``node`` carrying the ``poolsplit_*`` metadata; ``node`` is untouched."""
    return node.model_copy(update={
        "metadata": result_metadata(node.metadata, loaded),
        "excluded_llm_metadata_keys": _hiding_results(node.excluded_llm_metadata_keys),
        "excluded_embed_metadata_keys": _hiding_results(node.excluded_embed_metadata_keys),
    })


def _hiding_results(excluded: Sequence[str]) -> list[str]:
    """``excluded``, then each bookkeeping key it lacks: the LLM and the embedding see none.

    >>> _hiding_results(["file_name", "poolsplit_pool"])[:3]
    ['file_name', 'poolsplit_pool', 'type']

    The keys are :data:`~poolsplit_integrations._entries.BOOKKEEPING_KEYS`:
    the ones the core scores with (``type``, ``scope``, ``base_priority``,
    ``created``, ``tags``, ``project``, ``status``, ``superseded_by``,
    ``token_count``) and the four ``poolsplit_*`` result keys. The node's own
    exclusions come first, kept; its other metadata keys still show.
    """
    if not excluded:  # most nodes: one new list per result, nothing to filter
        return list(BOOKKEEPING_KEYS)
    return [*excluded, *(key for key in BOOKKEEPING_KEYS if key not in excluded)]


def _live_store(nodes: Iterable[BaseNode], options: Options, owner: str,
                all_memory: bool = True, what: str = "nodes") -> LiveStore:
    """The prepared store of ``nodes``, warning of unpooled types.

    Two nodes with one node id are refused, naming both positions in
    ``what`` (``strict=False``: kept once, the first). Partitioned by the
    first required filter key, so a tenant's query walks only that
    tenant's nodes.
    """
    try:
        live = LiveStore([(_node_entry(node), node) for node in _nodes_of(nodes, options)],
                         scorer=options.scorer, token_counter=options.token_counter,
                         is_active=options.is_active,
                         partition_key=options.partition_key, key=_node_keys,
                         strict=options.strict, what=what)
    except (TypeError, ValueError) as err:
        raise type(err)(f"{owner}: {err}") from err
    warn_unpooled(logger, owner, live.store.entries, options.pools, all_memory=all_memory)
    return live


def _node_keys(node: BaseNode) -> tuple[str]:
    """A stored node's duplicate keys (:meth:`LiveStore.holds_key`): its node id alone."""
    return (node.node_id,)


def _write_nodes(live: LiveStore, nodes: Iterable[BaseNode], options: Options,
                 owner: str) -> list[Any]:
    """Upsert ``nodes`` by id into ``live`` (a refused node names itself; nothing written).

    Two of ``nodes`` with one node id are refused (``strict=False``: the first is kept).
    """
    items = [(_node_entry(node), node) for node in _nodes_of(nodes, options)]
    try:
        written = live.write(items, what="nodes")
    except (TypeError, ValueError) as err:
        raise type(err)(f"{owner}: {err}") from err
    warn_unpooled(logger, owner, [entry for entry, _ in items], options.pools, written=True)
    return written


def _candidate_entry(candidate: NodeWithScore, similarity: float | None) -> dict[str, Any]:
    return _node_entry(candidate.node, similarity)


#: How a candidate joins the stored nodes (the shared merge,
#: :func:`~poolsplit_integrations._candidates.merge`): a node id already stored, or
#: seen earlier among the candidates, is dropped, so each is kept once; a kept
#: candidate's score reaches the scorer as the entry key ``similarity``.
_CANDIDATES: Reading[NodeWithScore] = Reading(
    key=lambda candidate: candidate.node.node_id, score=lambda candidate: candidate.score,
    entry=_candidate_entry, obj=lambda candidate: candidate.node)


def _pool_split_nodes(
    selector: Selector,
    query: str,
    candidates: Sequence[NodeWithScore] = (),
    bound: Mapping[str, Any] | None = None,
) -> list[NodeWithScore]:
    """Run pool-split over the stored nodes plus ``candidates``; return NodeWithScore.

    Candidates join as :data:`_CANDIDATES` says; ``bound`` narrows the
    selector's filter (a retriever a memory block reads through).
    """
    loaded = select(selector, query, candidates, _CANDIDATES, bound=bound)
    contextual = [float(d.score) for _, d in loaded if d.score is not None]
    always_score = _above(max(contextual)) if contextual else 1.0
    return [
        NodeWithScore(node=_result_node(node, d),
                      score=always_score if d.outcome == "always" else float(d.score or 0.0))
        for node, d in loaded
    ]


def _documents_to_nodes(
    documents: Sequence[Document], node_parser: NodeParser | None
) -> list[BaseNode]:
    """One TextNode per document (same id, text and metadata), or the parser's nodes."""
    if node_parser is not None:
        return list(node_parser.get_nodes_from_documents(documents))
    nodes: list[BaseNode] = []
    for doc in documents:
        if not isinstance(doc, BaseNode):
            raise TypeError(f"documents must hold LlamaIndex Documents, got {type(doc).__name__}")
        nodes.append(TextNode(
            id_=doc.node_id,
            text=doc.get_content(metadata_mode=MetadataMode.NONE),
            metadata=dict(doc.metadata),
            excluded_llm_metadata_keys=list(doc.excluded_llm_metadata_keys),
            excluded_embed_metadata_keys=list(doc.excluded_embed_metadata_keys),
            relationships={NodeRelationship.SOURCE: doc.as_related_node_info()},
        ))
    return nodes


def _node_data(node: BaseNode) -> dict[str, Any]:
    """A node as LlamaIndex's docstore writes it: ``{"__data__": ..., "__type__": ...}``."""
    data = doc_to_json(node)
    data["__type__"] = str(getattr(data["__type__"], "value", data["__type__"]))
    return data


def _is_node_data(item: Any) -> bool:
    return isinstance(item, Mapping) and set(item) == {"__data__", "__type__"}


def _nodes_from_data(value: Any) -> Any:
    """``value`` with every item written by :func:`_node_data` read back as a node."""
    if isinstance(value, (list, tuple)):
        return [json_to_doc(dict(item)) if _is_node_data(item) else item for item in value]
    return value


#: How to serialise a component holding code anyway.
_SERIALISE_HINT = ("serialise without it (to_dict(exclude={{'{name}'}})) and pass it again:"
                   " from_dict(data, {name}=...)")


class _Serialisable:
    """``to_dict``/``from_dict``/``to_json``/``from_json``, as LlamaIndex components spell them.

    Subclasses say what their fields hold (:meth:`_values`), how they write
    themselves as plain data (:meth:`_data`) and how they read it back
    (:meth:`_from_data`). Code and live objects are refused by name first.
    """

    #: Fields that hold live objects when they are not None.
    _LIVE: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def class_name(cls) -> str:
        """The name LlamaIndex serialises this component under."""
        return cls.__name__

    def to_dict(self, **kwargs: Any) -> dict[str, Any]:
        """The component as JSON-ready data; ``exclude={...}`` leaves fields out.

        Raises:
            NotSerializableError: a custom ``scorer``/``token_counter``/``is_active``
                or a live object (a ``TypeError``), unless excluded.
        """
        values, skip = self._values(), excluded(kwargs.get("exclude"))
        refuse_unserialisable(type(self).__name__, values, live=self._LIVE, skip=skip,
                              hint=_SERIALISE_HINT)
        data = self._data(**kwargs)
        data.update(scorer_data(values, skip))  # a configured scorer's options, as data
        data["class_name"] = self.class_name()
        return data

    def to_json(self, **kwargs: Any) -> str:
        """:meth:`to_dict` as a JSON string."""
        return json.dumps(self.to_dict(**kwargs))

    @classmethod
    def from_dict(cls, data: dict[str, Any], **kwargs: Any) -> Self:
        """Rebuild a component from :meth:`to_dict`'s data; ``kwargs`` add or replace fields.

        Raises:
            ValueError: ``data`` describes another class.
            TypeError: a key is not an argument of the component.
        """
        merged = {**data, **kwargs}
        name = merged.pop("class_name", cls.class_name())
        if name != cls.class_name():
            raise ValueError(
                f"{cls.__name__}.from_dict() needs the data of a {cls.class_name()!r},"
                f" got class_name {name!r}"
            )
        return cls._from_data(merged)

    @classmethod
    def from_json(cls, data_str: str, **kwargs: Any) -> Self:
        """Rebuild a component from :meth:`to_json`'s string."""
        return cls.from_dict(json.loads(data_str), **kwargs)

    def _values(self) -> dict[str, Any]:
        """The component's fields by name (pydantic components: every field)."""
        return {name: getattr(self, name) for name in getattr(type(self), "model_fields", {})}

    def _data(self, **kwargs: Any) -> dict[str, Any]:
        """JSON-ready fields (pydantic components: ``model_dump(mode="json")``)."""
        data: dict[str, Any] = getattr(self, "model_dump")(mode="json", **kwargs)  # noqa: B009
        return data

    @classmethod
    def _from_data(cls, data: dict[str, Any]) -> Self:
        return cls(**data)


class _Component(_Serialisable, OptionsModel):
    """What the two pydantic components share (see :class:`OptionsModel`), as LlamaIndex data."""


def _init_arguments(function: Callable[..., Any], *skip: str) -> list[str]:
    """The keyword arguments ``function`` names (not ``self``, not ``**kwargs``)."""
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return [name for name, param in inspect.signature(function).parameters.items()
            if param.kind in kinds and name not in ("self", "cls", *skip)]


# --------------------------------------------------------------------------
# PoolSplitRetriever
# --------------------------------------------------------------------------


class PoolSplitRetriever(_Serialisable, BaseRetriever):
    """A LlamaIndex retriever that fills reserved pools, corrections first.

    Setup:
        ``pip install 'poolsplit[llamaindex]'``

    Key init args:
        - ``nodes``: the static store, one node per memory entry. Node metadata
          supplies the entry keys (``type``, ``scope``, ``tags``, ``project``,
          ``created``, ``base_priority``, ...); the node id is the entry id.
          Mapped once, here.
        - ``pools``: the reserved budgets, filled in order.
        - ``k``: a fair cap on contextual nodes across pools (round-robin); it
          never cuts an always-scope node. ``None``: no cap.
        - ``context``: the default retrieval context, e.g. ``{"project":
          "atlas", "tags": ["db"]}``; the query text becomes
          ``context["message"]``.
        - ``scorer``, ``token_counter``, ``is_active``, ``now``: passed to the
          core.
        - ``base_retriever``: any LlamaIndex retriever whose candidates join
          the static nodes on each query (a node id is kept once; a candidate's
          score reaches the scorer as ``similarity``).
        - ``filter``: a hard metadata filter, e.g. ``{"user_id": "a"}``: a node
          loads only if its metadata has every key with an equal value (a node
          lacking the key does not match). Applied before pool-split to every
          node -- corrections and the base retriever's candidates included.
          ``None``: no filter.
        - ``require_filter_keys``: keys the filter must have, e.g.
          ``("user_id",)``. A retriever whose filter lacks one refuses every
          call (``retrieve``, ``aretrieve``, ``explain``) with a ``ValueError``
          naming the missing keys: fail closed.
        - ``max_always_tokens``: a ceiling on the always tier. A call whose
          always-scope nodes (after the filter) cost more raises
          :class:`~poolsplit_core.AlwaysScopeOverflowError` (a ``ValueError``)
          naming them and their total; no correction is ever dropped. ``None``:
          no ceiling, but a ``logging`` warning on logger ``"poolsplit"`` when
          the always tier alone costs more than all pools' ``max_tokens``
          together.

    Instantiate:
        ```python
        from llama_index.core.schema import TextNode
        from poolsplit_core.poolsplit import Pool
        from poolsplit_integrations.llama_index import PoolSplitRetriever

        retriever = PoolSplitRetriever(
            nodes=[
                TextNode(id_="c1", text="Never force-push to main.",
                         metadata={"type": "correction", "scope": "always"}),
                TextNode(id_="t1", text="Ship the release notes.",
                         metadata={"type": "task", "base_priority": 9}),
            ],
            pools=[Pool("work", max_tokens=400, max_entries=5)],
        )
        ```

    Invoke:
        ```python
        [(n.node.node_id, n.score) for n in retriever.retrieve("release?")]
        # [('c1', ...), ('t1', ...)] -- the correction first, scored highest
        ```

    Use within a query engine:
        ```python
        from llama_index.core.query_engine import RetrieverQueryEngine
        engine = RetrieverQueryEngine.from_args(retriever, llm=llm)
        ```

    One store, many tenants:
        ``retrieve`` takes only the query, so the tenant filter lives on the
        retriever. Build one retriever over the whole store (the nodes are
        mapped and prepared once), then bind each request's user with
        :meth:`with_filter`, which shares the prepared store and costs no
        rebuild. ``require_filter_keys`` makes the unbound retriever refuse
        every call, so a forgotten ``with_filter`` fails instead of loading
        every user's memories:

        ```python
        shared = PoolSplitRetriever(
            nodes=all_users_nodes,            # metadata carries "user_id"
            pools=pools,
            require_filter_keys=("user_id",),
            max_always_tokens=300,            # corrections above 300 tokens: an error
        )
        shared.retrieve("deploy?")            # ValueError: ... lacks ['user_id']
        retriever = shared.with_filter({"user_id": request.user_id})
        nodes = retriever.retrieve("deploy?")  # user "a"'s corrections never reach "b"
        ```

    Explain:
        :meth:`explain` returns the core's
        :class:`~poolsplit_core.Explanation` for a query: one record per
        node the filter kept (outcome ``always``, ``selected``,
        ``inactive``, ``no_pool``, ``over_tokens`` or ``over_entries``; pool,
        score, cost, the tokens left at a near miss) and one ledger per pool
        (tokens used and left, entries selected and skipped, always-scope
        tokens accounted but not charged). Other tenants' nodes get no
        record.

        ```python
        why = retriever.explain("deploy?")
        why.ledgers["work"].tokens_left
        [(d.entry["id"], d.outcome) for d in why.decisions]
        ```

    Returned nodes are copies: always-scope nodes first (pool order, then
    store order), then contextual nodes pool by pool in selection order. See
    the module docstring for the metadata keys and the always-scope score.
    """

    def __init__(
        self,
        nodes: Sequence[BaseNode] | None = None,
        pools: Sequence[Pool] = (),
        *,
        k: int | None = None,
        context: Mapping[str, Any] | None = None,
        scorer: Callable[..., float] = default_scorer,
        token_counter: Callable[[str], int] = default_token_counter,
        is_active: Callable[[Mapping[str, Any]], bool] = default_is_active,
        now: datetime | None = None,
        base_retriever: BaseRetriever | None = None,
        filter: Mapping[str, Any] | None = None,
        require_filter_keys: Iterable[str] | None = None,
        max_always_tokens: int | None = None,
        strict: bool = True,
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
        **unknown: NoReturn,
    ) -> None:
        # Every shared option is a keyword above, spelt and defaulted as Options declares
        # it (tests/integrations/test_options_declared_once.py); read them by name.
        given = {name: value for name, value in locals().items() if name in OPTION_NAMES}
        refuse_unknown(f"{type(self).__name__}()", unknown, _init_arguments(type(self).__init__))
        if nodes is None and base_retriever is None:
            raise ValueError(
                "PoolSplitRetriever needs nodes, a base_retriever, or both; got neither"
            )
        if base_retriever is not None and not isinstance(base_retriever, BaseRetriever):
            raise TypeError(
                "base_retriever must be a LlamaIndex BaseRetriever,"
                f" got {type(base_retriever).__name__}"
            )
        self._options = Options(**given)
        self._base_retriever = base_retriever
        self._source: VectorStoreSource | None = None
        self._live = _live_store(nodes or (), self._options, type(self).__name__,
                                 all_memory=base_retriever is None)
        # An unbound retriever with require_filter_keys is allowed: it is the
        # shared template that with_filter() binds per tenant. Its calls refuse.
        super().__init__(callback_manager=callback_manager, verbose=verbose)

    @classmethod
    def from_defaults(
        cls,
        *,
        nodes: Sequence[BaseNode] | None = None,
        documents: Sequence[Document] | None = None,
        pools: Sequence[Pool] = (),
        node_parser: NodeParser | None = None,
        **kwargs: Any,
    ) -> PoolSplitRetriever:
        """Build from exactly one of ``nodes`` or ``documents``.

        >>> from poolsplit_core.poolsplit import Pool
        >>> from llama_index.core.schema import TextNode
        >>> r = PoolSplitRetriever.from_defaults(
        ...     nodes=[TextNode(id_="a", text="alpha")], pools=[Pool("all", 100, 5)])
        >>> [n.node.node_id for n in r.retrieve("alpha")]
        ['a']

        ``documents`` become one node per document unless ``node_parser`` is
        given. Other keyword arguments go to ``__init__``.

        Raises:
            ValueError: when both or neither of ``nodes`` and ``documents`` are given.
            TypeError: when a keyword argument is not one ``__init__`` takes.
        """
        refuse_unknown(f"{cls.__name__}.from_defaults()", kwargs, [
            *_init_arguments(cls.from_defaults), *_init_arguments(cls.__init__, "nodes", "pools")])
        if (nodes is None) == (documents is None):
            given = "both" if nodes is not None else "neither"
            raise ValueError(f"give exactly one of nodes or documents, got {given}")
        if documents is not None:
            return cls.from_documents(documents, pools=pools, node_parser=node_parser, **kwargs)
        if node_parser is not None:
            raise ValueError("node_parser applies to documents only; got nodes")
        return cls(nodes=nodes, pools=pools, **kwargs)

    @classmethod
    def from_documents(
        cls,
        documents: Sequence[Document],
        pools: Sequence[Pool] = (),
        node_parser: NodeParser | None = None,
        **kwargs: Any,
    ) -> PoolSplitRetriever:
        """Build from Documents: one node per document, or ``node_parser``'s nodes.

        Each node keeps its document's id (without a parser), text and
        metadata, so ``scope="always"`` on a document makes it a correction.
        Other keyword arguments go to ``__init__``.
        """
        refuse_unknown(f"{cls.__name__}.from_documents()", kwargs, [
            *_init_arguments(cls.from_documents), *_init_arguments(cls.__init__, "nodes", "pools")])
        return cls(nodes=_documents_to_nodes(documents, node_parser), pools=pools, **kwargs)

    @classmethod
    def from_vector_store(
        cls,
        vector_store: Any,
        pools: Sequence[Pool] = (),
        *,
        embed_model: BaseEmbedding | None = None,
        similarity_top_k: int | None = None,
        filters: MetadataFilters | None = None,
        **kwargs: Any,
    ) -> PoolSplitRetriever:
        """Read memory from a vector store on every query: corrections first, every pool fed.

        ``vector_store`` is a LlamaIndex vector store that keeps text
        (``PGVectorStore``, ...) or a ``VectorStoreIndex`` (its
        ``embed_model`` is the default). Each query reads the always tier
        from the store (``get_nodes`` filtered on ``scope == "always"`` and
        the tenant ``filter``) and runs one filtered search per pool (its
        types, the tenant, ``filters``; ``similarity_top_k`` per pool,
        default ``max(10, 3 x max_entries)``); pool-split then runs over
        those nodes. See :class:`VectorStoreSource`. Other keyword arguments
        go to ``__init__`` (``k``, ``context``, ``scorer``, ``filter``,
        ``require_filter_keys``, ...; ``nodes=`` adds static nodes).

        Raises:
            ValueError: a vector store that keeps no text (outside its
                index); and, on a query, an embedding dimension that is not
                the store's, or a filter the store cannot express.
            TypeError: no ``embed_model`` (outside an index), or a wrong type.
        """
        refuse_unknown(f"{cls.__name__}.from_vector_store()", kwargs, [
            *_init_arguments(cls.from_vector_store), *_init_arguments(cls.__init__, "pools")])
        source = VectorStoreSource(vector_store, embed_model=embed_model,
                                   similarity_top_k=similarity_top_k, filters=filters)
        kwargs.setdefault("nodes", [])
        retriever = cls(pools=pools, **kwargs)
        retriever._source = source
        return retriever

    @property
    def source(self) -> VectorStoreSource | None:
        """The vector store this retriever reads on every query (:meth:`from_vector_store`)."""
        return self._source

    def _candidates(self, bundle: QueryBundle) -> list[NodeWithScore]:
        """The vector store's always tier and per-pool hits, then the base retriever's."""
        found: list[NodeWithScore] = []
        if self._source is not None:
            found = self._source.candidates(bundle, self._options.pools, self._options.filter)
        if self._base_retriever is not None:
            found.extend(self._base_retriever.retrieve(bundle))
        return found

    @property
    def nodes(self) -> list[BaseNode]:
        """The stored nodes, in store order (a new list: write with :meth:`insert_nodes`)."""
        return list(self._live.objects())

    @property
    def filter(self) -> dict[str, Any] | None:
        """This retriever's tenant filter (a copy), or None."""
        return None if self._options.filter is None else dict(self._options.filter)

    @property
    def options(self) -> Options:
        """The shared options this retriever was built with (one immutable value)."""
        return self._options

    def insert_nodes(self, nodes: Sequence[BaseNode]) -> list[str]:
        """Add or replace nodes by node id, as LlamaIndex indexes name it; no rebuild.

        A node whose id is stored replaces it in place (a superseded
        correction); the others are appended. Two of ``nodes`` with one node
        id are refused (``strict=False``: the first is written). The next ``retrieve`` sees the
        write, on this retriever and on every one sharing its store
        (:meth:`with_filter`, a memory block reading through it).

        Returns:
            The ids written, in order.

        Raises:
            TypeError: An item is not a node.
            ValueError: A node the scorer would refuse (e.g. a non-numeric
                ``base_priority``), named; nothing is written.
        """
        owner = f"{type(self).__name__}.insert_nodes"
        return [str(i) for i in _write_nodes(self._live, nodes, self._options, owner)]

    def delete_nodes(self, node_ids: Sequence[str]) -> None:
        """Delete stored nodes by node id; the next ``retrieve`` no longer sees them.

        Raises:
            KeyError: An id no stored node has (nothing is deleted).
        """
        self._live.delete([node_ids] if isinstance(node_ids, str) else node_ids)

    def with_filter(self, filter: Mapping[str, Any] | None) -> PoolSplitRetriever:
        """This retriever narrowed to ``filter``: the same prepared store, nothing rebuilt.

        >>> from poolsplit_core.poolsplit import Pool
        >>> from llama_index.core.schema import TextNode
        >>> shared = PoolSplitRetriever(
        ...     nodes=[TextNode(id_="a1", text="alpha", metadata={"user_id": "a"}),
        ...            TextNode(id_="b1", text="alpha", metadata={"user_id": "b"})],
        ...     pools=[Pool("all", 100, 5)], require_filter_keys=("user_id",))
        >>> [n.node.node_id for n in shared.with_filter({"user_id": "b"}).retrieve("alpha")]
        ['b1']

        The new retriever's filter is this one's AND ``filter`` (a tenant
        filter only narrows: a different value for a key already set is a
        ``ValueError``; ``None`` keeps this one's). It shares the stored
        nodes -- writes through either are seen by both -- the base
        retriever and every other option. This retriever is unchanged.

        Raises:
            ValueError: when the result lacks a key of ``require_filter_keys``
                (or gives it no value), or ``filter`` conflicts with this one's.
            TypeError: when ``filter`` is not a dict (or None) with str keys.
        """
        owner = "PoolSplitRetriever.with_filter"
        other = copy.copy(self)
        other._options = Selector(self._live, self._options, owner=owner).narrowed(filter)
        return other

    def explain(self, query: str | QueryBundle) -> Explanation:
        """The core's records and ledgers for what ``retrieve(query)`` would load.

        Same filter, context and candidates as :meth:`retrieve` (the base
        retriever, if any, is queried); ``k`` does not apply, and the
        always-tier ceiling is not enforced, so an overflowing call can be
        examined (``ledgers[pool].always_tokens``). Nodes the filter rejects
        get no record. A record's ``entry["id"]`` is the node id (a metadata
        ``id`` is not the entry's); ``Explanation.loaded()`` gives each
        pool's loaded records in load order.

        Raises:
            ValueError: when this retriever's filter lacks a required key.
        """
        bundle = QueryBundle(query) if isinstance(query, str) else query
        selector = self._selector()
        candidates = self._candidates(bundle)
        return explain(selector, bundle.query_str, candidates, _CANDIDATES)

    _LIVE: ClassVar[tuple[str, ...]] = ("base_retriever", "vector_store")

    def _values(self) -> dict[str, Any]:
        options = self._options
        return {"scorer": options.scorer, "token_counter": options.token_counter,
                "is_active": options.is_active, "base_retriever": self._base_retriever,
                "vector_store": self._source}

    def _data(self, **kwargs: Any) -> dict[str, Any]:
        skip = excluded(kwargs.get("exclude"))
        data = {"nodes": [_node_data(node) for node in self._live.objects()],
                **self._options.to_data(), "verbose": self._verbose}
        return {key: value for key, value in data.items() if key not in skip}

    @classmethod
    def _from_data(cls, data: dict[str, Any]) -> Self:
        if "nodes" in data:
            data["nodes"] = _nodes_from_data(data["nodes"])
        if isinstance(data.get("now"), str):
            data["now"] = datetime.fromisoformat(data["now"])
        return cls(**data)

    def _selector(self) -> Selector:
        """The call's selector, refused first when the filter is unbound (fail closed)."""
        selector = Selector(self._live, self._options, owner="this PoolSplitRetriever",
                            how=_RETRIEVER_HOW)
        selector.active_filter()
        return selector

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        """Pool-split over the stored nodes and the base retriever's candidates."""
        with tracing.read(type(self).__name__, {"message": query_bundle.query_str}):
            selector = self._selector()  # a refusal: the span's error
            return _pool_split_nodes(selector, query_bundle.query_str,
                                     self._candidates(query_bundle))

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        """Async :meth:`_retrieve`: awaits the base retriever; the core itself is sync."""
        with tracing.read(type(self).__name__, {"message": query_bundle.query_str}):
            selector = self._selector()  # a refusal: the span's error
            candidates: list[NodeWithScore] = []
            if self._source is not None:
                candidates = self._source.candidates(query_bundle, self._options.pools,
                                                     self._options.filter)
            if self._base_retriever is not None:
                candidates.extend(await self._base_retriever.aretrieve(query_bundle))
            return _pool_split_nodes(selector, query_bundle.query_str, candidates)


# --------------------------------------------------------------------------
# VectorStoreSource: memory that lives in a vector store
# --------------------------------------------------------------------------

class VectorStoreSource(VectorSource[NodeWithScore]):
    """Where a :class:`PoolSplitRetriever` reads memory that lives in a vector store.

    Built by :meth:`PoolSplitRetriever.from_vector_store`; on every query it
    reads:

    - **the always tier from the store itself**: ``get_nodes`` with the
      metadata filters ``scope == "always"`` AND the tenant filter AND
      ``filters`` -- every correction of the tenant, whatever the similarity
      search finds;
    - **per pool, a filtered similarity search**: ``type IN pool.types`` (no
      type filter for a pool of every type) AND the tenant AND ``filters``,
      ``similarity_top_k`` nodes each, so a crowded type cannot push a quiet
      one out of the candidates before pool-split runs.

    The candidates' similarities reach the scorer as the entry key
    ``similarity``. A ``VectorStoreIndex`` on LlamaIndex's in-memory defaults
    works (its ``SimpleVectorStore`` keeps no text: the index's docstore
    supplies the nodes, and its metadata is filtered with LlamaIndex's own
    filter function), as does any vector store that keeps text and
    implements ``get_nodes(filters=...)`` (``PGVectorStore``). A node without
    a ``type`` is a ``"note"``, as for the core: a pool whose types name
    ``"note"`` also searches for those (``type`` ``IS_EMPTY``; a store that
    cannot express it is searched without the type filter, the same
    ``similarity_top_k``, and its untyped hits kept) and keeps the best
    ``similarity_top_k`` of both searches.
    """

    def __init__(self, vector_store: Any, *, embed_model: BaseEmbedding | None = None,
                 similarity_top_k: int | None = None,
                 filters: MetadataFilters | None = None) -> None:
        docstore = None
        if isinstance(vector_store, VectorStoreIndex):
            if embed_model is None:
                embed_model = vector_store._embed_model
            docstore = vector_store.docstore
            vector_store = vector_store.vector_store
        if not isinstance(vector_store, BasePydanticVectorStore):
            raise TypeError("vector_store must be a LlamaIndex vector store or a"
                            f" VectorStoreIndex, got {type(vector_store).__name__}")
        if not isinstance(embed_model, BaseEmbedding):
            raise TypeError("from_vector_store needs embed_model=, the embedding model the"
                            " store was built with (a LlamaIndex BaseEmbedding), got"
                            f" {type(embed_model).__name__}")
        if not vector_store.stores_text and docstore is None:
            raise ValueError(
                f"{type(vector_store).__name__} keeps no text (stores_text=False), so memory"
                " cannot be read from it alone; pass the VectorStoreIndex built on it (its"
                " docstore holds the nodes) or a vector store that keeps text")
        check_search_size("similarity_top_k", similarity_top_k)
        if filters is not None and not isinstance(filters, MetadataFilters):
            raise TypeError(f"filters must be LlamaIndex MetadataFilters or None,"
                            f" got {type(filters).__name__}")
        self.vector_store, self.docstore, self.embed_model = vector_store, docstore, embed_model
        self.similarity_top_k, self.filters = similarity_top_k, filters

    @property
    def search_size(self) -> int | None:
        """``similarity_top_k``, the per-pool search size (None: 3 x the pool's entry cap)."""
        return self.similarity_top_k

    def _prepare(self, query: QueryBundle, tenant: dict[str, Any]
                 ) -> tuple[list[float], list[Any]]:
        """The query's embedding (its dimension checked) and the tenant's filters."""
        scoped = self._filters(tenant)
        embedding = self.embed_model.get_query_embedding(query.query_str)
        self._check_dimension(embedding)
        return embedding, scoped

    def _always(self, ready: tuple[list[float], list[Any]]) -> list[NodeWithScore]:
        """The tenant's always-scope nodes (score ``None``)."""
        return [NodeWithScore(node=node) for node in self._always_nodes(ready[1])]

    def _search(self, ready: tuple[list[float], list[Any]], pool: Pool) -> list[NodeWithScore]:
        """One pool's hits: its types, the tenant and ``filters``."""
        embedding, scoped = ready
        filters = list(scoped)
        if pool.types is not None:
            filters.append(MetadataFilter(key="type", value=list(pool.types),
                                          operator=FilterOperator.IN))
        hits = self._query(embedding, filters, self.top_k(pool))
        if takes_untyped(pool):
            hits = best_first(hits, self._untyped(embedding, scoped, self.top_k(pool)),
                              self.top_k(pool), score=lambda hit: hit.score)
        return hits

    def _untyped(self, embedding: list[float], scoped: list[Any],
                 top_k: int) -> list[NodeWithScore]:
        """The ``top_k`` best nodes without a ``type``: by ``IS_EMPTY``, else found type-free."""
        empty = MetadataFilter(key="type", value=None, operator=FilterOperator.IS_EMPTY)
        try:
            hits = self._query(embedding, [*scoped, empty], top_k)
        except ValueError:  # _run's name for a filter the store cannot express
            hits = self._query(embedding, scoped, top_k)
        return [hit for hit in hits if "type" not in hit.node.metadata]

    def _filters(self, tenant: Mapping[str, Any]) -> list[Any]:
        """The tenant's equality filters (its values already checked), then ``filters`` (ANDed)."""
        out: list[Any] = [MetadataFilter(key=key, value=value, operator=FilterOperator.EQ)
                          for key, value in tenant.items()]
        static = self.filters
        if static is not None:
            flat = static.condition in (None, FilterCondition.AND) and all(
                isinstance(item, MetadataFilter) for item in static.filters)
            out.extend(static.filters) if flat else out.append(static)  # nested only if needed
        return out

    def _run(self, what: str, call: Callable[[], Any]) -> Any:
        try:
            return call()
        except (NotImplementedError, ValueError) as err:
            raise ValueError(
                f"{type(self.vector_store).__name__} cannot express the metadata filters of"
                f" {what}: {err}") from err

    def _always_nodes(self, scoped: list[Any]) -> list[BaseNode]:
        filters = MetadataFilters(filters=[
            MetadataFilter(key="scope", value="always", operator=FilterOperator.EQ), *scoped])
        store = self.vector_store
        if self.docstore is not None and not store.stores_text:
            metadata = getattr(getattr(store, "data", None), "metadata_dict", None)
            if metadata is None:
                raise ValueError(f"{type(store).__name__} keeps no text and no metadata to"
                                 " read the always tier from; use a vector store that keeps"
                                 " text")
            keep = build_metadata_filter_fn(metadata.__getitem__, filters)
            ids = [node_id for node_id in metadata if keep(node_id)]
            return list(self.docstore.get_nodes(ids))
        return list(self._run("the always tier",
                              lambda: store.get_nodes(filters=filters)))

    def _query(self, embedding: list[float], filters: list[Any],
               top_k: int) -> list[NodeWithScore]:
        query = VectorStoreQuery(query_embedding=embedding, similarity_top_k=top_k,
                                 filters=MetadataFilters(filters=filters) if filters else None)
        result = self._run("a pool's search", lambda: self.vector_store.query(query))
        similarities = list(result.similarities or [])
        if result.nodes is not None and self.vector_store.stores_text:
            nodes = list(result.nodes)
        else:
            docstore: Any = self.docstore
            nodes = list(docstore.get_nodes(list(result.ids or [])))
        return [NodeWithScore(node=node, score=similarities[i] if i < len(similarities)
                              else None) for i, node in enumerate(nodes)]

    def _check_dimension(self, embedding: Sequence[float]) -> None:
        store = self.vector_store
        held = getattr(store, "embed_dim", None)
        if held is None:
            vectors = getattr(getattr(store, "data", None), "embedding_dict", None)
            if vectors:
                held = len(next(iter(vectors.values())))
        if held is not None and held != len(embedding):
            raise ValueError(
                f"embedding dimension mismatch: embed_model"
                f" {type(self.embed_model).__name__} gives {len(embedding)}-dimensional"
                f" vectors, {type(store).__name__} holds {held}-dimensional ones")


# --------------------------------------------------------------------------
# PoolSplitPostprocessor
# --------------------------------------------------------------------------

class PoolSplitPostprocessor(_Component, BaseNodePostprocessor):
    """A node postprocessor that applies pool-split to another retriever's candidates.

    Setup:
        ``pip install 'poolsplit[llamaindex]'``

    Key init args:
        - ``pools``: the reserved budgets, filled in order.
        - ``pinned``: nodes that always join the candidates (typically the
          ``scope="always"`` corrections), so they load even when similarity
          search did not find them. A candidate with a pinned node's id is kept
          once (the pinned one).
        - ``k``, ``context``, ``scorer``, ``token_counter``, ``is_active``, ``now``: as
          for :class:`PoolSplitRetriever`.
        - ``filter``, ``require_filter_keys``, ``max_always_tokens``: as for
          :class:`PoolSplitRetriever`; the filter applies to the pinned nodes
          and to the candidates alike.

    Each candidate's ``NodeWithScore.score`` reaches the scorer as the entry
    key ``similarity``, so a custom scorer can blend it with the lexical
    score, e.g. ``lambda e, ctx: default_scorer(e, ctx) * (e.get("similarity") or 1)``.

    Use within a query engine:
        ```python
        engine = index.as_query_engine(
            similarity_top_k=50, llm=llm,
            node_postprocessors=[PoolSplitPostprocessor(
                pools=[Pool("work", max_tokens=800, max_entries=8)],
                pinned=correction_nodes,
            )],
        )
        ```

    Results follow the same order and score rule as the retriever (the two
    share one code path).

    Tenancy:
        Build one postprocessor per tenant (only the pinned nodes are
        mapped, so this is cheap), e.g. ``filter={"user_id": user}`` with
        ``require_filter_keys=("user_id",)``: another user's pinned
        correction or candidate never passes. The filter is applied after the
        upstream retriever's top-k, so also filter that retriever (e.g. the
        vector store's ``MetadataFilters``), or other tenants' nodes can
        crowd its top-k and leave this tenant with few candidates.
    """

    pinned: list[BaseNode] = Field(
        default_factory=list, frozen=True,
        description="Nodes that always join the candidates (mapped once, at construction).")

    _live: LiveStore = PrivateAttr()

    @field_validator("pinned", mode="before")
    @classmethod
    def _read_pinned(cls, value: Any) -> Any:
        return _nodes_from_data(value)

    @field_serializer("pinned")
    def _pinned_as_data(self, pinned: list[BaseNode]) -> list[dict[str, Any]]:
        return [_node_data(node) for node in pinned]

    def model_post_init(self, context: Any, /) -> None:
        """Map and prepare the pinned nodes once, at construction."""
        super().model_post_init(context)
        self._live = _live_store(self.pinned, self.options(), type(self).__name__,
                                 all_memory=False, what="pinned")

    def _postprocess_nodes(
        self,
        nodes: list[NodeWithScore],
        query_bundle: QueryBundle | None = None,
    ) -> list[NodeWithScore]:
        """Pool-split over the pinned nodes plus ``nodes``; the query is the message."""
        options = self.options()
        query = query_bundle.query_str if query_bundle is not None else ""
        with tracing.read(type(self).__name__, {"message": query}):
            selector = Selector(self._live, options, owner="this PoolSplitPostprocessor",
                                how="build it with filter={filter}")
            selector.active_filter()  # a refusal: the span's error
            # A reranker's events, so that instrumentation (OpenInference) shows a reranker
            dispatcher.event(ReRankStartEvent(
                query=query_bundle, nodes=nodes, model_name="poolsplit",
                top_n=options.k if options.k is not None else len(nodes) + len(self.pinned)))
            got = _pool_split_nodes(selector, query, nodes)
            dispatcher.event(ReRankEndEvent(nodes=got))
        return got


# --------------------------------------------------------------------------
# PoolSplitMemoryBlock
# --------------------------------------------------------------------------


class PoolSplitMemoryBlock(_Component, BaseMemoryBlock[str]):
    """A ``Memory`` block that renders the agent's memory store through pool-split.

    Setup:
        ``pip install 'poolsplit[llamaindex]'``

    Key init args:
        - ``store``: the memory store -- a list of entry dicts and/or nodes
          (prepared once, here), a :class:`~poolsplit_core.PreparedStore` the
          application writes to (``add``/``upsert``/``delete``), or a
          :class:`PoolSplitRetriever` (``insert_nodes``/``delete_nodes``; its
          filter applies too). Every ``aget`` queries the prepared store as it
          is now; nothing is re-scored from scratch. Entry dicts are passed to
          the core as they are; nodes go through the shared mapping.
        - ``pools``: the reserved budgets, filled in order.
        - ``k``, ``context``, ``scorer``, ``token_counter``, ``is_active``, ``now``: as
          for :class:`PoolSplitRetriever`.
        - ``filter``, ``require_filter_keys``, ``max_always_tokens``: as for
          :class:`PoolSplitRetriever`; the filter applies to every store entry
          (a ``Memory`` is usually per user: give its block that user's filter,
          or a retriever's ``with_filter(...)`` as its store; a block that names
          no user its store needs is refused when built).
        - ``corrections_heading``: the heading above the always-scope entries.

    Instantiate:
        ```python
        from llama_index.core.memory import Memory
        block = PoolSplitMemoryBlock(store=entries, pools=pools)
        memory = Memory.from_defaults(memory_blocks=[block], token_limit=4000)
        ```

    On ``aget(messages)`` the text of the latest user message becomes
    ``context["message"]``; ``project`` and ``tags`` passed as block kwargs
    (``memory.get(project="atlas")``) override the default context, and any
    other block kwarg is left to the blocks it is meant for (``Memory`` passes
    every one to every block); a direct :meth:`render` refuses it. The text
    is the always-scope entries under :data:`CORRECTIONS_HEADING`, then one
    section per pool (``## <pool name>``), one ``- `` line per entry; empty
    when nothing loads. Reading never writes to the store (no access counts).

    Decisions:
        ``_aput`` does nothing, and ``accept_short_term_memory`` defaults to
        False: chat messages flushed out of the short-term queue are not
        memory entries. Deciding an entry's type, scope and priority is the
        application's job; it writes to its store, and the block reads it.

        ``priority`` defaults to 0, which ``Memory`` (0.14) never truncates:
        the pools already bound this block's size, and truncating it would
        drop the corrections, the very starvation poolsplit exists to end.
    """

    name: str = Field(default="poolsplit", description="The name of the memory block.")
    priority: int = Field(
        default=0, description="0: Memory never truncates this block (the pools bound it)."
    )
    accept_short_term_memory: bool = Field(
        default=False, description="Flushed chat messages are not stored (see _aput)."
    )
    store: Any = Field(
        description="Entry dicts and/or nodes (prepared once), a PreparedStore, or a"
                    " PoolSplitRetriever whose prepared store the block reads.")
    corrections_heading: str = Field(default=CORRECTIONS_HEADING)

    _live: LiveStore = PrivateAttr()
    _bound: dict[str, Any] | None = PrivateAttr(default=None)

    @field_serializer("store")
    def _store_as_data(self, store: Any) -> Any:
        if not isinstance(store, list):
            return None  # a live store: to_dict refuses it by name first
        return [_node_data(item) if isinstance(item, BaseNode) else dict(item) for item in store]

    _LIVE: ClassVar[tuple[str, ...]] = ("store",)

    def _values(self) -> dict[str, Any]:
        values = super()._values()
        values["store"] = None if isinstance(self.store, list) else self.store  # live: refused
        return values

    @field_validator("store", mode="before")
    @classmethod
    def _check_store(cls, value: Any) -> Any:
        if isinstance(value, (PreparedStore, PoolSplitRetriever)):
            return value
        if callable(value):
            raise TypeError(
                "store cannot be a callable: the block prepares its store once and reads it"
                " every turn; pass a PreparedStore (or a PoolSplitRetriever) and write to"
                " it with add/upsert/delete (insert_nodes/delete_nodes)")
        if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
            raise TypeError(
                "store must be a list of entry dicts/nodes, a PreparedStore or a"
                f" PoolSplitRetriever, got {type(value).__name__}"
            )
        items = _nodes_from_data(list(value))
        for i, item in enumerate(items):
            if not isinstance(item, (BaseNode, Mapping)):
                raise TypeError(
                    f"store item at index {i} must be an entry dict or a node,"
                    f" got {type(item).__name__}"
                )
        return items

    def model_post_init(self, context: Any, /) -> None:
        """Prepare the store once: a list is mapped here; a store or retriever is shared."""
        super().model_post_init(context)
        owner = type(self).__name__
        store = self.store
        if isinstance(store, PoolSplitRetriever):
            self._live, self._bound = store._live, store.filter
            if self.require_filter_keys is None:  # the retriever's statement of its users
                self.__dict__["require_filter_keys"] = store._options.require_filter_keys
        elif isinstance(store, PreparedStore):
            self._live = LiveStore(store=store)
            warn_unpooled(logger, owner, store.entries, self.pools)
        else:
            options = self.options()
            items = [(_node_entry(item), item) if isinstance(item, BaseNode) else (item, item)
                     for item in store]
            try:
                self._live = LiveStore(items, scorer=options.scorer,
                                       token_counter=options.token_counter,
                                       is_active=options.is_active,
                                       partition_key=options.partition_key,
                                       strict=options.strict, what="store")
            except (TypeError, ValueError) as err:
                raise type(err)(f"{owner}: store: {err}") from err
            warn_unpooled(logger, owner, self._live.store.entries, options.pools)
        # A block takes no filter per call (Memory has no config to name a user in): one
        # that names no user its store needs could never render, so it is refused now.
        self._selector().active_filter(bound=self._bound)

    def _selector(self) -> Selector:
        """The block's selector: a tenant is named by the block's filter or its retriever's."""
        how = ("build the block with filter={filter}, or give it"
               " store=retriever.with_filter({filter})" if isinstance(
                   self.store, PoolSplitRetriever) else
               "build the block with filter={filter} (one block per user's Memory)")
        return Selector(self._live, self.options(), owner="this PoolSplitMemoryBlock", how=how)

    def entries(self) -> list[Mapping[str, Any]]:
        """The store as entry dicts, as they are now (nodes mapped, dicts as they are)."""
        return self._live.store.entries

    @dispatcher.span
    def render(self, message: str = "", **overrides: Any) -> str:
        """Run pool-split for ``message`` and render the text this block returns.

        ``overrides`` replace the default context for this call: ``project=``
        and ``tags=``; any other keyword is refused (``TypeError``). Over a
        retriever, its filter applies too (the block's narrows it).
        """
        refuse_unknown(f"{type(self).__name__}.render()", overrides, CONTEXT_KWARGS)
        options = self.options()
        selector = self._selector()
        active = selector.active_filter(bound=self._bound)
        extra: list[dict[str, Any]] = []
        source = self.store.source if isinstance(self.store, PoolSplitRetriever) else None
        if source is not None:  # memory in a vector store: read it for this message
            found = source.candidates(QueryBundle(message), options.pools, active)
            _, extra = merge(self._live, found, _CANDIDATES)
        loaded = selector.select(message, extra, bound=self._bound, **overrides)
        # the loaded entries per pool, in the result's order, for the core's one rendering
        by_pool: dict[str, list[Decision]] = {name: [] for name in (
            ALWAYS_POOL, *(pool.name for pool in options.pools))}
        for d in loaded:
            by_pool.setdefault(str(d.pool), []).append(d)
        return render.render_pools(by_pool, corrections_heading=self.corrections_heading)


    async def _aget(
        self, messages: list[ChatMessage] | None = None, **block_kwargs: Any
    ) -> str:
        """The rendered store for the latest user message in ``messages``.

        ``project=`` and ``tags=`` in ``block_kwargs``
        (``memory.get(project=..., tags=...)``) override the default context;
        every other keyword is ignored. ``Memory`` passes every keyword of
        ``memory.get``/``aget`` to every block, plus its ``session_id``, so a
        keyword meant for another block (``memory.get(mood="tired")`` for a
        block of the application's) reaches this one too: refusing it would
        make this block unusable beside any block that takes a parameter of
        its own. A misspelling (``tagz=``) is therefore not caught here;
        :meth:`render`, called directly, still refuses it (``TypeError``).
        """
        overrides = {key: block_kwargs[key] for key in CONTEXT_KWARGS if key in block_kwargs}
        return self.render(_latest_user_text(messages), **overrides)

    async def _aput(self, messages: list[ChatMessage]) -> None:
        """Do nothing: the application writes entries to its store (see the class doc)."""


def _latest_user_text(messages: Sequence[ChatMessage] | None) -> str:
    """The text of the last user message, or "" when there is none."""
    for message in reversed(messages or ()):
        if message.role == MessageRole.USER:
            return message.content or ""
    return ""
