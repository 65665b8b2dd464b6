"""A run limits BLAS to Options.blas_threads while it executes and restores the limit after."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

import reference_interp as ri
from reference_interp import blas

from .helpers import example


def _blas_threads() -> list[int]:
    return [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]


@pytest.mark.parametrize("wanted", [1, None])
def test_contractions_run_with_the_chosen_threads_and_the_limit_is_restored(wanted: int | None,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    if not _blas_threads():
        pytest.skip("numpy's BLAS is not visible to threadpoolctl")
    seen: list[list[int]] = []
    original = blas.before_contraction

    def spy() -> None:
        original()
        seen.append(_blas_threads())

    monkeypatch.setattr(blas, "before_contraction", spy)
    rng = np.random.default_rng(0)
    args: dict[str, Any] = {"x_ptr": rng.standard_normal((256, 512)).astype(np.float16),
                            "wg_ptr": rng.standard_normal((512, 256)).astype(np.float16),
                            "wu_ptr": rng.standard_normal((512, 256)).astype(np.float16),
                            "h_ptr": np.zeros((256, 256), np.float16), "M": 256, "N": 256, "K": 512}
    with threadpool_limits(limits=2, user_api="blas"):
        ri.run(example("swiglu.ktir"), args=args, blas_threads=wanted)
        after = _blas_threads()
    assert seen, "the kernel's matmuls went through the contraction path"
    assert all(s == [wanted or 2] * len(s) for s in seen)
    assert after == [2] * len(after)
