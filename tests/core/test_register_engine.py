"""Engines join PreparedStore through one public hook, ``register_engine``."""

from __future__ import annotations

import random

import pytest

from poolsplit_core import Pool, PreparedStore, PythonEngine, prepared, register_engine


class _Mine(PythonEngine):
    name = "mine"


@pytest.fixture
def engines(monkeypatch):
    """The registry as it is, restored after the test (registering is global)."""
    monkeypatch.setattr(prepared, "_ENGINES", dict(prepared._ENGINES))
    return prepared._ENGINES


def _store(seed: int) -> list[dict]:
    rng = random.Random(seed)
    words = ["deploy", "db", "release", "tests", "notes"]
    return [{"id": f"e{i}", "type": rng.choice(["task", "fact"]),
             "content": " ".join(rng.choices(words, k=rng.randint(1, 6))),
             "base_priority": rng.randint(1, 9), "tags": rng.sample(words, 2)}
            for i in range(120)]


def test_a_registered_engine_is_built_by_its_name_and_answers_as_the_others(engines):
    mine = register_engine(_Mine(split_after=1))
    assert engines["mine"] is mine
    pools = [Pool("work", 60, 4, types=("task",)), Pool("facts", 40, 3, types=("fact",))]
    for seed in range(5):
        entries = _store(seed)
        built = PreparedStore(entries, engine="mine")
        assert built.engine == "mine"
        context = {"message": "deploy the release", "tags": ["db"]}
        assert built.retrieve_pools(pools, context) == \
            PreparedStore(entries, engine="python").retrieve_pools(pools, context)


@pytest.mark.parametrize("name", ["auto", "python"])
def test_the_default_choice_and_the_files_own_engine_cannot_be_replaced(engines, name):
    engine = _Mine()
    engine.name = name
    with pytest.raises(ValueError, match=f"engine name '{name}' is taken"):
        register_engine(engine)
    assert engines.get("python").__class__ is PythonEngine


@pytest.mark.parametrize("engine", [object(), "numpy", type("Nameless", (), {"index": len})()])
def test_what_is_not_an_engine_is_refused_by_name(engines, engine):
    before = dict(engines)
    with pytest.raises(TypeError, match="an engine has a non-empty str name"):
        register_engine(engine)
    assert engines == before


def test_the_numpy_engine_registers_through_the_hook():
    from poolsplit_core import NumpyEngine  # (poolsplit[fast] is part of the dev extra)

    assert isinstance(prepared._ENGINES["numpy"], NumpyEngine)
    assert PreparedStore([], engine="auto").engine == "numpy"
