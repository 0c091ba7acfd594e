"""Store profiles for the benchmarks: one generator per kind of memory store.

Each profile gives a deterministic store of ``n`` entries, the queries to run on
it and the ``where=`` filter of each query (the multi-tenant profile filters by
tenant). The profiles differ where the prepared store's bounds differ:

- ``standard``: the benchmark's own store (``bench_retrieve.make_store``);
- ``wide``: 50 projects, 500 tags, a flat vocabulary of 20,000 words;
- ``flat``: one base priority, every entry created within the same day, no
  corrections, so scores tie and bounds are loose;
- ``heavy-always``: 2% of entries are always-scope corrections, all of them
  loaded on every query, over an otherwise standard store with few of them;
- ``tenants``: 100 entries per tenant (1,000 tenants at 100k), a tenant filter
  on every query;
- ``long``: content of 2,000-8,000 characters;
- ``zh``: the standard store's shape with Chinese content of 10-300 characters
  (no spaces), read and counted the way a Chinese store is:
  ``make_scorer(words=unicode_words)`` and ``cjk_token_counter`` on every path.

``standard`` and ``zh`` hold the benchmark store's 2% corrections (about 1,900
loaded per query at 100k), ``heavy-always`` 2% of its own, ``flat`` none, and
every other profile 0.1%: a large always tier is measured on three profiles,
and the adapters' cost per returned document with it.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from bench_retrieve import (
    CUM_WEIGHTS,
    GLUE,
    NOW,
    PROJECTS,
    TAGS,
    TYPES,
    UNICODE,
    WORDS,
    make_cjk_queries,
    make_cjk_store,
    make_queries,
)

from poolsplit_core.multilingual import cjk_token_counter
from poolsplit_core.poolsplit import default_scorer, default_token_counter

Store = list[dict[str, Any]]


@dataclass(frozen=True)
class Profile:
    """A named store generator and its queries."""

    name: str
    description: str
    make: Callable[[int], Store]
    queries: Callable[[int, int], list[dict[str, Any]]]
    where: Callable[[int, int], list[dict[str, Any] | None]]
    # the scorer and token counter every path uses on this profile (the defaults but for zh)
    scorer: Callable[..., float] = default_scorer
    token_counter: Callable[[str], int] = default_token_counter

    @property
    def hooks(self) -> dict[str, Any]:
        """``scorer=`` and ``token_counter=`` for the core's functions, stores and adapters."""
        return {"scorer": self.scorer, "token_counter": self.token_counter}

    @property
    def reference_hooks(self) -> dict[str, Any]:
        """The same for the literal reference (``tests/reference.py``).

        With the defaults, none: the reference scores and counts with its own
        literal scorer and counter, not the core's. Another scorer (zh's
        Unicode reader) has no literal version there: the reference calls the
        core's, entry by entry, as it calls any custom scorer.
        """
        if self.scorer is default_scorer and self.token_counter is default_token_counter:
            return {}
        return self.hooks


def _text(rng: random.Random, length: int, words: list[str], cum: list[float] | None) -> str:
    parts: list[str] = []
    size = 0
    while size < length:
        word = (rng.choices(words, cum_weights=cum)[0] if cum else rng.choice(words)) \
            if rng.random() < 0.55 else rng.choice(GLUE)
        parts.append(word)
        size += len(word) + 1
    return " ".join(parts)[:length]


def _store(n: int, *, seed: int, corrections: float, projects: list[Any], tags: list[str],
           words: list[str], cum: list[float] | None, length: tuple[int, int],
           flat: bool = False, tenants: int = 0) -> Store:
    rng = random.Random(seed)
    names, weights = [t[0] for t in TYPES], [t[2] for t in TYPES]
    priority = {t[0]: t[1] for t in TYPES}
    store = []
    for i in range(n):
        if not flat and rng.random() < corrections:
            entry_type, scope = "correction", "always"
        else:
            entry_type, scope = rng.choices(names, weights)[0], None
        seconds = rng.randrange(86_400) if flat else rng.randrange(365 * 86_400)
        entry: dict[str, Any] = {
            "id": f"m{i:06d}",
            "type": entry_type,
            "content": _text(rng, int(rng.uniform(*length)), words, cum),
            "created": (NOW - timedelta(seconds=seconds)).isoformat(),
            "base_priority": 5 if flat else priority.get(entry_type, 9) + rng.choice((-1, 0, 1)),
            "tags": rng.sample(tags, rng.randrange(0, 4)),
            "project": rng.choice(projects),
        }
        if scope:
            entry["scope"] = scope
        if tenants:
            entry["user_id"] = f"u{i % tenants:04d}"
        if rng.random() < 0.30:
            entry["token_count"] = max(1, len(entry["content"]) // 4 + rng.randrange(-3, 4))
        if rng.random() < 0.05:
            entry["status"] = "retired" if rng.random() < 0.5 else "active"
        store.append(entry)
    return store


WIDE_PROJECTS: list[Any] = [None] + [f"proj{k:02d}" for k in range(50)]
WIDE_TAGS = WORDS[:500]


def _wide_queries(count: int, seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    return [{"message": " ".join(rng.choice(WORDS) for _ in range(rng.randrange(3, 13))),
             "project": rng.choice(WIDE_PROJECTS), "tags": rng.sample(WIDE_TAGS, 2)}
            for _ in range(count)]


def _no_filter(n: int, count: int) -> list[dict[str, Any] | None]:
    return [None] * count


def _tenants(n: int) -> int:
    return max(1, n // 100)


def _tenant_filters(n: int, count: int) -> list[dict[str, Any] | None]:
    rng = random.Random(13)
    return [{"user_id": f"u{rng.randrange(_tenants(n)):04d}"} for _ in range(count)]


def _standard(n: int) -> Store:
    from bench_retrieve import make_store

    return make_store(n)


PROFILES: dict[str, Profile] = {
    p.name: p for p in (
        Profile("standard", "the benchmark's own store (2% corrections)", _standard,
                lambda count, seed: make_queries(count, seed), _no_filter),
        Profile("wide", "50 projects, 500 tags, 20,000 equally likely words",
                lambda n: _store(n, seed=21, corrections=0.001, projects=WIDE_PROJECTS,
                                 tags=WIDE_TAGS, words=WORDS, cum=None, length=(20, 800)),
                _wide_queries, _no_filter),
        Profile("flat", "one base priority, created within one day, no corrections",
                lambda n: _store(n, seed=22, corrections=0.0, projects=PROJECTS, tags=TAGS,
                                 words=WORDS, cum=CUM_WEIGHTS, length=(20, 800), flat=True),
                lambda count, seed: make_queries(count, seed), _no_filter),
        Profile("heavy-always", "2% always-scope corrections, all loaded every query",
                lambda n: _store(n, seed=23, corrections=0.02, projects=PROJECTS, tags=TAGS,
                                 words=WORDS, cum=CUM_WEIGHTS, length=(20, 800)),
                lambda count, seed: make_queries(count, seed), _no_filter),
        Profile("tenants", "100 entries per tenant, a tenant filter on every query",
                lambda n: _store(n, seed=24, corrections=0.001, projects=PROJECTS, tags=TAGS,
                                 words=WORDS, cum=CUM_WEIGHTS, length=(20, 800),
                                 tenants=_tenants(n)),
                lambda count, seed: make_queries(count, seed), _tenant_filters),
        Profile("long", "content of 2,000-8,000 characters",
                lambda n: _store(n, seed=25, corrections=0.001, projects=PROJECTS, tags=TAGS,
                                 words=WORDS, cum=CUM_WEIGHTS, length=(2_000, 8_000)),
                lambda count, seed: make_queries(count, seed), _no_filter),
        Profile("zh", "Chinese content of 10-300 characters, the Unicode reader and CJK counter",
                make_cjk_store, lambda count, seed: make_cjk_queries(count, seed), _no_filter,
                scorer=UNICODE, token_counter=cjk_token_counter),
    )
}
