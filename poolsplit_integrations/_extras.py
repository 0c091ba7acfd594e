"""A clear ImportError when an adapter's framework is not installed."""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["require"]


def require(module: str, extra: str) -> ModuleType:
    """Import ``module`` or raise an ImportError naming the extra to install."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(
            f"this adapter needs {module.split('.')[0]!r}, which is not installed;"
            f" install it with: pip install 'poolsplit[{extra}]'"
        ) from exc
