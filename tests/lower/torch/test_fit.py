"""Kernels that fit the target's scratchpad (issue 32, scope point 5).

Every op is lowered for a copy of the Spyre target whose scratchpad is a few kilobytes, so
each emitter has to loop inside its tiles (a matmul's K loop, attention's online softmax,
chunked reductions, row sub-blocks), and compared with torch eager at the lowering's usual
tolerance; `run(target=...)` checks every kernel's footprint against that capacity. The
static footprint (ktir/lower/torch/fit.py) is checked against an independent count: the
records of the interpreter's trace, replayed in program order (each tensor result live from
its op until its last dependent). A kernel that does not fit is an error in run and estimate.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import torch.nn.functional as F  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from torch import nn  # noqa: E402

import reference_interp  # noqa: E402
from ktir.lower.torch import ProgramError, TorchLoweringError, from_torch  # noqa: E402
from ktir.lower.torch.fit import footprint  # noqa: E402
from ktir.targets.from_interp import from_interp  # noqa: E402
from tests.lower.torch.models import RMSNorm  # noqa: E402
from tests.lower.torch.test_ops import TOL, Fn, r  # noqa: E402

SPYRE = Path(__file__).resolve().parents[3] / "ktir" / "targets" / "spyre.toml"


def small_target(folder: Path, capacity: int, cores: int = 32) -> str:
    """Spyre with a `capacity`-byte scratchpad and `cores` cores, as a target file."""
    text = SPYRE.read_text(encoding="utf-8")
    text = text.replace("capacity_bytes = { value = 2097152,", f"capacity_bytes = {{ value = {capacity},")
    text = text.replace("count = { value = 32, source", f"count = {{ value = {cores}, source", 1)
    text = text.replace("attach_tiles = { value = [0, 16],", "attach_tiles = { value = [0],")
    assert f"value = {capacity}," in text
    path = folder / f"spyre_{capacity}_{cores}.toml"
    path.write_text(text, encoding="utf-8")
    return str(path)


@pytest.fixture(autouse=True)
def _seed() -> None:
    torch.manual_seed(0)


def sequential_peak(trace) -> int:  # type: ignore[no-untyped-def]
    """The oracle: per tile, the records in program order, each result live from its record to
    its last dependent; the largest sum plus the tile's resident bytes."""
    best = 0
    tiles: dict[int, list] = {}  # type: ignore[type-arg]
    for rec in trace.records:
        tiles.setdefault(rec.tile, []).append(rec)
    for tile, recs in tiles.items():
        last = {rec.seq: rec.seq for rec in recs}
        for rec in recs:
            for d in rec.deps:
                last[d] = max(last[d], rec.seq)
        events = sorted([(rec.seq, rec.result_bytes) for rec in recs if rec.result_bytes]
                        + [(last[rec.seq] + 0.5, -rec.result_bytes) for rec in recs if rec.result_bytes])
        live = 0
        for _, delta in events:
            live += delta
            best = max(best, live + trace.resident_local_bytes.get(tile, 0))
    return best


def fits(module, *inputs, capacity: int, cores: int = 32, dtype=torch.float32, tmp: Path, loops: bool = True):  # type: ignore[no-untyped-def]
    """Lower for a small scratchpad, run with its check, compare with eager; the static
    footprints must equal the trace's sequential peaks and fit."""
    target = small_target(tmp, capacity, cores)
    module = module.to(dtype) if dtype != torch.float32 else module
    inputs = tuple(x.to(dtype) if x.is_floating_point() else x for x in inputs)
    program = from_torch(module, inputs, target=target, runner=reference_interp.run, scheduler=None)  # the lowering's own blocks
    peaks: dict[str, int] = {}

    def traced(name, mod, result):  # type: ignore[no-untyped-def]
        peaks[name] = sequential_peak(from_interp(mod, result, func=name).trace)

    got = program.run_buffers(program._bind(list(inputs)), target=target, traced=traced)
    with torch.no_grad():
        want = module(*inputs)
    wants = [want] if isinstance(want, torch.Tensor) else list(want)
    for g, w in zip(got, wants, strict=True):
        w = w.float().numpy()
        assert g.shape == w.shape
        both = np.isfinite(w)
        assert np.array_equal(np.isnan(g.astype(np.float32)), np.isnan(w))
        err = float(np.abs(g.astype(np.float32)[both] - w[both]).max()) if both.any() else 0.0
        assert err <= TOL[dtype] * max(1.0, float(np.abs(w[both]).max())), err
    fps = program.footprints()
    for name, fp in fps.items():
        assert fp.peak_bytes <= capacity, (name, fp)
        assert fp.peak_bytes == peaks[name], (name, fp.peak_bytes, peaks[name])
    if loops:
        assert "scf.for" in program.text, "the small scratchpad should make the kernels loop"
    return program, fps


def test_linear_sums_over_k_in_steps(tmp_path: Path) -> None:
    p, fps = fits(nn.Linear(256, 192), r(2, 24, 256), capacity=12_000, tmp=tmp_path)
    assert "iter_args" in p.text  # the K loop carries the f32 sum
    fits(nn.Linear(256, 192), r(2, 24, 256), capacity=12_000, tmp=tmp_path, dtype=torch.float16)


def test_matmul_blocks_rows_and_columns(tmp_path: Path) -> None:
    """Few cores: each tile's block has many rows and columns to split."""
    fits(Fn(lambda s, a, b: a @ b), r(3, 64, 96), r(96, 128), capacity=16_000, cores=2, tmp=tmp_path)
    fits(Fn(lambda s, a, b: torch.bmm(a, b)), r(4, 32, 64), r(4, 64, 64), capacity=8_000, cores=4, tmp=tmp_path)


@pytest.mark.parametrize("causal,mask", [(False, None), (True, None), (False, "bool"), (False, "additive")])
def test_attention_online_softmax_over_key_blocks(tmp_path: Path, causal: bool, mask: str | None) -> None:
    q, k, v = r(1, 4, 32, 64), r(1, 2, 64, 64), r(1, 2, 64, 64)  # grouped-query: 2 q heads per kv head
    args = [q, k, v]
    if mask == "bool":
        m = torch.rand(1, 1, 32, 64) > 0.3
        m[..., 1::7, :32] = False  # a whole first key block masked for some rows: the running max stays -inf
        m[..., 0] = True
        args.append(m)
    elif mask == "additive":
        args.append(r(1, 1, 32, 64))
    sdpa = Fn(lambda s, q, k, v, *m: F.scaled_dot_product_attention(q, k, v, attn_mask=m[0] if m else None, is_causal=causal,
                                                                        enable_gqa=True))
    p, _ = fits(sdpa, *args, capacity=6_000, tmp=tmp_path)
    assert "math.exp" in p.text and "iter_args" in p.text
    if mask is None:
        fits(sdpa, *args, capacity=6_000, tmp=tmp_path, dtype=torch.float16)


def test_attention_fully_masked_rows_are_zero_as_in_torch(tmp_path: Path) -> None:
    q, k, v = r(1, 2, 8, 32), r(1, 2, 64, 32), r(1, 2, 64, 32)
    m = torch.rand(1, 1, 8, 64) > 0.5
    m[..., 3, :] = False
    fits(Fn(lambda s, q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m)), q, k, v, m, capacity=4_000, tmp=tmp_path)


def test_fused_reductions_in_chunks(tmp_path: Path) -> None:
    """RMSNorm (a mean fused into its chain), a chain with a reduction nested in another's
    operand and reductions over several dims, rows longer than the scratchpad."""
    fits(RMSNorm(2048), r(2, 8, 2048), capacity=4_096, tmp=tmp_path)
    fits(RMSNorm(2048), r(2, 8, 2048), capacity=4_096, tmp=tmp_path, dtype=torch.float16)

    def chain(s, x):  # type: ignore[no-untyped-def]
        var = ((x - x.mean(-1, keepdim=True)) ** 2).mean(-1, keepdim=True)
        return (x - x.amax(-1, keepdim=True)) * torch.rsqrt(var + 1e-5) + x.sum((0, 2), keepdim=True)

    fits(Fn(chain), r(4, 8, 512), capacity=4_096, tmp=tmp_path)
    fits(Fn(lambda s, x: x.sum(-1) + x.amin(-1)), r(4, 3000), capacity=4_096, tmp=tmp_path)


@pytest.mark.parametrize("op", ["softmax", "log_softmax", "softmax_dim1", "var", "layer_norm"])
def test_row_kernels_in_chunks(tmp_path: Path, op: str) -> None:
    x = r(2, 8, 1024)
    x[0, 0] = -float("inf")  # a row of -inf: NaN as in torch
    x[0, 1, :600] = -float("inf")
    ln = nn.LayerNorm(1024)
    with torch.no_grad():
        ln.weight.normal_()
        ln.bias.normal_()
    module = {
        "softmax": Fn(lambda s, x: torch.softmax(x * 2, -1)),
        "log_softmax": Fn(lambda s, x: torch.log_softmax(x, -1)),
        "softmax_dim1": Fn(lambda s, x: torch.softmax(x.nan_to_num(0.0, 0.0, 0.0), 1)),
        "var": Fn(lambda s, x: x.nan_to_num(0.0, 0.0, 0.0).var(-1, keepdim=True)),
        "layer_norm": Fn(lambda s, x: s.ln(x.nan_to_num(0.0, 0.0, 0.0)), ln=None),
    }[op]
    if op == "layer_norm":
        module = nn.Sequential(Fn(lambda s, x: torch.where(torch.isfinite(x), x, 0.0)), ln)
    fits(module, x, capacity=4_096, tmp=tmp_path)
    if op in ("softmax", "layer_norm"):
        fits(module, x, capacity=4_096, tmp=tmp_path, dtype=torch.float16)


def test_sequence_kernels_in_row_blocks(tmp_path: Path) -> None:
    conv = nn.Conv1d(64, 64, kernel_size=4, groups=64, padding=3)
    fits(conv, r(2, 64, 32), capacity=4_096, cores=4, tmp=tmp_path)
    fits(Fn(lambda s, x: torch.cumsum(x, -1)), r(8, 16, 32), capacity=4_096, cores=4, tmp=tmp_path)
    fits(Fn(lambda s, x: F.pad(x, (2, 3))), r(8, 32, 40), capacity=4_096, cores=4, tmp=tmp_path)


def test_embedding_in_row_and_column_blocks(tmp_path: Path) -> None:
    emb = nn.Embedding(50, 512)
    fits(emb, torch.randint(0, 50, (2, 24)), capacity=4_096, cores=4, tmp=tmp_path)


def test_index_copy_one_hot_in_row_blocks(tmp_path: Path) -> None:
    """A KV cache written at 16 positions (transformers' StaticCache): a one-hot reduction."""
    fits(Fn(lambda s, c, pos, v: c.index_copy(2, pos, v)), r(1, 2, 64, 32), torch.randperm(64)[:16], r(1, 2, 16, 32),
         capacity=4_096, tmp=tmp_path)


def test_grouped_experts_in_column_blocks_and_k_steps(tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    import transformers.integrations.moe  # noqa: F401  (registers torch.ops.transformers.grouped_mm_fallback)

    w = torch.randn(4, 128, 192) / 8
    counts = torch.tensor([5, 0, 12, 3])  # 20 rows of 24: the last 4 belong to no expert (zero)
    offs = torch.cumsum(counts, 0).to(torch.int32)
    fn = Fn(lambda s, x, o: torch.ops.transformers.grouped_mm_fallback(x, s.w, o), w=w)
    p, _ = fits(fn, r(24, 128), offs, capacity=16_000, cores=4, tmp=tmp_path)
    assert [k.kind for k in p.manifest.kernels] == ["experts"]


@settings(max_examples=8, deadline=None)
@given(m=st.sampled_from([1, 3, 16, 40]), k=st.sampled_from([32, 96, 256]), n=st.sampled_from([32, 64, 160]),
       capacity=st.integers(2_500, 40_000), bias=st.booleans())
def test_random_linears_fit_and_match(tmp_path_factory: pytest.TempPathFactory, m: int, k: int, n: int, capacity: int, bias: bool) -> None:
    """Random sizes and capacities: either every kernel fits and matches eager, or the
    lowering says no block fits (naming the capacity)."""
    tmp = tmp_path_factory.mktemp("fit")
    try:
        fits(nn.Linear(k, n, bias=bias), r(m, k), capacity=capacity, cores=4, tmp=tmp, loops=False)
    except TorchLoweringError as e:
        assert f"{capacity}-byte scratchpad" in str(e) and "does not fit" in str(e)


def test_a_kernel_that_does_not_fit_is_an_error_in_run_and_estimate(tmp_path: Path) -> None:
    x = r(64, 256)
    program = from_torch(nn.Linear(256, 256), (x,), runner=reference_interp.run)  # lowered for Spyre's 2 MB
    tiny = small_target(tmp_path, 4_096)
    with pytest.raises(ProgramError, match=r"kernel k0_linear does not fit the 4096-byte scratchpad of a .* tile: it needs \d+ bytes at"):
        program.run(x, target=tiny)
    with pytest.raises(ProgramError, match="does not fit"):
        program.estimate(x, target=tiny)
    assert program.run(x, target="spyre").shape == (64, 256)  # fits Spyre


def test_no_block_fits_names_the_tensor_and_the_capacity(tmp_path: Path) -> None:
    with pytest.raises(TorchLoweringError, match=r"does not fit the 600-byte scratchpad of a tile even in its smallest blocks .*tensor<"):
        from_torch(nn.Linear(256, 256), (r(4, 256),), target=small_target(tmp_path, 600))


def test_footprint_counts_loop_carried_and_hoisted_values() -> None:
    """Hand-counted on a built function: a tensor made before a loop and read inside it lives
    until the loop ends; a carried value lives from the loop's start to its last use; ct_local
    buffers count for the whole kernel."""
    from ktir.builder import Builder
    from ktir.ir import attributes as at
    from ktir.ir import types as ty

    f32 = ty.FloatType(kind="f32")
    t64, t16 = ty.TensorType(shape=(64,), element_type=f32), ty.TensorType(shape=(16,), element_type=f32)  # 256 and 64 bytes
    b = Builder()
    with b.func("f", [], grid=[1]):
        c0, c4, c1 = b.index(0), b.index(4), b.index(1)
        zero = b.constant(0.0, f32)
        big = b.fill(zero, b.empty(t64), "%big")  # tensor.empty is only a shape: the fill makes the value
        with b.for_(c0, c4, c1, [b.fill(zero, b.empty(t16), "%init")]) as (_, acc):
            inner = b.fill(zero, b.empty(t16), "%inner")
            s = b.dps("linalg.add", [acc, inner], [inner], name="%s")
            u = b.extract_slice(big, [0], [16], name="%u")
            b.yield_(b.dps("linalg.add", [s, u], [inner], name="%t"))
        b.func_return()
    fn = b.module.operations[0]
    fp = footprint(fn)
    # at %t: big 256 (read in the loop: live to its end) + inner, s, u, t (64 each)
    assert (fp.peak_bytes, fp.resident_bytes, fp.prefetch_bytes) == (512, 0, 0)
    assert fp.at_op.startswith("%t = linalg.add")
    assert [v.name for v in fp.live][:1] == ["%big"]
    # a ct_local view of 128 f32 at element 64 of the tile's scratchpad: 768 bytes held throughout
    b2 = Builder()
    with b2.func("g", [], grid=[1]):
        off = b2.index(64)
        b2.memory_view(off, [128], [1], f32, at.MemorySpaceAttr(kind="ct_local"))
        b2.fill(b2.constant(1.0, f32), b2.empty(t64), "%x")
        b2.func_return()
    fp2 = footprint(b2.module.operations[0])
    assert (fp2.peak_bytes, fp2.resident_bytes) == (768 + 256, 768)


def _installed_scheduler(monkeypatch: pytest.MonkeyPatch) -> None:
    """The entry point pyproject.toml declares, whether or not this checkout's is installed."""
    from importlib.metadata import EntryPoint

    from ktir.lower.torch import scheduling

    ep = EntryPoint(name="default", value="ktir.torch_backend.scheduling:schedule_kernel", group=scheduling.GROUP)
    monkeypatch.setattr(scheduling, "entry_points", lambda group: [ep] if group == scheduling.GROUP else [])


def test_from_torch_schedules_every_kernel_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    """One token (decode): the scheduler rewrites the projection (its check passed, it fits
    Spyre), the program still matches eager with the rewrites in place, and scheduler=None
    keeps every kernel."""
    _installed_scheduler(monkeypatch)
    x = r(1, 64)
    model = nn.Linear(64, 32)  # small enough for one tile: the schedulers divide such kernels
    program = from_torch(model, (x,), runner=reference_interp.run)
    assert [s.name for s in program.schedules] == program.kernel_names
    done = {s.name for s in program.schedules if s.scheduled}
    assert done and done == set(program.overrides), program.schedules
    assert all(s.note for s in program.schedules if not s.scheduled)
    assert "schedule" in program.timings
    with torch.no_grad():
        want = model(x).numpy()
    got = program.run(x, target="spyre")
    assert np.abs(got - want).max() <= TOL[torch.float32] * max(1.0, float(np.abs(want).max()))
    assert not from_torch(model, (x,), scheduler=None).overrides


def test_a_schedule_that_does_not_fit_is_dropped(tmp_path: Path) -> None:
    """A scheduler whose rewrite needs more scratchpad than the target has: the kernel stays as
    lowered, and the note gives the bytes (here the "rewrite" is the kernel itself, lowered
    for Spyre's 2 MB and scheduled for a 4 KB copy of it)."""
    from ktir.lower.torch.scheduling import schedule_program
    from ktir.syntax.printer import print_module

    x = r(64, 256)
    program = from_torch(nn.Linear(256, 256), (x,), scheduler=None, runner=reference_interp.run)
    need = program.footprints()["k0_linear"].peak_bytes
    same = lambda module, target, func, scheduler, budget: (print_module(module), "")  # noqa: E731
    done = schedule_program(program, small_target(tmp_path, 4_096), "exact", 0.5, same)
    assert not done[0].scheduled and f"needs {need} bytes" in done[0].note and "4096" in done[0].note
    assert not program.overrides
    done = schedule_program(program, "spyre", "exact", 0.5, same)
    assert done[0].scheduled and set(program.overrides) == {"k0_linear"}


def test_without_an_installed_scheduler_kernels_stay_as_lowered(monkeypatch: pytest.MonkeyPatch) -> None:
    from ktir.lower.torch import scheduling

    monkeypatch.setattr(scheduling, "entry_points", lambda group: [])
    program = from_torch(nn.Linear(32, 32), (r(4, 32),))
    assert not program.overrides
    assert all(not s.scheduled and scheduling.GROUP in s.note for s in program.schedules)


def test_torch_grouped_mm_is_the_grouped_experts_kernel() -> None:
    """torch._grouped_mm (what transformers calls in bf16): the routed rows as eager; torch
    leaves rows past offs[-1] unset (NaN here), the kernel writes zeros there."""
    w = (torch.randn(4, 64, 48) / 8).bfloat16()
    offs = torch.tensor([5, 5, 17, 20], dtype=torch.int32)
    x = r(24, 64).bfloat16()
    fn = Fn(lambda s, x, o: torch._grouped_mm(x, s.w, o), w=w)
    with torch.no_grad():
        want = fn(x, offs).float().numpy()[:20]
    program = from_torch(fn, (x, offs), scheduler=None, runner=reference_interp.run)
    assert [k.kind for k in program.manifest.kernels] == ["experts"]
    got = np.asarray(program.run(x, offs), dtype=np.float32)
    assert np.abs(got[:20] - want).max() <= TOL[torch.bfloat16] * max(1.0, float(np.abs(want).max()))
    assert not got[20:].any()


def test_a_long_cumsum_is_summed_in_row_blocks(tmp_path: Path) -> None:
    """A prefix sum is a masked reduction over rows x n x n: 64 rows of 256 on one core are
    2^22 points, summed in blocks of 4 rows (2^18 points) even though the scratchpad holds them."""
    p, _ = fits(Fn(lambda s, x: torch.cumsum(x, -1)), r(64, 256), capacity=2_097_152, cores=1, tmp=tmp_path)
    assert "tensor<4x256xf32>" in p.text
