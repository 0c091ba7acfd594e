"""An entry's id is the framework's id: ``Document.id`` / ``ids=``, the node id.

A metadata ``id`` (a row number, a source key) is the application's data: it
stays in the metadata of the Documents and nodes returned, and it is never the
entry id -- so it never decides what a write replaces or a delete removes, and
two objects with different framework ids stay two entries whatever their
metadata says.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from llama_index.core.retrievers import BaseRetriever as LlamaBaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from poolsplit_core.poolsplit import Pool
from poolsplit_integrations import langchain as lc
from poolsplit_integrations import llama_index as li
from poolsplit_integrations._entries import to_entry

from ._llamaindex_support import NOW, offline_llamaindex  # noqa: F401 -- the fixture

pytestmark = pytest.mark.usefixtures("offline_llamaindex")

POOLS = [Pool("all", max_tokens=500, max_entries=30)]


def is_uuid4(value: Any) -> bool:
    try:
        return isinstance(value, str) and uuid.UUID(value).version == 4
    except ValueError:
        return False


# --------------------------------------------------------------------------
# The shared mapping
# --------------------------------------------------------------------------


def test_to_entry_takes_the_id_from_the_framework_and_drops_a_metadata_id():
    metadata = {"id": "row-7", "type": "task"}
    assert to_entry("text", metadata, "doc-1") == {"type": "task", "content": "text",
                                                    "id": "doc-1"}
    assert "id" not in to_entry("text", metadata)  # no framework id: none from metadata
    assert metadata == {"id": "row-7", "type": "task"}  # never changed


# --------------------------------------------------------------------------
# LangChain
# --------------------------------------------------------------------------


def lc_retriever(*docs: Document, **kwargs: Any) -> lc.PoolSplitRetriever:
    return lc.PoolSplitRetriever(documents=list(docs), pools=POOLS, now=NOW, **kwargs)


def test_add_documents_returns_ids_then_document_ids_then_new_uuids_never_metadata_ids():
    retriever = lc_retriever()
    assert retriever.add_documents(
        [Document(page_content="b", metadata={"id": "row-8"})], ids=["x-1"]) == ["x-1"]
    assert retriever.add_documents(
        [Document(id="d-2", page_content="c", metadata={"id": "row-9"})]) == ["d-2"]
    [generated] = retriever.add_documents([Document(page_content="d", metadata={"id": "row-10"})])
    assert is_uuid4(generated)
    assert [d.id for d in retriever.documents] == ["x-1", "d-2", generated]
    assert [d.metadata["id"] for d in retriever.documents] == ["row-8", "row-9", "row-10"]


def test_delete_takes_the_document_id_not_the_metadata_id():
    retriever = lc_retriever(Document(id="doc-1", page_content="a", metadata={"id": "row-7"}))
    with pytest.raises(KeyError, match="row-7"):
        retriever.delete(["row-7"])
    retriever.delete(["doc-1"])
    assert retriever.invoke("a") == [] and len(retriever.documents) == 0


def test_documents_sharing_a_metadata_id_are_two_entries_and_never_replace_each_other():
    first = Document(id="doc-1", page_content="alpha one", metadata={"id": "row"})
    second = Document(id="doc-2", page_content="alpha two", metadata={"id": "row"})
    built = lc_retriever(first, second)
    assert sorted(d.id for d in built.invoke("alpha")) == ["doc-1", "doc-2"]
    written = lc_retriever(first)
    assert written.add_documents([second]) == ["doc-2"]
    assert [d.id for d in written.documents] == ["doc-1", "doc-2"]
    written.delete(["doc-1"])
    assert [d.id for d in written.invoke("alpha")] == ["doc-2"]


def test_returned_documents_keep_their_id_and_their_metadata_id():
    retriever = lc_retriever(Document(id="doc-1", page_content="alpha", metadata={"id": "row-7"}))
    [doc] = retriever.invoke("alpha")
    assert doc.id == "doc-1" and doc.metadata["id"] == "row-7"
    why = retriever.explain("alpha")
    assert [d.entry["id"] for d in why.decisions] == ["doc-1"]


def test_a_document_stored_without_an_id_gets_one_that_invoke_returns_and_delete_takes():
    retriever = lc_retriever(Document(page_content="alpha one", metadata={"id": "row-1"}),
                             Document(page_content="alpha two"))
    ids = [d.id for d in retriever.documents]
    assert all(is_uuid4(i) for i in ids) and len(set(ids)) == 2
    assert [d.id for d in retriever.invoke("alpha")] == ids  # the same ids, every call
    assert [d.id for d in retriever.invoke("alpha")] == ids
    assert retriever.documents[0].metadata == {"id": "row-1"}
    retriever.delete([ids[0]])
    assert [d.id for d in retriever.invoke("alpha")] == ids[1:]
    rebuilt = lc.PoolSplitRetriever.model_validate_json(retriever.model_dump_json())
    assert [d.id for d in rebuilt.invoke("alpha")] == ids[1:]  # serialised with its id


def test_documents_stored_without_ids_still_break_ties_in_store_order():
    docs = [Document(page_content="same words", metadata={"n": i}) for i in range(25)]
    got = lc_retriever(*docs).invoke("same")
    assert [d.metadata["n"] for d in got] == list(range(25))


class _Found(BaseRetriever):
    """A candidate retriever returning fixed Documents."""

    found: list[Document]

    def _get_relevant_documents(self, query: str, *,
                                run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        return list(self.found)


def test_candidates_are_entries_by_document_id_and_kept_once_by_it():
    stored = Document(id="doc-1", page_content="alpha stored", metadata={"id": "row"})
    found = [Document(id="c-1", page_content="alpha found", metadata={"id": "doc-1"}),
             Document(id="c-2", page_content="alpha other", metadata={"id": "row"}),
             Document(id="doc-1", page_content="alpha stored", metadata={"id": "row"})]
    retriever = lc_retriever(stored, base_retriever=_Found(found=found))
    got = retriever.invoke("alpha")
    assert sorted(d.id for d in got) == ["c-1", "c-2", "doc-1"]  # doc-1 kept once
    assert {d.id: d.metadata["id"] for d in got} == {"c-1": "doc-1", "c-2": "row",
                                                     "doc-1": "row"}
    assert sorted(d.entry["id"] for d in retriever.explain("alpha").decisions) == [
        "c-1", "c-2", "doc-1"]


def test_a_candidate_without_an_id_equal_to_a_stored_one_without_an_id_is_kept_once():
    same = Document(page_content="alpha", metadata={"type": "note"})
    retriever = lc_retriever(same, base_retriever=_Found(found=[Document(**same.model_dump())]))
    [doc] = retriever.invoke("alpha")
    assert doc.id == retriever.documents[0].id


def test_the_compressor_maps_candidates_by_document_id():
    compressor = lc.PoolSplitCompressor(pools=POOLS, now=NOW)
    found = [Document(id="c-1", page_content="alpha one", metadata={"id": "row"}),
             Document(id="c-2", page_content="alpha two", metadata={"id": "row"})]
    got = compressor.compress_documents(found, "alpha")
    assert [(d.id, d.metadata["id"]) for d in got] == [("c-1", "row"), ("c-2", "row")]


# --------------------------------------------------------------------------
# LlamaIndex
# --------------------------------------------------------------------------


def li_retriever(*nodes: TextNode, **kwargs: Any) -> li.PoolSplitRetriever:
    return li.PoolSplitRetriever(nodes=list(nodes), pools=POOLS, now=NOW, **kwargs)


def test_insert_nodes_returns_node_ids_never_metadata_ids():
    retriever = li_retriever()
    assert retriever.insert_nodes(
        [TextNode(id_="x-1", text="b", metadata={"id": "row-8"})]) == ["x-1"]
    assert [n.node_id for n in retriever.nodes] == ["x-1"]


def test_delete_nodes_takes_the_node_id_not_the_metadata_id():
    retriever = li_retriever(TextNode(id_="doc-1", text="alpha", metadata={"id": "row-7"}))
    with pytest.raises(KeyError, match="row-7"):
        retriever.delete_nodes(["row-7"])
    retriever.delete_nodes(["doc-1"])
    assert retriever.retrieve("alpha") == []


def test_nodes_sharing_a_metadata_id_are_two_entries_and_never_replace_each_other():
    first = TextNode(id_="doc-1", text="alpha one", metadata={"id": "row"})
    second = TextNode(id_="doc-2", text="alpha two", metadata={"id": "row"})
    built = li_retriever(first, second)
    assert sorted(h.node.node_id for h in built.retrieve("alpha")) == ["doc-1", "doc-2"]
    written = li_retriever(first)
    assert written.insert_nodes([second]) == ["doc-2"]
    assert sorted(h.node.node_id for h in written.retrieve("alpha")) == ["doc-1", "doc-2"]
    written.delete_nodes(["doc-1"])
    assert [h.node.node_id for h in written.retrieve("alpha")] == ["doc-2"]


def test_returned_nodes_keep_their_node_id_and_their_metadata_id():
    retriever = li_retriever(TextNode(id_="doc-1", text="alpha", metadata={"id": "row-7"}))
    [hit] = retriever.retrieve("alpha")
    assert hit.node.node_id == "doc-1" and hit.node.metadata["id"] == "row-7"
    assert [d.entry["id"] for d in retriever.explain("alpha").decisions] == ["doc-1"]


class _FoundNodes(LlamaBaseRetriever):
    def __init__(self, found: list[NodeWithScore]) -> None:
        super().__init__()
        self.found = found

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return list(self.found)


def test_node_candidates_are_entries_by_node_id_and_kept_once_by_it():
    stored = TextNode(id_="doc-1", text="alpha stored", metadata={"id": "row"})
    found = [NodeWithScore(node=TextNode(id_="c-1", text="alpha found",
                                         metadata={"id": "doc-1"}), score=0.9),
             NodeWithScore(node=stored, score=0.5)]
    retriever = li_retriever(stored, base_retriever=_FoundNodes(found))
    got = retriever.retrieve("alpha")
    assert sorted(h.node.node_id for h in got) == ["c-1", "doc-1"]
    assert {h.node.node_id: h.node.metadata["id"] for h in got} == {"c-1": "doc-1",
                                                                    "doc-1": "row"}
    assert sorted(d.entry["id"] for d in retriever.explain("alpha").decisions) == [
        "c-1", "doc-1"]


def test_postprocessor_and_memory_block_map_nodes_by_node_id():
    nodes = [TextNode(id_="n-1", text="alpha one", metadata={"id": "row"}),
             TextNode(id_="n-2", text="alpha two", metadata={"id": "row"})]
    post = li.PoolSplitPostprocessor(pools=POOLS, now=NOW)
    got = post.postprocess_nodes([NodeWithScore(node=n, score=0.5) for n in nodes],
                                 query_str="alpha")
    assert [h.node.node_id for h in got] == ["n-1", "n-2"]
    block = li.PoolSplitMemoryBlock(store=nodes, pools=POOLS, now=NOW)
    assert [e["id"] for e in block.entries()] == ["n-1", "n-2"]


# --------------------------------------------------------------------------
# One id, one memory: a repeated framework id is refused, or (lenient) forgotten whole
# --------------------------------------------------------------------------


def twins() -> list[Document]:
    return [Document(id="a", page_content="alpha x", metadata={"type": "note"}),
            Document(id="b", page_content="alpha b"),
            Document(id="a", page_content="alpha y", metadata={"type": "note"})]


def test_a_document_id_given_twice_is_refused_at_construction_naming_both_positions():
    with pytest.raises(ValueError, match=r"PoolSplitRetriever: documents: documents\[0\] and"
                                         r" documents\[2\] both have id 'a': give each memory"
                                         r" its own id"):
        lc_retriever(*twins())
    with pytest.raises(ValueError, match=r"PoolSplitCompressor: pinned: pinned\[0\] and"
                                         r" pinned\[2\] both have id 'a'"):
        lc.PoolSplitCompressor(pools=POOLS, pinned=twins(), now=NOW)


def test_a_lenient_retriever_keeps_both_and_delete_forgets_both():
    retriever = lc_retriever(*twins(), strict=False)
    assert sorted(d.page_content for d in retriever.invoke("alpha")) == [
        "alpha b", "alpha x", "alpha y"]
    with pytest.raises(ValueError, match=r"cannot write id 'a': 2 stored entries hold it.*"
                                         r" delete it first"):
        retriever.add_documents([Document(id="a", page_content="alpha z")])
    assert len(retriever.documents) == 3  # nothing written
    retriever.delete(["a"])
    assert [d.id for d in retriever.invoke("alpha")] == ["b"]
    assert [d.id for d in retriever.documents] == ["b"]
    with pytest.raises(KeyError, match="no stored entry has id 'a'"):
        retriever.delete(["a"])
    assert retriever.add_documents([Document(id="a", page_content="alpha z")]) == ["a"]
    assert sorted(d.id for d in retriever.invoke("alpha")) == ["a", "b"]


def test_add_documents_refuses_one_id_twice_in_a_batch_and_replaces_a_stored_one():
    retriever = lc_retriever(Document(id="a", page_content="alpha old"))
    with pytest.raises(ValueError, match=r"add_documents: documents\[0\] and documents\[1\]"
                                         r" both have id 'n'"):
        retriever.add_documents([Document(id="n", page_content="alpha 1"),
                                 Document(id="n", page_content="alpha 2")])
    with pytest.raises(ValueError, match=r"documents\[0\] and documents\[1\] both have id 'x'"):
        retriever.add_documents([Document(page_content="alpha 1"),
                                 Document(page_content="alpha 2")], ids=["x", "x"])
    assert [d.id for d in retriever.documents] == ["a"]  # nothing written
    assert retriever.add_documents([Document(id="a", page_content="alpha new")]) == ["a"]
    assert [d.page_content for d in retriever.documents] == ["alpha new"]  # in place


def test_a_node_id_given_twice_is_refused_by_every_llamaindex_component():
    nodes = [TextNode(id_="n", text="alpha one"), TextNode(id_="m", text="alpha"),
             TextNode(id_="n", text="alpha two")]
    with pytest.raises(ValueError, match=r"nodes\[0\] and nodes\[2\] both have id 'n'"):
        li_retriever(*nodes)
    with pytest.raises(ValueError, match=r"pinned\[0\] and pinned\[2\] both have id 'n'"):
        li.PoolSplitPostprocessor(pools=POOLS, pinned=nodes, now=NOW)
    with pytest.raises(ValueError, match=r"store\[0\] and store\[2\] both have id 'n'"):
        li.PoolSplitMemoryBlock(store=nodes, pools=POOLS, now=NOW)
    with pytest.raises(ValueError, match=r"store\[0\] and store\[1\] both have id 'e'"):
        li.PoolSplitMemoryBlock(store=[{"id": "e"}, {"id": "e", "content": "x"}], pools=POOLS)
    retriever = li_retriever(nodes[1])
    with pytest.raises(ValueError, match=r"insert_nodes: nodes\[0\] and nodes\[1\] both have"
                                         r" id 'n'"):
        retriever.insert_nodes([nodes[0], nodes[2]])
    assert [n.node_id for n in retriever.nodes] == ["m"]  # nothing written
    lenient = li.PoolSplitMemoryBlock(store=[{"id": "e", "content": "alpha 1"},
                                             {"id": "e", "content": "alpha 2"}],
                                      pools=POOLS, now=NOW, strict=False)
    assert [e["content"] for e in lenient.entries()] == ["alpha 1", "alpha 2"]
