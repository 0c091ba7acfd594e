"""Hypothesis strategies for memory stores, pools and contexts, and a strict deep compare.

Stores are built to make every rule of the spec fire often: a small set of types,
some always-scope entries, ties on priority and created, content from a small
vocabulary (so message overlap happens), tags as lists or bare strings, costs
both explicit and counted, inactive entries, missing and int ids, and the same
dict object listed twice.
"""

from __future__ import annotations

import math
import random
import warnings
from datetime import datetime, timedelta, timezone
from typing import Any

from hypothesis import strategies as st

from poolsplit_core.poolsplit import Pool

TYPES = ("note", "task", "skill", "correction", "growth")
TAGS = ("db", "ops", "ui", "ml")
PROJECTS = ("atlas", "zeus")
VOCAB = ("rotate", "database", "credentials", "deploy", "release", "notes", "memory",
         "budget", "Rotate", "DEPLOY!", "pool-split", "the", "and", "with", "db", "ok",
         "v2", "x2026")
ZONES = (timezone.utc, timezone(timedelta(hours=5, minutes=30)), timezone(timedelta(hours=-8)),
         timezone(timedelta(hours=14)))
FIXED_CREATED = ("2026-03-01T00:00:00Z", "2026-03-01", "2025-01-01T00:00:00+05:30",
                 "2020-01-01", "2999-01-01T00:00:00Z",
                 "\u0662\u0660\u0662\u0666-\u0660\u0663-\u0660\u0661")  # Arabic-Indic digits


@st.composite
def iso_timestamps(draw):
    moment = draw(st.datetimes(min_value=datetime(2025, 1, 1), max_value=datetime(2026, 12, 31)))
    form = draw(st.sampled_from(("Z", "z", "naive", "offset", "compact", "hours", "date",
                                 "space", "micro", "comma", "padded")))
    stamp = moment.strftime("%Y-%m-%dT%H:%M:%S")
    if form in ("offset", "compact", "hours"):
        sign = draw(st.sampled_from("+-"))
        hours, minutes = draw(st.integers(0, 14)), draw(st.sampled_from((0, 15, 30, 45)))
        offset = {"offset": f"{hours:02d}:{minutes:02d}", "compact": f"{hours:02d}{minutes:02d}",
                  "hours": f"{hours:02d}"}[form]
        return f"{stamp}{sign}{offset}"
    return {
        "Z": stamp + "Z",
        "z": stamp + "z",
        "naive": stamp,
        "date": moment.strftime("%Y-%m-%d"),
        "space": moment.strftime("%Y-%m-%d %H:%M"),
        "micro": moment.strftime("%Y-%m-%dT%H:%M:%S.%f") + "Z",
        "comma": stamp + ",1234567",
        "padded": f"  {stamp}Z ",
    }[form]


aware_or_naive = st.one_of(st.none(), st.sampled_from(ZONES))

created_values = st.one_of(
    iso_timestamps(),
    st.sampled_from(FIXED_CREATED),
    st.datetimes(min_value=datetime(2025, 1, 1), max_value=datetime(2026, 12, 31),
                 timezones=aware_or_naive),
    st.just("not a date"),
    st.none(),
)

content_values = st.one_of(
    st.none(),
    st.lists(st.sampled_from(VOCAB), max_size=10).map(" ".join),
    st.integers(0, 99_999),
)

entries = st.fixed_dictionaries(
    {},
    optional={
        "id": st.one_of(st.sampled_from("abcdefghij"), st.integers(0, 12)),
        "type": st.sampled_from(TYPES),
        "scope": st.sampled_from(("always", "always", "contextual", "session")),
        "base_priority": st.one_of(st.integers(-3, 10), st.floats(-10, 10),
                                   st.sampled_from((5, 5.0, "7", True))),
        "created": created_values,
        "tags": st.one_of(st.lists(st.sampled_from(TAGS), max_size=3),
                          st.sampled_from(TAGS), st.none(),
                          st.lists(st.sampled_from(TAGS), max_size=2).map(tuple)),
        "project": st.one_of(st.none(), st.sampled_from(PROJECTS)),
        "content": content_values,
        "token_count": st.one_of(st.integers(-2, 25), st.booleans(), st.just(3.0), st.just("4")),
        "status": st.sampled_from(("active", "active", "retired")),
        "superseded_by": st.sampled_from((None, "", False, "m-1")),
        "meta": st.dictionaries(st.sampled_from("xyz"), st.lists(st.integers(0, 3), max_size=2),
                                max_size=2),
    },
)


@st.composite
def stores(draw, max_size=12, repeats=True):
    """A list of entry dicts; sometimes one dict object appears twice."""
    store = draw(st.lists(entries, max_size=max_size))
    if repeats and store and draw(st.integers(0, 4)) == 0:
        for _ in range(draw(st.integers(1, 3))):
            obj = store[draw(st.integers(0, len(store) - 1))]
            store.insert(draw(st.integers(0, len(store))), obj)
    return store


def quiet_pool(name: str, max_tokens: int, max_entries: int, types: Any) -> Pool:
    """A Pool; one of no type (``types=()``, a spec edge drawn on purpose) without its warning."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Pool .* takes no type", UserWarning)
        return Pool(name, max_tokens, max_entries, types)


pools = st.builds(
    quiet_pool,
    name=st.sampled_from(("alpha", "beta", "gamma", "delta", "omega")),
    max_tokens=st.integers(0, 40),
    max_entries=st.integers(0, 6),
    types=st.one_of(st.none(), st.lists(st.sampled_from(TYPES), max_size=3).map(tuple)),
)

pool_lists = st.lists(pools, min_size=1, max_size=4, unique_by=lambda p: p.name)

contexts = st.one_of(
    st.none(),
    st.fixed_dictionaries(
        {},
        optional={
            "message": st.one_of(st.none(), st.lists(st.sampled_from(VOCAB), max_size=6)
                                 .map(" ".join)),
            "project": st.one_of(st.none(), st.sampled_from(PROJECTS)),
            "tags": st.one_of(st.lists(st.sampled_from(TAGS), max_size=3), st.sampled_from(TAGS)),
        },
    ),
)

nows = st.datetimes(min_value=datetime(2025, 6, 1), max_value=datetime(2027, 1, 1),
                    timezones=aware_or_naive)


# Custom functions: deterministic, so that scoring once per call (the core) and
# once per pool (the reference) agree. Many give ties, to exercise the sort key.


def flat_scorer(entry, context):
    return 1.0


def length_scorer(entry, context):
    return len(str(entry.get("content"))) % 3


def now_scorer(entry, context, *, now):
    created = entry.get("created")
    return (now.minute % 2) + (1 if isinstance(created, str) and created < "2026" else 0)


def kwargs_scorer(entry, context, **kwargs):
    message = (context or {}).get("message") or ""
    return -len(entry) + (2 if kwargs["now"].year > 2025 else 0) + len(message) % 2


def huge_scorer(entry, context):
    return 10**400 if entry.get("project") else 0.5


def thirds_counter(text):
    return len(text) // 3


def zero_counter(text):
    return 0


def negative_counter(text):
    return len(text.split()) - 2


def two_counter(text):
    return 2


def not_growth(entry):
    return entry.get("type") != "growth"


SCORERS = (None, flat_scorer, length_scorer, now_scorer, kwargs_scorer, huge_scorer)
COUNTERS = (None, thirds_counter, zero_counter, negative_counter, two_counter)
ACTIVITY = (None, not_growth)


@st.composite
def functions(draw):
    """Keyword arguments choosing a scorer, a counter and an activity test (None = default)."""
    chosen = {
        "scorer": draw(st.sampled_from(SCORERS)),
        "token_counter": draw(st.sampled_from(COUNTERS)),
        "is_active": draw(st.sampled_from(ACTIVITY)),
    }
    return {k: v for k, v in chosen.items() if v is not None}


def same(a, b):
    """Strict structural equality: same types all the way down, NaN equal to NaN."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return bool(a == b)


# --------------------------------------------------------------------------
# Near-tie stores: big enough, and alike enough, that ties sit at every bound
# --------------------------------------------------------------------------
#
# 40-200 entries over a 12-word vocabulary (two of them stopwords), three
# priorities, four creation dates, costs of 1-14 tokens, three tags, two
# projects, a few always-scope and inactive entries; pools with tight budgets
# and caps, overlapping types; messages from the same words. Many entries then
# share a score, or miss one by a single factor, right where a bound decides
# whether a stream is read or a prune skips it. One generator, driven by a
# ``random.Random``, serves the seeded differential (a seed per store) and
# hypothesis (a drawn seed), so both draw the same kind of store.

NEAR_NOW = datetime(2026, 3, 1, 12, 0, tzinfo=timezone.utc)
NEAR_VOCAB = ("rotate", "database", "deploy", "release", "notes", "memory", "budget", "pool",
              "cache", "schema", "the", "and")
NEAR_TYPES = ("note", "task", "skill", "correction")
NEAR_TAGS = ("db", "ops", "ui")
NEAR_PROJECTS = ("atlas", "zeus")
NEAR_USERS = ("ana", "bo", "cy")
# Four ages at NEAR_NOW: new, 12 days, 45 days, and past the 0.3 recency floor.
NEAR_CREATED = tuple((NEAR_NOW - timedelta(days=days)).isoformat() for days in (0, 12, 45, 120))
# Query times: the store's now, a little later, later still, and before the
# newest entries (which then count as 0 days old).
NEAR_SHIFTS = tuple(timedelta(days=d) for d in (0, 0, 1, 30, 75, -13))


def near_tie_entry(rng, n):
    """One entry of a near-tie store; ``n`` makes its id unique (when it has one)."""
    entry = {}
    roll = rng.random()
    if roll < 0.85:
        entry["id"] = f"e{n}"
    elif roll < 0.93:
        entry["id"] = n  # an int id: sorts by str(), next to the str ones
    roll = rng.random()
    if roll < 0.88:
        entry["type"] = rng.choice(NEAR_TYPES)
    elif roll < 0.9:
        entry["type"] = ["note"]  # no dict can key it: kept apart, and only a pool of every type
    if rng.random() < 0.12:
        entry["scope"] = "always"
    roll = rng.random()
    if roll < 0.86:
        entry["base_priority"] = rng.choice((3, 5, 8))
    elif roll < 0.9:
        entry["base_priority"] = rng.choice((0, -2))  # not in a group: scored exactly
    if rng.random() < 0.9:
        entry["created"] = rng.choice(NEAR_CREATED)
    if rng.random() < 0.45:
        entry["tags"] = rng.sample(NEAR_TAGS, rng.randint(1, 2))
    if rng.random() < 0.5:
        entry["project"] = rng.choice(NEAR_PROJECTS)
    entry["content"] = " ".join(rng.choice(NEAR_VOCAB) for _ in range(rng.randint(0, 6)))
    if rng.random() < 0.85:
        entry["token_count"] = rng.randint(1, 14)
    if rng.random() < 0.06:
        entry["status"] = "retired"
    if rng.random() < 0.03:
        entry["superseded_by"] = "later"
    if rng.random() < 0.92:
        entry["user_id"] = rng.choice(NEAR_USERS)
    return entry


def near_tie_store(rng, low=40, high=200):
    """A list of ``low``-``high`` near-tie entries, each a distinct dict."""
    return [near_tie_entry(rng, n) for n in range(rng.randint(low, high))]


def near_tie_pools(rng):
    """1-4 pools with tight budgets and caps; their types overlap, or are every type."""
    names = rng.sample(("alpha", "beta", "gamma", "delta"), rng.randint(1, 4))
    pools = []
    for name in names:
        types = None if rng.random() < 0.35 else tuple(rng.sample(NEAR_TYPES, rng.randint(1, 3)))
        max_tokens = rng.choice((0, rng.randint(1, 12), rng.randint(5, 40), rng.randint(20, 90)))
        max_entries = rng.choice((0, rng.randint(1, 3), rng.randint(1, 6), 50))
        pools.append(Pool(name, max_tokens, max_entries, types))
    return pools


def near_tie_context(rng):
    """A message from the store's words, a project and tags (each sometimes absent)."""
    if rng.random() < 0.05:
        return None
    context = {}
    if rng.random() < 0.85:
        context["message"] = " ".join(rng.choice(NEAR_VOCAB) for _ in range(rng.randint(0, 6)))
    if rng.random() < 0.5:
        # a list is no project of any entry, and no dict can key it
        context["project"] = rng.choice((*NEAR_PROJECTS, None, ["atlas"]))
    if rng.random() < 0.5:
        context["tags"] = rng.sample(NEAR_TAGS, rng.randint(0, 3))
    return context


def near_tie_now(rng):
    """A query time near the store's: days and hours after it, or a little before."""
    return NEAR_NOW + rng.choice(NEAR_SHIFTS) + timedelta(hours=rng.choice((0, 0, 5)))


def _seeded(make):
    """A strategy drawing a seed and building with ``make(random.Random(seed))``.

    A store is hundreds of random choices: drawn one by one they would make
    every example huge to hypothesis; drawn from one seed, a failure shrinks
    to, and is replayed by, that seed.
    """
    return st.integers(0, 2**32 - 1).map(lambda seed: make(random.Random(seed)))


near_tie_stores = _seeded(near_tie_store)
near_tie_pool_lists = _seeded(near_tie_pools)
near_tie_contexts = _seeded(near_tie_context)
near_tie_nows = _seeded(near_tie_now)
