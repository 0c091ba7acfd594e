"""Strict checks of a memory store: every field the core reads leniently, refused when odd.

The core reads a store as the spec says, leniently: a ``scope`` of
``"Always"`` is contextual, an unparseable ``created`` is 0 days old, a
``token_count`` of ``5.0`` is counted from the content instead. Each of these
is silently a different memory from the one its writer meant, so a
correction written ``"Always"`` never loads first. These checks name every
such field, for an entry to be fixed before it is written (the adapters call
:func:`refuse_bad_entries` before any write; ``poolsplit check STORE`` prints
them). Standard library only: the rules are the core's own
(``poolsplit.py`` applies them itself with ``strict=True``), written once there.

>>> for problem in check_entries([{"id": "c1", "scope": "Always"}, {"token_count": 0}]):
...     print(problem)
entry id='c1': scope must be 'always', 'contextual' or absent, got 'Always'
entry at index 1: token_count must be a positive int, got 0

Two rules need more than one entry's fields: a ``created`` later than now
by more than :data:`FUTURE_TOLERANCE` (it would score as brand new until that
day), and two entries holding one ``id`` (which then names neither). They are
:func:`check_entries`' and :func:`refuse_bad_entries`', which see the whole
store and know the time.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from poolsplit_core.poolsplit import (
    _FUTURE_TOLERANCE,
    _entry_problems,
    _future_problems,
    _refuse,
    _store_problems,
    _utc_now,
)

__all__ = ["FUTURE_TOLERANCE", "check_entries", "entry_problems", "refuse_bad_entries"]

#: How far after now a ``created`` may be: one day. A naive local time read as
#: UTC is at most 14 hours ahead (UTC+14), and a clock a few hours off passes too;
#: a mistyped year (2062 for 2026) or a placeholder (2099) does not.
FUTURE_TOLERANCE: timedelta = _FUTURE_TOLERANCE


def check_entries(entries: Any, *, now: datetime | None = None) -> list[str]:
    """Return every problem of every entry, one string each, naming the entry and field.

    >>> check_entries([{"id": "n1", "type": "note", "created": "2026-01-31"}])
    []
    >>> for problem in check_entries([{"id": "n2", "tags": "db,prod"}, "n3"]):
    ...     print(problem)
    entry id='n2': tags is the bare str 'db,prod', read as one tag; write tags=["db", "prod"]
    entry at index 1: must be a mapping (dict), got str
    >>> from datetime import datetime, timezone
    >>> for problem in check_entries([{"id": "a", "created": "2099-01-01"}, {"id": "a"}],
    ...                              now=datetime(2026, 3, 1, tzinfo=timezone.utc)):
    ...     print(problem)  # doctest: +NORMALIZE_WHITESPACE
    entry id='a': created must be at most 1 day after now (2026-03-01T00:00:00+00:00),
      got '2099-01-01': a time in the future counts as 0 days old, brand new, until that day
    entry at index 1: id 'a' is also the id of the entry at index 0; each entry needs its own id

    An entry is named ``id='x'`` when it has a hashable ``id``, else by its
    index (``entry at index 3``). The rules are stricter than the core's
    reading: those of :func:`entry_problems`, then a ``created`` later than
    ``now`` plus :data:`FUTURE_TOLERANCE`, then an ``id`` an earlier entry
    holds (named by both indexes). An entry with no problem is read by the
    core as its writer meant. Never raises on a store, never changes its input.

    Args:
        entries: the store, an iterable of entries (read once).
        now: the time a ``created`` may not be a day past; ``None`` (the
            default) is the current UTC time, a naive datetime is UTC.

    Returns:
        The problems, entry by entry in input order; empty when there is none.
    """
    if isinstance(entries, (str, bytes, Mapping)) or not isinstance(entries, Iterable):
        return [f"entries must be a list of mappings (dicts), got {type(entries).__name__}"]
    return _store_problems(entries, now)


def entry_problems(entry: Any, label: str, *, now: datetime | None = None) -> list[str]:
    """Return the problems of one entry's fields, each starting with ``label``.

    >>> for problem in entry_problems({"scope": True, "user_id": " "}, "document 'd7'"):
    ...     print(problem)
    document 'd7': scope must be 'always', 'contextual' or absent, got True
    document 'd7': user_id must be a non-empty str, not only whitespace, got ' '

    A problem is one of: not a mapping; ``scope`` present, not None and not
    exactly ``"always"`` or ``"contextual"``; ``status`` present and not a
    non-empty str; ``created`` present, not None and not a time the core
    reads (a datetime, or a str in ISO 8601's extended format, as the user
    guide's entries page states it: a time in the basic format, a week date,
    an ordinal date or an offset with seconds is named as such, with the
    extended spelling of the same instant); ``token_count`` present, not
    None and not a positive int (a bool, ``"5"`` or ``5.0`` is not); ``tags``
    a bare str (one tag, where ``"db,prod"`` usually meant two), or not an
    iterable of str; ``superseded_by`` present and neither a str nor None;
    ``base_priority`` present and not a finite real number (a bool is not);
    ``type`` present and not a non-empty str; ``user_id`` present and not a
    str with a non-blank character.

    These rules read the entry alone, whatever the time (a stored entry is
    read the same way tomorrow); with ``now``, a ``created`` later than
    ``now`` plus :data:`FUTURE_TOLERANCE` is a problem too, last (a write
    checks it; :func:`check_entries` always does, and finds repeated ids).

    Args:
        entry: the entry to check.
        label: how the problems name it, e.g. ``entry id='c1'`` (adapters
            pass their framework's name for it).
        now: the time of a write, to refuse a ``created`` in the future
            (a naive datetime is UTC); ``None`` (the default): no such rule.

    Returns:
        The problems, in the order of the fields above; empty when there is none.
    """
    problems = _entry_problems(entry, label)
    if now is not None and isinstance(entry, Mapping):
        problems += _future_problems(entry, label, _utc_now(now))
    return problems


def refuse_bad_entries(entries: Any, labels: Sequence[str] | None = None, *,
                       now: datetime | None = None) -> None:
    """Raise one ValueError listing every problem of ``entries``; do nothing when there is none.

    >>> refuse_bad_entries([{"id": "a"}])
    >>> refuse_bad_entries([{"id": "a", "status": ""}, {"type": 3}])
    Traceback (most recent call last):
    ...
    ValueError: 2 problems in the entries:
      entry id='a': status must be a non-empty str, such as 'active', got ''
      entry at index 1: type must be a non-empty str, got 3

    The problems are :func:`check_entries`' (with ``now``).

    Args:
        entries: the entries about to be written (a sequence when ``labels``
            is given).
        labels: how to name each entry, one per entry in order (e.g. by a
            framework's document id); default: ``id='x'``, else its index.
        now: as for :func:`check_entries`.

    Raises:
        ValueError: naming every problem (nothing else happens), or when
            ``labels`` does not hold one label per entry.
    """
    if labels is None:
        problems = check_entries(entries, now=now)
    else:
        listed = list(entries)
        if len(labels) != len(listed):
            raise ValueError(f"labels must name each entry once: got {len(labels)} labels"
                             f" for {len(listed)} entries")
        problems = _store_problems(listed, now, labels)
    _refuse(problems)
