"""One grammar of time on every path: what a ``created`` names, and what is said of one.

The core reads ISO 8601's extended format (``_ISO``); a time in another ISO
8601 form (basic format, a week or an ordinal date, an offset with seconds)
names no time to it. Every path must agree on the corpus of
``tests/time_corpus.py``: the core's reading, the score of the stateless
functions and of each PreparedStore engine, the strict checks (which refuse
exactly what is not read, and suggest the extended spelling of a time in
another form), ``strict=True`` and ``explain_pools``' notes. The database's
reading of the same corpus is in ``tests/integrations/test_postgres_sql_functions.py``.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from poolsplit_core import NumpyEngine
from poolsplit_core.checks import check_entries, entry_problems
from poolsplit_core.poolsplit import (
    Pool,
    _epoch_us,
    _time_us,
    default_scorer,
    explain_pools,
    retrieve_pools,
)
from poolsplit_core.prepared import PreparedStore, PythonEngine
from tests.time_corpus import CORPUS

NOW = datetime(2026, 3, 1, tzinfo=timezone.utc)
ALL = [Pool("all", max_tokens=10**6, max_entries=10**6)]
ENGINES = {"python": PythonEngine(), "numpy": NumpyEngine()}
TEXTS = [text for text, _, _ in CORPUS]


def entries():
    return [{"id": f"e{i:02d}", "created": text, "content": "x"}
            for i, text in enumerate(TEXTS)]


def expected_score(instant):
    """5 x the recency of the spec's table, at NOW (no instant, or a future one: 0 days)."""
    days = 0.0 if instant is None else max(0.0, (NOW - instant).total_seconds() / 86400)
    return 5 * max(0.3, 1.0 - 0.7 * days / 90)


@pytest.mark.parametrize(("text", "instant", "extended"), CORPUS)
def test_the_core_reads_exactly_the_extended_format(text, instant, extended):
    assert _time_us(text) == (None if instant is None else _epoch_us(instant))
    if extended is not None:  # the suggested spelling names a time the core reads
        assert _time_us(extended) is not None


def test_every_scoring_path_scores_the_corpus_alike():
    store = entries()
    want = [expected_score(instant) for _, instant, _ in CORPUS]
    scores = {"default_scorer": [default_scorer(entry, now=NOW) for entry in store]}
    scores["explain_pools"] = [d.score for d in explain_pools(store, ALL, now=NOW).decisions]
    for name, engine in ENGINES.items():
        decided = PreparedStore(store, engine=engine).decide(ALL, now=NOW)["all"]
        scores[name] = [d.score for d in sorted(decided, key=lambda d: d.index)]
    for name, got in scores.items():
        assert got == pytest.approx(want, rel=1e-12), name
        assert got == scores["default_scorer"], name  # bit for bit, the same reading
    order = [e["id"] for e in retrieve_pools(store, ALL, now=NOW)["all"]]
    for name, engine in ENGINES.items():
        got = PreparedStore(store, engine=engine).retrieve_pools(ALL, now=NOW)["all"]
        assert [e["id"] for e in got] == order, name


@pytest.mark.parametrize(("text", "instant", "extended"), CORPUS)
def test_strict_checks_refuse_exactly_what_is_not_read_and_suggest_the_extended_spelling(
        text, instant, extended):
    problems = entry_problems({"created": text}, "e")
    if instant is not None:
        assert problems == []
        return
    [problem] = problems
    assert problem.startswith("e: created must be an ISO 8601 time in the extended format")
    assert f"got {text!r}" in problem
    if extended is None:
        assert problem.endswith(f"got {text!r}")
    else:
        assert problem.endswith(f"write {extended!r}, the same"
                                f" {'instant' if 'T' in extended else 'day'}")


def test_the_strict_paths_refuse_the_same_entries_as_the_checks():
    store = entries()
    unread = {f"e{i:02d}" for i, (_, instant, _) in enumerate(CORPUS) if instant is None}
    problems = check_entries(store, now=NOW)
    assert {p.split("'")[1] for p in problems} == unread
    for call in (lambda: retrieve_pools(store, ALL, now=NOW, strict=True),
                 lambda: explain_pools(store, ALL, now=NOW, strict=True),
                 lambda: PreparedStore(store).decide(ALL, now=NOW, strict=True)):
        with pytest.raises(ValueError) as raised:
            call()
        assert str(raised.value).splitlines()[1:] == [f"  {p}" for p in problems]


def test_the_lenient_reading_notes_each_unread_time_and_its_extended_spelling():
    got = explain_pools(entries(), ALL, now=NOW).decisions
    for decision, (text, instant, extended) in zip(got, CORPUS):
        if instant is not None:
            assert decision.notes == (), text
            continue
        [note] = decision.notes
        assert note.startswith(f"created {text!r} is ") and note.endswith(": counted as 0 days old")
        assert (f"({extended!r} in the extended format)" in note) == (extended is not None)


# A basic, week or ordinal spelling of any instant: the extended one suggested reads to it.
moments = st.datetimes(datetime(1, 1, 3), datetime(9999, 12, 29)).map(
    lambda moment: moment.replace(microsecond=0, tzinfo=timezone.utc))


@given(moments)
def test_the_suggested_spelling_of_a_basic_week_or_ordinal_time_is_the_same_instant(moment):
    year, week, weekday = moment.isocalendar()
    clock = f"T{moment.hour:02d}{moment.minute:02d}{moment.second:02d}Z"
    day = moment.timetuple().tm_yday
    for other in (f"{moment.year:04d}{moment.month:02d}{moment.day:02d}{clock}",
                  f"{year:04d}-W{week:02d}-{weekday}{clock}",
                  f"{moment.year:04d}-{day:03d}{clock}"):
        [problem] = entry_problems({"created": other}, "e")
        written = problem.rsplit("write ", 1)[1].split("'")[1]
        assert _time_us(written) == _epoch_us(moment), other


@given(moments, st.integers(-86399, 86399).filter(lambda s: s % 60))
def test_an_offset_with_seconds_is_suggested_as_the_same_instant_in_utc(moment, seconds):
    sign = "-" if seconds < 0 else "+"
    hh, rest = divmod(abs(seconds), 3600)
    local = moment + timedelta(seconds=seconds)  # the local time the offset names
    if not datetime(1, 1, 2, tzinfo=timezone.utc) < local < datetime(9999, 12, 30,
                                                                      tzinfo=timezone.utc):
        return
    text = (f"{local.year:04d}-{local.month:02d}-{local.day:02d}T{local:%H:%M:%S}"
            f"{sign}{hh:02d}:{rest // 60:02d}:{rest % 60:02d}")
    [problem] = entry_problems({"created": text}, "e")
    written = problem.rsplit("write ", 1)[1].split("'")[1]
    assert written.endswith("Z") and _time_us(written) == _epoch_us(moment)
