"""Every adapter's read is one OpenTelemetry span, with the ledger its ``explain`` gives.

LangChain's retriever, LlamaIndex's retriever, postprocessor and memory
block, and LangGraph's PoolSplitStore: each read reaches the in-memory
exporter of ``tests/otel_support.py`` as one ``search_memory`` span, the
inner PreparedStore read adding none.
"""

from __future__ import annotations

import json

import pytest
from langchain_core.documents import Document
from langgraph.store.memory import InMemoryStore
from langgraph.store.postgres import PostgresStore
from llama_index.core.schema import NodeWithScore, TextNode

from poolsplit_core import tracing
from poolsplit_core.poolsplit import Pool
from poolsplit_integrations import langchain as lc
from poolsplit_integrations import llama_index as li
from poolsplit_integrations.langgraph import PoolSplitStore
from tests.otel_support import assert_ledger, only_span, read_spans

from ._llamaindex_support import NOW, offline_llamaindex  # noqa: F401 -- the fixture

pytestmark = pytest.mark.usefixtures("offline_llamaindex")

POOLS = [Pool("work", max_tokens=12, max_entries=2, types=("task", "correction")),
         Pool("skills", max_tokens=20, max_entries=1, types=("skill",))]
ROWS = [
    ("fix", "Never force-push to main.", {"type": "correction", "scope": "always"}),
    *((f"t{i}", f"deploy the api step {i} now", {"type": "task", "base_priority": 9 - i})
      for i in range(5)),
    ("s1", "bisect a regression", {"type": "skill"}),
    ("old", "deploy the old api", {"type": "task", "status": "retired"}),
    ("r1", "bake bread", {"type": "recipe"}),
]


def documents():
    return [Document(id=i, page_content=text, metadata=dict(meta)) for i, text, meta in ROWS]


def nodes():
    return [TextNode(id_=i, text=text, metadata=dict(meta)) for i, text, meta in ROWS]


def ana_store(base=None):
    """A PoolSplitStore over ``base`` (default: an InMemoryStore) with ROWS under ("m", "ana")."""
    store = PoolSplitStore(InMemoryStore() if base is None else base)
    for i, text, meta in ROWS:
        store.put(("m", "ana"), i, {"content": text, **meta})
    return store


def check(span, component, count, explanation):
    assert span.name == f"search_memory {component}"
    assert span.attributes["gen_ai.memory.store.id"] == component
    assert span.attributes["gen_ai.operation.name"] == "search_memory"
    assert span.attributes["gen_ai.memory.record.count"] == count
    assert_ledger(span, explanation)
    assert "gen_ai.memory.query.text" not in span.attributes
    assert "gen_ai.memory.records" not in span.attributes


def test_the_langchain_retriever_read_is_one_span(spans):
    retriever = lc.PoolSplitRetriever(documents=documents(), pools=POOLS, now=NOW)
    got = retriever.invoke("deploy the api")
    check(only_span(spans), "PoolSplitRetriever", len(got), retriever.explain("deploy the api"))


def test_the_llamaindex_retriever_read_is_one_span(spans):
    retriever = li.PoolSplitRetriever(nodes=nodes(), pools=POOLS, now=NOW)
    got = retriever.retrieve("deploy the api")
    check(only_span(spans), "PoolSplitRetriever", len(got), retriever.explain("deploy the api"))


def test_the_llamaindex_postprocessor_read_is_one_span(spans):
    post = li.PoolSplitPostprocessor(pools=POOLS, now=NOW)
    candidates = [NodeWithScore(node=node, score=0.5) for node in nodes()]
    got = post.postprocess_nodes(candidates, query_str="deploy the api")
    span = only_span(spans)
    assert span.name == "search_memory PoolSplitPostprocessor"
    assert span.attributes["gen_ai.memory.record.count"] == len(got)


def test_the_llamaindex_memory_block_read_is_one_span(spans):
    block = li.PoolSplitMemoryBlock(
        store=[{"id": i, "content": text, **meta} for i, text, meta in ROWS], pools=POOLS,
        now=NOW)
    block.render("deploy the api")
    span = only_span(spans)
    assert span.name == "search_memory PoolSplitMemoryBlock"
    assert span.attributes["gen_ai.memory.record.count"] >= 1


def test_the_langgraph_store_read_is_one_span_with_the_store_ledger(spans):
    store = ana_store()
    got = store.retrieve_pools(("m", "ana"), POOLS, {"message": "deploy the api"}, now=NOW)
    span = only_span(spans)
    explained = store.explain_pools(("m", "ana"), POOLS, {"message": "deploy the api"}, now=NOW)
    check(span, "PoolSplitStore", sum(map(len, got.values())), explained.explanation)
    assert span.attributes["poolsplit.engine"] == explained.engine


def test_an_unbound_read_of_a_multi_user_store_is_an_error_span(spans):
    from opentelemetry.trace import StatusCode

    store = PoolSplitStore(InMemoryStore())
    store.put(("m",), "a", {"content": "deploy", "type": "task", "user_id": "ana"})
    with pytest.raises(ValueError) as refused:
        store.retrieve_pools(("m",), POOLS, {"message": "deploy"})
    span = only_span(spans)
    assert span.status.status_code is StatusCode.ERROR
    assert span.attributes["error.type"] == tracing._error_type(refused.value)
    spans.clear()
    store.retrieve_pools(("m",), POOLS, {"message": "deploy"}, filter={"user_id": "ana"})
    span = only_span(spans)
    assert span.attributes["poolsplit.user_filter"] is True
    assert "poolsplit.user_id" not in span.attributes


def test_content_capture_records_what_the_adapter_returned(spans):
    tracing.capture_content(True)
    retriever = lc.PoolSplitRetriever(documents=documents(), pools=POOLS, now=NOW, k=1)
    got = retriever.invoke("deploy the api")
    span = only_span(spans)
    assert span.attributes["gen_ai.memory.query.text"] == "deploy the api"
    records = json.loads(span.attributes["gen_ai.memory.records"])
    assert [r["id"] for r in records] == [d.id for d in got]


# --------------------------------------------------------------------------
# LangChain / LangSmith: the run's names, the ledger as a custom event
# --------------------------------------------------------------------------


class LedgerHandler:
    """A callback handler keeping every custom event and the run it came with."""

    def __init__(self):
        from langchain_core.callbacks import BaseCallbackHandler

        events = self.events = []
        starts = self.starts = []

        class Handler(BaseCallbackHandler):
            def on_custom_event(self, name, data, *, run_id, **kwargs):
                events.append((name, data, run_id))

            def on_retriever_start(self, serialized, query, *, run_id, **kwargs):
                starts.append((run_id, kwargs.get("metadata") or {}))

        self.handler = Handler()


@pytest.mark.parametrize("call", ["invoke", "ainvoke"])
def test_a_callback_handler_receives_the_ledger_from_invoke(call):
    import asyncio

    from poolsplit_integrations.langchain import LEDGER_EVENT

    retriever = lc.PoolSplitRetriever(documents=documents(), pools=POOLS, now=NOW)
    seen = LedgerHandler()
    config = {"callbacks": [seen.handler]}
    if call == "invoke":
        retriever.invoke("deploy the api", config=config)
    else:
        asyncio.run(retriever.ainvoke("deploy the api", config=config))
    [(name, data, run_id)] = seen.events
    assert name == LEDGER_EVENT
    assert run_id == seen.starts[0][0]  # the retriever's own run
    explained = retriever.explain("deploy the api")
    assert [p["pool"] for p in data["pools"]] == list(explained.ledgers)
    for got, ledger in zip(data["pools"], explained.ledgers.values()):
        assert (got["max_tokens"], got["tokens_used"], got["selected"], got["always"],
                got["always_tokens"], got["over_tokens"], got["over_entries"]) == (
            ledger.max_tokens, ledger.tokens_used, ledger.selected, ledger.always,
            ledger.always_tokens, ledger.skipped_tokens, ledger.skipped_entries)
    assert data["no_pool"] == 1 and data["inactive"] == 1  # the recipe, the retired task
    json.dumps(data)  # plain data: a tracer can send it as it is


def test_no_handler_taking_custom_events_no_ledger_work(monkeypatch):
    from langchain_core.callbacks import BaseCallbackHandler

    class Deaf(BaseCallbackHandler):
        ignore_custom_event = True

    retriever = lc.PoolSplitRetriever(documents=documents(), pools=POOLS, now=NOW)
    monkeypatch.setattr(lc, "explain", lambda *a, **k: pytest.fail("explained"))
    assert retriever.invoke("deploy the api")
    assert retriever.invoke("deploy the api", config={"callbacks": [Deaf()]})


def test_langsmith_names_the_retriever_and_its_vector_store():
    from langchain_core.vectorstores import InMemoryVectorStore

    from tests.integrations._hashed_embedding import HashedEmbedding

    retriever = lc.PoolSplitRetriever(documents=documents(), pools=POOLS, now=NOW)
    assert retriever._get_ls_params() == {"ls_retriever_name": "poolsplit"}
    seen = LedgerHandler()
    retriever.invoke("deploy", config={"callbacks": [seen.handler]})
    assert seen.starts[0][1]["ls_retriever_name"] == "poolsplit"
    store = InMemoryVectorStore(HashedEmbedding())
    over = lc.PoolSplitRetriever.from_vector_store(store, POOLS, now=NOW)
    assert over._get_ls_params()["ls_vector_store_provider"] == "InMemoryVectorStore"


def test_every_returned_document_has_an_id_a_score_a_pool_and_the_always_flag():
    from langchain_core.retrievers import BaseRetriever

    class Plain(BaseRetriever):  # candidates with no id
        def _get_relevant_documents(self, query, *, run_manager):
            return [Document(page_content="deploy the api hotfix",
                             metadata={"type": "task", "base_priority": 10})]

    retriever = lc.PoolSplitRetriever(documents=documents(), pools=POOLS, now=NOW,
                                      base_retriever=Plain())
    got = retriever.invoke("deploy the api hotfix")
    assert "deploy the api hotfix" in [d.page_content for d in got]
    for doc in got:
        assert doc.id, doc
        assert {"poolsplit_pool", "poolsplit_score", "poolsplit_always"} <= set(doc.metadata)
        assert doc.metadata["poolsplit_always"] or doc.metadata["poolsplit_score"] is not None


# --------------------------------------------------------------------------
# LlamaIndex instrumentation: the retriever's scored nodes, the reranker's events
# --------------------------------------------------------------------------


@pytest.fixture
def llama_events():
    """Every LlamaIndex instrumentation event of the test, and the spans they came in."""
    from llama_index.core.instrumentation import get_dispatcher
    from llama_index.core.instrumentation.event_handlers import BaseEventHandler

    events = []

    class Keep(BaseEventHandler):
        @classmethod
        def class_name(cls):
            return "Keep"

        def handle(self, event, **kwargs):
            events.append(event)

    root = get_dispatcher()
    handler = Keep()
    root.add_event_handler(handler)
    try:
        yield events
    finally:
        root.event_handlers.remove(handler)


def test_the_retrievers_end_event_nodes_all_carry_a_score(llama_events):
    from llama_index.core.instrumentation.events.retrieval import RetrievalEndEvent

    retriever = li.PoolSplitRetriever(nodes=nodes(), pools=POOLS, now=NOW)
    got = retriever.retrieve("deploy the api")
    [end] = [e for e in llama_events if isinstance(e, RetrievalEndEvent)]
    assert [n.node.node_id for n in end.nodes] == [n.node.node_id for n in got]
    assert all(isinstance(n.score, float) for n in end.nodes)
    always = [n for n in end.nodes if n.node.metadata["poolsplit_always"]]
    assert [n.node.node_id for n in always] == ["fix"]
    # a correction ranks first: its score is above every contextual one
    assert always[0].score > max(n.score for n in end.nodes if n not in always)


def test_the_postprocessor_emits_rerank_events_in_its_span(llama_events):
    from llama_index.core.instrumentation.events.rerank import ReRankEndEvent, ReRankStartEvent

    post = li.PoolSplitPostprocessor(pools=POOLS, now=NOW, k=2)
    candidates = [NodeWithScore(node=node, score=0.5) for node in nodes()]
    got = post.postprocess_nodes(candidates, query_str="deploy the api")
    [start] = [e for e in llama_events if isinstance(e, ReRankStartEvent)]
    [end] = [e for e in llama_events if isinstance(e, ReRankEndEvent)]
    assert start.model_name == "poolsplit" and start.top_n == 2
    assert start.nodes == candidates and start.query.query_str == "deploy the api"
    assert [n.node.node_id for n in end.nodes] == [n.node.node_id for n in got]
    assert start.span_id is not None and start.span_id == end.span_id
    assert "PoolSplitPostprocessor._postprocess_nodes" in start.span_id


def test_the_memory_blocks_read_is_a_llamaindex_span():
    from llama_index.core.instrumentation import get_dispatcher
    from llama_index.core.instrumentation.span_handlers import SimpleSpanHandler

    handler = SimpleSpanHandler()
    root = get_dispatcher()
    root.add_span_handler(handler)
    try:
        block = li.PoolSplitMemoryBlock(
            store=[{"id": i, "content": text, **meta} for i, text, meta in ROWS], pools=POOLS,
            now=NOW)
        block.render("deploy the api")
    finally:
        root.span_handlers.remove(handler)
    assert any("PoolSplitMemoryBlock.render" in span.id_ for span in handler.completed_spans)


@pytest.mark.parametrize("component", ["langchain", "llamaindex"])
def test_an_adapter_read_refused_before_it_selects_is_one_error_span(spans, component):
    from opentelemetry.trace import StatusCode

    rows = [(i, text, {**meta, "user_id": "ana"}) for i, text, meta in ROWS]
    if component == "langchain":
        retriever = lc.PoolSplitRetriever(
            documents=[Document(id=i, page_content=t, metadata=m) for i, t, m in rows],
            pools=POOLS, now=NOW)
        read = retriever.invoke
    else:
        retriever = li.PoolSplitRetriever(
            nodes=[TextNode(id_=i, text=t, metadata=m) for i, t, m in rows], pools=POOLS,
            now=NOW)
        read = retriever.retrieve
    with pytest.raises(ValueError, match="user_id") as refused:
        read("deploy the api")
    span = only_span(spans)
    assert span.name == "search_memory PoolSplitRetriever"
    assert span.status.status_code is StatusCode.ERROR
    assert span.attributes["error.type"] == tracing._error_type(refused.value)
    assert "gen_ai.memory.record.count" not in span.attributes


def test_the_async_store_read_and_the_store_retriever_are_one_span_each(spans):
    import asyncio

    from poolsplit_integrations.langgraph import PoolSplitStoreRetriever

    store = ana_store()
    got = asyncio.run(store.aretrieve_pools(("m", "ana"), POOLS, {"message": "deploy the api"},
                                            now=NOW))
    span = only_span(spans)
    assert span.name == "search_memory PoolSplitStore"
    assert span.attributes["gen_ai.memory.record.count"] == sum(map(len, got.values()))
    spans.clear()
    retriever = PoolSplitStoreRetriever(store=store, namespace=("m", "{user_id}"), pools=POOLS,
                                        now=NOW)
    docs = retriever.invoke("deploy the api", config={"configurable": {"user_id": "ana"}})
    span = only_span(spans)
    assert span.attributes["gen_ai.memory.record.count"] == len(docs)
    assert span.attributes["poolsplit.user_filter"] is True
    assert "poolsplit.user_id" not in span.attributes
    spans.clear()
    tracing.capture_content(True)
    retriever.invoke("deploy the api", config={"configurable": {"user_id": "ana"}})
    assert only_span(spans).attributes["poolsplit.user_id"] == "ana"


def test_a_store_read_on_every_backend_is_one_span_naming_its_engine(spans, bare_store):
    store = ana_store(bare_store)
    spans.clear()
    got = store.retrieve_pools(("m", "ana"), POOLS, {"message": "deploy the api"}, now=NOW)
    span = only_span(spans)
    explained = store.explain_pools(("m", "ana"), POOLS, {"message": "deploy the api"}, now=NOW)
    assert span.attributes["gen_ai.memory.record.count"] == sum(map(len, got.values()))
    if span.attributes["poolsplit.engine"] == "database":
        # Scored in PostgreSQL (its functions installed by an earlier setup() on this server):
        # no second read for a ledger. explain_pools reads the namespace whole, by snapshot.
        assert isinstance(bare_store, PostgresStore)
        assert "poolsplit.pools" not in span.attributes
    else:
        assert span.attributes["poolsplit.engine"] == explained.engine
        assert_ledger(span, explained.explanation)


def test_a_store_explain_is_one_span_whose_ledger_is_the_explanation(spans, bare_store):
    store = ana_store(bare_store)
    spans.clear()
    explained = store.explain_pools(("m", "ana"), POOLS, {"message": "deploy the api"}, now=NOW)
    span = only_span(spans)
    assert span.attributes["poolsplit.engine"] == explained.engine
    assert span.attributes["gen_ai.memory.record.count"] == sum(
        map(len, explained.explanation.loaded().values()))
    assert_ledger(span, explained.explanation)


def test_an_mcp_recall_and_explain_are_one_span_each(spans, tmp_path):
    import anyio
    from mcp.client import Client

    from poolsplit_integrations.mcp_server import build_server, open_sqlite_store

    async def calls(client):
        await client.call_tool("remember", {"content": "Staging runs on pg-2.",
                                            "type": "correction", "scope": "always"})
        await client.call_tool("remember", {"content": "deploy the api", "type": "task"})
        spans.clear()
        recalled = await client.call_tool("recall", {"query": "deploy the api"})
        recall_spans = read_spans(spans)
        spans.clear()
        await client.call_tool("explain", {"query": "deploy the api"})
        return recalled, recall_spans, read_spans(spans)

    async def go():
        async with Client(build_server(store, user="ana", pools=POOLS)) as client:
            return await calls(client)

    with open_sqlite_store(tmp_path / "m.sqlite") as store:
        recalled, recall_spans, explain_spans = anyio.run(go)
    assert len(recall_spans) == 1 and len(explain_spans) == 1
    span = recall_spans[0]
    assert span.attributes["poolsplit.user_filter"] is True
    loaded = recalled.structured_content
    assert span.attributes["gen_ai.memory.record.count"] == len(loaded["always"]) + sum(
        map(len, loaded["pools"].values()))
    assert "gen_ai.memory.query.text" not in span.attributes  # content capture is off
