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

from poolsplit_core import _vectorized, prepared

ENGINES = ("python", "python-split", "numpy", "numpy-chunked")


@pytest.fixture(scope="module", params=ENGINES)
def each_engine(request):
    """Run the module's tests with ``engine="auto"`` meaning this engine."""
    p, v = prepared, _vectorized
    saved = (p._AUTO, p._SPLIT_RATIO, p._SPLIT_AFTER, v._FIRST_CHUNK, v._PER_SLOT, v._SAMPLE_OVER)
    p._AUTO = request.param.split("-")[0]
    if request.param == "python-split":
        p._SPLIT_RATIO, p._SPLIT_AFTER = math.inf, 1
    if request.param == "numpy-chunked":
        v._FIRST_CHUNK, v._PER_SLOT, v._SAMPLE_OVER = 1, 0, 4
    yield request.param
    (p._AUTO, p._SPLIT_RATIO, p._SPLIT_AFTER, v._FIRST_CHUNK, v._PER_SLOT, v._SAMPLE_OVER) = saved
