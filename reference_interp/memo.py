"""Bounded memos for facts the interpreter recomputes on every run of a kernel.

A kernel's modules, functions, types, buffers and access patterns are the same objects (or
equal values) run after run, so the interpreter remembers what it derived from them. Each
memo forgets everything once it holds `limit` entries: a process that runs many different
kernels (the fuzz lane, a test session) keeps a bounded amount, and a kernel run in a loop
refills it at once. Clearing everything is cheaper than tracking recency on these hot paths.

- `Memo`: keys are values (hashable, compared by equality).
- `ObjectMemo`: keys are objects compared by identity (some of them hash slowly or not at
  all); the object itself is kept with the entry, so an id reused by a new object after the
  old one died is never mistaken for it.
"""

from __future__ import annotations

from collections.abc import Hashable
from enum import Enum
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Missing(Enum):
    """What `get` returns when nothing is remembered (values may be None)."""

    MISSING = 0


MISSING = Missing.MISSING


class Memo(Generic[K, V]):
    """Values by key, at most `limit` of them."""

    __slots__ = ("limit", "_data")

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError(f"a memo holds at least one entry, not {limit}")
        self.limit = limit
        self._data: dict[K, V] = {}

    def get(self, key: K) -> V | Missing:
        return self._data.get(key, MISSING)

    def put(self, key: K, value: V) -> V:
        """Remember `value` for `key` (forgetting everything else first when full); returns it."""
        data = self._data
        if len(data) >= self.limit and key not in data:
            data.clear()
        data[key] = value
        return value

    def __len__(self) -> int:
        return len(self._data)

    def clear(self) -> None:
        self._data.clear()


class ObjectMemo(Generic[V]):
    """Values by the identity of an object (and optional hashable `extra` key parts)."""

    __slots__ = ("limit", "_data")

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError(f"a memo holds at least one entry, not {limit}")
        self.limit = limit
        self._data: dict[tuple[int, Hashable], tuple[object, V]] = {}

    def get(self, obj: object, extra: Hashable = ()) -> V | Missing:
        hit = self._data.get((id(obj), extra))
        if hit is None or hit[0] is not obj:
            return MISSING
        return hit[1]

    def put(self, obj: object, value: V, extra: Hashable = ()) -> V:
        """Remember `value` for this very object (forgetting everything else first when full)."""
        data = self._data
        key = (id(obj), extra)
        if len(data) >= self.limit and key not in data:
            data.clear()
        data[key] = (obj, value)
        return value

    def __len__(self) -> int:
        return len(self._data)

    def clear(self) -> None:
        self._data.clear()
