"""Random natural-form kernels with numpy oracles, to test schedulers on kernels nobody wrote for them.

    import random, kernelgen
    k = kernelgen.generate("reduction", random.Random(7))   # or kernelgen.random_kernel(seed)
    k.module              # a ktir Module: one function, grid [1], built with ktir.builder
    k.args()              # fresh input arrays by argument name (outputs filled with NaN)
    k.outputs["y"]        # .expected (float64, from numpy) and .atol (from the ops' accumulation)
    kernelgen.check_generator(k)   # the unscheduled kernel in the interpreter agrees with numpy

    from hypothesis import given
    @given(kernelgen.kernels())    # hypothesis strategy; kernels(kinds=("matmul",)) narrows it

Every kernel is in the plain natural form: arguments are element addresses of whole arrays,
views and access tiles cover whole tensors, compute is linalg (named, generic, reduce,
broadcast, transpose, fill), arith and math ops on whole tensors, results are stored whole.
The kinds (`KINDS`): elementwise chains with broadcasts (sometimes updating their input in
place afterwards); reductions over any axes with inits from a constant, `tensor.splat`,
`linalg.fill`, a loaded tensor or another op (identity and not; sometimes a second pass whose
init is the first's result); several results of different shapes; permutations of odd sizes;
matmuls with either operand transposed, batch dims and f16 accumulators (sometimes a second
product consuming the first); row loops (`scf.for`) using the row index as data; scans carrying
state in iter_args or through memory (the previous row loaded back); gathers through indirect
access tiles (sometimes reduced, an embedding bag).

`benchmarks/bench_schedule.py --random N` and `tests/schedulers/test_random_kernels.py`
use it; the scheduling guide's "Random kernels" section documents it.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from .ir import Gen, Generated, Output
from .kinds import KINDS
from .verdict import GeneratorMismatch, Verdict, check_generator, compare, judge, run_kernel

KIND_NAMES = tuple(KINDS)


def generate(kind: str, rng: Any, seed: int | None = None) -> Generated:
    """One kernel of `kind`, every random choice drawn from `rng` (a `random.Random`)."""
    g = Gen(rng, kind)
    KINDS[kind](g)
    return g.done(kind, seed)


def random_kernel(seed: int, kinds: Sequence[str] = KIND_NAMES) -> Generated:
    """The kernel of `seed`: kind `kinds[seed % len(kinds)]` (so N seeds cover the kinds evenly)."""
    kind = kinds[seed % len(kinds)]
    return generate(kind, random.Random(f"{kind}:{seed}"), seed)


def kernels(kinds: Sequence[str] = KIND_NAMES) -> Any:
    """A hypothesis strategy of generated kernels (its random choices shrink like any other draw)."""
    from hypothesis import strategies as st

    return st.builds(generate, st.sampled_from(list(kinds)), st.randoms(use_true_random=False))


__all__ = [
    "KINDS",
    "KIND_NAMES",
    "Generated",
    "GeneratorMismatch",
    "Output",
    "Verdict",
    "check_generator",
    "compare",
    "generate",
    "judge",
    "kernels",
    "random_kernel",
    "run_kernel",
]
