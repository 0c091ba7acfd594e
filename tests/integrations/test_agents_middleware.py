"""PoolSplitMemoryMiddleware inside a real ``create_agent`` agent, with a recording fake model.

The model is LangChain's ``GenericFakeChatModel``, subclassed to record every
request it receives and to call a tool when the human asks it to remember
something. Every test reads what the model was actually sent.
"""

from __future__ import annotations

import asyncio
import random
import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain.agents import create_agent
from langchain.tools import ToolRuntime, tool
from langchain_core.documents import Document
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langgraph.store.memory import InMemoryStore
from pydantic import Field
from typing_extensions import TypedDict

from poolsplit_core import AlwaysScopeOverflowError, Pool
from poolsplit_core.render import CORRECTIONS_HEADING
from poolsplit_integrations.agents import PoolSplitMemoryMiddleware
from poolsplit_integrations.langchain import PoolSplitRetriever
from poolsplit_integrations.langgraph import PoolSplitStore, PoolSplitStoreRetriever

NOW = datetime(2026, 11, 1, tzinfo=timezone.utc)
HEADING = f"## {CORRECTIONS_HEADING}"
WORDS = ["deploy", "api", "release", "staging", "database", "notes", "cache", "queue"]
POOLS = [Pool("work", 120, 4, ("task",)), Pool("facts", 80, 3, ("fact",))]


class RecordingModel(GenericFakeChatModel):
    """A fake chat model that records every request and calls ``remember`` when asked.

    A human message ``remember: TEXT`` gets a tool call ``remember(text=TEXT)``;
    anything else gets the answer ``"ok"``.
    """

    messages: Any = Field(default_factory=lambda: iter(()))
    requests: list[list[BaseMessage]] = Field(default_factory=list)

    def bind_tools(self, tools: Any, **kwargs: Any) -> RecordingModel:
        return self

    def _generate(self, messages: list[BaseMessage], stop: Any = None,
                  run_manager: Any = None, **kwargs: Any) -> Any:
        self.requests.append(list(messages))
        last = messages[-1]
        if isinstance(last, HumanMessage) and str(last.content).startswith("remember: "):
            text = str(last.content)[len("remember: "):]
            reply = AIMessage(content="", tool_calls=[
                {"name": "remember", "args": {"text": text}, "id": f"call-{len(self.requests)}"}])
        else:
            reply = AIMessage(content="ok")
        self.messages = iter([reply])
        return super()._generate(messages, stop, run_manager, **kwargs)


class UserContext(TypedDict, total=False):
    user_id: Any
    team: str
    org: str


@tool
def remember(text: str, runtime: ToolRuntime[UserContext]) -> str:
    """Remember a fact about the user."""
    user = runtime.context["user_id"]
    key = f"tool-{abs(hash(text))}"
    runtime.store.put(("memories", user), key, {"content": text, "type": "fact"})
    return "remembered"


def system_text(request: list[BaseMessage]) -> str:
    first = request[0]
    assert isinstance(first, SystemMessage), f"the request has no system message: {request}"
    return str(first.text)


def seeded_store(seed: int, users: tuple[str, ...] = ("ana",), n: int = 60, base: Any = None
                 ) -> tuple[PoolSplitStore, dict[str, list[str]]]:
    """A store of ``n`` memories per user over a small vocabulary, and each user's corrections."""
    rng = random.Random(seed)
    store = PoolSplitStore(InMemoryStore() if base is None else base)
    corrections: dict[str, list[str]] = {}
    for user in users:
        ns = ("memories", user)
        corrections[user] = []
        for i in range(n):
            words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 6)))
            if i % 10 == 0:
                text = f"{user} correction {i}: never {words}"
                store.put(ns, f"c{i}", {"content": text, "scope": "always", "type": "correction",
                                        "user_id": user})
                corrections[user].append(text)
                continue
            store.put(ns, f"m{i}", {
                "content": f"{user} memory {i}: {words}",
                "type": rng.choice(["task", "fact"]),
                "base_priority": rng.randint(1, 10), "user_id": user,
                "created": (NOW - timedelta(days=rng.randint(0, 90))).isoformat()})
    return store, corrections


def agent_over(store: Any, model: RecordingModel, **options: Any) -> Any:
    options.setdefault("pools", POOLS)
    options.setdefault("namespace", ("memories", "{user_id}"))
    memory = PoolSplitMemoryMiddleware(now=NOW, **options)
    return create_agent(model, [remember], system_prompt="You are Ana's assistant.",
                        middleware=[memory], store=store, context_schema=UserContext)


def invoke(agent: Any, state: dict[str, Any], context: Any, mode: str) -> dict[str, Any]:
    """One run of ``agent``: ``invoke``, or ``ainvoke`` in a fresh loop (mode ``async``)."""
    if mode == "async":
        return asyncio.run(agent.ainvoke(state, context=context))
    return agent.invoke(state, context=context)


def run(agent: Any, text: str, user: str | None, mode: str) -> dict[str, Any]:
    context = None if user is None else {"user_id": user}
    return invoke(agent, {"messages": [HumanMessage(text)]}, context, mode)


def assert_corrections_first(system: str, corrections: list[str]) -> None:
    """The system message opens with every correction, and nothing else, under its heading.

    In the order the store lists them, which SQLite leaves open for rows written in the
    same instant: the block is compared as a multiset.
    """
    assert system.startswith(HEADING + "\n"), system
    block = system.split("\n\n", 1)[0].splitlines()[1:]
    assert sorted(block) == sorted(f"- {text}" for text in corrections), system


MODES = ["sync", "async"]


# --------------------------------------------------------------------------
# What the model sees
# --------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_every_model_call_has_the_corrections_first_in_its_system_message(mode, seed):
    store, corrections = seeded_store(seed)
    model = RecordingModel()
    agent = agent_over(store, model)
    run(agent, "remember: the staging database is pg-2", "ana", mode)
    run(agent, "how do I deploy the api?", "ana", mode)
    assert len(model.requests) == 3  # tool call, answer after the tool, second turn
    for request in model.requests:
        system = system_text(request)
        assert_corrections_first(system, corrections["ana"])
        assert system.endswith("\n\nYou are Ana's assistant.")
        assert "## work\n" in system  # the pools follow, under their names


@pytest.mark.parametrize("mode", MODES)
def test_each_pool_stays_within_its_budget_in_the_system_message(mode):
    store, _ = seeded_store(7)
    model = RecordingModel()
    run(agent_over(store, model), "deploy the api release", "ana", mode)
    sections = dict(re.findall(r"## (\w+)\n((?:- .*\n?)*)", system_text(model.requests[0])))
    for pool in POOLS:
        lines = [line for line in sections[pool.name].splitlines() if line]
        assert 0 < len(lines) <= pool.max_entries
        cost = sum(store.token_counter(line[2:]) for line in lines)
        assert cost <= pool.max_tokens


@pytest.mark.parametrize("mode", MODES)
def test_the_state_messages_and_the_rest_of_the_request_are_left_as_they_were(mode):
    store, _ = seeded_store(4)
    model = RecordingModel()
    state = run(agent_over(store, model), "remember: the cache is redis", "ana", mode)
    assert not any(isinstance(m, SystemMessage) for m in state["messages"])
    assert [type(m).__name__ for m in state["messages"]] == [
        "HumanMessage", "AIMessage", "ToolMessage", "AIMessage"]
    # the model saw the state's messages, after one system message
    assert model.requests[-1][1:] == state["messages"][:-1]
    assert state["messages"][0].content == "remember: the cache is redis"


@pytest.mark.parametrize("mode", MODES)
def test_nothing_loaded_passes_the_request_on_unchanged(mode):
    store = PoolSplitStore(InMemoryStore())
    model = RecordingModel()
    run(agent_over(store, model), "hello", "ana", mode)
    assert system_text(model.requests[0]) == "You are Ana's assistant."


# --------------------------------------------------------------------------
# Freshness, tenancy, bursts
# --------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_a_memory_a_tool_writes_is_in_the_very_next_model_call(mode, bare_store):
    store, _ = seeded_store(5, base=bare_store)  # InMemoryStore, SqliteStore, PostgresStore
    model = RecordingModel()
    run(agent_over(store, model), "remember: the release train leaves at noon", "ana", mode)
    before, after = (system_text(request) for request in model.requests[:2])
    assert "the release train leaves at noon" not in before
    assert "- the release train leaves at noon" in after


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("namespace", [("memories", "{user_id}"), ("memories",)])
def test_two_users_through_one_agent_never_see_each_others_memories(mode, namespace,
                                                                     bare_store):
    store, corrections = seeded_store(11, users=("ana", "bo"), base=bare_store)
    model = RecordingModel()
    agent = agent_over(store, model, namespace=namespace)
    seen = {}
    for user in ("ana", "bo", "ana", "bo"):
        before = len(model.requests)
        run(agent, "deploy the api release notes", user, mode)
        seen[user] = [system_text(request) for request in model.requests[before:]]
    for user, other in (("ana", "bo"), ("bo", "ana")):
        for system in seen[user]:
            assert_corrections_first(system, corrections[user])
            assert f"- {other} " not in system
            assert f"- {user} memory" in system


@pytest.mark.parametrize("mode", MODES)
def test_every_correction_loads_after_a_burst_of_200_fresh_high_priority_memories(mode):
    store, corrections = seeded_store(13)
    for i in range(200):
        store.put(("memories", "ana"), f"burst{i}", {
            "content": f"ana burst {i}: deploy the api release", "type": "task",
            "base_priority": 10, "user_id": "ana", "created": NOW.isoformat()})
    model = RecordingModel()
    run(agent_over(store, model), "deploy the api release", "ana", mode)
    assert_corrections_first(system_text(model.requests[0]), corrections["ana"])


@pytest.mark.parametrize("mode", MODES)
def test_memories_naming_users_and_a_run_naming_none_is_refused_before_the_model(mode):
    store, _ = seeded_store(3)
    model = RecordingModel()
    agent = agent_over(store, model, namespace=("memories", "ana"))
    with pytest.raises(ValueError, match=r"context=\{'user_id': '<user_id>'\}"):
        run(agent, "deploy", None, mode)
    assert model.requests == []


@pytest.mark.parametrize("mode", MODES)
def test_a_template_variable_the_context_lacks_is_a_value_error_naming_context(mode):
    store, _ = seeded_store(3)
    model = RecordingModel()
    agent = agent_over(store, model, namespace=("memories", "{team}", "{user_id}"))
    with pytest.raises(ValueError, match=r"needs context\['team'\].*context=\{'team'"):
        run(agent, "deploy", "ana", mode)
    assert model.requests == []


@pytest.mark.parametrize("mode", MODES)
def test_a_key_the_store_requires_comes_from_the_context_or_the_run_is_refused(mode):
    store = PoolSplitStore(InMemoryStore(), require_filter_keys=("org",))
    for org in ("acme", "initech"):
        store.put(("memories", "ana"), f"t-{org}", {"content": f"{org} deploys the api",
                                                    "type": "task", "org": org})
    model = RecordingModel()
    agent = agent_over(store, model)
    with pytest.raises(ValueError, match=r"names \['org'\].*context=\{'org': '<org>'\}"):
        run(agent, "deploy", "ana", mode)
    assert model.requests == []
    state = {"messages": [HumanMessage("deploy")]}
    context = {"user_id": "ana", "org": "acme"}
    invoke(agent, state, context, mode)
    system = system_text(model.requests[0])
    assert "- acme deploys the api" in system and "initech" not in system


# --------------------------------------------------------------------------
# Options
# --------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_report_left_out_adds_a_line_to_each_pool_that_left_memories_out(mode):
    store, _ = seeded_store(17)
    quiet, loud = RecordingModel(), RecordingModel()
    run(agent_over(store, quiet), "deploy the api", "ana", mode)
    run(agent_over(store, loud, report_left_out=True), "deploy the api", "ana", mode)
    why = store.explain_pools(("memories", "ana"), POOLS, {"message": "deploy the api"},
                              filter={"user_id": "ana"}, now=NOW)
    plain, reported = system_text(quiet.requests[0]), system_text(loud.requests[0])
    assert "did not fit" not in plain
    for pool in POOLS:
        ledger = why.ledgers[pool.name]
        left = ledger.skipped_tokens + ledger.skipped_entries
        assert left > 0  # the seeded store is larger than every pool
        assert f"({left} more did not fit this pool's budget)" in reported
    # the same memories, the same order: only the lines saying what was left out are added
    assert [line for line in reported.splitlines() if "did not fit" not in line] == (
        plain.splitlines())


@pytest.mark.parametrize("mode", MODES)
def test_a_query_callable_chooses_what_the_memory_is_read_for(mode):
    store = PoolSplitStore(InMemoryStore())
    ns = ("memories", "ana")
    store.put(ns, "a", {"content": "the queue runs on rabbit", "type": "fact"})
    store.put(ns, "b", {"content": "the cache runs on redis", "type": "fact"})
    pools = [Pool("facts", 50, 1, ("fact",))]
    by_default, by_query = RecordingModel(), RecordingModel()
    run(agent_over(store, by_default, pools=pools), "what about the cache?", "ana", mode)
    run(agent_over(store, by_query, pools=pools, query=lambda state: "queue"),
        "what about the cache?", "ana", mode)
    assert "- the cache runs on redis" in system_text(by_default.requests[0])
    assert "- the queue runs on rabbit" in system_text(by_query.requests[0])
    # by default, the latest human message of the conversation, not the first
    later = RecordingModel()
    state = {"messages": [HumanMessage("what about the queue?"), AIMessage("rabbit"),
                          HumanMessage("and the cache?")]}
    agent = agent_over(store, later, pools=pools)
    invoke(agent, state, {"user_id": "ana"}, mode)
    assert "- the cache runs on redis" in system_text(later.requests[0])


@dataclass
class Ctx:
    user_id: str


@pytest.mark.parametrize("mode", MODES)
def test_a_dataclass_context_names_the_user(mode):
    store, corrections = seeded_store(19)
    model = RecordingModel()
    memory = PoolSplitMemoryMiddleware(POOLS, namespace=("memories", "{user_id}"), now=NOW)
    agent = create_agent(model, [], middleware=[memory], store=store, context_schema=Ctx)
    state = {"messages": [HumanMessage("deploy")]}
    invoke(agent, state, Ctx("ana"), mode)
    assert_corrections_first(system_text(model.requests[0]), corrections["ana"])


@pytest.mark.parametrize("mode", MODES)
def test_a_poolsplit_retriever_is_a_source_too(mode):
    docs = [Document("Never deploy on Friday.", id="c1",
                     metadata={"scope": "always", "user_id": "ana"}),
            Document("Deploy the api after the notes.", id="t1",
                     metadata={"type": "task", "user_id": "ana"}),
            Document("Bo deploys the queue.", id="t2", metadata={"type": "task", "user_id": "bo"})]
    retriever = PoolSplitRetriever(documents=docs, pools=[Pool("work", 50, 2, ("task",))])
    model = RecordingModel()
    memory = PoolSplitMemoryMiddleware(retriever=retriever, report_left_out=True)
    agent = create_agent(model, [], middleware=[memory], context_schema=UserContext)
    state = {"messages": [HumanMessage("deploy the api")]}
    invoke(agent, state, {"user_id": "ana"}, mode)
    assert system_text(model.requests[0]) == (
        f"{HEADING}\n- Never deploy on Friday.\n\n## work\n- Deploy the api after the notes.")
    with pytest.raises(ValueError, match=r"context=\{'user_id'"):
        agent.invoke(state)


@pytest.mark.parametrize("mode", MODES)
def test_a_retriever_source_reports_what_each_pool_left_out(mode):
    rng = random.Random(31)
    docs = [Document(f"ana task {i}: " + " ".join(rng.choice(WORDS) for _ in range(4)),
                     id=f"t{i}", metadata={"type": "task", "user_id": "ana"})
            for i in range(40)]
    docs.append(Document("Never deploy on Friday.", id="c1",
                         metadata={"scope": "always", "user_id": "ana"}))
    retriever = PoolSplitRetriever(documents=docs, pools=[Pool("work", 40, 3, ("task",))],
                                   now=NOW)
    model = RecordingModel()
    memory = PoolSplitMemoryMiddleware(retriever=retriever, report_left_out=True)
    agent = create_agent(model, [], middleware=[memory], context_schema=UserContext)
    state = {"messages": [HumanMessage("deploy the api")]}
    invoke(agent, state, {"user_id": "ana"}, mode)
    why = retriever.explain("deploy the api", {"configurable": {"user_id": "ana"}})
    ledger = why.ledgers["work"]
    loaded = [f"- {d.page_content}" for d in retriever.invoke(
        "deploy the api", {"configurable": {"user_id": "ana"}}) if d.id != "c1"]
    assert system_text(model.requests[0]) == "\n".join([
        HEADING, "- Never deploy on Friday.", "", "## work", *loaded,
        f"({ledger.skipped_tokens + ledger.skipped_entries} more did not fit this pool's"
        " budget)"])


@pytest.mark.parametrize("mode", MODES)
def test_a_store_retriever_source_fills_its_template_from_the_context(mode):
    store, corrections = seeded_store(37, users=("ana", "bo"))
    retriever = PoolSplitStoreRetriever(store=store, namespace=("memories", "{user_id}"),
                                        pools=POOLS, now=NOW)
    model = RecordingModel()
    agent = create_agent(model, [], middleware=[PoolSplitMemoryMiddleware(retriever=retriever)],
                         context_schema=UserContext)
    state = {"messages": [HumanMessage("deploy the api")]}
    for user in ("bo", "ana"):
        invoke(agent, state, {"user_id": user}, mode)
    for request, user in zip(model.requests, ("bo", "ana")):
        system = system_text(request)
        assert_corrections_first(system, corrections[user])
        assert f"- {user} memory" in system
        assert ("- ana " if user == "bo" else "- bo ") not in system


# --------------------------------------------------------------------------
# Bad input: clear errors, early
# --------------------------------------------------------------------------


@pytest.mark.parametrize(("kwargs", "error", "match"), [
    ({}, ValueError, "exactly one source"),
    ({"namespace": ("m", "{user_id}"), "retriever": object()}, ValueError, "exactly one source"),
    ({"namespace": ("m", "{user_id}"), "pools": None}, ValueError, "needs pools="),
    ({"namespace": "memories/{user_id}"}, TypeError, "tuple of str labels"),
    ({"namespace": ()}, TypeError, "tuple of str labels"),
    ({"retriever": "nope", "pools": None}, TypeError, "poolsplit retriever.*str"),
    ({"namespace": ("m",), "query": "latest"}, TypeError, "query must be a callable"),
    ({"namespace": ("m",), "report_left_out": 1}, TypeError, "report_left_out"),
    ({"namespace": ("m",), "max_always_tokens": -1}, ValueError, "max_always_tokens"),
    ({"namespace": ("m",), "context": {"projcet": "x"}}, ValueError, "projcet"),
    ({"namespace": ("m",), "pools": [{"name": "always", "max_tokens": 1, "max_entries": 1}]},
     ValueError, "'always'"),
    ({"namespace": ("m",), "now": "2026-01-01"}, TypeError, "now must be a datetime"),
])
def test_bad_arguments_are_refused_at_construction(kwargs, error, match):
    kwargs.setdefault("pools", POOLS)
    with pytest.raises(error, match=match):
        PoolSplitMemoryMiddleware(**kwargs)


@pytest.mark.parametrize("option", [{"pools": POOLS}, {"now": NOW}, {"max_always_tokens": 9},
                                    {"context": {"project": "atlas"}}])
def test_a_retriever_source_refuses_the_options_the_retriever_holds(option):
    retriever = PoolSplitRetriever(documents=[], pools=POOLS)
    with pytest.raises(ValueError, match=f"set {next(iter(option))}= on the retriever"):
        PoolSplitMemoryMiddleware(retriever=retriever, **option)


@pytest.mark.parametrize("store", [None, InMemoryStore()])
def test_an_agent_without_a_poolsplit_store_is_told_how_to_build_one(store):
    model = RecordingModel()
    agent = agent_over(store, model)
    with pytest.raises(TypeError, match=r"store=PoolSplitStore\("):
        agent.invoke({"messages": [HumanMessage("hi")]}, context={"user_id": "ana"})
    assert model.requests == []


@pytest.mark.parametrize("mode", MODES)
def test_an_always_tier_over_its_ceiling_raises_before_the_model(mode):
    store, _ = seeded_store(23)
    model = RecordingModel()
    with pytest.raises(AlwaysScopeOverflowError):
        run(agent_over(store, model, max_always_tokens=5), "deploy", "ana", mode)
    assert model.requests == []


def test_a_system_message_of_content_blocks_keeps_them_after_the_memory():
    store, corrections = seeded_store(29)
    model = RecordingModel()
    blocks = [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}]
    prompt = SystemMessage(content=blocks, id="sys-1")
    memory = PoolSplitMemoryMiddleware(POOLS, namespace=("memories", "{user_id}"), now=NOW)
    agent = create_agent(model, [], system_prompt=prompt, middleware=[memory], store=store,
                         context_schema=UserContext)
    agent.invoke({"messages": [HumanMessage("deploy")]}, context={"user_id": "ana"})
    sent = model.requests[0][0]
    assert sent.content[1:] == blocks and sent.id == "sys-1"
    assert_corrections_first(sent.content[0]["text"], corrections["ana"])
    assert prompt.content == blocks  # the agent's own prompt is not changed


def test_a_query_callable_that_returns_no_str_is_a_type_error():
    model = RecordingModel()
    agent = agent_over(PoolSplitStore(InMemoryStore()), model, query=lambda state: 3)
    with pytest.raises(TypeError, match="query\\(state\\) must return a str, got int 3"):
        agent.invoke({"messages": [HumanMessage("hi")]}, context={"user_id": "ana"})


@pytest.mark.parametrize("user", ["", "  ", 0])
def test_a_blank_user_in_the_context_is_refused(user):
    store, _ = seeded_store(2)
    agent = agent_over(store, RecordingModel())
    with pytest.raises(ValueError, match="non-empty string"):
        agent.invoke({"messages": [HumanMessage("hi")]}, context={"user_id": user})


# --------------------------------------------------------------------------
# Property: whatever the store, the system message keeps the promise
# --------------------------------------------------------------------------

memories = st.lists(st.fixed_dictionaries({
    "words": st.lists(st.sampled_from(WORDS), min_size=1, max_size=8),
    "type": st.sampled_from(["task", "fact", "note"]),
    "always": st.booleans(),
    "priority": st.integers(0, 10),
    "age": st.integers(0, 120),
}), max_size=60)


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(stored=memories, query=st.lists(st.sampled_from(WORDS), max_size=4))
def test_any_store_gives_every_correction_first_and_each_pool_within_budget(stored, query):
    store = PoolSplitStore(InMemoryStore())
    corrections = []
    for i, memory in enumerate(stored):
        text = f"memory {i}: {' '.join(memory['words'])}"
        value = {"content": text, "type": memory["type"], "base_priority": memory["priority"],
                 "created": (NOW - timedelta(days=memory["age"])).isoformat()}
        if memory["always"]:
            value["scope"] = "always"
            corrections.append(text)
        store.put(("memories", "ana"), f"k{i}", value)
    model = RecordingModel()
    run(agent_over(store, model), " ".join(query), "ana", "sync")
    system = system_text(model.requests[0])
    if corrections:
        assert_corrections_first(system, corrections)
    else:
        assert not system.startswith(HEADING)
    sections = dict(re.findall(r"^## (\w+)\n((?:- .*\n?)*)", system, re.M))
    for pool in POOLS:
        lines = [line for line in sections.get(pool.name, "").splitlines() if line]
        assert len(lines) <= pool.max_entries
        assert sum(store.token_counter(line[2:]) for line in lines) <= pool.max_tokens
    assert system.endswith("You are Ana's assistant.")
