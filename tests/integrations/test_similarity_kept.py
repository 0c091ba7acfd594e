"""The candidates' own similarity is kept on both frameworks, and weighed by a hybrid scorer.

A retriever score reaches the scorer as the entry key ``similarity`` and comes
back in ``metadata["poolsplit_similarity"]``; a LangChain retriever that gives
no score (``vectorstore.as_retriever()``) contributes its rank order, never 0.0
for every candidate.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.retrievers import BaseRetriever
from langchain_core.vectorstores import InMemoryVectorStore

from poolsplit_core.poolsplit import Pool, make_scorer
from poolsplit_integrations.langchain import PoolSplitCompressor, PoolSplitRetriever

NOW = datetime(2026, 3, 1, tzinfo=timezone.utc)
SIMILAR = make_scorer(relevance="similarity")


def _vectors(texts: list[str]) -> InMemoryVectorStore:
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=16))
    store.add_documents([Document(id=f"d{i}", page_content=t) for i, t in enumerate(texts)])
    return store


def test_an_unscored_base_retriever_gives_its_rank_order_never_zero_for_all() -> None:
    vectors = _vectors([f"note number {i}" for i in range(6)])
    base = vectors.as_retriever(search_kwargs={"k": 4})
    order = [d.id for d in base.invoke("note number 3")]
    assert all("score" not in d.metadata for d in base.invoke("note number 3"))
    compressor = PoolSplitCompressor(pools=[Pool("all", 1000, 10)], scorer=SIMILAR, now=NOW)
    # what ContextualCompressionRetriever(base_compressor=..., base_retriever=base) does
    assert compressor.compress_documents(base.invoke("note number 3"), "note number 3") == (
        PoolSplitRetriever(pools=[Pool("all", 1000, 10)], scorer=SIMILAR, now=NOW,
                           base_retriever=base).invoke("note number 3"))
    docs = compressor.compress_documents(base.invoke("note number 3"), "note number 3")
    # Equal in every other factor, the similarity scorer keeps the search's order ...
    assert [d.id for d in docs] == order
    # ... because each carries 1 - i/n, not 0.0.
    assert [d.metadata["poolsplit_similarity"] for d in docs] == [1.0, 0.75, 0.5, 0.25]
    assert [d.metadata["poolsplit_score"] for d in docs] == [5 * (1 + 1.5 * s)
                                                             for s in (1.0, 0.75, 0.5, 0.25)]


def test_retriever_scores_are_kept_and_weighed_from_any_score_key() -> None:
    candidates = [Document(id="a", page_content="x", metadata={"relevance_score": 0.2}),
                  Document(id="b", page_content="y", metadata={"score": 0.9}),
                  Document(id="c", page_content="z")]
    compressor = PoolSplitCompressor(pools=[Pool("all", 1000, 10)], scorer=SIMILAR, now=NOW)
    docs = compressor.compress_documents(candidates, "q")
    assert [(d.id, d.metadata["poolsplit_similarity"]) for d in docs] == [
        ("b", 0.9), ("a", 0.2), ("c", None)]


def test_base_retriever_scores_reach_the_retriever_results() -> None:
    vectors = _vectors(["deploy the api", "rotate keys"])

    class Scored(BaseRetriever):
        """A retriever that puts the search score in metadata, as many do."""

        def _get_relevant_documents(self, query: str, *, run_manager: Any) -> list[Document]:
            return [Document(id=d.id, page_content=d.page_content,
                             metadata={**d.metadata, "score": s})
                    for d, s in vectors.similarity_search_with_score(query, k=2)]

    retriever = PoolSplitRetriever(
        documents=[Document(id="fix", page_content="Never deploy on Friday.",
                            metadata={"type": "correction", "scope": "always"})],
        pools=[Pool("all", 1000, 10)], base_retriever=Scored(), now=NOW,
        scorer=make_scorer(relevance="both"))
    docs = retriever.invoke("deploy the api")
    got: dict[str, Any] = {d.id: d.metadata["poolsplit_similarity"] for d in docs}
    want = {d.id: s for d, s in vectors.similarity_search_with_score("deploy the api", k=2)}
    assert got == {"fix": None, **want}
    assert docs[0].id == "fix" and docs[0].metadata["poolsplit_always"] is True
