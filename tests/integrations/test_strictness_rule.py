"""One rule of bad input across the adapters: context keys, pools as data, filters.

Every component meets the same bad input with the same error class and the
same message, because each rule is implemented once: context keys and pools
by the core (``poolsplit_core.poolsplit._check_context_keys``, ``_read_pool``),
filters by ``poolsplit_integrations._tenancy`` (``check_filter``, ``narrow``).
The core paths of the same rules are in ``tests/core/test_strictness.py``.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Callable

import pytest
from langchain_core.documents import Document
from langgraph.store.memory import InMemoryStore
from llama_index.core.schema import TextNode

from poolsplit_core.poolsplit import Pool
from poolsplit_integrations import langchain as lc
from poolsplit_integrations import llama_index as li
from poolsplit_integrations.langgraph import PoolSplitStore, PoolSplitStoreRetriever

from ._llamaindex_support import offline_llamaindex  # noqa: F401 -- the fixture

NOW = datetime(2026, 3, 1, tzinfo=timezone.utc)
POOLS = [Pool("tasks", 200, 3, ("task",)), Pool("notes", 200, 3)]
USERS = ("ana", "bo")
SHARED = ("memories",)
TEMPLATE = ("memories", "{user_id}")


def memories() -> list[dict[str, Any]]:
    out = []
    for user in USERS:
        out += [
            {"id": f"{user}-fix", "type": "correction", "scope": "always",
             "content": f"{user}: deploy with just", "user_id": user},
            {"id": f"{user}-t", "type": "task", "content": f"{user} deploy task",
             "user_id": user, "project": "atlas"},
            {"id": f"{user}-n", "type": "note", "content": f"{user} release note",
             "user_id": user},
        ]
    return out


def _meta(entry: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in entry.items() if k not in ("id", "content")}


def lc_retriever(**kwargs: Any) -> lc.PoolSplitRetriever:
    docs = [Document(id=e["id"], page_content=e["content"], metadata=_meta(e))
            for e in memories()]
    return lc.PoolSplitRetriever(documents=docs, **{"pools": POOLS, "now": NOW, **kwargs})


def li_retriever(**kwargs: Any) -> li.PoolSplitRetriever:
    nodes = [TextNode(id_=e["id"], text=e["content"], metadata=_meta(e)) for e in memories()]
    return li.PoolSplitRetriever(nodes=nodes, **{"pools": POOLS, "now": NOW, **kwargs})


def lg_store(namespaced: bool) -> PoolSplitStore:
    store = PoolSplitStore(InMemoryStore())
    for e in memories():
        ns = ("memories", e["user_id"]) if namespaced else SHARED
        store.put(ns, e["id"], {k: v for k, v in e.items() if k != "id"})
    return store


def lg_retriever(**kwargs: Any) -> PoolSplitStoreRetriever:
    return PoolSplitStoreRetriever(store=lg_store(True), namespace=TEMPLATE,
                                   **{"pools": POOLS, "now": NOW, **kwargs})


ANA = {"configurable": {"user_id": "ana"}}


# --------------------------------------------------------------------------
# Context keys: the core's one check, reached by every component
# --------------------------------------------------------------------------

UNKNOWN_KEY = ("context has an unknown key 'projcet' (did you mean 'project'?): the default"
               " scorer reads 'message', 'project' and 'tags'; a custom scorer gets every key")
TYPO = {"projcet": "atlas"}

#: Each component built with ``context`` (and ``scorer`` when given) and queried.
CONTEXT_CALLS: dict[str, Callable[..., Any]] = {
    "LangChain retriever": lambda **kw: lc_retriever(filter={"user_id": "ana"}, **kw)
    .invoke("deploy"),
    "LangChain compressor": lambda **kw: lc.PoolSplitCompressor(pools=POOLS, now=NOW, **kw)
    .compress_documents([Document(page_content="deploy", id="d")], "deploy"),
    "LlamaIndex retriever": lambda **kw: li_retriever(filter={"user_id": "ana"}, **kw)
    .retrieve("deploy"),
    "LangGraph store retriever": lambda **kw: lg_retriever(**kw).invoke("deploy", ANA),
    "LangGraph store": lambda context=None, **kw: lg_store(True).retrieve_pools(
        ("memories", "ana"), POOLS, context, now=NOW, filter={"user_id": "ana"}, **kw),
}


@pytest.mark.parametrize("component", list(CONTEXT_CALLS))
def test_an_unknown_context_key_is_refused_by_every_component(component):
    with pytest.raises(ValueError) as info:
        CONTEXT_CALLS[component](context=TYPO)
    assert UNKNOWN_KEY in str(info.value)


@pytest.mark.parametrize("build", [
    lambda: lc_retriever(context=TYPO),
    lambda: li_retriever(context=TYPO),
    lambda: lc.PoolSplitCompressor(pools=POOLS, context=TYPO),
], ids=["LangChain retriever", "LlamaIndex retriever", "LangChain compressor"])
def test_a_default_context_is_refused_at_construction(build):
    with pytest.raises(ValueError, match=r"unknown key 'projcet' \(did you mean 'project'\?\)"):
        build()


def _custom(entry, context):
    return 2.0 if context.get("team") == "ops" and entry.get("type") == "note" else 1.0


@pytest.mark.parametrize("component", ["LangChain retriever", "LlamaIndex retriever",
                                       "LangChain compressor"])
def test_a_custom_scorer_gets_its_own_keys(component):
    assert CONTEXT_CALLS[component](context={"team": "ops"}, scorer=_custom)


def test_the_three_keys_pass_everywhere():
    for component, call in CONTEXT_CALLS.items():
        assert call(context={"project": "atlas", "tags": ["db"]}) is not None, component


# --------------------------------------------------------------------------
# Pools: a Pool, or a mapping with exactly Pool's fields -- the core's reading
# --------------------------------------------------------------------------

#: Each component built (or called) with ``pools``.
POOL_CALLS: dict[str, Callable[[Any], Any]] = {
    "LangChain retriever": lambda pools: lc_retriever(pools=pools, filter={"user_id": "ana"})
    .invoke("deploy"),
    "LlamaIndex retriever": lambda pools: li_retriever(pools=pools, filter={"user_id": "ana"})
    .retrieve("deploy"),
    "LangGraph store retriever": lambda pools: lg_retriever(pools=pools).invoke("deploy", ANA),
    "LangGraph store": lambda pools: lg_store(True).retrieve_pools(
        ("memories", "ana"), pools, now=NOW, filter={"user_id": "ana"}),
    "core retrieve_pools": lambda pools: __import__(
        "poolsplit_core.poolsplit", fromlist=["x"]).retrieve_pools(memories(), pools, now=NOW),
}

BAD_POOLS = {
    "unknown key": ([{"name": "a", "max_tokens": 1, "max_entries": 1, "typs": ["task"]}],
                    ValueError, "pools[0] has unknown key(s) typs (did you mean 'types'?);"
                                " a pool has name, max_tokens, max_entries, types"),
    "missing key": ([{"name": "a", "max_tokens": 1}], ValueError,
                    "pools[0] lacks max_entries; a pool has name, max_tokens, max_entries,"
                    " types"),
    "bad value": ([{"name": "a", "max_tokens": 1, "max_entries": True}], TypeError,
                  "pools[0]: Pool 'a': max_entries must be an int, got True"),
    "not a pool": ([Pool("a", 1, 1), 7], TypeError,
                   "pools[1] must be a Pool or a mapping with the keys name, max_tokens,"
                   " max_entries, types, got int"),
}


@pytest.mark.parametrize("case", list(BAD_POOLS))
@pytest.mark.parametrize("component", list(POOL_CALLS))
def test_a_bad_pool_is_refused_alike_by_every_component(component, case):
    pools, error, fragment = BAD_POOLS[case]
    with pytest.raises(error) as info:
        POOL_CALLS[component](pools)
    assert fragment in str(info.value)


@pytest.mark.parametrize("component", list(POOL_CALLS))
def test_pools_as_data_are_the_same_pools_everywhere(component):
    as_data = [{"name": "tasks", "max_tokens": 200, "max_entries": 3, "types": ["task"]},
               {"name": "notes", "max_tokens": 200, "max_entries": 3}]
    got = POOL_CALLS[component](as_data)
    assert _ids(got) == _ids(POOL_CALLS[component](POOLS)) and _ids(got)


# --------------------------------------------------------------------------
# filter=: one check, one narrowing, for every component
# --------------------------------------------------------------------------


def _ids(got: Any) -> list[str]:
    if isinstance(got, dict):  # per pool: the LangGraph store's items, the core's entries
        return sorted(item["id"] if isinstance(item, dict) else item.key
                      for items in got.values() for item in items)
    out = []
    for hit in got:
        if isinstance(hit, Document):
            out.append(hit.id or hit.metadata.get("key"))
        else:  # LlamaIndex's NodeWithScore
            out.append(hit.node.id_)
    return sorted(out)


#: Each component bound to user ana, given ``filter`` per call (``with_filter`` for
#: LlamaIndex, whose retrieve takes no keyword); the LangGraph store has no bound
#: user: its filter names the user.
FILTER_CALLS: dict[str, Callable[[Any], Any]] = {
    "LangChain retriever": lambda f: lc_retriever(filter={"user_id": "ana"})
    .invoke("deploy", filter=f),
    "LangChain retriever, tenant from config": lambda f: lc_retriever()
    .invoke("deploy", ANA, filter=f),
    "LlamaIndex retriever": lambda f: li_retriever(filter={"user_id": "ana"})
    .with_filter(f).retrieve("deploy"),
    "LangGraph store retriever": lambda f: lg_retriever().invoke("deploy", ANA, filter=f),
    "LangGraph store": lambda f: lg_store(False).retrieve_pools(
        SHARED, POOLS, {"message": "deploy"}, now=NOW,
        filter={"user_id": "ana"} if f is None else {"user_id": "ana", **f}),
}

BAD_FILTERS = {
    "not a mapping": ([("type", "task")], TypeError, "filter must be a dict or None, got list"),
    "a str": ("ana", TypeError, "filter must be a dict or None, got str"),
    "a key not a str": ({1: "task"}, TypeError, "filter keys must be str, got 1"),
    "another user": ({"user_id": "bo"}, ValueError,
                     "is bound to user_id='ana'; a filter cannot change it to 'bo'"
                     " (filters only narrow)"),
    **{f"user {blank!r}": ({"user_id": blank}, ValueError,
                           f"user_id must be a non-empty string naming one user, got {blank!r}")
       for blank in ("", " ", None, False, 0, ["ana"])},
}


def _applies(component, case):
    """A store read names its user in its own filter (a dict): it has no bound user to widen."""
    given = BAD_FILTERS[case][0]
    return component != "LangGraph store" or (isinstance(given, dict) and case != "another user")


@pytest.mark.parametrize(("component", "case"), [
    (component, case) for component in FILTER_CALLS for case in BAD_FILTERS
    if _applies(component, case)])
def test_a_bad_filter_is_refused_alike_by_every_component(component, case):
    given, error, fragment = BAD_FILTERS[case]
    if component == "LangGraph store":
        given = {**given, "type": "task"}
    with pytest.raises(error) as info:
        FILTER_CALLS[component](given)
    assert fragment in str(info.value)


@pytest.mark.parametrize("component", list(FILTER_CALLS))
def test_no_filter_an_empty_one_and_the_same_user_are_the_same_call(component):
    call = FILTER_CALLS[component]
    plain = _ids(call(None))
    assert plain and all(i.startswith("ana") for i in plain)
    assert _ids(call({})) == plain
    assert _ids(call({"user_id": "ana"})) == plain


@pytest.mark.parametrize("component", list(FILTER_CALLS))
def test_a_filter_narrows_and_an_unhashable_value_matches_nothing(component):
    call = FILTER_CALLS[component]
    assert _ids(call({"project": "atlas"})) == ["ana-t"]
    assert _ids(call({"project": ["atlas"]})) == []  # equality: a list equals no str
    assert _ids(call({"project": None})) == []  # a value None is a value, not "any"


# --------------------------------------------------------------------------
# A created in the future: refused where memory enters a strict component
# --------------------------------------------------------------------------

#: Later than any time a test runs at (the rule compares with the time of the write,
#: not with a component's fixed scoring clock: tests/core/test_checks.py pins that edge).
LATE = "9999-12-31T00:00:00Z"
FUTURE_RULE = "created must be at most 1 day after now"


def _late_doc(**metadata: Any) -> Document:
    return Document(id="late", page_content="deploy", metadata={"created": LATE, **metadata})


def _late_node() -> TextNode:
    return TextNode(id_="late", text="deploy", metadata={"created": LATE})


#: Each way memory enters a component, with the component's strict option.
FUTURE_WRITES: dict[str, Callable[[bool], Any]] = {
    "LangChain retriever documents": lambda strict: lc.PoolSplitRetriever(
        documents=[_late_doc()], pools=POOLS, strict=strict),
    "LangChain add_documents": lambda strict: lc.PoolSplitRetriever(
        documents=[], pools=POOLS, strict=strict).add_documents([_late_doc()]),
    "LangChain compressor pinned": lambda strict: lc.PoolSplitCompressor(
        pinned=[_late_doc()], pools=POOLS, strict=strict),
    "LlamaIndex retriever nodes": lambda strict: li.PoolSplitRetriever(
        nodes=[_late_node()], pools=POOLS, strict=strict),
    "LlamaIndex insert_nodes": lambda strict: li.PoolSplitRetriever(
        nodes=[], pools=POOLS, strict=strict).insert_nodes([_late_node()]),
    "LlamaIndex memory block": lambda strict: li.PoolSplitMemoryBlock(
        store=[{"id": "late", "content": "deploy", "created": LATE}], pools=POOLS,
        strict=strict),
    "LangGraph put": lambda strict: PoolSplitStore(InMemoryStore(), strict=strict).put(
        SHARED, "late", {"content": "deploy", "created": LATE}),
}


@pytest.mark.parametrize("write", list(FUTURE_WRITES))
def test_a_created_in_the_future_is_refused_by_every_strict_write(write):
    with pytest.raises(ValueError) as info:
        FUTURE_WRITES[write](True)
    assert f"{FUTURE_RULE} (" in str(info.value) and f"got '{LATE}'" in str(info.value)
    FUTURE_WRITES[write](False)  # strict=False: read as the spec reads it, 0 days old


def test_a_strict_store_still_reads_an_item_dated_in_the_future_written_around_it():
    # Reads skip an item for its fields, never for the time it names: an item stays
    # readable as the clock moves, and every engine (the database's too) reads alike.
    bare = InMemoryStore()
    bare.put(SHARED, "late", {"type": "task", "content": "deploy", "created": LATE})
    got = PoolSplitStore(bare).retrieve_pools(SHARED, POOLS, {"message": "deploy"}, now=NOW)
    assert [item.key for item in got["tasks"]] == ["late"]
