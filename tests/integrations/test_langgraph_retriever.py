"""PoolSplitStoreRetriever: namespace from the run's config, failing closed; LangChain's suite."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from langchain_core.documents import Document
from langchain_tests.integration_tests import RetrieversIntegrationTests
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.store.memory import InMemoryStore

from poolsplit_core.poolsplit import Pool
from poolsplit_integrations.langgraph import PoolSplitStore, PoolSplitStoreRetriever

NOW = datetime(2026, 3, 1, tzinfo=timezone.utc)
POOLS = [Pool("work", 100, 3, ("task",)), Pool("notes", 100, 3)]


def filled(bare=None) -> PoolSplitStore:
    store = PoolSplitStore(bare if bare is not None else InMemoryStore())
    for user in ("ana", "bo"):
        ns = ("memories", user)
        store.put(ns, "fix", {"content": f"{user}: deploy with just", "scope": "always",
                              "type": "correction"})
        for i in range(6):
            store.put(ns, f"t{i}", {"content": f"{user} task {i} deploy", "type": "task"})
            store.put(ns, f"n{i}", {"content": f"{user} note {i} release", "type": "note"})
    return store


def retriever(store, **kwargs) -> PoolSplitStoreRetriever:
    return PoolSplitStoreRetriever(store=store, namespace=("memories", "{user_id}"),
                                   pools=POOLS, now=NOW, **kwargs)


def test_the_namespace_is_filled_from_the_config_and_tenants_never_mix(bare_store):
    store = filled(bare_store)
    docs = retriever(store).invoke("deploy", {"configurable": {"user_id": "bo"}})
    assert docs[0].page_content == "bo: deploy with just"
    assert docs[0].metadata["poolsplit_always"] is True
    assert docs[0].metadata["namespace"] == ("memories", "bo")
    assert docs[0].metadata["key"] == "fix"
    assert all(d.metadata["namespace"] == ("memories", "bo") for d in docs)
    assert all(d.page_content.startswith("bo") for d in docs)
    assert {d.metadata["poolsplit_pool"] for d in docs} == {"work", "notes"}
    assert "content" not in docs[1].metadata and docs[1].metadata["type"] == "task"


def test_a_langmem_profile_reads_as_text_and_is_scored_on_that_same_text():
    store = PoolSplitStore(InMemoryStore())
    ns = ("memories", "ana")
    store.put(ns, "profile", {"kind": "Profile", "content": {"timezone": "CET", "name": "Ana"}})
    store.put(ns, "n1", {"content": "Ana likes tea", "type": "note"})
    pools = [Pool("profile", 100, 1, ("Profile",)), Pool("notes", 100, 1)]
    docs = PoolSplitStoreRetriever(store=store, namespace=("memories", "{user_id}"),
                                   pools=pools, now=NOW).invoke(
        "which timezone?", {"configurable": {"user_id": "ana"}})
    profile = next(d for d in docs if d.metadata["key"] == "profile")
    assert profile.page_content == "name: Ana\ntimezone: CET"
    assert profile.metadata["kind"] == "Profile" and "content" not in profile.metadata
    # one rendering: the entry the core scored (words matched, tokens counted) is that text
    assert [e["content"] for e in store.entries(ns) if e["id"] == "profile"] == [
        profile.page_content]


def test_a_missing_template_variable_fails_closed_before_any_read():
    store = filled()
    r = retriever(store)
    with pytest.raises(ValueError, match=r"config\['configurable'\]\['user_id'\]"):
        r.invoke("deploy")
    with pytest.raises(ValueError, match="user_id"):
        r.invoke("deploy", {"configurable": {"user_id": ""}})
    with pytest.raises(ValueError, match=r"without '\.'"):
        r.invoke("deploy", {"configurable": {"user_id": "a.b"}})  # would not widen either
    assert store._views == {}  # nothing was read


def test_the_namespace_cannot_be_passed_around_the_template():
    r = retriever(filled())
    with pytest.raises(TypeError, match="namespace"):
        r.invoke("deploy", {"configurable": {"user_id": "ana"}}, namespace=("memories", "bo"))
    with pytest.raises(TypeError, match=r"\['top_n'\]"):
        r.invoke("deploy", {"configurable": {"user_id": "ana"}}, top_n=2)


def test_k_caps_the_contextual_results_fairly_and_never_a_correction():
    r = retriever(filled(), k=2)
    docs = r.invoke("deploy", {"configurable": {"user_id": "ana"}})
    assert [d.metadata["poolsplit_pool"] for d in docs] == ["notes", "work", "notes"]
    assert docs[0].metadata["key"] == "fix"
    docs = r.invoke("deploy", {"configurable": {"user_id": "ana"}}, k=0)
    assert [d.metadata["key"] for d in docs] == ["fix"]


def test_inside_a_graph_node_the_run_s_config_reaches_the_retriever():
    store = filled()
    r = retriever(store)
    seen = []

    def node(state: MessagesState):
        seen.append([d.metadata["namespace"][1] for d in r.invoke("deploy")])
        return {"messages": []}

    graph = StateGraph(MessagesState).add_node("recall", node)
    graph = graph.add_edge(START, "recall").compile(store=store)
    graph.invoke({"messages": []}, {"configurable": {"user_id": "ana"}})
    assert seen and set(seen[0]) == {"ana"}


@pytest.mark.asyncio
async def test_ainvoke_fills_the_namespace_too():
    docs = await retriever(filled()).ainvoke("deploy", {"configurable": {"user_id": "ana"}})
    assert docs[0].metadata["namespace"] == ("memories", "ana")


def test_a_dict_query_is_refused_saying_invoke_takes_the_query_string_and_how_to_map_it():
    import asyncio
    from operator import itemgetter

    memories = retriever(filled())
    config = {"configurable": {"user_id": "ana"}}
    asked = {"question": "deploy"}
    for call, run in (("invoke", lambda: memories.invoke(asked, config)),
                      ("ainvoke", lambda: asyncio.run(memories.ainvoke(asked, config)))):
        with pytest.raises(TypeError, match=(
                rf"^PoolSplitStoreRetriever\.{call}\(\) takes the query as a str, got dict"
                r" \{'question': 'deploy'\}; in a chain whose input is a dict, pick the query out"
                r" first: itemgetter\('question'\) \| retriever \(from operator import"
                r" itemgetter\)$")):
            run()
    chain = itemgetter("question") | memories
    got = [d.metadata["key"] for d in chain.invoke(asked, config)]
    assert got == [d.metadata["key"] for d in memories.invoke("deploy", config)] and got


def test_bad_options_are_refused_by_name():
    with pytest.raises(ValueError, match="k must be >= 0"):
        retriever(filled(), k=-1)
    with pytest.raises(TypeError, match=r"namespace must be a tuple of str labels, got the str"
                                        r" 'memories', .* pass \('memories',\)"):
        PoolSplitStoreRetriever(store=filled(), namespace="memories", pools=POOLS)
    with pytest.raises(TypeError, match="namespace must be a non-empty tuple"):
        PoolSplitStoreRetriever(store=filled(), namespace=(), pools=POOLS)
    with pytest.raises(ValueError, match="extra"):
        PoolSplitStoreRetriever(store=filled(), namespace=("m",), pools=POOLS, top_k=3)


# pytest-asyncio is strict here: the suite's one async test needs the class's
# marker, and the sync tests' "marked but not async" warning is filtered.
@pytest.mark.asyncio
@pytest.mark.filterwarnings("ignore:The test <Function .*is marked with '@pytest.mark.asyncio'")
class TestPoolSplitStoreRetrieverStandard(RetrieversIntegrationTests):
    """LangChain's own retriever suite, over a fixed (template-free) namespace.

    Its user has no correction: the suite expects exactly ``k`` documents, and a
    correction is never cut (test_k_caps_the_contextual_results_fairly_... shows it).
    """

    @property
    def retriever_constructor(self) -> type[PoolSplitStoreRetriever]:
        return PoolSplitStoreRetriever

    @property
    def retriever_constructor_params(self) -> dict:
        store = filled()
        store.delete(("memories", "ana"), "fix")
        return {"store": store, "namespace": ("memories", "ana"),
                "pools": [Pool("all", max_tokens=500, max_entries=20)], "now": NOW}

    @property
    def retriever_query_example(self) -> str:
        return "deploy"


def test_the_standard_suite_sees_documents():
    docs = PoolSplitStoreRetriever(**TestPoolSplitStoreRetrieverStandard()
                                   .retriever_constructor_params).invoke("deploy", k=3)
    assert len(docs) == 3 and all(isinstance(d, Document) for d in docs)
