"""Custom hooks for the serialisation tests: code, which no component can write as data."""

from __future__ import annotations

from typing import Any, Callable

#: The hooks every component takes, each with a default that serialises.
HOOKS = ("scorer", "token_counter", "is_active")


def custom_hook(name: str) -> Callable[..., Any]:
    """A hook called ``custom`` standing in for ``name``, returning a valid value."""
    value = {"scorer": 1.0, "token_counter": 3, "is_active": True}[name]

    def custom(*args: Any, **kwargs: Any) -> Any:
        return value

    return custom
