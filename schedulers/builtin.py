"""The built-in schedulers: `baseline`, `exact` and `search`, all through one driver.

The driver recognises the kernel's class, builds its schedule space, asks the strategy for
a point, checks it fits the scratchpad, rewrites the module and fills in the report. A
kernel outside the classes is returned unchanged, with the reason in the report.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import replace

import numpy as np

from ktir.ir.operation import Module, Operation
from ktir.targets.schema import Target

from .api import NoLegalSchedule, ScheduleOptions, ScheduleResult
from .canonical import transposes_as_views, with_tile_start
from .cost import Bound, figures, roofline_bound
from .emit_attention import AttentionMatch, emit_attention, match_attention
from .emit_matmul import emit_matmul
from .emit_natural import emit_natural
from .emit_reduction import ReductionPlan, emit_split_reduction, find_split_reduction, reduction_kernel
from .emit_splitk import emit_splitk
from .kernels import AttentionKernel, MatmulKernel, RowKernel, func_name, function_of, grid_of, op_at, recognise
from .natural import NaturalKernel, natural_reason_or_kernel, prune
from .one_trip import inline_one_trip
from .report import ScheduleReport
from .rerank import Ranked, rerank, timeline_of
from .rowloop import rewrite_rows
from .space_choice import space_for
from .space_natural import NaturalSpace
from .spaces import Evaluated, Space, row

# A strategy returns the chosen point and how many candidates it evaluated.
Strategy = Callable[[Space, ScheduleOptions], tuple[dict[str, int], int]]

REWRITE_MARGIN = 0.15  # seconds kept from a search's budget for the rewrite and the report
SEARCH_SHARE = 0.5  # of the budget left, what a searching strategy may spend before the timeline re-rank

SUPPORTED_OPS = (
    "linalg.matmul", "linalg.fill", "linalg.generic", "linalg.reduce", "tensor.empty", "arith.truncf", "arith.extf",
    "arith.addf", "arith.subf", "arith.mulf", "arith.divf", "arith.maximumf", "math.exp", "math.rsqrt", "math.sqrt",
    "ktdp.get_compute_tile_id", "ktdp.construct_memory_view", "ktdp.construct_access_tile", "ktdp.load", "ktdp.store",
    "scf.for", "scf.yield", "arith.constant", "arith.muli", "arith.addi", "func.func", "func.return",
    # the attention form (`emit_attention._COMPUTE` and `_FREE`)
    "linalg.mul", "linalg.index", "linalg.yield", "arith.cmpi", "arith.select", "arith.ceildivsi", "arith.subi",
    "arith.divui", "arith.remui", "arith.minsi", "tensor.collapse_shape", "tensor.expand_shape",
    # the natural form (`schedulers.natural`: every op the dependence check models) and the
    # split reduction it may emit (`emit_reduction`)
    "linalg.transpose", "linalg.broadcast", "linalg.map", "linalg.copy", "linalg.add", "linalg.sub", "linalg.div",
    "linalg.max", "linalg.min", "linalg.batch_matmul", "linalg.batch_matmul_transpose_b", "linalg.matmul_transpose_a",
    "linalg.matmul_transpose_b", "linalg.matvec", "linalg.dot", "arith.negf", "arith.minimumf", "math.tanh",
    "math.log", "math.erf", "math.absf", "ktdp.inter_tile_produce", "ktdp.inter_tile_reduce", "ktdp.yield_partial",
    "ktdp.yield_reduced", "scf.if",
)


def evaluate_point(space: Space, point: dict[str, int]) -> Evaluated:
    return space.evaluate({k: np.array([v]) for k, v in point.items()})


def best_index(ev: Evaluated, capacity: int) -> int | None:
    """The fastest schedule that fits; ties go to less global traffic, then to the first listed."""
    fits = ev.scratch <= capacity
    if not fits.any():
        return None
    cycles = np.where(fits, ev.cycles, np.inf)
    order = np.lexsort((np.arange(ev.size), ev.global_bytes, np.round(cycles, 6)))
    return int(order[0])


def settle(space: Space, cols: dict[str, np.ndarray], ev: Evaluated, i: int) -> int:
    """Within the space's stated resolution of the fastest (`near_ties`, a fraction), the
    candidate its `tie_key` ranks first: a model whose figures differ by less than its own error
    does not tell those schedules apart, and fewer, larger blocks issue fewer ops."""
    tol = getattr(space, "near_ties", 0.0)
    if not tol:
        return i
    fits = ev.scratch <= space.fig.local_capacity
    near = np.nonzero(fits & (ev.cycles <= ev.cycles[i] * (1 + tol)))[0]
    key = space.tie_key(cols)  # type: ignore[union-attr]
    return int(near[np.lexsort((ev.cycles[near], key[near]))[0]])


def baseline_strategy(space: Space, options: ScheduleOptions) -> tuple[dict[str, int], int]:
    point = space.baseline()
    return point, 1


def exact_strategy(space: Space, options: ScheduleOptions) -> tuple[dict[str, int], int]:
    cols = space.candidates()
    ev = space.evaluate(cols)
    i = best_index(ev, space.fig.local_capacity)
    if i is None:
        raise NoLegalSchedule(space.fit_message())
    return row(cols, settle(space, cols, ev, i)), ev.size


def search_strategy(space: Space, options: ScheduleOptions) -> tuple[dict[str, int], int]:
    """Simulated annealing over the candidate table, seeded with the baseline and exact points.

    A move changes one parameter to a neighbouring value; the walk accepts a worse schedule
    with probability exp(-relative loss / temperature). It keeps the best point seen, so it
    is never worse than its seeds, and stops when the time budget (which includes building
    and costing the table) is spent.
    """
    deadline = time.perf_counter() + max(0.0, options.time_budget)
    cols = space.candidates()
    ev = space.evaluate(cols)
    cap = space.fig.local_capacity
    cost = np.where(ev.scratch <= cap, ev.cycles, np.inf)
    names = list(cols)
    values = [np.unique(cols[n]) for n in names]
    radix = np.cumprod([1] + [len(v) for v in values[:-1]])
    # a candidate's key: its position in each column's sorted values, in mixed radix
    keys = sum(np.searchsorted(v, cols[n]) * r for n, v, r in zip(names, values, radix, strict=True))
    order = np.argsort(keys)
    sorted_keys = keys[order]

    def lookup(pos: tuple[int, ...]) -> int | None:
        key = int(sum(p * int(r) for p, r in zip(pos, radix, strict=True)))
        i = int(np.searchsorted(sorted_keys, key))
        return int(order[i]) if i < len(sorted_keys) and sorted_keys[i] == key else None

    seeds = [space.baseline()]
    exact = best_index(ev, cap)
    if exact is not None:
        seeds.append(row(cols, settle(space, cols, ev, exact)))
    rng = np.random.default_rng(options.seed)
    best, best_cost, evaluated = None, math.inf, ev.size
    for seed in seeds:
        pos = tuple(int(np.searchsorted(v, seed[n])) for n, v in zip(names, values, strict=True))
        i = lookup(pos)
        c = float(cost[i]) if i is not None else math.inf
        if c < best_cost:
            best, best_cost = pos, c
    current, current_cost = best, best_cost
    temperature = 0.05
    while current is not None and time.perf_counter() < deadline:
        j = int(rng.integers(len(names)))
        p = current[j] + int(rng.choice((-1, 1)))
        if not 0 <= p < len(values[j]):
            continue
        cand = current[:j] + (p,) + current[j + 1:]
        i = lookup(cand)
        if i is None:
            continue
        evaluated += 1
        c = float(cost[i])
        if not math.isfinite(c):
            continue
        if c <= current_cost or rng.random() < math.exp(-(c - current_cost) / (current_cost * temperature)):
            current, current_cost = cand, c
        if c < best_cost:
            best, best_cost = cand, c
        temperature = max(1e-3, temperature * 0.999)
    if best is None or not math.isfinite(best_cost):
        raise NoLegalSchedule(space.fit_message())
    return {n: int(v[p]) for n, v, p in zip(names, values, best, strict=True)}, evaluated


def plan(kernel: MatmulKernel | RowKernel | AttentionKernel | NaturalKernel, target: Target, strategy: Strategy,
         options: ScheduleOptions) -> tuple[Space, dict[str, int], int, Bound]:
    """The cost-model half of scheduling (no module): what the benchmarks call for every class."""
    fig = figures(target)
    space = space_for(kernel, fig)
    bound = roofline_bound(space.work(), fig)
    point, count = strategy(space, options)
    ev = evaluate_point(space, point)
    if ev.scratch[0] > fig.local_capacity:
        raise NoLegalSchedule(space.fit_message())
    return space, point, count, bound


def fill_report(report: ScheduleReport, space: Space, point: dict[str, int], count: int, bound: Bound) -> None:
    fig = space.fig
    ev = evaluate_point(space, point)
    report.schedule = space.describe(point)
    report.estimate_cycles = float(ev.cycles[0])
    report.estimate_seconds = fig.seconds(float(ev.cycles[0]))
    report.roofline_cycles = bound.cycles
    report.roofline_binding = bound.binding
    report.ratio = float(ev.cycles[0]) / bound.cycles if bound.cycles else None
    report.bytes_per_level = {"global": int(ev.global_bytes[0]), "ct_local": int(ev.local_bytes[0])}
    report.scratchpad_peak_bytes = int(ev.scratch[0])
    report.scratchpad_capacity_bytes = fig.local_capacity
    report.candidates_evaluated = count


def _already_distributed(fn: Operation, grid: tuple[int, ...]) -> str:
    """Why a straight-line kernel over a grid of several tiles is left alone: it is divided already."""
    tile_id = next((op for op in fn.walk() if op.name == "ktdp.get_compute_tile_id"), None)
    where = f" ({op_at(tile_id)} picks each tile's part)" if tile_id is not None else ""
    return (f"the kernel is already divided over grid {list(grid)}{where}; the schedulers divide kernels "
            "written for one tile (grid [1]) and row loops over a 1-D grid")


class StrategyScheduler:
    """A scheduler made of a strategy over the shared schedule spaces and rewrites.

    Subclass it with a `name` and a `strategy(space, options) -> (point, evaluated)` to
    write a scheduler plugin that reuses the kernel classes, cost model and rewrites.
    """

    name = ""
    strategy: Strategy
    rerank = True  # natural-form kernels: re-rank the model's best schedules on the timeline

    def supported_ops(self) -> tuple[str, ...]:
        return SUPPORTED_OPS

    def schedule(self, module: Module, target: Target, options: ScheduleOptions) -> ScheduleResult:
        start = time.perf_counter()
        given = module
        # the forms the classes read (same memory effects): transposed reads as transposed views,
        # a row loop from 0 as one from the tile id
        canon = module
        for _ in range(3):  # A^T B^T: the transpose becomes a load, then the product's other operand
            turned = transposes_as_views(canon, function_of(canon, options.func))
            if turned is canon:
                break
            canon = turned
        module = with_tile_start(canon, function_of(canon, options.func))
        rec = recognise(module, options.sizes, options.func)
        report = ScheduleReport(scheduler=self.name, target=target.name, kernel=rec.name, kernel_class="unrecognized",
                                applied=False)
        if rec.kernel is None:
            found = match_attention(module, options.sizes, options.func)
            if found is not None:
                return self._attention(found, rec.fn, target, options, report, start)
            natural = natural_reason_or_kernel(*prune(canon, function_of(canon, options.func)), options.sizes)
            if isinstance(natural, NaturalKernel) and natural.splittable():
                return self._natural(natural, target, options, report, start)
            if isinstance(natural, NaturalKernel):
                split = find_split_reduction(natural)
                if isinstance(split, ReductionPlan):
                    return self._natural(reduction_kernel(natural, split), target, options, report, start, split)
                report.reason = _uncuttable(natural) + f"; and the reduction cannot be split over tiles: {split}"
            else:  # the natural form's reason when the kernel is straight-line code on one tile
                straight = not any(op.regions for op in rec.fn.regions[0].blocks[0].operations
                                   if not op.name.startswith("linalg."))
                grid = grid_of(rec.fn)
                if straight and math.prod(grid) == 1:
                    report.reason = f"natural form: {natural}"
                elif math.prod(grid) > 1:
                    report.reason = _already_distributed(rec.fn, grid)
                    if not straight:  # it has loops: say why they are not the row-loop or matmul form
                        report.reason += f"; nor is it a kernel of those forms: {rec.reason}"
                else:  # one tile with loops or branches: the row-loop form's reason, and the construct
                    # that keeps it out of the natural form (an scf.if, a loop carrying values)
                    report.reason = f"{rec.reason}; natural form: {natural}"
            report.notes.append("the kernel is outside the matmul and row-loop classes; it is returned unchanged")
            report.schedule_seconds = time.perf_counter() - start
            return ScheduleResult(given, report)
        k = rec.kernel
        if isinstance(k, RowKernel):
            few = self._few_rows(module, rec.fn, k, target, options, start)
            if few is not None:
                return few
        report.kernel_class = "matmul" if isinstance(k, MatmulKernel) else "rowwise"
        report.dims = {"M": k.M, "N": k.N, "K": k.K} if isinstance(k, MatmulKernel) else {"R": k.R}
        # the budget covers the whole call: what recognition took, and a margin for the rewrite
        left = max(0.0, options.time_budget - (time.perf_counter() - start) - REWRITE_MARGIN)
        space, point, count, bound = plan(k, target, type(self).strategy, replace(options, time_budget=left))
        fill_report(report, space, point, count, bound)
        if isinstance(k, RowKernel) and k.fixed_block:
            report.notes.append(k.fixed_block)
        if isinstance(k, MatmulKernel):
            out = emit_splitk(k, rec.fn, point) if point.get("sk", 1) > 1 else emit_matmul(k, rec.fn, point)
        else:
            out = rewrite_rows(module, k, point)
        report.applied = True
        report.schedule_seconds = time.perf_counter() - start
        return ScheduleResult(out, report)


    def _few_rows(self, module: Module, fn: Operation, k: RowKernel, target: Target, options: ScheduleOptions,
                  start: float) -> ScheduleResult | None:
        """Fewer rows than tiles (decode): the row loop runs once on one tile, so the kernel is its
        body in natural form, whose other dimensions (heads, a split reduction over the columns)
        may divide better. That schedule is taken when its timeline beats the row schedule's
        estimate (the row model replays the timeline's rules); None keeps the row loop."""
        fig = figures(target)
        if fig.tiles <= k.R:
            return None
        inlined = inline_one_trip(module, fn, options.sizes)
        if inlined is None:
            return None
        natural = natural_reason_or_kernel(inlined, next(f for f in inlined.functions() if func_name(f) == k.name),
                                           options.sizes)
        if not isinstance(natural, NaturalKernel):
            return None
        split: ReductionPlan | None = None
        if not natural.splittable():
            found = find_split_reduction(natural)
            if not isinstance(found, ReductionPlan):
                return None
            split, natural = found, reduction_kernel(natural, found)
        # most of the budget for the natural schedule (re-ranked on the timeline), the rest for the rows
        report = ScheduleReport(scheduler=self.name, target=target.name, kernel=k.name, kernel_class="natural",
                                applied=False)
        try:
            result = self._natural(natural, target, replace(options, time_budget=options.time_budget * 0.7), report,
                                   start, split, need_timeline=True)
        except NoLegalSchedule:
            return None  # the row loop's own message says what does not fit
        left = max(0.0, options.time_budget - (time.perf_counter() - start) - REWRITE_MARGIN)
        space, point, _, _ = plan(k, target, type(self).strategy, replace(options, time_budget=left))
        rows = float(evaluate_point(space, point).cycles[0])
        mine = result.report.timeline_cycles
        if mine is None or mine >= rows:
            return None
        result.report.notes.insert(0, f"{k.R} row(s), fewer than the {fig.tiles} tiles: the row loop runs once, so its "
                                      f"body is scheduled in natural form ({mine:,.0f} cycles on the timeline against "
                                      f"{rows:,.0f} for the best row-loop schedule)")
        result.report.schedule_seconds = time.perf_counter() - start
        return result

    def _attention(self, found: AttentionMatch, fn: Operation, target: Target, options: ScheduleOptions,
                   report: ScheduleReport, start: float) -> ScheduleResult:
        k = found.kernel
        report.kernel_class = "attention"
        report.dims = {"heads": k.kv_heads, "S": k.rows, "D": k.head_dim}
        left = max(0.0, options.time_budget - (time.perf_counter() - start) - REWRITE_MARGIN)
        space, point, count, bound = plan(k, target, type(self).strategy, replace(options, time_budget=left))
        fill_report(report, space, point, count, bound)
        out = emit_attention(found, fn, point, space.fig.tiles)
        report.applied = True
        report.schedule_seconds = time.perf_counter() - start
        return ScheduleResult(out, report)


    def _natural(self, k: NaturalKernel, target: Target, options: ScheduleOptions, report: ScheduleReport,
                 start: float, split: ReductionPlan | None = None, need_timeline: bool = False) -> ScheduleResult:
        report.kernel_class = "natural"
        report.dims = {k.label(c): k.extent[c] for c in k.classes}
        left = max(0.0, options.time_budget - (time.perf_counter() - start) - REWRITE_MARGIN)
        # a strategy that searches until its budget is spent gets its share, the timeline the rest
        share = left * SEARCH_SHARE if type(self).rerank else left
        space, point, count, bound = plan(k, target, type(self).strategy, replace(options, time_budget=share))
        assert isinstance(space, NaturalSpace)
        deadline = start + max(options.time_budget, 0.0) - REWRITE_MARGIN
        if type(self).rerank:
            ranked = rerank(space, point, deadline, split)
        else:  # the baseline is what it is; the timeline only measures it
            ranked = Ranked(point, timeline_of(space, point, split, deadline), 1, point, None)
        if ranked.timeline is None and need_timeline:  # the strategy spent the budget: measure its choice all the same
            ranked = Ranked(point, timeline_of(space, point, split, time.perf_counter() + 0.2), 1, point, None)
        point = ranked.point
        fill_report(report, space, point, count, bound)
        if ranked.timeline is not None:
            report.timeline_cycles = ranked.timeline
            report.timeline_ratio = ranked.timeline / bound.cycles if bound.cycles else None
            # one figure: the ratio is the timeline's (the model's estimate stays in estimate_cycles)
            report.ratio = report.timeline_ratio
            report.notes.append(f"ratio measured on the timeline; the cost model estimated {report.estimate_cycles:,.0f} "
                                f"cycles ({(report.estimate_cycles or 0) / bound.cycles:.3f}x the bound)"
                                if bound.cycles else "ratio measured on the timeline")
        else:
            report.notes.append("ratio from the cost model: the timeline was not simulated within the time budget")
        if ranked.point != ranked.analytic_first and ranked.analytic_first_timeline is not None:
            report.notes.append(f"re-ranked by the timeline ({ranked.simulated} schedules simulated): the model's first "
                                f"choice simulates to {ranked.analytic_first_timeline:,.0f} cycles, this one to "
                                f"{ranked.timeline:,.0f}")
        elif type(self).rerank:
            report.notes.append(f"the timeline confirms the model's choice ({ranked.simulated} schedules simulated)")
        blocked = [f"{k.label(c)}: {k.free[c][0]}" for c in k.classes if k.free[c] and split is None]
        if blocked:
            report.notes.append("kept whole: " + "; ".join(blocked))
        if split is None:
            out = emit_natural(space, point)
        else:
            out = emit_split_reduction(space, point, split)
            line = split.op.loc.line if split.op.loc else "?"
            report.notes.append(
                f"{split.op.name} (line {line}) is split over the tiles along {k.label(split.cls)}: "
                + ("partial results all-reduced by ktdp.inter_tile_reduce (every tile a consumer); each tile runs "
                   "what follows on its own block" if split.everyone else
                   "partial results combined by ktdp.inter_tile_reduce on tile 0, which runs what follows"))
        report.applied = True
        report.schedule_seconds = time.perf_counter() - start
        return ScheduleResult(out, report)


def _uncuttable(k: NaturalKernel) -> str:
    """Why no dimension of a natural-form kernel can be cut: each class with its first blocker."""
    parts = [f"{k.label(c)} ({k.extent[c]}): {k.free[c][0]}" for c in k.classes if k.extent[c] > 1 and k.free[c]]
    return "no dimension of the iteration space can be cut into blocks without changing results: " + "; ".join(parts)


class BaselineScheduler(StrategyScheduler):
    """Even split over the tiles, whole blocks halved greedily until they fit; no double buffering."""

    name = "baseline"
    strategy = staticmethod(baseline_strategy)  # type: ignore[assignment]
    rerank = False


class ExactScheduler(StrategyScheduler):
    """The fastest schedule of the whole space under the cost model (exhaustive, vectorised)."""

    name = "exact"
    strategy = staticmethod(exact_strategy)  # type: ignore[assignment]


class SearchScheduler(StrategyScheduler):
    """Annealing from the baseline and exact points within the time budget."""

    name = "search"
    strategy = staticmethod(search_strategy)  # type: ignore[assignment]
