"""PoolSplitRetriever: order, metadata, scores, no mutation, and the core's answer."""

from __future__ import annotations

import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st
from llama_index.core import Document
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.llms import MockLLM
from llama_index.core.node_parser import SentenceSplitter
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.schema import MetadataMode, NodeWithScore, QueryBundle, TextNode

from poolsplit_core.poolsplit import Pool, default_scorer, retrieve_pools
from poolsplit_integrations.llama_index import PoolSplitRetriever

from ._llamaindex_support import (
    CORRECTION,
    NOW,
    POOLS,
    SKILL,
    TASK,
    fresh_nodes,
    offline_llamaindex,  # noqa: F401 -- the fixture, used via pytestmark
    store_nodes,
    whitespace_tokenizer,
)

pytestmark = pytest.mark.usefixtures("offline_llamaindex")


def ids(results: list[NodeWithScore]) -> list[str]:
    return [r.node.node_id for r in results]


def snapshot(nodes: list[TextNode]) -> list[dict]:
    return [node.model_dump() for node in nodes]


# -- order, metadata, scores -------------------------------------------------


def test_always_scope_first_then_each_pool_in_selection_order():
    got = PoolSplitRetriever(nodes=store_nodes(), pools=POOLS, now=NOW,
                             require_filter_keys=()).retrieve("deploy?")
    assert ids(got) == ["fix-1", "task-1", "note-1", "skill-1"]


def test_metadata_names_pool_score_and_always_on_the_results():
    got = PoolSplitRetriever(nodes=store_nodes(), pools=POOLS, now=NOW,
                             require_filter_keys=()).retrieve("deploy?")
    meta = {r.node.node_id: r.node.metadata for r in got}
    assert meta["fix-1"]["poolsplit_pool"] == "work"
    assert meta["fix-1"]["poolsplit_always"] is True
    assert meta["fix-1"]["poolsplit_score"] is None
    assert meta["skill-1"]["poolsplit_pool"] == "skills"
    assert meta["skill-1"]["poolsplit_always"] is False
    assert meta["task-1"]["type"] == "task"  # the caller's metadata is kept


def test_poolsplit_keys_never_reach_the_prompt_text():
    got = PoolSplitRetriever(nodes=store_nodes(), pools=POOLS, now=NOW,
                             require_filter_keys=()).retrieve("deploy?")
    for result in got:
        assert "poolsplit" not in result.node.get_content(metadata_mode="llm")
        assert "poolsplit" not in result.node.get_content(metadata_mode="embed")


def test_scoring_keys_stay_in_metadata_but_never_reach_the_prompt_or_the_embedding():
    bookkeeping = {"type": "task", "scope": "always", "base_priority": 8,
                   "created": "2026-03-30", "token_count": 9, "tags": ["deploy"],
                   "project": "atlas", "status": "active", "superseded_by": None}
    nodes = [TextNode(id_="fix-1", text=CORRECTION,
                      metadata={**bookkeeping, "file_name": "runbook.pdf", "author": "Ana"},
                      excluded_llm_metadata_keys=["file_name"])]
    before = snapshot(nodes)
    got = PoolSplitRetriever(nodes=nodes, pools=POOLS, now=NOW,
                             require_filter_keys=()).retrieve("deploy?")
    node = got[0].node
    for mode in (MetadataMode.LLM, MetadataMode.EMBED):
        shown = node.get_content(metadata_mode=mode)
        for key in [*(f"{key}:" for key in bookkeeping), "poolsplit_"]:
            assert key not in shown, (mode, key, shown)
        assert "author: Ana" in shown  # the user's own keys still reach the model
    assert "file_name" not in node.get_content(metadata_mode=MetadataMode.LLM)  # its own kept
    assert "file_name: runbook.pdf" in node.get_content(metadata_mode=MetadataMode.EMBED)
    assert node.metadata.items() >= bookkeeping.items()  # every key stays in metadata
    assert node.metadata["poolsplit_pool"] == "work"
    assert snapshot(nodes) == before  # the input node is not mutated


def test_contextual_score_is_the_core_score():
    nodes = store_nodes()
    got = PoolSplitRetriever(nodes=nodes, pools=POOLS, now=NOW,
                             require_filter_keys=()).retrieve("deploy release")
    task = next(r for r in got if r.node.node_id == "task-1")
    entry = {**nodes[0].metadata, "content": TASK, "id": "task-1"}
    expected = default_scorer(entry, {"message": "deploy release"}, now=NOW)
    assert task.score == pytest.approx(expected)
    assert task.node.metadata["poolsplit_score"] == pytest.approx(expected)


def test_always_scope_score_is_above_every_contextual_score():
    got = PoolSplitRetriever(nodes=store_nodes() + fresh_nodes(20), pools=POOLS,
                             now=NOW, require_filter_keys=()).retrieve("deploy release")
    always = [r.score for r in got if r.node.metadata["poolsplit_always"]]
    contextual = [r.score for r in got if not r.node.metadata["poolsplit_always"]]
    assert always and contextual
    assert min(always) > max(contextual)
    # so sorting by score, as a downstream step might, keeps the correction first
    assert sorted(got, key=lambda r: -r.score)[0].node.node_id == "fix-1"


@pytest.mark.parametrize("scores", [[-7.0, -3.5], [0.0], [1e300], [2.0**60]])
def test_always_scope_score_rule_holds_for_negative_and_huge_scores(scores):
    nodes = [TextNode(id_="fix", text="x", metadata={"scope": "always"})] + [
        TextNode(id_=f"c{i}", text="y", metadata={"s": s}) for i, s in enumerate(scores)
    ]
    retriever = PoolSplitRetriever(nodes=nodes, pools=[Pool("all", 100, 10)],
                                   scorer=lambda e, ctx: e["s"], require_filter_keys=())
    got = retriever.retrieve("q")
    assert got[0].node.node_id == "fix"
    assert got[0].score > max(r.score for r in got[1:])


def test_always_scope_score_without_contextual_hits_is_one():
    nodes = [TextNode(id_="fix", text="x", metadata={"scope": "always"})]
    got = PoolSplitRetriever(nodes=nodes, pools=[Pool("all", 0, 0)],
                             require_filter_keys=()).retrieve("q")
    assert [(r.node.node_id, r.score) for r in got] == [("fix", 1.0)]


def test_k_caps_contextual_nodes_fairly_and_never_cuts_always_scope():
    retriever = PoolSplitRetriever(nodes=store_nodes(), pools=POOLS, k=1, now=NOW,
                                   require_filter_keys=())
    assert ids(retriever.retrieve("deploy?")) == ["fix-1", "task-1"]
    retriever = PoolSplitRetriever(nodes=store_nodes(), pools=POOLS, k=0, now=NOW,
                                   require_filter_keys=())
    assert ids(retriever.retrieve("deploy?")) == ["fix-1"]


def test_default_context_reaches_the_scorer():
    seen = []

    def scorer(entry, context):
        seen.append(dict(context))
        return 1.0

    PoolSplitRetriever(nodes=store_nodes(), pools=POOLS, scorer=scorer,
                       context={"project": "atlas", "tags": ["db"]},
                       require_filter_keys=()).retrieve("why?")
    assert seen and all(c == {"project": "atlas", "tags": ["db"], "message": "why?"}
                        for c in seen)


# -- no mutation ---------------------------------------------------------------


def test_input_nodes_are_never_mutated():
    nodes = store_nodes() + fresh_nodes(5)
    before = snapshot(nodes)
    retriever = PoolSplitRetriever(nodes=nodes, pools=POOLS, now=NOW, require_filter_keys=())
    got = retriever.retrieve("deploy?")
    assert snapshot(nodes) == before
    assert all(r.node is not n for r in got for n in nodes)
    got[0].node.metadata["changed"] = True  # a downstream step edits a result
    assert snapshot(nodes) == before
    assert "changed" not in retriever.retrieve("deploy?")[0].node.metadata


# -- sync and async agree ------------------------------------------------------


@pytest.mark.asyncio
async def test_retrieve_and_aretrieve_agree():
    retriever = PoolSplitRetriever(nodes=store_nodes() + fresh_nodes(8), pools=POOLS,
                                   k=3, now=NOW, require_filter_keys=())
    sync = retriever.retrieve("deploy release")
    got = await retriever.aretrieve("deploy release")
    assert [(r.node.node_id, r.score, r.node.metadata) for r in got] == [
        (r.node.node_id, r.score, r.node.metadata) for r in sync]


# -- the core's answer, as a property ----------------------------------------

WORDS = ["deploy", "release", "bisect", "notes", "branch", "friday", "schema", "cache"]
node_specs = st.lists(
    st.fixed_dictionaries({
        "type": st.sampled_from(["task", "note", "skill", "correction"]),
        "scope": st.sampled_from([None, "always"]),
        "base_priority": st.integers(0, 10),
        "created": st.sampled_from(["2026-03-31", "2026-01-01", "2025-06-01"]),
        "words": st.lists(st.sampled_from(WORDS), min_size=1, max_size=5),
        "token_count": st.one_of(st.none(), st.integers(1, 30)),
    }),
    max_size=12,
)
pool_specs = st.lists(
    st.tuples(st.integers(0, 60), st.integers(0, 4),
              st.one_of(st.none(), st.sets(st.sampled_from(["task", "note", "skill",
                                                            "correction"]), min_size=1))),
    min_size=1, max_size=3,
)


@given(specs=node_specs, pool_spec=pool_specs,
       query=st.lists(st.sampled_from(WORDS), max_size=3).map(" ".join))
def test_retriever_equals_core_retrieve_pools_flattened(specs, pool_spec, query):
    nodes, entries = [], []
    for i, spec in enumerate(specs):
        metadata = {key: value for key, value in spec.items()
                    if key != "words" and value is not None}
        text = " ".join(spec["words"])
        nodes.append(TextNode(id_=f"n{i}", text=text, metadata=metadata))
        entries.append({**metadata, "content": text, "id": f"n{i}"})
    pools = [Pool(f"p{i}", tokens, cap, types=None if types is None else sorted(types))
             for i, (tokens, cap, types) in enumerate(pool_spec)]

    picked = retrieve_pools(entries, pools, {"message": query}, now=NOW, always_pool=True)
    flat = [(pool, e) for pool in picked for e in picked[pool] if e.get("scope") == "always"]
    flat += [(pool, e) for pool in picked for e in picked[pool] if e.get("scope") != "always"]
    expected = [
        (e["id"], pool, None if e.get("scope") == "always"
         else default_scorer(e, {"message": query}, now=NOW))
        for pool, e in flat
    ]

    got = PoolSplitRetriever(nodes=nodes, pools=pools, now=NOW,
                             require_filter_keys=()).retrieve(query)
    assert [(r.node.node_id, r.node.metadata["poolsplit_pool"],
             r.node.metadata["poolsplit_score"]) for r in got] == expected
    contextual = [r.score for r in got if not r.node.metadata["poolsplit_always"]]
    for r in got:
        if r.node.metadata["poolsplit_always"]:
            assert all(r.score > s for s in contextual)
        else:
            assert r.score == r.node.metadata["poolsplit_score"]


# -- construction ---------------------------------------------------------------


def test_from_documents_makes_one_node_per_document():
    docs = [Document(id_="d1", text=CORRECTION, metadata={"scope": "always"}),
            Document(id_="d2", text=TASK, metadata={"type": "task"})]
    retriever = PoolSplitRetriever.from_documents(docs, pools=[Pool("all", 100, 5)],
                                                  require_filter_keys=())
    assert [n.node_id for n in retriever.nodes] == ["d1", "d2"]
    got = retriever.retrieve("release")
    assert ids(got) == ["d1", "d2"]
    assert got[0].node.metadata["poolsplit_always"] is True


def test_from_documents_with_a_node_parser_splits_and_keeps_scope():
    long_fix = " ".join(f"Rule {i} always applies here." for i in range(40))
    docs = [Document(id_="d1", text=long_fix, metadata={"scope": "always"})]
    parser = SentenceSplitter(chunk_size=40, chunk_overlap=0, tokenizer=whitespace_tokenizer)
    retriever = PoolSplitRetriever.from_documents(docs, pools=[Pool("all", 0, 0)],
                                                  node_parser=parser, require_filter_keys=())
    got = retriever.retrieve("q")
    assert len(got) > 1
    assert all(r.node.metadata["poolsplit_always"] for r in got)


def test_from_defaults_wants_exactly_one_of_nodes_or_documents():
    with pytest.raises(ValueError, match="exactly one of nodes or documents, got neither"):
        PoolSplitRetriever.from_defaults(pools=POOLS, require_filter_keys=())
    with pytest.raises(ValueError, match="got both"):
        PoolSplitRetriever.from_defaults(nodes=store_nodes(), documents=[], pools=POOLS,
                                         require_filter_keys=())
    built = PoolSplitRetriever.from_defaults(nodes=store_nodes(), pools=POOLS, now=NOW,
                                             require_filter_keys=())
    assert ids(built.retrieve("deploy?"))[0] == "fix-1"


def test_construction_errors_are_clear():
    with pytest.raises(ValueError, match="needs nodes, a base_retriever, or both"):
        PoolSplitRetriever(pools=POOLS, require_filter_keys=())
    with pytest.raises(ValueError, match="'always' is the pool under which"):
        PoolSplitRetriever(nodes=[], pools=[Pool("always", 10, 1)], require_filter_keys=())
    with pytest.raises(ValueError, match="k must be >= 0, got -1"):
        PoolSplitRetriever(nodes=[], pools=POOLS, k=-1, require_filter_keys=())
    with pytest.raises(TypeError, match="base_retriever must be a LlamaIndex BaseRetriever"):
        PoolSplitRetriever(pools=POOLS, base_retriever=object(), require_filter_keys=())


def test_duplicate_node_ids_are_refused_naming_both_positions_and_kept_once_when_lenient():
    nodes = [*store_nodes(), TextNode(id_="task-1", text="a second copy", metadata={})]
    first = [n.node_id for n in nodes].index("task-1")
    with pytest.raises(ValueError, match=rf"PoolSplitRetriever: nodes\[{first}\] and"
                                         rf" nodes\[{len(nodes) - 1}\] both have id 'task-1'"):
        PoolSplitRetriever(nodes=nodes, pools=POOLS, now=NOW, require_filter_keys=())
    lenient = PoolSplitRetriever(nodes=nodes, pools=POOLS, now=NOW, require_filter_keys=(),
                                 strict=False)
    assert ids(lenient.retrieve("deploy?")).count("task-1") == 1


# -- base_retriever -------------------------------------------------------------


class FixedRetriever(BaseRetriever):
    def __init__(self, results: list[NodeWithScore]) -> None:
        self.results = results
        super().__init__()

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return list(self.results)


def test_base_retriever_candidates_merge_dedupe_and_carry_similarity():
    static = store_nodes()
    candidates = [
        NodeWithScore(node=TextNode(id_="cand-1", text="candidate", metadata={}), score=0.9),
        NodeWithScore(node=static[0], score=0.5),  # also static: kept once
        NodeWithScore(node=TextNode(id_="cand-1", text="again", metadata={}), score=0.1),
    ]
    seen = {}

    def scorer(entry, context):
        seen[entry["id"]] = entry.get("similarity")
        return 1.0

    retriever = PoolSplitRetriever(nodes=static, pools=[Pool("all", 1000, 20)],
                                   scorer=scorer, base_retriever=FixedRetriever(candidates),
                                   require_filter_keys=())
    got = ids(retriever.retrieve("q"))
    assert sorted(got) == sorted({"fix-1", "task-1", "note-1", "skill-1", "cand-1"})
    assert seen["cand-1"] == 0.9
    assert seen["task-1"] is None  # the static node wins the duplicate


@pytest.mark.asyncio
async def test_base_retriever_is_awaited_on_aretrieve():
    cand = NodeWithScore(node=TextNode(id_="cand", text="deploy deploy", metadata={}), score=1)
    retriever = PoolSplitRetriever(nodes=[], pools=[Pool("all", 100, 5)],
                                   base_retriever=FixedRetriever([cand]), require_filter_keys=())
    assert ids(await retriever.aretrieve("deploy")) == ["cand"]


# -- query engine ---------------------------------------------------------------


def ask(nodes: list[TextNode], question: str = "deploy release?") -> str:
    retriever = PoolSplitRetriever(nodes=nodes, pools=POOLS, now=NOW, require_filter_keys=())
    engine = RetrieverQueryEngine.from_args(retriever, llm=MockLLM())
    return str(engine.query(question))  # MockLLM echoes the prompt it received


def test_query_engine_prompt_shows_the_correction_before_content():
    prompt = ask(store_nodes())
    assert CORRECTION in prompt and TASK in prompt and SKILL in prompt
    assert prompt.index(CORRECTION) < prompt.index(TASK)


def test_query_engine_keeps_the_correction_first_after_200_fresh_nodes():
    prompt = ask(store_nodes() + fresh_nodes(200))
    assert TASK not in prompt  # the fresh burst does crowd ordinary content out
    assert CORRECTION in prompt
    assert prompt.index(CORRECTION) < prompt.index("FRESH")
    assert SKILL in prompt  # its own pool


def test_without_always_scope_the_fresh_burst_crowds_the_correction_out():
    nodes = store_nodes()
    nodes[2] = TextNode(id_="fix-1", text=CORRECTION,
                        metadata={**nodes[2].metadata, "scope": "contextual"})
    assert CORRECTION not in ask(nodes + fresh_nodes(200))


@pytest.mark.asyncio
async def test_query_engine_async_path_shows_the_correction_first():
    retriever = PoolSplitRetriever(nodes=store_nodes() + fresh_nodes(200), pools=POOLS,
                                   now=NOW, require_filter_keys=())
    engine = RetrieverQueryEngine.from_args(retriever, llm=MockLLM())
    prompt = str(await engine.aquery("deploy release?"))
    assert CORRECTION in prompt and prompt.index(CORRECTION) < prompt.index("FRESH")


# -- the extra ------------------------------------------------------------------


def test_missing_llama_index_raises_an_import_error_naming_the_extra():
    code = ("import sys; sys.modules['llama_index'] = None;"
            " sys.modules['llama_index.core'] = None;"
            " import poolsplit_integrations.llama_index")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=False)
    assert run.returncode != 0
    assert "ImportError" in run.stderr
    assert "pip install 'poolsplit[llamaindex]'" in run.stderr
