"""`ktir validate` cost: a 20,000-line module, and a kernel with 32-way distributed views.

Prints seconds and lines/s, the share of time spent in verification versus parsing
(the baseline measured in the same run), and for the distributed-view kernel how time
grows with uses of the same sets (isl queries are cached by set text, so repeating the
same access pattern should cost little more than parsing it).
Run: `python benchmarks/bench_validate.py`.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_parse import generate  # noqa: E402

import ktir  # noqa: E402
from ktir.verify import sets as isl_sets  # noqa: E402
from ktir.verify import verify  # noqa: E402


def distributed_kernel(pieces: int, repeats: int) -> str:
    rows = 8
    lines = [
        f"#piece{i} = affine_set<(d0, d1) : (d0 - {i * rows} >= 0, -d0 + {i * rows + rows - 1} >= 0, d1 >= 0, -d1 + 63 >= 0)>"
        for i in range(pieces)
    ]
    lines += [
        "#tile = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 63 >= 0)>",
        "#id = affine_map<(d0, d1) -> (d0, d1)>",
        f"func.func @k(%base: index) attributes {{grid = [{pieces}]}} {{",
        "  %t = ktdp.get_compute_tile_id : index",
        "  %c0 = arith.constant 0 : index",
    ]
    for i in range(pieces):
        lines.append(
            f"  %v{i} = ktdp.construct_memory_view %base, sizes: [{pieces * rows}, 64], strides: [64, 1] "
            f"{{coordinate_set = #piece{i}, memory_space = #ktdp.memory_space<ct_local, ct_id = {i}>}} : memref<{pieces * rows}x64xf16>"
        )
    views = ", ".join(f"%v{i}" for i in range(pieces))
    types = ", ".join(f"memref<{pieces * rows}x64xf16>" for _ in range(pieces))
    lines.append(f"  %d = ktdp.construct_distributed_memory_view({views} : {types}) : memref<{pieces * rows}x64xf16>")
    for r in range(repeats):
        lines.append(
            f"  %a{r} = ktdp.construct_access_tile %d[%t * {rows}, %c0] {{access_tile_order = #id, access_tile_set = #tile}}"
            f" : memref<{pieces * rows}x64xf16> -> !ktdp.access_tile<8x64xindex>"
        )
        lines.append(f"  %x{r} = ktdp.load %a{r} : !ktdp.access_tile<8x64xindex> -> tensor<8x64xf16>")
    lines += ["  return", "}"]
    return "\n".join(lines) + "\n"


def timed(fn):  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - start


def clear_caches() -> None:
    for fn in (isl_sets.sample, isl_sets._difference, isl_sets._intersection, isl_sets._difference_union, isl_sets._difference_union_rev, isl_sets._overlapping_pair):
        fn.cache_clear()


def main() -> None:
    ktir.parse("func.func @w() { return }")
    text = generate(20_000)
    n = text.count("\n")
    module, t_parse = timed(lambda: ktir.parse(text))
    diags, t_verify = timed(lambda: verify(module))
    errors = [d for d in diags if d.severity == "error"]
    print(f"20,000-line module ({n} lines): parse {t_parse:.2f} s, verify {t_verify:.2f} s "
          f"({n / (t_parse + t_verify):,.0f} lines/s validated; verify = {t_verify / t_parse:.2f}x parse), {len(errors)} errors")
    for repeats in (1, 10, 100):
        clear_caches()
        src = distributed_kernel(32, repeats)
        m, tp = timed(lambda src=src: ktir.parse(src))
        d, tv = timed(lambda m=m: verify(m))
        errs = [x for x in d if x.severity == "error"]
        print(f"32-way distributed view, {repeats:3d} access tiles: parse {tp * 1000:7.1f} ms, verify {tv * 1000:7.1f} ms, "
              f"{len(errs)} errors, isl cache {isl_sets._difference.cache_info().hits} hits / {isl_sets._difference.cache_info().misses} misses")


if __name__ == "__main__":
    main()
