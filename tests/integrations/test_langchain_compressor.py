"""PoolSplitCompressor: pool-split over another retriever's candidates, corrections pinned."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.runnables import RunnableLambda, RunnablePassthrough
from langchain_core.vectorstores import InMemoryVectorStore

from poolsplit_core.poolsplit import Pool
from poolsplit_integrations.langchain import PoolSplitCompressor, PoolSplitRetriever

NOW = datetime(2026, 3, 1, tzinfo=timezone.utc)
POOLS = [
    Pool("rules", max_tokens=100, max_entries=2, types=("correction", "task")),
    Pool("rest", max_tokens=100, max_entries=3),
]
CORRECTION = Document(id="fix-friday", page_content="Never deploy on Friday.",
                      metadata={"type": "correction", "scope": "always"})


def _pages(n: int = 12) -> list[Document]:
    return [Document(id=f"page-{i}", page_content=f"Release page {i} about deploy steps.",
                     metadata={"type": "task" if i % 2 else "note"})
            for i in range(n)]


def _search(k: int = 3) -> Any:
    """A similarity search that puts its score into metadata, like many stores do."""
    vectors = InMemoryVectorStore(DeterministicFakeEmbedding(size=16))
    vectors.add_documents(_pages())

    def search(query: str) -> list[Document]:
        hits = vectors.similarity_search_with_score(query, k=k)
        return [Document(id=d.id, page_content=d.page_content,
                         metadata={**d.metadata, "score": score}) for d, score in hits]

    return RunnableLambda(search)


def test_pinned_correction_loads_when_the_search_misses_it() -> None:
    search = _search()
    found = search.invoke("How do I deploy the release?")
    assert "fix-friday" not in [d.id for d in found]  # the search alone misses it
    compressor = PoolSplitCompressor(pools=POOLS, pinned=[CORRECTION], now=NOW)
    pipeline = (
        {"docs": search, "query": RunnablePassthrough()}
        | RunnableLambda(lambda x: compressor.compress_documents(x["docs"], x["query"]))
    )
    docs = pipeline.invoke("How do I deploy the release?")
    assert docs[0].id == "fix-friday"
    assert docs[0].metadata["poolsplit_always"] is True
    assert {d.id for d in docs[1:]} <= {d.id for d in found}
    assert len(docs) == 1 + len(found)


def test_candidate_score_reaches_a_custom_scorer_as_similarity() -> None:
    seen: dict[str, Any] = {}

    def by_similarity(entry: dict[str, Any], context: dict[str, Any]) -> float:
        seen[entry["id"]] = entry.get("similarity")
        return entry.get("similarity") or 0.0

    compressor = PoolSplitCompressor(pools=[Pool("all", 1000, 10)], scorer=by_similarity)
    candidates = [
        Document(id="low", page_content="a", metadata={"score": 0.2}),
        Document(id="high", page_content="b", metadata={"score": 0.9}),
        Document(id="int", page_content="c", metadata={"score": 1}),
        Document(id="none", page_content="d"),
        Document(id="flag", page_content="e", metadata={"score": True}),
        Document(id="text", page_content="f", metadata={"score": "0.99"}),
    ]
    docs = compressor.compress_documents(candidates, "anything")
    assert seen == {"low": 0.2, "high": 0.9, "int": 1.0, "none": None, "flag": None,
                    "text": None}
    assert [d.id for d in docs][:3] == ["int", "high", "low"]
    assert docs[1].metadata["poolsplit_score"] == 0.9
    assert "similarity" not in docs[1].metadata  # an entry key, not a document key


def test_real_search_scores_reach_the_scorer() -> None:
    seen: list[float] = []

    def record(entry: dict[str, Any], context: dict[str, Any]) -> float:
        seen.append(entry["similarity"])
        return entry["similarity"]

    found = _search(k=4).invoke("deploy")
    compressor = PoolSplitCompressor(pools=[Pool("all", 1000, 10)], scorer=record)
    compressor.compress_documents(found, "deploy")
    assert sorted(seen) == sorted(d.metadata["score"] for d in found)


def test_candidate_copy_of_a_pinned_document_is_kept_once() -> None:
    compressor = PoolSplitCompressor(pools=POOLS, pinned=[CORRECTION], now=NOW)
    copy_of_pin = Document(id="fix-friday", page_content=CORRECTION.page_content,
                           metadata={**CORRECTION.metadata, "score": 0.99})
    docs = compressor.compress_documents([copy_of_pin, *_pages(3)], "deploy")
    assert [d.id for d in docs].count("fix-friday") == 1


@pytest.mark.asyncio
async def test_acompress_equals_compress() -> None:
    compressor = PoolSplitCompressor(pools=POOLS, pinned=[CORRECTION], now=NOW, k=2)
    candidates = _pages()
    expected = compressor.compress_documents(candidates, "deploy steps")
    assert await compressor.acompress_documents(candidates, "deploy steps") == expected
    assert len(expected) == 3


TYPES = ["correction", "task", "note"]


@given(
    kinds=st.lists(st.tuples(st.sampled_from(TYPES), st.booleans(), st.integers(0, 9)),
                   max_size=12),
    split=st.integers(0, 12),
    k=st.none() | st.integers(0, 4),
)
def test_compressor_equals_retriever_over_pinned_plus_candidates(
    kinds: list[tuple[str, bool, int]], split: int, k: int | None
) -> None:
    docs = [Document(id=f"d{i}", page_content=f"deploy step {i}",
                     metadata={"type": kind, "base_priority": priority,
                               **({"scope": "always"} if always else {})})
            for i, (kind, always, priority) in enumerate(kinds)]
    pinned, candidates = docs[:split], docs[split:]
    compressor = PoolSplitCompressor(pools=POOLS, pinned=pinned, k=k, now=NOW)
    retriever = PoolSplitRetriever(documents=docs, pools=POOLS, k=k, now=NOW)
    got, want = compressor.compress_documents(candidates, "deploy"), retriever.invoke("deploy")

    def without_similarity(doc: Document) -> tuple[Any, ...]:
        kept = {k: v for k, v in doc.metadata.items() if k != "poolsplit_similarity"}
        return doc.id, doc.page_content, kept

    assert [without_similarity(d) for d in got] == [without_similarity(d) for d in want]
    # Candidates without a score carry their rank order as similarity (1 - i/n);
    # the stored documents carry none.
    rank = {d.id: 1 - i / len(candidates) for i, d in enumerate(candidates)}
    assert [d.metadata["poolsplit_similarity"] for d in got] == [rank.get(d.id) for d in got]
    assert all(d.metadata["poolsplit_similarity"] is None for d in want)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"pools": [Pool("always", 1, 1)]}, ValueError, "'always' is the pool under which"),
        ({"pools": [Pool("a", 1, 1), Pool("a", 1, 1)]}, ValueError, "'a' twice"),
        ({"k": -2}, ValueError, "k must be >= 0, got -2"),
        ({"pinned": ["Never deploy on Friday."]}, TypeError, r"pinned\[0\] must be a Document"),
        ({"pinned_docs": []}, TypeError,
         r"got unexpected keyword argument\(s\) \['pinned_docs'\]; it accepts .*pinned="),
    ],
)
def test_bad_arguments_fail_at_construction(kwargs: dict[str, Any], error: type,
                                            match: str) -> None:
    with pytest.raises(error, match=match):
        PoolSplitCompressor(**{"pools": POOLS, **kwargs})


def test_non_document_candidates_are_refused() -> None:
    compressor = PoolSplitCompressor(pools=POOLS)
    with pytest.raises(TypeError, match=r"documents\[1\] must be a Document, got dict"):
        compressor.compress_documents([CORRECTION, {"page_content": "x"}], "q")  # type: ignore[list-item]
