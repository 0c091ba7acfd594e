"""PoolSplitRetriever: the standard LangChain suite, chains, runnables, tracing, the core."""

from __future__ import annotations

import copy
import re
import sys
import textwrap
from datetime import datetime, timezone
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models.fake_chat_models import ParrotFakeChatModel
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnablePassthrough
from langchain_core.vectorstores import InMemoryVectorStore
from langchain_tests.integration_tests import RetrieversIntegrationTests
from pydantic import ValidationError

from poolsplit_core.poolsplit import Pool, default_scorer, retrieve_pools
from poolsplit_integrations.langchain import PoolSplitCompressor, PoolSplitRetriever

NOW = datetime(2026, 3, 1, tzinfo=timezone.utc)
POOLS = [
    Pool("rules", max_tokens=120, max_entries=3, types=("correction", "task")),
    Pool("skills", max_tokens=80, max_entries=2, types=("skill",)),
    Pool("notes", max_tokens=80, max_entries=2),
]
CORRECTION = "Never deploy on Friday without a rollback plan."


def make_store() -> list[Document]:
    """A small mixed store: one correction, tasks, skills, notes."""
    return [
        Document(id="fix-friday", page_content=CORRECTION,
                 metadata={"type": "correction", "scope": "always",
                           "created": "2025-06-01T00:00:00Z"}),
        Document(id="t-release", page_content="Deploy the release after the schema migration.",
                 metadata={"type": "task", "base_priority": 8, "project": "atlas",
                           "tags": ["deploy"], "created": "2026-02-20T00:00:00Z"}),
        Document(id="t-index", page_content="Rebuild the search index.",
                 metadata={"type": "task", "base_priority": 6, "project": "zeus"}),
        Document(id="s-bisect", page_content="Use git bisect run to find the bad deploy.",
                 metadata={"type": "skill", "base_priority": 3}),
        Document(id="s-rollback", page_content="Roll back with the previous image tag.",
                 metadata={"type": "skill", "base_priority": 4, "tags": ["deploy"]}),
        Document(id="n-cache", page_content="The cache warms up in ten minutes after a deploy.",
                 metadata={"type": "note", "base_priority": 2}),
        Document(id="n-retired", page_content="Deploy with the old script.",
                 metadata={"type": "note", "status": "retired"}),
    ]


def ids(docs: list[Document]) -> list[str | None]:
    return [d.id for d in docs]


def make_retriever(**kwargs: Any) -> PoolSplitRetriever:
    params: dict[str, Any] = {"documents": make_store(), "pools": POOLS, "now": NOW}
    params.update(kwargs)
    return PoolSplitRetriever(**params)


# --------------------------------------------------------------------------
# The standard suite
# --------------------------------------------------------------------------

_STANDARD_DOCS = [
    Document(id=f"doc-{i}", page_content=f"Deploy note {i}: check the release dashboard.",
             metadata={"type": kind, "base_priority": i % 5})
    for i, kind in enumerate(["task", "skill", "note", "task", "skill", "note", "note"])
]


# pytest-asyncio runs in strict mode here and the suite's async test carries
# no marker of its own, so the class carries it; its sync tests would each get
# a "marked with asyncio but not async" warning, which says nothing about the
# retriever and is filtered for this class only.
@pytest.mark.asyncio
@pytest.mark.filterwarnings("ignore:The test <Function .*is marked with '@pytest.mark.asyncio'")
class TestPoolSplitRetrieverStandard(RetrieversIntegrationTests):
    """The langchain-tests retriever suite, unmodified.

    The store has no always-scope document: ``k`` caps the contextual
    documents only, so with a correction in the store ``invoke(q, k=1)``
    returns the correction plus one (see ``test_k_never_cuts_always_scope``).
    """

    @property
    def retriever_constructor(self) -> type[BaseRetriever]:
        return PoolSplitRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"documents": _STANDARD_DOCS, "pools": POOLS, "now": NOW}

    @property
    def retriever_query_example(self) -> str:
        return "release dashboard"


# --------------------------------------------------------------------------
# Output shape and order
# --------------------------------------------------------------------------


def test_always_scope_first_then_pools_in_order() -> None:
    docs = make_retriever().invoke("deploy the release")
    assert docs[0].id == "fix-friday"
    assert docs[0].metadata["poolsplit_always"] is True
    assert docs[0].metadata["poolsplit_score"] is None
    pools = [d.metadata["poolsplit_pool"] for d in docs]
    assert pools == sorted(pools, key=["rules", "skills", "notes"].index)
    assert set(pools) == {"rules", "skills", "notes"}
    assert "n-retired" not in ids(docs)
    for doc in docs[1:]:
        assert doc.metadata["poolsplit_always"] is False
        assert isinstance(doc.metadata["poolsplit_score"], float)


def test_returned_documents_keep_id_text_and_metadata() -> None:
    store = {d.id: d for d in make_store()}
    for doc in make_retriever().invoke("deploy"):
        original = store[doc.id]
        assert doc.page_content == original.page_content
        extra = {k: v for k, v in doc.metadata.items() if not k.startswith("poolsplit_")}
        assert extra == original.metadata


class _TracedDocument(Document):
    """A user's own Document class, with a field of its own."""

    trace_id: str = ""


def test_a_returned_document_is_a_copy_of_its_stored_one_which_stays_untouched() -> None:
    stored = [_TracedDocument(page_content=d.page_content, id=d.id, metadata=dict(d.metadata),
                              trace_id=f"t-{d.id}") for d in make_store()]
    before = copy.deepcopy(stored)
    got = PoolSplitRetriever(documents=stored, pools=POOLS, now=NOW,
                             require_filter_keys=()).invoke("deploy")
    assert got
    by_id = {d.id: d for d in stored}
    for doc in got:
        assert type(doc) is _TracedDocument and doc.trace_id == f"t-{doc.id}"
        assert doc is not by_id[doc.id] and doc.metadata is not by_id[doc.id].metadata
        assert "poolsplit_pool" in doc.metadata
    assert stored == before  # no poolsplit_* key written into a stored Document


def test_k_never_cuts_always_scope() -> None:
    docs = make_retriever(k=0).invoke("deploy")
    assert ids(docs) == ["fix-friday"]
    docs = make_retriever().invoke("deploy", k=2)
    assert ids(docs)[0] == "fix-friday"
    assert len(docs) == 3


def test_k_fills_pools_round_robin() -> None:
    docs = make_retriever(k=3).invoke("deploy the release")
    # One per pool before any pool gets a second.
    assert [d.metadata["poolsplit_pool"] for d in docs[1:]] == ["rules", "skills", "notes"]


def test_per_call_project_and_tags_override_the_default_context() -> None:
    retriever = make_retriever(context={"project": "atlas"})
    default = retriever.invoke("rebuild", k=1)
    assert ids(default)[1] == "t-release"  # atlas x1.5, zeus x0.5
    zeus = retriever.invoke("rebuild", project="zeus", k=1)
    assert ids(zeus)[1] == "t-index"
    tagged = retriever.invoke("rollback", tags=["deploy"])
    skills = [d for d in tagged if d.metadata["poolsplit_pool"] == "skills"]
    assert ids(skills)[0] == "s-rollback"


def test_an_assigned_option_is_seen_and_the_documents_are_written_through_the_retriever() -> None:
    retriever = make_retriever()
    retriever.k = 0
    assert ids(retriever.invoke("deploy")) == ["fix-friday"]
    with pytest.raises(ValidationError, match="frozen"):
        retriever.documents = make_store()[:1]
    with pytest.raises(TypeError, match=r"documents is read-only.*add_documents"):
        retriever.documents.append(make_store()[0])  # type: ignore[attr-defined]
    with pytest.raises(ValidationError, match="k must be"):
        retriever.k = -1


def test_unknown_invoke_keyword_is_an_error() -> None:
    with pytest.raises(TypeError, match=r"unexpected keyword argument\(s\) \['top_k'\]"):
        make_retriever().invoke("deploy", top_k=2)


def test_empty_store_returns_nothing() -> None:
    assert PoolSplitRetriever(pools=POOLS, require_filter_keys=()).invoke("anything") == []


# --------------------------------------------------------------------------
# In a chain: the correction comes first, even under a burst
# --------------------------------------------------------------------------


def _chain(retriever: PoolSplitRetriever) -> Any:
    def format_docs(docs: list[Document]) -> str:
        return "\n".join(f"- {d.page_content}" for d in docs)

    prompt = ChatPromptTemplate.from_template("Memory:\n{context}\n\nQuestion: {question}")
    return (
        {"context": retriever | format_docs, "question": RunnablePassthrough()}
        | prompt
        | ParrotFakeChatModel()  # echoes the rendered prompt
        | StrOutputParser()
    )


def _burst(n: int) -> list[Document]:
    return [
        Document(id=f"burst-{i}",
                 page_content=f"Deploy on Friday: release train {i} is ready to deploy now.",
                 metadata={"type": "correction", "base_priority": 10,
                           "tags": ["deploy"], "created": NOW.isoformat()})
        for i in range(n)
    ]


def _memory_lines(rendered: str) -> list[str]:
    return [line[2:] for line in rendered.splitlines() if line.startswith("- ")]


def test_chain_prompt_shows_correction_first() -> None:
    rendered = _chain(make_retriever()).invoke("Can we deploy the release on Friday?")
    assert rendered.startswith("Memory:\n- " + CORRECTION)
    assert rendered.endswith("Question: Can we deploy the release on Friday?")


def test_chain_prompt_shows_correction_first_under_a_burst_of_200() -> None:
    store = make_store() + _burst(200)
    rendered = _chain(make_retriever(documents=store)).invoke("Deploy the release on Friday?")
    lines = _memory_lines(rendered)
    assert lines[0] == CORRECTION
    # The burst is real: it takes every contextual slot of the rules pool.
    assert all(line.startswith("Deploy on Friday: release train") for line in lines[1:4])
    assert "Deploy the release after the schema migration." not in lines


def test_without_always_scope_the_burst_crowds_the_correction_out() -> None:
    # The control for the test above: the same store with the correction's
    # scope removed loses it, so the guarantee comes from always-scope.
    store = make_store() + _burst(200)
    store[0] = Document(id=store[0].id, page_content=CORRECTION,
                        metadata={k: v for k, v in store[0].metadata.items() if k != "scope"})
    rendered = _chain(make_retriever(documents=store)).invoke("Deploy the release on Friday?")
    assert CORRECTION not in rendered


# --------------------------------------------------------------------------
# The Runnable interface
# --------------------------------------------------------------------------

QUERIES = ["deploy the release", "rebuild the search index", "cache", ""]


def test_batch_equals_invoke() -> None:
    retriever = make_retriever(base_retriever=_vector_retriever())
    expected = [retriever.invoke(q) for q in QUERIES]
    assert retriever.batch(QUERIES) == expected
    assert all(expected)


@pytest.mark.asyncio
async def test_ainvoke_and_abatch_equal_invoke() -> None:
    retriever = make_retriever(base_retriever=_vector_retriever())
    expected = [retriever.invoke(q) for q in QUERIES]
    assert [await retriever.ainvoke(q) for q in QUERIES] == expected
    assert await retriever.abatch(QUERIES) == expected
    assert await retriever.ainvoke("deploy", k=1) == retriever.invoke("deploy", k=1)


@pytest.mark.filterwarnings("ignore:This API is in beta")  # as_tool is a beta API
def test_as_tool_returns_the_same_documents() -> None:
    retriever = make_retriever()
    tool = retriever.as_tool(name="memory", description="Look up the agent's memory.")
    assert tool.invoke("deploy the release") == retriever.invoke("deploy the release")


# --------------------------------------------------------------------------
# Tracing: callbacks and the base retriever's child run
# --------------------------------------------------------------------------


class Recorder(BaseCallbackHandler):
    """Records retriever runs: (event, run_id, parent_run_id, payload)."""

    def __init__(self) -> None:
        self.events: list[tuple[str, Any, Any, Any]] = []

    def on_retriever_start(self, serialized: Any, query: str, *, run_id: Any,
                           parent_run_id: Any = None, **kwargs: Any) -> None:
        self.events.append(("start", run_id, parent_run_id, query))

    def on_retriever_end(self, documents: Any, *, run_id: Any,
                         parent_run_id: Any = None, **kwargs: Any) -> None:
        self.events.append(("end", run_id, parent_run_id, documents))


def _vector_retriever(k: int = 3) -> BaseRetriever:
    """A vector store that holds the tasks and skills, but not the correction."""
    vectors = InMemoryVectorStore(DeterministicFakeEmbedding(size=16))
    vectors.add_documents([
        *make_store()[1:5],
        Document(id="v-extra", page_content="Deploy checklist lives in the wiki.",
                 metadata={"type": "note", "base_priority": 9}),
    ])
    return vectors.as_retriever(search_kwargs={"k": k})


def test_callbacks_see_start_and_end_with_our_documents() -> None:
    recorder = Recorder()
    retriever = make_retriever()
    docs = retriever.invoke("deploy", config={"callbacks": [recorder]})
    assert [e[0] for e in recorder.events] == ["start", "end"]
    (_, start_id, parent, query), (_, end_id, _, ended) = recorder.events
    assert start_id == end_id and parent is None and query == "deploy"
    assert ended == docs and ended[0].id == "fix-friday"


def _assert_base_run_is_our_child(recorder: Recorder, docs: list[Document]) -> None:
    starts = [e for e in recorder.events if e[0] == "start"]
    ends = {e[1]: e for e in recorder.events if e[0] == "end"}
    assert len(starts) == 2
    ours, child = starts
    assert ours[2] is None
    assert child[2] == ours[1]  # parent_run_id of the base retriever's run
    assert ends[ours[1]][3] == docs
    assert all("poolsplit_pool" not in d.metadata for d in ends[child[1]][3])


def test_base_retriever_run_is_a_child_of_ours() -> None:
    recorder = Recorder()
    docs = make_retriever(base_retriever=_vector_retriever()).invoke(
        "deploy", config={"callbacks": [recorder]})
    _assert_base_run_is_our_child(recorder, docs)


@pytest.mark.asyncio
async def test_base_retriever_run_is_a_child_of_ours_async() -> None:
    recorder = Recorder()
    docs = await make_retriever(base_retriever=_vector_retriever()).ainvoke(
        "deploy", config={"callbacks": [recorder]})
    _assert_base_run_is_our_child(recorder, docs)


# --------------------------------------------------------------------------
# base_retriever: merging and duplicates
# --------------------------------------------------------------------------


def test_base_retriever_candidates_join_and_correction_stays_first() -> None:
    docs = make_retriever(documents=make_store()[:1],
                          base_retriever=_vector_retriever(k=5)).invoke("deploy")
    assert docs[0].id == "fix-friday"
    assert "v-extra" in ids(docs)


def test_candidates_duplicating_the_store_by_id_are_kept_once() -> None:
    # The vector store returns copies of store documents (same ids).
    docs = make_retriever(base_retriever=_vector_retriever(k=5)).invoke("deploy")
    assert len(ids(docs)) == len(set(ids(docs)))


class _Fixed(BaseRetriever):
    """Returns the same documents for every query."""

    docs: list[Document]

    def _get_relevant_documents(self, query: str, **kwargs: Any) -> list[Document]:
        return [Document(id=d.id, page_content=d.page_content, metadata=dict(d.metadata))
                for d in self.docs]


def test_candidates_without_id_dedupe_by_content_and_metadata() -> None:
    same = Document(page_content="Deploy notes.", metadata={"type": "note", "tags": ["a"]})
    other = Document(page_content="Deploy notes.", metadata={"type": "note", "tags": ["b"]})
    pools = [Pool("all", max_tokens=100, max_entries=10)]
    retriever = PoolSplitRetriever(documents=[same], pools=pools, now=NOW,
                                   base_retriever=_Fixed(docs=[same, same, other]),
                                   require_filter_keys=())
    docs = retriever.invoke("deploy")
    assert sorted(d.metadata["tags"][0] for d in docs) == ["a", "b"]


# --------------------------------------------------------------------------
# Never mutating the caller's documents
# --------------------------------------------------------------------------


def _snapshot(docs: list[Document]) -> list[Any]:
    return [(d.id, d.page_content, copy.deepcopy(d.metadata)) for d in docs]


@pytest.mark.asyncio
async def test_no_input_document_is_mutated() -> None:
    store = make_store() + _burst(5)
    before = _snapshot(store)
    candidates = [*make_store()[1:], Document(page_content="x", metadata={"score": 0.5})]
    candidates_before = _snapshot(candidates)
    retriever = PoolSplitRetriever(documents=store, pools=POOLS, now=NOW,
                                   base_retriever=_Fixed(docs=candidates), require_filter_keys=())
    out = retriever.invoke("deploy") + await retriever.ainvoke("deploy", k=1)
    out += retriever.batch(["release", "cache"])[0]
    compressor = PoolSplitCompressor(pinned=store[:1], pools=POOLS, now=NOW, require_filter_keys=())
    out += list(compressor.compress_documents(candidates, "deploy"))
    assert _snapshot(store) == before
    assert _snapshot(candidates) == candidates_before
    inputs = {id(d) for d in store + candidates} | {id(d.metadata) for d in store + candidates}
    assert not any(id(d) in inputs or id(d.metadata) in inputs for d in out)


# --------------------------------------------------------------------------
# Property: the retriever returns what the core's retrieve_pools selects
# --------------------------------------------------------------------------

TYPES = ["correction", "task", "skill", "note"]
WORDS = ["deploy", "friday", "rollback", "release", "schema", "index", "cache", "budget"]
TAGS = ["ops", "db", "deploy"]

entry_fields = st.fixed_dictionaries(
    {"content": st.lists(st.sampled_from(WORDS), max_size=6).map(" ".join)},
    optional={
        "type": st.sampled_from(TYPES),
        "scope": st.sampled_from(["always", "contextual"]),
        "base_priority": st.integers(0, 10),
        "tags": st.lists(st.sampled_from(TAGS), max_size=3),
        "project": st.sampled_from(["atlas", "zeus", None]),
        "created": st.sampled_from(["2026-02-28T00:00:00Z", "2025-12-01T00:00:00+02:00",
                                    "2024-01-01", "not a date"]),
        "token_count": st.integers(1, 40),
        "status": st.sampled_from(["active", "retired"]),
        "superseded_by": st.sampled_from([None, "", "other"]),
    },
)


@st.composite
def pool_lists(draw: Any) -> list[Pool]:
    n = draw(st.integers(1, 3))
    return [
        Pool(f"p{i}", draw(st.integers(0, 80)), draw(st.integers(0, 4)),
             types=draw(st.none() | st.lists(st.sampled_from(TYPES), min_size=1,
                                            max_size=3, unique=True)))
        for i in range(n)
    ]


def _as_documents(entries: list[dict[str, Any]]) -> list[Document]:
    """Each document's id is its Document.id; half also carry a metadata ``id`` to ignore."""
    docs = []
    for i, entry in enumerate(entries):
        metadata = {k: v for k, v in entry.items() if k not in ("content", "id")}
        if i % 2 == 0:  # plain metadata, never the entry id (it would reverse the tie order)
            metadata["id"] = f"row-{len(entries) - i:03d}"
        docs.append(Document(id=entry["id"], page_content=entry["content"], metadata=metadata))
    return docs


def _expected(entries: list[dict[str, Any]], pools: list[Pool], context: dict[str, Any],
              k: int | None) -> list[tuple[str, str, bool, float | None]]:
    """retrieve_pools, flattened: always of every pool, then contextual pool by pool."""
    picked = retrieve_pools(entries, pools, context, now=NOW, always_pool=True)
    always = [(e["id"], name, True, None)
              for name, got in picked.items() for e in got if e.get("scope") == "always"]
    contextual = [[(e["id"], name, False, default_scorer(e, context, now=NOW))
                   for e in got if e.get("scope") != "always"]
                  for name, got in picked.items()]
    if k is not None:  # round-robin over pools, each pool's best first
        keep = [0] * len(contextual)
        while k > 0 and any(n < len(c) for n, c in zip(keep, contextual)):
            for i, c in enumerate(contextual):
                if k > 0 and keep[i] < len(c):
                    keep[i] += 1
                    k -= 1
        contextual = [c[:n] for c, n in zip(contextual, keep)]
    return always + [hit for c in contextual for hit in c]


@given(
    fields=st.lists(entry_fields, max_size=14),
    pools=pool_lists(),
    message=st.lists(st.sampled_from(WORDS), max_size=4).map(" ".join),
    project=st.sampled_from(["atlas", "zeus", None]),
    tags=st.lists(st.sampled_from(TAGS), max_size=2),
    k=st.none() | st.integers(0, 6),
)
def test_output_equals_retrieve_pools_flattened(
    fields: list[dict[str, Any]], pools: list[Pool], message: str,
    project: str | None, tags: list[str], k: int | None,
) -> None:
    entries = [{**f, "id": f"e{i}"} for i, f in enumerate(fields)]
    context = {"message": message, "tags": tags}
    if project is not None:
        context["project"] = project
    retriever = PoolSplitRetriever(documents=_as_documents(entries), pools=pools,
                                   context={"tags": tags}, now=NOW, require_filter_keys=(),
                                   strict=False)  # the spec's leniency, as retrieve_pools
    docs = retriever.invoke(message, project=project, k=k)
    got = [(d.id, d.metadata["poolsplit_pool"],
            d.metadata["poolsplit_always"], d.metadata["poolsplit_score"]) for d in docs]
    expected = _expected(entries, pools, context, k)
    assert [g[:3] for g in got] == [e[:3] for e in expected]
    for (*_, score), (*_, want) in zip(got, expected):
        assert score == (None if want is None else pytest.approx(want))


# --------------------------------------------------------------------------
# Construction errors
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"pools": [Pool("always", 1, 1)]}, ValueError, "'always' is the pool under which"),
        ({"pools": [Pool("a", 1, 1), Pool("a", 2, 2)]}, ValueError, "'a' twice"),
        ({"pools": Pool("a", 1, 1)}, TypeError, "single Pool"),
        ({"pools": ["a"]}, TypeError, r"pools\[0\] must be a Pool"),
        ({"k": -1}, ValueError, "k must be >= 0, got -1"),
        ({"k": True}, TypeError, "k must be an int or None"),
        ({"k": "3"}, TypeError, "k must be an int or None"),
        ({"documents": [{"page_content": "x"}]}, TypeError, r"documents\[0\] must be a Document"),
        ({"documents": Document(page_content="x")}, TypeError, "must be a list of Document"),
        ({"document": []}, TypeError,
         r"got unexpected keyword argument\(s\) \['document'\]; it accepts .*documents="),
    ],
)
def test_bad_arguments_fail_at_construction(kwargs: dict[str, Any], error: type,
                                            match: str) -> None:
    with pytest.raises(error, match=match):
        make_retriever(**kwargs)


def test_fields_named_by_langchain_are_left_to_langchain() -> None:
    own = set(PoolSplitRetriever.model_fields) - set(BaseRetriever.model_fields)
    assert own == {"documents", "pools", "k", "context", "scorer", "token_counter",
                   "is_active", "now", "base_retriever", "filter", "require_filter_keys",
                   "max_always_tokens", "strict"}
    retriever = make_retriever(tags=["memory"], metadata={"team": "ops"})
    assert retriever.tags == ["memory"] and retriever.metadata == {"team": "ops"}


# --------------------------------------------------------------------------
# What ships: the docstring examples run, the missing extra is named
# --------------------------------------------------------------------------


@pytest.mark.parametrize("component", [PoolSplitRetriever, PoolSplitCompressor])
def test_docstring_examples_run_and_print_what_they_say(
    component: type, capsys: pytest.CaptureFixture[str]
) -> None:
    blocks = re.findall(r"^[ ]*```python\n(.*?)^[ ]*```$", component.__doc__ or "", re.M | re.S)
    assert len(blocks) >= 2
    namespace: dict[str, Any] = {}
    for block in blocks:
        exec(textwrap.dedent(block), namespace)
    printed = capsys.readouterr().out.splitlines()
    promised = _promised_output(blocks)
    assert promised
    remaining = iter(printed)  # the promised lines appear in order
    assert all(any(line == out for out in remaining) for line in promised), printed


def _promised_output(blocks: list[str]) -> list[str]:
    """The ``# ...`` comment lines that follow each print() call in the examples."""
    promised: list[str] = []
    for block in blocks:
        after_print = False
        for line in textwrap.dedent(block).splitlines():
            if line.startswith("print("):
                after_print = True
            elif after_print and line.startswith("# "):
                if line != "# ...":
                    promised.append(line[2:])
            else:
                after_print = False
    return promised


def test_import_without_langchain_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "langchain_core", None)
    monkeypatch.delitem(sys.modules, "poolsplit_integrations.langchain")
    with pytest.raises(ImportError, match=r"pip install 'poolsplit\[langchain\]'"):
        __import__("poolsplit_integrations.langchain")


# --------------------------------------------------------------------------
# A query that is not a str: say what invoke takes and how a chain maps a dict
# --------------------------------------------------------------------------

CHAIN_HINT = (r"in a chain whose input is a dict, pick the query out first:"
              r" itemgetter\('question'\) \| retriever \(from operator import itemgetter\)")


def test_a_dict_query_is_refused_saying_invoke_takes_the_query_string_and_how_to_map_it():
    import asyncio
    from operator import itemgetter

    retriever = PoolSplitRetriever(documents=make_store(), pools=POOLS, now=NOW)
    asked = {"question": "deploy", "history": []}
    for call, run in (("invoke", lambda: retriever.invoke(asked)),
                      ("ainvoke", lambda: asyncio.run(retriever.ainvoke(asked))),
                      ("invoke", lambda: retriever.batch([asked]))):
        with pytest.raises(TypeError, match=(
                rf"^PoolSplitRetriever\.{call}\(\) takes the query as a str, got dict"
                rf" \{{'question': 'deploy', 'history': \[\]\}}; {CHAIN_HINT}$")):
            run()
    # the fix the message names works
    chain = itemgetter("question") | retriever
    assert [d.id for d in chain.invoke(asked)] == [d.id for d in retriever.invoke("deploy")]
    assert retriever.invoke("deploy")  # and compared something


def test_a_query_of_another_kind_is_refused_naming_the_call_and_what_it_got():
    import asyncio

    from langchain_core.messages import HumanMessage

    retriever = PoolSplitRetriever(documents=make_store(), pools=POOLS, now=NOW)
    with pytest.raises(TypeError, match=r"^PoolSplitRetriever\.invoke\(\) takes the query as a"
                                        r" str, got NoneType None$"):
        retriever.invoke(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"invoke\(\) takes the query as a str, got HumanMessage"
                                        r" .*; pass its text, \.content$"):
        retriever.invoke(HumanMessage("deploy"))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^PoolSplitRetriever\.explain\(\) takes the query as a"
                                        r" str, got dict \{'question': 'x'\}; pass the query"
                                        r" itself, e.g. query\['question'\]$"):
        retriever.explain({"question": "x"})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^PoolSplitRetriever\.aexplain\(\) takes the query"):
        asyncio.run(retriever.aexplain(["deploy"]))  # type: ignore[arg-type]
    long = {"question": "x" * 200}
    with pytest.raises(TypeError) as caught:
        retriever.invoke(long)  # type: ignore[arg-type]
    assert len(str(caught.value)) < 300 and "..." in str(caught.value)


def test_the_compressor_refuses_a_query_that_is_not_a_str_naming_the_call():
    import asyncio

    compressor = PoolSplitCompressor(pools=POOLS, now=NOW)
    docs = make_store()[1:3]
    for run in (lambda: compressor.compress_documents(docs, {"question": "deploy"}),
                lambda: asyncio.run(compressor.acompress_documents(docs, {"question": "deploy"}))):
        with pytest.raises(TypeError, match=(
                r"^PoolSplitCompressor\.compress_documents\(\) takes the query as a str, got"
                r" dict \{'question': 'deploy'\}; pass the query itself, e.g."
                r" query\['question'\]$")):
            run()
    assert compressor.compress_documents(docs, "deploy")
