"""Deliberately wrong implementations: the suite must catch each with specific cases."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import ml_dtypes
import numpy as np

from conformance.adapters import ReferenceAdapter


class FlipsSign(ReferenceAdapter):
    """Computes `arith.subf a, b` as b - a."""

    name = "flips-sign"

    def run(self, source: str, filename: str, function: str | None, inputs: Mapping[str, Any]) -> Mapping[str, np.ndarray]:
        flipped = re.sub(r"arith\.subf (%[\w.$-]+), (%[\w.$-]+)", r"arith.subf \2, \1", source)
        return super().run(flipped, filename, function, inputs)


class DropsStore(ReferenceAdapter):
    """Loses every ktdp.store inside a loop (as a bad loop-invariant code motion would)."""

    name = "drops-store"

    def run(self, source: str, filename: str, function: str | None, inputs: Mapping[str, Any]) -> Mapping[str, np.ndarray]:
        kept = [line for line in source.splitlines() if not (line.startswith("    ") and "ktdp.store" in line)]
        return super().run("\n".join(kept) + "\n", filename, function, inputs)


class RoundsWrongly(ReferenceAdapter):
    """Rounds f16 and bf16 results toward zero in the last bit (truncation, not ties-to-even)."""

    name = "rounds-wrongly"

    def run(self, source: str, filename: str, function: str | None, inputs: Mapping[str, Any]) -> Mapping[str, np.ndarray]:
        out = dict(super().run(source, filename, function, inputs))
        for name, a in out.items():
            if a.dtype in (np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)):
                bits = a.view(np.uint16)
                out[name] = (bits & np.uint16(0xFFFE)).view(a.dtype)
        return out


class IgnoresTile(ReferenceAdapter):
    """Never runs the last tile of a 1-D grid."""

    name = "ignores-tile"

    def run(self, source: str, filename: str, function: str | None, inputs: Mapping[str, Any]) -> Mapping[str, np.ndarray]:
        fewer = re.sub(r"grid = \[(\d+)\]", lambda m: f"grid = [{max(int(m.group(1)) - 1, 1)}]", source)
        return super().run(fewer, filename, function, inputs)


class Slow(ReferenceAdapter):
    name = "slow"

    def run(self, source: str, filename: str, function: str | None, inputs: Mapping[str, Any]) -> Mapping[str, np.ndarray]:
        import time

        time.sleep(5)
        return super().run(source, filename, function, inputs)


class Crashes(ReferenceAdapter):
    name = "crashes"

    def run(self, source: str, filename: str, function: str | None, inputs: Mapping[str, Any]) -> Mapping[str, np.ndarray]:
        raise RuntimeError("device lost")


class NoCollectives(ReferenceAdapter):
    """Supports everything except inter-tile communication."""

    name = "no-collectives"

    def run(self, source: str, filename: str, function: str | None, inputs: Mapping[str, Any]) -> Mapping[str, np.ndarray]:
        from conformance.adapters import NotSupported

        if "inter_tile_" in source:
            raise NotSupported("inter-tile ops are not supported")
        return super().run(source, filename, function, inputs)


class AcceptsEverything(ReferenceAdapter):
    """A verifier that never rejects anything."""

    name = "accepts-everything"

    def check(self, source: str, filename: str) -> Any:
        from conformance.adapters import CheckResult

        return CheckResult(accepted=True)


class Broken(ReferenceAdapter):
    """An adapter whose constructor fails (no device found)."""

    def __init__(self) -> None:
        raise OSError("no device found")


class NoF64(ReferenceAdapter):
    """Has no double precision."""

    name = "no-f64"

    def run(self, source: str, filename: str, function: str | None, inputs: Mapping[str, Any]) -> Mapping[str, np.ndarray]:
        from conformance.adapters import NotSupported

        if "f64" in source:
            raise NotSupported("no f64 on this part")
        return super().run(source, filename, function, inputs)


class NothingSupported(ReferenceAdapter):
    """Says `not supported` to every case."""

    name = "nothing-supported"

    def check(self, source: str, filename: str) -> Any:
        from conformance.adapters import NotSupported

        raise NotSupported("nothing is supported")

    def run(self, source: str, filename: str, function: str | None, inputs: Mapping[str, Any]) -> Mapping[str, np.ndarray]:
        from conformance.adapters import NotSupported

        raise NotSupported("nothing is supported")


class CrashesOnF64(ReferenceAdapter):
    """Crashes when given an f64 program: shows whether a case left out by the capability file is run."""

    name = "crashes-on-f64"

    def run(self, source: str, filename: str, function: str | None, inputs: Mapping[str, Any]) -> Mapping[str, np.ndarray]:
        if "f64" in source:
            raise RuntimeError("f64 program reached the device")
        return super().run(source, filename, function, inputs)
