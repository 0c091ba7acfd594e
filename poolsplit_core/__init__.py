"""poolsplit's core: the vendorable engine files, re-exported.

The functions live in :mod:`poolsplit_core.poolsplit`, one standard-library-only
file that can also be copied alone into a project as ``poolsplit.py``; the
prepared store in :mod:`poolsplit_core.prepared`, the word reader and token
counter beyond English in :mod:`poolsplit_core.multilingual` and the prompt
text of a result in :mod:`poolsplit_core.render`, standard-library files that
can be copied beside it as ``prepared.py``, ``multilingual.py`` and ``render.py``.
This package re-exports exactly their ``__all__``, plus :func:`check_entries`,
the strict store checks of :mod:`poolsplit_core.checks` (in none of them).
"""

from poolsplit_core import multilingual as _multilingual
from poolsplit_core import poolsplit as _core
from poolsplit_core import prepared as _prepared
from poolsplit_core import render as _render
from poolsplit_core import tracing as _tracing
from poolsplit_core.checks import check_entries
from poolsplit_core.multilingual import *  # noqa: F403 -- words in any script, CJK tokens
from poolsplit_core.poolsplit import *  # noqa: F403 -- the core's __all__, nothing else
from poolsplit_core.prepared import *  # noqa: F403 -- the prepared store's __all__
from poolsplit_core.render import *  # noqa: F403 -- a result as prompt text

__all__ = [*_core.__all__, *_prepared.__all__, *_multilingual.__all__, *_render.__all__,
           "check_entries"]

# Every PreparedStore read gets its span from tracing (a no-op unless OpenTelemetry
# is installed and a tracer provider set); prepared.py copied alone has no spans.
_prepared._traced_read = _tracing.read

# The numpy engine of PreparedStore registers itself when numpy is installed
# (pip install 'poolsplit[fast]'); without it every store uses the python engine.
# Asking importlib whether numpy is there is not enough: an import hook may
# hide an installed numpy, so the import itself decides.
try:
    import numpy as _numpy  # noqa: F401
except ImportError:
    pass
else:
    from poolsplit_core._vectorized import NumpyEngine

    __all__ += ["NumpyEngine"]
