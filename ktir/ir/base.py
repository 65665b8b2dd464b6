"""Root classes of the IR's value objects: types and attributes are immutable and hashable."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Type(BaseModel):
    """A KTIR type. Subclasses are frozen pydantic models, compared by value."""

    model_config = ConfigDict(frozen=True)


class Attribute(BaseModel):
    """A compile-time constant attached to an operation, compared by value."""

    model_config = ConfigDict(frozen=True)
