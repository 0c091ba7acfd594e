"""A literal reference of the documented rules: short, obviously correct, slow on purpose.

It is the differential oracle of the test suite (every optimized path must return
the same entry objects in the same order) and the yardstick of the benchmark.
Every entry is scored from scratch in every pool; the message is split into words
once per entry. Nothing is imported from poolsplit except ``Pool``, so the default
scorer, counter and activity test below are written straight from the user
guide's ``docs/guide/core.md`` (the API table and "The default scorer, exactly")
and its ``docs/guide/entries.md`` table.

Where the guide is silent, this follows the core's documented behaviour:

- ``now=None`` is read once per call and the same aware UTC time is handed to
  every scorer call (a naive ``now`` is taken as UTC);
- a custom scorer is called as ``scorer(entry, context, now=now)``, or without
  ``now`` when it takes no such parameter;
- ISO timestamps: ``YYYY-MM-DD``, optionally ``[T|t| ]HH[:MM[:SS[(.|,)fraction]]]``,
  optionally a ``Z``/``z`` or a ``+HH[[:]MM]``/``-HH[[:]MM]`` offset; surrounding
  whitespace is ignored, the fraction is truncated to microseconds, naive = UTC,
  anything else (including impossible dates and offsets) is unparseable; digits
  are any Unicode decimal digits, as in the core;
- the sort key uses a string form of ``created`` and ``id``: ``""`` when missing
  or None, ``isoformat()`` for datetimes, ``str()`` otherwise.
"""

from __future__ import annotations

import inspect
import math
import re
from datetime import datetime, timedelta, timezone

from poolsplit_core.poolsplit import Pool

STOPWORDS = frozenset(
    """
    the and for are but not you all can her was one our out day has had his how
    man new now old see two way who did its let put say she too use that this
    with from they them then than have will your what when were been into some
    more very just over only
    """.split()
)

# ISO-8601 digits are ASCII: "\u0662\u0660\u0662\u0666-..." is unparseable, as for
# datetime.fromisoformat.
ISO_TIMESTAMP = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})"
    r"(?:[Tt ]([0-9]{2})(?::([0-9]{2})(?::([0-9]{2})(?:[.,]([0-9]+))?)?)?)?"
    r"\s*(?:[Zz]|([+-])([0-9]{2})(?::?([0-9]{2}))?)?"
)


def ref_default_token_counter(text):
    return max(1, len(text) // 4)


def ref_default_is_active(entry):
    return entry.get("status", "active") == "active" and not entry.get("superseded_by")


def content_text(entry):
    content = entry.get("content")
    return "" if content is None else str(content)


def words(text):
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if len(w) > 2 and w not in STOPWORDS}


def tag_set(tags):
    if tags is None:
        return set()
    if isinstance(tags, str):
        return {tags}
    return set(tags)


def parse_time(value):
    if isinstance(value, datetime):
        return value if value.tzinfo is not None else value.replace(tzinfo=timezone.utc)
    if not isinstance(value, str):
        return None
    match = ISO_TIMESTAMP.fullmatch(value.strip())
    if match is None:
        return None
    year, month, day, hour, minute, second, fraction, sign, off_h, off_m = match.groups()
    try:
        tz = timezone.utc
        if sign:
            offset = timedelta(hours=int(off_h), minutes=int(off_m or 0))
            tz = timezone(offset if sign == "+" else -offset)
        micro = int((fraction or "0")[:6].ljust(6, "0"))
        return datetime(int(year), int(month), int(day), int(hour or 0), int(minute or 0),
                        int(second or 0), micro, tzinfo=tz)
    except ValueError:
        return None


def resolve_now(now):
    if now is None:
        return datetime.now(timezone.utc)
    return now if now.tzinfo is not None else now.replace(tzinfo=timezone.utc)


def ref_default_scorer(entry, context=None, *, now=None):
    context = {} if context is None else context
    now = resolve_now(now)

    base = float(entry.get("base_priority", 5))

    created = parse_time(entry.get("created"))
    days = 0.0 if created is None else (now - created).total_seconds() / 86400
    if days < 0:  # a future timestamp counts as 0 days
        days = 0.0
    recency = max(0.3, 1.0 - 0.7 * days / 90)

    entry_tags = tag_set(entry.get("tags"))
    tag = 1.0
    if entry_tags:
        tag = 1 + 0.5 * len(entry_tags & tag_set(context.get("tags"))) / len(entry_tags)

    project = entry.get("project")
    if project is None:
        match = 1.0
    elif project == context.get("project"):
        match = 1.5
    else:
        match = 0.5

    message = 1.0
    if context.get("message"):
        message_words = words(context["message"])
        content_words = words(content_text(entry))
        overlap = 0.0
        if message_words and content_words:
            overlap = len(content_words & message_words) / len(message_words)
        if overlap > 0.15:
            message = 1 + 1.5 * overlap

    return base * recency * tag * match * message


def ref_hybrid_scorer(*, relevance="words", similarity_weight=1.5, evergreen=(),
                      decay_days=None):
    """``docs/guide/hybrid-scoring.md``'s "The score, exactly", literally (ASCII words only)."""
    decay_days = {} if decay_days is None else dict(decay_days)

    def score(entry, context=None, *, now=None):
        context = {} if context is None else context
        now = resolve_now(now)
        base = float(entry.get("base_priority", 5))
        entry_type = entry.get("type", "note")
        created = parse_time(entry.get("created"))
        days = 0.0 if created is None else (now - created).total_seconds() / 86400
        if days < 0:
            days = 0.0
        if entry_type in evergreen:
            recency = 1.0
        else:
            # a type no dict can key (a list) is named by no horizon: it keeps 90 days
            horizon = next((d for t, d in decay_days.items() if t == entry_type), 90)
            recency = max(0.3, 1.0 - 0.7 * days / horizon)
        entry_tags = tag_set(entry.get("tags"))
        tag = 1.0
        if entry_tags:
            tag = 1 + 0.5 * len(entry_tags & tag_set(context.get("tags"))) / len(entry_tags)
        project = entry.get("project")
        match = 1.0 if project is None else 1.5 if project == context.get("project") else 0.5
        message = 1.0
        if relevance in ("words", "both") and context.get("message"):
            message_words = words(context["message"])
            content_words = words(content_text(entry))
            overlap = 0.0
            if message_words and content_words:
                overlap = len(content_words & message_words) / len(message_words)
            if overlap > 0.15:
                message = 1 + 1.5 * overlap
        similar = 1.0
        if relevance in ("similarity", "both") and entry.get("similarity") is not None:
            similar = 1 + similarity_weight * min(1.0, max(0.0, float(entry["similarity"])))
        return base * recency * tag * match * message * similar

    return score


def takes_now(fn):
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return True
    return any(p.kind is p.VAR_KEYWORD or (p.name == "now" and p.kind is not p.POSITIONAL_ONLY
                                           and p.kind is not p.VAR_POSITIONAL) for p in params)


def call_scorer(scorer, entry, context, now, with_now=None):
    if with_now is None:
        with_now = takes_now(scorer)
    value = scorer(entry, context, now=now) if with_now else scorer(entry, context)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"scorer returned a non-number: {value!r}")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"scorer returned a non-finite number: {value!r}")
    return value


def cost(entry, token_counter):
    count = entry.get("token_count")
    if isinstance(count, int) and not isinstance(count, bool) and count > 0:
        return count
    counted = token_counter(content_text(entry))
    if isinstance(counted, bool) or not isinstance(counted, int):
        raise TypeError(f"token_counter returned a non-int: {counted!r}")
    return max(1, counted)  # a missing count is never 0


def sort_text(value):
    if value is None:
        return ""
    if isinstance(value, datetime):
        return value.isoformat()
    return value if isinstance(value, str) else str(value)


def sort_key(entry, index, context, now, scorer, with_now=None):
    score = call_scorer(scorer, entry, context, now, with_now)
    return (-score, sort_text(entry.get("created")), sort_text(entry.get("id")), index)


def ref_retrieve(entries, pool, context=None, *, scorer=None, token_counter=None,
                 is_active=None, now=None):
    scorer = ref_default_scorer if scorer is None else scorer
    token_counter = ref_default_token_counter if token_counter is None else token_counter
    is_active = ref_default_is_active if is_active is None else is_active
    now = resolve_now(now)

    indexed = list(enumerate(entries))
    active = [(i, e) for i, e in indexed if is_active(e)]
    mine = [(i, e) for i, e in active if pool.types is None or e.get("type", "note") in pool.types]
    always = [e for _, e in mine if e.get("scope") == "always"]
    contextual = [(i, e) for i, e in mine if e.get("scope") != "always"]
    with_now = takes_now(scorer)  # the scorer's signature, read once per call
    ranked = sorted(contextual,
                    key=lambda ie: sort_key(ie[1], ie[0], context, now, scorer, with_now))

    picked = []
    tokens_left = pool.max_tokens
    for _, entry in ranked:
        if len(picked) == pool.max_entries:
            break
        price = cost(entry, token_counter)
        if price <= tokens_left:  # skip what does not fit, keep scanning
            picked.append(entry)
            tokens_left -= price
    return always + picked


def ref_retrieve_pools(entries, pools, context=None, *, scorer=None, token_counter=None,
                       is_active=None, now=None):
    pools = list(pools)
    names = [pool.name for pool in pools]
    if len(set(names)) != len(names):
        raise ValueError(f"duplicate pool names: {names}")
    now = resolve_now(now)
    entries = list(entries)
    taken = set()
    result = {}
    for pool in pools:
        remaining = [e for e in entries if id(e) not in taken]
        picked = ref_retrieve(remaining, pool, context, scorer=scorer,
                              token_counter=token_counter, is_active=is_active, now=now)
        taken.update(id(e) for e in picked)
        result[pool.name] = picked
    return result


def ref_explain_pools(entries, pools, context=None, *, scorer=None, token_counter=None,
                      is_active=None, now=None):
    """What explain_pools reports, from the same rules read pool by pool.

    Returns ``(decisions, ledgers)``: per input index a tuple ``(outcome, pool,
    score, cost, tokens_left, rank)``, and per pool name a dict of its ledger's
    fields. A pool decides every active entry of its types that no earlier
    pool took: always-scope ones load first (rank in input order), the rest
    are walked in sort order -- ``over_entries`` once the cap is met,
    ``over_tokens`` (with the tokens left) when the entry does not fit,
    ``selected`` otherwise. A later pool's decision replaces an earlier one;
    an entry no pool considered is ``no_pool`` (active) or ``inactive``.
    """
    scorer = ref_default_scorer if scorer is None else scorer
    token_counter = ref_default_token_counter if token_counter is None else token_counter
    is_active = ref_default_is_active if is_active is None else is_active
    now = resolve_now(now)
    entries = list(entries)
    with_now = takes_now(scorer)
    decided = {}
    ledgers = {}
    taken = set()
    for pool in pools:
        considered = [(i, e) for i, e in enumerate(entries)
                      if id(e) not in taken and is_active(e)
                      and (pool.types is None or e.get("type", "note") in pool.types)]
        rank = 0
        always_tokens = 0
        for i, e in considered:
            if e.get("scope") == "always":
                price = cost(e, token_counter)
                decided[i] = ("always", pool.name, None, price, None, rank)
                always_tokens += price
                rank += 1
                taken.add(id(e))
        n_always = rank
        ranked = sorted(((sort_key(e, i, context, now, scorer, with_now), i, e)
                         for i, e in considered if e.get("scope") != "always"),
                        key=lambda t: t[0])
        tokens_left, count, over_tokens, over_entries = pool.max_tokens, 0, 0, 0
        for key, i, e in ranked:
            price = cost(e, token_counter)
            score = -key[0]
            if count == pool.max_entries:
                decided[i] = ("over_entries", pool.name, score, price, None, None)
                over_entries += 1
            elif price > tokens_left:
                decided[i] = ("over_tokens", pool.name, score, price, tokens_left, None)
                over_tokens += 1
            else:
                decided[i] = ("selected", pool.name, score, price, None, rank)
                rank += 1
                count += 1
                tokens_left -= price
                taken.add(id(e))
        ledgers[pool.name] = {
            "pool": pool.name, "max_tokens": pool.max_tokens, "max_entries": pool.max_entries,
            "tokens_used": pool.max_tokens - tokens_left, "selected": count,
            "always": n_always, "always_tokens": always_tokens,
            "skipped_tokens": over_tokens, "skipped_entries": over_entries,
        }
    decisions = []
    for i, e in enumerate(entries):
        if i in decided:
            decisions.append(decided[i])
        else:
            decisions.append(("no_pool" if is_active(e) else "inactive", None, None, None,
                              None, None))
    return decisions, ledgers


__all__ = [
    "STOPWORDS",
    "Pool",
    "cost",
    "parse_time",
    "ref_default_is_active",
    "ref_default_scorer",
    "ref_default_token_counter",
    "ref_explain_pools",
    "ref_hybrid_scorer",
    "ref_retrieve",
    "ref_retrieve_pools",
    "sort_key",
    "words",
]
