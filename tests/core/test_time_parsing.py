"""``created`` parsing: the C fast path for isoformat()'s shape agrees with the spec's rules.

The core reads the shape ``datetime.isoformat()`` writes with
``datetime.fromisoformat`` and everything else field by field; both must give
the instant the reference's parser gives (or none), including for fields out of
range, which the fast path hands back to the field-by-field checks.
"""

from datetime import datetime, timedelta, timezone

from hypothesis import example, given
from hypothesis import strategies as st

from poolsplit_core.poolsplit import _time_us
from tests.reference import parse_time

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def _us(moment):
    return None if moment is None else (moment - EPOCH) // timedelta(microseconds=1)


def _two(top):
    return st.integers(0, top).map(lambda v: f"{v:02d}")


# isoformat()'s shape with every field drawn past its range too (month 13, hour 24,
# second 60, offset +24:00 or +05:99), so both sides of every check are drawn.
written = st.builds(
    lambda y, mo, d, h, mi, s, frac, off, pad: (
        f"{pad}{y:04d}-{mo}-{d}T{h}:{mi}:{s}{frac}{off}{pad}"),
    st.integers(1, 9999) | st.sampled_from([1, 1970, 2024, 9999]),
    _two(14), _two(33), _two(25), _two(61), _two(61),
    st.one_of(st.just(""), st.integers(0, 999_999).map(lambda f: f".{f:06d}")),
    st.one_of(st.just(""), st.builds(lambda sign, hh, mm: f"{sign}{hh}:{mm}",
                                     st.sampled_from("+-"), _two(25), _two(61))),
    st.sampled_from(["", " ", "\n"]),
)


@given(written)
@example("2024-02-29T23:59:59.999999+23:59")
@example("2023-02-29T10:00:00")  # no such day
@example("0001-01-01T00:00:00+05:00")  # before year 1 in UTC: still an instant
@example("9999-12-31T23:59:59-23:59")  # after year 9999 in UTC
@example("2026-01-01T10:00:00+05:99")  # minutes past 59: the field rules accept it
@example("2026-01-01T24:00:00")
def test_the_written_shape_reads_as_the_reference_reads_it(text):
    assert _time_us(text) == _us(parse_time(text))


# Shapes isoformat() does not write (a space for the T, no seconds, a Z, an offset
# without its colon), with the same fields past their range: read field by field.
other_shapes = st.builds(
    lambda y, mo, d, sep, h, mi, s, off: f"{y:04d}-{mo}-{d}{sep}{h}:{mi}{s}{off}",
    st.sampled_from([1, 1970, 2024, 9999]), _two(13), _two(31),
    st.sampled_from([" ", "t", "T"]), _two(25), _two(61),
    st.one_of(st.just(""), _two(61).map(lambda v: f":{v}")),
    st.sampled_from(["", "Z", "+0530", "-23", " +01:00"]),
)


@given(other_shapes)
@example("2024-01-01 23:59")  # the last minute of a day: each field at its top
@example("2024-01-01 22:59:59")
@example("2024-01-01 24:00")  # past the top: no instant
@example("2024-01-01 23:60")
@example("2024-01-01 12:00:60")
def test_other_shapes_read_as_the_reference_reads_them_at_every_field_edge(text):
    assert _time_us(text) == _us(parse_time(text))


@given(st.text(alphabet="0123456789-:T .,+Zz", max_size=34))
def test_any_other_text_reads_as_the_reference_reads_it(text):
    assert _time_us(text) == _us(parse_time(text))
