# render.py -- pool-split results as prompt text, corrections first.
#
# MIT License
#
# Copyright (c) 2026 The poolsplit authors
#
# Permission is hereby granted, free of charge, to any person obtaining a copy
# of this software and associated documentation files (the "Software"), to deal
# in the Software without restriction, including without limitation the rights
# to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
# copies of the Software, and to permit persons to whom the Software is
# furnished to do so, subject to the following conditions:
#
# The above copyright notice and this permission notice shall be included in all
# copies or substantial portions of the Software.
#
# THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
# IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
# FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
# AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
# LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
# OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
# SOFTWARE.
"""Pool-split results as prompt text: every correction first, then each pool under its name.

A pool-split result maps each pool's name to what it loaded, in load order:
what :func:`retrieve_pools` returns, :meth:`Explanation.loaded` (the
Decisions of :func:`explain_pools`), a ``PreparedStore``'s ``retrieve_pools``
or ``decide``. :func:`render_pools` turns one into the text an agent puts in
its prompt. A correction must not depend on where a reader stops reading, so
every correction (every ``scope="always"`` entry of every pool, those of
the ``"always"`` pool included) comes first, under one heading; then each
pool under its own name, in the result's order, one ``- `` line per entry.
Given the call's ledgers (from :func:`explain_pools`), a pool whose budget
left entries out says how many, so the reader knows the memory holds more
than it sees. The result is not changed.

Standard library only, Python 3.9+. Copy it beside ``poolsplit.py`` (it
imports the core as its package sibling, else as the top-level module
``poolsplit``) and ``from render import render_pools``.

>>> from datetime import datetime, timezone
>>> store = [
...     {"id": "t1", "type": "task", "base_priority": 9, "content": "Ship the release notes."},
...     {"id": "c1", "type": "correction", "scope": "always",
...      "content": "Never force-push to main."},
...     {"id": "s1", "type": "skill", "base_priority": 2, "content": "Bisect with git bisect run."},
... ]
>>> pools = [core.Pool("work", max_tokens=50, max_entries=5, types=("task",)),
...          core.Pool("skills", max_tokens=50, max_entries=2, types=("skill",))]
>>> got = core.retrieve_pools(store, pools, {"message": "release"}, always_pool=True,
...                           now=datetime(2026, 1, 1, tzinfo=timezone.utc))
>>> print(render_pools(got))
## Corrections (always apply)
- Never force-push to main.
<BLANKLINE>
## work
- Ship the release notes.
<BLANKLINE>
## skills
- Bisect with git bisect run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, List, Mapping, Optional, cast

if TYPE_CHECKING or __package__:  # the package's poolsplit_core.poolsplit
    from . import poolsplit as core
else:  # copied beside poolsplit.py: both are top-level modules
    import poolsplit as core

__version__ = "0.1.0"

__all__ = ["CORRECTIONS_HEADING", "render_pools"]

#: The heading :func:`render_pools` puts above the corrections, by default.
CORRECTIONS_HEADING = "Corrections (always apply)"

# The core's names this file uses: the same objects, defined once in poolsplit.py.
Ledger = core.Ledger
_content = core._content


def render_pools(
    result: Mapping[str, Iterable[Any]],
    *,
    ledgers: Optional[Mapping[str, Ledger]] = None,
    entry: Optional[Callable[[Any], Mapping[str, Any]]] = None,
    corrections_heading: str = CORRECTIONS_HEADING,
) -> str:
    """A pool-split result as prompt text: every correction first, then each pool by name.

    >>> got = {"always": [{"scope": "always", "content": "Use the staging db."}],
    ...        "tasks": [{"scope": "always", "content": "Never deploy on Friday."},
    ...                  {"content": "Deploy the api."}],
    ...        "skills": []}
    >>> print(render_pools(got))
    ## Corrections (always apply)
    - Use the staging db.
    - Never deploy on Friday.
    <BLANKLINE>
    ## tasks
    - Deploy the api.

    ``result`` maps each pool's name to what it loaded, in load order: entry
    dicts (:func:`retrieve_pools`) or Decisions (:meth:`Explanation.loaded`,
    whose ``entry`` is read). ``entry`` reads anything else as an entry dict
    (e.g. a store's items: ``entry=lambda item: item.value``). The text is:

    - every always-scope entry (``scope == "always"``), in the result's
      order -- the ``"always"`` pool's first when the result lists it first,
      as :func:`retrieve_pools` does -- under ``## {corrections_heading}``;
    - then, in the result's order, each pool that holds another entry,
      under ``## {pool name}``;
    - one ``- {content}`` line per entry: its ``content`` as the core reads
      it (``str()`` of it; missing: empty), stripped, its further lines
      indented by two spaces;
    - sections apart by one blank line; ``""`` when nothing loaded.

    With ``ledgers`` (:attr:`Explanation.ledgers` of the same call: one per
    pool of ``result``), a pool whose budget left entries out ends with a
    line saying how many (its ledger's ``skipped_tokens + skipped_entries``:
    the entries of its types it considered and did not load, which a later
    pool may still load); a pool that loaded nothing but left entries out
    is shown with that line alone.

    >>> why = core.explain_pools([{"content": "x" * 40}, {"content": "Tea, no sugar."}],
    ...                          [core.Pool("notes", max_tokens=5, max_entries=5)])
    >>> print(render_pools(why.loaded(), ledgers=why.ledgers))
    ## notes
    - Tea, no sugar.
    (1 more did not fit this pool's budget)

    Raises TypeError when ``result`` is not a mapping of pool names to
    sequences, an item is neither an entry dict nor a Decision (without
    ``entry``), or ``entry`` returns something other than a mapping; and
    ValueError when ``ledgers`` names other pools than ``result``.
    """
    if not isinstance(result, Mapping):
        hint = (": pass its loaded() and ledgers=its ledgers" if hasattr(result, "loaded")
                and hasattr(result, "ledgers") else "")
        raise TypeError(
            "result must map each pool's name to what it loaded (what retrieve_pools"
            f" returns), got {type(result).__name__}{hint}"
        )
    if not isinstance(corrections_heading, str):
        raise TypeError(f"corrections_heading must be a str, got {corrections_heading!r}")
    if entry is not None and not callable(entry):
        raise TypeError(f"entry must be callable or None, got {type(entry).__name__}")
    left_out = _left_out(result, ledgers)
    corrections: List[str] = []
    sections: Dict[str, List[str]] = {}
    for name, loaded in result.items():
        if isinstance(loaded, (str, bytes, Mapping)) or not isinstance(loaded, Iterable):
            raise TypeError(
                f"result[{name!r}] must be a sequence of what the pool loaded,"
                f" got {type(loaded).__name__}"
            )
        lines = sections.setdefault(name, [])
        for i, item in enumerate(loaded):
            read = _read(item, entry, f"result[{name!r}][{i}]")
            line = "- " + _content(read).strip().replace("\n", "\n  ")
            (corrections if read.get("scope") == "always" else lines).append(line)
        if left_out.get(name):
            lines.append(f"({left_out[name]} more did not fit this pool's budget)")
    blocks = [f"## {corrections_heading}\n" + "\n".join(corrections)] if corrections else []
    blocks += [f"## {name}\n" + "\n".join(lines) for name, lines in sections.items() if lines]
    return "\n\n".join(blocks)


def _read(item: Any, entry: Optional[Callable[[Any], Mapping[str, Any]]],
          where: str) -> Mapping[str, Any]:
    """The entry dict ``item`` stands for: itself, a Decision's ``entry``, or ``entry(item)``."""
    if entry is not None:
        read = entry(item)
        if not isinstance(read, Mapping):
            raise TypeError(f"{where}: entry must return a mapping (dict),"
                            f" got {type(read).__name__}")
        return read
    if isinstance(item, Mapping):
        return item
    decided = getattr(item, "entry", None)  # a Decision (of this core or a copy of it)
    if isinstance(decided, Mapping):
        return decided
    raise TypeError(
        f"{where} is a {type(item).__name__}, neither an entry dict nor a Decision:"
        " pass entry=, a function that reads one as an entry dict"
    )


def _left_out(result: Mapping[str, Any], ledgers: Optional[Mapping[str, Ledger]]
              ) -> Dict[str, int]:
    """How many entries each pool's budget left out, by its ledger (none without ledgers)."""
    if ledgers is None:
        return {}
    if not isinstance(ledgers, Mapping):
        raise TypeError(f"ledgers must map pool names to Ledgers or be None,"
                        f" got {type(ledgers).__name__}")
    if set(ledgers) != set(result):
        raise ValueError(
            f"ledgers must be the same call's, one per pool of the result: the result has"
            f" {list(result)}, the ledgers {list(ledgers)}"
        )
    out = {}
    for name, ledger in ledgers.items():
        skipped = [getattr(ledger, field, None) for field in ("skipped_tokens", "skipped_entries")]
        if not all(isinstance(n, int) for n in skipped):
            raise TypeError(f"ledgers[{name!r}] must be a Ledger, got {type(ledger).__name__}")
        out[name] = sum(cast(List[int], skipped))
    return out
