"""poolsplit's core: the vendorable single-file engine, re-exported.

Everything lives in :mod:`poolsplit_core.poolsplit`, one standard-library-only
file that can also be copied alone into a project as ``poolsplit.py``.
"""

from poolsplit_core.poolsplit import (
    OUTCOMES,
    Decision,
    Explanation,
    Ledger,
    Pool,
    __version__,
    default_is_active,
    default_scorer,
    default_token_counter,
    explain_pools,
    retrieve,
    retrieve_pools,
)

__all__ = [
    "OUTCOMES",
    "Decision",
    "Explanation",
    "Ledger",
    "Pool",
    "__version__",
    "default_is_active",
    "default_scorer",
    "default_token_counter",
    "explain_pools",
    "retrieve",
    "retrieve_pools",
]
