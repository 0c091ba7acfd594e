"""Time strings every path must read alike: the instant each names, or none.

The grammar the core reads is ISO 8601's extended format (the comment above
``_ISO`` in ``poolsplit.py``, the user guide's entries page). Each row is a
``created`` string, the instant it names in that grammar (``None``: the core
reads no time, so the spec's lenient reading counts it as 0 days old and a
strict reading refuses it), and, for a valid ISO 8601 time in another form,
the extended spelling of the same instant that a strict error suggests. The
instants and spellings are written out by hand (a week date's day from the
ISO calendar: 2026-W01-1 is Monday 2025-12-29), not computed by the code
under test.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

UTC = timezone.utc


def _at(*fields: int, offset: timedelta = timedelta(0)) -> datetime:
    return datetime(*fields, tzinfo=timezone(offset))


#: (text, the instant it names, the extended spelling a strict error suggests)
CORPUS: tuple[tuple[str, datetime | None, str | None], ...] = (
    # the extended format: read
    ("2026-01-01", _at(2026, 1, 1), None),
    ("2026-01-01T00:00:00Z", _at(2026, 1, 1), None),
    ("2026-01-01T09:30:00+05:30", _at(2026, 1, 1, 9, 30, offset=timedelta(hours=5, minutes=30)),
     None),
    ("2026-01-01t09:30", _at(2026, 1, 1, 9, 30), None),
    ("2026-01-01 09", _at(2026, 1, 1, 9), None),
    ("2025-12-31T23:59:59.5-08:00", _at(2025, 12, 31, 23, 59, 59, 500000,
                                        offset=timedelta(hours=-8)), None),
    ("2025-12-31T23:59:59,123456789Z", _at(2025, 12, 31, 23, 59, 59, 123456), None),
    ("2026-01-01T10:00:00+0530", _at(2026, 1, 1, 10, offset=timedelta(hours=5, minutes=30)),
     None),
    ("2026-01-01T10:00:00-03", _at(2026, 1, 1, 10, offset=timedelta(hours=-3)), None),
    (" 2026-01-01T10:00:00 Z ", _at(2026, 1, 1, 10), None),
    # ISO 8601's basic format: not read; the extended spelling suggested
    ("20260101T000000Z", None, "2026-01-01T00:00:00Z"),
    ("20260101", None, "2026-01-01"),
    ("20260101T093000+0530", None, "2026-01-01T09:30:00+05:30"),
    ("20251231T235959.25-0800", None, "2025-12-31T23:59:59.25-08:00"),
    ("2026-01-01T093000", None, "2026-01-01T09:30:00"),
    # week dates
    ("2026-W01-1", None, "2025-12-29"),
    ("2026W011", None, "2025-12-29"),
    ("2020-W53-7T12:00:00Z", None, "2021-01-03T12:00:00Z"),
    # ordinal dates
    ("2026-032", None, "2026-02-01"),
    ("2024-366T08:00:00Z", None, "2024-12-31T08:00:00Z"),
    # an offset with seconds: the same instant in UTC
    ("2026-01-01T00:00:00+05:30:15", None, "2025-12-31T18:29:45Z"),
    ("2026-01-01T12:00:00.5-00:00:30", None, "2026-01-01T12:00:30.5Z"),
    # no instant at all
    ("2026-13-45", None, None),
    ("2026-02-29", None, None),
    ("2026-01-01T24:00:00", None, None),
    ("2026-W54-1", None, None),
    ("2026-366", None, None),
    ("2026-01-01T10:00:00+24:00", None, None),
    ("yesterday", None, None),
    ("", None, None),
)
