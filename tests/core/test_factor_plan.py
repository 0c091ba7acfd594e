"""The per-query factor plan: the tag and project tables a query holds.

The scalar score, the prepared store's bounds and the numpy engine's columns
read the same per-query values (``_Query.tag_factor``, ``_Query.project_factor``,
``_Query.message_factors``); each must equal the spec-faithful factor function
bit for bit.
"""

from __future__ import annotations

import math
import random
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from poolsplit_core import poolsplit as core

TAGS = [f"t{k}" for k in range(8)]
PROJECTS: list[Any] = [None, "alpha", "beta", "gamma", 3, 3.0, ("a", 1)]


class _EqualsEverything:
    def __eq__(self, other: object) -> bool:
        return True

    __hash__ = None  # type: ignore[assignment]


def _bits(x: float) -> str:
    return float(x).hex()


def _queries(rng: random.Random, count: int) -> list[core._Query]:
    out = []
    for _ in range(count):
        context: dict[str, Any] = {"tags": rng.sample(TAGS, rng.randrange(0, 5)),
                                   "message": rng.choice(["", "alpha beta words", "t0 t1"])}
        project = rng.choice([*PROJECTS, "missing", float("nan"), ["unhashable"],
                              _EqualsEverything()])
        if project is not None:
            context["project"] = project
        out.append(core._Query.from_context(context))
    return out


def test_the_tag_table_is_the_tag_factor_bit_for_bit() -> None:
    rng = random.Random(7)
    for query in _queries(rng, 60):
        for _ in range(40):
            tags = frozenset(rng.sample(TAGS, rng.randrange(0, 7)))
            shared = len(query.tags & tags)
            expected = core._tag_factor(tags, query)
            assert _bits(query.tag_factor(shared, len(tags))) == _bits(expected)
            assert _bits(query.tag_factor(shared, len(tags))) == _bits(expected)  # cached
        # every tag shared: the bound the prepared tag lists use
        assert _bits(query.tag_factor(len(query.tags), len(query.tags))) == _bits(
            core._tag_factor(query.tags, query))
        assert query.tag_factor(0, 0) == core._tag_factor((), query) == 1.0
    # sizes and shares no real pair of tag sets meets: still the spec's arithmetic
    query = core._Query.from_context({"tags": TAGS})
    for size in range(1, 60):
        for shared in range(0, min(size, len(TAGS)) + 1):
            assert _bits(query.tag_factor(shared, size)) == _bits(core._tag_share(shared, size))


def test_the_project_table_is_the_project_factor() -> None:
    rng = random.Random(11)
    for query in _queries(rng, 80):
        assert len(query.project_factors) == 3
        for project in [*PROJECTS, query.project, "missing", float("nan"), ["x"],
                        _EqualsEverything()]:
            expected = core._project_factor(project, query)
            assert _bits(query.project_factor(project)) == _bits(expected), project
        assert query.project_factor(None) == query.project_factors[0] == core._PROJECT_NONE
    query = core._Query.from_context({"project": "alpha"})
    assert query.project_factors == (core._PROJECT_NONE, core._PROJECT_MATCH, core._PROJECT_OTHER)


def test_the_entry_score_multiplies_the_plan_in_the_spec_order() -> None:
    rng = random.Random(13)
    for query in _queries(rng, 40):
        for _ in range(50):
            tags = frozenset(rng.sample(TAGS, rng.randrange(0, 7)))
            project = rng.choice([*PROJECTS, query.project])
            base, recency = rng.uniform(0.01, 100.0), rng.uniform(0.3, 1.0)
            message = rng.choice(query.message_factors)
            got = core._entry_score(base, recency, tags, project, message, query)
            expected = core._score(base, recency, core._tag_factor(tags, query),
                                   core._project_factor(project, query), message)
            assert _bits(got) == _bits(expected)


def test_the_message_table_is_the_message_factor() -> None:
    rng = random.Random(17)
    for query in _queries(rng, 40):
        for k, factor in enumerate(query.message_factors):
            assert _bits(factor) == _bits(core._message_factor(k, query))


np = pytest.importorskip("numpy")


def test_the_numpy_tag_column_reads_the_query_table_once_per_pair() -> None:
    from poolsplit_core._vectorized import _tag_column

    query = core._Query.from_context({"tags": TAGS})
    rng = np.random.default_rng(5)
    for high in (8, 5000):  # the marked range, then (sizes far apart) the unique pairs
        sizes = rng.integers(1, high, 300).astype(np.int32)
        sizes[:8] = np.arange(1, 9)
        shared = np.minimum(rng.integers(1, len(TAGS) + 1, 300), sizes).astype(np.int32)
        calls: list[tuple[int, int]] = []

        def factor(s: int, n: int, calls: list[tuple[int, int]] = calls) -> float:
            calls.append((s, n))
            return query.tag_factor(s, n)

        column = _tag_column(factor, shared, sizes)
        assert len(calls) == len(set(calls)) == len(set(zip(shared.tolist(), sizes.tolist())))
        for s, n, value in zip(shared.tolist(), sizes.tolist(), column.tolist()):
            assert _bits(value) == _bits(core._tag_share(s, n))


def test_the_numpy_columns_score_as_the_scalar_plan() -> None:
    from poolsplit_core._vectorized import NumpyEngine

    rng = random.Random(19)
    now = datetime(2026, 12, 6, tzinfo=timezone.utc)
    entries = []
    for k in range(400):
        entry: dict[str, Any] = {
            "id": f"e{k}", "content": " ".join(rng.sample(["alpha", "beta", "gamma", "delta",
                                                          "words", "t0", "t1"], 3)),
            "type": rng.choice(["note", "fact"]), "status": "active",
            "base_priority": rng.randrange(1, 10),
            "created": (now - timedelta(days=rng.uniform(0, 200))).isoformat(),
            "tags": rng.sample(TAGS, rng.randrange(0, 6)),
        }
        project = rng.choice(PROJECTS)
        if project is not None:
            entry["project"] = project
        entries.append(entry)
    index = NumpyEngine().index(core.default_token_counter, core.default_is_active, None)
    index.build(entries)
    tag_hits = 0
    for query_number in range(30):
        context: dict[str, Any] = {"tags": rng.sample(TAGS, rng.randrange(0, 5)),
                                   "message": "alpha beta words",
                                   "project": rng.choice(PROJECTS)}
        vector = index.query(entries, context, now, None, None, None)
        scores = vector.row_scores()
        query = vector.query
        table = dict(query.tag_factors)  # what the columns read, before any scalar score
        for position, row in enumerate(index.row_of):
            if row < 0:
                continue
            entry = entries[position]
            tags = frozenset(entry["tags"])
            shared = len(query.tags & tags)
            if shared:
                tag_hits += 1
                assert table[shared, len(tags)] == query.tag_factor(shared, len(tags))
            expected = core._default_score(entry, query, now, "")
            assert _bits(scores[row]) == _bits(expected), (query_number, position)
            assert not math.isnan(scores[row])
    assert tag_hits
