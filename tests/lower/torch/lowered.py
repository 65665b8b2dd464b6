"""`from_torch` with the reference interpreter as the kernel runner: what these tests run with.

`ktir.lower` imports no executor; the caller says what runs the kernels (`runner=`)."""

from __future__ import annotations

import functools

import reference_interp
from ktir.lower.torch import from_torch as _from_torch

from_torch = functools.partial(_from_torch, runner=reference_interp.run)
