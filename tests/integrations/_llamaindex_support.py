"""Offline LlamaIndex test support: a fixed tokenizer, mock models, a small store.

Nothing here lets LlamaIndex resolve a default: the tokenizer is a plain
whitespace split (tiktoken is never loaded), the LLM is ``MockLLM`` (which
echoes its prompt) and the embedding model is ``MockEmbedding``. The fixture
restores the global settings afterwards.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timezone

import llama_index.core
import pytest
from llama_index.core import Settings
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.llms import MockLLM
from llama_index.core.schema import TextNode

from poolsplit_core.poolsplit import Pool

NOW = datetime(2026, 4, 1, tzinfo=timezone.utc)


def whitespace_tokenizer(text: str) -> list[str]:
    return text.split()


@pytest.fixture
def offline_llamaindex() -> Iterator[None]:
    saved = (llama_index.core.global_tokenizer, Settings._llm, Settings._embed_model)
    Settings.tokenizer = whitespace_tokenizer
    Settings.llm = MockLLM()
    Settings.embed_model = MockEmbedding(embed_dim=8)
    try:
        yield
    finally:
        llama_index.core.global_tokenizer = saved[0]
        Settings._llm, Settings._embed_model = saved[1], saved[2]


CORRECTION = "CORRECTION: never force-push to the main branch."
TASK = "TASK: ship the release notes for the deploy."
SKILL = "SKILL: bisect a regression with git bisect run."


def store_nodes() -> list[TextNode]:
    """A correction (low priority, always), tasks, notes and one skill."""
    return [
        TextNode(id_="task-1", text=TASK,
                 metadata={"type": "task", "base_priority": 8, "created": "2026-03-30"}),
        TextNode(id_="note-1", text="NOTE: the deploy window is Friday.",
                 metadata={"type": "note", "base_priority": 6, "created": "2026-03-01"}),
        TextNode(id_="fix-1", text=CORRECTION,
                 metadata={"type": "correction", "scope": "always", "base_priority": 1,
                           "created": "2025-01-01"}),
        TextNode(id_="skill-1", text=SKILL,
                 metadata={"type": "skill", "base_priority": 2, "created": "2026-01-01"}),
    ]


def fresh_nodes(n: int) -> list[TextNode]:
    """``n`` fresh, high-priority nodes that match a deploy question."""
    return [
        TextNode(id_=f"fresh-{i}", text=f"FRESH {i}: deploy release status update {i}.",
                 metadata={"type": "task", "base_priority": 10, "created": "2026-04-01"})
        for i in range(n)
    ]


POOLS = [
    Pool("work", max_tokens=60, max_entries=3, types=("task", "note", "correction")),
    Pool("skills", max_tokens=30, max_entries=1, types=("skill",)),
]
