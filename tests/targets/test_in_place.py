"""A linalg op writes its result over the tensor in its `outs` when it is that tensor's last user
(spec/ops/linalg.md, storage): the timeline counts an accumulator once (`OpRecord.reuses`)."""

from __future__ import annotations

import dataclasses

from ktir.targets.records import KernelTrace, OpRecord
from ktir.targets.timeline import simulate

from .helpers import load, matmul, toy, vector

ACC = 4096  # bytes of the accumulator
BLOCK = 1000  # bytes of an operand block


def k_loop(steps: int, reuse: bool = True, keep_init: bool = False) -> KernelTrace:
    """fill -> matmul -> matmul ..., each matmul reading two loaded blocks and the previous
    accumulator (its outs); with `keep_init` the fill is read again after the loop."""
    recs: list[OpRecord] = [vector(0, 0, 64, result_bytes=ACC)]
    acc = 0
    for _ in range(steps):
        a, b = len(recs), len(recs) + 1
        recs += [load(0, a, BLOCK), load(0, b, BLOCK)]
        mm = matmul(0, len(recs), 10_000, deps=(a, b, acc), result_bytes=ACC)
        recs.append(dataclasses.replace(mm, reuses=acc if reuse else -1))
        acc = mm.seq
    if keep_init:
        recs.append(vector(0, len(recs), 64, deps=(0, acc)))
    return KernelTrace(recs)


def test_an_accumulator_is_counted_once() -> None:
    one = simulate(k_loop(4), toy()).peak_local[0]
    two = simulate(k_loop(4, reuse=False), toy()).peak_local[0]
    assert two - one == ACC  # without the rule the previous accumulator lives beside the new one
    assert one <= ACC + 8 * BLOCK


def test_an_outs_tensor_used_again_is_not_overwritten() -> None:
    """The fill is read after the loop: the first matmul needs storage of its own, so the fill and
    an accumulator are live together, as without the rule."""
    kept = simulate(k_loop(4, keep_init=True), toy()).peak_local[0]
    assert kept >= 2 * ACC and kept > simulate(k_loop(4), toy()).peak_local[0]


def test_records_keep_reuses_through_json() -> None:
    rec = k_loop(2).records[3]
    assert rec.reuses == 0 and OpRecord.from_dict(rec.to_dict()) == rec
    assert "reuses" not in k_loop(2).records[0].to_dict()
