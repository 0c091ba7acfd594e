"""LangChain components: unknown arguments refused by name, data serialised, code refused.

Every way an argument reaches a component -- the constructor, ``model_validate``,
``model_copy(update=...)`` and each call's keywords -- refuses a name it does
not know, listing the ones it takes. ``model_dump()``/``model_dump_json()``
round-trip through ``model_validate``/``model_validate_json`` to a component
that answers the same; a custom hook or a base retriever is refused by name.
"""

from __future__ import annotations

import asyncio
import json
from datetime import datetime, timezone
from typing import Any, Callable

import pytest
from langchain_core.documents import Document

from poolsplit_core.poolsplit import Pool, default_scorer
from poolsplit_integrations.langchain import PoolSplitCompressor, PoolSplitRetriever

from ._hooks import HOOKS, custom_hook

NOW = datetime(2026, 3, 1, tzinfo=timezone.utc)
POOLS = [Pool("work", 60, 2, ("task", "correction")), Pool("rest", 40, 2)]


def store() -> list[Document]:
    return [
        Document(id="fix", page_content="Never deploy on Friday.",
                 metadata={"type": "correction", "scope": "always", "user": "a"}),
        Document(id="t1", page_content="Deploy the release after the migration.",
                 metadata={"type": "task", "base_priority": 8, "user": "a",
                           "tags": ["deploy"], "created": "2026-02-01"}),
        Document(id="t2", page_content="Deploy the docs site.",
                 metadata={"type": "task", "base_priority": 6, "user": "a"}),
        Document(page_content="Bisect the bad deploy.", metadata={"type": "skill", "user": "a"}),
        Document(id="n1", page_content="Deploy notes live in the wiki.", metadata={"user": "b"}),
    ]


def retriever(**kwargs: Any) -> PoolSplitRetriever:
    options: dict[str, Any] = {
        "documents": store(), "pools": POOLS, "now": NOW, "k": 3,
        "context": {"project": "atlas", "tags": ["deploy"]}, "filter": {"user": "a"},
        "require_filter_keys": ("user",), "max_always_tokens": 50,
        "tags": ["memory"], "metadata": {"team": "ops"},
    }
    return PoolSplitRetriever(**{**options, **kwargs})


def compressor(**kwargs: Any) -> PoolSplitCompressor:
    options: dict[str, Any] = {"pools": POOLS, "pinned": store()[:1], "now": NOW, "k": 2,
                               "filter": {"user": "a"}, "require_filter_keys": ("user",)}
    return PoolSplitCompressor(**{**options, **kwargs})


def answer(component: Any) -> list[Document]:
    if isinstance(component, PoolSplitRetriever):
        return component.invoke("deploy the release")
    return list(component.compress_documents(store()[1:], "deploy the release"))


BUILDERS: dict[str, Callable[..., Any]] = {"retriever": retriever, "compressor": compressor}
ACCEPTED = r"it accepts .*pools=.*max_always_tokens="

# --------------------------------------------------------------------------
# Unknown arguments, wherever they come in
# --------------------------------------------------------------------------


@pytest.mark.parametrize("kind", list(BUILDERS))
def test_an_unknown_constructor_argument_is_refused_naming_the_accepted_ones(kind):
    with pytest.raises(TypeError, match=rf"\(\) got unexpected keyword argument\(s\) "
                                        rf"\['top_n'\]; {ACCEPTED}"):
        BUILDERS[kind](top_n=3)


@pytest.mark.parametrize("kind", list(BUILDERS))
def test_model_validate_refuses_an_unknown_key(kind):
    data = BUILDERS[kind]().model_dump()
    data["top_k"] = 2
    with pytest.raises(TypeError, match=rf"\['top_k'\]; {ACCEPTED}"):
        type(BUILDERS[kind]()).model_validate(data)


@pytest.mark.parametrize("kind", list(BUILDERS))
def test_model_copy_refuses_an_unknown_update(kind):
    with pytest.raises(TypeError, match=rf"model_copy\(update=...\) got unexpected keyword"
                                        rf" argument\(s\) \['kk'\]; {ACCEPTED}"):
        BUILDERS[kind]().model_copy(update={"kk": 1})


CALLS: dict[str, Callable[[PoolSplitRetriever, dict[str, Any]], Any]] = {
    "invoke": lambda r, kw: r.invoke("deploy", **kw),
    "ainvoke": lambda r, kw: asyncio.run(r.ainvoke("deploy", **kw)),
    "batch": lambda r, kw: r.batch(["deploy"], **kw),
    "abatch": lambda r, kw: asyncio.run(r.abatch(["deploy"], **kw)),
    "explain": lambda r, kw: r.explain("deploy", **kw),
    "aexplain": lambda r, kw: asyncio.run(r.aexplain("deploy", **kw)),
}


@pytest.mark.parametrize("call", list(CALLS))
def test_every_call_refuses_a_misspelt_keyword_naming_the_accepted_ones(call):
    with pytest.raises(TypeError, match=r"got unexpected keyword argument\(s\) \['tagz'\];"
                                        r" it accepts project=, tags=.*filter="):
        CALLS[call](retriever(), {"tagz": ["x"], "filter": {"user": "a"}})


# --------------------------------------------------------------------------
# Serialisation
# --------------------------------------------------------------------------


@pytest.mark.parametrize("kind", list(BUILDERS))
def test_model_dump_writes_pools_as_plain_data(kind):
    data = BUILDERS[kind]().model_dump()
    assert data["pools"] == [
        {"name": "work", "max_tokens": 60, "max_entries": 2, "types": ["task", "correction"]},
        {"name": "rest", "max_tokens": 40, "max_entries": 2, "types": None},
    ]
    assert json.loads(BUILDERS[kind]().model_dump_json())["pools"] == data["pools"]


@pytest.mark.parametrize("kind", list(BUILDERS))
def test_model_dump_round_trips_to_a_component_that_answers_the_same(kind):
    original = BUILDERS[kind]()
    cls = type(original)
    for rebuilt in (cls.model_validate(original.model_dump()),
                    cls.model_validate_json(original.model_dump_json()),
                    cls(**json.loads(original.model_dump_json()))):
        assert rebuilt.pools == original.pools and rebuilt.now == original.now
        assert rebuilt.model_dump_json() == original.model_dump_json()
        assert answer(rebuilt) == answer(original)
        assert answer(original)  # the comparison is not between two empty answers


@pytest.mark.parametrize("kind", list(BUILDERS))
@pytest.mark.parametrize("hook", HOOKS)
def test_a_custom_hook_is_refused_by_name_when_dumped_to_json(kind, hook):
    custom = custom_hook(hook)
    component = BUILDERS[kind](**{hook: custom})
    with pytest.raises(TypeError, match=rf"cannot be serialised: {hook} is a custom callable"
                                        rf" \(.*custom\).*exclude=\{{'{hook}'\}}"):
        component.model_dump_json()
    with pytest.raises(ValueError, match=hook):  # also what pydantic's own errors are
        component.model_dump(mode="json")
    data = json.loads(component.model_dump_json(exclude={hook}))
    rebuilt = type(component)(**data, **{hook: custom})
    assert answer(rebuilt) == answer(component)


def test_a_base_retriever_is_refused_by_name_and_cannot_be_rebuilt_from_its_dump():
    component = retriever(base_retriever=retriever(documents=[]))
    with pytest.raises(TypeError, match=r"base_retriever holds a live object"
                                        r" \(PoolSplitRetriever\)"):
        component.model_dump_json()
    with pytest.raises(TypeError, match=r"base_retriever must be a LangChain BaseRetriever"):
        PoolSplitRetriever.model_validate(component.model_dump())


def test_default_hooks_dump_as_null_and_read_back_as_the_defaults():
    data = json.loads(retriever().model_dump_json())
    assert (data["scorer"], data["token_counter"], data["is_active"]) == (None, None, None)
    assert PoolSplitRetriever.model_validate(data).scorer is default_scorer


@pytest.mark.parametrize(("pool", "match"), [
    ({"name": "a", "max_tokens": 1}, r"pools\[0\] lacks max_entries"),
    ({"name": "a", "max_tokens": 1, "max_entries": 1, "size": 2},
     r"pools\[0\] has unknown key\(s\) size"),
    ({"name": "a", "max_tokens": -1, "max_entries": 1}, r"pools\[0\]: Pool 'a': max_tokens must"),
])
def test_a_pool_given_as_data_is_checked_like_a_pool(pool, match):
    with pytest.raises((TypeError, ValueError), match=match):
        PoolSplitRetriever(pools=[pool])


def test_documents_are_read_back_only_in_the_form_langchain_dumps():
    assert PoolSplitRetriever(documents=[store()[0].model_dump()], pools=POOLS).documents == \
        store()[:1]
    with pytest.raises(TypeError, match=r"documents\[0\] must be a Document, got dict"):
        PoolSplitRetriever(documents=[{"page_content": "x"}], pools=POOLS)
