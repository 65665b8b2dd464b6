"""Per-op rules, one module per dialect family; importing registers them."""

from ktir.verify.rules import arith_math, ktdp, linalg, memory_space, scf_func, tensor_memref  # noqa: F401
