"""The store-item mapping (LangGraph values -> entries), tested without any framework."""

from __future__ import annotations

import subprocess
import sys
from datetime import datetime, timezone

import pytest

from poolsplit_integrations._entries import item_entry_id, item_to_entry

CREATED = datetime(2026, 1, 2, tzinfo=timezone.utc)


def test_the_mapping_module_imports_no_framework():
    probe = ("import sys, poolsplit_integrations._entries;"
             " print(sorted(m for m in ('langgraph', 'langchain_core', 'llama_index')"
             " if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_langmem_plain_shape_keeps_its_text_and_takes_the_key_as_id():
    value = {"content": "Ana prefers short answers.", "type": "preference"}
    entry = item_to_entry(("memories", "ana"), "m1", value, created_at=CREATED)
    assert entry == {"content": "Ana prefers short answers.", "type": "preference",
                     "id": "m1", "created": CREATED}
    assert value == {"content": "Ana prefers short answers.", "type": "preference"}  # untouched


def test_langmem_kind_shape_gives_readable_text_and_kind_as_the_default_type():
    value = {"kind": "Profile", "content": {"name": "Ana", "tz": "Europe/Lisbon"}}
    entry = item_to_entry(("memories", "ana"), "profile", value)
    assert entry["type"] == "Profile"
    assert entry["content"] == "name: Ana\ntz: Europe/Lisbon"
    assert value["content"] == {"name": "Ana", "tz": "Europe/Lisbon"}  # the caller's dict stays
    typed = item_to_entry(("m",), "p", {"kind": "Profile", "type": "fact", "content": {}})
    assert typed["type"] == "fact"  # an explicit type wins over kind


def test_a_value_without_content_is_read_as_its_readable_text():
    entry = item_to_entry(("m",), "k", {"memory": "Will likes AI", "scope": "always"})
    assert entry["content"] == "memory: Will likes AI\nscope: always"
    assert entry["scope"] == "always"


def test_structured_content_reads_the_same_whatever_order_the_store_keeps_its_keys_in():
    profile = {"timezone": "CET", "name": "Ana", "langs": ["pt", "en"], "away": None,
               "home": {"city": "Porto", "floor": 3}, "vip": True, "pets": [], "jobs": [
                   {"role": "dev", "team": "core"}, "writer"]}
    shuffled = dict(reversed(list(profile.items())))  # as PostgreSQL's jsonb may give it back
    text = item_to_entry(("m",), "p", {"kind": "Profile", "content": profile})["content"]
    assert text == item_to_entry(("m",), "p", {"kind": "Profile", "content": shuffled})["content"]
    assert text == "\n".join([
        "away: null", "home:", "  city: Porto", "  floor: 3", "jobs:", "  -", "    role: dev",
        "    team: core", "  - writer", "langs:", "  - pt", "  - en", "name: Ana", "pets: []",
        "timezone: CET", "vip: true"])
    assert "{" not in text and '"' not in text  # no JSON punctuation for the LLM to read
    assert item_to_entry(("m",), "p", {"content": ["a", "b"]})["content"] == "- a\n- b"
    assert item_to_entry(("m",), "p", {"content": {}})["content"] == "{}"


def test_created_comes_from_the_value_before_the_item_timestamp():
    assert item_to_entry(("m",), "k", {"created": "2025-05-01"}, created_at=CREATED)[
        "created"] == "2025-05-01"
    assert item_to_entry(("m",), "k", {}, created_at=CREATED)["created"] == CREATED
    assert "created" not in item_to_entry(("m",), "k", {})


def test_the_key_is_the_id_even_when_the_value_holds_another():
    assert item_to_entry(("m",), "key-1", {"id": "other"})["id"] == "key-1"


def test_a_search_score_becomes_similarity():
    assert item_to_entry(("m",), "k", {"content": "x"}, score=0.8)["similarity"] == 0.8
    assert "similarity" not in item_to_entry(("m",), "k", {"content": "x"})


def test_items_below_the_namespace_read_get_ids_that_cannot_collide():
    assert item_entry_id(("m", "ana"), "k", ("m", "ana")) == "k"
    assert item_entry_id(("m", "ana", "deep"), "k", ("m", "ana")) == ("deep", "k")
    assert item_entry_id(("m", "ana"), "k", ("m",)) != item_entry_id(("m", "bo"), "k", ("m",))
    entry = item_to_entry(("m", "ana", "deep"), "k", {"content": "x"}, read_from=("m",))
    assert entry["id"] == ("ana", "deep", "k")


@pytest.mark.parametrize("value", ["text", 5, None, ["a"]])
def test_a_value_that_is_not_a_mapping_is_refused_naming_the_item(value):
    with pytest.raises(TypeError, match=r"\('memories', 'ana'\) key 'm9'.*mapping"):
        item_to_entry(("memories", "ana"), "m9", value)
