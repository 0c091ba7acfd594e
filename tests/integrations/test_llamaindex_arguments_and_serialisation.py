"""LlamaIndex components: unknown arguments refused by name; to_dict/from_dict round trips.

Every way an argument reaches a component -- the constructor, the front doors
(``from_defaults``, ``from_documents``), ``from_dict``/``from_json`` and the
memory block's per-call keywords -- refuses a name it does not know, listing
the ones it takes. ``to_dict``/``to_json`` write plain data that
``from_dict``/``from_json`` read back into a component that answers the same;
code (a custom hook, a callable store) and a live base retriever are refused
by name.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, Callable

import pytest
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.memory import Memory
from llama_index.core.schema import Document, NodeWithScore, QueryBundle, TextNode

from poolsplit_core.prepared import PreparedStore
from poolsplit_integrations.llama_index import (
    PoolSplitMemoryBlock,
    PoolSplitPostprocessor,
    PoolSplitRetriever,
)

from ._hooks import HOOKS, custom_hook
from ._llamaindex_support import (
    NOW,
    POOLS,
    offline_llamaindex,  # noqa: F401 -- the fixture, used via pytestmark
    store_nodes,
    whitespace_tokenizer,
)

pytestmark = pytest.mark.usefixtures("offline_llamaindex")

QUERY = "how do I deploy the release?"


def nodes() -> list[Any]:
    """Text nodes and a Document, with user ids for the filter."""
    found: list[Any] = [n.model_copy(update={"metadata": {**n.metadata, "user": "a"}})
                        for n in store_nodes()]
    found.append(Document(id_="doc-1", text="NOTE: deploy from the release branch.",
                          metadata={"type": "note", "user": "a"}))
    found.append(TextNode(id_="other", text="TASK: deploy their app.",
                          metadata={"type": "task", "user": "b", "base_priority": 10}))
    return found


OPTIONS: dict[str, Any] = {"pools": POOLS, "now": NOW, "k": 3, "filter": {"user": "a"},
                           "require_filter_keys": ("user",), "max_always_tokens": 40,
                           "context": {"project": "atlas", "tags": ["deploy"]}}


def retriever(**kwargs: Any) -> PoolSplitRetriever:
    return PoolSplitRetriever(nodes=nodes(), **{**OPTIONS, **kwargs})


def postprocessor(**kwargs: Any) -> PoolSplitPostprocessor:
    return PoolSplitPostprocessor(pinned=nodes()[2:3], **{**OPTIONS, **kwargs})


def memory_block(**kwargs: Any) -> PoolSplitMemoryBlock:
    entries: list[Any] = [{"id": "e1", "type": "task", "user": "a", "base_priority": 9,
                           "content": "TASK: deploy with the checklist."}]
    return PoolSplitMemoryBlock(store=entries + nodes(), **{**OPTIONS, **kwargs})


def answer(component: Any) -> Any:
    if isinstance(component, PoolSplitRetriever):
        return [(n.node.node_id, n.score) for n in component.retrieve(QUERY)]
    if isinstance(component, PoolSplitPostprocessor):
        candidates = [NodeWithScore(node=n, score=0.5) for n in nodes()]
        return [(n.node.node_id, n.score)
                for n in component.postprocess_nodes(candidates, QueryBundle(QUERY))]
    return component.render(QUERY)


BUILDERS: dict[str, Callable[..., Any]] = {
    "retriever": retriever, "postprocessor": postprocessor, "memory block": memory_block}
ACCEPTED = r"it accepts .*pools=.*max_always_tokens="

# --------------------------------------------------------------------------
# Unknown arguments, wherever they come in
# --------------------------------------------------------------------------

ENTRY_POINTS: dict[str, Callable[[dict[str, Any]], Any]] = {
    "PoolSplitRetriever()": lambda kw: retriever(**kw),
    "PoolSplitRetriever.from_defaults()": lambda kw: PoolSplitRetriever.from_defaults(
        nodes=nodes(), **OPTIONS, **kw),
    "PoolSplitRetriever.from_documents()": lambda kw: PoolSplitRetriever.from_documents(
        nodes()[4:5], **OPTIONS, **kw),
    "PoolSplitPostprocessor()": lambda kw: postprocessor(**kw),
    "PoolSplitMemoryBlock()": lambda kw: memory_block(**kw),
}


@pytest.mark.parametrize("entry", list(ENTRY_POINTS))
@pytest.mark.parametrize("name", ["top_n", "top_k", "similarity_top_k"])
def test_an_unknown_argument_is_refused_naming_the_accepted_ones(entry, name):
    with pytest.raises(TypeError, match=rf"^{entry.replace('(', '[(]').replace(')', '[)]')}"
                                        rf" got unexpected keyword argument\(s\) \['{name}'\];"
                                        rf" {ACCEPTED}"):
        ENTRY_POINTS[entry]({name: 3})


@pytest.mark.parametrize("kind", list(BUILDERS))
@pytest.mark.parametrize("via", ["from_dict", "from_json"])
def test_from_dict_and_from_json_refuse_an_unknown_key(kind, via):
    component = BUILDERS[kind]()
    data = {**component.to_dict(), "top_n": 3}
    with pytest.raises(TypeError, match=rf"\['top_n'\]; {ACCEPTED}"):
        if via == "from_dict":
            type(component).from_dict(data)
        else:
            type(component).from_json(json.dumps(data))


def test_from_dict_refuses_the_data_of_another_component():
    with pytest.raises(ValueError, match=r"needs the data of a 'PoolSplitRetriever', got"
                                         r" class_name 'PoolSplitPostprocessor'"):
        PoolSplitRetriever.from_dict(postprocessor().to_dict())


BLOCK_CALLS: dict[str, Callable[[PoolSplitMemoryBlock, dict[str, Any]], Any]] = {
    "aget": lambda b, kw: asyncio.run(b.aget([ChatMessage(role="user", content=QUERY)], **kw)),
    "render": lambda b, kw: b.render(QUERY, **kw),
    "Memory.get": lambda b, kw: Memory.from_defaults(
        memory_blocks=[b], token_limit=4000, tokenizer_fn=whitespace_tokenizer,
        session_id="s").get(QUERY, **kw),
}


def test_the_memory_block_refuses_a_misspelt_keyword_in_a_direct_render():
    block = memory_block()
    with pytest.raises(TypeError, match=r"got unexpected keyword argument\(s\) \['tagz'\];"
                                        r" it accepts project=, tags="):
        BLOCK_CALLS["render"](block, {"tagz": ["x"]})
    BLOCK_CALLS["render"](block, {"tags": ["deploy"], "project": "atlas"})  # the real ones work


@pytest.mark.parametrize("call", ["aget", "Memory.get"])
def test_the_memory_block_leaves_another_block_s_keyword_to_that_block(call):
    # Memory passes every keyword to every block: one meant for another block is ignored.
    block = memory_block()
    plain = BLOCK_CALLS[call](block, {"tags": ["deploy"], "project": "atlas"})
    assert BLOCK_CALLS[call](block, {"tagz": ["x"], "tags": ["deploy"],
                                     "project": "atlas"}) == plain


# --------------------------------------------------------------------------
# Serialisation
# --------------------------------------------------------------------------


@pytest.mark.parametrize("kind", list(BUILDERS))
def test_to_dict_writes_pools_as_plain_data_and_json_ready_values(kind):
    data = BUILDERS[kind]().to_dict()
    assert data["pools"] == [
        {"name": "work", "max_tokens": 60, "max_entries": 3,
         "types": ["task", "note", "correction"]},
        {"name": "skills", "max_tokens": 30, "max_entries": 1, "types": ["skill"]},
    ]
    assert data["class_name"] == type(BUILDERS[kind]()).__name__
    assert json.loads(json.dumps(data)) == data  # plain data, nothing json cannot write


@pytest.mark.parametrize("kind", list(BUILDERS))
def test_to_dict_and_to_json_round_trip_to_a_component_that_answers_the_same(kind):
    original = BUILDERS[kind]()
    cls = type(original)
    for rebuilt in (cls.from_dict(original.to_dict()), cls.from_json(original.to_json())):
        assert type(rebuilt) is cls
        assert rebuilt.to_dict() == original.to_dict()
        assert answer(rebuilt) == answer(original)
        assert answer(original)  # the comparison is not between two empty answers


def test_nodes_keep_their_class_through_a_round_trip():
    rebuilt = PoolSplitRetriever.from_json(retriever().to_json())
    assert [type(n).__name__ for n in rebuilt.nodes] == [type(n).__name__ for n in nodes()]
    block = PoolSplitMemoryBlock.from_json(memory_block().to_json())
    assert isinstance(block.store, list)
    assert [type(item).__name__ for item in block.store] == ["dict", *(
        type(n).__name__ for n in nodes())]


def test_a_tenant_bound_retriever_serialises_its_filter():
    bound = retriever(filter=None).with_filter({"user": "a"})
    assert PoolSplitRetriever.from_dict(bound.to_dict()).filter == {"user": "a"}


@pytest.mark.parametrize("kind", list(BUILDERS))
@pytest.mark.parametrize("hook", HOOKS)
def test_a_custom_hook_is_refused_by_name_and_can_be_passed_again(kind, hook):
    custom = custom_hook(hook)
    component = BUILDERS[kind](**{hook: custom})
    for serialise in (component.to_dict, component.to_json):
        with pytest.raises(TypeError, match=rf"cannot be serialised: {hook} is a custom"
                                            rf" callable \(.*custom\).*from_dict\(data,"
                                            rf" {hook}=\.\.\.\)"):
            serialise()
    data = component.to_dict(exclude={hook})
    rebuilt = type(component).from_dict(data, **{hook: custom})
    assert answer(rebuilt) == answer(component)


def test_a_live_store_and_a_base_retriever_are_refused_by_name():
    with pytest.raises(TypeError, match=r"store cannot be a callable.*pass a PreparedStore"):
        PoolSplitMemoryBlock(store=lambda: [], pools=POOLS)
    with pytest.raises(TypeError, match=r"store holds a live object \(PreparedStore\)"):
        PoolSplitMemoryBlock(store=PreparedStore([]), pools=POOLS).to_dict()
    with pytest.raises(TypeError, match=r"base_retriever holds a live object"):
        retriever(base_retriever=retriever()).to_json()


@pytest.mark.parametrize(("pool", "match"), [
    ({"name": "a", "max_tokens": 1}, r"pools\[0\] lacks max_entries"),
    ({"name": "a", "max_tokens": 1, "max_entries": 1, "typs": ["x"]},
     r"pools\[0\] has unknown key\(s\) typs"),
    ({"name": "a", "max_tokens": 1, "max_entries": 1, "types": "x"},
     r"pools\[0\]: Pool 'a': types must be a tuple of str or None, got the str 'x'"),
])
@pytest.mark.parametrize("kind", list(BUILDERS))
def test_a_pool_given_as_data_is_checked_like_a_pool(kind, pool, match):
    with pytest.raises((TypeError, ValueError), match=match):
        BUILDERS[kind](pools=[pool])
