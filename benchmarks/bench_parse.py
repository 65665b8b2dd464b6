"""Parse and parse+print throughput on a generated 20,000-line module.

Prints lines/second for each, and the ratio against a baseline measured in the same run:
tokenising the same text with one compiled regex (`re.findall`), the floor any Python
parser of this text pays. Run: `python benchmarks/bench_parse.py [--lines N]`.
"""

from __future__ import annotations

import argparse
import re
import time

import ktir

_BODY = [
    "%v{i} = ktdp.construct_memory_view %a, sizes: [256, 64], strides: [64, 1] {{coordinate_set = #set, memory_space = #ktdp.memory_space<global>}} : memref<256x64xf16>",
    "%t{i} = ktdp.construct_access_tile %v{i}[%id * 8 + %c0, %c0] {{access_tile_order = #id2, access_tile_set = #tile}} : memref<256x64xf16> -> !ktdp.access_tile<8x64xindex>",
    "%x{i} = ktdp.load %t{i} : !ktdp.access_tile<8x64xindex> -> tensor<8x64xf16>",
    "%y{i} = arith.addf %x{i}, %x{i} : tensor<8x64xf16>",
    "%z{i} = math.exp %y{i} : tensor<8x64xf16>",
    "%e{i} = tensor.empty() : tensor<8x64xf16>",
    "%m{i} = linalg.mul ins(%z{i}, %x{i} : tensor<8x64xf16>, tensor<8x64xf16>) outs(%e{i} : tensor<8x64xf16>) -> tensor<8x64xf16>",
    "%k{i} = arith.constant 4 : index",
    "%p{i} = arith.cmpi slt, %k{i}, %id : index",
    "ktdp.store %m{i}, %t{i} : tensor<8x64xf16>, !ktdp.access_tile<8x64xindex>",
]


def generate(lines: int) -> str:
    out = [
        "#set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 255 >= 0, d1 >= 0, -d1 + 63 >= 0)>",
        "#tile = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 63 >= 0)>",
        "#id2 = affine_map<(d0, d1) -> (d0, d1)>",
        "func.func @big(%a: index) attributes {grid = [32]} {",
        "  %id = ktdp.get_compute_tile_id : index",
        "  %c0 = arith.constant 0 : index",
    ]
    i = 0
    while len(out) < lines - 2:
        for template in _BODY:
            out.append("  " + template.format(i=i))
        i += 1
    out += ["  func.return", "}"]
    return "\n".join(out) + "\n"


def best_of(fn, repeat: int) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--lines", type=int, default=20_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    text = generate(args.lines)
    n = text.count("\n")
    ktir.parse("func.func @warm() { return }")  # build the parser tables once
    tokens = re.compile(r"%[\w$.#-]+|[A-Za-z_][\w$.]*|[0-9]+|->|\S")
    t_base = best_of(lambda: tokens.findall(text), args.repeat)
    t_parse = best_of(lambda: ktir.parse(text), args.repeat)
    module = ktir.parse(text)
    t_print = best_of(lambda: ktir.print_module(module), args.repeat)
    t_both = t_parse + t_print
    print(f"module: {n} lines, {len(text)} bytes")
    print(f"baseline regex tokenise : {n / t_base:12,.0f} lines/s")
    print(f"parse                   : {n / t_parse:12,.0f} lines/s  ({t_parse / t_base:6.1f}x baseline)")
    print(f"print                   : {n / t_print:12,.0f} lines/s")
    print(f"parse + print           : {n / t_both:12,.0f} lines/s  ({t_both / t_base:6.1f}x baseline)")


if __name__ == "__main__":
    main()
