"""Split-K: schedules of the matmul space that divide K over tiles and add the partials with inter_tile_reduce."""

from __future__ import annotations

import itertools
import re

import numpy as np
import pytest
from conftest_paths import ktir_schedule

import ktir
import schedulers
from ktir.syntax.printer import print_module
from ktir.verify import validate_text
from schedulers import naive
from schedulers.builtin import evaluate_point, exact_strategy, plan
from schedulers.check import check_equivalent
from schedulers.cost import figures
from schedulers.emit_splitk import SplitKSpace, emit_splitk
from schedulers.kernels import MatmulKernel, recognise
from schedulers.space_choice import space_for
from schedulers.space_ring import RING


def _recognised(text: str) -> tuple[ktir.Module, MatmulKernel, ktir.Operation]:
    module = ktir.parse(text, "mm.ktir")
    rec = recognise(module)
    assert isinstance(rec.kernel, MatmulKernel), rec.reason
    return module, rec.kernel, rec.fn


def _valid(module: ktir.Module) -> str:
    text = print_module(module)
    _, diags = validate_text(text, "scheduled.ktir")
    assert not [d for d in diags if d.severity == "error"], [str(d) for d in diags]
    return text


POINTS = [dict(zip(("gn", "sk", "bm", "bn", "bk", "db"), p, strict=True))
          for p in itertools.product((1, 2), (2, 4, 8), (2, 4), (64, 128), (64, 128), (0, 1))]


@pytest.mark.parametrize("point", POINTS, ids=lambda p: "gn{gn}-sk{sk}-bm{bm}-bn{bn}-bk{bk}-db{db}".format(**p))
def test_every_split_is_equivalent(point: dict[str, int]) -> None:
    before, k, fn = _recognised(naive.matmul(4, 256, 1024, "f16"))
    after = emit_splitk(k, fn, point)
    text = _valid(after)
    assert text.count("ktdp.inter_tile_reduce") == 1
    verdict = check_equivalent(before, after, seed=2)
    assert verdict.ok, verdict.message


def _drop_reduce(text: str) -> str:
    """The same kernel with the partial sums not combined: the first tile stores its own share."""
    text = re.sub(r"\n *%sk_f = ktdp\.inter_tile_produce.*?\n *}\n", "\n", text, flags=re.S)
    text = re.sub(r"\n *%sk_total = ktdp\.inter_tile_reduce.*?\n *}\n", "\n", text, flags=re.S)
    return text.replace("%sk_total", "%sk_part")


def test_dropping_the_inter_tile_reduce_is_caught() -> None:
    before, k, fn = _recognised(naive.matmul(4, 256, 1024, "f16"))
    text = _valid(emit_splitk(k, fn, {"gn": 2, "sk": 4, "bm": 4, "bn": 128, "bk": 128, "db": 1}))
    broken = _drop_reduce(text)
    assert "ktdp.inter_tile" not in broken and broken != text
    module, diags = validate_text(broken, "broken.ktir")
    assert module is not None and not [d for d in diags if d.severity == "error"]
    verdict = check_equivalent(before, module, seed=2)
    assert not verdict.ok


@pytest.mark.parametrize("scheduler", ["baseline", "exact", "search"])
@pytest.mark.parametrize("shape", [(1, 256, 4096), (1, 128, 2048), (2, 512, 1024)])
def test_decode_shapes_through_each_scheduler(shape: tuple[int, int, int], scheduler: str, spyre) -> None:  # type: ignore[no-untyped-def]
    before, _, _ = _recognised(naive.matmul(*shape, "f16"))
    r = schedulers.schedule(before, spyre, scheduler, schedulers.ScheduleOptions(time_budget=0.2))
    assert r.report.applied and r.report.schedule is not None
    text = _valid(r.module)
    if "K split" in r.report.schedule.loop_order:
        assert text.count("ktdp.inter_tile_reduce") == 1
    verdict = check_equivalent(before, r.module, seed=4)
    assert verdict.ok, verdict.message


def test_exact_splits_k_when_the_output_cannot_occupy_the_tiles(spyre) -> None:  # type: ignore[no-untyped-def]
    """1 x 256 output (4 column blocks of 64): without split-K most of the 32 tiles stay idle."""
    before, k, _ = _recognised(naive.matmul(1, 256, 4096, "f16"))
    r = schedulers.schedule(before, spyre, "exact")
    assert r.report.schedule is not None and r.report.schedule.splits["K"] > 1
    assert r.report.schedule.grid[0] > 4
    assert "ktdp.inter_tile_reduce" in print_module(r.module)
    # and it pays under the cost model: better than the best schedule without a split
    space = space_for(k, figures(spyre))
    cols = space.candidates()
    ev = space.evaluate(cols)
    fits = ev.scratch <= space.fig.local_capacity
    best_unsplit = float(np.min(np.where(fits & (cols["sk"] == 1), ev.cycles, np.inf)))
    assert r.report.estimate_cycles is not None and r.report.estimate_cycles < best_unsplit


def test_a_transposed_operand_is_never_split(spyre) -> None:  # type: ignore[no-untyped-def]
    """The split-K rewrite emits row-major views: a B stored column-major keeps the other schedules
    (and the split ring, whose views keep the input's strides: `test_sched_ring_split`)."""
    text = naive.matmul(1, 256, 4096, "f16")
    row_major = "sizes: [4096, 256], strides: [256, 1]"
    assert row_major in text
    _, k, _ = _recognised(text.replace(row_major, "sizes: [4096, 256], strides: [1, 4096]"))
    assert k.b.strides == (1, 4096)
    cols = space_for(k, figures(spyre)).candidates()
    assert set(cols["sk"][cols["order"] != RING].tolist()) == {1}
    _, k_plain, _ = _recognised(text)
    assert set(space_for(k_plain, figures(spyre)).candidates()["sk"].tolist()) > {1}


def test_large_outputs_are_not_split(spyre) -> None:  # type: ignore[no-untyped-def]
    _, k, _ = _recognised(naive.matmul(2048, 4096, 4096, "bf16"))
    _, point, _, _ = plan(k, spyre, exact_strategy, schedulers.ScheduleOptions())
    assert point["sk"] == 1


def test_the_split_cost_counts_the_reduction(spyre) -> None:  # type: ignore[no-untyped-def]
    """More splits of the same blocks cost more reduction rounds and more partial traffic."""
    _, k, _ = _recognised(naive.matmul(1, 256, 4096, "f16"))
    space = space_for(k, figures(spyre))
    assert isinstance(space, SplitKSpace)
    p = {"gm": 1, "gn": 1, "bm": 1, "bn": 256, "bk": 128, "order": 0, "db": 1, "pp": 0}
    two, four = (evaluate_point(space, {**p, "sk": s}) for s in (2, 4))
    assert four.local_bytes[0] > two.local_bytes[0]
    assert two.global_bytes[0] == four.global_bytes[0] - 2 * (128 * 2 + 128 * 256 * 2)  # two more redundant prefetches
    roofline = schedulers.builtin.roofline_bound(space.work(), space.fig).cycles
    ev = space.evaluate(space.candidates())
    assert float(ev.cycles.min()) >= roofline * (1 - 1e-9)


def test_the_command_line_checks_a_split(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    src, out = tmp_path / "decode.ktir", tmp_path / "decode.scheduled.ktir"
    src.write_text(naive.matmul(1, 256, 4096, "f16", "decode"))
    code = ktir_schedule([str(src), "--target", "spyre", "--check", "-o", str(out)])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "check: ok" in captured.err and "K split" in captured.out
    assert "ktdp.inter_tile_reduce" in out.read_text()
