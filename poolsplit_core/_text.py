r"""Text for a terminal: control characters made visible, widths as a terminal shows them.

Standard library only; the command line and the demo report render through it.

>>> print(escape("red\x1b[31m, \u202eevil"))
red\x1b[31m, \u202eevil
>>> width("東京 ok"), width("e\u0301"), width("🚀")
(7, 1, 2)
>>> table([("id", "n"), ("東京", "1"), ("x", "22")], right={1})
['id     n', '東京   1', 'x     22']
>>> table([("", "single budget", ""), ("", "quiet", "burst"), ("a", "yes", "NO")],
...       spans={1: 2})
['   single budget', '   quiet  burst', 'a  yes    NO']

Rules:

- :func:`escape` replaces every character Python's ``repr`` escapes -- a
  character ``str.isprintable`` rejects: C0 and C1 controls, DEL, format
  characters (bidi overrides and isolates, zero-width characters, the byte-order
  mark, tag characters), line and paragraph separators, lone surrogates,
  unassigned and private-use code points, spaces other than U+0020 -- by its
  ``repr`` escape (``\x1b``, ``\u202e``, ``\U000e0041``). Nothing a store
  holds can move the cursor, recolour, retitle or reorder the terminal.
- :func:`width` counts East Asian wide and fullwidth characters as two
  columns and combining marks as none.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Collection, Mapping, Sequence

__all__ = ["escape", "escape_json", "plural", "shorten", "table", "width"]


def escape(text: str, keep: str = "") -> str:
    r"""``text`` with every character ``repr`` would escape written as its escape.

    >>> escape("a\tb\n", keep="\n")
    'a\\tb\n'

    Args:
        text: what is about to be shown.
        keep: characters to leave as they are (e.g. the newlines of a report).

    Returns:
        Text whose characters are all printable (and those of ``keep``).
    """
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() or ch in keep else _escaped(ch) for ch in text)


def escape_json(text: str) -> str:
    r"""JSON text with every non-printable character inside its strings as ``\uXXXX``.

    The result parses to the same data (astral characters become surrogate
    pairs, as JSON spells them); a JSON document's own structure is printable
    ASCII plus newlines, which are kept.

    >>> import json
    >>> out = escape_json(json.dumps(["\u202e\U000e0041"], ensure_ascii=False))
    >>> out, json.loads(out) == ["\u202e\U000e0041"]
    ('["\\u202e\\udb40\\udc41"]', True)
    """
    if text.isprintable():
        return text
    out = []
    for ch in text:
        if ch.isprintable() or ch == "\n":
            out.append(ch)
        elif ord(ch) > 0xFFFF:
            code = ord(ch) - 0x10000
            out.append(f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}")
        else:
            out.append(f"\\u{ord(ch):04x}")
    return "".join(out)


def width(text: str) -> int:
    r"""How many terminal columns ``text`` takes (printable text; see :func:`escape`).

    >>> width("abc"), width("\uff46\uff55\uff4c\uff4c"), width("a\u20dd")
    (3, 8, 1)
    """
    if text.isascii():
        return len(text)
    return sum(_char_width(ch) for ch in text)


def shorten(text: str, columns: int) -> str:
    """``text`` cut to at most ``columns`` display columns, ``…`` marking a cut.

    >>> shorten("abcdef", 4), shorten("東京都庁", 5), shorten("abc", 4)
    ('abc…', '東京…', 'abc')
    """
    if width(text) <= columns:
        return text
    kept, used = [], 0
    for ch in text:
        used += _char_width(ch)
        if used > columns - 1:
            break
        kept.append(ch)
    return "".join(kept).rstrip() + "…"


def plural(count: int, singular: str, plural_form: str | None = None) -> str:
    """``count`` and the noun that agrees with it.

    >>> plural(1, "token"), plural(0, "token"), plural(2, "entry", "entries")
    ('1 token', '0 tokens', '2 entries')
    """
    noun = singular if count == 1 else (plural_form or singular + "s")
    return f"{count} {noun}"


def table(
    rows: Sequence[Sequence[str]],
    *,
    right: Collection[int] = (),
    spans: Mapping[int, int] | None = None,
) -> list[str]:
    """Align ``rows`` into columns two spaces apart; no rows give no lines.

    Cells are escaped (:func:`escape`) and measured in display columns
    (:func:`width`), so a control character cannot break out of its cell and
    wide characters keep the columns straight.

    Args:
        rows: the cells, row by row; the first row is the header.
        right: the columns whose cells are right-aligned.
        spans: a title row over the others: ``{column: how many columns its
            title covers}``, for row 0 only; the widths come from the rows below,
            the last column of a span widened when its title is wider.

    Returns:
        One string per row, trailing spaces removed.
    """
    cells = [[escape(cell) for cell in row] for row in rows]
    if not cells:
        return []
    body = cells[1:] if spans else cells
    widths = [max((width(row[i]) for row in body), default=0) for i in range(len(cells[0]))]
    for col, span in (spans or {}).items():  # a title wider than its columns widens the last
        room = sum(widths[col:col + span]) + 2 * (span - 1)
        widths[col + span - 1] += max(0, width(cells[0][col]) - room)
    out = []
    if spans:
        head, col = [], 0
        while col < len(cells[0]):
            span = spans.get(col, 1)
            head.append(_pad(cells[0][col], sum(widths[col:col + span]) + 2 * (span - 1)))
            col += span
        out.append("  ".join(head).rstrip())
    for row in body:
        out.append("  ".join(
            _pad(cell, w, right=i in right) for i, (cell, w) in enumerate(zip(row, widths))
        ).rstrip())
    return out


def _pad(cell: str, columns: int, *, right: bool = False) -> str:
    fill = " " * max(0, columns - width(cell))
    return fill + cell if right else cell + fill


def _char_width(ch: str) -> int:
    if unicodedata.combining(ch) or unicodedata.category(ch) in ("Mn", "Me", "Cf"):
        return 0
    if "\u1160" <= ch <= "\u11ff":  # Hangul medial vowels and final consonants join a syllable
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def _escaped(ch: str) -> str:
    return repr(ch)[1:-1]  # only called for characters repr escapes, never a quote
