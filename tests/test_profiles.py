"""Every benchmark profile: the prepared store and the stateless core give the reference answer.

The benchmark times these paths on these profiles; this holds them to the
literal reference on small stores of every profile, each query with its filter,
the prepared store on each of its engines.
"""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

from bench_retrieve import NOW, POOLS
from profiles import PROFILES

from poolsplit_core.poolsplit import retrieve_pools
from poolsplit_core.prepared import PreparedStore
from tests.reference import ref_retrieve_pools


def _ids(loaded):
    return {name: [e["id"] for e in entries] for name, entries in loaded.items()}


@pytest.mark.parametrize("engine", ["python", "numpy"])
@pytest.mark.parametrize("name", list(PROFILES))
def test_every_path_gives_the_reference_answer_on_the_profile(name, engine):
    profile = PROFILES[name]
    store = profile.make(600)
    queries = profile.queries(6, 11)
    wheres = profile.where(600, 6)
    hooks = profile.hooks
    prepared = PreparedStore(store, partition_key="user_id" if name == "tenants" else None,
                             engine=engine, **hooks)
    assert prepared.engine == engine
    for query, where in zip(queries, wheres):
        kept = [e for e in store if not where or all(e.get(k) == v for k, v in where.items())]
        # the reference with its own literal scorer and counter (zh: the core's Unicode one)
        want = _ids(ref_retrieve_pools(kept, POOLS, query, now=NOW, **profile.reference_hooks))
        assert _ids(retrieve_pools(kept, POOLS, query, now=NOW, **hooks)) == want
        assert _ids(prepared.retrieve_pools(POOLS, query, now=NOW, where=where)) == want
        assert any(want.values()), "a profile whose queries load nothing measures nothing"


def test_profiles_differ_where_they_claim_to():
    flat = PROFILES["flat"].make(300)
    assert {e["base_priority"] for e in flat} == {5}
    assert not any(e.get("scope") == "always" for e in flat)
    heavy = PROFILES["heavy-always"].make(5_000)
    assert sum(e.get("scope") == "always" for e in heavy) > 50
    long = PROFILES["long"].make(50)
    assert min(len(e["content"]) for e in long) >= 2_000
    tenants = PROFILES["tenants"].make(1_000)
    assert len({e["user_id"] for e in tenants}) == 10
    zh = PROFILES["zh"].make(200)
    assert all(len(e["content"]) == len(e["content"].replace(" ", "")) for e in zh)
    assert sum(any("\u4e00" <= ch <= "\u9fff" for ch in e["content"]) for e in zh) == 200
    assert PROFILES["zh"].scorer.words is not None  # read with the Unicode reader
    wide = PROFILES["wide"].make(3_000)
    assert len({e["project"] for e in wide}) > 40
