"""The pydantic side every adapter component shares: the ten options, declared once.

Imports pydantic, which both frameworks bring, and no framework. Each
component's base adds its framework's serialisation on top.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, Callable

from pydantic import (
    BaseModel,
    Field,
    FieldSerializationInfo,
    ValidationInfo,
    field_serializer,
    field_validator,
    model_validator,
)

from poolsplit_core.poolsplit import (
    ConfiguredScorer,
    Pool,
    default_is_active,
    default_scorer,
    default_token_counter,
)
from poolsplit_integrations._entries import (
    CALLABLE_DEFAULTS,
    OPTION_CHECKS,
    NotSerializableError,
    Options,
    check_option,
    default_hook,
    pools_to_data,
    refuse_unknown_fields,
)


class OptionsModel(BaseModel):
    """The ten shared options as fields, checked, with unknown arguments refused by name.

    Every pydantic component (LangChain's retriever and compressor,
    LlamaIndex's postprocessor and memory block) inherits these fields
    instead of declaring them; :meth:`options` reads them as one
    :class:`~poolsplit_integrations._entries.Options` value on every call, so
    assigning one (``component.k = 2``) is validated and seen by the next
    call with nothing rebuilt. ``token_counter`` and ``is_active`` shape the
    prepared store, so they are frozen: build a new component to change them.
    Pools serialise as plain dicts; a hook serialises to JSON only as its
    default (null, read back as the default).
    """

    pools: list[Pool] = Field(description="The reserved budgets, filled in order.")
    k: int | None = Field(
        default=None,
        description="Fair cap on contextual entries across pools; never cuts always-scope.")
    context: dict[str, Any] | None = Field(
        default=None, description="Default retrieval context (project, tags, custom keys).")
    scorer: Callable[..., float] = Field(
        default=default_scorer, description="scorer(entry, context, now=now) -> float.")
    token_counter: Callable[[str], int] = Field(
        default=default_token_counter, frozen=True,
        description="Token cost of an entry without a positive token_count.")
    is_active: Callable[[Mapping[str, Any]], bool] = Field(
        default=default_is_active, frozen=True, description="Which entries may load at all.")
    now: datetime | None = Field(
        default=None, description="Fixed clock for scoring; None means the current time.")
    filter: dict[str, Any] | None = Field(
        default=None,
        description="Tenant filter: equality on every key, before pool-split, always-scope"
                    " included; a per-call filter can only narrow it.")
    require_filter_keys: tuple[str, ...] | None = Field(
        default=None,
        description="Keys every call's filter must hold with a value; else refused (ValueError)."
                    " None: user_id as soon as a memory carries one; () states a shared store.")
    max_always_tokens: int | None = Field(
        default=None,
        description="Always-tier ceiling: costlier always-scope entries raise"
                    " AlwaysScopeOverflowError.")
    strict: bool = Field(
        default=True, frozen=True,
        description="Refuse bad memory (scope, status, created, token_count, tags, ...) where"
                    " it enters; False reads it as the specification's core does.")

    def options(self) -> Options:
        """The shared options as they are now, as one value."""
        return Options.of(self)

    @model_validator(mode="before")
    @classmethod
    def _refuse_unknown_arguments(cls, data: Any) -> Any:
        return refuse_unknown_fields(cls, data)

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
