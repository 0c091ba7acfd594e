"""PoolSplitRetriever.from_vector_store: memory read from a vector store on every query.

On a VectorStoreIndex (LlamaIndex's in-memory defaults) and on PGVectorStore
over the test suite's real PostgreSQL with pgvector: the always tier comes
from the store by metadata filter, each pool from its own filtered search, and
the result equals the core over the same nodes and candidates.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timezone
from typing import Any

import pytest
from llama_index.core import StorageContext, VectorStoreIndex
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
from llama_index.core.vector_stores import SimpleVectorStore
from llama_index.core.vector_stores.types import FilterOperator, MetadataFilter, MetadataFilters

from poolsplit_core.poolsplit import Pool, make_scorer, retrieve_pools
from poolsplit_integrations.llama_index import (
    PoolSplitMemoryBlock,
    PoolSplitRetriever,
    VectorStoreSource,
)

from ._hashed_embedding import HashedEmbedding

NOW = datetime(2026, 3, 1, tzinfo=timezone.utc)
EMBED = HashedEmbedding(size=64)
POOLS = [Pool("work", 400, 3, types=("task", "correction")),
         Pool("skills", 200, 2, types=("skill",)),
         Pool("taste", 200, 2, types=("preference",))]
HYBRID = make_scorer(relevance="both", evergreen=["correction", "preference"])
QUERY = "deploy the api release to production"


def memory(tenants: tuple[str, ...] = ("ana",)) -> list[TextNode]:
    """A burst of deploy tasks that crowds similarity search, and quiet types beside it."""
    nodes = []
    for user in tenants:
        nodes += [
            TextNode(id_=f"{user}-fix", text="Never deploy on Friday afternoons.",
                     metadata={"type": "correction", "scope": "always", "user_id": user}),
            TextNode(id_=f"{user}-fix-old", text="Ask before rotating shared credentials.",
                     metadata={"type": "correction", "scope": "always", "user_id": user,
                               "created": "2025-01-01"}),
            TextNode(id_=f"{user}-bisect", text="Use git bisect run to find a regression.",
                     metadata={"type": "skill", "user_id": user}),
            TextNode(id_=f"{user}-lint", text="Run the linter before pushing.",
                     metadata={"type": "skill", "user_id": user}),
            TextNode(id_=f"{user}-terse", text="Prefers short answers in bullet points.",
                     metadata={"type": "preference", "user_id": user}),
        ]
        nodes += [TextNode(id_=f"{user}-task-{i}",
                           text=f"Deploy the api release {i} to production today",
                           metadata={"type": "task", "user_id": user,
                                     "created": f"2026-02-{i + 1:02d}"})
                  for i in range(20)]
    return nodes


def in_memory_index(nodes: list[TextNode]) -> VectorStoreIndex:
    return VectorStoreIndex([n.model_copy() for n in nodes], embed_model=EMBED)


def test_similarity_alone_misses_corrections_and_quiet_types() -> None:
    index = in_memory_index(memory())
    top = index.as_retriever(similarity_top_k=5).retrieve(QUERY)
    assert {n.node.metadata["type"] for n in top} == {"task"}


def test_corrections_first_and_every_type_with_no_pinned_list() -> None:
    retriever = PoolSplitRetriever.from_vector_store(
        in_memory_index(memory()), pools=POOLS, scorer=HYBRID, now=NOW, require_filter_keys=())
    got = retriever.retrieve(QUERY)
    ids = [n.node.node_id for n in got]
    assert ids[:2] == ["ana-fix", "ana-fix-old"]
    assert [n.node.metadata["poolsplit_always"] for n in got[:2]] == [True, True]
    assert {n.node.metadata["type"] for n in got} == {"correction", "task", "skill",
                                                      "preference"}
    # the searched ones keep their vector similarity
    for n in got[2:]:
        assert isinstance(n.node.metadata["poolsplit_similarity"], float)


def core_over(source: VectorStoreSource, tenant: dict[str, Any] | None) -> list[str]:
    """What the core loads over the source's nodes and candidates (dedupe first wins)."""
    found = source.candidates(QueryBundle(QUERY), POOLS, tenant)
    seen, entries = set(), []
    for hit in found:
        if hit.node.node_id not in seen:
            seen.add(hit.node.node_id)
            entry = {**hit.node.metadata, "content": hit.node.get_content(), "id": hit.node.node_id}
            if hit.score is not None:
                entry["similarity"] = hit.score
            entries.append(entry)
    picked = retrieve_pools(entries, POOLS, {"message": QUERY}, scorer=HYBRID, now=NOW)
    always = [e["id"] for p in picked.values() for e in p if e.get("scope") == "always"]
    rest = [e["id"] for p in picked.values() for e in p if e.get("scope") != "always"]
    return always + rest


def test_the_source_equals_the_core_over_the_same_nodes_and_candidates() -> None:
    retriever = PoolSplitRetriever.from_vector_store(
        in_memory_index(memory(("ana", "ben"))), pools=POOLS, scorer=HYBRID, now=NOW,
        require_filter_keys=("user_id",))
    for user in ("ana", "ben"):
        bound = retriever.with_filter({"user_id": user})
        got = [n.node.node_id for n in bound.retrieve(QUERY)]
        assert got == core_over(bound.source, {"user_id": user})
        assert all(node_id.startswith(user + "-") for node_id in got)
    with pytest.raises(ValueError, match="user_id"):
        retriever.retrieve(QUERY)  # unbound: fail closed, the store is not even read


def test_a_crowded_type_cannot_push_a_quiet_one_out_before_pool_split() -> None:
    source = VectorStoreSource(in_memory_index(memory()), similarity_top_k=2)
    found = source.candidates(QueryBundle(QUERY), POOLS, None)
    by_type: dict[str, int] = {}
    for hit in found:
        by_type[hit.node.metadata["type"]] = by_type.get(hit.node.metadata["type"], 0) + 1
    # two corrections from the always tier (plus search hits of the work pool), and
    # every pool's own top 2
    assert by_type["skill"] == 2 and by_type["preference"] == 1
    assert [hit.score for hit in found[:2]] == [None, None]


def test_the_memory_block_reads_the_same_source() -> None:
    retriever = PoolSplitRetriever.from_vector_store(
        in_memory_index(memory(("ana", "ben"))), pools=POOLS, scorer=HYBRID, now=NOW,
        require_filter_keys=("user_id",))
    block = PoolSplitMemoryBlock(store=retriever.with_filter({"user_id": "ben"}), pools=POOLS,
                                 scorer=HYBRID, now=NOW, require_filter_keys=())
    text = block.render(QUERY)
    assert text.startswith("## Corrections (always apply)\n- Never deploy on Friday")
    assert "## skills" in text and "## taste" in text
    assert "ana" not in text


def test_static_filters_apply_to_every_store_query() -> None:
    nodes = memory()
    nodes.append(TextNode(id_="archived-fix", text="Old rule.",
                          metadata={"type": "correction", "scope": "always",
                                    "user_id": "ana", "archived": "yes"}))
    for node in nodes:
        node.metadata.setdefault("archived", "no")
    retriever = PoolSplitRetriever.from_vector_store(
        in_memory_index(nodes), pools=POOLS, now=NOW,
        filters=MetadataFilters(filters=[MetadataFilter(key="archived", value="no")]),
        require_filter_keys=())
    ids = [n.node.node_id for n in retriever.retrieve(QUERY)]
    assert "archived-fix" not in ids and ids[0] == "ana-fix"


# Bad input: each a clear error naming it.

def test_a_vector_store_without_text_is_refused() -> None:
    with pytest.raises(ValueError, match="SimpleVectorStore keeps no text"):
        PoolSplitRetriever.from_vector_store(SimpleVectorStore(), pools=POOLS,
                                             embed_model=EMBED, require_filter_keys=())


def test_an_embedding_dimension_mismatch_is_named() -> None:
    retriever = PoolSplitRetriever.from_vector_store(
        in_memory_index(memory()), pools=POOLS, embed_model=HashedEmbedding(size=32),
        require_filter_keys=())
    with pytest.raises(ValueError, match=r"dimension mismatch.*32.*64"):
        retriever.retrieve(QUERY)


def test_a_filter_the_store_cannot_express_is_named() -> None:
    retriever = PoolSplitRetriever.from_vector_store(in_memory_index(memory()), pools=POOLS,
                                                     require_filter_keys=())
    with pytest.raises(ValueError, match=r"team=.*cannot be expressed"):
        retriever.with_filter({"team": ("ops", "web")}).retrieve(QUERY)
    with pytest.raises(ValueError, match=r"user_id must be a non-empty string"):
        retriever.with_filter({"user_id": ("ana", "ben")})


def test_missing_embed_model_and_wrong_arguments_are_refused() -> None:
    index = in_memory_index(memory())
    with pytest.raises(TypeError, match="embed_model"):
        PoolSplitRetriever.from_vector_store(index.vector_store, pools=POOLS,
                                             require_filter_keys=())
    with pytest.raises(TypeError, match="vector store"):
        PoolSplitRetriever.from_vector_store(["not", "a", "store"], pools=POOLS,
                                             require_filter_keys=())
    with pytest.raises(ValueError, match="similarity_top_k"):
        PoolSplitRetriever.from_vector_store(index, pools=POOLS, similarity_top_k=0,
                                             require_filter_keys=())
    with pytest.raises(TypeError, match="simlarity_top_k"):
        PoolSplitRetriever.from_vector_store(index, pools=POOLS, simlarity_top_k=3,
                                             require_filter_keys=())


# The same on a real PostgreSQL with pgvector.

@pytest.fixture()
def pg_index(postgres_uri: str) -> Iterator[Any]:
    from llama_index.vector_stores.postgres import PGVectorStore

    sync = postgres_uri.replace("postgresql://", "postgresql+psycopg://", 1)
    store = PGVectorStore(connection_string=sync,
                          async_connection_string=sync.replace("+psycopg", "+asyncpg"),
                          table_name="poolsplit_memory", embed_dim=64)
    store.clear()
    index = VectorStoreIndex([n.model_copy() for n in memory(("ana", "ben"))],
                             storage_context=StorageContext.from_defaults(vector_store=store),
                             embed_model=EMBED)
    yield store, index
    store.clear()


def test_pgvector_store_gives_what_the_in_memory_index_gives(pg_index: Any) -> None:
    store, _ = pg_index
    on_pg = PoolSplitRetriever.from_vector_store(
        store, pools=POOLS, embed_model=EMBED, scorer=HYBRID, now=NOW,
        require_filter_keys=("user_id",)).with_filter({"user_id": "ana"})
    in_memory = PoolSplitRetriever.from_vector_store(
        in_memory_index(memory(("ana", "ben"))), pools=POOLS, scorer=HYBRID, now=NOW,
        require_filter_keys=("user_id",)).with_filter({"user_id": "ana"})
    got = [n.node.node_id for n in on_pg.retrieve(QUERY)]
    assert got[:2] == ["ana-fix", "ana-fix-old"]
    assert got == core_over(on_pg.source, {"user_id": "ana"})
    # float4 vectors in PostgreSQL round the near-tied burst's similarities
    # differently: the same nodes outside the burst, the same count within it.
    memory_ids = [n.node.node_id for n in in_memory.retrieve(QUERY)]
    assert [i for i in memory_ids if "-task-" not in i] == [i for i in got if "-task-" not in i]
    assert len(memory_ids) == len(got)
    assert all(node_id.startswith("ana-") for node_id in got)


def test_pgvector_always_tier_is_read_on_every_query(pg_index: Any) -> None:
    store, _ = pg_index
    retriever = PoolSplitRetriever.from_vector_store(store, pools=POOLS, embed_model=EMBED,
                                                     now=NOW, filter={"user_id": "ana"},
                                                     require_filter_keys=())
    new_fix = TextNode(id_="ana-fix-new", text="Tag every release.",
                       metadata={"type": "correction", "scope": "always", "user_id": "ana"},
                       embedding=EMBED.get_text_embedding("Tag every release."))
    store.add([new_fix])
    got = [n.node.node_id for n in retriever.retrieve("something unrelated")]
    assert {"ana-fix", "ana-fix-old", "ana-fix-new"} <= set(got[:3])


def test_pgvector_dimension_mismatch_is_named(pg_index: Any) -> None:
    store, _ = pg_index
    retriever = PoolSplitRetriever.from_vector_store(store, pools=POOLS,
                                                     embed_model=HashedEmbedding(size=16),
                                                     require_filter_keys=())
    with pytest.raises(ValueError, match=r"dimension mismatch.*16.*PGVectorStore holds 64"):
        retriever.retrieve(QUERY)


def test_async_retrieve_equals_retrieve() -> None:
    import asyncio

    retriever = PoolSplitRetriever.from_vector_store(in_memory_index(memory()), pools=POOLS,
                                                     now=NOW, require_filter_keys=())
    got = asyncio.run(retriever.aretrieve(QUERY))
    assert [n.node.node_id for n in got] == [n.node.node_id for n in retriever.retrieve(QUERY)]
    assert all(isinstance(n, NodeWithScore) for n in got)


def test_a_vector_store_retriever_is_not_serialised_as_if_it_had_none() -> None:
    from poolsplit_integrations._serialise import NotSerializableError

    retriever = PoolSplitRetriever.from_vector_store(in_memory_index(memory()), pools=POOLS,
                                                     require_filter_keys=())
    with pytest.raises(NotSerializableError, match="vector_store"):
        retriever.to_dict()
    assert retriever.with_filter({"user_id": "ana"}).source is retriever.source


# -- a node without ``type`` is a note, on every path ---------------------------

NOTE_POOLS = [*POOLS, Pool("notes", 200, 3, types=("note",))]


def with_untyped_notes(tenants: tuple[str, ...] = ("ana",)) -> list[TextNode]:
    """The memory plus notes with no ``type`` (the core reads them as "note") and a typed one."""
    nodes = memory(tenants)
    for user in tenants:
        nodes += [TextNode(id_=f"{user}-untyped-{i}", text=f"Release {i} api note",
                           metadata={"user_id": user}) for i in range(2)]
        nodes.append(TextNode(id_=f"{user}-typed-note", text="Release api note, typed",
                              metadata={"type": "note", "user_id": user}))
    return nodes


def loaded_ids(retriever: PoolSplitRetriever) -> list[str]:
    return [n.node.node_id for n in retriever.retrieve(QUERY)]


def test_a_node_without_type_loads_into_a_note_pool_on_both_paths() -> None:
    nodes = with_untyped_notes()
    fields: dict[str, Any] = {"pools": NOTE_POOLS, "now": NOW, "require_filter_keys": ()}
    listed = loaded_ids(PoolSplitRetriever(nodes=nodes, **fields))
    searched = loaded_ids(PoolSplitRetriever.from_vector_store(in_memory_index(nodes),
                                                               **fields))
    assert {"ana-untyped-0", "ana-untyped-1", "ana-typed-note"} <= set(listed)
    # the search's similarities order the near-tied tasks; every other node agrees
    assert [i for i in searched if "-task-" not in i] == [i for i in listed if "-task-" not in i]
    assert len(searched) == len(listed)


def test_a_store_without_is_empty_is_searched_type_free_for_untyped_nodes(
        monkeypatch: Any) -> None:
    nodes = with_untyped_notes()
    fields: dict[str, Any] = {"pools": NOTE_POOLS, "now": NOW, "require_filter_keys": ()}
    listed = loaded_ids(PoolSplitRetriever(nodes=nodes, **fields))
    index = in_memory_index(nodes)
    query = type(index.vector_store).query

    def no_is_empty(self: Any, q: Any, **kwargs: Any) -> Any:
        if q.filters is not None and any(
                getattr(f, "operator", None) == FilterOperator.IS_EMPTY for f in q.filters.filters):
            raise NotImplementedError("is_empty")
        return query(self, q, **kwargs)

    monkeypatch.setattr(type(index.vector_store), "query", no_is_empty)
    # the type-free search sees the untyped nodes among its similarity_top_k best only
    assert not {"ana-untyped-0", "ana-untyped-1"} & set(loaded_ids(
        PoolSplitRetriever.from_vector_store(index, **fields)))
    searched = loaded_ids(PoolSplitRetriever.from_vector_store(index, similarity_top_k=30,
                                                               **fields))
    assert [i for i in searched if "-task-" not in i] == [i for i in listed if "-task-" not in i]


def test_pgvector_finds_nodes_without_type_for_a_note_pool(pg_index: Any) -> None:
    store, _ = pg_index
    extra = [n for n in with_untyped_notes(("ana", "ben"))
             if n.metadata.get("type", "note") == "note"]
    VectorStoreIndex([n.model_copy() for n in extra],
                     storage_context=StorageContext.from_defaults(vector_store=store),
                     embed_model=EMBED)
    fields: dict[str, Any] = {"pools": NOTE_POOLS, "now": NOW, "filter": {"user_id": "ana"},
                              "require_filter_keys": ()}
    got = loaded_ids(PoolSplitRetriever.from_vector_store(store, embed_model=EMBED, **fields))
    listed = loaded_ids(PoolSplitRetriever(nodes=with_untyped_notes(("ana",)), **fields))
    assert {"ana-untyped-0", "ana-untyped-1", "ana-typed-note"} <= set(got)
    # float4 vectors round the near-tied tasks' similarities their own way; the rest agree
    assert [i for i in got if "-task-" not in i] == [i for i in listed if "-task-" not in i]
