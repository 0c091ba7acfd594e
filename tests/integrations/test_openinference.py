"""What OpenInference's instrumentors (Arize Phoenix and its kin) show of the adapters' reads.

LangChain's and LlamaIndex's instrumentors export to an in-memory exporter
of their own provider (the global one stays unset); each test uninstruments
after itself.
"""

from __future__ import annotations

import json

import pytest
from llama_index.core.schema import NodeWithScore

from poolsplit_integrations import langchain as lc
from poolsplit_integrations import llama_index as li

from ._llamaindex_support import offline_llamaindex  # noqa: F401 -- the fixture
from .test_tracing_adapters import NOW, POOLS, documents, nodes

pytestmark = pytest.mark.usefixtures("offline_llamaindex")


@pytest.fixture
def exported():
    from openinference.instrumentation.langchain import LangChainInstrumentor
    from openinference.instrumentation.llama_index import LlamaIndexInstrumentor
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrumentors = [LangChainInstrumentor(), LlamaIndexInstrumentor()]
    for instrumentor in instrumentors:
        instrumentor.instrument(tracer_provider=provider)
    try:
        yield exporter
    finally:
        for instrumentor in instrumentors:
            instrumentor.uninstrument()


def of_kind(exporter, kind):
    return [span for span in exporter.get_finished_spans()
            if span.attributes.get("openinference.span.kind") == kind]


def listed(span, prefix):
    """The documents an OpenInference span lists under ``prefix``: index -> its fields."""
    out: dict[int, dict[str, object]] = {}
    for key, value in span.attributes.items():
        if key.startswith(prefix):
            index, field = key[len(prefix):].split(".document.")
            out.setdefault(int(index), {})[field] = value
    return [out[i] for i in sorted(out)]


def test_the_llamaindex_retriever_span_lists_each_node_with_id_content_score_and_pool(exported):
    got = li.PoolSplitRetriever(nodes=nodes(), pools=POOLS, now=NOW).retrieve("deploy the api")
    [span] = [s for s in of_kind(exported, "RETRIEVER") if s.name.endswith(".retrieve")]
    docs = listed(span, "retrieval.documents.")
    assert [d["id"] for d in docs] == [n.node.node_id for n in got]
    assert [d["content"] for d in docs] == [n.node.get_content() for n in got]
    assert [d["score"] for d in docs] == [n.score for n in got]
    assert [json.loads(d["metadata"])["poolsplit_pool"] for d in docs] == [
        n.node.metadata["poolsplit_pool"] for n in got]


def test_the_postprocessor_is_a_reranker_span(exported):
    candidates = [NodeWithScore(node=node, score=0.5) for node in nodes()]
    got = li.PoolSplitPostprocessor(pools=POOLS, now=NOW).postprocess_nodes(
        candidates, query_str="deploy the api")
    [span] = of_kind(exported, "RERANKER")
    assert span.attributes["reranker.model_name"] == "poolsplit"
    assert span.attributes["reranker.query"] == "deploy the api"
    assert len(listed(span, "reranker.input_documents.")) == len(candidates)
    out = listed(span, "reranker.output_documents.")
    assert [(d["id"], d["score"]) for d in out] == [(n.node.node_id, n.score) for n in got]


def test_the_langchain_retriever_span_lists_each_document_with_its_pool_and_score(exported):
    got = lc.PoolSplitRetriever(documents=documents(), pools=POOLS, now=NOW).invoke(
        "deploy the api")
    [span] = of_kind(exported, "RETRIEVER")
    docs = listed(span, "retrieval.documents.")
    assert [d["content"] for d in docs] == [doc.page_content for doc in got]
    metadata = [json.loads(d["metadata"]) for d in docs]
    # OpenInference maps a Document's text and metadata (not its id): id, pool, score, always
    assert [(m["poolsplit_id"], m["poolsplit_pool"], m["poolsplit_score"], m["poolsplit_always"])
            for m in metadata] == [(doc.id, doc.metadata["poolsplit_pool"],
                                    doc.metadata["poolsplit_score"],
                                    doc.metadata["poolsplit_always"]) for doc in got]
    assert all(doc.id for doc in got)
