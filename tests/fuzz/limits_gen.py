"""Programs at and past the bounds of ktir.syntax.limits, and the printer/parser corner
cases (issue 33): every kind of nesting, literal size, rank, integer width and address
range around its limit, and the constructs whose print once failed to read back.

Each generator builds one program from a random.Random; sizes are drawn around each
bound (just under, at, just over, far over), so a run of a few thousand inputs reaches
every bound of every kind from both sides.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from ktir.syntax.limits import MAX_AFFINE_DEPTH, MAX_INT_WIDTH, MAX_LITERAL_DIGITS, MAX_NESTING, MAX_RANK


def _around(rng: random.Random, limit: int) -> int:
    return max(1, rng.choice([1, 2, limit // 2, limit - 3, limit - 2, limit - 1, limit, limit + 1, limit + 2,
                              2 * limit, 4 * limit, 16 * limit]))


def _func(body: str, args: str = "", attrs: str = "") -> str:
    return f"func.func @f({args}){attrs} {{\n{body}  return\n}}\n"


# ---------------------------------------------------------------- nesting


def regions(rng: random.Random) -> str:
    n = _around(rng, MAX_NESTING)
    inner = rng.choice(["", "  %k = arith.constant 1.0 : f32\n  %s = arith.addf %k, %k : f32\n"])
    kind = rng.randrange(4)
    if kind == 0:
        opened = "scf.execute_region {\n" * n
        closed = "scf.yield\n}\n" * n
    elif kind == 1:
        opened = "scf.for %i = %lb to %ub step %st {\n" * n
        closed = "}\n" * n
        return _func("  %lb = arith.constant 0 : index\n  %ub = arith.constant 2 : index\n  %st = arith.constant 1 : index\n"
                     + opened + inner + closed)
    elif kind == 2:
        opened = "scf.if %c {\n" * n
        closed = "}\n" * n
        return _func("  %c = arith.constant true\n" + opened + inner + closed)
    else:  # generic form: two brackets a level
        opened = '"scf.execute_region"() ({\n' * n
        closed = '"scf.yield"() : () -> ()\n}) : () -> ()\n' * n
    return _func(opened + inner + closed)


def attributes(rng: random.Random) -> str:
    n = _around(rng, MAX_NESTING)
    kind = rng.randrange(6)
    if kind == 0:
        value = "{a = " * n + "1" + "}" * n
    elif kind == 1:
        value = "[" * n + rng.choice(["1", "", "unit", '"s"']) + "]" * n
    elif kind == 2:
        value = "tuple<" * n + "f32" + ">" * n
    elif kind == 3:
        value = "(" * n + "f32" + ") -> f32" * n if rng.random() < 0.5 else "(" * n + ")" * n
    elif kind == 4:
        value = "complex<" * n + "f32" + ">" * n
    else:
        value = "tensor<4x" + "tensor<2x" * (n - 1) + "f32" + ">" * n
    where = rng.randrange(3)
    if where == 0:
        return _func("", attrs=f" attributes {{a = {value}}}")
    if where == 1:
        return f"#alias = {value}\n" + _func("", attrs=" attributes {a = #alias}")
    return _func(f'  "foo.op"() {{a = {value}}} : () -> ()\n')


def dense(rng: random.Random) -> str:
    rank = _around(rng, MAX_RANK)
    element = rng.choice(["1.0", "0x7FC00000", "0xFF800000", "-0.0", "1"])
    t = rng.choice(["f32", "f16", "i32"]) if element in ("1", "-0.0") else "f32"
    literal = "[" * rank + element + "]" * rank if rng.random() < 0.7 else element
    shape = "1x" * rank
    body = f"  %c = arith.constant dense<{literal}> : tensor<{shape}{t}>\n"
    return f"func.func @f() -> tensor<{shape}{t}> {{\n{body}  return %c : tensor<{shape}{t}>\n}}\n"


def affine(rng: random.Random) -> str:
    n = _around(rng, MAX_AFFINE_DEPTH)
    kind = rng.randrange(5)
    if kind == 0:
        expr = " + ".join(["d0"] * n)
    elif kind == 1:
        expr = "(" * n + "d0 + 1" + ")" * n
    elif kind == 2:
        expr = "d0" + " * 9223372036854775807" * rng.choice([1, 2, n])
    elif kind == 3:
        expr = " - ".join(["d0"] + [str(rng.choice([2**62, 2**63 - 1, 2**63, 1])) for _ in range(rng.choice([1, 2, 3]))])
    else:  # a subscript over SSA values
        terms = " + ".join(["%c0"] * n)
        return (
            "func.func @f(%A: index) {\n  %c0 = arith.constant 0 : index\n"
            "  %v = ktdp.construct_memory_view %A, sizes: [8], strides: [1] {memory_space = #ktdp.memory_space<global>} : memref<8xf16>\n"
            f"  %t = ktdp.construct_access_tile %v[{terms}] {{access_tile_order = affine_map<(d0) -> (d0)>, "
            "access_tile_set = affine_set<(d0) : (d0 >= 0, -d0 + 3 >= 0)>} : memref<8xf16> -> !ktdp.access_tile<4xindex>\n"
            "  %x = ktdp.load %t : !ktdp.access_tile<4xindex> -> tensor<4xf16>\n"
            "  return\n}\n"
        )
    which = rng.randrange(2)
    attr = f"affine_map<(d0) -> ({expr})>" if which == 0 else f"affine_set<(d0) : ({expr} >= 0)>"
    return _func("", attrs=f" attributes {{m = {attr}}}")


# ---------------------------------------------------------------- sizes


def literals(rng: random.Random) -> str:
    digits = rng.choice([MAX_LITERAL_DIGITS - 1, MAX_LITERAL_DIGITS, MAX_LITERAL_DIGITS + 1, 4300, 4301, 5000, 19, 20])
    number = rng.choice("123456789") + "9" * (digits - 1)
    kind = rng.randrange(7)
    if kind == 0:
        return _func(f"  %x = arith.constant {number} : i64\n")
    if kind == 1:
        return _func("", args=f"%x: tensor<{number}xf32>")
    if kind == 2:
        return _func(f"  %x = arith.constant 0x{'F' * (digits // 2)} : i64\n")
    if kind == 3:
        return _func(f"  %r:{number} = arith.addf %a, %a : f32\n", args="%a: f32")
    if kind == 4:
        return _func("", attrs=f" attributes {{a = array<i64: {number}>, b = [{number}], c = {number} : i8}}")
    if kind == 5:
        return _func(f"  %x = arith.constant {number}.5 : f32\n")
    value = rng.choice([2**63 - 1, 2**63, 2**64, -(2**63), -(2**63) - 1])
    return _func(f"  %x = arith.constant {value} : index\n  %y = arith.constant dense<{value}> : tensor<2xi64>\n")


def ranks(rng: random.Random) -> str:
    rank = rng.choice([MAX_RANK - 1, MAX_RANK, MAX_RANK + 1, 2 * MAX_RANK])
    shape = "1x" * rank
    kind = rng.randrange(4)
    if kind == 0:
        return f"func.func @f() -> tensor<{shape}f32> {{\n  %c = tensor.empty() : tensor<{shape}f32>\n  return %c : tensor<{shape}f32>\n}}\n"
    if kind == 1:
        return _func("", args=f"%x: tensor<{shape}f32>")
    if kind == 2:
        return _func("", args=f"%x: memref<{shape}f16>")
    return _func("", args=f"%x: vector<{shape}f32>")


def widths(rng: random.Random) -> str:
    width = rng.choice([1, 2, 65, 128, MAX_INT_WIDTH, MAX_INT_WIDTH + 1, 99999999999, 10**40])
    prefix = rng.choice(["i", "si", "ui"])
    value = rng.choice(["1", "-1", "0", "255", str(2**64)])
    return _func(f"  %x = arith.constant {value} : {prefix}{width}\n  %y = arith.addi %x, %x : {prefix}{width}\n")


def strides(rng: random.Random) -> str:
    stride = rng.choice([1, 2**31, 2**40, 2**62, 2**63 - 1])
    size = rng.choice([1, 4])
    offset = rng.choice(["%c0", "%big"])
    return (
        "func.func @f(%out: index) {\n  %c0 = arith.constant 0 : index\n"
        f"  %big = arith.constant {rng.choice([2**40, 2**62, 2**63 - 1])} : index\n"
        f"  %x = arith.constant dense<1.0> : tensor<{size}xf32>\n"
        f"  %v = ktdp.construct_memory_view %out, sizes: [{size}], strides: [{stride}] {{memory_space = #ktdp.memory_space<global>}} : memref<{size}xf32>\n"
        f"  %t = ktdp.construct_access_tile %v[{offset}] {{access_tile_order = affine_map<(d0) -> (d0)>, "
        f"access_tile_set = affine_set<(d0) : (d0 >= 0, -d0 + {size - 1} >= 0)>}} : memref<{size}xf32> -> !ktdp.access_tile<{size}xindex>\n"
        f"  ktdp.store %x, %t : tensor<{size}xf32>, !ktdp.access_tile<{size}xindex>\n  return\n}}\n"
    )


# ---------------------------------------------------------------- printer/parser corners


_CORNERS = [
    "func.func @f(%x: tensor<4xf32>) {{\n  %r = linalg.map {{ arith.addf }} ins(%x, %x : tensor<4xf32>, tensor<4xf32>) outs({outs})\n  return\n}}\n",
    "func.func @f(%x: tensor<4xf32>) {{\n  %r = linalg.reduce {{ arith.addf }} ins(%x : tensor<4xf32>) outs({outs}) dimensions = [0]\n  return\n}}\n",
    "func.func @f() {{\n  linalg.generic {{}} {ins}outs({outs}) {{\n  }}\n  return\n}}\n",
    "func.func @f() {{\n  linalg.{named} {ins}outs({outs})\n  return\n}}\n",
    "#a = {{{dict}}}\nfunc.func @f() attributes {{b = {{{dict}}}, c = array<i1: {bools}>}} {{\n  return\n}}\n",
    "func.func @f(%c: i1) {{\n  scf.if %c {{\n    {term}\n    scf.yield\n  }}\n  return\n}}\n",
    '"{op}"() <{{}}> : () -> ()\n',
    "func.func @f() {{\n  %c = arith.constant dense<[{floats}]> : tensor<3xf32>\n  return\n}}\n",
    "func.func @f(%A: index) {{\n  %v = ktdp.construct_memory_view %A, sizes: [8], strides: [1] {{memory_space = #ktdp.memory_space<global>}} : memref<8xf16>\n"
    "  %t = ktdp.construct_access_tile %v[{sub}] {{access_tile_order = affine_map<(d0) -> (d0)>, access_tile_set = affine_set<(d0) : (d0 >= 0, -d0 + 3 >= 0)>}} : memref<8xf16> -> !ktdp.access_tile<4xindex>\n  return\n}}\n",
    "func.func @f(%a: {ta}, %b: tensor<4x4xf16>, %c: tensor<4x4xf16>) {{\n  %r = linalg.matmul {maps}ins(%a, %b : {ta}, tensor<4x4xf16>) outs(%c : tensor<4x4xf16>) -> tensor<4x4xf16>\n  return\n}}\n",
    "func.func @f(%x: {ft}) -> {ft} {{\n  %y = math.{fn} %x : {ft}\n  return %y : {ft}\n}}\n",
    "#m = #ktdp.spyre_memory_space<unspecified>\nfunc.func @f(%a: memref<4xf32, {space}>) attributes {{a = [{space}]}} {{\n  return\n}}\n",
    '"func.return"()[^bb1] {{a = 1}} : () -> ()\n',
]

_DEFAULT_MAPS = ("indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>, "
                 "affine_map<(d0, d1, d2) -> (d0, d1)>] ")


def corners(rng: random.Random) -> str:
    template = rng.choice(_CORNERS)
    return template.format(
        outs=rng.choice(["", "%x : tensor<4xf32>"]),
        ins=rng.choice(["", "ins() ", "ins(%x : tensor<4xf32>) "]),
        named=rng.choice(["negf", "add", "copy", "fill", "matmul"]),
        dict=", ".join(rng.sample(["x", "d0 = 1", "a = [2]", '"q r" = "s"', "b = {z, a}"], rng.randrange(1, 4))),
        bools=", ".join(rng.choice(["-1", "0", "1", "2", "true", "false"]) for _ in range(rng.randrange(1, 4))),
        term=rng.choice(["func.return", "scf.yield", "linalg.yield"]),
        op=rng.choice(["arith.addf", "arith.addi", "foo.bar", "scf.yield", "math.exp"]),
        floats=", ".join(rng.choice(["0x7FC00000", "0xFFC00001", "0x7F800000", "1.0", "-0.0", "0x00000001"]) for _ in range(3)),
        sub=rng.choice(["grid", "%A", "d0", "symbol(%A)", "%A + 1", "x + %A"]),
        ta=rng.choice(["index", "tensor<4x4xf16>", "f16", "tensor<4xf16>"]),
        maps=rng.choice(["", _DEFAULT_MAPS]),
        ft=rng.choice(["f16", "f32", "f64", "bf16", "tensor<4xf32>", "tensor<2xbf16>"]),
        fn=rng.choice(["erf", "exp", "log", "tanh", "sqrt", "rsqrt", "absf", "sin", "cos", "exp2", "log1p", "floor"]),
        space=rng.choice(["#m", "#ktdp.spyre_memory_space<unspecified>", "#ktdp.spyre_memory_space<HBM>"]),
    )


GENERATORS: list[tuple[Callable[[random.Random], str], int]] = [
    (regions, 3), (attributes, 3), (dense, 2), (affine, 2), (literals, 2), (ranks, 1), (widths, 1), (strides, 1),
    (corners, 4),
]
_CHOICES = [f for f, w in GENERATORS for _ in range(w)]


def generate_limits(rng: random.Random) -> str:
    return rng.choice(_CHOICES)(rng)
