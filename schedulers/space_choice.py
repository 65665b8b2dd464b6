"""Which schedule space a kernel is searched in: the one place that knows every space.

Kept apart from `spaces.py` because the split-K and natural-form spaces build on the spaces
defined there (importing it); choosing among them here keeps the imports one-way.
"""

from __future__ import annotations

from .cost import Figures
from .emit_splitk import SplitKSpace
from .kernels import AttentionKernel, MatmulKernel, RowKernel
from .natural import NaturalKernel
from .space_natural import NaturalSpace
from .spaces import AttentionSpace, RowSpace, Space


def space_for(kernel: MatmulKernel | RowKernel | AttentionKernel | NaturalKernel, fig: Figures) -> Space:
    if isinstance(kernel, NaturalKernel):
        return NaturalSpace(kernel, fig)  # type: ignore[return-value]
    if isinstance(kernel, MatmulKernel):
        # the split-K schedules as well as MatmulSpace's
        return SplitKSpace(kernel, fig)
    if isinstance(kernel, RowKernel):
        return RowSpace(kernel, fig)
    return AttentionSpace(kernel, fig)
