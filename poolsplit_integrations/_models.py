"""The pydantic side both adapters' components share: option checks, refusals, pools as data.

Imports pydantic, which both frameworks bring, and no framework. Each
component's base adds its framework's serialisation on top.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationInfo, field_serializer, field_validator, model_validator

from poolsplit_core.poolsplit import Pool
from poolsplit_integrations._entries import (
    CALLABLE_DEFAULTS,
    OPTION_CHECKS,
    check_option,
    default_hook,
    pools_to_data,
    refuse_unknown_fields,
)


class OptionsModel(BaseModel):
    """Unknown arguments refused by name, the shared options checked, pools written as data.

    A hook given as None (how a default serialises) reads back as the default.
    """

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
