"""Kernel classes: the registry every scheduler draws its rewrites from.

A kernel class recognises its kernels in a module and offers, for one it recognises, a
schedule space (`schedulers.spaces.Space`: candidates as numpy columns, `evaluate` costs them
all at once, `baseline`, `describe`, `work` for the roofline bound, `fit_message`) and the
rewrite of any point of it. The built-in classes are tried in this order: attention, matmul
(any operand transposition), row loops, the natural form (every other single-tile kernel:
elementwise chains, reductions, gathers, scans, several results). Classes registered in the
entry-point group `ktir.kernel_classes` (a class or an instance, as for schedulers) are
tried before them, so a plugin may claim kernels with a rewrite of its own.

Whatever the class, the scheduler runs the same strategy over its space, re-ranks on the
timeline when the class can simulate a point (`Match.timeline`), fills the report the same
way, and `schedulers.schedule` proves every rewrite legal (`schedulers.proof`) before it is
returned. `examples()` gives small kernels of the class: the legality tests schedule them
with every scheduler, for every registered class.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ktir.dialects.names import Ktdp
from ktir.ir.operation import Module, Operation
from ktir.targets.schema import Target

from .api import ScheduleError, ScheduleOptions

if TYPE_CHECKING:
    from .kernels import Recognised
    from .rerank import Simulated

GROUP = "ktir.kernel_classes"


@dataclass
class Match:
    """A kernel a class recognised: its space, its rewrite, and what the report says of it."""

    kernel_class: str
    space: Any  # a schedulers.spaces.Space
    emit: Callable[[dict[str, int]], Module]  # the rewritten module for a point of the space
    dims: dict[str, int]
    notes: list[str] = field(default_factory=list)  # added to the report when applied
    # a point on the timeline simulation (cycles, or `rerank.Simulated`: cycles and scratchpad peak),
    # None if it cannot be simulated before the deadline
    timeline: Callable[[dict[str, int], float | None], Simulated | float | None] | None = None
    detail: Callable[[dict[str, int]], list[str]] | None = None  # notes that depend on the chosen point


@runtime_checkable
class KernelClass(Protocol):
    name: str

    def match(self, forms: Forms, options: ScheduleOptions, target: Target) -> Match | str:
        """One of the class's kernels, or why the function is not one."""
        ...

    def examples(self) -> Sequence[Module]:
        """Small kernels of the class (grid [1]), for the legality tests."""
        ...


class Forms:
    """The function to schedule, as given and in the forms the built-in classes read (the same
    memory effects: transposed reads as transposed views, a row loop from 0 as one from the
    tile id), each made once."""

    def __init__(self, given: Module, options: ScheduleOptions) -> None:
        self.given = given
        self.options = options

    def fn(self, module: Module) -> Operation:
        from .kernels import function_of

        return function_of(module, self.options.func)

    @cached_property
    def canon(self) -> Module:
        from .canonical import transposes_as_views

        canon = self.given
        for _ in range(3):  # A^T B^T: the transpose becomes a load, then the product's other operand
            turned = transposes_as_views(canon, self.fn(canon))
            if turned is canon:
                break
            canon = turned
        return canon

    @cached_property
    def rows(self) -> Module:
        from .canonical import with_tile_start

        return with_tile_start(self.canon, self.fn(self.canon))

    @cached_property
    def recognised(self) -> Recognised:
        from .kernels import recognise

        return recognise(self.rows, self.options.sizes, self.options.func)


# ---------------------------------------------------------------------- the built-in classes


class AttentionClass:
    name = "attention"

    def match(self, forms: Forms, options: ScheduleOptions, target: Target) -> Match | str:
        from .cost import figures
        from .emit_attention import emit_attention, match_attention
        from .spaces import AttentionSpace

        found = match_attention(forms.rows, options.sizes, options.func)
        if found is None:
            return "not flash-style attention"
        k = found.kernel
        fn = forms.fn(forms.rows)
        space = AttentionSpace(k, figures(target))

        def emit(p: dict[str, int]) -> Module:
            return emit_attention(found, fn, p, space.fig.tiles)

        return Match("attention", space, emit, {"heads": k.kv_heads, "S": k.rows, "D": k.head_dim},
                     timeline=module_timeline(space, emit, target, k.name, options))

    def examples(self) -> Sequence[Module]:
        from ktir.syntax.parser import parse

        from .emit_attention import attention_text

        return [parse(attention_text(2, 128, 64, "bf16", causal=True), "attention.ktir")]


class MatmulClass:
    name = "matmul"

    def match(self, forms: Forms, options: ScheduleOptions, target: Target) -> Match | str:
        from .cost import figures
        from .emit_matmul import emit_matmul
        from .emit_splitk import SplitKSpace, emit_splitk
        from .kernels import MatmulKernel

        rec = forms.recognised
        k = rec.kernel
        if not isinstance(k, MatmulKernel):
            return rec.reason or "not a matmul"
        fn = rec.fn
        return Match("matmul", SplitKSpace(k, figures(target)),
                     lambda p: emit_splitk(k, fn, p) if p.get("sk", 1) > 1 else emit_matmul(k, fn, p),
                     {"M": k.M, "N": k.N, "K": k.K})

    def examples(self) -> Sequence[Module]:
        from . import single_tile as nat

        return [nat.matmul(64, 256, 128), nat.matmul_transposed(96, 128, 192, True, True, init=-1.5)]


class RowClass:
    name = "rowwise"

    def match(self, forms: Forms, options: ScheduleOptions, target: Target) -> Match | str:
        from .cost import figures
        from .kernels import RowKernel
        from .rowloop import rewrite_rows
        from .spaces import RowSpace

        rec = forms.recognised
        k = rec.kernel
        if not isinstance(k, RowKernel):
            return rec.reason or "not a row loop"
        module = forms.rows
        space = RowSpace(k, figures(target))

        def emit(p: dict[str, int]) -> Module:
            return rewrite_rows(module, k, p)

        return Match("rowwise", space, emit, {"R": k.R}, [k.fixed_block] if k.fixed_block else [],
                     timeline=module_timeline(space, emit, target, k.name, options))

    def examples(self) -> Sequence[Module]:
        from ktir.syntax.parser import parse

        from . import naive

        return [parse(naive.softmax(256, 512, "f16"), "softmax.ktir")]


class NaturalClass:
    name = "natural"

    def match(self, forms: Forms, options: ScheduleOptions, target: Target) -> Match | str:
        from .canonical import tile_id_as_zero, without_empty_loops
        from .kernels import grid_of
        from .natural import NaturalKernel, natural_reason_or_kernel, prune

        zeroed = tile_id_as_zero(forms.canon, forms.fn(forms.canon))  # on grid [1], `tid * B` is 0
        zeroed = without_empty_loops(zeroed, forms.fn(zeroed))
        natural = natural_reason_or_kernel(*prune(zeroed, forms.fn(zeroed)), options.sizes)
        if isinstance(natural, NaturalKernel):
            return natural_match(natural, target)
        rec = forms.recognised
        fn = rec.fn
        # the natural form's reason when the kernel is straight-line code on one tile
        straight = not any(op.regions for op in fn.regions[0].blocks[0].operations if not op.name.startswith("linalg."))
        grid = grid_of(fn)
        if straight and math.prod(grid) == 1:
            return f"natural form: {natural}"
        if math.prod(grid) > 1:
            why = _already_distributed(fn, grid)
            if not straight:  # it has loops: say why they are not the row-loop or matmul form
                why += f"; nor is it a kernel of those forms: {rec.reason}"
            return why
        # one tile with loops or branches: the row-loop form's reason, and the construct that
        # keeps it out of the natural form (an scf.if, a loop carrying values)
        return f"{rec.reason}; natural form: {natural}"

    def examples(self) -> Sequence[Module]:
        from . import single_tile as nat

        return [nat.rmsnorm(64, 256), nat.scan(8, 256, "f32"), nat.transpose(97, 131, dtype="f32"),
                nat.reduce_sum(64, 128), nat.layernorm_stats(16, 256)]


def module_timeline(space: Any, emit: Callable[[dict[str, int]], Module], target: Target, func: str,
                    options: ScheduleOptions) -> Callable[[dict[str, int], float | None], Simulated | None]:
    """A point on the timeline through its rewrite: the interpreter's shapes-only trace of the emitted
    module, simulated, with its scratchpad peak; None when `space.records(point)` says it would not
    be simulated before the deadline (the interpreter's first import counted)."""

    def timeline(p: dict[str, int], deadline: float | None) -> Simulated | None:
        from .report import simulate_module
        from .rerank import INTERP_IMPORT, MODULE_RATE, Simulated

        cold = any(name not in sys.modules for name in ("reference_interp.inputs", "ktir.targets.from_interp"))
        need = space.records(p) / MODULE_RATE + (INTERP_IMPORT if cold else 0.0)
        if deadline is not None and time.perf_counter() + need > deadline:
            return None
        t = simulate_module(emit(p), target, func, options.sizes)
        return Simulated(float(t.makespan), max(t.peak_local.values(), default=0))

    return timeline


def natural_match(k: Any, target: Target) -> Match | str:
    """The natural-form kernel `k` as a match: divided along the classes it can cut, or (none
    can) a reduction split over the tiles."""
    from .cost import figures
    from .emit_natural import emit_natural
    from .emit_reduction import ReductionPlan, emit_split_reduction, find_split_reduction, reduction_kernel
    from .rerank import timeline_of
    from .space_natural import NaturalSpace

    split: ReductionPlan | None = None
    if all(k.extent[c] <= 1 for c in k.classes):  # e.g. a lowered program's scalar step (a position + 1)
        return ("nothing to divide: every dimension of the iteration space has one element, so the kernel runs on "
                "one tile as written")
    if not k.splittable():
        found = find_split_reduction(k)
        if not isinstance(found, ReductionPlan):
            return _uncuttable(k) + f"; and the reduction cannot be split over tiles: {found}"
        split, k = found, reduction_kernel(k, found)
    space = NaturalSpace(k, figures(target))
    notes = []
    blocked = [f"{k.label(c)}: {k.free[c][0]}" for c in k.classes if k.free[c] and split is None]
    if blocked:
        notes.append("kept whole: " + "; ".join(blocked))
    if split is not None:
        line = split.op.loc.line if split.op.loc else "?"
        notes.append(f"{split.op.name} (line {line}) is split over the tiles along {k.label(split.cls)}: "
                     + ("partial results all-reduced by ktdp.inter_tile_reduce (every tile a consumer); each tile runs "
                        "what follows on its own block" if split.everyone else
                        "partial results combined by ktdp.inter_tile_reduce on tile 0, which runs what follows"))
    return Match("natural", space,
                 (lambda p: emit_natural(space, p)) if split is None else (lambda p: emit_split_reduction(space, p, split)),
                 {k.label(c): k.extent[c] for c in k.classes}, notes,
                 timeline=lambda p, deadline: timeline_of(space, p, split, deadline))


def _uncuttable(k: Any) -> str:
    """Why no dimension of a natural-form kernel can be cut: each class with its first blocker."""
    parts = [f"{k.label(c)} ({k.extent[c]}): {k.free[c][0]}" for c in k.classes if k.extent[c] > 1 and k.free[c]]
    return "no dimension of the iteration space can be cut into blocks without changing results: " + "; ".join(parts)


def _already_distributed(fn: Operation, grid: tuple[int, ...]) -> str:
    """Why a straight-line kernel over a grid of several tiles is left alone: it is divided already."""
    from .kernels import op_at

    tile_id = next((op for op in fn.walk() if op.name == Ktdp.get_compute_tile_id), None)
    where = f" ({op_at(tile_id)} picks each tile's part)" if tile_id is not None else ""
    return (f"the kernel is already divided over grid {list(grid)}{where}; the schedulers divide kernels "
            "written for one tile (grid [1]) and row loops over a 1-D grid")


BUILTIN: tuple[KernelClass, ...] = (AttentionClass(), MatmulClass(), RowClass(), NaturalClass())


def _load(ep: Any) -> KernelClass:
    try:
        obj = ep.load()
    except Exception as e:  # noqa: BLE001 - a broken plugin must not take the command down with a traceback
        raise ScheduleError(f"kernel class plugin {ep.name!r} ({ep.value}) failed to load: {e}") from e
    inst = obj() if isinstance(obj, type) else obj
    if not isinstance(inst, KernelClass):
        raise ScheduleError(f"kernel class plugin {ep.name!r} ({ep.value}) has no `name`, `match(forms, options, "
                            "target)` and `examples()`")
    return inst


def kernel_classes() -> list[KernelClass]:
    """Every kernel class, in the order they are tried: plugins (by entry-point name), then the
    built-ins. Two classes of one name is an error naming both."""
    found = [_load(ep) for ep in sorted(entry_points(group=GROUP), key=lambda e: e.name)]
    names = [c.name for c in found] + [c.name for c in BUILTIN]
    dup = next((n for n in names if names.count(n) > 1), None)
    if dup is not None:
        raise ScheduleError(f"two kernel classes are named {dup!r}")
    return [*found, *BUILTIN]


__all__ = ["BUILTIN", "GROUP", "Forms", "KernelClass", "Match", "kernel_classes", "natural_match"]
