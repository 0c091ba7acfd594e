"""A living PreparedStore: add, upsert, delete and tenant partitions, held to the reference.

Random sequences of writes and queries run against a PreparedStore (plain and
partitioned by ``user_id``) and against a plain list kept by hand; every query
must give the literal reference's answer over that list -- the same entry
objects, in the same order, with the same positions. Stores are small-
vocabulary, few-priority and tight-budget, so near-ties sit at every bound.
"""

from __future__ import annotations

import copy
import random
from datetime import datetime, timedelta, timezone

import pytest

from poolsplit_core.poolsplit import Pool
from poolsplit_core.prepared import PreparedStore, _positions
from tests.reference import ref_retrieve_pools

# Every test of this module runs once per engine of PreparedStore (tests/core/conftest.py).
pytestmark = pytest.mark.usefixtures("each_engine")

NOW = datetime(2026, 3, 1, tzinfo=timezone.utc)
WORDS = "rotate database deploy release notes memory budget pool the and db ok v2".split()
TYPES = ("note", "task", "skill", "correction")
USERS = ("ana", "bo", "cy")



def supersede(model, stores, entry):
    """Upsert ``entry`` over the model's entry of the same id, in every store.

    An upsert keeps its partition: the replacement takes the old entry's
    ``user_id`` (or none), since moving partitions is refused.
    """
    at = next(i for i, e in enumerate(model) if e.get("id") == entry["id"])
    if "user_id" in model[at]:
        entry["user_id"] = model[at]["user_id"]
    else:
        entry.pop("user_id", None)
    model[at] = entry
    for store in stores:
        store.upsert(entry)

def make_entry(rng, entry_id):
    entry = {"type": rng.choice(TYPES), "user_id": rng.choice(USERS),
             "content": " ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 5)))}
    if entry_id is not None:
        entry["id"] = entry_id
    if rng.random() < 0.1:
        entry["scope"] = "always"
    if rng.random() < 0.8:
        # 0 and negative priorities are scored exactly, outside the groups
        entry["base_priority"] = rng.choice((5, 8, 8.0) if rng.random() < 0.9 else (0, -2))
    if rng.random() < 0.85:
        entry["created"] = (NOW - timedelta(days=rng.choice((0, 0, 3, 45, 200)))).isoformat()
    if rng.random() < 0.4:
        entry["tags"] = rng.sample(("db", "ops"), rng.randint(1, 2))
    if rng.random() < 0.4:
        entry["project"] = rng.choice(("atlas", "zeus"))
    if rng.random() < 0.7:
        entry["token_count"] = rng.randint(1, 12)
    if rng.random() < 0.05:
        entry["status"] = "retired"
    if rng.random() < 0.05:
        entry["superseded_by"] = "later"
    if rng.random() < 0.05:
        del entry["user_id"]
    return entry


def make_pools(rng):
    return [Pool(f"p{k}", rng.randint(0, 30), rng.randint(0, 5),
                 None if rng.random() < 0.3 else tuple(rng.sample(TYPES, rng.randint(1, 3))))
            for k in range(rng.randint(1, 3))]


def make_context(rng):
    return {"message": " ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 4))),
            "project": rng.choice(("atlas", "zeus", None)),
            "tags": rng.sample(("db", "ops"), rng.randint(0, 2))}


def matches(where, entry):
    return all(key in entry and entry[key] == value for key, value in where.items())


def expected(model, extra, pools, context, now, where):
    """The reference over the kept entries, as (entry object, position) per pool."""
    everything = list(model) + list(extra)
    kept = [i for i, entry in enumerate(everything) if matches(where, entry)]
    got = ref_retrieve_pools([everything[i] for i in kept], pools, context, now=now)
    position = {}
    for i in kept:
        position.setdefault(id(everything[i]), i)
    return {name: [(id(e), position[id(e)]) for e in picked] for name, picked in got.items()}


def answer(store, extra, pools, context, now, where):
    decided = store.decide(pools, context, now=now, extra=extra, where=where)
    return {name: [(id(d.entry), d.index) for d in picked] for name, picked in decided.items()}


def run_sequence(seed, steps=40):
    rng = random.Random(seed)
    next_id = iter(range(10**6))
    model = [make_entry(rng, f"m{next(next_id)}" if rng.random() < 0.9 else None)
             for _ in range(rng.randint(20, 80))]
    split = rng.randint(0, len(model))
    stores = [PreparedStore(model[:split]), PreparedStore(model[:split], partition_key="user_id")]
    for entry in model[split:]:
        for store in stores:
            store.add(entry)
    for step in range(steps):
        op = rng.random()
        ids = [e["id"] for e in model if "id" in e]
        if op < 0.2:
            entry = make_entry(rng, f"m{next(next_id)}")
            model.append(entry)
            for store in stores:
                store.add(entry)
        elif op < 0.45 and ids:
            supersede(model, stores, make_entry(rng, rng.choice(ids)))
        elif op < 0.6 and ids:
            target = rng.choice(ids)
            model = [e for e in model if e.get("id") != target]
            for store in stores:
                store.delete(target)
        elif op < 0.65:
            entry = make_entry(rng, f"m{next(next_id)}")
            model.append(entry)
            for store in stores:
                store.upsert(entry)  # an unknown id: added at the end
        else:
            pools, context = make_pools(rng), make_context(rng)
            now = NOW + timedelta(days=rng.choice((0, 1, 30)), hours=rng.randint(0, 9))
            extra = [make_entry(rng, None) for _ in range(rng.choice((0, 0, 2)))]
            where = {}
            if rng.random() < 0.7:
                where["user_id"] = rng.choice((*USERS, "nobody"))
            if rng.random() < 0.3:
                where["type"] = rng.choice(TYPES)
            want = expected(model, extra, pools, context, now, where)
            for store in stores:
                assert answer(store, extra, pools, context, now, where) == want, seed
                got = store.retrieve_pools(pools, context, now=now, where=where)
                assert {k: [id(e) for e in v] for k, v in got.items()} == {
                    k: [pair[0] for pair in v]
                    for k, v in expected(model, [], pools, context, now, where).items()}
        held = sorted({e["id"] for e in model if "id" in e})
        probe = [*rng.sample(held, min(5, len(held))), f"m{next(next_id)}"]
        for store in stores:
            assert [id(e) for e in store.entries] == [id(e) for e in model]
            assert len(store) == len(model)
            for entry_id in probe:  # get() finds what the model holds, by id
                want_entry = next((e for e in model if e.get("id") == entry_id), None)
                assert store.get(entry_id) is want_entry
            if step % 4 == 3:  # a full comparison is a rebuild: not after every write
                check_index_invariants(store)


def check_index_invariants(store):
    """The prepared lists are exactly what a fresh build of each part would hold.

    A stale list can hide behind correct answers (a lower suffix-minimum cost
    only skips less), so the structure itself is compared, list by list.
    """
    for part in store._parts.values():
        index = part.index
        fresh = type(index)(index.token_counter, index.is_active)
        # a deleted position holds nothing: an inactive stand-in keeps positions
        fresh.build([e if len(e) else {"status": "deleted"} for e in index.entries])
        assert {t: m for t, m in index.always.items() if m} == {
            t: m for t, m in fresh.always.items() if m}
        assert index.irregular == fresh.irregular
        if hasattr(index, "snapshot"):  # the numpy engine: its rows, read back
            check_rows(index, fresh)
            continue
        groups = {g: m for g, m in index.groups.items() if m}
        assert {g: sorted(m) for g, m in groups.items()} == {
            g: sorted(m) for g, m in fresh.groups.items()}
        for g, members in groups.items():
            keys = [index.facts[i].time_key for i in members]
            assert keys == sorted(keys)
            assert index.min_cost[g] == fresh.suffix_min(members)
        for mine, theirs in ((index.by_word, fresh.by_word), (index.by_tag, fresh.by_tag)):
            # (a list is packed until read or changed: _positions reads either)
            flat = {(kind, item): sorted(_positions(postings)) for kind, lists in mine.items()
                    for item, postings in lists.items() if postings}
            assert flat == {(kind, item): sorted(_positions(postings))
                            for kind, lists in theirs.items()
                            for item, postings in lists.items()}
            for lists in mine.values():
                for postings in lists.values():
                    keys = [index.facts[i].time_key for i in _positions(postings)]
                    assert keys == sorted(keys)


def check_rows(index, fresh):
    """A living numpy index's rows hold what a fresh build's rows hold, position by position.

    Ranks are compared by the order they give: a fresh build numbers them
    anew, a living index keeps the dead rows' keys between them.
    """
    mine, theirs = index.snapshot(), fresh.snapshot()
    assert mine.keys() == theirs.keys()
    for i in mine:
        assert mine[i][:-1] == theirs[i][:-1], i
        assert mine[i][-1] == theirs[i][-1], i  # the (created, id, position) key of its rank
    ranked = sorted(mine, key=lambda i: index.columns["rank"][index.row_of[i]])
    assert ranked == sorted(theirs, key=lambda i: fresh.columns["rank"][fresh.row_of[i]])
    for rows in index.candidates.values():  # cached candidates: every alive row of the types
        alive = [r for r in rows.tolist() if index.columns["alive"][r]]
        assert alive == sorted(alive)


@pytest.mark.parametrize("block", range(10))
def test_writes_and_queries_in_any_order_give_the_reference_answer(block):
    for seed in range(block * 40, block * 40 + 40):
        run_sequence(seed)


@pytest.mark.parametrize("seed", range(30))
def test_deleting_an_id_several_entries_hold_removes_every_one_as_the_reference_does(seed):
    # A store built from a list that repeats ids (the core allows it): a delete of such
    # an id removes all of them, in every part and view, and answers stay the reference's.
    rng = random.Random(f"twins-{seed}")
    model = [make_entry(rng, f"d{rng.randrange(12)}") for _ in range(rng.randint(40, 120))]
    stores = [PreparedStore(model), PreparedStore(model, partition_key="user_id")]
    for store in stores:  # views built before the deletes, kept current by them
        store.decide(make_pools(rng), make_context(rng), now=NOW, where={"type": "task"})
    for target in rng.sample(sorted({e["id"] for e in model}), 6):
        model = [e for e in model if e["id"] != target]
        pools, context = make_pools(rng), make_context(rng)
        where = rng.choice(({}, {"user_id": "ana"}, {"type": "task"}))
        want = expected(model, [], pools, context, NOW, where)
        for store in stores:
            store.delete(target)
            assert [id(e) for e in store.entries] == [id(e) for e in model]
            assert answer(store, [], pools, context, NOW, where) == want, seed
            check_index_invariants(store)


def test_a_rebuild_after_writes_gives_the_same_answers():
    rng = random.Random(5)
    model = [make_entry(rng, f"e{i}") for i in range(60)]
    store = PreparedStore(model, partition_key="user_id")
    for i in range(0, 60, 3):
        store.delete(f"e{i}")
    store.upsert({**model[1], "content": "deploy the database"})
    pools, context = make_pools(rng), {"message": "deploy database"}
    before = answer(store, [], pools, context, NOW, {"user_id": "ana"})
    live = store.entries
    store.rebuild()
    assert [id(e) for e in store.entries] == [id(e) for e in live]
    assert answer(store, [], pools, context, NOW, {"user_id": "ana"}) == before


# -- the contract of each write -----------------------------------------------


def ids(store):
    return [e.get("id") for e in store.entries]


def test_upsert_keeps_the_entry_in_its_place_so_ties_break_as_before():
    # The ids 1 and "1" differ but sort alike: the two entries tie on score,
    # created and id, and input position decides. Replacing the first in
    # place keeps it first; a delete-then-append would hand the tie over.
    def twin(entry_id):
        return {"id": entry_id, "content": "x", "created": "2026-01-01", "token_count": 1}

    store = PreparedStore([twin("1"), twin(1)])
    pool = [Pool("one", max_tokens=5, max_entries=1)]
    assert store.retrieve_pools(pool, now=NOW)["one"][0]["id"] == "1"
    replacement = twin("1")
    store.upsert(replacement)
    assert store.retrieve_pools(pool, now=NOW)["one"] == [replacement]
    assert [e["id"] for e in store.entries] == ["1", 1]


@pytest.mark.parametrize("exact_by", ["similarity", "extra"])
def test_an_upserted_entry_s_old_place_never_orders_a_tie_after_a_query(exact_by):
    # x, a and b all score 5 x 0.3 = 1.5; a is scored exactly (it carries a
    # similarity, or comes as an extra). Upserting x after a query keeps x's
    # position for the new x: whatever the engine kept of the old one must not
    # order a against b by the new x's key. The key (created, id) puts b
    # (February) before a (March).
    pools = [Pool("all", max_tokens=100, max_entries=10)]
    now = datetime(2026, 7, 1, tzinfo=timezone.utc)
    a = {"id": "a", "created": "2025-03-01"}
    stored = [{"id": "x", "created": "2025-01-01"}, {"id": "b", "created": "2025-02-01"}]
    extra = []
    if exact_by == "similarity":
        stored.insert(1, {**a, "similarity": 0.5})
    else:
        extra = [a]
    store = PreparedStore(stored)

    def loaded():
        return [d.entry["id"] for d in store.decide(pools, now=now, extra=extra)["all"]]

    assert loaded() == ["x", "b", "a"]
    store.upsert({"id": "x", "created": "2026-06-30"})
    assert loaded() == ["x", "b", "a"]
    want = ref_retrieve_pools(store.entries + extra, pools, now=now)
    assert loaded() == [e["id"] for e in want["all"]]


def test_delete_removes_the_entry_from_the_next_query():
    fix = {"id": "fix", "scope": "always", "content": "never force-push"}
    store = PreparedStore([fix, {"id": "n", "content": "note"}])
    pools = [Pool("all", max_tokens=50, max_entries=5)]
    assert [e["id"] for e in store.retrieve_pools(pools, now=NOW)["all"]] == ["fix", "n"]
    store.delete("fix")
    assert [e["id"] for e in store.retrieve_pools(pools, now=NOW)["all"]] == ["n"]
    assert len(store) == 1


def test_a_superseded_correction_drops_on_the_very_next_query():
    store = PreparedStore([{"id": "fix", "scope": "always", "content": "deploy with make"}])
    pools = [Pool("all", max_tokens=50, max_entries=5)]
    store.upsert({"id": "fix", "scope": "always", "content": "deploy with make",
                  "superseded_by": "fix-2"})
    store.add({"id": "fix-2", "scope": "always", "content": "deploy with just"})
    assert [e["id"] for e in store.retrieve_pools(pools, now=NOW)["all"]] == ["fix-2"]


def test_writes_never_mutate_the_entries():
    rng = random.Random(3)
    entries = [make_entry(rng, f"e{i}") for i in range(30)]
    before = copy.deepcopy(entries)
    store = PreparedStore(entries[:10], partition_key="user_id")
    for entry in entries[10:]:
        store.upsert(entry)
    store.delete("e3")
    store.upsert({**entries[4]})
    store.decide(make_pools(rng), make_context(rng), now=NOW, where={"user_id": "ana"})
    assert entries == before


def test_upsert_refuses_an_entry_without_an_id():
    store = PreparedStore([{"content": "no id"}])
    with pytest.raises(ValueError, match=r"upsert needs an entry with an 'id'; add\(\) takes"):
        store.upsert({"content": "also no id"})
    assert len(store) == 1


def test_delete_refuses_an_unknown_id_and_none():
    store = PreparedStore([{"id": "a"}])
    with pytest.raises(KeyError, match="no stored entry has id='zz'"):
        store.delete("zz")
    with pytest.raises(ValueError, match="delete needs an entry with an 'id', got None"):
        store.delete(None)
    with pytest.raises(TypeError, match=r"delete: id must be hashable, got \['a'\]"):
        store.delete(["a"])
    assert ids(store) == ["a"]


def test_an_id_held_twice_makes_upsert_refuse_it_as_ambiguous_and_delete_remove_both():
    store = PreparedStore([{"id": "d", "content": "1"}, {"id": "x"}, {"id": "d", "content": "2"}])
    with pytest.raises(ValueError, match=r"id='d' is held by 2 stored entries \(at 0, 2\)"):
        store.upsert({"id": "d"})
    assert ids(store) == ["d", "x", "d"]
    store.delete("x")  # other ids still work
    assert ids(store) == ["d", "d"]
    store.delete("d")  # the id can always be forgotten: every entry holding it goes
    assert ids(store) == []
    with pytest.raises(KeyError, match="no stored entry has id='d'"):
        store.delete("d")
    store.add({"id": "d", "content": "3"})  # and written again, once
    assert store.get("d") == {"id": "d", "content": "3"}


def test_upsert_refuses_to_move_an_entry_to_another_partition():
    store = PreparedStore([{"id": "m", "user_id": "ana"}], partition_key="user_id")
    with pytest.raises(ValueError, match=r"partition \(user_id='ana' to 'bo'\)"):
        store.upsert({"id": "m", "user_id": "bo"})
    assert store.entries[0]["user_id"] == "ana"


@pytest.mark.parametrize(("bad", "error", "message"), [
    ({"id": "p", "base_priority": "hi"}, ValueError,
     "entry id='p': base_priority must be a number, got 'hi'"),
    ({"id": "p", "base_priority": float("nan")}, ValueError,
     "entry id='p': base_priority must be finite"),
    ({"id": "p", "tags": {"db": 1}}, TypeError, "entry id='p': tags must be a str or an iterable"),
    ({"id": "p", "tags": ["db", 3]}, TypeError, "entry id='p': tags must hold only str"),
])
def test_an_entry_the_scorer_would_refuse_is_refused_when_written(bad, error, message):
    good = {"id": "p", "content": "fine"}
    with pytest.raises(error, match=message):
        PreparedStore([good, {"id": "q"}, bad])
    store = PreparedStore([good])
    for write in (store.add, store.upsert):
        with pytest.raises(error, match=message):
            write(bad)
        assert store.entries == [good]  # nothing changed
    pools = [Pool("all", max_tokens=50, max_entries=5)]
    assert store.retrieve_pools(pools, now=NOW)["all"] == [good]


def test_entries_that_are_never_scored_are_not_checked():
    # Inactive and always-scope entries are never scored: a stray field is no error.
    store = PreparedStore([{"id": "r", "status": "retired", "base_priority": "hi"},
                           {"id": "fix", "scope": "always", "base_priority": "hi"}])
    pools = [Pool("all", max_tokens=50, max_entries=5)]
    assert [e["id"] for e in store.retrieve_pools(pools, now=NOW)["all"]] == ["fix"]


def test_a_partitioned_query_walks_only_its_tenant():
    seen = []

    def include(entry):
        seen.append(entry["user_id"])
        return True

    rng = random.Random(11)
    store = PreparedStore([make_entry(rng, f"e{i}") | {"user_id": USERS[i % 3]}
                           for i in range(90)], partition_key="user_id")
    store.decide([Pool("all", max_tokens=10**6, max_entries=10**6)], {"message": "deploy"},
                 now=NOW, where={"user_id": "bo"}, include=include)
    assert seen and set(seen) == {"bo"}


def test_a_query_without_the_partition_key_reads_every_tenant():
    store = PreparedStore([{"id": "a", "user_id": "ana"}, {"id": "b", "user_id": "bo"},
                           {"id": "c"}], partition_key="user_id")
    pools = [Pool("all", max_tokens=50, max_entries=5)]
    assert [e["id"] for e in store.retrieve_pools(pools, now=NOW)["all"]] == ["a", "b", "c"]
    assert [e["id"] for e in store.retrieve_pools(pools, now=NOW, where={"user_id": "bo"})[
        "all"]] == ["b"]
    assert store.retrieve_pools(pools, now=NOW, where={"user_id": "zed"})["all"] == []
    # no stored value is unhashable (a build refuses one), so none equals this filter's
    assert store.retrieve_pools(pools, now=NOW, where={"user_id": ["bo"]})["all"] == []


def test_a_partition_value_must_be_hashable():
    with pytest.raises(TypeError, match=r"entry id='a': partition key 'user_id' must be hashable"):
        PreparedStore([{"id": "a", "user_id": ["ana"]}], partition_key="user_id")


@pytest.mark.parametrize(("where", "message"), [
    ("ana", "where must be a mapping or None, got str"),
    ({1: "ana"}, "where keys must be str, got 1"),
])
def test_a_bad_where_is_refused(where, message):
    store = PreparedStore([{"id": "a"}])
    with pytest.raises(TypeError, match=message):
        store.decide([Pool("all", 5, 5)], where=where)


def test_get_finds_an_entry_by_id_and_refuses_an_ambiguous_one():
    a, b, twin1, twin2 = {"id": "a"}, {"id": "b"}, {"id": "t"}, {"id": "t"}
    store = PreparedStore([a, {"content": "no id"}, twin1, twin2])
    assert store.get("a") is a and store.get("zz") is None and store.get("zz", b) is b
    assert store.get(None) is None  # an entry without an id cannot be asked for
    with pytest.raises(ValueError, match=r"id='t' is held by 2 stored entries"):
        store.get("t")
    with pytest.raises(TypeError, match="hashable"):
        store.get(["a"])
    store.upsert({"id": "a", "content": "new"})
    assert store.get("a")["content"] == "new"
    store.delete("a")
    assert store.get("a") is None
