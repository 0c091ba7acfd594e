"""LangChain agents: the user's memory by pools in the system message of every model call.

:class:`PoolSplitMemoryMiddleware` is an ``AgentMiddleware`` for
``langchain.agents.create_agent``. Before every model call (its
``wrap_model_call`` and ``awrap_model_call`` hooks) it reads the run's user's
memory by pools and puts it at the start of the system message: every
correction first, then each pool under its name, each within its budget, as
:func:`~poolsplit_core.render.render_pools` writes them. The rest of the
request (messages, tools, model, settings) is passed on as it came, and the
agent's state is never changed.

Memory comes from one of two sources:

- the agent's LangGraph store (``create_agent(..., store=PoolSplitStore(...))``,
  read as ``runtime.store``), under a namespace template filled from the run's
  context, e.g. ``("memories", "{user_id}")`` and
  ``agent.invoke(..., context={"user_id": "ana"})``;
- any poolsplit retriever (``PoolSplitRetriever``, ``PoolSplitStoreRetriever``),
  called with the run's context as its configurable.

Tenancy fails closed, by the store's and the retrievers' own rule: when the
memories carry a ``user_id`` and the run names no user, the model is not
called and a ValueError says how to pass one (``context=``).

Needs the ``agents`` extra: ``pip install 'poolsplit[agents]'``.
"""

# The imports below must follow the require() call, which turns a missing
# langchain into an ImportError naming the extra to install.
# ruff: noqa: E402

from __future__ import annotations

from poolsplit_integrations._extras import require

require("langchain.agents.middleware", "agents", "langgraph.store.base")

import dataclasses
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any, NamedTuple, cast

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain.agents.middleware.types import ModelCallResult
from langchain_core.documents import Document
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableConfig

from poolsplit_core.poolsplit import Ledger, Pool, default_scorer
from poolsplit_core.render import render_pools
from poolsplit_integrations._entries import to_entry
from poolsplit_integrations._options import (
    ALWAYS_POOL,
    check_context,
    check_max_always_tokens,
    check_pools_arg,
)
from poolsplit_integrations._select import build_context
from poolsplit_integrations._tenancy import USER_KEY, UnboundTenant, check_filter
from poolsplit_integrations.langgraph import (
    PoolSplitStore,
    PoolSplitStoreRetriever,
    StoreExplanation,
    _check_namespace,
    _fill_from,
    _Filled,
)

__all__ = ["PoolSplitMemoryMiddleware"]


class _Read(NamedTuple):
    """One model call's read: its query, whether it wants ledgers, and its source's arguments.

    A retriever (invoked with ``config``), else the agent's store, read with
    ``store_args`` and ``store_kwargs`` (namespace, pools, context, clock,
    ceiling; the tenant's filter and the template's user).
    """

    message: str
    ledgers: bool
    retriever: Any
    config: RunnableConfig
    store: PoolSplitStore | None
    store_args: tuple[Any, ...]
    store_kwargs: dict[str, Any]


#: How a run names a variable of the namespace template, or its user: its context.
_RUN_WITH = "agent.invoke(..., context={{{name!r}: '<{name}>'}})"


class PoolSplitMemoryMiddleware(AgentMiddleware):
    """Memory by pools, corrections first, in the system message of every model call.

    Setup:
        ``pip install 'poolsplit[agents]'``

    Instantiate:
        ```python
        from langchain.agents import create_agent
        from langgraph.store.memory import InMemoryStore
        from poolsplit_core import Pool
        from poolsplit_integrations.agents import PoolSplitMemoryMiddleware
        from poolsplit_integrations.langgraph import PoolSplitStore

        memory = PoolSplitMemoryMiddleware(
            pools=[Pool("work", 300, 3, ("task",))],
            namespace=("memories", "{user_id}"))
        agent = create_agent(model, tools, middleware=[memory],
                             store=PoolSplitStore(InMemoryStore()))
        agent.invoke({"messages": [...]}, context={"user_id": "ana"})
        ```

    Key init args:
        - ``pools``: the pools (``Pool`` objects or their plain-data dicts),
          for the store source; a retriever brings its own.
        - ``namespace``: a namespace template, e.g. ``("memories",
          "{user_id}")``, filled from the run's context on every call: read
          the agent's store (``runtime.store``, a :class:`PoolSplitStore`).
        - ``retriever``: instead of ``namespace``, a poolsplit retriever
          (``PoolSplitRetriever``, ``PoolSplitStoreRetriever``), invoked with
          the run's context as its ``config["configurable"]``; it holds its
          own ``pools``, ``context``, ``now`` and ``max_always_tokens``
          (given here too, they are refused).
        - ``query``: ``query(state) -> str``, the query the memory is chosen
          for; by default the text of the latest human message.
        - ``context``: the default retrieval context (``project``, ``tags``);
          the query becomes its ``message``.
        - ``now``: a fixed clock for scoring (None: the current time).
        - ``max_always_tokens``: the always tier's ceiling: costlier
          corrections raise ``AlwaysScopeOverflowError`` (never dropped).
        - ``report_left_out``: add a line to each pool whose budget left
          memories out, saying how many (default False).

    What the model sees: the memory text (``## Corrections (always apply)``,
    then ``## {pool}`` sections, one ``- `` line per memory), a blank line,
    then the agent's own system prompt. Nothing loaded: the request is
    passed on unchanged. The budgets count tokens with the source's counter
    (``PoolSplitStore(token_counter=...)``, the retriever's ``token_counter``).

    Freshness: a memory written through the store during the run (a tool's
    ``runtime.store.put``) is in the very next model call.

    Tenancy: the namespace template's ``{user_id}`` names the user (items of
    another user in it are left out); without it, a ``user_id`` in the run's
    context narrows the read to that user. When the memories carry a
    ``user_id`` and the run names none, a ValueError says how to pass it
    (``context=``); so does a template variable the context lacks.
    """

    def __init__(
        self,
        pools: Sequence[Pool | Mapping[str, Any]] | None = None,
        *,
        namespace: Sequence[str] | None = None,
        retriever: BaseRetriever | None = None,
        query: Callable[[Mapping[str, Any]], str] | None = None,
        context: Mapping[str, Any] | None = None,
        now: datetime | None = None,
        max_always_tokens: int | None = None,
        report_left_out: bool = False,
    ) -> None:
        if (namespace is None) == (retriever is None):
            raise ValueError(
                "PoolSplitMemoryMiddleware needs exactly one source: namespace= (a template"
                " such as ('memories', '{user_id}') over the agent's store) or retriever=,"
                f" got namespace={namespace!r} and retriever={retriever!r}"
            )
        if namespace is not None:
            if pools is None:
                raise ValueError("PoolSplitMemoryMiddleware(namespace=...) needs pools=, the"
                                 " pools to read the namespace with")
            self.pools: list[Pool] | None = check_pools_arg(pools)
            self.namespace: tuple[str, ...] | None = _check_template(namespace)
        else:
            if not _is_poolsplit_retriever(retriever):
                raise TypeError(
                    "retriever must be a poolsplit retriever (PoolSplitRetriever,"
                    f" PoolSplitStoreRetriever), got {type(retriever).__name__}"
                )
            if report_left_out is True and not hasattr(retriever, "explain"):
                raise ValueError(
                    "report_left_out=True needs the ledgers of each call, which a"
                    f" {type(retriever).__name__} does not give: read its store with"
                    " PoolSplitMemoryMiddleware(pools=..., namespace=...) instead")
            own = {"pools": pools, "context": context, "now": now,
                   "max_always_tokens": max_always_tokens}
            given = [name for name, value in own.items() if value is not None]
            if given:
                raise ValueError(
                    "PoolSplitMemoryMiddleware(retriever=...) reads with the retriever's own"
                    f" options: set {', '.join(f'{name}=' for name in given)} on the"
                    f" retriever, not here (got {', '.join(f'{n}={own[n]!r}' for n in given)})")
            self.pools, self.namespace = None, None
        if query is not None and not callable(query):
            raise TypeError(f"query must be a callable (state) -> str or None,"
                            f" got {type(query).__name__}")
        if context is not None and not isinstance(context, Mapping):
            raise TypeError(f"context must be a dict or None, got {type(context).__name__}")
        check_context(context, default_scorer)
        if now is not None and not isinstance(now, datetime):
            raise TypeError(f"now must be a datetime or None, got {now!r}")
        if not isinstance(report_left_out, bool):
            raise TypeError(f"report_left_out must be True or False, got {report_left_out!r}")
        self.retriever = retriever
        self.query = query
        self.context = dict(context or {})
        self.now = now
        self.max_always_tokens = check_max_always_tokens(max_always_tokens)
        self.report_left_out = report_left_out

    # ----------------------------------------------------------------------
    # The hooks
    # ----------------------------------------------------------------------

    def wrap_model_call(
        self,
        request: ModelRequest,
        handler: Callable[[ModelRequest], ModelResponse],
    ) -> ModelCallResult:
        """Put the run's memory in the system message, then call the model."""
        return handler(self._with(request, self._memory(request)))

    async def awrap_model_call(
        self,
        request: ModelRequest,
        handler: Callable[[ModelRequest], Awaitable[ModelResponse]],
    ) -> ModelCallResult:
        """The async twin of :meth:`wrap_model_call` (its read does not block the loop)."""
        return await handler(self._with(request, await self._amemory(request)))

    # ----------------------------------------------------------------------
    # One call's memory
    # ----------------------------------------------------------------------

    def _memory(self, request: ModelRequest) -> str:
        read = self._read(request)
        with _naming_the_user():
            if read.retriever is not None:
                docs = read.retriever.invoke(read.message, read.config)
                why = read.retriever.explain(read.message, read.config) if read.ledgers else None
                return _documents_memory(docs, None if why is None else why.ledgers)
            store = cast(PoolSplitStore, read.store)
            args, kwargs = read.store_args, read.store_kwargs
            if read.ledgers:
                return _explained_memory(store._explain(*args, **kwargs))
            return render_pools(store._decide(*args, **kwargs)[0])

    async def _amemory(self, request: ModelRequest) -> str:
        read = self._read(request)
        with _naming_the_user():
            if read.retriever is not None:
                docs = await read.retriever.ainvoke(read.message, read.config)
                why = (await read.retriever.aexplain(read.message, read.config)
                       if read.ledgers else None)
                return _documents_memory(docs, None if why is None else why.ledgers)
            store = cast(PoolSplitStore, read.store)
            args, kwargs = read.store_args, read.store_kwargs
            if read.ledgers:
                return _explained_memory(await store._aexplain(*args, **kwargs))
            return render_pools((await store._adecide(*args, **kwargs))[0])

    def _read(self, request: ModelRequest) -> _Read:
        """What one call reads, from which source, for which tenant (checked, nothing read)."""
        message, values = self._query(request), _context_values(request.runtime.context)
        config: RunnableConfig = {"configurable": dict(values)}
        if self.retriever is not None:
            return _Read(message, self.report_left_out, self.retriever, config, None, (), {})
        store, filled, filter = self._store_read(request, values)
        args = (filled.namespace, self.pools or [], build_context(self.context, message),
                self.now, self.max_always_tokens)
        return _Read(message, self.report_left_out, None, config, store, args,
                     {"filter": filter, "bound": filled.user})

    def _query(self, request: ModelRequest) -> str:
        """The query: ``query(state)``, else the latest human message's text ("" if none)."""
        if self.query is not None:
            got = self.query(request.state)
            if not isinstance(got, str):
                raise TypeError(f"PoolSplitMemoryMiddleware: query(state) must return a str,"
                                f" got {type(got).__name__} {got!r}")
            return got
        return _latest_human_text(request.messages)

    def _store_read(self, request: ModelRequest, values: Mapping[str, Any]
                    ) -> tuple[PoolSplitStore, _Filled, dict[str, Any] | None]:
        """The agent's store, the namespace filled from the run's context, and its user filter."""
        store = request.runtime.store
        if not isinstance(store, PoolSplitStore):
            got = "no store" if store is None else f"a {type(store).__name__}"
            raise TypeError(
                f"PoolSplitMemoryMiddleware(namespace=...) reads the agent's store, and the"
                f" agent has {got}: create it with create_agent(...,"
                " store=PoolSplitStore(InMemoryStore())) (or your store inside PoolSplitStore)"
            )
        template = cast(tuple[str, ...], self.namespace)  # a store source has one (init)
        filled = _fill_from(template, values, source="context",
                           found="this run's context", run_with=_RUN_WITH)
        # The run's context names the tenant: its user (unless the template did) and
        # any key the store requires every read to name.
        keys = [*([USER_KEY] if filled.user is None else []), *(store.require_filter_keys or ())]
        named = {key: values[key] for key in keys if key in values}
        return store, filled, check_filter(named) if named else None

    def _with(self, request: ModelRequest, memory: str) -> ModelRequest:
        """The request with the memory at the start of its system message; all else as it was."""
        if not memory:
            return request
        return request.override(system_message=_prepended(request.system_message, memory))


# --------------------------------------------------------------------------
# Private helpers
# --------------------------------------------------------------------------


def _check_template(namespace: Any) -> tuple[str, ...]:
    """A namespace template: a non-empty tuple of non-empty str labels (a str is refused)."""
    if isinstance(namespace, str) or not isinstance(namespace, (tuple, list)) or not namespace:
        raise TypeError("namespace must be a non-empty tuple of str labels, such as"
                        f" ('memories', '{{user_id}}'), got {namespace!r}")
    return _check_namespace(tuple(namespace), "namespace")


def _is_poolsplit_retriever(retriever: Any) -> bool:
    if isinstance(retriever, PoolSplitStoreRetriever):
        return True
    try:
        from poolsplit_integrations.langchain import PoolSplitRetriever
    except ImportError:  # pragma: no cover - langchain-core comes with the extra
        return False
    return isinstance(retriever, PoolSplitRetriever)


def _context_values(context: Any) -> Mapping[str, Any]:
    """The run's context as a mapping: a dict, a dataclass's fields, a pydantic model's."""
    if context is None:
        return {}
    if isinstance(context, Mapping):
        return context
    if dataclasses.is_dataclass(context) and not isinstance(context, type):
        return {f.name: getattr(context, f.name) for f in dataclasses.fields(context)}
    dump = getattr(context, "model_dump", None)
    if callable(dump):
        return dict(dump())
    if hasattr(context, "__dict__"):
        return dict(vars(context))
    raise TypeError("PoolSplitMemoryMiddleware reads the run's context as a dict, a dataclass"
                    f" or a pydantic model, got {type(context).__name__}")


def _latest_human_text(messages: Sequence[BaseMessage]) -> str:
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            return str(message.text)
    return ""


@contextmanager
def _naming_the_user() -> Iterator[None]:
    """Re-raise a read that named no user as a ValueError saying how a run names one."""
    try:
        yield
    except UnboundTenant as exc:
        if exc.keys == (USER_KEY,):
            lacks = f"the memories carry {USER_KEY!r} and this run names no user"
        else:
            lacks = f"the memories are read only for a run that names {list(exc.keys)}"
        example = ", ".join(f"{key!r}: '<{key}>'" for key in exc.keys)
        raise ValueError(
            f"PoolSplitMemoryMiddleware: {lacks}: pass it with agent.invoke(...,"
            f" context={{{example}}}) (the agent's context_schema holding"
            f" {', '.join(map(repr, exc.keys))})"
        ) from exc


def _documents_memory(docs: Sequence[Document], ledgers: Mapping[str, Ledger] | None
                      ) -> str:
    """A retriever's documents as prompt text, grouped by pool, corrections first."""
    names = [ALWAYS_POOL, *(ledgers or {})]
    by_pool: dict[str, list[Document]] = {name: [] for name in names}
    for doc in docs:
        by_pool.setdefault(str(doc.metadata.get("poolsplit_pool")), []).append(doc)
    if ledgers is not None:
        by_pool = {name: by_pool.get(name, []) for name in ledgers}
    return render_pools(by_pool, ledgers=ledgers,
                        entry=lambda doc: to_entry(doc.page_content, doc.metadata))


def _explained_memory(why: StoreExplanation) -> str:
    return render_pools(why.loaded(), ledgers=why.ledgers)


def _prepended(system: SystemMessage | None, memory: str) -> SystemMessage:
    """``system`` with ``memory`` before its content (a new message; ``system`` unchanged)."""
    if system is None:
        return SystemMessage(content=memory)
    content = system.content
    if isinstance(content, str):
        new: Any = f"{memory}\n\n{content}" if content else memory
    else:
        new = [{"type": "text", "text": memory}, *content]
    return system.model_copy(update={"content": new})
