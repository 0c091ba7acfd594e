"""Speed of the adapters over a living store: a write and a query per turn, and one tenant's query.

Run with ``make bench`` (or ``python benchmarks/bench_adapters.py``). Same
deterministic store and queries as ``bench_retrieve.py``, as LangChain
Documents and LlamaIndex nodes:

- per turn, at ``--n`` documents: the agent writes one memory, then the next
  turn queries. ``add + query`` is what the adapters do now (one upsert into
  the prepared store); ``rebuild + query`` is building the component again
  from every document, which is what replacing ``documents`` used to cost.
  The memory block reads through a tenant's retriever.
- one tenant's LangChain query at ``--tenant-n`` documents over ``--tenants``
  tenants (partitioned by ``user_id``, the first required filter key), bound
  with ``with_filter`` and with the run's ``config["configurable"]``, against
  the same query on a retriever holding that tenant's documents alone.

Prints median and p95 per turn (ms); writes ``benchmarks/results_adapters.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
import time
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_retrieve import NOW, POOLS, make_queries, make_store, summary  # noqa: E402
from langchain_core.documents import Document  # noqa: E402
from llama_index.core.base.llms.types import ChatMessage  # noqa: E402
from llama_index.core.schema import TextNode  # noqa: E402

from poolsplit_integrations import langchain as lc  # noqa: E402
from poolsplit_integrations import llama_index as li  # noqa: E402

# Every bench type has a pool; silence the warnings all the same.
logging.getLogger("poolsplit_integrations").setLevel(logging.ERROR)
# One tenant holds every correction of the 5k store: its always tier is over the pools;
# the overflow warning (logger "poolsplit") is expected here, once per turn.
logging.getLogger("poolsplit").setLevel(logging.ERROR)


def as_document(entry: dict[str, Any]) -> Document:
    meta = {k: v for k, v in entry.items() if k not in ("id", "content")}
    return Document(id=entry["id"], page_content=entry["content"], metadata=meta)


def as_node(entry: dict[str, Any]) -> TextNode:
    meta = {k: v for k, v in entry.items() if k not in ("id", "content")}
    return TextNode(id_=entry["id"], text=entry["content"], metadata=meta)


def turns(write: Callable[[dict[str, Any]], Any], query: Callable[[str], Any],
          fresh: list[dict[str, Any]], queries: list[dict[str, Any]]) -> dict[str, float]:
    """Time ``write(entry)`` then ``query(message)``, one per turn (after one untimed query)."""
    query(queries[0]["message"])
    times = []
    for entry, context in zip(fresh, queries):
        start = time.perf_counter()
        write(entry)
        query(context["message"])
        times.append(time.perf_counter() - start)
    return summary(times)


def bench_turns(n: int, queries: list[dict[str, Any]], rebuilds: int) -> dict[str, Any]:
    store = [{**e, "user_id": "ana"} for e in make_store(n)]
    fresh = [{**e, "id": f"new{i}", "user_id": "ana"}
             for i, e in enumerate(make_store(len(queries), seed=99))]
    out: dict[str, Any] = {"n": n}

    docs = [as_document(e) for e in store]
    retriever = lc.PoolSplitRetriever(documents=docs, pools=POOLS, now=NOW)
    out["langchain_add_query"] = turns(lambda e: retriever.add_documents([as_document(e)]),
                                       retriever.invoke, fresh, queries)
    grown = list(docs)

    def rebuild(entry: dict[str, Any]) -> None:
        nonlocal retriever
        grown.append(as_document(entry))
        retriever = lc.PoolSplitRetriever(documents=grown, pools=POOLS, now=NOW)

    out["langchain_rebuild_query"] = turns(rebuild, lambda q: retriever.invoke(q),
                                           fresh[:rebuilds], queries[:rebuilds])

    nodes = li.PoolSplitRetriever(nodes=[as_node(e) for e in store], pools=POOLS, now=NOW,
                                  require_filter_keys=("user_id",))
    ana = nodes.with_filter({"user_id": "ana"})
    out["llamaindex_insert_retrieve"] = turns(lambda e: nodes.insert_nodes([as_node(e)]),
                                              ana.retrieve, fresh, queries)
    block = li.PoolSplitMemoryBlock(store=ana, pools=POOLS, now=NOW)
    more = [{**e, "id": f"more{i}"} for i, e in enumerate(fresh)]
    out["memory_block_insert_get"] = turns(
        lambda e: nodes.insert_nodes([as_node(e)]),
        lambda q: asyncio.run(block.aget([ChatMessage(role="user", content=q)])),
        more, queries)
    return out


def bench_tenant(n: int, tenants: int, queries: list[dict[str, Any]]) -> dict[str, Any]:
    store = [{**e, "user_id": f"u{i % tenants:04d}"} for i, e in enumerate(make_store(n))]
    docs = [as_document(e) for e in store]
    start = time.perf_counter()
    shared = lc.PoolSplitRetriever(documents=docs, pools=POOLS, now=NOW,
                                   require_filter_keys=("user_id",))
    build_s = time.perf_counter() - start
    picked = [f"u{k:04d}" for k in range(0, tenants, max(1, tenants // 10))][:10]
    alone = {t: lc.PoolSplitRetriever(documents=[d for d in docs if d.metadata["user_id"] == t],
                                      pools=POOLS, now=NOW) for t in picked}
    bound, config, own, agree = [], [], [], True
    for rounds in range(2):  # the first round is untimed: steady state
        for t in picked:
            tenant = shared.with_filter({"user_id": t})
            for context in queries[:10]:
                message = context["message"]
                t0 = time.perf_counter()
                a = tenant.invoke(message)
                t1 = time.perf_counter()
                b = shared.invoke(message, config={"configurable": {"user_id": t}})
                t2 = time.perf_counter()
                c = alone[t].invoke(message)
                t3 = time.perf_counter()
                if rounds:
                    bound.append(t1 - t0)
                    config.append(t2 - t1)
                    own.append(t3 - t2)
                    agree = agree and a == b == c
    with_filter = []
    for t in picked * 5:
        t0 = time.perf_counter()
        shared.with_filter({"user_id": t})
        with_filter.append(time.perf_counter() - t0)
    result = {"n": n, "tenants": tenants, "build_s": build_s, "with_filter": summary(bound),
              "config": summary(config), "alone": summary(own),
              "bind": summary(with_filter), "identical": agree}
    result["ratio"] = result["with_filter"]["median_ms"] / result["alone"]["median_ms"]
    return result


def line(name: str, s: dict[str, float]) -> str:
    return f"  {name:<44} {s['median_ms']:>8.2f} ms  p95 {s['p95_ms']:>8.2f} ms  (n={s['n']})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=5_000)
    parser.add_argument("--turns", type=int, default=50)
    parser.add_argument("--rebuilds", type=int, default=10,
                        help="turns timed for the rebuild-per-turn comparison")
    parser.add_argument("--tenant-n", type=int, default=100_000)
    parser.add_argument("--tenants", type=int, default=1_000, help="0: skip the tenant figure")
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results_adapters.json"))
    args = parser.parse_args()
    queries = make_queries(args.turns, seed=23)
    per_turn = bench_turns(args.n, queries, args.rebuilds)
    print(f"adapters, one write then one query per turn, at {args.n} documents:")
    for key, name in [("langchain_add_query", "LangChain add_documents + invoke"),
                      ("langchain_rebuild_query", "LangChain rebuild from documents + invoke"),
                      ("llamaindex_insert_retrieve", "LlamaIndex insert_nodes + retrieve"),
                      ("memory_block_insert_get", "LlamaIndex insert_nodes + memory block aget")]:
        print(line(name, per_turn[key]), flush=True)
    tenant = None
    if args.tenants:
        tenant = bench_tenant(args.tenant_n, args.tenants, queries)
        print(f"LangChain, one tenant's query at {args.tenant_n} documents over {args.tenants}"
              f" tenants (built in {tenant['build_s']:.1f} s):")
        print(line("bound by with_filter", tenant["with_filter"]))
        print(line("bound by config['configurable']", tenant["config"]))
        print(line("a retriever over that tenant's documents alone", tenant["alone"]))
        print(line("with_filter itself (no rebuild)", tenant["bind"]))
        print(f"  ratio {tenant['ratio']:.2f}x; same answers:"
              f" {'yes' if tenant['identical'] else 'NO'}")
    out = Path(args.out)
    out.write_text(json.dumps({"per_turn": per_turn, "tenant": tenant}, indent=2) + "\n")
    shown = out.relative_to(ROOT) if out.is_relative_to(ROOT) else out
    print(f"(median and p95 per turn; written to {shown})")
    return 0 if tenant is None or tenant["identical"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
