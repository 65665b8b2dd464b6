"""Root classes of the IR's value objects: types and attributes are immutable and hashable."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict

M = TypeVar("M", bound=BaseModel)
_new = object.__new__
_set = object.__setattr__


def trusted(cls: type[M], fields: dict[str, Any], names: set[str] | None = None) -> M:
    """An instance of the pydantic model `cls` from `fields` (every field, each already of
    the right type; the instance owns the dict), without validation: what
    `cls.model_construct(**fields)` gives, at a fraction of its cost. For the parser's hot
    paths, which build well-formed fields themselves. `names`: the set of the field names,
    if the caller keeps one (copying it is faster than building it)."""
    obj = _new(cls)
    _set(obj, "__dict__", fields)
    _set(obj, "__pydantic_fields_set__", set(fields) if names is None else names.copy())
    _set(obj, "__pydantic_extra__", None)
    _set(obj, "__pydantic_private__", None)
    return obj


class Type(BaseModel):
    """A KTIR type. Subclasses are frozen pydantic models, compared by value."""

    model_config = ConfigDict(frozen=True)


class Attribute(BaseModel):
    """A compile-time constant attached to an operation, compared by value."""

    model_config = ConfigDict(frozen=True)
