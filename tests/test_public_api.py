"""Pins the public API of the core: names, signatures, version, typing marker.

Adding a public name to the core means adding it to PUBLIC_NAMES below (and
nowhere else in this file), one of the prepared store's file to PREPARED_NAMES;
a name the package adds beside the two files' goes in PACKAGE_NAMES.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
from importlib import resources
from pathlib import Path

import pytest
import tomllib

import poolsplit_core
import poolsplit_core.multilingual as multilingual
import poolsplit_core.poolsplit as core
import poolsplit_core.prepared as prepared
import poolsplit_core.render as render

PUBLIC_NAMES = sorted([
    "OUTCOMES",
    "AlwaysScopeOverflowError",
    "Candidate",
    "ConfiguredScorer",
    "Decision",
    "Engine",
    "Explanation",
    "Filled",
    "Ledger",
    "Pool",
    "Room",
    "__version__",
    "default_is_active",
    "default_scorer",
    "default_token_counter",
    "explain_pools",
    "fill_pools",
    "make_scorer",
    "retrieve",
    "retrieve_pools",
])

#: The names of the prepared store's file (vendorable beside the core's).
PREPARED_NAMES = ["IndexEngine", "PreparedStore", "PythonEngine", "default_engine",
                  "register_engine"]

#: The names of the file beyond English (vendorable beside the core's).
MULTILINGUAL_NAMES = ["cjk_token_counter", "unicode_words"]

#: The names of the file that renders a result as prompt text (vendorable beside the core's).
RENDER_NAMES = ["CORRECTIONS_HEADING", "render_pools"]

#: What poolsplit_core exports beside the vendorable files' names (in neither file).
#: (NumpyEngine is there when numpy is: the test suite always has it.)
PACKAGE_NAMES = ["NumpyEngine", "check_entries"]

KEYWORD_ONLY_DEFAULTS = {
    "scorer": core.default_scorer,
    "token_counter": core.default_token_counter,
    "is_active": core.default_is_active,
    "now": None,
    "max_always_tokens": None,
}


def test_core_module_all_is_exactly_the_pinned_public_names():
    assert sorted(core.__all__) == PUBLIC_NAMES
    assert len(core.__all__) == len(set(core.__all__))


def test_prepared_module_all_is_exactly_the_pinned_names_and_the_core_lacks_them():
    assert sorted(prepared.__all__) == PREPARED_NAMES
    for name in PREPARED_NAMES:
        assert not hasattr(core, name), name


def test_multilingual_module_all_is_exactly_the_pinned_names_and_the_core_lacks_them():
    assert sorted(multilingual.__all__) == MULTILINGUAL_NAMES
    for name in MULTILINGUAL_NAMES:
        assert not hasattr(core, name), name
    assert core.WORD_READERS["unicode"] is multilingual.unicode_words  # named on import


def test_render_module_all_is_exactly_the_pinned_names_and_the_core_lacks_them():
    assert sorted(render.__all__) == RENDER_NAMES
    for name in RENDER_NAMES:
        assert not hasattr(core, name), name


def test_package_reexports_the_same_names_as_the_same_objects():
    assert sorted(poolsplit_core.__all__) == sorted(
        PUBLIC_NAMES + PREPARED_NAMES + MULTILINGUAL_NAMES + RENDER_NAMES + PACKAGE_NAMES)
    assert len(poolsplit_core.__all__) == len(set(poolsplit_core.__all__))
    for name in PUBLIC_NAMES:
        assert getattr(poolsplit_core, name) is getattr(core, name), name
    for name in PREPARED_NAMES:
        assert getattr(poolsplit_core, name) is getattr(prepared, name), name
    for name in MULTILINGUAL_NAMES:
        assert getattr(poolsplit_core, name) is getattr(multilingual, name), name
    for name in RENDER_NAMES:
        assert getattr(poolsplit_core, name) is getattr(render, name), name


def test_the_package_adds_only_the_store_checks_and_the_file_does_not_hold_them():
    from poolsplit_core import checks

    assert poolsplit_core.check_entries is checks.check_entries
    assert not hasattr(core, "check_entries")
    assert list(inspect.signature(checks.check_entries).parameters) == ["entries", "now"]
    assert list(inspect.signature(checks.entry_problems).parameters) == ["entry", "label",
                                                                        "now"]
    assert list(inspect.signature(checks.refuse_bad_entries).parameters) == ["entries",
                                                                            "labels", "now"]
    assert checks.__all__ == ["FUTURE_TOLERANCE", "check_entries", "entry_problems",
                              "refuse_bad_entries"]


@pytest.mark.parametrize(("module", "name"), [
    *((core, n) for n in PUBLIC_NAMES if n not in ("OUTCOMES", "__version__")),
    *((prepared, n) for n in PREPARED_NAMES),
    *((multilingual, n) for n in MULTILINGUAL_NAMES),
    (render, "render_pools"),
])
def test_every_public_name_is_documented_where_it_is_defined(module, name):
    # help() and the IDE show this text: a public name without it is a gap
    obj = getattr(module, name)
    assert obj.__module__ == module.__name__
    assert inspect.getdoc(obj) and len(inspect.getdoc(obj)) > 20


def test_outcomes_are_the_closed_set_in_the_order_they_are_decided():
    assert core.OUTCOMES == ("inactive", "no_pool", "always", "selected", "over_entries",
                             "over_tokens")


def test_decision_and_ledger_fields_are_the_documented_ones_in_order():
    assert [f.name for f in dataclasses.fields(core.Decision)] == [
        "entry", "index", "outcome", "pool", "score", "cost", "tokens_left", "rank", "notes"]
    assert [f.name for f in dataclasses.fields(core.Ledger)] == [
        "pool", "max_tokens", "max_entries", "tokens_used", "selected", "always",
        "always_tokens", "skipped_tokens", "skipped_entries"]
    assert [f.name for f in dataclasses.fields(core.Explanation)] == ["decisions", "ledgers"]


def test_an_always_scope_overflow_is_a_value_error_carrying_what_overflowed():
    # callers that catch ValueError for bad input catch the ceiling too
    store = [{"id": "fix", "scope": "always", "token_count": 9}]
    with pytest.raises(ValueError) as raised:
        core.retrieve_pools(store, [core.Pool("p", 5, 5)], max_always_tokens=8)
    error = raised.value
    assert isinstance(error, core.AlwaysScopeOverflowError)
    assert (error.entries, error.total, error.limit) == ((store[0],), 9, 8)


def test_the_default_counter_and_activity_test_follow_the_readme():
    assert [core.default_token_counter(t) for t in ("", "abc", "abcd", "x" * 41)] == [
        1, 1, 1, 10]
    assert core.default_is_active({}) is True
    assert core.default_is_active({"status": "retired"}) is False
    assert core.default_is_active({"superseded_by": "m-2"}) is False
    assert core.default_is_active({"superseded_by": ""}) is True


def test_prepared_store_takes_its_build_options_and_query_options_by_keyword():
    build = inspect.signature(prepared.PreparedStore).parameters
    assert [(n, p.kind, p.default) for n, p in build.items()] == [
        ("entries", inspect.Parameter.POSITIONAL_OR_KEYWORD, ()),
        ("scorer", inspect.Parameter.KEYWORD_ONLY, core.default_scorer),
        ("token_counter", inspect.Parameter.KEYWORD_ONLY, core.default_token_counter),
        ("is_active", inspect.Parameter.KEYWORD_ONLY, core.default_is_active),
        ("partition_key", inspect.Parameter.KEYWORD_ONLY, None),
        ("engine", inspect.Parameter.KEYWORD_ONLY, "auto"),
    ]
    for method, keywords in (
        (prepared.PreparedStore.retrieve_pools,
         ["scorer", "now", "where", "max_always_tokens", "always_pool", "strict"]),
        (prepared.PreparedStore.explain_pools,
         ["scorer", "now", "extra", "where", "include", "max_always_tokens", "always_pool",
          "strict"]),
        (prepared.PreparedStore.decide,
         ["scorer", "now", "extra", "where", "include", "max_always_tokens", "always_pool",
          "strict"]),
    ):
        params = inspect.signature(method).parameters.values()
        assert [p.name for p in params if p.kind is p.POSITIONAL_OR_KEYWORD] == [
            "self", "pools", "context"]
        assert [p.name for p in params if p.kind is p.KEYWORD_ONLY] == keywords


@pytest.mark.parametrize(("function", "positional", "keywords"), [
    (core.retrieve, [("entries", inspect.Parameter.empty), ("pool", inspect.Parameter.empty),
                     ("context", None)], {**KEYWORD_ONLY_DEFAULTS, "strict": False}),
    (core.retrieve_pools, [("entries", inspect.Parameter.empty),
                           ("pools", inspect.Parameter.empty), ("context", None)],
     {**KEYWORD_ONLY_DEFAULTS, "always_pool": False, "strict": False}),
    (core.explain_pools, [("entries", inspect.Parameter.empty),
                          ("pools", inspect.Parameter.empty), ("context", None)],
     {**KEYWORD_ONLY_DEFAULTS, "always_pool": False, "strict": False}),
])
def test_entry_points_take_scorer_counter_activity_and_now_as_keyword_only(function, positional,
                                                                           keywords):
    params = list(inspect.signature(function).parameters.values())
    head = [p for p in params if p.kind is p.POSITIONAL_OR_KEYWORD]
    tail = {p.name: p.default for p in params if p.kind is p.KEYWORD_ONLY}
    assert [(p.name, p.default) for p in head] == positional
    assert list(tail.items()) == list(keywords.items())
    assert len(head) + len(tail) == len(params)


def test_default_scorer_signature_has_an_injectable_keyword_only_now():
    params = inspect.signature(core.default_scorer).parameters
    assert [(n, p.kind, p.default) for n, p in params.items()] == [
        ("entry", inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.empty),
        ("context", inspect.Parameter.POSITIONAL_OR_KEYWORD, None),
        ("now", inspect.Parameter.KEYWORD_ONLY, None),
    ]


def test_default_counter_and_activity_test_take_one_argument():
    assert list(inspect.signature(core.default_token_counter).parameters) == ["text"]
    assert list(inspect.signature(core.default_is_active).parameters) == ["entry"]


def test_pool_signature_is_name_limits_then_optional_types():
    params = inspect.signature(core.Pool).parameters
    assert [(n, p.default) for n, p in params.items()] == [
        ("name", inspect.Parameter.empty), ("max_tokens", inspect.Parameter.empty),
        ("max_entries", inspect.Parameter.empty), ("types", None)]


def test_make_scorer_takes_only_keyword_options_each_absent_by_default():
    params = inspect.signature(core.make_scorer).parameters.values()
    assert [(p.name, p.kind, p.default) for p in params] == [
        ("words", inspect.Parameter.KEYWORD_ONLY, None),
        ("relevance", inspect.Parameter.KEYWORD_ONLY, "words"),
        ("similarity_weight", inspect.Parameter.KEYWORD_ONLY, 1.5),
        ("evergreen", inspect.Parameter.KEYWORD_ONLY, ()),
        ("decay_days", inspect.Parameter.KEYWORD_ONLY, None)]
    assert [p.name for p in params] == list(core.ConfiguredScorer.OPTIONS)
    # each default is the option absent: the default scorer
    assert core.make_scorer(**{p.name: p.default for p in params}) == core.make_scorer()
    assert core.make_scorer().to_data() == {"words": "ascii"}


def test_render_pools_takes_the_result_then_keyword_only_options():
    params = inspect.signature(render.render_pools).parameters.values()
    assert [(p.name, p.kind, p.default) for p in params] == [
        ("result", inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.empty),
        ("ledgers", inspect.Parameter.KEYWORD_ONLY, None),
        ("entry", inspect.Parameter.KEYWORD_ONLY, None),
        ("corrections_heading", inspect.Parameter.KEYWORD_ONLY, render.CORRECTIONS_HEADING)]
    assert render.CORRECTIONS_HEADING == "Corrections (always apply)"


def test_word_reader_and_cjk_counter_take_one_text():
    assert list(inspect.signature(multilingual.unicode_words).parameters) == ["text"]
    assert list(inspect.signature(multilingual.cjk_token_counter).parameters) == ["text"]


def test_version_is_a_pep_440_release_string_shared_by_the_package():
    assert re.fullmatch(r"\d+\.\d+\.\d+((a|b|rc)\d+)?(\.post\d+)?(\.dev\d+)?", core.__version__)
    assert poolsplit_core.__version__ == core.__version__
    assert prepared.__version__ == core.__version__  # the files are copied together
    assert multilingual.__version__ == core.__version__
    assert render.__version__ == core.__version__


def wheel_packages() -> list[str]:
    pyproject = Path(__file__).resolve().parent.parent / "pyproject.toml"
    config = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    return list(config["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"])


def test_the_wheel_ships_both_packages():
    assert wheel_packages() == ["poolsplit_core", "poolsplit_integrations"]


@pytest.mark.parametrize("package", wheel_packages())
def test_every_shipped_package_carries_the_py_typed_marker(package):
    # Without it, mypy --strict on a user's code treats the package as untyped.
    marker = resources.files(package).joinpath("py.typed")
    assert marker.is_file(), f"{package} ships no py.typed"
