"""The database's arithmetic reads the core's constants: one source for the default score.

The SQL installed by ``setup()`` (``poolsplit_v1.sql``) writes each factor's
constants as literals, since an installed function cannot import Python. Every
literal there must be the core's constant of the same name, so that changing a
factor in ``poolsplit.py`` without the SQL (or the SQL without the core) fails
here before any differential runs. The database engine's own statement and its
bounds are built from the core's constants, and are checked the same way.
"""

from __future__ import annotations

import re
from importlib import resources

import pytest

from poolsplit_core import poolsplit as core
from poolsplit_integrations import _pgengine

_SQL = resources.files("poolsplit_integrations").joinpath("sql/poolsplit_v1.sql").read_text(
    encoding="utf-8")
_FLOAT = re.compile(r"(?<![\w.])(\d+\.\d+)::float8")


def _function(name: str) -> str:
    """The text of ``poolsplit_v1.<name>``'s definition, up to its closing semicolon."""
    start = _SQL.index(f"CREATE OR REPLACE FUNCTION poolsplit_v1.{name}(")
    return _SQL[start:_SQL.index(";\n", start)]


def _literals(text: str) -> list[float]:
    return [float(number) for number in _FLOAT.findall(text)]


# For each SQL reading of a factor, its literals in order, as the core names them
# (``1.0`` is the "1 +" of a factor or a factor that does not apply).
_EXPECTED = {
    "recency": [core._RECENCY_FLOOR, 1.0, core._RECENCY_DROP, 1_000_000.0,
                core._DAY_SECONDS, float(core._DECAY_DAYS)],
    "tag_factor": [1.0, 1.0, core._TAG_WEIGHT],
    "project_factor": [core._PROJECT_NONE, core._PROJECT_MATCH, core._PROJECT_OTHER],
}


@pytest.mark.parametrize("name", sorted(_EXPECTED))
def test_each_installed_factor_writes_the_cores_constants(name):
    assert _literals(_function(name)) == _EXPECTED[name]


def test_the_installed_factors_are_the_cores_on_sample_values():
    # The literals above in the core's own functions: the SQL's formulas take them
    # in the places the core's do.
    query = core._Query(frozenset(), "atlas", frozenset({"db"}))
    assert core._tag_share(1, 2) == 1.0 + _EXPECTED["tag_factor"][2] * 1 / 2
    assert [core._project_factor(p, query) for p in (None, "atlas", "other")] == \
        _EXPECTED["project_factor"]
    day_us = 86_400 * 1_000_000
    floor, one, drop, us, day, horizon = _EXPECTED["recency"]
    for days in (0, 1, 45, 89, 90, 400):
        sql_shaped = max(floor, one - (drop * ((days * day_us / us) / day)) / horizon)
        assert core._recency(0, days * day_us) == sql_shaped, days


def test_the_engines_statement_writes_the_cores_constants():
    tags = _pgengine._SCORE[_pgengine._SCORE.index("CASE"):_pgengine._SCORE.index("END") + 3]
    project = _pgengine._SCORE[_pgengine._SCORE.index("CASE WHEN e.project"):]
    project = project[:project.index("END")]
    assert _literals(tags) == [1.0, 1.0, core._TAG_WEIGHT, 1.0, core._TAG_WEIGHT]
    assert _literals(project) == [core._PROJECT_NONE, core._PROJECT_MATCH,
                                  core._PROJECT_OTHER]
    # Nothing else in the statement is a constant of the score: the message factors
    # and the recency come from the core's query and the installed function.
    assert len(_literals(_pgengine._SCORE)) == len(_literals(tags)) + len(_literals(project))
