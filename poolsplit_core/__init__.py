"""poolsplit's core: the vendorable single-file engine, re-exported.

Everything lives in :mod:`poolsplit_core.poolsplit`, one standard-library-only
file that can also be copied alone into a project as ``poolsplit.py``; this
package re-exports exactly its ``__all__``, plus :func:`check_entries`, the
strict store checks of :mod:`poolsplit_core.checks` (not part of the file).
"""

from poolsplit_core import poolsplit as _core
from poolsplit_core.checks import check_entries
from poolsplit_core.poolsplit import *  # noqa: F403 -- the core's __all__, nothing else

__all__ = [*_core.__all__, "check_entries"]

# The numpy engine of PreparedStore registers itself when numpy is installed
# (pip install 'poolsplit[fast]'); without it every store uses the python engine.
# Asking importlib whether numpy is there is not enough: an import hook may
# hide an installed numpy, so the import itself decides.
try:
    import numpy as _numpy  # noqa: F401
except ImportError:
    pass
else:
    from poolsplit_core import _vectorized  # noqa: F401
