"""PoolSplitRetriever.from_vector_store over LangChain VectorStores.

InMemoryVectorStore and PGVector (langchain-postgres) on the test suite's real
PostgreSQL with pgvector: corrections read by metadata filter on every query,
every pool fed by its own filtered search, the same answer as the core over
the same documents and candidates.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timezone
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding, Embeddings
from langchain_core.vectorstores import InMemoryVectorStore, VectorStore

from poolsplit_core.poolsplit import Pool, make_scorer, retrieve_pools
from poolsplit_integrations.langchain import PoolSplitRetriever, VectorStoreSource

from ._hashed_embedding import hashed_vector

NOW = datetime(2026, 3, 1, tzinfo=timezone.utc)
POOLS = [Pool("work", 400, 3, types=("task", "correction")),
         Pool("skills", 200, 2, types=("skill",)),
         Pool("taste", 200, 2, types=("preference",))]
HYBRID = make_scorer(relevance="both", evergreen=["correction", "preference"])
QUERY = "deploy the api release to production"


class Hashed(Embeddings):
    """Offline embeddings in which shared words mean nearby vectors."""

    def __init__(self, size: int = 64) -> None:
        self.size = size

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [hashed_vector(t, self.size) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return hashed_vector(text, self.size)


def memory(tenants: tuple[str, ...] = ("ana",)) -> list[Document]:
    docs = []
    for user in tenants:
        docs += [
            Document(id=f"{user}-fix", page_content="Never deploy on Friday afternoons.",
                     metadata={"type": "correction", "scope": "always", "user_id": user}),
            Document(id=f"{user}-bisect", page_content="Use git bisect run for regressions.",
                     metadata={"type": "skill", "user_id": user}),
            Document(id=f"{user}-terse", page_content="Prefers short answers.",
                     metadata={"type": "preference", "user_id": user}),
        ]
        docs += [Document(id=f"{user}-task-{i}",
                          page_content=f"Deploy the api release {i} to production today",
                          metadata={"type": "task", "user_id": user,
                                    "created": f"2026-02-{i + 1:02d}"})
                 for i in range(20)]
    return docs


def in_memory(docs: list[Document], size: int = 64) -> InMemoryVectorStore:
    store = InMemoryVectorStore(Hashed(size))
    store.add_documents(docs)
    return store


def core_over(source: VectorStoreSource, tenant: dict[str, Any] | None) -> list[str]:
    seen, entries = set(), []
    for doc in source.candidates(QUERY, POOLS, tenant):
        if doc.id not in seen:
            seen.add(doc.id)
            entry = {k: v for k, v in doc.metadata.items() if k != "score"}
            entry.update(content=doc.page_content, id=doc.id)
            if "score" in doc.metadata:
                entry["similarity"] = doc.metadata["score"]
            entries.append(entry)
    picked = retrieve_pools(entries, POOLS, {"message": QUERY}, scorer=HYBRID, now=NOW)
    always = [e["id"] for p in picked.values() for e in p if e.get("scope") == "always"]
    return always + [e["id"] for p in picked.values() for e in p if e.get("scope") != "always"]


def test_similarity_top_k_alone_sees_only_the_burst() -> None:
    hits = in_memory(memory()).similarity_search(QUERY, k=5)
    assert {d.metadata["type"] for d in hits} == {"task"}


def test_corrections_first_every_type_and_equal_to_the_core() -> None:
    retriever = PoolSplitRetriever.from_vector_store(
        in_memory(memory(("ana", "ben"))), pools=POOLS, scorer=HYBRID, now=NOW,
        require_filter_keys=("user_id",))
    for user in ("ana", "ben"):
        docs = retriever.invoke(QUERY, config={"configurable": {"user_id": user}})
        assert docs[0].id == f"{user}-fix" and docs[0].metadata["poolsplit_always"] is True
        assert {d.metadata["type"] for d in docs} == {"correction", "task", "skill",
                                                      "preference"}
        assert all(d.id.startswith(user + "-") for d in docs)
        assert [d.id for d in docs] == core_over(retriever.source, {"user_id": user})
        assert all(isinstance(d.metadata["poolsplit_similarity"], float) for d in docs[1:])
    with pytest.raises(ValueError, match="user_id"):
        retriever.invoke(QUERY)  # fail closed: no tenant, no read


def test_with_filter_and_explain_read_the_same_source() -> None:
    retriever = PoolSplitRetriever.from_vector_store(
        in_memory(memory(("ana", "ben"))), pools=POOLS, now=NOW,
        require_filter_keys=("user_id",))
    ben = retriever.with_filter({"user_id": "ben"})
    loaded = ben.explain(QUERY).loaded()
    assert [d.entry["id"] for picked in loaded.values() for d in picked if d.outcome == "always"
            ] == ["ben-fix"]
    assert ben.invoke(QUERY)[0].id == "ben-fix"


def test_bad_input_is_named() -> None:
    with pytest.raises(TypeError, match="LangChain VectorStore"):
        PoolSplitRetriever.from_vector_store([], pools=POOLS, require_filter_keys=())
    with pytest.raises(ValueError, match="search_k"):
        PoolSplitRetriever.from_vector_store(in_memory(memory()), pools=POOLS, search_k=0,
                                             require_filter_keys=())
    mismatch = PoolSplitRetriever.from_vector_store(in_memory(memory()), pools=POOLS,
                                                    require_filter_keys=())
    mismatch.source.vector_store.embedding = Hashed(16)  # type: ignore[union-attr]
    with pytest.raises(ValueError, match=r"dimension mismatch.*16.*64"):
        mismatch.invoke(QUERY)
    empty = in_memory([Document(id="blank", page_content="",
                                metadata={"type": "correction", "scope": "always"})])
    with pytest.raises(ValueError, match="'blank' without text"):
        PoolSplitRetriever.from_vector_store(empty, pools=POOLS,
                                             require_filter_keys=()).invoke(QUERY)
    with pytest.raises(ValueError, match=r"team=.*cannot be expressed"):
        PoolSplitRetriever.from_vector_store(in_memory(memory()), pools=POOLS,
                                             filter={"team": ["ops"]},
                                             require_filter_keys=()).invoke(QUERY)
    with pytest.raises(ValueError, match=r"user_id must be a non-empty string"):
        PoolSplitRetriever.from_vector_store(in_memory(memory()), pools=POOLS,
                                             filter={"user_id": ["ana"]}).invoke(QUERY)


@pytest.fixture()
def pgvector(postgres_uri: str) -> Iterator[Any]:
    from langchain_postgres import PGVector

    url = postgres_uri.replace("postgresql://", "postgresql+psycopg://", 1)
    store = PGVector(Hashed(64), connection=url, collection_name="poolsplit_memory",
                     pre_delete_collection=True, use_jsonb=True)
    store.add_documents(memory(("ana", "ben")))
    yield store
    store.delete_collection()


def test_pgvector_gives_corrections_first_and_every_type(pgvector: Any) -> None:
    retriever = PoolSplitRetriever.from_vector_store(
        pgvector, pools=POOLS, scorer=HYBRID, now=NOW, require_filter_keys=("user_id",))
    docs = retriever.with_filter({"user_id": "ana"}).invoke(QUERY)
    assert docs[0].id == "ana-fix"
    assert {d.metadata["type"] for d in docs} == {"correction", "task", "skill", "preference"}
    assert all(d.id.startswith("ana-") for d in docs)
    assert [d.id for d in docs] == core_over(retriever.source, {"user_id": "ana"})
    memory_ids = [d.id for d in PoolSplitRetriever.from_vector_store(
        in_memory(memory(("ana", "ben"))), pools=POOLS, scorer=HYBRID, now=NOW,
        filter={"user_id": "ana"}, require_filter_keys=()).invoke(QUERY)]
    assert [i for i in memory_ids if "-task-" not in i] == [d.id for d in docs
                                                           if "-task-" not in d.id]


def test_pgvector_reads_a_new_correction_on_the_next_query(pgvector: Any) -> None:
    retriever = PoolSplitRetriever.from_vector_store(pgvector, pools=POOLS, now=NOW,
                                                     filter={"user_id": "ana"},
                                                     require_filter_keys=())
    pgvector.add_documents([Document(id="ana-fix-2", page_content="Tag every release.",
                                     metadata={"type": "correction", "scope": "always",
                                               "user_id": "ana"})])
    ids = [d.id for d in retriever.invoke("something unrelated")]
    assert set(ids[:2]) == {"ana-fix", "ana-fix-2"}


def test_pgvector_always_limit_refuses_rather_than_drops(pgvector: Any) -> None:
    retriever = PoolSplitRetriever.from_vector_store(pgvector, pools=POOLS, always_limit=1,
                                                     require_filter_keys=())
    with pytest.raises(ValueError, match="more than always_limit=1"):
        retriever.invoke(QUERY)  # two tenants' corrections, no tenant filter


def test_fake_embedding_of_langchain_works_too() -> None:
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=32))
    store.add_documents(memory())
    docs = PoolSplitRetriever.from_vector_store(store, pools=POOLS, now=NOW,
                                                require_filter_keys=()).invoke(QUERY)
    assert docs[0].id == "ana-fix"
    assert {d.metadata["type"] for d in docs} == {"correction", "task", "skill", "preference"}


def test_a_vector_store_retriever_is_not_serialised_as_if_it_had_none() -> None:
    from poolsplit_integrations._serialise import NotSerializableError

    retriever = PoolSplitRetriever.from_vector_store(in_memory(memory()), pools=POOLS,
                                                     require_filter_keys=())
    with pytest.raises(NotSerializableError, match="vector_store"):
        retriever.model_dump_json()
    with pytest.raises(NotSerializableError, match="vector_store"):
        retriever.model_dump(mode="json")
    # a copy (with_filter) keeps reading the store
    assert retriever.with_filter({"user_id": "ana"}).source is retriever.source


def test_async_invoke_and_explain_read_the_same_source() -> None:
    import asyncio

    retriever = PoolSplitRetriever.from_vector_store(in_memory(memory()), pools=POOLS, now=NOW,
                                                     require_filter_keys=())
    want = [d.id for d in retriever.invoke(QUERY)]
    assert [d.id for d in asyncio.run(retriever.ainvoke(QUERY))] == want
    loaded = asyncio.run(retriever.aexplain(QUERY)).loaded()
    assert sorted(d.entry["id"] for picked in loaded.values() for d in picked) == sorted(want)


# -- a document without ``type`` is a note, on every path ---------------------

NOTE_POOLS = [*POOLS, Pool("notes", 200, 3, types=("note",))]


def with_untyped_notes(tenants: tuple[str, ...] = ("ana",)) -> list[Document]:
    """The memory plus notes with no ``type`` (the core reads them as "note") and a typed one."""
    docs = memory(tenants)
    for user in tenants:
        docs += [Document(id=f"{user}-untyped-{i}", page_content=f"Release {i} api note",
                          metadata={"user_id": user}) for i in range(2)]
        docs.append(Document(id=f"{user}-typed-note", page_content="Release api note, typed",
                             metadata={"type": "note", "user_id": user}))
    return docs


def loaded_ids(retriever: PoolSplitRetriever) -> list[str]:
    return [d.id for d in retriever.invoke(QUERY) if d.id is not None]


def test_a_document_without_type_loads_into_a_note_pool_on_both_paths() -> None:
    docs = with_untyped_notes()
    fields: dict[str, Any] = {"pools": NOTE_POOLS, "now": NOW, "require_filter_keys": ()}
    listed = loaded_ids(PoolSplitRetriever(documents=docs, **fields))
    searched = loaded_ids(PoolSplitRetriever.from_vector_store(in_memory(docs), **fields))
    assert {"ana-untyped-0", "ana-untyped-1", "ana-typed-note"} <= set(listed)
    assert searched == listed


class DictFilterStore(VectorStore):
    """A store read through the common dict filter (``$in``, ``$exists``), as most others are."""

    def __init__(self, docs: list[Document], *, refuse_exists: bool = False) -> None:
        self.inner = in_memory(docs)
        self.refuse_exists = refuse_exists

    @property
    def embeddings(self) -> Embeddings:
        return self.inner.embedding

    @classmethod
    def from_texts(cls, texts: Any, embedding: Any, metadatas: Any = None,
                   **kwargs: Any) -> DictFilterStore:
        raise NotImplementedError

    def similarity_search_with_relevance_scores(self, query: str, k: int = 4,
                                                **kwargs: Any) -> list[tuple[Document, float]]:
        where = kwargs.get("filter") or {}
        if self.refuse_exists and any(isinstance(want, dict) and "$exists" in want
                                      for want in where.values()):
            raise NotImplementedError("$exists")

        def keep(doc: Document) -> bool:
            for key, want in where.items():
                if isinstance(want, dict) and "$exists" in want:
                    ok = (key in doc.metadata) == want["$exists"]
                elif isinstance(want, dict):
                    ok = key in doc.metadata and doc.metadata[key] in want["$in"]
                else:
                    ok = key in doc.metadata and doc.metadata[key] == want
                if not ok:
                    return False
            return True

        return self.inner.similarity_search_with_score(query or "memory", k=k, filter=keep)

    def similarity_search(self, query: str, k: int = 4, **kwargs: Any) -> list[Document]:
        return [doc for doc, _ in self.similarity_search_with_relevance_scores(query, k, **kwargs)]


def test_a_dict_filter_store_finds_documents_without_type_by_exists() -> None:
    docs = with_untyped_notes(("ana", "ben"))
    fields: dict[str, Any] = {"pools": NOTE_POOLS, "now": NOW, "filter": {"user_id": "ana"},
                              "require_filter_keys": ()}
    listed = loaded_ids(PoolSplitRetriever(
        documents=[d for d in docs if d.metadata["user_id"] == "ana"], **fields))
    searched = loaded_ids(PoolSplitRetriever.from_vector_store(DictFilterStore(docs), **fields))
    assert {"ana-untyped-0", "ana-untyped-1"} <= set(searched)
    assert searched == listed


def test_a_store_without_exists_is_searched_type_free_for_untyped_documents() -> None:
    # The fallback sees the untyped documents among a type-free search's search_k best only:
    # here the twenty tasks outrank them in the 10 hits of the default size, not in 30.
    docs = with_untyped_notes(("ana", "ben"))
    fields: dict[str, Any] = {"pools": NOTE_POOLS, "now": NOW, "filter": {"user_id": "ana"},
                              "require_filter_keys": ()}
    listed = loaded_ids(PoolSplitRetriever(
        documents=[d for d in docs if d.metadata["user_id"] == "ana"], **fields))
    store = DictFilterStore(docs, refuse_exists=True)
    crowded = loaded_ids(PoolSplitRetriever.from_vector_store(store, **fields))
    assert not {"ana-untyped-0", "ana-untyped-1"} & set(crowded)
    searched = loaded_ids(PoolSplitRetriever.from_vector_store(store, search_k=30, **fields))
    assert {"ana-untyped-0", "ana-untyped-1"} <= set(searched)
    assert searched == listed


def test_pgvector_finds_documents_without_type_for_a_note_pool(postgres_uri: str) -> None:
    from langchain_postgres import PGVector

    url = postgres_uri.replace("postgresql://", "postgresql+psycopg://", 1)
    store = PGVector(Hashed(64), connection=url, collection_name="poolsplit_untyped",
                     pre_delete_collection=True, use_jsonb=True)
    try:
        docs = with_untyped_notes(("ana", "ben"))
        store.add_documents(docs)
        fields: dict[str, Any] = {"pools": NOTE_POOLS, "now": NOW,
                                  "filter": {"user_id": "ana"}, "require_filter_keys": ()}
        searched = loaded_ids(PoolSplitRetriever.from_vector_store(store, **fields))
        listed = loaded_ids(PoolSplitRetriever(
            documents=[d for d in docs if d.metadata["user_id"] == "ana"], **fields))
        assert {"ana-untyped-0", "ana-untyped-1", "ana-typed-note"} <= set(searched)
        # the store's relevance scores order the near-tied tasks its own way; the rest agree
        assert [i for i in searched if "-task-" not in i] == [
            i for i in listed if "-task-" not in i]
    finally:
        store.delete_collection()
