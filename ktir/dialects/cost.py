"""Cost classes: which kind of work an op is, read by the cost model (ktir.targets) and the
schedulers' estimates instead of lists of op names. Every op declares one."""

from __future__ import annotations

from enum import StrEnum


class CostClass(StrEnum):
    FREE = "free"  # views, constants, index arithmetic, shape changes, terminators: no work of its own
    VECTOR = "vector"  # elementwise arithmetic and data rearrangement on the vector units
    TRANSCENDENTAL = "transcendental"  # special functions and division: vector work at a slower rate
    MATMUL = "matmul"  # multiply-accumulates on the matrix units
    REDUCTION = "reduction"  # combining along dimensions (vector units)
    LOCAL_COPY = "local_copy"  # copies tensor data inside the tile's local memory (slices, pads, concat)
    DATA_MOVEMENT = "data_movement"  # loads and stores between a tile and memory
    CONTROL = "control"  # loops, branches, calls, functions: their nested ops are costed, not they
    COMMUNICATION = "communication"  # inter-tile transfers of partial values


# Classes whose work runs on the vector units.
VECTOR_WORK = frozenset({CostClass.VECTOR, CostClass.TRANSCENDENTAL, CostClass.REDUCTION})
