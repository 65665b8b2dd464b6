"""The canonical text of types and attributes, as MLIR prints them.

The IR renders its own types and attributes (as MLIR's IR library does), so diagnostics of
the verifier and the interpreter show `tensor<4xf32>` without depending on the op printer
in `ktir.syntax`, which builds on these functions.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from ktir.ir import attributes as at
from ktir.ir import types as ty
from ktir.ir.affine_text import format_map, format_set
from ktir.ir.base import Attribute, Type
from ktir.ir.floats import float_bits

_BARE = re.compile(r"[A-Za-z_][A-Za-z0-9_$.]*\Z")

# ---------------------------------------------------------------- types


def dims_text(shape: Sequence[int | None]) -> str:
    return "".join(("?" if d is None else str(d)) + "x" for d in shape)


def type_text(t: Type) -> str:
    if isinstance(t, ty.IndexType):
        return "index"
    if isinstance(t, ty.IntegerType):
        prefix = {"signless": "i", "signed": "si", "unsigned": "ui"}[t.signedness]
        return f"{prefix}{t.width}"
    if isinstance(t, ty.FloatType):
        return t.kind
    if isinstance(t, ty.TensorType):
        enc = f", {attr_text(t.encoding)}" if t.encoding is not None else ""
        return f"tensor<{dims_text(t.shape)}{type_text(t.element_type)}{enc}>"
    if isinstance(t, ty.MemRefType):
        extras = "".join(f", {attr_text(a)}" for a in (t.layout, t.memory_space) if a is not None)
        return f"memref<{dims_text(t.shape)}{type_text(t.element_type)}{extras}>"
    if isinstance(t, ty.AccessTileType):
        return f"!ktdp.access_tile<{dims_text(t.shape)}index>"
    if isinstance(t, ty.TileFutureType):
        if isinstance(t.groups, at.UnitAttr) and len(t.partial_types) == 1:
            # ktir-cpu's groupless `!ktdp.tile_future<T>` that no op's `groups = ...` completed:
            # printed as read (the verifier rejects it), so the text reads back equal
            return f"!ktdp.tile_future<{type_text(t.partial_types[0])}>"
        parts = ", ".join(type_text(p) for p in t.partial_types)
        return f"!ktdp.tile_future<({parts}), groups = {attr_text(t.groups)}>"
    if isinstance(t, ty.RuntimeArgType):
        params = "".join(
            f", {k} = {v}" for k, v in (("granularity", t.granularity), ("upperbound", t.upperbound)) if v is not None
        )
        return f"!ktdp.runtime_arg<{type_text(t.value_type)}{params}>"
    if isinstance(t, ty.FunctionType):
        return function_type_text(t)
    if isinstance(t, ty.TypeAliasRef):
        return f"!{t.name}"
    if isinstance(t, ty.NoneType):
        return "none"
    if isinstance(t, ty.VectorType):
        return f"vector<{dims_text(t.shape)}{type_text(t.element_type)}>"
    if isinstance(t, ty.UnrankedTensorType):
        return f"tensor<*x{type_text(t.element_type)}>"
    if isinstance(t, ty.UnrankedMemRefType):
        space = f", {attr_text(t.memory_space)}" if t.memory_space is not None else ""
        return f"memref<*x{type_text(t.element_type)}{space}>"
    if isinstance(t, ty.ComplexType):
        return f"complex<{type_text(t.element_type)}>"
    if isinstance(t, ty.TupleType):
        return f"tuple<{', '.join(type_text(x) for x in t.types)}>"
    if isinstance(t, ty.DialectType):
        return f"!{t.dialect}.{t.name}<{t.body}>"
    raise TypeError(f"cannot print type {t!r}")


def result_types_text(results: Sequence[Type]) -> str:
    if len(results) == 1 and not isinstance(results[0], ty.FunctionType):
        return type_text(results[0])
    return "(" + ", ".join(type_text(t) for t in results) + ")"


def function_type_text(t: ty.FunctionType) -> str:
    inputs = ", ".join(type_text(x) for x in t.inputs)
    return f"({inputs}) -> {result_types_text(t.results)}"


def types_text(ts: Sequence[Type]) -> str:
    return ", ".join(type_text(t) for t in ts)


# ---------------------------------------------------------------- attributes


def float_text(value: float) -> str:
    text = repr(float(value))
    if "e" in text and "." not in text.split("e")[0]:
        mantissa, exponent = text.split("e")
        text = f"{mantissa}.0e{exponent}"
    return text


def string_text(value: str) -> str:
    out = ['"']
    for ch in value:
        if ch in ('"', "\\"):
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\{ord(ch):02X}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _float_attr_text(a: at.FloatAttr) -> str:
    suffix = f" : {type_text(a.type)}" if a.type is not None else ""
    if a.bits is not None:
        width = a.type.width if isinstance(a.type, ty.FloatType) else 64
        return f"0x{a.bits:0{max(width // 4, 1)}X}{suffix}"
    if math.isfinite(a.value):
        return f"{float_text(a.value)}{suffix}"
    # MLIR has no literal for inf/nan: print the bit pattern of the value in its type
    t = a.type if isinstance(a.type, ty.FloatType) else ty.F64
    return f"0x{float_bits(a.value, t):0{t.width // 4}X} : {type_text(t)}"


def _dense_value_text(v: object, element: ty.Type | None = None) -> str:
    if isinstance(v, tuple):
        return "[" + ", ".join(_dense_value_text(x, element) for x in v) + "]"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        if math.isfinite(v):
            return float_text(v)
        # no decimal literal for inf/nan: the bit pattern in the element type, as MLIR prints it
        t = element if isinstance(element, ty.FloatType) else ty.F64
        return f"0x{float_bits(v, t):0{t.width // 4}X}"
    return str(int(v)) if isinstance(v, int) else str(v)


def attr_text(a: Attribute) -> str:
    if isinstance(a, at.IntegerAttr):
        return f"{a.value} : {type_text(a.type)}" if a.type is not None else str(a.value)
    if isinstance(a, at.FloatAttr):
        return _float_attr_text(a)
    if isinstance(a, at.BoolAttr):
        return "true" if a.value else "false"
    if isinstance(a, at.StringAttr):
        return string_text(a.value) + (f" : {type_text(a.type)}" if a.type is not None else "")
    if isinstance(a, at.ArrayAttr):
        return "[" + ", ".join(attr_text(e) for e in a.elements) + "]"
    if isinstance(a, at.DictAttr):
        return dict_text(dict(a.entries), always=True)
    if isinstance(a, at.AttrAliasRef):
        return f"#{a.name}"
    if isinstance(a, at.AffineMapAttr):
        return f"affine_map<{format_map(a.value)}>"
    if isinstance(a, at.IntegerSetAttr):
        return f"affine_set<{format_set(a.value)}>"
    if isinstance(a, at.MemorySpaceAttr):
        extra = f", ct_id = {a.ct_id}" if a.ct_id is not None else ""
        return f"#ktdp.memory_space<{a.kind}{extra}>"
    if isinstance(a, at.DenseArrayAttr):
        # MLIR reads i1 elements only as `true`/`false`
        values = ", ".join(_dense_value_text(bool(v) if a.element_type == ty.I1 else v) for v in a.values)
        return f"array<{type_text(a.element_type)}{': ' + values if a.values else ''}>"
    if isinstance(a, at.DenseAttr):
        if a.hex is not None:
            body = string_text(a.hex)
        elif a.values == ():
            body = ""
        else:
            body = _dense_value_text(a.values, getattr(a.type, "element_type", None))
        return f"dense<{body}> : {type_text(a.type)}"
    if isinstance(a, at.TypeAttr):
        return type_text(a.value)
    if isinstance(a, at.UnitAttr):
        return "unit"
    if isinstance(a, at.SymbolRefAttr):
        return "::".join(symbol_text(n) for n in (a.root, *a.nested))
    if isinstance(a, at.EnumAttr):
        return f"#{a.dialect}.{a.name}<{a.value}>"
    if isinstance(a, at.DialectAttr):
        return f"#{a.dialect}.{a.name}<{a.body}>"
    if isinstance(a, at.StridedLayoutAttr):
        strides = ", ".join("?" if s is None else str(s) for s in a.strides)
        offset = "" if a.offset == 0 else f", offset: {'?' if a.offset is None else a.offset}"
        return f"strided<[{strides}]{offset}>"
    if isinstance(a, at.DenseResourceAttr):
        return f"dense_resource<{a.handle}> : {type_text(a.type)}"
    raise TypeError(f"cannot print attribute {a!r}")


def symbol_text(name: str) -> str:
    return f"@{name}" if re.fullmatch(r"[A-Za-z_$.\-][A-Za-z0-9_$.\-]*", name) else f"@{string_text(name)}"


def key_text(key: str) -> str:
    return key if _BARE.match(key) else string_text(key)


def dict_text(attrs: dict[str, Attribute], elided: Sequence[str] = (), always: bool = False) -> str:
    items = []
    for key in sorted(attrs):
        if key in elided:
            continue
        value = attrs[key]
        items.append(key_text(key) if isinstance(value, at.UnitAttr) else f"{key_text(key)} = {attr_text(value)}")
    if not items:
        return "{}" if always else ""
    return "{" + ", ".join(items) + "}"
