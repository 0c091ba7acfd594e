"""render_pools: a pool-split result as prompt text, every correction first.

The always tier (every ``scope="always"`` entry of every pool, the ``"always"``
pool's included) comes first under one heading, then each pool under its name
in the result's order; with the call's ledgers, a line per pool saying how
many entries its budget left out. Checked on seeded near-tie stores through
every way to get a result, and on the refusals.
"""

from __future__ import annotations

import copy
import random
import re
from types import SimpleNamespace

import pytest

from poolsplit_core import (
    CORRECTIONS_HEADING,
    Pool,
    PreparedStore,
    explain_pools,
    render_pools,
    retrieve_pools,
)
from tests.core import strategies as s

SEEDS = range(120)


def marked_case(seed):
    """A near-tie store whose every entry's content starts with a unique marker."""
    rng = random.Random(seed)
    store = s.near_tie_store(rng, 40, 120)
    for n, entry in enumerate(store):
        entry["content"] = f"m{n} {entry['content']}"
    return store, s.near_tie_pools(rng), s.near_tie_context(rng), s.near_tie_now(rng)


def parse(text):
    """The text as (heading, marker number) per bullet line, and the headings in order."""
    rows, headings, heading = [], [], None
    for line in text.splitlines():
        if line.startswith("## "):
            heading = line[3:]
            headings.append(heading)
        elif line.startswith("- "):
            rows.append((heading, int(re.match(r"- m(\d+)", line).group(1))))
    return rows, headings


@pytest.mark.parametrize("block", range(4))
def test_every_loaded_entry_is_one_line_corrections_first_then_each_pool_in_order(block):
    for seed in SEEDS[block::4]:
        store, pools, context, now = marked_case(seed)
        got = retrieve_pools(store, pools, context, now=now, always_pool=True)
        number = {id(e): n for n, e in enumerate(store)}
        rows, headings = parse(render_pools(got))
        always = [(CORRECTIONS_HEADING, number[id(e)]) for picked in got.values()
                  for e in picked if e.get("scope") == "always"]
        rest = [(name, number[id(e)]) for name, picked in got.items()
                for e in picked if e.get("scope") != "always"]
        assert rows == always + rest, f"seed {seed}"
        # one heading per section: the corrections' first, then the pools in the result's order
        assert headings == ([CORRECTIONS_HEADING] if always else []) + [
            name for name, picked in got.items()
            if any(e.get("scope") != "always" for e in picked)], f"seed {seed}"
        if "always" in got:  # corrections no pool takes lead the tier
            assert rows[:len(got["always"])] == [
                (CORRECTIONS_HEADING, number[id(e)]) for e in got["always"]], f"seed {seed}"


@pytest.mark.parametrize("engine", ["python", "numpy"])
def test_every_way_to_get_a_result_renders_the_same_text(engine):
    for seed in SEEDS[::6]:
        store, pools, context, now = marked_case(seed)
        before = copy.deepcopy(store)
        want = render_pools(retrieve_pools(store, pools, context, now=now, always_pool=True))
        prepared = PreparedStore(store, engine=engine)
        assert render_pools(explain_pools(store, pools, context, now=now,
                                          always_pool=True).loaded()) == want, seed
        assert render_pools(prepared.retrieve_pools(pools, context, now=now,
                                                    always_pool=True)) == want, seed
        assert render_pools(prepared.decide(pools, context, now=now, always_pool=True)) == want
        assert s.same(before, store)  # nothing rendered was changed


def test_with_the_ledgers_each_pool_says_how_many_its_budget_left_out():
    for seed in SEEDS[::3]:
        store, pools, context, now = marked_case(seed)
        why = explain_pools(store, pools, context, now=now, always_pool=True)
        text = render_pools(why.loaded(), ledgers=why.ledgers)
        said = {}
        heading = None
        for line in text.splitlines():
            if line.startswith("## "):
                heading = line[3:]
            found = re.fullmatch(r"\((\d+) more did not fit this pool's budget\)", line)
            if found:
                said[heading] = int(found.group(1))
        # each pool's candidates (active, contextual, of its types, not loaded by an earlier
        # pool) that it did not load: a later pool may still load one
        left, earlier = {}, set()
        for pool in pools:
            candidates = [d for d in why.decisions if d.outcome != "inactive"
                          and d.entry.get("scope") != "always"
                          and pool.accepts(d.entry.get("type", "note"))
                          and d.index not in earlier]
            mine = {d.index for d in candidates if d.loaded and d.pool == pool.name}
            left[pool.name] = len(candidates) - len(mine)
            earlier |= mine
        assert said == {p: n for p, n in left.items() if n}, f"seed {seed}"
        # without the ledgers, the same lines under the same headings, less those lines
        assert parse(text)[0] == parse(render_pools(why.loaded()))[0], f"seed {seed}"


def test_a_pool_that_loaded_nothing_but_left_entries_out_shows_that_line_alone():
    store = [{"id": "big", "content": "x" * 400}, {"id": "fix", "scope": "always",
                                                   "content": "Ask before deleting."}]
    why = explain_pools(store, [Pool("notes", max_tokens=10, max_entries=3)])
    assert render_pools(why.loaded(), ledgers=why.ledgers) == (
        f"## {CORRECTIONS_HEADING}\n- Ask before deleting.\n\n"
        "## notes\n(1 more did not fit this pool's budget)")
    assert render_pools(why.loaded()) == f"## {CORRECTIONS_HEADING}\n- Ask before deleting."


def test_corrections_come_first_whatever_order_the_result_lists_its_pools_in():
    got = {"work": [{"content": "Deploy."}],
           "tasks": [{"scope": "always", "content": "Never on Friday."}, {"content": "Ship."}],
           "always": [{"scope": "always", "content": "Use staging."}]}
    assert render_pools(got, corrections_heading="Rules") == (
        "## Rules\n- Never on Friday.\n- Use staging.\n\n"
        "## work\n- Deploy.\n\n## tasks\n- Ship.")


def test_content_is_read_as_the_core_reads_it_and_continuation_lines_are_indented():
    got = {"notes": [{"content": "  first line\nsecond line\n"}, {"content": 42}, {}]}
    assert render_pools(got) == "## notes\n- first line\n  second line\n- 42\n- "
    assert render_pools({}) == render_pools({"notes": []}) == ""


def test_items_of_another_kind_are_read_by_the_entry_function():
    class Item:  # e.g. a store's item: the entry is its value
        def __init__(self, value):
            self.value = value

    got = {"always": [Item({"scope": "always", "content": "Use pg-2."})],
           "facts": [Item({"content": "Ana is in CET."})]}
    assert render_pools(got, entry=lambda item: item.value) == (
        f"## {CORRECTIONS_HEADING}\n- Use pg-2.\n\n## facts\n- Ana is in CET.")
    with pytest.raises(TypeError, match=(
            r"result\['always'\]\[0\] is a Item, neither an entry dict nor a Decision: pass"
            r" entry=, a function that reads one as an entry dict")):
        render_pools(got)
    with pytest.raises(TypeError, match=r"result\['always'\]\[0\]: entry must return a mapping"
                                        r" \(dict\), got str"):
        render_pools(got, entry=lambda item: "text")


def test_a_result_that_is_not_one_is_refused_naming_what_it_got():
    why = explain_pools([{"id": "a"}], [Pool("p", 5, 5)])
    with pytest.raises(TypeError, match=r"got Explanation: pass its loaded\(\) and ledgers="):
        render_pools(why)
    with pytest.raises(TypeError, match=r"result must map each pool's name .* got list"):
        render_pools([{"content": "x"}])
    with pytest.raises(TypeError, match=r"result\['p'\] must be a sequence .* got dict"):
        render_pools({"p": {"content": "x"}})
    with pytest.raises(TypeError, match=r"result\['p'\] must be a sequence .* got str"):
        render_pools({"p": "x"})
    with pytest.raises(TypeError, match="corrections_heading must be a str, got None"):
        render_pools({}, corrections_heading=None)
    with pytest.raises(TypeError, match="entry must be callable or None, got str"):
        render_pools({}, entry="value")


def test_ledgers_of_another_call_or_of_another_kind_are_refused():
    store = [{"id": "a", "type": "task"}, {"id": "b", "type": "note"}]
    why = explain_pools(store, [Pool("tasks", 5, 5, ("task",)), Pool("notes", 5, 5)])
    other = explain_pools(store, [Pool("tasks", 5, 5, ("task",))])
    with pytest.raises(ValueError, match=(
            r"ledgers must be the same call's, one per pool of the result: the result has"
            r" \['tasks', 'notes'\], the ledgers \['tasks'\]")):
        render_pools(why.loaded(), ledgers=other.ledgers)
    with pytest.raises(TypeError, match=r"ledgers\['tasks'\] must be a Ledger, got dict"):
        render_pools(other.loaded(), ledgers={"tasks": {"skipped_tokens": 1}})
    with pytest.raises(TypeError, match="ledgers must map pool names to Ledgers or be None"):
        render_pools(other.loaded(), ledgers=[why.ledgers["tasks"]])
    # a Ledger-like value of a copied core is read by its fields
    like = SimpleNamespace(skipped_tokens=2, skipped_entries=1)
    assert render_pools(other.loaded(), ledgers={"tasks": like}).endswith(
        "(3 more did not fit this pool's budget)")
