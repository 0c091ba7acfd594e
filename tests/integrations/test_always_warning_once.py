"""An oversized always tier is warned of once per situation, not on every query.

An agent that runs the same tier every turn would otherwise log the same
warning, naming every entry, on each query. A different tier (another tenant's,
or the same one after a write) or another budget is a new situation and warned
of again.
"""

from __future__ import annotations

import logging

import pytest
from langchain_core.documents import Document
from llama_index.core.schema import TextNode

from poolsplit_core.poolsplit import Pool
from poolsplit_integrations.langchain import PoolSplitRetriever as LCRetriever
from poolsplit_integrations.llama_index import PoolSplitRetriever as LIRetriever
from tests.integrations.test_langchain_tenancy import NOW, ids, make_retriever

SMALL = [Pool("rules", max_tokens=1, max_entries=3, types=("correction", "task")),
         Pool("notes", max_tokens=1, max_entries=3)]


def warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "poolsplit"]


def test_the_same_tier_is_warned_of_once_and_a_new_one_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    retriever = make_retriever(pools=SMALL)
    with caplog.at_level(logging.WARNING, logger="poolsplit"):
        for _ in range(3):
            assert ids(retriever.invoke("deploy", filter={"user_id": "a"}))[0] == "a-fix"
    [first] = warnings(caplog)
    assert "a-fix" in first and "10 tokens" in first
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="poolsplit"):
        retriever.invoke("deploy", filter={"user_id": "b"})  # another tenant's tier
        retriever.invoke("deploy", filter={"user_id": "b"})
    [second] = warnings(caplog)
    assert "b-fix" in second and "a-fix" not in second
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="poolsplit"):
        retriever.add_documents([Document(id="a-fix2", page_content="Never on Monday either.",
                                          metadata={"user_id": "a", "type": "correction",
                                                    "scope": "always", "token_count": 2})])
        got = ids(retriever.invoke("deploy", filter={"user_id": "a"}))
    assert "a-fix" in got and "a-fix2" in got  # loaded, never dropped
    [third] = warnings(caplog)
    assert "a-fix2" in third and "12 tokens" in third


def test_llamaindex_warns_of_the_same_tier_once(caplog: pytest.LogCaptureFixture) -> None:
    nodes = [TextNode(id_=f"fix{k}", text="never deploy on Friday " * 4,
                      metadata={"type": "correction", "scope": "always"}) for k in range(3)]
    retriever = LIRetriever(nodes=nodes, pools=[Pool("work", max_tokens=5, max_entries=2)],
                            now=NOW)
    with caplog.at_level(logging.WARNING, logger="poolsplit"):
        for _ in range(4):
            assert [h.node.node_id for h in retriever.retrieve("deploy")] == [
                "fix0", "fix1", "fix2"]
    [message] = warnings(caplog)
    assert all(f"fix{k}" in message for k in range(3))


def test_each_retriever_warns_for_itself() -> None:
    # two retrievers over equal documents: each owner is told once
    first, second = make_retriever(pools=SMALL), LCRetriever(
        documents=list(make_retriever().documents), pools=SMALL, now=NOW)
    logger = logging.getLogger("poolsplit")
    seen: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: (  # type: ignore[method-assign]
        seen.append(record.getMessage()) if "always-scope" in record.getMessage() else None)
    logger.addHandler(handler)
    try:
        for retriever in (first, second, first, second):
            retriever.invoke("deploy", filter={"user_id": "a"})
    finally:
        logger.removeHandler(handler)
    assert len(seen) == 2
