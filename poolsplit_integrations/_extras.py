"""A clear ImportError when an adapter's framework is not installed.

>>> require("json", "langchain").__name__
'json'

The error names the distributions that are missing -- not the first word of a
module path -- and the one command that installs them all.
"""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["require"]

#: The distribution (pip's name) that provides a module, where the two differ;
#: the longest matching prefix wins, else the top-level module is the name.
_DISTRIBUTIONS = {
    "langchain_core": "langchain-core",
    "langgraph.store.postgres": "langgraph-checkpoint-postgres",
    "langgraph.store.sqlite": "langgraph-checkpoint-sqlite",
    "llama_index.core": "llama-index-core",
    "psycopg_pool": "psycopg-pool",
}


def require(module: str, extra: str, *also: str, what: str = "this adapter") -> ModuleType:
    """Import ``module`` or raise an ImportError naming what is missing and the extra to install.

    ``also`` are further modules the extra provides, checked too, so that one
    error names every missing distribution; ``what`` names the feature that
    needs them.

    >>> require("no_such_module_xyz", "postgres", what="from_conn_string")
    Traceback (most recent call last):
    ...
    ImportError: from_conn_string needs no-such-module-xyz, which is not installed; install it with: pip install 'poolsplit[postgres]'
    """  # noqa: E501
    install = f"pip install 'poolsplit[{extra}]'"
    missing: list[str] = []
    cause: ImportError | None = None
    for name in (module, *also):
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as exc:
            cause = exc
            distribution = _distribution(exc.name or name)
            if distribution not in missing:
                missing.append(distribution)
        except ImportError as exc:  # installed, but broken or of an unsupported version
            raise ImportError(f"{what} cannot import {name} ({exc}); install a supported"
                              f" version with: {install}") from exc
    if missing:
        raise ImportError(
            f"{what} needs {', '.join(missing)}, which"
            f" {'is' if len(missing) == 1 else 'are'} not installed; install"
            f" {'it' if len(missing) == 1 else 'them'} with: {install}"
        ) from cause
    return importlib.import_module(module)


def _distribution(module: str) -> str:
    """The distribution that provides ``module`` (:data:`_DISTRIBUTIONS`, else its top level)."""
    parts = module.split(".")
    for end in range(len(parts), 0, -1):
        known = _DISTRIBUTIONS.get(".".join(parts[:end]))
        if known is not None:
            return known
    return parts[0].replace("_", "-")
