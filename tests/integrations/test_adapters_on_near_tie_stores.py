"""Both retrievers against the literal reference, on seeded near-tie stores.

Each seed draws a near-tie store (``tests/core/strategies.py``), pools, a
context, a time, a tenant filter and a cap ``k``; the LangChain and the
LlamaIndex retriever must return exactly what the reference loads over the
entries the filter keeps, flattened as the adapters promise (the corrections
no pool takes first, under ``always``, then every pool's always-scope entries,
then the contextual ones pool by pool, ``k`` round-robin): same ids, pools,
scores and always flags, text and metadata carried through unchanged. The
seeds are fixed: the same stores every run.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from langchain_core.documents import Document
from llama_index.core.schema import TextNode

from poolsplit_integrations.langchain import PoolSplitRetriever as LangChainRetriever
from poolsplit_integrations.llama_index import PoolSplitRetriever as LlamaIndexRetriever
from tests.core import strategies as s
from tests.reference import ref_explain_pools

from ._llamaindex_support import offline_llamaindex  # noqa: F401 -- the fixture

SEEDS = range(150)
Row = tuple[str, str, Any, bool, str, dict[str, Any]]


def case(seed: int) -> tuple[list[dict[str, Any]], list[Any], dict[str, Any], Any,
                             dict[str, Any] | None, int | None]:
    rng = random.Random(seed)
    store = s.near_tie_store(rng, 40, 120)
    for n, entry in enumerate(store):
        entry["id"] = f"e{n}"  # the frameworks' ids are strings
    pools = s.near_tie_pools(rng)
    context = s.near_tie_context(rng) or {}
    context.setdefault("message", "")
    now = s.near_tie_now(rng)
    where = {"user_id": rng.choice(s.NEAR_USERS)} if rng.random() < 0.5 else None
    k = rng.choice((None, None, 0, 1, 3, 7))
    return store, pools, context, now, where, k


def expected(store: list[dict[str, Any]], pools: list[Any], context: dict[str, Any], now: Any,
             where: dict[str, Any] | None, k: int | None) -> list[Row]:
    kept = [e for e in store if where is None
            or all(key in e and e[key] == value for key, value in where.items())]
    decisions, _ = ref_explain_pools(kept, pools, context, now=now)
    loaded: dict[str, list[tuple[int, int, Any, bool]]] = {p.name: [] for p in pools}
    for i, (outcome, pool, score, _, _, rank) in enumerate(decisions):
        if outcome in ("always", "selected"):
            loaded[pool].append((rank, i, score, outcome == "always"))
    for hits in loaded.values():
        hits.sort()
    always = [(name, h) for name, hits in loaded.items() for h in hits if h[3]]
    # every correction loads: one no pool takes, under "always", in store order
    unpooled = [i for i, d in enumerate(decisions)
                if d[0] == "no_pool" and kept[i].get("scope") == "always"]
    always = [("always", (rank, i, None, True)) for rank, i in enumerate(unpooled)] + always
    contextual = [[(name, h) for h in hits if not h[3]] for name, hits in loaded.items()]
    if k is not None:  # round-robin over the pools, each pool's best first
        keep = [0] * len(contextual)
        budget = k
        while budget > 0 and any(n < len(c) for n, c in zip(keep, contextual)):
            for j, c in enumerate(contextual):
                if budget > 0 and keep[j] < len(c):
                    keep[j] += 1
                    budget -= 1
        contextual = [c[:n] for c, n in zip(contextual, keep)]
    ordered = always + [hit for c in contextual for hit in c]
    rows = []
    for name, (_, i, score, is_always) in ordered:
        entry = kept[i]
        metadata = {key: value for key, value in entry.items() if key not in ("content", "id")}
        rows.append((entry["id"], name, None if is_always else score, is_always,
                     entry["content"], metadata))
    return rows


def plain(metadata: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in metadata.items() if not key.startswith("poolsplit_")}


@pytest.mark.parametrize("block", range(3))
def test_the_langchain_retriever_gives_the_reference_answer(block: int) -> None:
    for seed in SEEDS[block::3]:
        store, pools, context, now, where, k = case(seed)
        docs = [Document(id=e["id"], page_content=e["content"],
                         metadata={key: v for key, v in e.items() if key not in ("content", "id")})
                for e in store]
        retriever = LangChainRetriever(
            documents=docs, pools=pools, now=now, filter=where,
            context={key: v for key, v in context.items() if key != "message"},
            require_filter_keys=(), strict=False)
        got = [(d.id, d.metadata["poolsplit_pool"], d.metadata["poolsplit_score"],
                d.metadata["poolsplit_always"], d.page_content, plain(d.metadata))
               for d in retriever.invoke(context["message"], k=k)]
        assert got == expected(store, pools, context, now, where, k), f"seed {seed}"


@pytest.mark.usefixtures("offline_llamaindex")
@pytest.mark.parametrize("block", range(3))
def test_the_llamaindex_retriever_gives_the_reference_answer(block: int) -> None:
    for seed in SEEDS[block::3]:
        store, pools, context, now, where, k = case(seed)
        nodes = [TextNode(id_=e["id"], text=e["content"],
                          metadata={key: v for key, v in e.items() if key not in ("content", "id")})
                 for e in store]
        retriever = LlamaIndexRetriever(
            nodes=nodes, pools=pools, now=now, filter=where, k=k,
            context={key: v for key, v in context.items() if key != "message"},
            require_filter_keys=(), strict=False)
        results = retriever.retrieve(context["message"])
        got = [(r.node.node_id, r.node.metadata["poolsplit_pool"],
                r.node.metadata["poolsplit_score"], r.node.metadata["poolsplit_always"],
                r.node.get_content(), plain(r.node.metadata)) for r in results]
        assert got == expected(store, pools, context, now, where, k), f"seed {seed}"
        for r in results:
            if not r.node.metadata["poolsplit_always"]:
                assert r.score == r.node.metadata["poolsplit_score"]
