"""PoolSplitMemoryBlock inside llama_index.core.memory.Memory."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.memory import BaseMemoryBlock, Memory

from poolsplit_core.poolsplit import Pool
from poolsplit_core.prepared import PreparedStore
from poolsplit_integrations.llama_index import CORRECTIONS_HEADING, PoolSplitMemoryBlock

from ._llamaindex_support import (
    NOW,
    offline_llamaindex,  # noqa: F401 -- the fixture, used via pytestmark
    store_nodes,
    whitespace_tokenizer,
)

pytestmark = pytest.mark.usefixtures("offline_llamaindex")

FIX = "Never force-push to the main branch."
SKILL = "Bisect a regression with git bisect run."


def agent_store() -> list[dict]:
    """One correction, twelve high-priority tasks, one low-priority skill."""
    return [
        {"id": "fix-1", "type": "correction", "scope": "always", "base_priority": 1,
         "content": FIX, "created": "2025-01-01"},
        *({"id": f"task-{i}", "type": "task", "base_priority": 9, "created": "2026-03-31",
           "content": f"Deploy task {i}: update the release checklist."} for i in range(12)),
        {"id": "skill-1", "type": "skill", "base_priority": 2, "created": "2026-01-01",
         "content": SKILL},
    ]


SPLIT = [Pool("work", max_tokens=40, max_entries=3, types=("task", "correction")),
         Pool("skills", max_tokens=20, max_entries=1, types=("skill",))]
SINGLE = [Pool("all", max_tokens=60, max_entries=4)]  # a comparable shared budget


def memory_text(block: PoolSplitMemoryBlock, token_limit: int = 2000) -> str:
    memory = Memory.from_defaults(memory_blocks=[block], token_limit=token_limit,
                                  tokenizer_fn=whitespace_tokenizer, session_id="test")
    memory.put(ChatMessage(role="user", content="How do I deploy the release?"))
    messages = memory.get()
    system = [m for m in messages if m.role == "system"]
    assert len(system) == 1
    return system[0].content or ""


def test_memory_gets_corrections_first_and_the_skill_pool():
    text = memory_text(PoolSplitMemoryBlock(store=agent_store(), pools=SPLIT, now=NOW))
    body = text.split("<poolsplit>", 1)[1]
    assert body.lstrip().startswith(f"## {CORRECTIONS_HEADING}\n- {FIX}")
    assert "## work" in body and "Deploy task" in body
    assert SKILL in body
    assert body.index(FIX) < body.index("Deploy task") < body.index(SKILL)


def test_a_single_shared_budget_starves_the_skill():
    text = memory_text(PoolSplitMemoryBlock(store=agent_store(), pools=SINGLE, now=NOW))
    assert FIX in text  # always-scope still loads
    assert "Deploy task" in text
    assert SKILL not in text  # the contrast: one budget, the low-priority type never shows


def test_default_priority_zero_keeps_memory_from_truncating_the_block():
    block = PoolSplitMemoryBlock(store=agent_store(), pools=SPLIT, now=NOW)
    assert block.priority == 0
    text = memory_text(block, token_limit=20)  # far below the block's size
    assert FIX in text and SKILL in text
    # the contrast: a truncatable priority loses the whole block, corrections included
    truncatable = PoolSplitMemoryBlock(store=agent_store(), pools=SPLIT, now=NOW, priority=1)
    memory = Memory.from_defaults(memory_blocks=[truncatable], token_limit=20,
                                  tokenizer_fn=whitespace_tokenizer, session_id="test")
    memory.put(ChatMessage(role="user", content="How do I deploy the release?"))
    assert FIX not in str(memory.get())


@pytest.mark.asyncio
async def test_latest_user_message_is_the_context_message():
    seen = []

    def scorer(entry, context):
        seen.append(context["message"])
        return 1.0

    block = PoolSplitMemoryBlock(store=agent_store(), pools=SPLIT, scorer=scorer)
    await block.aget([ChatMessage(role="user", content="first question"),
                      ChatMessage(role="assistant", content="an answer"),
                      ChatMessage(role="user", content="latest question"),
                      ChatMessage(role="assistant", content="another answer")])
    assert seen and set(seen) == {"latest question"}
    seen.clear()
    await block.aget(None)
    assert set(seen) == {""}


def test_memory_get_input_and_block_kwargs_reach_the_context():
    seen = []

    def scorer(entry, context):
        seen.append(dict(context))
        return 1.0

    block = PoolSplitMemoryBlock(store=agent_store(), pools=SPLIT, scorer=scorer,
                                 context={"project": "atlas", "tags": ["db"]})
    memory = Memory.from_defaults(memory_blocks=[block], token_limit=2000,
                                  tokenizer_fn=whitespace_tokenizer, session_id="test")
    memory.get(input="what about the cache?", tags=["ops"])
    assert seen and all(c == {"project": "atlas", "tags": ["ops"],
                              "message": "what about the cache?"} for c in seen)


@pytest.mark.asyncio
async def test_reading_never_writes_to_the_store_and_aput_stores_nothing():
    store = agent_store()
    before = copy.deepcopy(store)
    block = PoolSplitMemoryBlock(store=store, pools=SPLIT, now=NOW)
    first = await block.aget([ChatMessage(role="user", content="deploy")])
    await block.aput([ChatMessage(role="user", content="remember: deploy on Fridays")])
    await block.aput([ChatMessage(role="user", content="x")], from_short_term_memory=True)
    assert store == before
    assert await block.aget([ChatMessage(role="user", content="deploy")]) == first
    assert block.accept_short_term_memory is False


@pytest.mark.asyncio
async def test_a_prepared_store_written_between_gets_is_seen_on_the_next_get():
    store = PreparedStore(agent_store()[:1])
    block = PoolSplitMemoryBlock(store=store, pools=SPLIT, now=NOW)
    assert SKILL not in await block.aget([])
    store.add(agent_store()[-1])
    assert SKILL in await block.aget([])
    store.delete(agent_store()[-1]["id"])
    assert SKILL not in await block.aget([])


@pytest.mark.asyncio
async def test_nodes_in_the_store_go_through_the_shared_mapping():
    block = PoolSplitMemoryBlock(store=store_nodes(), pools=SPLIT, now=NOW)
    text = await block.aget([ChatMessage(role="user", content="deploy")])
    assert text.startswith(f"## {CORRECTIONS_HEADING}\n- CORRECTION:")
    assert "SKILL: bisect" in text


@pytest.mark.asyncio
async def test_an_empty_result_renders_nothing():
    block = PoolSplitMemoryBlock(store=[], pools=SPLIT)
    assert await block.aget([]) == ""


def test_bad_store_and_pools_are_refused():
    with pytest.raises(TypeError, match="store must be a list"):
        PoolSplitMemoryBlock(store="not a store", pools=SPLIT)
    with pytest.raises(ValueError, match="'always' is the pool under which"):
        PoolSplitMemoryBlock(store=[], pools=[Pool("always", 10, 1)])
    with pytest.raises(TypeError, match="store item at index 0 must be an entry dict or a node"):
        PoolSplitMemoryBlock(store=[42], pools=SPLIT)


# --------------------------------------------------------------------------
# Memory passes every keyword to every block
# --------------------------------------------------------------------------


class MoodBlock(BaseMemoryBlock[str]):
    """Another block with a keyword of its own, as an application would write one."""

    name: str = "mood"

    async def _aget(self, messages: list[ChatMessage] | None = None, *, mood: str = "calm",
                    **block_kwargs: Any) -> str:
        return f"The user feels {mood}."

    async def _aput(self, messages: list[ChatMessage]) -> None:
        pass


def memory_with_mood(block: PoolSplitMemoryBlock) -> Memory:
    memory = Memory.from_defaults(memory_blocks=[block, MoodBlock()], token_limit=4000,
                                  tokenizer_fn=whitespace_tokenizer, session_id="test")
    memory.put(ChatMessage(role="user", content="How do I deploy the release?"))
    return memory


def test_the_block_sits_beside_a_block_with_a_keyword_of_its_own():
    block = PoolSplitMemoryBlock(store=agent_store(), pools=SPLIT, now=NOW)
    own = block.render("How do I deploy the release?", tags=["ops"])
    text = str(memory_with_mood(block).get(mood="tired", tags=["ops"])[0].content)
    assert "The user feels tired." in text
    assert f"<poolsplit>\n{own}\n</poolsplit>" in text
    assert FIX in text and SKILL in text


@pytest.mark.asyncio
async def test_memory_aget_passes_another_block_s_keyword_and_the_block_keeps_its_own():
    seen = []

    def scorer(entry, context):
        seen.append(dict(context))
        return 1.0

    block = PoolSplitMemoryBlock(store=agent_store(), pools=SPLIT, scorer=scorer)
    messages = await memory_with_mood(block).aget(mood="tired", project="atlas", tags=["ops"])
    text = str(messages[0].content)
    assert "The user feels tired." in text and FIX in text
    assert seen and all(c == {"project": "atlas", "tags": ["ops"],
                              "message": "How do I deploy the release?"} for c in seen)


def test_render_called_directly_still_refuses_an_unknown_keyword():
    block = PoolSplitMemoryBlock(store=agent_store(), pools=SPLIT, now=NOW)
    with pytest.raises(TypeError, match=r"\['mood'\]; it accepts project=, tags="):
        block.render("deploy", mood="tired")
