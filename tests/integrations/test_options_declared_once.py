"""The shared options are declared once, in ``Options``; everything else is read from it.

The pydantic fields every pydantic component inherits are generated from the
dataclass; what a type checker sees of them, the LlamaIndex retriever's
explicit keywords and the LangGraph retriever's fields are held to it here.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import typing
from pathlib import Path

import pytest
from langgraph.store.memory import InMemoryStore

from poolsplit_core import Pool
from poolsplit_integrations import _models
from poolsplit_integrations._models import OptionsModel
from poolsplit_integrations._options import (
    CALLABLE_DEFAULTS,
    OPTION_CHECKS,
    OPTION_NAMES,
    Options,
)
from poolsplit_integrations.langchain import PoolSplitCompressor
from poolsplit_integrations.langchain import PoolSplitRetriever as LCRetriever
from poolsplit_integrations.langgraph import (
    PoolSplitStore,
    PoolSplitStoreRetriever,
)
from poolsplit_integrations.llama_index import (
    PoolSplitMemoryBlock,
    PoolSplitPostprocessor,
)
from poolsplit_integrations.llama_index import PoolSplitRetriever as LIRetriever

DECLARED = {option.name: option for option in dataclasses.fields(Options)}
PYDANTIC_COMPONENTS = [LCRetriever, PoolSplitCompressor, PoolSplitPostprocessor,
                       PoolSplitMemoryBlock]


def test_option_names_and_hooks_are_read_from_the_declaration():
    assert OPTION_NAMES == tuple(DECLARED)
    assert OPTION_NAMES[0] == "pools" and "strict" in OPTION_NAMES
    assert CALLABLE_DEFAULTS == {name: DECLARED[name].default
                                 for name in ("scorer", "token_counter", "is_active")}
    assert set(OPTION_CHECKS) <= set(OPTION_NAMES)
    for option in DECLARED.values():
        assert option.metadata["description"], option.name


@pytest.mark.parametrize("component", [OptionsModel, *PYDANTIC_COMPONENTS],
                         ids=lambda c: c.__name__)
def test_every_pydantic_component_has_the_declared_fields(component):
    types = typing.get_type_hints(Options)
    for name, option in DECLARED.items():
        field = component.model_fields[name]
        assert field.annotation == types[name], name
        assert field.description == option.metadata["description"], name
        assert bool(field.frozen) == option.metadata["frozen"], name
        if option.default is dataclasses.MISSING:
            assert field.is_required(), name
        else:
            assert field.default is option.default, name


def test_the_type_checkers_view_of_options_model_is_the_declaration():
    tree = ast.parse(Path(_models.__file__).read_text(encoding="utf-8"))
    static = next(node for node in ast.walk(tree)
                  if isinstance(node, ast.ClassDef) and node.name == "OptionsModel")
    fields = [node for node in static.body if isinstance(node, ast.AnnAssign)]
    assert [node.target.id for node in fields] == list(OPTION_NAMES)
    for node in fields:
        option = DECLARED[node.target.id]
        assert ast.unparse(node.annotation) == option.type, option.name
        assert (node.value is None) == (option.default is dataclasses.MISSING), option.name
        if option.name in CALLABLE_DEFAULTS:
            assert ast.unparse(node.value) == option.default.__name__, option.name
        elif node.value is not None:
            assert ast.literal_eval(node.value) == option.default, option.name


def test_the_llamaindex_retriever_takes_every_option_as_declared():
    parameters = inspect.signature(LIRetriever.__init__).parameters
    for name, option in DECLARED.items():
        assert name in parameters, name
        if option.default is not dataclasses.MISSING:
            assert parameters[name].default is option.default or (
                parameters[name].default == option.default), name
    assert parameters["pools"].default == ()  # LlamaIndex's front doors pass pools later


def test_every_option_given_to_the_llamaindex_retriever_reaches_its_options():
    given = {"pools": [Pool("all", 100, 5)], "k": 2, "context": {"project": "atlas"},
             "scorer": {"words": "unicode"}, "token_counter": len, "is_active": bool,
             "now": None, "filter": {"user_id": "ana"}, "require_filter_keys": ["user_id"],
             "max_always_tokens": 50, "strict": False}
    assert set(given) == set(OPTION_NAMES)
    options = LIRetriever(nodes=[], **given).options
    assert options == Options(**given)
    assert options.require_filter_keys == ("user_id",)
    assert options.scorer.to_data() == {"words": "unicode"}


def test_the_llamaindex_retriever_serialises_every_option_that_is_data():
    data = LIRetriever(nodes=[], pools=[Pool("all", 100, 5)]).to_dict()
    data_options = [name for name in OPTION_NAMES if name not in CALLABLE_DEFAULTS]
    assert list(data) == ["nodes", *data_options, "verbose", "class_name"]


def test_the_langgraph_retriever_checks_and_describes_its_options_as_declared():
    for name in ("pools", "k", "context", "now", "max_always_tokens"):
        field = PoolSplitStoreRetriever.model_fields[name]
        assert field.description == DECLARED[name].metadata["description"], name
    store = PoolSplitStore(InMemoryStore())
    pools = [{"name": "all", "max_tokens": 100, "max_entries": 5}]
    retriever = PoolSplitStoreRetriever(store=store, namespace=("m",), pools=pools)
    assert retriever.pools == [Pool("all", 100, 5)] and retriever.context == {}
    with pytest.raises(ValueError, match="k must be >= 0, got -1"):
        PoolSplitStoreRetriever(store=store, namespace=("m",), pools=pools, k=-1)
    with pytest.raises(TypeError, match="max_always_tokens must be an int or None"):
        PoolSplitStoreRetriever(store=store, namespace=("m",), pools=pools,
                                max_always_tokens="50")
