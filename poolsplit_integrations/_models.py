"""The pydantic side every adapter component shares: the options' fields, generated.

Imports pydantic, which both frameworks bring, and no framework. The fields
of :class:`OptionsModel` are not written here: they are generated from the
one declaration, the dataclass :class:`~poolsplit_integrations._options.Options`
-- each field's type, default, description and ``frozen`` flag -- so an
option is added, documented or frozen in one place. Each component's base
adds its framework's serialisation on top.

>>> from poolsplit_integrations._options import OPTION_NAMES
>>> list(OptionsModel.model_fields) == list(OPTION_NAMES)
True
>>> OptionsModel.model_fields["token_counter"].frozen
True
"""

from __future__ import annotations

import dataclasses
import typing
from typing import TYPE_CHECKING, Any

from pydantic import (
    BaseModel,
    Field,
    FieldSerializationInfo,
    ValidationInfo,
    create_model,
    field_serializer,
    field_validator,
    model_validator,
)

from poolsplit_core.poolsplit import ConfiguredScorer, Pool
from poolsplit_integrations._options import (
    CALLABLE_DEFAULTS,
    OPTION_CHECKS,
    Options,
    check_context,
    check_option,
    refuse_unknown_fields,
)
from poolsplit_integrations._serialise import NotSerializableError, default_hook, pools_to_data

__all__ = ["OptionsModel", "option_field"]


class _OptionsBehaviour(BaseModel):
    """What :class:`OptionsModel` does with its fields: checks, refusals, serialisers.

    The validators name their fields with ``check_fields=False``: the fields
    themselves are generated below, on the subclass.
    """

    def options(self) -> Options:
        """The shared options as they are now, as one value."""
        return Options.of(self)

    @model_validator(mode="before")
    @classmethod
    def _refuse_unknown_arguments(cls, data: Any) -> Any:
        return refuse_unknown_fields(cls, data)

    @model_validator(mode="after")
    def _check_context(self) -> Any:
        """A default context the scorer would refuse is refused here, at construction."""
        check_context(getattr(self, "context", None), getattr(self, "scorer", None))
        return self

    @field_validator(*OPTION_CHECKS, mode="before", check_fields=False)
    @classmethod
    def _check_options(cls, value: Any, info: ValidationInfo) -> Any:
        return check_option(info.field_name, value)

    @field_validator(*CALLABLE_DEFAULTS, mode="before", check_fields=False)
    @classmethod
    def _default_hooks(cls, value: Any, info: ValidationInfo) -> Any:
        return default_hook(info.field_name or "", value)

    @field_serializer("pools", check_fields=False)
    def _pools_as_data(self, pools: list[Pool]) -> list[dict[str, Any]]:
        return pools_to_data(pools)

    @field_serializer(*CALLABLE_DEFAULTS, when_used="json", check_fields=False)
    def _hooks_as_data(self, value: Any, info: FieldSerializationInfo) -> Any:
        if isinstance(value, ConfiguredScorer):  # its named options (checked first)
            return value.to_data()
        if value is not CALLABLE_DEFAULTS[info.field_name]:  # components refuse by name first
            raise NotSerializableError(f"{info.field_name} is a custom callable")
        return None


#: The declaration of each shared option, by name.
_DECLARED = {option.name: option for option in dataclasses.fields(Options)}


def option_field(name: str, **changes: Any) -> Any:
    """The pydantic field of the shared option ``name``: its declared default and metadata.

    >>> option_field("k").description
    'Fair cap on contextual entries across pools; never cuts always-scope.'

    ``changes`` replace settings, e.g. ``default_factory=dict`` for a
    component whose default differs.
    """
    option = _DECLARED[name]
    settings: dict[str, Any] = {"description": option.metadata["description"]}
    if option.default is not dataclasses.MISSING:
        settings["default"] = option.default
    if option.metadata.get("frozen"):
        settings["frozen"] = True
    if "default_factory" in changes:
        settings.pop("default", None)
    return Field(**{**settings, **changes})


def _option_fields() -> dict[str, Any]:
    """One pydantic field per field of :class:`Options`: its type, default and metadata."""
    types = typing.get_type_hints(Options)
    return {name: (types[name], option_field(name)) for name in _DECLARED}


_OPTIONS_DOC = """The shared options as fields, checked, with unknown arguments refused by name.

    Every pydantic component (LangChain's retriever and compressor,
    LlamaIndex's postprocessor and memory block) inherits these fields
    instead of declaring them; :meth:`options` reads them as one
    :class:`~poolsplit_integrations._options.Options` value on every call, so
    assigning one (``component.k = 2``) is validated and seen by the next
    call with nothing rebuilt. ``token_counter``, ``is_active`` and ``strict``
    shape the prepared store, so they are frozen: build a new component to
    change them. Pools serialise as plain dicts; a hook serialises to JSON
    only as its default (null, read back as the default).
    """

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from datetime import datetime

    from poolsplit_core.poolsplit import default_is_active, default_scorer, default_token_counter

    class OptionsModel(_OptionsBehaviour):
        # What a type checker sees of the fields generated below (it cannot run
        # create_model); tests/integrations/test_options_declared_once.py holds
        # these lines to Options, field by field.
        pools: list[Pool]
        k: int | None = None
        context: dict[str, Any] | None = None
        scorer: Callable[..., float] = default_scorer
        token_counter: Callable[[str], int] = default_token_counter
        is_active: Callable[[Mapping[str, Any]], bool] = default_is_active
        now: datetime | None = None
        filter: dict[str, Any] | None = None
        require_filter_keys: tuple[str, ...] | None = None
        max_always_tokens: int | None = None
        strict: bool = True
else:
    OptionsModel = create_model("OptionsModel", __base__=_OptionsBehaviour, __doc__=_OPTIONS_DOC,
                                __module__=__name__, **_option_fields())
