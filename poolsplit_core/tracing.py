"""OpenTelemetry spans for pool-split reads: what was loaded, and what was left out and why.

With ``opentelemetry-api`` installed (``pip install 'poolsplit[otel]'``) and a
tracer provider set by the application, every pool-split read -- a
:class:`~poolsplit_core.prepared.PreparedStore` query, each adapter's
retrieval, the LangGraph store's ``retrieve_pools`` -- emits one span named
``search_memory <store id>`` that follows the OpenTelemetry GenAI memory
conventions, plus ``poolsplit.*`` attributes for what they lack: each pool's
budget, what it spent, what it loaded and what it left out by reason.

>>> ATTRIBUTES["gen_ai.operation.name"].when
'always'
>>> sorted(name for name, a in ATTRIBUTES.items() if a.when == "content")
['gen_ai.memory.query.text', 'gen_ai.memory.records', 'poolsplit.user_id']

Without ``opentelemetry-api``, or with no tracer provider set, a read costs
one check more and nothing else: no span, no ledger. With a provider the
span's ledger is the one :func:`~poolsplit_core.poolsplit.explain_pools`
gives for the same call, computed only when the span records (so a traced
read costs about one ``explain_pools`` more).

Content -- the query text, the loaded memories, the user a filter names --
is recorded only with content capture on: the conventions' environment
variable ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true``, or
:func:`capture_content` (which wins over the variable).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from contextvars import ContextVar
from typing import Any, Callable, NamedTuple

from poolsplit_core.poolsplit import Decision, Explanation

__all__ = ["ATTRIBUTES", "CONTENT_ENV", "Attribute", "capture_content", "ledger_attributes",
           "ledger_data"]

#: The conventions' switch for recording content (the query, the memories).
CONTENT_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"

#: The ``gen_ai.provider.name`` of every poolsplit span.
PROVIDER = "poolsplit"


class Attribute(NamedTuple):
    """One span attribute: when it is recorded (``"always"`` or ``"content"``) and what it is."""

    when: str
    what: str


#: Every attribute a read's span can carry, and nothing else. The ``gen_ai.*``
#: and ``error.type`` names are the OpenTelemetry semantic conventions'
#: (GenAI memory spans); the ``poolsplit.*`` ones are the ledger of
#: :func:`~poolsplit_core.poolsplit.explain_pools`, one array item per pool,
#: in the ``poolsplit.pools`` order.
ATTRIBUTES: dict[str, Attribute] = {
    "gen_ai.operation.name": Attribute("always", "search_memory"),
    "gen_ai.provider.name": Attribute("always", "poolsplit"),
    "gen_ai.memory.store.id": Attribute(
        "always", "the component that read: PreparedStore, PoolSplitRetriever, PoolSplitStore..."),
    "gen_ai.memory.record.count": Attribute("always", "memories loaded"),
    "gen_ai.memory.query.text": Attribute("content", "the query (the context's message)"),
    "gen_ai.memory.records": Attribute(
        "content", "the loaded memories as JSON: id, content, pool, score, always"),
    "error.type": Attribute("always", "the exception's type, on a refused read"),
    "poolsplit.engine": Attribute("always", "the engine that answered"),
    "poolsplit.user_filter": Attribute(
        "always", "whether the read was bound to a user (a user_id filter, a namespace)"),
    "poolsplit.user_id": Attribute("content", "the user it was bound to"),
    "poolsplit.pools": Attribute("always", "the pools' names, in fill order"),
    "poolsplit.pool.max_tokens": Attribute("always", "each pool's token budget"),
    "poolsplit.pool.max_entries": Attribute("always", "each pool's entry cap"),
    "poolsplit.pool.tokens_used": Attribute("always", "tokens each pool spent on its picks"),
    "poolsplit.pool.selected": Attribute("always", "contextual entries each pool loaded"),
    "poolsplit.pool.always": Attribute("always", "always-scope entries each pool loaded"),
    "poolsplit.pool.always_tokens": Attribute(
        "always", "their tokens (outside the budget)"),
    "poolsplit.pool.over_tokens": Attribute(
        "always", "entries each pool left out: they did not fit the tokens left"),
    "poolsplit.pool.over_entries": Attribute(
        "always", "entries each pool left out: it had no entry left"),
    "poolsplit.always_tokens": Attribute("always", "the always tier's tokens, every pool"),
    "poolsplit.inactive": Attribute("always", "entries left out as inactive"),
    "poolsplit.no_pool": Attribute("always", "entries left out: no pool takes their type"),
}

_capture: bool | None = None


def capture_content(on: bool | None) -> None:
    """Record content (query, memories, user id) on the spans: True, False, or None (the env).

    >>> capture_content(True); _capturing()
    True
    >>> capture_content(None)
    """
    global _capture
    if on is not None and not isinstance(on, bool):
        raise TypeError(f"capture_content takes True, False or None, got {on!r}")
    _capture = on


def _capturing() -> bool:
    if _capture is not None:
        return _capture
    return os.environ.get(CONTENT_ENV, "").strip().lower() == "true"


#: Each pool's ledger fields, as ``poolsplit.pool.<field>``: (field, the Ledger's attribute).
_POOL_FIELDS = (("max_tokens", "max_tokens"), ("max_entries", "max_entries"),
                ("tokens_used", "tokens_used"), ("selected", "selected"), ("always", "always"),
                ("always_tokens", "always_tokens"), ("over_tokens", "skipped_tokens"),
                ("over_entries", "skipped_entries"))


def ledger_data(explanation: Explanation) -> dict[str, Any]:
    """The ledger of one explanation as plain data: each pool's, then what no pool considered.

    >>> from poolsplit_core.poolsplit import Pool, explain_pools
    >>> got = explain_pools([{"id": "fix", "scope": "always"}, {"id": "big", "content": "x" * 400},
    ...                      {"id": "old", "status": "retired"}], [Pool("all", 20, 5)])
    >>> data = ledger_data(got)
    >>> data["pools"][0]["pool"], data["pools"][0]["over_tokens"], data["inactive"]
    ('all', 1, 1)

    ``over_tokens`` and ``over_entries`` count the entries a pool left out
    for want of tokens or of an entry (an entry several pools skipped counts
    in each); ``inactive`` and ``no_pool`` those no pool considered.
    """
    outcomes = [d.outcome for d in explanation.decisions]
    pools = [{"pool": ledger.pool, **{field: getattr(ledger, name) for field, name in _POOL_FIELDS}}
             for ledger in explanation.ledgers.values()]
    return {"pools": pools, "always_tokens": sum(p["always_tokens"] for p in pools),
            "inactive": outcomes.count("inactive"), "no_pool": outcomes.count("no_pool")}


def ledger_attributes(explanation: Explanation) -> dict[str, Any]:
    """The ``poolsplit.*`` ledger of one explanation (:func:`ledger_data`), as span attributes.

    >>> from poolsplit_core.poolsplit import Pool, explain_pools
    >>> got = explain_pools([{"id": "fix", "scope": "always"}, {"id": "big", "content": "x" * 400},
    ...                      {"id": "old", "status": "retired"}], [Pool("all", 20, 5)])
    >>> attributes = ledger_attributes(got)
    >>> attributes["poolsplit.pools"], attributes["poolsplit.pool.over_tokens"]
    (['all'], [1])
    >>> attributes["poolsplit.inactive"], attributes["poolsplit.always_tokens"]
    (1, 1)
    """
    data = ledger_data(explanation)
    pools = data["pools"]
    return {
        "poolsplit.pools": [p["pool"] for p in pools],
        **{f"poolsplit.pool.{field}": [p[field] for p in pools] for field, _ in _POOL_FIELDS},
        "poolsplit.always_tokens": data["always_tokens"],
        "poolsplit.inactive": data["inactive"],
        "poolsplit.no_pool": data["no_pool"],
    }


def _records(loaded: Sequence[Decision]) -> str:
    """The loaded memories as the conventions' ``gen_ai.memory.records`` (a JSON array)."""
    return json.dumps([
        {"id": d.entry.get("id"), "content": d.entry.get("content"), "pool": d.pool,
         "score": d.score, "always": d.outcome == "always"}
        for d in loaded], default=str, ensure_ascii=False)


def _user_attributes(where: Any, capture: bool, user: Any = None) -> dict[str, Any]:
    if user is None and isinstance(where, Mapping):
        user = where.get("user_id")
    attributes: dict[str, Any] = {"poolsplit.user_filter": user is not None}
    if capture and isinstance(user, str):
        attributes["poolsplit.user_id"] = user
    return attributes


def _error_type(exc: BaseException) -> str:
    kind = type(exc)
    return kind.__qualname__ if kind.__module__ == "builtins" else (
        f"{kind.__module__}.{kind.__qualname__}")


class _Off:
    """The read of an untraced call: every step does nothing."""

    __slots__ = ()

    def __enter__(self) -> _Off:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    def engine(self, name: str) -> None:
        """Nothing to record."""

    def filtered(self, where: Mapping[str, Any] | None, user: str | None = None) -> None:
        """Nothing to record."""

    def loaded(self, count: int, explain: Callable[[], Explanation] | None,
               decisions: Sequence[Decision] | None = None) -> None:
        """Nothing to record."""


_OFF = _Off()


class _Joined:
    """A step of a traced read that records into the read's span (and leaves ending it to it)."""

    __slots__ = ("_read",)

    def __init__(self, read: _Read) -> None:
        self._read = read

    def __enter__(self) -> _Joined:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    def engine(self, name: str) -> None:
        """As :meth:`_Read.engine`, on the read's span."""
        self._read.engine(name)

    def filtered(self, where: Mapping[str, Any] | None, user: str | None = None) -> None:
        """As :meth:`_Read.filtered`, on the read's span."""
        self._read.filtered(where, user)

    def loaded(self, count: int, explain: Callable[[], Explanation] | None,
               decisions: Sequence[Decision] | None = None) -> None:
        """As :meth:`_Read.loaded`, on the read's span."""
        self._read.loaded(count, explain, decisions)


class _Read:
    """One traced read: its span is current from ``with`` to its end."""

    __slots__ = ("_capture", "_context", "_span", "_token")

    def __init__(self, span: Any, capture: bool) -> None:
        self._span, self._capture = span, capture

    def __enter__(self) -> _Read:
        from opentelemetry import context, trace

        self._context = context.attach(trace.set_span_in_context(self._span))
        self._token = _inside.set(self)
        return self

    def __exit__(self, kind: Any, exc: BaseException | None, tb: Any) -> None:
        from opentelemetry import context
        from opentelemetry.trace import Status, StatusCode

        _inside.reset(self._token)
        context.detach(self._context)
        if exc is not None:
            self._span.set_attribute("error.type", _error_type(exc))
            # the message may name a user or an entry: content
            self._span.set_status(Status(StatusCode.ERROR, str(exc) if self._capture else None))
        self._span.end()

    def engine(self, name: str) -> None:
        """The engine that answered (``poolsplit.engine``)."""
        self._span.set_attribute("poolsplit.engine", name)

    def filtered(self, where: Mapping[str, Any] | None, user: str | None = None) -> None:
        """The filter the read ran with: whether it named a user (which, with content capture).

        ``user``: the user the read is bound to some other way (a namespace).
        """
        self._span.set_attributes(_user_attributes(where, self._capture, user))

    def loaded(self, count: int, explain: Callable[[], Explanation] | None,
               decisions: Sequence[Decision] | None = None) -> None:
        """How many memories loaded; the ledger from ``explain()`` if recording (and given).

        With content capture, the records are ``decisions`` (what the read
        returned), else the explanation's loaded ones.
        """
        span = self._span
        span.set_attribute("gen_ai.memory.record.count", count)
        if explain is None or not span.is_recording():
            return
        try:
            explanation = explain()
        except Exception as exc:  # the read stands; its span says the ledger failed
            span.add_event("poolsplit.ledger_failed", {"error.type": _error_type(exc)})
            return
        span.set_attributes(ledger_attributes(explanation))
        if self._capture:
            if decisions is None:
                decisions = [d for got in explanation.loaded().values() for d in got]
            span.set_attribute("gen_ai.memory.records", _records(decisions))


_inside: ContextVar[_Read | None] = ContextVar("poolsplit_traced_read", default=None)


def _tracer() -> Any:
    """The tracer of the application's provider, or None: no opentelemetry, or no provider."""
    otel = _otel[0]
    if otel is None:
        return None
    provider = otel.get_tracer_provider()
    if isinstance(provider, _otel[1]):
        return None
    tracer = _tracers.get(provider)
    if tracer is None:
        if len(_tracers) >= 8:  # providers replaced (tests do): keep the latest only
            _tracers.clear()
        tracer = _tracers[provider] = provider.get_tracer("poolsplit")
    return tracer


def _import() -> None:
    """Import opentelemetry once, at the first read (a missing one leaves every read untraced)."""
    try:
        from opentelemetry import trace
        from opentelemetry.trace import NoOpTracerProvider, ProxyTracerProvider, SpanKind
    except ImportError:
        _otel[:] = [None, (), None]
    else:
        _otel[:] = [trace, (NoOpTracerProvider, ProxyTracerProvider), SpanKind.INTERNAL]


def current() -> _Read | _Off:
    """The read being traced in this context (a no-op outside one): an inner step's way to it."""
    return _inside.get() or _OFF


def read(component: str, context: Any = None, where: Mapping[str, Any] | None = None,
         engine: str | None = None, *, join: bool = False) -> _Read | _Joined | _Off:
    """The span of one read by ``component`` (a no-op when tracing is off or already inside one).

    A read that calls another (an adapter's call reaching the prepared store)
    is one span: the outermost. With ``join``, a read inside another records
    its filter, engine and result into the outer span (the step that
    selects, inside an adapter's call that opened the span).
    """
    outer = _inside.get()
    if outer is not None:
        return _Joined(outer) if join else _OFF
    if not _otel:
        _import()
    tracer = _tracer()
    if tracer is None:
        return _OFF
    capture = _capturing()
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "search_memory",
        "gen_ai.provider.name": PROVIDER,
        "gen_ai.memory.store.id": component,
        **_user_attributes(where, capture),
    }
    if engine is not None:
        attributes["poolsplit.engine"] = engine
    if capture:
        message = context.get("message") if isinstance(context, Mapping) else None
        if isinstance(message, str):
            attributes["gen_ai.memory.query.text"] = message
    span = tracer.start_span(f"search_memory {component}", kind=_otel[2], attributes=attributes)
    return _Read(span, capture)


# opentelemetry's trace module, its providers that record nothing, SpanKind.INTERNAL:
# empty until the first read imports them (all None when it is not installed).
_otel: list[Any] = []
_tracers: dict[Any, Any] = {}
