"""Strict checks of a memory store: every field the core reads leniently, refused when odd.

The core reads a store as the spec says, leniently: a ``scope`` of
``"Always"`` is contextual, an unparseable ``created`` is 0 days old, a
``token_count`` of ``5.0`` is counted from the content instead. Each of these
is silently a different memory from the one its writer meant, so a
correction written ``"Always"`` never loads first. These checks name every
such field, for an entry to be fixed before it is written (the adapters call
:func:`refuse_bad_entries` before any write; ``poolsplit check STORE`` prints
them). Standard library only.

>>> for problem in check_entries([{"id": "c1", "scope": "Always"}, {"token_count": 0}]):
...     print(problem)
entry id='c1': scope must be 'always', 'contextual' or absent, got 'Always'
entry at index 1: token_count must be a positive int, got 0
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from poolsplit_core.poolsplit import _hashable, _time_us

__all__ = ["check_entries", "entry_problems", "refuse_bad_entries"]

_SCOPES = ("always", "contextual")
_LONGEST = 80  # a value shown in a problem is cut to this many characters


def check_entries(entries: Any) -> list[str]:
    """Return every problem of every entry, one string each, naming the entry and field.

    >>> check_entries([{"id": "n1", "type": "note", "created": "2026-01-31"}])
    []
    >>> for problem in check_entries([{"id": "n2", "tags": "db,prod"}, "n3"]):
    ...     print(problem)
    entry id='n2': tags is the bare str 'db,prod', read as one tag; write tags=["db", "prod"]
    entry at index 1: must be a mapping (dict), got str

    An entry is named ``id='x'`` when it has a hashable ``id``, else by its
    index (``entry at index 3``). The rules are stricter than the core's
    reading (see :func:`entry_problems`); an entry with no problem is read
    by the core as its writer meant. Never raises, never changes its input.

    Args:
        entries: the store, an iterable of entries (read once).

    Returns:
        The problems, entry by entry in input order; empty when there is none.
    """
    if isinstance(entries, (str, bytes, Mapping)) or not isinstance(entries, Iterable):
        return [f"entries must be a list of mappings (dicts), got {type(entries).__name__}"]
    problems: list[str] = []
    for index, entry in enumerate(entries):
        problems += entry_problems(entry, _label(entry, index))
    return problems


def entry_problems(entry: Any, label: str) -> list[str]:
    """Return the problems of one entry, each starting with ``label``.

    >>> for problem in entry_problems({"scope": True, "user_id": " "}, "document 'd7'"):
    ...     print(problem)
    document 'd7': scope must be 'always', 'contextual' or absent, got True
    document 'd7': user_id must be a non-empty str, not only whitespace, got ' '

    A problem is one of: not a mapping; ``scope`` present, not None and not
    exactly ``"always"`` or ``"contextual"``; ``status`` present and not a
    non-empty str; ``created`` present, not None and not a time the core
    reads (an ISO-8601 str or a datetime); ``token_count`` present, not None
    and not a positive int (a bool, ``"5"`` or ``5.0`` is not); ``tags`` a
    bare str (one tag, where ``"db,prod"`` usually meant two), or not an
    iterable of str; ``superseded_by`` present and neither a str nor None;
    ``base_priority`` present and not a finite real number (a bool is not);
    ``type`` present and not a non-empty str; ``user_id`` present and not a
    str with a non-blank character.

    Args:
        entry: the entry to check.
        label: how the problems name it, e.g. ``entry id='c1'`` (adapters
            pass their framework's name for it).

    Returns:
        The problems, in the order of the fields above; empty when there is none.
    """
    if not isinstance(entry, Mapping):
        return [f"{label}: must be a mapping (dict), got {type(entry).__name__}"]
    problems: list[str] = []

    def refuse(field: str, rule: str) -> None:
        problems.append(f"{label}: {field} {rule}, got {_shown(entry[field])}")

    scope = entry.get("scope")
    if scope is not None and not (isinstance(scope, str) and scope in _SCOPES):
        refuse("scope", "must be 'always', 'contextual' or absent")
    if "status" in entry and not _filled_str(entry["status"]):
        refuse("status", "must be a non-empty str, such as 'active'")
    created = entry.get("created")
    if created is not None and _time_us(created) is None:
        refuse("created", "must be an ISO-8601 time such as '2026-01-31T09:00:00Z',"
                          " or a datetime")
    count = entry.get("token_count")
    if count is not None and not (type(count) is not bool and isinstance(count, int)
                                  and count > 0):
        refuse("token_count", "must be a positive int")
    if "tags" in entry:
        problems += _tag_problems(entry["tags"], label)
    pointer = entry.get("superseded_by")
    if pointer is not None and not isinstance(pointer, str):
        refuse("superseded_by", "must be a str (the id of the entry that replaces it) or None")
    if "base_priority" in entry and not _finite_real(entry["base_priority"]):
        refuse("base_priority", "must be a finite number")
    if "type" in entry and not _filled_str(entry["type"]):
        refuse("type", "must be a non-empty str")
    if "user_id" in entry and not (_filled_str(entry["user_id"])
                                   and entry["user_id"].strip()):
        refuse("user_id", "must be a non-empty str, not only whitespace")
    return problems


def refuse_bad_entries(entries: Any, labels: Sequence[str] | None = None) -> None:
    """Raise one ValueError listing every problem of ``entries``; do nothing when there is none.

    >>> refuse_bad_entries([{"id": "a"}])
    >>> refuse_bad_entries([{"id": "a", "status": ""}, {"type": 3}])
    Traceback (most recent call last):
    ...
    ValueError: 2 problems in the entries:
      entry id='a': status must be a non-empty str, such as 'active', got ''
      entry at index 1: type must be a non-empty str, got 3

    Args:
        entries: the entries about to be written (a sequence when ``labels``
            is given).
        labels: how to name each entry, one per entry in order (e.g. by a
            framework's document id); default: ``id='x'``, else its index.

    Raises:
        ValueError: naming every problem (nothing else happens), or when
            ``labels`` does not hold one label per entry.
    """
    if labels is None:
        problems = check_entries(entries)
    else:
        listed = list(entries)
        if len(labels) != len(listed):
            raise ValueError(f"labels must name each entry once: got {len(labels)} labels"
                             f" for {len(listed)} entries")
        problems = [problem for entry, label in zip(listed, labels)
                    for problem in entry_problems(entry, label)]
    if problems:
        count = f"{len(problems)} problem{'s' if len(problems) > 1 else ''}"
        raise ValueError(f"{count} in the entries:\n" + "\n".join(f"  {p}" for p in problems))


def _label(entry: Any, index: int) -> str:
    """``entry id='x'`` for an entry with a hashable id, else ``entry at index 3``."""
    if isinstance(entry, Mapping):
        entry_id = entry.get("id")
        if entry_id is not None and _hashable(entry_id):
            return f"entry id={_shown(entry_id)}"
    return f"entry at index {index}"


def _tag_problems(tags: Any, label: str) -> list[str]:
    if tags is None:
        return []
    if isinstance(tags, str):
        parts = [part.strip() for part in tags.split(",") if part.strip()] or [tags]
        written = ", ".join(f'"{part}"' for part in parts)
        return [f"{label}: tags is the bare str {_shown(tags)}, read as one tag;"
                f" write tags=[{written}]"]
    rule = f"{label}: tags must be a list of str"
    if isinstance(tags, (bytes, Mapping)) or not isinstance(tags, Iterable):
        return [f"{rule}, got {type(tags).__name__}"]
    if iter(tags) is tags:  # a generator: reading it would use it up, and the core refuses it
        return [f"{rule}, got a one-shot {type(tags).__name__}"]
    for tag in tags:
        if not isinstance(tag, str):
            return [f"{rule}, got {_shown(tags)} (holding {_shown(tag)})"]
    return []


def _filled_str(value: Any) -> bool:
    return isinstance(value, str) and value != ""


def _finite_real(value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:  # an int too large for a float: the core cannot read it
        return False


def _shown(value: Any) -> str:
    """``repr(value)``, cut to :data:`_LONGEST` characters (a datetime in ISO form)."""
    text = repr(value.isoformat()) if isinstance(value, datetime) else repr(value)
    return text if len(text) <= _LONGEST else text[:_LONGEST - 3] + "..."
