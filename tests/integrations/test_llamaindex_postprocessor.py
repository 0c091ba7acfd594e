"""PoolSplitPostprocessor: pinned corrections reach the prompt; similarity reaches the scorer."""

from __future__ import annotations

import pytest
from llama_index.core import VectorStoreIndex
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.llms import MockLLM
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
from pydantic import ValidationError

from poolsplit_core.poolsplit import Pool
from poolsplit_integrations.llama_index import PoolSplitPostprocessor, PoolSplitRetriever

from ._llamaindex_support import (
    CORRECTION,
    NOW,
    POOLS,
    TASK,
    fresh_nodes,
    offline_llamaindex,  # noqa: F401 -- the fixture, used via pytestmark
    store_nodes,
)

pytestmark = pytest.mark.usefixtures("offline_llamaindex")


def correction() -> TextNode:
    return next(n for n in store_nodes() if n.node_id == "fix-1")


def content_nodes(n: int = 12) -> list[TextNode]:
    return [TextNode(id_=f"page-{i:02d}", text=f"DOC {i}: deploy release detail {i}.",
                     metadata={"type": "task", "base_priority": 5}) for i in range(n)]


def index_with_correction() -> VectorStoreIndex:
    # MockEmbedding gives every text the same vector, so similarity search
    # ties and keeps the highest node ids: with a small top-k it returns
    # "page-*" content nodes and never the correction "fix-1".
    return VectorStoreIndex([*content_nodes(), correction()],
                            embed_model=MockEmbedding(embed_dim=8))


def test_similarity_search_alone_misses_the_correction():
    engine = index_with_correction().as_query_engine(similarity_top_k=2, llm=MockLLM())
    prompt = str(engine.query("deploy release?"))
    assert "DOC" in prompt
    assert CORRECTION not in prompt  # the precondition the next test relies on


def test_pinned_correction_reaches_the_prompt_first():
    postprocessor = PoolSplitPostprocessor(pools=POOLS, pinned=[correction()], now=NOW)
    engine = index_with_correction().as_query_engine(
        similarity_top_k=2, llm=MockLLM(), node_postprocessors=[postprocessor])
    prompt = str(engine.query("deploy release?"))
    assert CORRECTION in prompt and "DOC" in prompt
    assert prompt.index(CORRECTION) < prompt.index("DOC")
    assert prompt.count(CORRECTION) == 1


def test_pinned_node_found_by_search_too_is_kept_once():
    fix = correction()
    candidates = [NodeWithScore(node=fix, score=0.9),
                  NodeWithScore(node=content_nodes(1)[0], score=0.8)]
    post = PoolSplitPostprocessor(pools=POOLS, pinned=[fix], now=NOW)
    got = post.postprocess_nodes(candidates, query_str="deploy")
    assert [r.node.node_id for r in got] == ["fix-1", "page-00"]


def test_candidate_score_reaches_the_scorer_as_similarity():
    seen = {}

    def by_similarity(entry, context):
        seen[entry["id"]] = entry.get("similarity")
        return entry.get("similarity") or 0.0

    candidates = [NodeWithScore(node=node, score=score)
                  for node, score in zip(content_nodes(3), [0.2, 0.9, 0.5])]
    post = PoolSplitPostprocessor(pools=[Pool("all", 1000, 10)], pinned=[correction()],
                                  scorer=by_similarity)
    got = post.postprocess_nodes(candidates, query_str="q")
    assert seen == {"page-00": 0.2, "page-01": 0.9, "page-02": 0.5}  # pinned is always: unscored
    assert [r.node.node_id for r in got] == ["fix-1", "page-01", "page-02", "page-00"]
    assert [r.score for r in got[1:]] == [0.9, 0.5, 0.2]
    assert got[0].score > 0.9


def test_postprocessor_matches_the_retriever_on_the_same_nodes():
    nodes = store_nodes() + fresh_nodes(10)
    retriever = PoolSplitRetriever(nodes=nodes, pools=POOLS, k=3, now=NOW)
    post = PoolSplitPostprocessor(pools=POOLS, k=3, now=NOW)
    via_post = post.postprocess_nodes([NodeWithScore(node=n) for n in nodes],
                                      query_bundle=QueryBundle("deploy release"))
    via_retriever = retriever.retrieve("deploy release")

    def seen(r):
        kept = {k: v for k, v in r.node.metadata.items() if k != "poolsplit_similarity"}
        return r.node.node_id, r.score, kept

    assert [seen(r) for r in via_post] == [seen(r) for r in via_retriever]
    # Unscored candidates carry their rank as similarity (1 - i/n); stored nodes none.
    rank = {n.node_id: 1 - i / len(nodes) for i, n in enumerate(nodes)}
    assert [r.node.metadata["poolsplit_similarity"] for r in via_post] == [
        rank[r.node.node_id] for r in via_post]
    assert all(r.node.metadata["poolsplit_similarity"] is None for r in via_retriever)


def test_the_retriever_score_is_kept_beside_the_poolsplit_score():
    # NodeWithScore.score is the poolsplit score (the order of the result);
    # the candidate's own similarity is kept in metadata, unbounded scores
    # never replace it.
    post = PoolSplitPostprocessor(pools=[Pool("all", 1000, 10)], now=NOW)
    nodes = [TextNode(id_="a", text="release checklist"), TextNode(id_="b", text="push policy")]
    got = post.postprocess_nodes([NodeWithScore(node=nodes[0], score=0.83),
                                  NodeWithScore(node=nodes[1], score=0.2)],
                                 query_bundle=QueryBundle("release"))
    assert {r.node.node_id: r.node.metadata["poolsplit_similarity"] for r in got} == {
        "a": 0.83, "b": 0.2}
    assert {r.node.node_id: r.score for r in got} == {"a": 12.5, "b": 5.0}
    assert "poolsplit_similarity" in got[0].node.excluded_llm_metadata_keys


def test_candidates_and_pinned_nodes_are_never_mutated():
    pinned = [correction()]
    nodes = content_nodes(4)
    before = [n.model_dump() for n in pinned + nodes]
    candidates = [NodeWithScore(node=n, score=0.5) for n in nodes]
    got = PoolSplitPostprocessor(pools=POOLS, pinned=pinned, now=NOW).postprocess_nodes(
        candidates, query_str="deploy")
    assert [n.model_dump() for n in pinned + nodes] == before
    assert all(c.score == 0.5 for c in candidates)
    assert got and all(r.node is not n for r in got for n in pinned + nodes)


def test_changing_a_field_takes_effect_on_the_next_call():
    post = PoolSplitPostprocessor(pools=[Pool("all", 1000, 10)], pinned=[correction()])
    candidates = [NodeWithScore(node=n, score=1.0) for n in content_nodes(3)]
    assert len(post.postprocess_nodes(candidates, query_str="q")) == 4
    post.k = 1
    assert len(post.postprocess_nodes(candidates, query_str="q")) == 2
    post.filter = {"type": "correction"}
    assert [r.node.node_id for r in post.postprocess_nodes(candidates, query_str="q")] == [
        correction().node_id]
    with pytest.raises(ValidationError, match="frozen"):  # pinned is prepared: build anew
        post.pinned = []


def test_no_query_bundle_means_an_empty_message():
    seen = []
    post = PoolSplitPostprocessor(pools=[Pool("all", 100, 5)],
                                  scorer=lambda e, ctx: seen.append(ctx["message"]) or 1.0)
    post.postprocess_nodes([NodeWithScore(node=content_nodes(1)[0], score=0.1)])
    assert seen == [""]


@pytest.mark.asyncio
async def test_apostprocess_agrees_with_postprocess():
    post = PoolSplitPostprocessor(pools=POOLS, pinned=[correction()], now=NOW)
    candidates = [NodeWithScore(node=n, score=0.3) for n in content_nodes(6)]
    sync = post.postprocess_nodes(candidates, query_str="deploy")
    got = await post.apostprocess_nodes(candidates, query_str="deploy")
    assert [(r.node.node_id, r.score) for r in got] == [(r.node.node_id, r.score) for r in sync]


def test_invalid_configuration_is_refused_at_construction():
    with pytest.raises(ValueError, match="'always' is the pool under which"):
        PoolSplitPostprocessor(pools=[Pool("always", 10, 1)])
    with pytest.raises(ValueError, match="k must be >= 0, got -2"):
        PoolSplitPostprocessor(pools=POOLS, k=-2)
    with pytest.raises(TypeError, match="got a single Pool"):
        PoolSplitPostprocessor(pools=POOLS[0])


def test_task_text_reaches_the_prompt_through_the_postprocessor():
    # the content candidates the index found are pool-split, not dropped
    index = VectorStoreIndex(store_nodes(), embed_model=MockEmbedding(embed_dim=8))
    engine = index.as_query_engine(
        similarity_top_k=4, llm=MockLLM(),
        node_postprocessors=[PoolSplitPostprocessor(pools=POOLS, now=NOW)])
    prompt = str(engine.query("deploy release?"))
    assert TASK in prompt and prompt.index(CORRECTION) < prompt.index(TASK)
