"""Every engine of PreparedStore: a module that uses ``each_engine`` runs once per engine.

``PreparedStore(...)`` with the default ``engine="auto"`` then builds the
engine of the run, so one test body holds every engine to the same answers:

- ``python``: the best-first walk of ``prepared.py`` (standard library only);
- ``python-split``: the same walk splitting the rest of every word and tag
  list by message factor once it has read one entry of it, however long the
  kind's lists (a store splits only lists read deep, of kinds where counting
  shared words costs less than it saves), so the split lists run on the
  small near-tie stores too;
- ``numpy``: the vectorized engine of ``poolsplit[fast]``, as shipped;
- ``numpy-chunked``: the same engine cutting every pool into chunks of one or
  two rows and estimating each cut from a sample, so that the paths a big
  store takes (many chunks, sampled thresholds, exact candidates merged
  across chunks) run on the small near-tie stores too.
"""

import math

import pytest

from poolsplit_core import NumpyEngine
from poolsplit_core.prepared import PythonEngine, default_engine

#: Each engine the suite runs, as the object PreparedStore(engine=...) takes.
ENGINES = {
    "python": PythonEngine(),
    "python-split": PythonEngine(split_after=1, split_ratio=math.inf),
    "numpy": NumpyEngine(),
    "numpy-chunked": NumpyEngine(first_chunk=1, per_slot=0, sample_over=4),
}


@pytest.fixture(scope="module", params=list(ENGINES))
def each_engine(request):
    """Run the module's tests with ``engine="auto"`` meaning this engine."""
    with default_engine(ENGINES[request.param]):
        yield request.param
