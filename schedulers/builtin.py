"""The built-in schedulers: `baseline`, `exact` and `search`, all through one driver.

The driver asks each kernel class of the registry (`schedulers.classes`) in turn whether the
kernel is one of its own; for the first that says so it asks the strategy for a point of the
class's space, re-ranks on the timeline when the class can simulate points, checks the point
fits the scratchpad, rewrites the module and fills in the report. A kernel no class takes is
returned unchanged, with the reason in the report.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import replace

import numpy as np

from ktir.dialects.names import Arith, Func, Ktdp, Linalg, Math, Scf, Tensor
from ktir.ir.operation import Module
from ktir.targets.schema import Target

from .api import NoLegalSchedule, ScheduleOptions, ScheduleResult
from .classes import Forms, Match, kernel_classes, natural_match
from .cost import Bound, figures, roofline_bound
from .kernels import AttentionKernel, MatmulKernel, RowKernel, func_name
from .natural import NaturalKernel, natural_reason_or_kernel
from .one_trip import inline_one_trip
from .report import ScheduleReport
from .rerank import Ranked, Simulated, rerank, split_result
from .space_choice import space_for
from .spaces import Evaluated, Space, row

# A strategy returns the chosen point and how many candidates it evaluated.
Strategy = Callable[[Space, ScheduleOptions], tuple[dict[str, int], int]]

REWRITE_MARGIN = 0.15  # seconds kept from a search's budget for the rewrite and the report
SEARCH_SHARE = 0.5  # of the budget left, what a searching strategy may spend before the timeline re-rank

SUPPORTED_OPS = (
    Linalg.matmul, Linalg.fill, Linalg.generic, Linalg.reduce, Tensor.empty, Arith.truncf, Arith.extf,
    Arith.addf, Arith.subf, Arith.mulf, Arith.divf, Arith.maximumf, Math.exp, Math.rsqrt, Math.sqrt,
    Ktdp.get_compute_tile_id, Ktdp.construct_memory_view, Ktdp.construct_access_tile, Ktdp.load, Ktdp.store,
    Scf.for_, Scf.yield_, Arith.constant, Arith.muli, Arith.addi, Func.func, Func.return_,
    # the attention form (`emit_attention._COMPUTE` and `_FREE`)
    Linalg.mul, Linalg.index, Linalg.yield_, Arith.cmpi, Arith.select, Arith.ceildivsi, Arith.subi,
    Arith.divui, Arith.remui, Arith.minsi, Tensor.collapse_shape, Tensor.expand_shape,
    # the natural form (`schedulers.natural`: every op the dependence check models) and the
    # split reduction it may emit (`emit_reduction`)
    Linalg.transpose, Linalg.broadcast, Linalg.map, Linalg.copy, Linalg.add, Linalg.sub, Linalg.div,
    Linalg.max, Linalg.min, Linalg.batch_matmul, Linalg.batch_matmul_transpose_b, Linalg.matmul_transpose_a,
    Linalg.matmul_transpose_b, Linalg.matvec, Linalg.dot, Arith.negf, Arith.minimumf, Math.tanh,
    Math.log, Math.erf, Math.absf, Ktdp.inter_tile_produce, Ktdp.inter_tile_reduce, Ktdp.yield_partial,
    Ktdp.yield_reduced, Scf.if_,
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
    and costing the table) is spent or the best point seen is the table's cheapest.
    """
    deadline = time.perf_counter() + max(0.0, options.time_budget)
    cols = space.candidates()
    ev = space.evaluate(cols)
    cap = space.fig.local_capacity
    # rounded as `best_index` ranks: a point cheaper only by the float sums' round-off is a tie,
    # and the walk keeps the seed it has (exact's point, settled) rather than a stranger to it
    cost = np.round(np.where(ev.scratch <= cap, ev.cycles, np.inf), 6)
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
    # a seed outside the table (the baseline may take a value no column holds) cannot be walked
    # from; it is costed apart and returned if nothing in the table beats it
    outside: tuple[dict[str, int], float] | None = None
    for seed in seeds:
        pos = tuple(int(np.searchsorted(v, seed[n])) for n, v in zip(names, values, strict=True))
        inside = all(p < len(v) and int(v[p]) == seed[n] for n, v, p in zip(names, values, pos, strict=True))
        i = lookup(pos) if inside else None
        if i is None:
            e = evaluate_point(space, seed)
            c = round(float(e.cycles[0]), 6) if e.scratch[0] <= cap else math.inf
            if math.isfinite(c) and (outside is None or c < outside[1]):
                outside = (dict(seed), c)
            continue
        c = float(cost[i])
        if c < best_cost:
            best, best_cost = pos, c
    current, current_cost = best, best_cost
    temperature = 0.05
    # the table is costed whole: once the best seen is its cheapest, no walk improves it, and the
    # budget left goes to the timeline re-rank
    lowest = float(cost.min()) if cost.size else math.inf
    while current is not None and best_cost > lowest and time.perf_counter() < deadline:
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
    if outside is not None and outside[1] < best_cost:
        return outside[0], evaluated
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


class StrategyScheduler:
    """A scheduler made of a strategy over the shared schedule spaces and rewrites.

    Subclass it with a `name` and a `strategy(space, options) -> (point, evaluated)` to
    write a scheduler plugin that reuses the kernel classes, cost model and rewrites.
    """

    name = ""
    strategy: Strategy
    rerank = True  # natural-form kernels: re-rank the model's best schedules on the timeline
    # the re-rank also simulates the baseline's point and returns nothing slower on the timeline
    # (a strategy seeded with it promises to be no worse than it)
    keeps_baseline = False

    def supported_ops(self) -> tuple[str, ...]:
        return SUPPORTED_OPS

    def schedule(self, module: Module, target: Target, options: ScheduleOptions) -> ScheduleResult:
        start = time.perf_counter()
        forms = Forms(module, options)
        fn = forms.fn(module)
        report = ScheduleReport(scheduler=self.name, target=target.name, kernel=func_name(fn),
                                kernel_class="unrecognized", applied=False)
        why = "no kernel class recognises it"
        for cls in kernel_classes():
            found = cls.match(forms, options, target)
            if isinstance(found, str):
                why = found
                continue
            if found.kernel_class == "rowwise":
                few = self._few_rows(forms, found, target, options, start)
                if few is not None:
                    return few
            return self._run(found, target, options, report, start)
        report.reason = why  # the last class's: the natural form's, which says what the others could not
        report.notes.append("the kernel is outside the matmul and row-loop classes; it is returned unchanged")
        report.schedule_seconds = time.perf_counter() - start
        return ScheduleResult(module, report)

    def _few_rows(self, forms: Forms, rows: Match, target: Target, options: ScheduleOptions,
                  start: float) -> ScheduleResult | None:
        """Fewer rows than tiles (decode): the row loop runs once on one tile, so the kernel is its
        body in natural form, whose other dimensions (heads, a split reduction over the columns)
        may divide better. That schedule is taken when its timeline beats the row schedule's
        estimate (the row model replays the timeline's rules); None keeps the row loop."""
        k = rows.space.k
        assert isinstance(k, RowKernel)
        fig = figures(target)
        if fig.tiles <= k.R:
            return None
        inlined = inline_one_trip(forms.rows, forms.fn(forms.rows), options.sizes)
        if inlined is None:
            return None
        natural = natural_reason_or_kernel(inlined, next(f for f in inlined.functions() if func_name(f) == k.name),
                                           options.sizes)
        if not isinstance(natural, NaturalKernel):
            return None
        found = natural_match(natural, target)
        if isinstance(found, str):
            return None
        # most of the budget for the natural schedule (re-ranked on the timeline), the rest for the rows
        report = ScheduleReport(scheduler=self.name, target=target.name, kernel=k.name, kernel_class="natural",
                                applied=False)
        try:
            result = self._run(found, target, replace(options, time_budget=options.time_budget * 0.7), report,
                               start, need_timeline=True)
        except NoLegalSchedule:
            return None  # the row loop's own message says what does not fit
        left = max(0.0, options.time_budget - (time.perf_counter() - start) - REWRITE_MARGIN)
        point, _ = type(self).strategy(rows.space, replace(options, time_budget=left))
        cycles = float(evaluate_point(rows.space, point).cycles[0])
        mine = result.report.timeline_cycles
        if mine is None or mine >= cycles:
            return None
        result.report.notes.insert(0, f"{k.R} row(s), fewer than the {fig.tiles} tiles: the row loop runs once, so its "
                                      f"body is scheduled in natural form ({mine:,.0f} cycles on the timeline against "
                                      f"{cycles:,.0f} for the best row-loop schedule)")
        result.report.schedule_seconds = time.perf_counter() - start
        return result

    def _run(self, m: Match, target: Target, options: ScheduleOptions, report: ScheduleReport, start: float,
             need_timeline: bool = False) -> ScheduleResult:
        """Any class's kernel: the strategy's point of its space (re-ranked on the timeline when
        the class can simulate points), the report, the rewrite."""
        report.kernel_class = m.kernel_class
        report.dims = dict(m.dims)
        space = m.space
        fig = figures(target)
        bound = roofline_bound(space.work(), fig)
        left = max(0.0, options.time_budget - (time.perf_counter() - start) - REWRITE_MARGIN)
        # a strategy that searches until its budget is spent gets its share, the timeline the rest
        timed = m.timeline is not None
        share = left * SEARCH_SHARE if timed and type(self).rerank else left
        point, count = type(self).strategy(space, replace(options, time_budget=share))
        if evaluate_point(space, point).scratch[0] > fig.local_capacity:
            raise NoLegalSchedule(space.fit_message())
        ranked = None
        if m.timeline is not None:
            deadline = start + max(options.time_budget, 0.0) - REWRITE_MARGIN
            if type(self).rerank:
                floor = space.baseline() if type(self).keeps_baseline else None
                ranked = rerank(space, point, deadline, m.timeline, floor=floor)
            else:  # the baseline is what it is; the timeline only measures it
                ranked = _measured(point, m.timeline(point, deadline), fig.local_capacity)
            if ranked.timeline is None and need_timeline and not ranked.over:
                # the strategy spent the budget: measure its choice all the same
                ranked = _measured(point, m.timeline(point, time.perf_counter() + 0.2), fig.local_capacity)
            if ranked.over and any(p == ranked.point for p, _ in ranked.over):
                peak = max(b for _, b in ranked.over)
                raise NoLegalSchedule(f"no {m.kernel_class} schedule fits the scratchpad on the timeline: the "
                                      f"{len(ranked.over)} simulated hold up to {peak:,} bytes on a tile, beyond its "
                                      f"{fig.local_capacity:,}, though the cost model fits them")
            point = ranked.point
        fill_report(report, space, point, count, bound)
        if ranked is not None and ranked.timeline is not None:
            report.timeline_cycles = ranked.timeline
            report.timeline_ratio = ranked.timeline / bound.cycles if bound.cycles else None
            # one figure: the ratio is the timeline's (the model's estimate stays in estimate_cycles)
            report.ratio = report.timeline_ratio
            report.notes.append(f"ratio measured on the timeline; the cost model estimated {report.estimate_cycles:,.0f} "
                                f"cycles ({(report.estimate_cycles or 0) / bound.cycles:.3f}x the bound)"
                                if bound.cycles else "ratio measured on the timeline")
        elif ranked is not None:
            report.notes.append("ratio from the cost model: the timeline was not simulated within the time budget")
        if ranked is not None and ranked.point != ranked.analytic_first and ranked.analytic_first_timeline is not None:
            report.notes.append(f"re-ranked by the timeline ({ranked.simulated} schedules simulated): the model's first "
                                f"choice simulates to {ranked.analytic_first_timeline:,.0f} cycles, this one to "
                                f"{ranked.timeline:,.0f}")
        elif ranked is not None and type(self).rerank and ranked.timeline is not None:
            report.notes.append(f"the timeline confirms the model's choice ({ranked.simulated} schedules simulated)")
        if ranked is not None and ranked.over:
            peak = max(b for _, b in ranked.over)
            report.notes.append(f"rejected {len(ranked.over)} schedule(s) the cost model fits: on the timeline their "
                                f"scratchpad peaks beyond the {fig.local_capacity:,} bytes of a tile (up to {peak:,})")
        report.notes += m.notes
        out = m.emit(point)
        report.applied = True
        report.schedule_seconds = time.perf_counter() - start
        return ScheduleResult(out, report)


def _measured(point: dict[str, int], found: Simulated | float | None, capacity: int) -> Ranked:
    """A point measured on the timeline, not re-ranked (noted in `over` when beyond the scratchpad)."""
    cycles, peak = split_result(found)
    if cycles is not None and peak is not None and peak > capacity:
        return Ranked(point, None, 1, point, None, [(point, peak)])
    return Ranked(point, cycles, 1, point, None)


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
    keeps_baseline = True
