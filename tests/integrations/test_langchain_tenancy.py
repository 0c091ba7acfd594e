"""PoolSplitRetriever and PoolSplitCompressor: tenant filters, fail-closed keys, the
always-tier ceiling, explain(), and a retriever shared by threads and tasks."""

from __future__ import annotations

import asyncio
import json
import logging
import random
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from importlib import resources
from typing import Any, Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever

from poolsplit_core import AlwaysScopeOverflowError, Explanation, Pool
from poolsplit_integrations.langchain import PoolSplitCompressor, PoolSplitRetriever

NOW = datetime(2026, 3, 1, tzinfo=timezone.utc)
POOLS = [
    Pool("rules", max_tokens=60, max_entries=3, types=("correction", "task")),
    Pool("notes", max_tokens=60, max_entries=3),
]
USERS = ("a", "b", "c")


def _doc(doc_id: str, text: str, **metadata: Any) -> Document:
    return Document(id=doc_id, page_content=text, metadata=metadata)


def tenant_store() -> list[Document]:
    """Per user: a correction, a task and a note; plus two documents with no user_id."""
    docs: list[Document] = []
    for user in ("a", "b"):
        docs += [
            _doc(f"{user}-fix", f"User {user}: never deploy on Friday.", user_id=user,
                 type="correction", scope="always", token_count=10 if user == "a" else 4),
            _doc(f"{user}-task", f"User {user}: deploy the release.", user_id=user,
                 type="task", base_priority=7),
            _doc(f"{user}-note", f"User {user}: the deploy dashboard is slow.", user_id=user,
                 type="note"),
        ]
    docs += [
        _doc("shared-fix", "Everyone: never deploy without a rollback plan.",
             type="correction", scope="always"),
        _doc("shared-note", "Everyone: deploy notes live in the wiki.", type="note"),
    ]
    return docs


def make_retriever(**kwargs: Any) -> PoolSplitRetriever:
    params: dict[str, Any] = {"documents": tenant_store(), "pools": POOLS, "now": NOW,
                              "require_filter_keys": ()}  # a shared store unless told
    params.update(kwargs)
    return PoolSplitRetriever(**params)


def ids(docs: Sequence[Document]) -> list[str | None]:
    return [d.id for d in docs]


class _FixedRetriever(BaseRetriever):
    """A candidate source returning the same documents for every query."""

    docs: list[Document]

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        return list(self.docs)


# --------------------------------------------------------------------------
# The filter: before pool-split, always-scope included
# --------------------------------------------------------------------------


def test_a_correction_for_user_a_never_loads_for_user_b() -> None:
    retriever = make_retriever(filter={"user_id": "b"})
    for query in ("never deploy on Friday", "User a", "deploy the release", ""):
        docs = retriever.invoke(query)
        assert "a-fix" not in ids(docs)
        assert {d.metadata["user_id"] for d in docs} == {"b"}
        assert docs[0].id == "b-fix" and docs[0].metadata["poolsplit_always"] is True


def test_without_a_filter_every_tenant_and_shared_document_loads() -> None:
    docs = make_retriever().invoke("deploy")
    assert {"a-fix", "b-fix", "shared-fix"} <= set(ids(docs))


def test_a_document_lacking_the_filter_key_does_not_match() -> None:
    docs = make_retriever(filter={"user_id": "a"}).invoke("deploy notes wiki rollback")
    assert ids(docs) == ["a-fix", "a-task", "a-note"]
    assert not {"shared-fix", "shared-note"} & set(ids(docs))


def test_a_filter_on_none_matches_a_none_value_not_a_missing_key() -> None:
    store = [*tenant_store(), _doc("none-note", "Nobody's deploy note.", team=None)]
    docs = make_retriever(documents=store, filter={"team": None}).invoke("deploy")
    assert ids(docs) == ["none-note"]
    with pytest.raises(ValueError, match="user_id must be a non-empty string"):
        make_retriever(filter={"user_id": None}).invoke("deploy")  # None names no user


def test_every_filter_key_must_match() -> None:
    docs = make_retriever(filter={"user_id": "a", "type": "note"}).invoke("deploy")
    assert ids(docs) == ["a-note"]


def test_per_call_filter_narrows_the_default_and_never_changes_it() -> None:
    retriever = make_retriever(filter={"user_id": "a"})
    with pytest.raises(ValueError, match=r"bound to user_id='a'; a filter cannot change it"):
        retriever.invoke("deploy", filter={"user_id": "b"})
    # Intersected, not replaced: user a's default still applies.
    assert ids(retriever.invoke("deploy", filter={"type": "task"})) == ["a-task"]
    assert ids(retriever.invoke("deploy", filter={"user_id": "a"})) == [
        "a-fix", "a-task", "a-note"]  # the same value again is no conflict
    assert ids(retriever.invoke("deploy")) == ["a-fix", "a-task", "a-note"]


@pytest.mark.parametrize("no_filter", [None, {}])
def test_per_call_filter_none_or_empty_keeps_the_default(no_filter: Any) -> None:
    retriever = make_retriever(filter={"user_id": "a"})
    assert ids(retriever.invoke("deploy", filter=no_filter)) == ["a-fix", "a-task", "a-note"]


def test_filter_applies_to_base_retriever_candidates() -> None:
    other = [_doc("b-found", "User b: deploy found by search.", user_id="b", type="note"),
             _doc("a-found", "User a: deploy found by search.", user_id="a", type="note")]
    retriever = make_retriever(documents=[], base_retriever=_FixedRetriever(docs=other))
    assert ids(retriever.invoke("deploy", filter={"user_id": "a"})) == ["a-found"]
    assert ids(retriever.invoke("deploy", filter={"user_id": "c"})) == []


def test_assigning_the_filter_rebuilds_the_store() -> None:
    retriever = make_retriever(filter={"user_id": "a"})
    retriever.filter = {"user_id": "b"}
    assert {d.metadata["user_id"] for d in retriever.invoke("deploy")} == {"b"}


def test_model_copy_with_a_new_filter_is_honoured_not_served_stale() -> None:
    retriever = make_retriever(filter={"user_id": "a"})
    retriever.invoke("deploy")
    copy_b = retriever.model_copy(update={"filter": {"user_id": "b"}})
    assert {d.metadata["user_id"] for d in copy_b.invoke("deploy")} == {"b"}
    assert {d.metadata["user_id"] for d in retriever.invoke("deploy")} == {"a"}
    required = retriever.model_copy(update={"require_filter_keys": ("team",)})
    with pytest.raises(ValueError, match="team"):
        required.invoke("deploy")


def test_the_store_is_not_rebuilt_per_call() -> None:
    retriever = make_retriever(filter={"user_id": "a"})
    store = retriever._live.store
    retriever.invoke("deploy")
    retriever.invoke("deploy", filter={"type": "task"})
    assert retriever._live.store is store


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"filter": "user_id=a"}, TypeError, "filter must be a dict or None, got str"),
        ({"filter": {1: "a"}}, TypeError, "filter keys must be str, got 1"),
        ({"require_filter_keys": [1]}, TypeError, "require_filter_keys must hold str, got 1"),
        ({"max_always_tokens": -1}, ValueError, "max_always_tokens must be >= 0, got -1"),
        ({"max_always_tokens": True}, TypeError, "max_always_tokens must be an int or None"),
        ({"max_always_tokens": "9"}, TypeError, "max_always_tokens must be an int or None"),
    ],
)
def test_bad_tenancy_arguments_fail_at_construction(kwargs: dict[str, Any], error: type,
                                                    match: str) -> None:
    with pytest.raises(error, match=match):
        make_retriever(**kwargs)
    with pytest.raises(error, match=match):
        PoolSplitCompressor(pools=POOLS, **kwargs)


def test_a_bare_string_is_one_required_key() -> None:
    assert make_retriever(require_filter_keys="user_id").require_filter_keys == ("user_id",)


def test_a_per_call_filter_of_the_wrong_type_is_refused() -> None:
    with pytest.raises(TypeError, match="filter must be a dict or None, got list"):
        make_retriever().invoke("deploy", filter=[("user_id", "a")])


# --------------------------------------------------------------------------
# require_filter_keys: fail closed on every entry point
# --------------------------------------------------------------------------


def _call_invoke(r: PoolSplitRetriever, **kw: Any) -> Any:
    return r.invoke("deploy", **kw)


def _call_ainvoke(r: PoolSplitRetriever, **kw: Any) -> Any:
    return asyncio.run(r.ainvoke("deploy", **kw))


def _call_batch(r: PoolSplitRetriever, **kw: Any) -> Any:
    return r.batch(["deploy", "release"], **kw)


def _call_abatch(r: PoolSplitRetriever, **kw: Any) -> Any:
    return asyncio.run(r.abatch(["deploy", "release"], **kw))


def _call_explain(r: PoolSplitRetriever, **kw: Any) -> Any:
    return r.explain("deploy", **kw)


def _call_aexplain(r: PoolSplitRetriever, **kw: Any) -> Any:
    return asyncio.run(r.aexplain("deploy", **kw))


ENTRY_POINTS = [_call_invoke, _call_ainvoke, _call_batch, _call_abatch, _call_explain,
                _call_aexplain]


@pytest.mark.parametrize("call", ENTRY_POINTS)
@pytest.mark.parametrize("kwargs", [{}, {"filter": None}, {"filter": {"team": "x"}}])
def test_a_call_without_the_required_key_is_refused_naming_it(
    call: Callable[..., Any], kwargs: dict[str, Any]
) -> None:
    retriever = make_retriever(require_filter_keys=("user_id",))
    with pytest.raises(ValueError, match=r"requires a filter on \['user_id'\]"):
        call(retriever, **kwargs)


class _CountingRetriever(_FixedRetriever):
    """A candidate source that counts how often it is asked (sync and async)."""

    calls: int = 0

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        self.calls += 1
        return list(self.docs)


@pytest.mark.parametrize("call", ENTRY_POINTS)
def test_a_refused_call_never_queries_the_base_retriever(call: Callable[..., Any]) -> None:
    source = _CountingRetriever(docs=[_doc("cand", "deploy notes", user_id="b")])
    retriever = make_retriever(require_filter_keys=("user_id",), base_retriever=source)
    with pytest.raises(ValueError, match=r"requires a filter on \['user_id'\]"):
        call(retriever)
    assert source.calls == 0
    call(retriever, filter={"user_id": "b"})  # the same source is asked once allowed
    assert source.calls >= 1


@pytest.mark.parametrize("call", ENTRY_POINTS)
def test_a_call_with_the_required_key_works(call: Callable[..., Any]) -> None:
    retriever = make_retriever(require_filter_keys=("user_id",))
    got = call(retriever, filter={"user_id": "a"})
    if isinstance(got, Explanation):
        assert {d.entry["user_id"] for d in got.decisions} == {"a"}
        return
    batches = got if got and isinstance(got[0], list) else [got]
    for docs in batches:
        assert docs and {d.metadata["user_id"] for d in docs} == {"a"}


def test_a_default_filter_holding_the_required_key_serves_plain_calls() -> None:
    retriever = make_retriever(filter={"user_id": "b"}, require_filter_keys=("user_id",))
    assert ids(retriever.invoke("deploy")) == ["b-fix", "b-task", "b-note"]
    assert ids(retriever.invoke("deploy", filter={"type": "note"})) == ["b-note"]  # narrows


def test_only_the_missing_keys_are_named() -> None:
    retriever = make_retriever(require_filter_keys=("user_id", "org"))
    with pytest.raises(ValueError, match=r"requires a filter on \['org'\]"):
        retriever.invoke("deploy", filter={"user_id": "a"})


def test_compressor_refuses_a_filter_lacking_a_required_key_at_construction() -> None:
    with pytest.raises(ValueError, match=r"PoolSplitCompressor requires a filter on \['user_id'\]"):
        PoolSplitCompressor(pools=POOLS, require_filter_keys=("user_id",))
    compressor = PoolSplitCompressor(pools=POOLS, require_filter_keys=("user_id",),
                                     filter={"user_id": "a"}, now=NOW)
    assert compressor.compress_documents([], "deploy") == []


def test_compressor_filters_pinned_and_candidates_alike() -> None:
    store = tenant_store()
    pinned = [d for d in store if d.metadata.get("scope") == "always"]
    found = [d for d in store if d.metadata.get("scope") != "always"]
    compressor = PoolSplitCompressor(pools=POOLS, pinned=pinned, filter={"user_id": "b"},
                                     now=NOW, require_filter_keys=())
    docs = compressor.compress_documents(found, "deploy")
    assert ids(docs) == ["b-fix", "b-task", "b-note"]
    assert docs[0].metadata["poolsplit_always"] is True


def test_compressor_always_tier_ceiling_raises() -> None:
    pinned = [d for d in tenant_store() if d.metadata.get("scope") == "always"]
    compressor = PoolSplitCompressor(pools=POOLS, pinned=pinned, filter={"user_id": "a"},
                                     max_always_tokens=9, now=NOW, require_filter_keys=())
    with pytest.raises(AlwaysScopeOverflowError, match=r"cost 10 tokens.*'a-fix'"):
        compressor.compress_documents([], "deploy")


# --------------------------------------------------------------------------
# max_always_tokens: raise, never drop; a warning without it
# --------------------------------------------------------------------------


def test_always_tier_over_the_ceiling_raises_naming_entries_and_total() -> None:
    retriever = make_retriever(max_always_tokens=13)  # unfiltered: 10 + 4 + shared
    shared_cost = retriever.explain("deploy").ledgers["rules"].always_tokens - 14
    with pytest.raises(AlwaysScopeOverflowError) as caught:
        retriever.invoke("deploy")
    err = caught.value
    assert isinstance(err, ValueError)
    assert [e["id"] for e in err.entries] == ["a-fix", "b-fix", "shared-fix"]
    assert err.total == 14 + shared_cost and err.limit == 13
    for name in ("a-fix", "b-fix", "shared-fix", f"cost {err.total} tokens",
                 "max_always_tokens=13"):
        assert name in str(err)


def test_always_tier_ceiling_counts_after_the_tenant_filter() -> None:
    retriever = make_retriever(max_always_tokens=9)
    assert ids(retriever.invoke("deploy", filter={"user_id": "b"}))[0] == "b-fix"  # 4 tokens
    with pytest.raises(AlwaysScopeOverflowError, match=r"cost 10 tokens.*'a-fix'"):
        retriever.invoke("deploy", filter={"user_id": "a"})  # 10 tokens


def test_always_tier_at_the_ceiling_exactly_loads() -> None:
    docs = make_retriever(max_always_tokens=10).invoke("deploy", filter={"user_id": "a"})
    assert ids(docs)[0] == "a-fix"


@pytest.mark.parametrize("call", [_call_ainvoke, _call_batch])
def test_always_tier_ceiling_raises_on_async_and_batch_too(call: Callable[..., Any]) -> None:
    with pytest.raises(AlwaysScopeOverflowError):
        call(make_retriever(max_always_tokens=9), filter={"user_id": "a"})


def test_always_tier_over_all_pools_logs_a_warning_naming_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    small = [Pool("rules", max_tokens=3, max_entries=3, types=("correction", "task")),
             Pool("notes", max_tokens=3, max_entries=3)]
    retriever = make_retriever(pools=small)
    with caplog.at_level(logging.WARNING, logger="poolsplit"):
        docs = retriever.invoke("deploy", filter={"user_id": "a"})
    assert ids(docs)[0] == "a-fix"  # loaded, never dropped
    warnings = [r for r in caplog.records if r.name == "poolsplit"]
    assert len(warnings) == 1 and warnings[0].levelno == logging.WARNING
    message = warnings[0].getMessage()
    assert "a-fix" in message and "10 tokens" in message and "(6)" in message
    assert "max_always_tokens" in message


def test_always_tier_within_the_pools_logs_nothing(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="poolsplit"):
        make_retriever().invoke("deploy", filter={"user_id": "a"})
    assert [r for r in caplog.records if r.name == "poolsplit"] == []


# --------------------------------------------------------------------------
# explain(): the core's records and ledgers for the same call
# --------------------------------------------------------------------------


def _by_pool(docs: Sequence[Document]) -> dict[str, list[str | None]]:
    out: dict[str, list[str | None]] = {}
    for doc in docs:
        out.setdefault(doc.metadata["poolsplit_pool"], []).append(doc.id)
    return out


def _loaded(explanation: Explanation) -> dict[str, list[Any]]:
    return {pool: [d.entry["id"] for d in picked]
            for pool, picked in explanation.loaded().items() if picked}


def _check_ledgers(explanation: Explanation) -> None:
    for name, ledger in explanation.ledgers.items():
        assert 0 <= ledger.tokens_used <= ledger.max_tokens
        in_pool = [d for d in explanation.decisions if d.pool == name]
        assert ledger.tokens_used == sum(d.cost or 0 for d in in_pool
                                         if d.outcome == "selected")
        assert ledger.always_tokens == sum(d.cost or 0 for d in in_pool
                                           if d.outcome == "always")
        assert ledger.selected == sum(d.outcome == "selected" for d in in_pool)


@pytest.mark.parametrize("filter_", [None, {"user_id": "a"}, {"user_id": "b"}, {"type": "note"}])
@pytest.mark.parametrize("query", ["deploy", "release", "never Friday", "wiki"])
def test_explain_loaded_records_equal_invoke_per_pool_in_order(
    filter_: dict[str, Any] | None, query: str
) -> None:
    retriever = make_retriever()
    docs = retriever.invoke(query, filter=filter_)
    explanation = retriever.explain(query, filter=filter_)
    assert _loaded(explanation) == _by_pool(docs)
    always = {d.entry["id"] for d in explanation.decisions if d.outcome == "always"}
    assert always == {d.id for d in docs if d.metadata["poolsplit_always"]}
    scores = {d.entry["id"]: d.score for d in explanation.decisions if d.outcome == "selected"}
    assert scores == {d.id: d.metadata["poolsplit_score"] for d in docs
                      if not d.metadata["poolsplit_always"]}
    _check_ledgers(explanation)


def test_explain_on_the_sample_store_agrees_with_invoke_and_accounts_tokens() -> None:
    retriever = PoolSplitRetriever(documents=sample_documents(), pools=SAMPLE_POOLS, now=NOW,
                                   require_filter_keys=())
    for query, kwargs in sample_queries()[:12]:
        explain_kwargs = {key: value for key, value in kwargs.items() if key != "k"}
        docs = retriever.invoke(query, **explain_kwargs)
        explanation = retriever.explain(query, **explain_kwargs)
        assert _loaded(explanation) == _by_pool(docs)
        assert any(d.outcome == "over_tokens" or d.outcome == "over_entries"
                   for d in explanation.decisions)
        _check_ledgers(explanation)


def test_with_k_invoke_returns_a_prefix_of_each_pools_loaded_records() -> None:
    retriever = make_retriever()
    full = _loaded(retriever.explain("deploy"))
    capped = _by_pool(retriever.invoke("deploy", k=1))
    assert capped and capped != full
    for pool, got in capped.items():
        assert got == full[pool][: len(got)]


def test_explain_gives_other_tenants_no_record() -> None:
    explanation = make_retriever().explain("deploy never Friday", filter={"user_id": "b"})
    assert {d.entry["id"] for d in explanation.decisions} == {"b-fix", "b-task", "b-note"}
    assert all(d.entry["user_id"] == "b" for d in explanation.decisions)


def test_explain_uses_the_retrievers_default_filter_and_context() -> None:
    retriever = make_retriever(filter={"user_id": "a"}, context={"project": "atlas"})
    explanation = retriever.explain("deploy")
    assert {d.entry["user_id"] for d in explanation.decisions} == {"a"}
    assert _loaded(explanation) == _by_pool(retriever.invoke("deploy"))


def test_explain_refuses_k_and_unknown_keywords() -> None:
    retriever = make_retriever()
    with pytest.raises(TypeError, match=r"explain\(\) does not take k"):
        retriever.explain("deploy", k=1)
    with pytest.raises(TypeError, match=r"explain\(\) got unexpected keyword argument\(s\)"
                                        r" \['top_k'\]"):
        retriever.explain("deploy", top_k=1)


def test_explain_reports_an_overflow_instead_of_raising_it() -> None:
    retriever = make_retriever(max_always_tokens=9)
    with pytest.raises(AlwaysScopeOverflowError):
        retriever.invoke("deploy", filter={"user_id": "a"})
    explanation = retriever.explain("deploy", filter={"user_id": "a"})
    assert explanation.ledgers["rules"].always_tokens == 10


def test_explain_sees_the_base_retrievers_candidates() -> None:
    found = [_doc("a-found", "User a: deploy found by search.", user_id="a", type="note"),
             _doc("b-found", "User b: deploy found by search.", user_id="b", type="note"),
             tenant_store()[1]]  # a duplicate of the store, kept once
    retriever = make_retriever(base_retriever=_FixedRetriever(docs=found))
    docs = retriever.invoke("deploy", filter={"user_id": "a"})
    explanation = retriever.explain("deploy", filter={"user_id": "a"})
    assert "a-found" in ids(docs)
    assert _loaded(explanation) == _by_pool(docs)
    assert [d.entry["id"] for d in explanation.decisions].count("a-task") == 1


@pytest.mark.asyncio
async def test_aexplain_equals_explain() -> None:
    retriever = make_retriever(base_retriever=_FixedRetriever(docs=[
        _doc("a-found", "User a: deploy found by search.", user_id="a", type="note")]))
    for filter_ in (None, {"user_id": "a"}):
        assert await retriever.aexplain("deploy", filter=filter_) == retriever.explain(
            "deploy", filter=filter_)


# --------------------------------------------------------------------------
# Property: tenant filters never leak
# --------------------------------------------------------------------------

_WORDS = ("deploy", "release", "friday", "backup", "wiki", "review")
_PROPERTY_POOLS = [
    Pool("rules", max_tokens=12, max_entries=2, types=("correction", "task")),
    Pool("rest", max_tokens=12, max_entries=3),
]

# One document per draw, kept to a few cheap integers so 1,000 examples stay fast:
# (user index, 3 meaning no user_id key at all; type index; always-scope?;
#  a bitmask of words for the content; token_count; base_priority).
_TYPES = ("correction", "task", "note", "skill")
_draw_doc = st.tuples(st.integers(0, 3), st.integers(0, 3), st.booleans(),
                      st.integers(0, 63), st.integers(1, 8), st.integers(0, 10))


def _build(draws: list[tuple[int, int, bool, int, int, int]]) -> list[Document]:
    docs = []
    for i, (user, kind, always, words, tokens, priority) in enumerate(draws):
        metadata: dict[str, Any] = {"type": _TYPES[kind], "token_count": tokens,
                                    "base_priority": priority}
        if user < len(USERS):
            metadata["user_id"] = USERS[user]
        if always:
            metadata["scope"] = "always"
        text = " ".join(w for bit, w in enumerate(_WORDS) if words >> bit & 1) or "empty"
        docs.append(Document(id=f"d{i}", page_content=text, metadata=metadata))
    return docs


@settings(max_examples=1000)
@given(
    draws=st.lists(_draw_doc, max_size=12),
    user=st.sampled_from(USERS),
    query=st.sampled_from(("", "deploy", "release friday", "backup wiki review")),
    per_call=st.booleans(),
)
def test_tenant_filters_never_leak(draws: list[tuple[int, int, bool, int, int, int]],
                                   user: str, query: str,
                                   per_call: bool) -> None:
    store = _build(draws)
    if per_call:
        retriever = PoolSplitRetriever(documents=store, pools=_PROPERTY_POOLS, now=NOW,
                                       require_filter_keys=("user_id",))
        docs = retriever.invoke(query, filter={"user_id": user})
        explanation = retriever.explain(query, filter={"user_id": user})
    else:
        retriever = PoolSplitRetriever(documents=store, pools=_PROPERTY_POOLS, now=NOW,
                                       filter={"user_id": user}, require_filter_keys=())
        docs = retriever.invoke(query)
        explanation = retriever.explain(query)
    assert all(d.metadata.get("user_id") == user for d in docs)
    assert all(d.entry.get("user_id") == user for d in explanation.decisions)
    # The filter removes other tenants, never the user's own corrections.
    own_always = {d.id for d in store
                  if d.metadata.get("user_id") == user and d.metadata.get("scope") == "always"}
    assert own_always == {d.id for d in docs if d.metadata["poolsplit_always"]}


# --------------------------------------------------------------------------
# Concurrency: one retriever shared by threads and by asyncio tasks
# --------------------------------------------------------------------------

SAMPLE_POOLS = [
    Pool("rules", max_tokens=300, max_entries=6, types=("correction", "preference", "growth")),
    Pool("work", max_tokens=400, max_entries=8, types=("task", "procedure", "skill")),
    Pool("memory", max_tokens=300, max_entries=6),
]


def sample_documents() -> list[Document]:
    """The shipped sample store as Documents, each given one of three users."""
    path = resources.files("poolsplit_core") / "data" / "sample_store.jsonl"
    docs = []
    for i, line in enumerate(path.read_text(encoding="utf-8").splitlines()):
        entry = json.loads(line)
        metadata = {key: value for key, value in entry.items() if key != "content"}
        metadata["user_id"] = USERS[i % 3]
        docs.append(Document(id=entry["id"], page_content=entry["content"], metadata=metadata))
    return docs


def sample_queries() -> list[tuple[str, dict[str, Any]]]:
    """About forty (query, kwargs) pairs: messages crossed with users, projects, tags, k."""
    messages = ["deploy the release", "database backup before migration", "ci is failing",
                "book the travel", "pay the invoice", "kubernetes storage is full",
                "ios build", "security review"]
    out: list[tuple[str, dict[str, Any]]] = []
    for i, message in enumerate(messages):
        out.append((message, {}))
        out.append((message, {"filter": {"user_id": USERS[i % 3]}}))
        out.append((message, {"filter": {"user_id": USERS[(i + 1) % 3]}, "project": "atlas"}))
        out.append((message, {"project": "harbor", "tags": ["ci", "deploy"], "k": 5}))
        out.append((message, {"filter": {"user_id": USERS[(i + 2) % 3], "project": "home"},
                              "k": 3}))
    return out


def _snapshot(docs: Sequence[Document]) -> list[tuple[str | None, dict[str, Any]]]:
    return [(d.id, d.metadata) for d in docs]


@pytest.fixture(scope="module")
def shared() -> tuple[PoolSplitRetriever, list[tuple[str, dict[str, Any]]], list[Any]]:
    retriever = PoolSplitRetriever(documents=sample_documents(), pools=SAMPLE_POOLS, now=NOW,
                                   require_filter_keys=())
    queries = sample_queries()
    expected = [_snapshot(retriever.invoke(query, **kwargs)) for query, kwargs in queries]
    assert len(queries) == 40 and len({repr(e) for e in expected}) >= 25  # the queries differ
    return retriever, queries, expected


def test_eight_threads_sharing_one_retriever_get_the_sequential_results(
    shared: tuple[PoolSplitRetriever, list[tuple[str, dict[str, Any]]], list[Any]],
) -> None:
    retriever, queries, expected = shared
    order = [i for i in range(len(queries)) for _ in range(5)]
    random.Random(7).shuffle(order)

    def run(i: int) -> tuple[int, Any]:
        query, kwargs = queries[i]
        return i, _snapshot(retriever.invoke(query, **kwargs))

    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(run, order))
    assert len(results) == len(order)
    for i, got in results:
        assert got == expected[i], queries[i]


@pytest.mark.asyncio
async def test_fifty_tasks_sharing_one_retriever_get_the_sequential_results(
    shared: tuple[PoolSplitRetriever, list[tuple[str, dict[str, Any]]], list[Any]],
) -> None:
    retriever, queries, expected = shared
    order = [i % len(queries) for i in range(50)]
    random.Random(11).shuffle(order)
    results = await asyncio.gather(
        *(retriever.ainvoke(queries[i][0], **queries[i][1]) for i in order)
    )
    assert len(results) == 50
    for i, docs in zip(order, results):
        assert _snapshot(docs) == expected[i], queries[i]


def test_threads_sharing_a_tenant_retriever_never_see_another_tenant(
    shared: tuple[PoolSplitRetriever, list[tuple[str, dict[str, Any]]], list[Any]],
) -> None:
    retriever, _, _ = shared
    tenant = retriever.model_copy(update={"require_filter_keys": ("user_id",)})
    calls = [(user, message) for user in USERS for message in ("deploy", "backup", "travel")]
    calls = calls * 4
    random.Random(3).shuffle(calls)

    def run(call: tuple[str, str]) -> tuple[str, set[Any]]:
        user, message = call
        docs = tenant.invoke(message, filter={"user_id": user})
        return user, {d.metadata["user_id"] for d in docs}

    with ThreadPoolExecutor(max_workers=8) as pool:
        for user, seen in pool.map(run, calls):
            assert seen == {user}
