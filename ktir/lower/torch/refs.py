"""Program buffers and strided views of them: what every value of the graph is bound to.

A buffer is one flat array in global memory (a graph input, a weight, an intermediate).
A `Ref` is a strided view of a buffer: element offset, shape, strides. View ops (view,
permute, slice, expand, ...) only make new refs, so they cost no kernel; stride 0 marks
a broadcast (expanded) dim, which kernels read as a size-1 dim.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

# element type names used in KTIR, by numpy dtype name
KTIR_TYPES = {"bool": "i1", "float16": "f16", "bfloat16": "bf16", "float32": "f32", "float64": "f64", "int32": "i32", "int64": "i64"}
FLOAT_TYPES = ("f16", "bf16", "f32", "f64")

STICK_BYTES = 128  # Spyre moves and stores data in 128-byte sticks


def element_bytes(ktype: str) -> int:
    return {"i1": 1, "f16": 2, "bf16": 2, "f32": 4, "f64": 8, "i32": 4, "i64": 8}[ktype]


def contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, acc = [], 1
    for n in reversed(shape):
        strides.append(acc)
        acc *= max(n, 1)
    return tuple(reversed(strides))


@dataclass
class Buffer:
    """One flat array in global memory."""

    name: str
    ktype: str
    shape: tuple[int, ...]
    kind: str  # input | parameter | constant | intermediate
    data: np.ndarray | None = None  # parameters and constants
    source: str = ""  # the graph node or state-dict key it comes from
    stick_dim: int | None = None  # set by layout propagation: the logical dim stored in sticks
    writers: list[str] = field(default_factory=list)
    permutation: list[int] | None = None  # a weight stored permuted: the source tensor's dims in storage order

    @property
    def size(self) -> int:
        return math.prod(self.shape)


@dataclass(frozen=True)
class Ref:
    """A strided view of a buffer (element offset, shape, strides; stride 0 = broadcast dim)."""

    buffer: str
    ktype: str
    offset: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    def is_contiguous(self) -> bool:
        return all(s == c for n, s, c in zip(self.shape, self.strides, contiguous_strides(self.shape), strict=True) if n > 1)

    def permute(self, dims: list[int]) -> Ref:
        return Ref(self.buffer, self.ktype, self.offset, tuple(self.shape[d] for d in dims), tuple(self.strides[d] for d in dims))

    def reshape(self, shape: tuple[int, ...]) -> Ref | None:
        """The same elements in a new shape without a copy, or None when a copy is needed."""
        if math.prod(shape) != self.numel:
            raise ValueError(f"cannot reshape {list(self.shape)} to {list(shape)}")
        if self.is_contiguous():
            return Ref(self.buffer, self.ktype, self.offset, shape, contiguous_strides(shape))
        # split/merge groups of dims that are contiguous among themselves (torch's rule)
        src = [(n, s) for n, s in zip(self.shape, self.strides, strict=True) if n != 1]
        dst = [n for n in shape if n != 1]
        out: list[int] = []
        for group in _groups(src, dst):
            if group is None:
                return None
            sizes, target = group
            # the source group must be contiguous: stride[k] = stride[k+1] * size[k+1]
            for k in range(len(sizes) - 1):
                if sizes[k][1] != sizes[k + 1][1] * sizes[k + 1][0]:
                    return None
            inner = sizes[-1][1]
            acc = inner
            strides = []
            for n in reversed(target):
                strides.append(acc)
                acc *= n
            out.extend(reversed(strides))
        it = iter(out)
        full = tuple(next(it) if n != 1 else 1 for n in shape)
        return Ref(self.buffer, self.ktype, self.offset, shape, full)

    def expand(self, shape: tuple[int, ...]) -> Ref:
        lead = len(shape) - self.rank
        strides = [0] * lead
        for d, (n, s) in enumerate(zip(self.shape, self.strides, strict=True)):
            target = shape[lead + d]
            strides.append(s if n == target or target == -1 else 0)
        full = tuple(self.shape[d - lead] if n == -1 else n for d, n in enumerate(shape))
        return Ref(self.buffer, self.ktype, self.offset, full, tuple(strides))

    def slice(self, dim: int, start: int, end: int, step: int) -> Ref:
        n = self.shape[dim]
        start = max(0, min(start + n if start < 0 else start, n))
        end = max(start, min(end + n if end < 0 else end, n))
        size = (end - start + step - 1) // step
        shape = list(self.shape)
        strides = list(self.strides)
        shape[dim] = size
        offset = self.offset + start * strides[dim]
        strides[dim] *= step
        return Ref(self.buffer, self.ktype, offset, tuple(shape), tuple(strides))

    def select(self, dim: int, index: int) -> Ref:
        index = index + self.shape[dim] if index < 0 else index
        shape = self.shape[:dim] + self.shape[dim + 1 :]
        strides = self.strides[:dim] + self.strides[dim + 1 :]
        return Ref(self.buffer, self.ktype, self.offset + index * self.strides[dim], shape, strides)

    def unsqueeze(self, dim: int) -> Ref:
        dim = dim + self.rank + 1 if dim < 0 else dim
        return Ref(self.buffer, self.ktype, self.offset, self.shape[:dim] + (1,) + self.shape[dim:], self.strides[:dim] + (1,) + self.strides[dim:])

    def squeeze(self, dims: list[int]) -> Ref:
        keep = [d for d in range(self.rank) if not (d in dims and self.shape[d] == 1)]
        return Ref(self.buffer, self.ktype, self.offset, tuple(self.shape[d] for d in keep), tuple(self.strides[d] for d in keep))

    def broadcast_to(self, shape: tuple[int, ...]) -> Ref:
        """Align to `shape` (numpy broadcasting): leading dims added, size-1 dims get stride 0."""
        lead = len(shape) - self.rank
        strides = [0] * lead + [0 if (n == 1 and shape[lead + d] != 1) else s for d, (n, s) in enumerate(zip(self.shape, self.strides, strict=True))]
        return Ref(self.buffer, self.ktype, self.offset, tuple(shape), tuple(strides))

    def view_array(self, flat: np.ndarray) -> np.ndarray:
        """This view of a buffer's flat contents, as a new array."""
        item = flat.itemsize
        base = flat[self.offset :]
        return np.lib.stride_tricks.as_strided(base, self.shape, tuple(s * item for s in self.strides)).copy()


def _groups(src: list[tuple[int, int]], dst: list[int]) -> list[tuple[list[tuple[int, int]], list[int]] | None]:
    """Pair runs of source dims with runs of target dims of equal element count."""
    groups: list[tuple[list[tuple[int, int]], list[int]] | None] = []
    i = j = 0
    while i < len(src) or j < len(dst):
        if i >= len(src) or j >= len(dst):
            return [None]
        a, b = [src[i]], [dst[j]]
        pa, pb = src[i][0], dst[j]
        i, j = i + 1, j + 1
        while pa != pb:
            if pa < pb:
                if i >= len(src):
                    return [None]
                a.append(src[i])
                pa *= src[i][0]
                i += 1
            else:
                if j >= len(dst):
                    return [None]
                b.append(dst[j])
                pb *= dst[j]
                j += 1
        groups.append((a, b))
    return groups
