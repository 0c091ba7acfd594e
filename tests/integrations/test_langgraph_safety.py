"""PoolSplitStore and its retriever keep their promises with no option set.

Every test runs on InMemoryStore and on a real PostgreSQL (the ``bare`` fixture):

1. ``put``/``aput``/a ``PutOp`` with value None delete the item, as LangGraph's
   ``BaseStore`` defines, and the prepared copy drops it -- also in large,
   concurrent batches (LangGraph's own ``test_large_batches`` shape);
2. a bad item someone else wrote is skipped from pool-split reads, warned of
   once, and listed in ``explain_pools(...).skipped``; everything else loads;
3. writes are strict by default (``strict=False`` is today's leniency);
4. every active correction loads, under the ``"always"`` pool when no pool
   takes its type;
5. a namespace template refuses a value that names nobody;
6. the retriever's ``filter=`` only narrows;
7. a namespace whose items carry ``user_id`` answers only a call that names
   a user (unless the store is shared, ``require_filter_keys=()``).
"""

from __future__ import annotations

import asyncio
import logging
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor, wait
from datetime import datetime, timezone
from pathlib import Path

import pytest
from langgraph.store.base import GetOp, ListNamespacesOp, PutOp, SearchOp

from poolsplit_core.poolsplit import AlwaysScopeOverflowError, Pool
from poolsplit_integrations.langgraph import (
    PoolSplitStore,
    PoolSplitStoreRetriever,
    fill_namespace,
)
from tests.integrations.conftest import open_store

NOW = datetime(2026, 3, 1, tzinfo=timezone.utc)
NS = ("memories", "ana")
POOLS = [Pool("work", 200, 3, ("task",)), Pool("notes", 200, 3, ("note",))]
#: Seconds a test waits for work that must not hang.
PATIENCE = 120


@pytest.fixture(params=("memory", "postgres"))
def bare(request: pytest.FixtureRequest):
    """An empty bare store: InMemoryStore, and PostgresStore on a real server."""
    uri = request.getfixturevalue("postgres_ready") if request.param == "postgres" else None
    store, close = open_store(request.param, uri)
    yield store
    close()


def keys(got):
    return {name: [item.key for item in items] for name, items in got.items()}


def seed(store, ns=NS):
    store.put(ns, "fix", {"content": "Deploy with just.", "type": "correction",
                          "scope": "always"})
    for i in range(4):
        store.put(ns, f"t{i}", {"content": f"deploy task {i}", "type": "task"})
        store.put(ns, f"n{i}", {"content": f"release note {i}", "type": "note"})


def warnings_of(caplog):
    return [r.getMessage() for r in caplog.records
            if r.name == "poolsplit" and r.levelno == logging.WARNING]


# --------------------------------------------------------------------------
# 1. A put with value None deletes, as LangGraph defines
# --------------------------------------------------------------------------


def test_put_none_deletes_the_item_and_the_prepared_copy_drops_it(bare):
    store = PoolSplitStore(bare)
    seed(store)
    pools = [Pool("all", 500, 20)]
    assert "t1" in keys(store.retrieve_pools(NS, pools, now=NOW))["all"]  # indexed now
    store.put(NS, "t1", None)
    assert bare.get(NS, "t1") is None
    assert "t1" not in {e["id"] for e in store.entries(NS)}
    assert "t1" not in keys(store.retrieve_pools(NS, pools, now=NOW))["all"]
    store.put(NS, "never-there", None)  # deleting a missing key is no error, as on the store
    store.put(NS, "fix", None)  # a correction too
    assert "fix" not in keys(store.retrieve_pools(NS, pools, now=NOW))["all"]


def test_aput_none_and_an_async_put_op_with_none_delete(bare):
    store = PoolSplitStore(bare)
    seed(store)
    store.entries(NS)  # the index exists

    async def run():
        await store.aput(NS, "t2", None)
        await store.abatch([PutOp(NS, "n2", None), PutOp(NS, "t3", {"content": "kept",
                                                                      "type": "task"})])

    try:
        asyncio.run(run())
    except NotImplementedError:  # a store without async twins refuses as it would bare
        pytest.skip(f"{type(bare).__name__} has no async calls")
    assert bare.get(NS, "t2") is None and bare.get(NS, "n2") is None
    ids = {e["id"] for e in store.entries(NS)}
    assert "t3" in ids and not {"t2", "n2"} & ids


def test_one_large_batch_of_puts_deletes_and_reads_finishes_and_the_index_follows(bare):
    store = PoolSplitStore(bare)
    seed(store)
    store.entries(NS)  # the index exists, so every write is read back into it
    ops = []
    for i in range(150):
        ns = NS if i % 2 else (*NS, "deep")
        ops += [PutOp(ns, f"k{i}", {"content": f"value {i}", "type": "note"}),
                GetOp(ns, f"k{i}"),
                SearchOp(("memories",), None, 10, 0),
                ListNamespacesOp(None, None, 10, 0),
                PutOp(ns, f"k{i}", None)]
        if i % 3 == 0:
            ops.append(PutOp(ns, f"k{i}", {"content": f"again {i}", "type": "task"}))
    with ThreadPoolExecutor(max_workers=1) as pool:
        results = pool.submit(store.batch, ops).result(timeout=PATIENCE)
    assert len(results) == len(ops)
    store.refresh(NS)
    expected = {(tuple(i.namespace), i.key) for i in bare.search(NS, limit=1000)}
    held = set()
    for e in store.entries(NS):
        entry_id = e["id"]
        held.add((NS, entry_id) if isinstance(entry_id, str)
                 else ((*NS, *entry_id[:-1]), entry_id[-1]))
    assert held == expected
    assert sum(1 for ns, key in held if key.startswith("k")) == 50  # i % 3 == 0 came back


def test_large_concurrent_batches_with_deletes_do_not_hang(bare):
    """LangGraph's test_large_batches, through the wrapper, with pool-split reads mixed in."""
    store = PoolSplitStore(bare)
    seed(store, ("test", "foo", "bar", "baz", "0"))
    store.entries(("test",))  # an index over the whole prefix: every write is read back
    n, m = 25, 4
    with ThreadPoolExecutor(max_workers=8) as executor:
        futures = []
        for j in range(m):
            ns = ("test", "foo", "bar", "baz", str(j % 2))
            for i in range(n):
                futures += [
                    executor.submit(store.put, ns, f"key{i}", {"foo": "bar" + str(i)}),
                    executor.submit(store.get, ns, f"key{i}"),
                    executor.submit(store.list_namespaces, prefix=None, max_depth=j + 1),
                    executor.submit(store.search, ("test",)),
                    executor.submit(store.put, ns, f"key{i}", {"foo": "bar" + str(i)}),
                    executor.submit(store.put, ns, f"key{i}", None),
                    executor.submit(store.retrieve_pools, ("test",), [Pool("all", 50, 5)]),
                ]
        done, pending = wait(futures, timeout=PATIENCE)
        assert not pending, f"{len(pending)} calls still running after {PATIENCE} s"
    for future in done:
        future.result()  # none raised
    store.refresh()
    stored = {(tuple(i.namespace), i.key) for i in bare.search(("test",), limit=1000)}
    seen = {e["id"] for e in store.entries(("test",))}
    assert {(*ns[1:], key) for ns, key in stored} == seen


def test_large_async_batches_with_deletes_do_not_hang(bare):
    """LangGraph's test_large_batches_async, through the wrapper: many coroutines at once."""
    store = PoolSplitStore(bare)
    store.entries(("test",))
    n, m = 40, 4

    async def run():
        calls = []
        for j in range(m):
            ns = ("test", "foo", "bar", "baz", str(j % 2))
            for i in range(n):
                calls += [store.aput(ns, f"key{i}", {"foo": "bar" + str(i)}),
                          store.aget(ns, f"key{i}"),
                          store.alist_namespaces(prefix=None, max_depth=j + 1),
                          store.asearch(("test",)),
                          store.aput(ns, f"key{i}", {"foo": "bar" + str(i)}),
                          store.aput(ns, f"key{i}", None) if i % 2 else store.adelete(
                              ns, f"key{i}")]
        return await asyncio.wait_for(asyncio.gather(*calls), PATIENCE)

    assert len(asyncio.run(run())) == n * m * 6
    store.refresh()
    stored = {(*tuple(i.namespace)[1:], i.key) for i in bare.search(("test",), limit=1000)}
    assert {e["id"] for e in store.entries(("test",))} == stored


# --------------------------------------------------------------------------
# 2. A bad item never takes a namespace down
# --------------------------------------------------------------------------

BAD = {
    "prio": ({"content": "deploy priority", "type": "task", "base_priority": "high"},
             "base_priority"),
    "scope": ({"content": "deploy scope", "type": "task", "scope": "Always"}, "scope"),
    "count": ({"content": "deploy count", "type": "task", "token_count": 0}, "token_count"),
    "tags": ({"content": "deploy tags", "type": "task", "tags": "ops"}, "tags"),
    "badfix": ({"content": "a correction nobody can read", "type": "correction",
                "scope": "always", "status": ""}, "status"),
}


def test_items_the_checks_refuse_are_skipped_warned_once_and_listed(bare, caplog):
    seed(bare)  # written by someone else, through the bare store
    for key, (value, _) in BAD.items():
        bare.put(NS, key, value)
    store = PoolSplitStore(bare)
    caplog.set_level(logging.WARNING, logger="poolsplit")
    got = store.retrieve_pools(NS, POOLS, {"message": "deploy"}, now=NOW)
    assert got["always"][0].key == "fix"  # the good correction still loads, first
    loaded = {item.key for items in got.values() for item in items}
    assert not loaded & set(BAD)
    assert len(got["work"]) == 3 and len(got["notes"]) == 3  # the good ones fill the pools
    first = warnings_of(caplog)
    for key, (_, field) in BAD.items():
        assert any(repr(key) in w and field in w and repr(NS) in w for w in first), key
    caplog.clear()
    store.retrieve_pools(NS, POOLS, {"message": "deploy"}, now=NOW)
    explained = store.explain_pools(NS, POOLS, {"message": "deploy"}, now=NOW)
    assert warnings_of(caplog) == []  # once per (namespace, key, problem)
    skipped = dict(explained.skipped)
    assert set(skipped) == set(BAD)
    for key, (_, field) in BAD.items():
        assert field in skipped[key]
    assert not {d.entry["id"] for d in explained.decisions} & set(BAD)
    assert {e["id"] for e in store.entries(NS)}.isdisjoint(BAD)


def test_an_item_turning_bad_later_is_dropped_and_one_fixed_later_loads(bare, caplog):
    store = PoolSplitStore(bare, refresh_interval=0, reconcile_interval=0)
    seed(store)
    pools = [Pool("all", 500, 20)]
    assert "t1" in keys(store.retrieve_pools(NS, pools, now=NOW))["all"]
    bare.put(NS, "t1", {"content": "now broken", "type": "task", "base_priority": "x"})
    bare.put(NS, "fix", {"content": "broken correction", "scope": "always",
                         "token_count": -1})
    caplog.set_level(logging.WARNING, logger="poolsplit")
    got = keys(store.retrieve_pools(NS, pools, now=NOW))["all"]
    assert "t1" not in got and "fix" not in got  # not the old copies either
    assert {"t0", "n0"} <= set(got)
    assert {key for key, _ in store.explain_pools(NS, pools, now=NOW).skipped} == {"t1", "fix"}
    bare.put(NS, "t1", {"content": "fixed", "type": "task"})
    bare.put(NS, "fix", {"content": "fixed correction", "scope": "always"})
    got = keys(store.retrieve_pools(NS, pools, now=NOW))["all"]
    assert got[0] == "fix" and "t1" in got
    assert store.explain_pools(NS, pools, now=NOW).skipped == ()


def test_a_correction_fixed_by_another_writer_loads_at_once_and_is_no_longer_listed(bare):
    store = PoolSplitStore(bare, refresh_interval=1000, reconcile_interval=1000)
    seed(store)
    bare.put(NS, "late", {"content": "broken", "scope": "always", "status": ""})
    pools = [Pool("all", 500, 20)]
    assert "late" not in keys(store.retrieve_pools(NS, pools, now=NOW))["all"]
    assert [key for key, _ in store.explain_pools(NS, pools, now=NOW).skipped] == ["late"]
    bare.put(NS, "late", {"content": "fixed", "scope": "always"})  # no poll due
    assert "late" in keys(store.retrieve_pools(NS, pools, now=NOW))["all"]
    assert store.explain_pools(NS, pools, now=NOW).skipped == ()
    bare.put(NS, "late", {"content": "broken again", "scope": "always", "token_count": 0})
    assert "late" not in keys(store.retrieve_pools(NS, pools, now=NOW))["all"]
    assert [key for key, _ in store.explain_pools(NS, pools, now=NOW).skipped] == ["late"]


def test_errors_about_a_namespace_name_it(bare):
    store = PoolSplitStore(bare)
    for i in range(2):
        store.put(NS, f"fix{i}", {"content": "x" * 40, "scope": "always", "token_count": 10})
    with pytest.raises(AlwaysScopeOverflowError, match=r"'memories', 'ana'.*max_always_tokens"):
        store.retrieve_pools(NS, POOLS, max_always_tokens=5)
    with pytest.raises(AlwaysScopeOverflowError, match=r"'memories', 'ana'"):
        store.explain_pools(NS, POOLS, max_always_tokens=5)


# --------------------------------------------------------------------------
# 3. Strict writes by default
# --------------------------------------------------------------------------


def test_strict_writes_refuse_a_bad_value_naming_namespace_key_and_field(bare):
    store = PoolSplitStore(bare)
    for key, (value, field) in BAD.items():
        if key == "prio":
            continue  # the core's own refusal: covered in test_langgraph_store
        with pytest.raises(ValueError, match=rf"'memories', 'ana'.*{key!r}.*{field}"):
            store.put(NS, key, value)
        assert bare.get(NS, key) is None


def test_a_strict_batch_is_checked_whole_and_writes_nothing(bare):
    store = PoolSplitStore(bare)
    store.put(NS, "ok", {"content": "fine"})
    with pytest.raises(ValueError) as err:
        store.batch([PutOp(NS, "good", {"content": "good"}),
                     PutOp(NS, "scope", BAD["scope"][0]),
                     PutOp(NS, "ok", None),
                     PutOp(NS, "count", BAD["count"][0])])
    message = str(err.value)
    assert "'scope'" in message and "'count'" in message and "token_count" in message
    assert "op 1" in message and "op 3" in message
    assert bare.get(NS, "good") is None and bare.get(NS, "ok") is not None


def test_a_strict_async_put_refuses_too(bare):
    store = PoolSplitStore(bare)
    with pytest.raises(ValueError, match=r"aput\(\).*'scope'.*scope"):
        asyncio.run(store.aput(NS, "scope", BAD["scope"][0]))
    with pytest.raises(ValueError, match=r"'count'.*token_count"):
        asyncio.run(store.abatch([PutOp(NS, "count", BAD["count"][0])]))
    assert bare.get(NS, "scope") is None and bare.get(NS, "count") is None


def test_strict_false_writes_what_only_the_strict_checks_refuse(bare):
    store = PoolSplitStore(bare, strict=False)
    store.put(NS, "scope", BAD["scope"][0])
    store.put(NS, "count", BAD["count"][0])
    with pytest.raises(ValueError, match=r"'memories', 'ana'.*'prio'.*base_priority"):
        store.put(NS, "prio", BAD["prio"][0])  # the core's refusal stays
    got = keys(store.retrieve_pools(NS, [Pool("all", 500, 20)], now=NOW))
    assert set(got["all"]) == {"scope", "count"}  # read as leniently as written
    assert store.explain_pools(NS, [Pool("all", 500, 20)], now=NOW).skipped == ()


def test_strict_must_be_a_bool():
    from langgraph.store.memory import InMemoryStore

    with pytest.raises(TypeError, match="strict must be True or False"):
        PoolSplitStore(InMemoryStore(), strict="no")  # type: ignore[arg-type]


def test_from_conn_string_takes_strict(postgres_ready):
    with PoolSplitStore.from_conn_string(postgres_ready, strict=False) as store:
        assert store.strict is False
        store.put(("strict-test",), "scope", BAD["scope"][0])
        store.delete(("strict-test",), "scope")
    with PoolSplitStore.from_conn_string(postgres_ready) as store:
        assert store.strict is True
        with pytest.raises(ValueError, match="scope"):
            store.put(("strict-test",), "scope", BAD["scope"][0])


INSTALL_POSTGRES = "install them with: pip install 'poolsplit[postgres]'"


@pytest.mark.parametrize(("hidden", "named"), [
    (("langgraph.store.postgres", "psycopg_pool"), "langgraph-checkpoint-postgres, psycopg-pool"),
    (("psycopg",), "psycopg"),
])
def test_from_conn_string_without_the_postgres_extra_names_what_is_missing(monkeypatch,
                                                                         hidden, named):
    # None in sys.modules makes an import fail, as an uninstalled package does.
    for module in hidden:
        monkeypatch.setitem(sys.modules, module, None)
    with pytest.raises(ImportError) as info:
        with PoolSplitStore.from_conn_string("postgresql://nobody@localhost/none"):
            pass  # pragma: no cover
    message = str(info.value)
    assert message.startswith(f"PoolSplitStore.from_conn_string needs {named}, which")
    assert message.endswith("with: pip install 'poolsplit[postgres]'")
    assert "'langgraph'" not in message  # installed: not what is missing


def test_from_conn_string_in_an_install_with_langgraph_but_not_postgres(tmp_path):
    # A fresh interpreter in which the [postgres] extra's distributions are not installed.
    code = textwrap.dedent("""
        import importlib.metadata, os, sys
        from tests.readme_runner import Hidden
        files = set()
        for name in ("langgraph-checkpoint-postgres", "psycopg", "psycopg-binary",
                     "psycopg-pool"):
            try:
                dist = importlib.metadata.distribution(name)
            except importlib.metadata.PackageNotFoundError:
                continue
            files |= {os.path.realpath(dist.locate_file(f)) for f in dist.files or ()}
        sys.meta_path.insert(0, Hidden(files))
        from poolsplit_integrations.langgraph import PoolSplitStore
        try:
            with PoolSplitStore.from_conn_string("postgresql://nobody@localhost/none"):
                pass
        except ImportError as exc:
            print(exc)
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, cwd=Path(__file__).parents[2])
    assert done.returncode == 0, done.stderr
    assert done.stdout == (
        "PoolSplitStore.from_conn_string needs langgraph-checkpoint-postgres, psycopg,"
        f" psycopg-pool, which are not installed; {INSTALL_POSTGRES}\n")


# --------------------------------------------------------------------------
# 4. Every correction loads
# --------------------------------------------------------------------------


def test_a_correction_no_pool_takes_loads_under_the_always_pool(bare):
    store = PoolSplitStore(bare)
    seed(store)
    store.put(NS, "rule", {"content": "Never paste keys.", "type": "rule", "scope": "always"})
    store.put(NS, "untyped", {"content": "Answer briefly.", "scope": "always"})
    pools = [Pool("work", 200, 3, ("task",))]
    got = keys(store.retrieve_pools(NS, pools, {"message": "deploy"}, now=NOW))
    assert sorted(got["always"]) == ["fix", "rule", "untyped"]  # in the store's order
    loaded = store.explain_pools(NS, pools, {"message": "deploy"}, now=NOW).loaded()
    assert sorted(d.entry["id"] for d in loaded["always"]) == ["fix", "rule", "untyped"]
    # A pool that takes every correction: no "always" pool at all.
    every = [Pool("corrections", 0, 0, ("correction", "rule", "note")), *pools]
    assert "always" not in store.retrieve_pools(NS, every, now=NOW)
    # The opt-out is explicit.
    assert "always" not in store.retrieve_pools(NS, pools, now=NOW, always_pool=False)


def test_the_retriever_returns_every_correction(bare):
    store = PoolSplitStore(bare)
    seed(store)
    store.put(NS, "rule", {"content": "Never paste keys.", "type": "rule", "scope": "always"})
    r = PoolSplitStoreRetriever(store=store, namespace=("memories", "{user_id}"),
                                pools=[Pool("work", 200, 3, ("task",))], now=NOW)
    docs = r.invoke("deploy", {"configurable": {"user_id": "ana"}})
    assert sorted((d.metadata["key"], d.metadata["poolsplit_pool"]) for d in docs[:2]) == [
        ("fix", "always"), ("rule", "always")]
    assert all(d.metadata["poolsplit_always"] for d in docs[:2])
    assert {d.metadata["poolsplit_pool"] for d in docs[2:]} == {"work"}


# --------------------------------------------------------------------------
# 5. A namespace template refuses a value that names nobody
# --------------------------------------------------------------------------

TEMPLATE = ("memories", "{user_id}")


@pytest.mark.parametrize("value", [None, "", " ", "\t\n", False, 0, ["ana"], 7, True])
def test_a_template_variable_must_be_a_non_empty_string(value):
    with pytest.raises(ValueError) as err:
        fill_namespace(TEMPLATE, {"configurable": {"user_id": value}})
    message = str(err.value)
    assert "'user_id'" in message and repr(TEMPLATE) in message
    assert "config={'configurable': {'user_id':" in message  # how to set it
    assert repr(value) in message


def test_every_template_variable_is_checked_and_a_good_one_fills():
    template = ("orgs", "{org}", "{user_id}")
    with pytest.raises(ValueError, match=r"'org'.*got 0"):
        fill_namespace(template, {"configurable": {"org": 0, "user_id": "ana"}})
    assert fill_namespace(template, {"configurable": {"org": "acme", "user_id": "ana"}}) == (
        "orgs", "acme", "ana")


@pytest.mark.parametrize("value", [None, " ", False, 0, ["ana"]])
def test_the_retriever_reads_nothing_for_a_template_value_naming_nobody(bare, value):
    store = PoolSplitStore(bare)
    seed(store)
    r = PoolSplitStoreRetriever(store=store, namespace=TEMPLATE, pools=POOLS, now=NOW)
    with pytest.raises(ValueError, match="user_id"):
        r.invoke("deploy", {"configurable": {"user_id": value}})
    assert store._views == {}


# --------------------------------------------------------------------------
# 6. The retriever's filter only narrows
# --------------------------------------------------------------------------


def filtered_store(bare):
    store = PoolSplitStore(bare)
    seed(store)
    store.put(NS, "fix-atlas", {"content": "Atlas: deploy on Tuesdays.", "type": "correction",
                                "scope": "always", "project": "atlas"})
    store.put(NS, "t-atlas", {"content": "deploy atlas", "type": "task", "project": "atlas"})
    return store


def test_a_filter_narrows_the_results_corrections_included(bare):
    r = PoolSplitStoreRetriever(store=filtered_store(bare), namespace=TEMPLATE, pools=POOLS,
                                now=NOW)
    config = {"configurable": {"user_id": "ana"}}
    docs = r.invoke("deploy", config, filter={"project": "atlas"})
    assert [d.metadata["key"] for d in docs] == ["fix-atlas", "t-atlas"]
    docs = r.invoke("deploy", config, filter={"type": "task"})
    assert docs and all(d.metadata["type"] == "task" for d in docs)
    assert "fix" not in [d.metadata["key"] for d in docs]
    assert r.invoke("deploy", config, filter={"project": "zeus"}) == []
    unfiltered = r.invoke("deploy", config)
    assert r.invoke("deploy", config, filter={}) == unfiltered
    assert r.invoke("deploy", config, filter=None) == unfiltered
    # The namespace's own user, named again, is the same call.
    assert r.invoke("deploy", config, filter={"user_id": "ana"}) == unfiltered


def test_a_filter_cannot_name_another_user_or_nobody(bare):
    store = filtered_store(bare)
    r = PoolSplitStoreRetriever(store=store, namespace=TEMPLATE, pools=POOLS, now=NOW)
    config = {"configurable": {"user_id": "ana"}}
    with pytest.raises(ValueError, match=r"user_id='ana'.*'bo'.*only narrow"):
        r.invoke("deploy", config, filter={"user_id": "bo"})
    for nobody in (False, "", " ", None, 0, ["ana"]):
        with pytest.raises(ValueError, match="user_id must be a non-empty string"):
            r.invoke("deploy", config, filter={"user_id": nobody})
    with pytest.raises(TypeError, match="filter must be a dict"):
        r.invoke("deploy", config, filter=[("type", "task")])


def test_filter_reaches_ainvoke_and_the_documents_call(bare):
    r = PoolSplitStoreRetriever(store=filtered_store(bare), namespace=TEMPLATE, pools=POOLS,
                                now=NOW)
    config = {"configurable": {"user_id": "ana"}}
    docs = asyncio.run(r.ainvoke("deploy", config, filter={"project": "atlas"}))
    assert [d.metadata["key"] for d in docs] == ["fix-atlas", "t-atlas"]
    from langchain_core.callbacks import CallbackManagerForRetrieverRun

    with pytest.raises(ValueError, match="config"):  # no run config: fails closed
        r._get_relevant_documents("deploy", run_manager=CallbackManagerForRetrieverRun.
                                  get_noop_manager(), filter={"project": "atlas"})


def test_a_fixed_namespace_retriever_takes_a_filter_too(bare):
    r = PoolSplitStoreRetriever(store=filtered_store(bare), namespace=NS, pools=POOLS, now=NOW)
    docs = r.invoke("deploy", filter={"project": "atlas"})
    assert [d.metadata["key"] for d in docs] == ["fix-atlas", "t-atlas"]


# --------------------------------------------------------------------------
# 7. Tenancy fails closed on the store's own reads
# --------------------------------------------------------------------------

SHARED = ("memories",)


def tenants(store):
    for user in ("ana", "bo"):
        store.put(SHARED, f"fix-{user}", {"content": f"{user}: deploy with just",
                                          "type": "correction", "scope": "always",
                                          "user_id": user})
        for i in range(3):
            store.put(SHARED, f"t-{user}-{i}", {"content": f"{user} deploy task {i}",
                                                "type": "task", "user_id": user})


def test_a_namespace_whose_items_carry_user_id_refuses_a_read_naming_no_user(bare):
    store = PoolSplitStore(bare)
    tenants(store)
    for call in (store.retrieve_pools, store.explain_pools):
        with pytest.raises(ValueError, match=r"\('memories',\).*'user_id'.*filter="):
            call(SHARED, POOLS, {"message": "deploy"}, now=NOW)
    got = store.retrieve_pools(SHARED, POOLS, {"message": "deploy"}, now=NOW,
                               filter={"user_id": "bo"})
    assert {i.value["user_id"] for items in got.values() for i in items} == {"bo"}
    assert got["always"][0].key == "fix-bo"
    explained = store.explain_pools(SHARED, POOLS, now=NOW, filter={"user_id": "ana"})
    assert {d.entry["user_id"] for d in explained.decisions} == {"ana"}
    with pytest.raises(ValueError, match="user_id must be a non-empty string"):
        store.retrieve_pools(SHARED, POOLS, now=NOW, filter={"user_id": False})


def test_one_item_carrying_user_id_is_enough_even_a_skipped_one(bare):
    bare.put(SHARED, "plain", {"content": "no user here", "type": "task"})
    bare.put(SHARED, "owned-bad", {"content": "x", "type": "task", "user_id": "ana",
                                   "token_count": 0})
    store = PoolSplitStore(bare)
    with pytest.raises(ValueError, match="user_id"):
        store.retrieve_pools(SHARED, POOLS, now=NOW)


def test_a_shared_store_is_declared_with_require_filter_keys_empty(bare):
    store = PoolSplitStore(bare, require_filter_keys=())
    tenants(store)
    got = store.retrieve_pools(SHARED, POOLS, {"message": "deploy"}, now=NOW)
    assert {i.value["user_id"] for items in got.values() for i in items} == {"ana", "bo"}
    narrowed = store.retrieve_pools(SHARED, POOLS, now=NOW, filter={"user_id": "ana"})
    assert {i.value["user_id"] for items in narrowed.values() for i in items} == {"ana"}


def test_required_keys_given_explicitly_are_required_even_when_no_item_carries_them(bare):
    store = PoolSplitStore(bare, require_filter_keys=("user_id",))
    seed(store)
    with pytest.raises(ValueError, match="user_id"):
        store.retrieve_pools(NS, POOLS, now=NOW)
    store2 = PoolSplitStore(bare, require_filter_keys=("org",))
    with pytest.raises(ValueError, match="'org'"):
        store2.retrieve_pools(NS, POOLS, now=NOW)


def test_a_namespace_without_user_ids_needs_no_filter(bare):
    store = PoolSplitStore(bare)
    seed(store)
    assert store.retrieve_pools(NS, POOLS, now=NOW)["always"][0].key == "fix"


def test_a_template_with_user_id_names_the_user(bare):
    store = PoolSplitStore(bare)
    seed(store)  # ana's namespace, items without user_id: hers
    store.put(NS, "owned", {"content": "deploy owned task", "type": "task", "user_id": "ana"})
    store.put(NS, "misfiled", {"content": "deploy misfiled task", "type": "task",
                               "user_id": "bo"})
    r = PoolSplitStoreRetriever(store=store, namespace=TEMPLATE, now=NOW,
                                pools=[Pool("all", 500, 20)])
    docs = r.invoke("deploy", {"configurable": {"user_id": "ana"}})
    got = [d.metadata["key"] for d in docs]
    assert got[0] == "fix" and "misfiled" not in got
    assert set(got) == {"fix", "owned", *(f"t{i}" for i in range(4)), *(f"n{i}" for i in range(4))}
    # The store's own read of the same namespace must name the user.
    with pytest.raises(ValueError, match="user_id"):
        store.retrieve_pools(NS, POOLS, now=NOW)
    own = keys(store.retrieve_pools(NS, POOLS, now=NOW, filter={"user_id": "ana"}))
    assert [k for ks in own.values() for k in ks] == ["owned"]


def test_a_fixed_namespace_retriever_over_user_ids_needs_a_filter(bare):
    store = PoolSplitStore(bare)
    tenants(store)
    r = PoolSplitStoreRetriever(store=store, namespace=SHARED, pools=POOLS, now=NOW)
    with pytest.raises(ValueError, match="user_id"):
        r.invoke("deploy")
    docs = r.invoke("deploy", filter={"user_id": "ana"})
    assert docs[0].metadata["key"] == "fix-ana"
    assert {d.metadata["user_id"] for d in docs} == {"ana"}


# --------------------------------------------------------------------------
# Property: whatever is written, and in whatever order, a full read holds
# exactly the good items, skips exactly the bad ones, and counts the users
# --------------------------------------------------------------------------

from hypothesis import example, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from tests.integrations.test_langgraph_store import entry_facts, ref_with_always_pool  # noqa: E402

PROPERTY_KEYS = ["k0", "k1", "k2"]
GOOD = st.fixed_dictionaries(
    {"content": st.sampled_from(["deploy the api", "release notes", "budget db"]),
     "type": st.sampled_from(["note", "task", "rule"])},
    optional={"scope": st.just("always")})
OWNED = st.builds(lambda value, user: {**value, "user_id": user}, GOOD,
                  st.sampled_from(["ana", "bo"]))
BROKEN = st.sampled_from([value for value, _ in BAD.values()])
WRITES = st.lists(st.one_of(
    st.tuples(st.just("put"), st.sampled_from(PROPERTY_KEYS),
              st.one_of(GOOD, GOOD, BROKEN, BROKEN, OWNED)),
    st.tuples(st.just("mine_put"), st.sampled_from(PROPERTY_KEYS), GOOD),
    st.tuples(st.just("delete"), st.sampled_from(PROPERTY_KEYS)),
    st.tuples(st.just("query"), st.sampled_from(["deploy", "notes budget", ""])),
), min_size=1, max_size=25)


@settings(max_examples=100, deadline=None)
@given(WRITES)
@example([("put", "k0", {"content": "deploy", "type": "note"}), ("query", "deploy"),
          ("put", "k0", BAD["scope"][0]), ("query", "deploy"),  # a good item turns bad
          ("put", "k0", {"content": "deploy", "type": "task"}), ("query", "deploy")])
@example([("put", "k1", BAD["prio"][0]), ("put", "k2", {"content": "x", "type": "task"}),
          ("query", ""), ("delete", "k1"), ("query", ""),  # a skipped item deleted
          ("put", "k2", {**BAD["count"][0], "user_id": "bo"}), ("query", "")])
def test_any_sequence_of_good_and_bad_writes_keeps_the_index_and_the_skipped_list_exact(steps):
    from langgraph.store.memory import InMemoryStore

    from poolsplit_core.checks import entry_problems
    from poolsplit_integrations._entries import item_to_entry

    bare = InMemoryStore()  # written around the wrapper, as another service would
    mine = PoolSplitStore(bare, refresh_interval=0, reconcile_interval=0)
    pools = [Pool("work", 12, 2, ("task",)), Pool("notes", 12, 2, ("note",))]
    for step in steps:
        if step[0] == "put":
            bare.put(NS, step[1], step[2])
        elif step[0] == "mine_put":
            mine.put(NS, step[1], step[2])
        elif step[0] == "delete":
            bare.delete(NS, step[1])
        else:
            stored = [item_to_entry(i.namespace, i.key, i.value, created_at=i.created_at)
                      for i in bare.search(NS, limit=100)]
            bad = {e["id"] for e in stored if entry_problems(e, "") or e.get("base_priority")
                   == "high"}
            good = [e for e in stored if e["id"] not in bad]
            context = {"message": step[1]}
            assert entry_facts(mine.entries(NS)) == entry_facts(good)
            if any("user_id" in e for e in stored):  # skipped ones count too
                with pytest.raises(ValueError, match="user_id"):
                    mine.retrieve_pools(NS, pools, context, now=NOW)
                got = mine.retrieve_pools(NS, pools, context, now=NOW, filter={"user_id": "ana"})
                assert {i.value["user_id"] for items in got.values() for i in items} <= {"ana"}
                good = [e for e in good if e.get("user_id") == "ana"]
                assert {i.key for items in got.values() for i in items
                        if i.value.get("scope") == "always"} == {
                    e["id"] for e in good if e.get("scope") == "always"}
                continue
            got = mine.retrieve_pools(NS, pools, context, now=NOW)
            entries = mine.entries(NS)
            assert entry_facts(entries) == entry_facts(good)
            assert keys(got) == {name: [e["id"] for e in picked] for name, picked in
                                 ref_with_always_pool(entries, pools, context, now=NOW).items()}
            skipped = mine.explain_pools(NS, pools, context, now=NOW).skipped
            assert {key for key, _ in skipped} == bad
