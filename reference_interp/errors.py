"""Runtime errors of the reference interpreter.

Every check the interpreter performs fails with a `KtirRuntimeError` that names the op
(with its source location), the tile and, where there is one, the coordinate. It is a
`ktir.KtirError`, so the command line renders it like any other diagnostic:

    kernel.ktir:14:3: error[runtime.out-of-view]: ktdp.construct_access_tile on tile 3 (grid [4]):
    coordinate (64, 0) is outside the view's coordinate_set
"""

from __future__ import annotations

from typing import Any

from ktir.ir.operation import Operation
from ktir.syntax.diagnostics import Diagnostic, KtirError

# The kinds of runtime error; the diagnostic id is `runtime.<kind>`.
KINDS = (
    "race",  # two tiles touch one element, one writing, with no ordering between them
    "out-of-view",  # a coordinate outside a view's sizes or coordinate_set
    "out-of-bounds",  # an address outside the array or memory the view lies in
    "uninitialised",  # reading ct_local (or memref.alloc) memory never written
    "capacity",  # ct_local use beyond the target's scratchpad capacity
    "step-limit",  # too many executed ops (a hang guard)
    "memory-limit",  # a value, set or memory larger than the configured limit
    "store-conflict",  # one ktdp.store writes one element twice (indirect duplicates, aliasing strides)
    "deadlock",  # tiles wait on inter-tile ops that can never complete
    "undefined",  # undefined behaviour: division by zero, poison shifts, reading tensor.empty contents
    "type",  # a value does not match the type the program declares
    "unsupported",  # a construct the interpreter does not execute
    "argument",  # bad run() arguments
    "internal",  # a bug in the interpreter (please report)
)


class KtirRuntimeError(KtirError):
    """A check failed while running a KTIR program."""

    def __init__(
        self,
        kind: str,
        message: str,
        *,
        op: Operation | None = None,
        tile: int | None = None,
        coordinate: tuple[int, ...] | None = None,
    ) -> None:
        self.kind = kind
        self.detail = message
        self.op = op
        self.tile = tile
        self.tile_coords: tuple[int, ...] | None = None
        self.grid: tuple[int, ...] | None = None
        self.coordinate = coordinate
        self.file: str | None = None
        super().__init__([self._diagnostic()])

    def attach(self, op: Operation | None = None, tile: int | None = None, **extra: Any) -> KtirRuntimeError:
        """Fill in the op and tile if the raising code did not know them."""
        if self.op is None and op is not None:
            self.op = op
        if self.tile is None and tile is not None:
            self.tile = tile
        for key, value in extra.items():
            if getattr(self, key, None) is None:
                setattr(self, key, value)
        self.diagnostics = [self._diagnostic()]
        self.args = (self.message,)
        return self

    @property
    def message(self) -> str:
        parts = []
        if self.op is not None:
            parts.append(self.op.name)
        if self.tile is not None:
            where = f"tile {self.tile}"
            if self.tile_coords is not None and self.grid is not None and len(self.grid) > 1:
                where += f" {self.tile_coords}"
            if self.grid is not None:
                where += f" (grid {list(self.grid)})"
            parts.append(("on " if parts else "") + where)
        head = " ".join(parts)
        return f"{head}: {self.detail}" if head else self.detail

    def _diagnostic(self) -> Diagnostic:
        loc = self.op.loc if self.op is not None else None
        line = loc.line if loc is not None else 0
        col = loc.column if loc is not None else 0
        return Diagnostic("error", f"runtime.{self.kind}", self.message, line, col, self.file)

    def __str__(self) -> str:
        return self.message


def fail(kind: str, message: str, coordinate: tuple[int, ...] | None = None) -> KtirRuntimeError:
    """Build an error to raise where the op and tile are filled in by the caller's block."""
    return KtirRuntimeError(kind, message, coordinate=coordinate)


class CompileError(KtirRuntimeError):
    """The program cannot be prepared for execution (unknown op, bad attribute, ...)."""

    def __init__(self, message: str, op: Operation | None = None, kind: str = "unsupported") -> None:
        super().__init__(kind, message, op=op)
