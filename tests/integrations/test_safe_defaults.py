"""Every component built with no option set keeps the two promises.

- No query over a multi-user store is answered without a user, and none
  returns another user's memory: 1,000 seeded draws of users, per-call
  filters (none, narrowing, the same user, another user, blank ones, values
  that are no user at all) and config-bound users, on every component built
  with defaults. A memory without ``user_id`` in such a store is no user's.
- Every correction loads, of every type and of no type, under pools that do
  not list it: one no pool takes is returned under the pool ``always``.
- A store whose memories carry no ``user_id`` is one user's: it needs no user.
- ``require_filter_keys=()`` states a shared store: no user needed.
"""

from __future__ import annotations

import logging
import random
import re
from typing import Any

import pytest
from langchain_core.documents import Document
from langgraph.store.memory import InMemoryStore
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from poolsplit_core.poolsplit import Pool
from poolsplit_integrations import langchain as lc
from poolsplit_integrations import langgraph as lg
from poolsplit_integrations import llama_index as li
from poolsplit_integrations._tenancy import narrow
from tests.core.test_living_store import NOW, make_entry, matches
from tests.integrations.test_living_adapters import lc_doc, li_node
from tests.reference import ref_default_is_active, ref_retrieve_pools

from ._llamaindex_support import offline_llamaindex  # noqa: F401 -- the fixture

pytestmark = pytest.mark.usefixtures("offline_llamaindex")

#: Pools that list neither "correction" nor "note": corrections of those types
#: (and of no type) load under "always".
POOLS = [Pool("work", 60, 4, ("task",)), Pool("skills", 40, 2, ("skill",))]
USERS = ("ana", "bo", "cy")
WORDS = "rotate database deploy release notes memory budget pool db v2".split()
#: Values that name no user: each is refused wherever a user is named.
NO_USER = [None, "", "   ", False, 0, ["ana"]]


def expected_ids(store: list[dict[str, Any]], message: str,
                 where: dict[str, Any] | None) -> list[str]:
    """The reference in adapter order: the unpooled corrections, every pool's, the rest."""
    kept = [e for e in store if matches(where or {}, e)]
    got = ref_retrieve_pools(kept, POOLS, {"message": message}, now=NOW)
    loaded = {id(e) for picked in got.values() for e in picked}
    always = [e["id"] for p in POOLS for e in got[p.name] if e.get("scope") == "always"]
    unpooled = [e["id"] for e in kept if e.get("scope") == "always" and ref_default_is_active(e)
                and id(e) not in loaded]
    rest = [e["id"] for p in POOLS for e in got[p.name] if e.get("scope") != "always"]
    return unpooled + always + rest


def make_store(rng: random.Random, round_: int, size: int = 30) -> list[dict[str, Any]]:
    store = []
    for n in range(size):
        entry = make_entry(rng, f"r{round_}-{n}")
        entry["content"] = f"{entry['content']} #{n}"  # unique: a rendered line names its entry
        if rng.random() < 0.1:
            entry.pop("type", None)  # a note: no pool takes it
        # (a LangGraph item without "created" is dated by the store: give every entry one)
        entry.setdefault("created", NOW.isoformat())
        store.append(entry)
    return store


#: Per-call filters a draw picks from; "tenant" / "other" are filled in.
PER_CALL: list[Any] = [None, {}, {"type": "task"}, {"type": "correction"}, "tenant", "tenant",
                       "other", *({"user_id": bad} for bad in NO_USER)]
#: What the run's config names: nothing, the tenant, another user, or no user at all.
CONFIG: list[Any] = [None, "tenant", "tenant", "other", *NO_USER]
KINDS = ["lc-retriever", "lc-with-filter", "lc-compressor", "li-retriever",
         "li-postprocessor", "li-block", "lg-store", "lg-retriever"]


def fill(rng: random.Random, choice: Any, tenant: str) -> Any:
    if choice == "tenant":
        return tenant
    if choice == "other":
        return rng.choice([u for u in USERS if u != tenant])
    return choice


def draw_call(rng: random.Random, tenant: str) -> Any:
    choice = rng.choice(PER_CALL)
    if choice in ("tenant", "other"):
        return {"user_id": fill(rng, choice, tenant)}
    return choice


def names_user(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def expected_where(kind: str, tenant: str, call: Any, config: Any) -> dict[str, Any] | None:
    """The filter a call must serve, or None when it must be refused."""
    bound: dict[str, Any] | None = None
    if kind == "lc-with-filter":
        bound = {"user_id": tenant}
    layers = [bound, None if config is None else {"user_id": config}, call]
    if kind == "lg-retriever":  # the config's user fills the namespace ("users", "{user_id}")
        if not names_user(config):
            return None
        layers = [{"user_id": config}, call]
    elif kind not in ("lc-retriever", "lc-with-filter"):
        layers = [call]  # no config reaches these components
    try:
        where = narrow(None, *layers)
    except ValueError:
        return None  # a conflicting user
    if not where or "user_id" not in where or not names_user(where["user_id"]):
        return None  # no user, or a value that is no user
    return where


def run(kind: str, built: dict[str, Any], store: list[dict[str, Any]], tenant: str,
        call: Any, config: Any, message: str) -> list[str]:
    """One call on one component built with defaults; the loaded ids, in order."""
    cfg = None if config is None else {"configurable": {"user_id": config}}
    if kind == "lc-retriever":
        return [d.id or "" for d in built["lc"].invoke(message, config=cfg, filter=call)]
    if kind == "lc-with-filter":
        bound = built["lc"].with_filter({"user_id": tenant})
        return [d.id or "" for d in bound.invoke(message, config=cfg, filter=call)]
    if kind == "lc-compressor":
        compressor = lc.PoolSplitCompressor(pools=POOLS, pinned=built["pinned_docs"], now=NOW,
                                            filter=call)
        docs = [lc_doc(e) for e in store if e.get("scope") != "always"]
        return [d.id or "" for d in compressor.compress_documents(docs, message)]
    if kind == "li-retriever":
        return [h.node.node_id for h in built["li"].with_filter(call).retrieve(message)]
    if kind == "li-postprocessor":
        post = li.PoolSplitPostprocessor(pools=POOLS, pinned=built["pinned_nodes"], now=NOW,
                                         filter=call)
        candidates = [NodeWithScore(node=li_node(e), score=1.0)
                      for e in store if e.get("scope") != "always"]
        return [h.node.node_id for h in post.postprocess_nodes(candidates, QueryBundle(message))]
    if kind == "lg-store":  # one namespace holding every user's items
        got = built["lg"].retrieve_pools(("shared",), POOLS, {"message": message}, now=NOW,
                                         filter=call)
        order = {name: n for n, name in enumerate(got)}
        always = [(order[name], i.key) for name, items in got.items() for i in items
                  if i.value.get("scope") == "always"]
        rest = [(order[name], i.key) for name, items in got.items() for i in items
                if i.value.get("scope") != "always"]
        # adapter order: the corrections in the result's order ("always" first), then the picks
        return [key for _, key in sorted(always, key=lambda a: a[0])] + [
            key for _, key in rest]
    if kind == "lg-retriever":  # one namespace per user, filled from the run's config
        retriever = lg.PoolSplitStoreRetriever(store=built["lg"], namespace=("users", "{user_id}"),
                                               pools=POOLS, now=NOW)
        return [d.metadata["key"] for d in retriever.invoke(message, config=cfg, filter=call)]
    block = li.PoolSplitMemoryBlock(store=built["li"], pools=POOLS, now=NOW, filter=call)
    content_ids = {e.get("content", "").strip(): e["id"] for e in store}
    text = block.render(message)
    return [content_ids[line[2:]] for line in text.splitlines() if line.startswith("- ")]


def test_no_user_mixing_in_1000_random_draws_on_every_component_built_with_defaults(
        caplog: pytest.LogCaptureFixture) -> None:
    rng = random.Random(20261203)
    refused = served = unpooled_loaded = 0
    caplog.set_level(logging.ERROR, logger="poolsplit")
    for round_ in range(20):
        store = make_store(rng, round_)
        owner = {e["id"]: e.get("user_id") for e in store}
        built = {
            "lc": lc.PoolSplitRetriever(documents=[lc_doc(e) for e in store], pools=POOLS,
                                        now=NOW),
            "li": li.PoolSplitRetriever(nodes=[li_node(e) for e in store], pools=POOLS, now=NOW),
            "pinned_docs": [lc_doc(e) for e in store if e.get("scope") == "always"],
            "pinned_nodes": [li_node(e) for e in store if e.get("scope") == "always"],
            "lg": lg.PoolSplitStore(InMemoryStore()),
        }
        for e in store:
            value = {k: v for k, v in e.items() if k != "id"}
            built["lg"].put(("shared",), e["id"], value)
            if "user_id" in e:
                built["lg"].put(("users", e["user_id"]), e["id"], value)
        for _ in range(50):
            kind, tenant = rng.choice(KINDS), rng.choice(USERS)
            call, config = draw_call(rng, tenant), fill(rng, rng.choice(CONFIG), tenant)
            message = " ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 4)))
            where = expected_where(kind, tenant, call, config)
            if where is None:  # no user, a value that is no user, or two users: refused
                with pytest.raises(ValueError, match="user_id"):
                    run(kind, built, store, tenant, call, config, message)
                refused += 1
                continue
            got = run(kind, built, store, tenant, call, config, message)
            assert {owner[i] for i in got} <= {where["user_id"]}, (kind, tenant, call, config)
            assert got == expected_ids(store, message, where), (kind, call, config)
            unpooled_loaded += sum(
                1 for i in got if next(e for e in store if e["id"] == i).get("type", "note")
                in ("note", "correction"))
            served += 1
    assert served + refused == 1000
    assert served > 150 and refused > 300
    assert unpooled_loaded > 50  # corrections of no pool's type did load


@pytest.mark.parametrize("entry_type", ["correction", "note", "skill", "task", "episode", None])
def test_a_correction_of_every_type_loads_under_pools_that_do_not_list_it(
        entry_type: str | None) -> None:
    meta: dict[str, Any] = {"scope": "always"}
    if entry_type is not None:
        meta["type"] = entry_type
    fix = Document(id="fix", page_content="Never force-push to main.", metadata=meta)
    other = Document(id="t", page_content="Push the hotfix.", metadata={"type": "task"})
    pools = [Pool("skills", 10, 1, ("skill",))]
    docs = lc.PoolSplitRetriever(documents=[fix, other], pools=pools, now=NOW).invoke("push")
    assert [d.id for d in docs] == ["fix"]
    pooled = "skills" if entry_type == "skill" else "always"
    assert docs[0].metadata["poolsplit_pool"] == pooled
    assert docs[0].metadata["poolsplit_always"] is True
    hits = li.PoolSplitRetriever(
        nodes=[TextNode(id_="fix", text=fix.page_content, metadata=meta)],
        pools=pools, now=NOW).retrieve("push")
    assert [(h.node.node_id, h.node.metadata["poolsplit_pool"]) for h in hits] == [
        ("fix", pooled)]
    block = li.PoolSplitMemoryBlock(store=[{"id": "fix", "content": fix.page_content, **meta}],
                                    pools=pools, now=NOW)
    assert "Never force-push to main." in block.render("push")
    why = lc.PoolSplitRetriever(documents=[fix], pools=pools, now=NOW).explain("push")
    assert [(d.outcome, d.pool) for d in why.decisions] == [("always", pooled)]
    assert why.ledgers[pooled].always == 1


def test_a_store_without_users_needs_no_user_and_ignores_the_run_s_user() -> None:
    docs = [Document(id="a", page_content="deploy notes", metadata={"type": "task"}),
            Document(id="f", page_content="never deploy friday", metadata={"scope": "always"})]
    retriever = lc.PoolSplitRetriever(documents=docs, pools=POOLS, now=NOW)
    assert [d.id for d in retriever.invoke("deploy")] == ["f", "a"]
    config = {"configurable": {"user_id": "bo"}}  # a graph's run names a user: still its store
    assert [d.id for d in retriever.invoke("deploy", config=config)] == ["f", "a"]
    # the first memory that carries a user makes it a multi-user store: fail closed
    retriever.add_documents([Document(id="b", page_content="deploy", metadata={"user_id": "bo",
                                                                                "type": "task"})])
    with pytest.raises(ValueError, match="user_id"):
        retriever.invoke("deploy")
    assert [d.id for d in retriever.invoke("deploy", config=config)] == ["b"]


def test_a_shared_store_is_stated_with_require_filter_keys_empty() -> None:
    docs = [Document(id=u, page_content="deploy", metadata={"user_id": u, "type": "task"})
            for u in USERS]
    shared = lc.PoolSplitRetriever(documents=docs, pools=POOLS, now=NOW, require_filter_keys=())
    assert sorted(d.id for d in shared.invoke("deploy")) == sorted(USERS)
    assert [d.id for d in shared.invoke("deploy", filter={"user_id": "bo"})] == ["bo"]
    nodes = [TextNode(id_=u, text="deploy", metadata={"user_id": u, "type": "task"})
             for u in USERS]
    li_shared = li.PoolSplitRetriever(nodes=nodes, pools=POOLS, require_filter_keys=())
    assert sorted(h.node.node_id for h in li_shared.retrieve("deploy")) == sorted(USERS)


def test_memories_without_a_user_in_a_multi_user_store_are_no_one_s_and_said_once(
        caplog: pytest.LogCaptureFixture) -> None:
    docs = [Document(id="ana", page_content="deploy", metadata={"user_id": "ana", "type": "task"}),
            Document(id="nobody", page_content="deploy", metadata={"type": "task"}),
            Document(id="nobody-fix", page_content="deploy", metadata={"scope": "always"})]
    retriever = lc.PoolSplitRetriever(documents=docs, pools=POOLS, now=NOW)
    with caplog.at_level(logging.WARNING, logger="poolsplit"):
        for _ in range(3):
            assert [d.id for d in retriever.invoke("deploy", filter={"user_id": "ana"})] == [
                "ana"]
    said = [r for r in caplog.records if "carry no 'user_id'" in r.getMessage()]
    assert len(said) == 1 and "2 memories" in said[0].getMessage()


@pytest.mark.parametrize("bad", NO_USER)
def test_a_value_that_is_no_user_is_refused_in_every_place_a_user_is_named(bad: Any) -> None:
    docs = [Document(id=u, page_content="deploy", metadata={"user_id": u}) for u in USERS]
    retriever = lc.PoolSplitRetriever(documents=docs, pools=POOLS, now=NOW)
    with pytest.raises(ValueError, match="user_id"):
        retriever.invoke("deploy", filter={"user_id": bad})
    with pytest.raises(ValueError, match="user_id"):
        retriever.invoke("deploy", config={"configurable": {"user_id": bad}})
    with pytest.raises(ValueError, match="user_id"):
        retriever.with_filter({"user_id": bad})
    nodes = li.PoolSplitRetriever(
        nodes=[TextNode(id_=u, text="deploy", metadata={"user_id": u}) for u in USERS],
        pools=POOLS)
    with pytest.raises(ValueError, match="user_id"):
        nodes.with_filter({"user_id": bad})


def test_a_query_naming_no_user_is_refused_with_a_message_that_says_how() -> None:
    docs = [Document(id=u, page_content="deploy", metadata={"user_id": u}) for u in USERS]
    retriever = lc.PoolSplitRetriever(documents=docs, pools=POOLS, now=NOW)
    with pytest.raises(ValueError) as caught:
        retriever.invoke("deploy")
    text = str(caught.value)
    # what is missing, each way this component's caller names a user, and the way out
    assert text.startswith("this PoolSplitRetriever requires a filter on ['user_id']; its"
                           " filter {} lacks ['user_id']; ")
    for way in ("filter={'user_id': '<user>'}", "config={'configurable': {'user_id': '<user>'}}",
                "with_filter(", "require_filter_keys=()"):
        assert way in text, way
    assert "\n" not in text and len(text) < 300, (len(text), text)


def test_each_component_says_its_own_ways_to_name_a_user_briefly() -> None:
    docs = [Document(id=u, page_content="deploy", metadata={"user_id": u}) for u in USERS]
    nodes = [TextNode(id_=u, text="deploy", metadata={"user_id": u}) for u in USERS]
    shared = li.PoolSplitRetriever(nodes=nodes, pools=POOLS, now=NOW)
    calls = {  # component: (the refused call, the way it names a user)
        "lc-compressor": (lambda: lc.PoolSplitCompressor(pools=POOLS, pinned=docs, now=NOW)
                          .compress_documents([], "deploy"), "build it with filter="),
        "li-retriever": (lambda: shared.retrieve("deploy"), "with_filter({'user_id': '<user>'})"),
        "li-postprocessor": (lambda: li.PoolSplitPostprocessor(pools=POOLS, pinned=nodes, now=NOW)
                             .postprocess_nodes([], query_str="deploy"), "build it with filter="),
        "li-block": (lambda: li.PoolSplitMemoryBlock(store=shared, pools=POOLS, now=NOW),
                     "store=retriever.with_filter({'user_id': '<user>'})"),
    }
    for kind, (call, way) in calls.items():
        with pytest.raises(ValueError) as caught:
            call()
        # (a refusal at construction comes inside pydantic's ValidationError: its line)
        found = re.search(r"this \w+ requires a filter.*?(?= \[type=|$)", str(caught.value),
                          re.M)
        assert found, (kind, str(caught.value))
        said = found.group(0)
        assert way in said and "require_filter_keys=()" in said, (kind, said)
        assert "configurable" not in said, (kind, said)  # no config reaches these calls
        assert len(said) < 300, (kind, len(said), said)


def test_an_empty_pool_list_loads_only_corrections_as_the_core_does_with_always_pool(
        caplog: pytest.LogCaptureFixture) -> None:
    from poolsplit_core import retrieve_pools

    entries = [{"id": "f", "scope": "always", "content": "never deploy friday"},
               {"id": "t", "type": "task", "content": "deploy"}]
    docs = [Document(id=e["id"], page_content=e["content"],
                     metadata={k: v for k, v in e.items() if k not in ("id", "content")})
            for e in entries]
    with caplog.at_level(logging.WARNING, logger="poolsplit"):
        retriever = lc.PoolSplitRetriever(documents=docs, pools=[], now=NOW)
    assert any("no pool: only corrections" in r.getMessage() for r in caplog.records)
    got = retriever.invoke("deploy")
    core = retrieve_pools(entries, [], {"message": "deploy"}, now=NOW, always_pool=True)
    assert [(d.id, d.metadata["poolsplit_pool"]) for d in got] == [
        (e["id"], name) for name, picked in core.items() for e in picked] == [("f", "always")]
    assert retrieve_pools(entries, [], {"message": "deploy"}, now=NOW) == {}  # spec: opt-in


def test_a_pool_named_always_is_refused_at_construction() -> None:
    with pytest.raises(ValueError, match="'always'"):
        lc.PoolSplitRetriever(documents=[], pools=[Pool("always", 10, 1)])
    with pytest.raises(ValueError, match="'always'"):
        li.PoolSplitRetriever(nodes=[], pools=[Pool("always", 10, 1)])


def test_vector_store_sources_built_with_defaults_need_a_user_and_serve_only_theirs() -> None:
    from tests.integrations.test_langchain_vector_store import QUERY as LC_QUERY
    from tests.integrations.test_langchain_vector_store import in_memory
    from tests.integrations.test_langchain_vector_store import memory as lc_memory
    from tests.integrations.test_llamaindex_vector_store import QUERY as LI_QUERY
    from tests.integrations.test_llamaindex_vector_store import in_memory_index
    from tests.integrations.test_llamaindex_vector_store import memory as li_memory

    pools = [Pool("skills", 200, 2, types=("skill",))]  # no pool takes the corrections
    lc_source = lc.PoolSplitRetriever.from_vector_store(in_memory(lc_memory(("ana", "ben"))),
                                                        pools=pools, now=NOW)
    with pytest.raises(ValueError, match="user_id"):
        lc_source.invoke(LC_QUERY)
    got = lc_source.invoke(LC_QUERY, config={"configurable": {"user_id": "ben"}})
    assert got and {d.metadata["user_id"] for d in got} == {"ben"}
    assert [d.metadata["poolsplit_pool"] for d in got if d.metadata.get("scope") == "always"] == [
        "always"]
    li_source = li.PoolSplitRetriever.from_vector_store(in_memory_index(li_memory(("ana", "ben"))),
                                                        pools=pools, now=NOW)
    with pytest.raises(ValueError, match="user_id"):
        li_source.retrieve(LI_QUERY)
    hits = li_source.with_filter({"user_id": "ana"}).retrieve(LI_QUERY)
    assert hits and {h.node.metadata["user_id"] for h in hits} == {"ana"}
    assert {h.node.metadata["poolsplit_pool"] for h in hits
            if h.node.metadata.get("scope") == "always"} == {"always"}
