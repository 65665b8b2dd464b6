"""Op implementations, one module per dialect; importing this package registers them."""

from reference_interp.ops import affine_func as _affine_func  # noqa: F401
from reference_interp.ops import arith, intertile, ktdp, linalg, linalg_buffers, math, memref, scf, tensor  # noqa: F401
