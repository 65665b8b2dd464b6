"""Typed AST -> canonical KTIR text.

Each assembly format has one printer, the inverse of its parser callback; ops without a
definition print in MLIR's generic form. Canonical output: `!ktdp.access_tile<...>` in
full, `#ktdp.memory_space<...>`, sorted attribute dictionaries, aliases kept as written.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from itertools import accumulate

from ktir.dialects.base import OpDef
from ktir.dialects.names import Linalg, Scf
from ktir.dialects.registry import OPS, SPELLINGS
from ktir.ir import affine as af
from ktir.ir import attributes as at
from ktir.ir import types as ty
from ktir.ir.affine_text import format_expr
from ktir.ir.asm import attr_text, dict_text, function_type_text, string_text, type_text
from ktir.ir.asm import symbol_text as _symbol_text
from ktir.ir.asm import types_text as _types
from ktir.ir.attributes import constant_type
from ktir.ir.base import Attribute, Type
from ktir.ir.operation import Module, Operation, Region
from ktir.ir.types import (
    KDYNAMIC,
    i1_like,  # noqa: F401 - used by the generated printers
)
from ktir.syntax import assembly as asm
from ktir.syntax.diagnostics import KtirError
from ktir.syntax.fastparse import SHORT_BODY_FORMATS
from ktir.syntax.mlir_generic import to_mlir
from ktir.syntax.parser import SHORT_BODY_RESULT, short_body_init, short_body_input

_BARE = re.compile(r"[A-Za-z_][A-Za-z0-9_$.]*\Z")
_INDENT = "  "


def _opt_dict(attrs: dict[str, Attribute], elided: Sequence[str] = ()) -> str:
    text = dict_text(attrs, elided)
    return f" {text}" if text else ""


def _need(condition: object) -> None:
    """Custom syntax can only carry attributes shaped as the parser makes them; anything
    else (read from generic text) is printed in generic form instead."""
    if not condition:
        raise ValueError("attribute does not fit the custom form")


def _is_i64_array(a: Attribute | None) -> bool:
    return isinstance(a, at.DenseArrayAttr) and a.element_type == ty.I64 and all(isinstance(v, int) and not isinstance(v, bool) for v in a.values)


def _is_set(a: Attribute | None) -> bool:
    return isinstance(a, at.IntegerSetAttr | at.AttrAliasRef)


def _int_array(attr: Attribute) -> str:
    """`[1, 2]` from an i64 array attribute."""
    _need(_is_i64_array(attr))
    assert isinstance(attr, at.DenseArrayAttr)
    return f"[{', '.join(map(str, attr.values))}]"


def _static_list(attr: Attribute | None, dynamic: list[str]) -> str:
    """`[0, %o]` from a static array with kDynamic holes and the dynamic operands."""
    _need(_is_i64_array(attr))
    assert isinstance(attr, at.DenseArrayAttr)
    _need(sum(1 for v in attr.values if v == KDYNAMIC) == len(dynamic))
    it = iter(dynamic)
    parts = [next(it) if v == KDYNAMIC else str(v) for v in attr.values]
    return "[" + ", ".join(parts) + "]"


def _segments(op: Operation, count: int | None = None) -> list[int]:
    seg = op.attributes.get("operandSegmentSizes")
    _need(isinstance(seg, at.DenseArrayAttr) and seg.element_type == ty.I32)
    assert isinstance(seg, at.DenseArrayAttr)
    sizes = [int(v) for v in seg.values]
    _need(sum(sizes) == len(op.operands) and (count is None or len(sizes) == count))
    return sizes


def _split(items: Sequence[str], sizes: Sequence[int]) -> list[list[str]]:
    ends = accumulate(sizes)
    return [list(items[end - n : end]) for n, end in zip(sizes, ends, strict=True)]


# ---------------------------------------------------------------- printer


class Printer:
    def __init__(self, attr_aliases: dict[str, Attribute] | None = None, counter: list[int] | None = None) -> None:
        self.lines: list[str] = []
        self.attr_aliases = attr_aliases or {}
        # shared by every fork, so names made up for generic named-op bodies are unique in the text
        self.counter = counter if counter is not None else [0]

    def fork(self) -> Printer:
        """A printer for one op's custom text, printing nested ops as this one does."""
        return Printer(self.attr_aliases, self.counter)

    def emit(self, depth: int, text: str) -> None:
        if text:
            self.lines.append(_INDENT * depth + text)
        else:
            self.blank()

    def blank(self) -> None:
        """A kept blank line: never first, never doubled, no trailing spaces."""
        if self.lines and self.lines[-1]:
            self.lines.append("")

    # ------------------------------------------------------------ structure

    def module(self, module: Module) -> str:
        self.attr_aliases = module.attr_aliases
        for key, text in _ordered_aliases(module):
            for comment in module.alias_comments.get(key, []):
                self.emit(0, comment)
            self.lines.append(f"{key} = {text}")
        self.operations(module.operations, 0)
        for comment in module.trailing_comments:
            self.emit(0, comment)
        return "\n".join(self.lines) + "\n"

    def operation(self, op: Operation, depth: int, generic: bool = False) -> None:
        for comment in op.comments:
            self.emit(depth, comment)
        start = len(self.lines)
        if generic:
            self.generic(op, depth, _results_text(op.results))
        else:
            self._operation(op, depth)
        if op.trailing_comment is not None and len(self.lines) > start:
            self.lines[start] += f"  {op.trailing_comment}"

    def _operation(self, op: Operation, depth: int) -> None:
        head = _results_text(op.results)
        opdef = OPS.get(op.name)
        printer = _FORMATS.get(opdef.format) if opdef is not None else None
        # no custom form spells successors (they are read in generic form only)
        if printer is None or opdef is None or op.successors or not _counts_fit(op, opdef) or not _types_fit(op, opdef):
            self.generic(op, depth, head)
            return
        custom = self.fork()
        try:
            printer(custom, op, opdef, depth, head)
        except (KeyError, IndexError, AssertionError, ValueError, StopIteration):
            # the op's attributes do not fit its custom form (e.g. read from generic
            # text written by another tool): the generic form always round-trips
            self.generic(op, depth, head)
            return
        self.lines.extend(custom.lines)

    def region(self, region: Region, depth: int, entry_label: bool, elide: str | None = None) -> str:
        """Print a region whose `{` ends the current line; returns the closing text."""
        # without its label, an empty entry block would vanish: the next block's label
        # would open the region and be read as the entry
        _need(entry_label or len(region.blocks) < 2 or region.blocks[0].operations)
        for index, block in enumerate(region.blocks):
            ops = block.operations
            # an elided terminator is added back by the parser, but only after an op that is
            # no terminator
            if (
                elide is not None
                and index == len(region.blocks) - 1
                and ops
                and _is_empty_terminator(ops[-1], elide)
                and (len(ops) < 2 or not _is_terminator(ops[-2]))
            ):
                ops = ops[:-1]
            # an empty entry block needs its label, or `{}` would read back as no block at all
            empty_entry = index == 0 and not ops and entry_label
            if index > 0 or (entry_label and (block.label is not None or block.arguments)) or empty_entry:
                label = block.label or f"^bb{index}"
                args = ", ".join(f"{a.name}: {type_text(a.type)}" for a in block.arguments)
                self.emit(depth, f"{label}({args}):" if block.arguments else f"{label}:")
            self.operations(ops, depth + 1)
        return "}"

    def operations(self, ops: list[Operation], depth: int) -> None:
        """A block's ops or the module's; a bare terminator before another op prints generic
        (in custom form the next op's `%x` reads as its operand; at the top level an alias
        line between them is printed above both)."""
        for position, op in enumerate(ops):
            self.operation(op, depth, generic=position < len(ops) - 1 and not op.operands and _is_terminator(op))

    def open_region(self, depth: int, head: str, region: Region, entry_label: bool, tail: str = "", elide: str | None = None) -> None:
        # custom forms give `{}` an entry block: a region without blocks needs generic form
        _need(region.blocks)
        self.emit(depth, head + " {")
        self.region(region, depth, entry_label, elide)
        self.emit(depth, "}" + tail)

    def generic(self, op: Operation, depth: int, head: str) -> None:
        """MLIR's generic form, as MLIR 22 prints it (ktir.syntax.mlir_generic): also the
        fallback for ops whose fields do not fit their custom form."""
        fields = to_mlir(op, self.fresh)
        text = f"{head}{string_text(fields.name)}({', '.join(op.operands)})"
        if op.successors:
            text += "[" + ", ".join(op.successors) + "]"
        if fields.properties or op.properties is not None:
            text += " <" + dict_text(fields.properties, always=True) + ">"
        fn = function_type_text(ty.FunctionType(inputs=tuple(op.operand_types), results=tuple(op.result_types)))
        tail = _opt_dict(fields.attributes) + f" : {fn}"
        if not fields.regions:
            self.emit(depth, text + tail)
            return
        self.emit(depth, text + " ({")
        for i, region in enumerate(fields.regions):
            if i > 0:
                self.emit(depth, "}, {")
            self.region(region, depth, entry_label=True)
        self.emit(depth, "})" + tail)

    def fresh(self, hint: str) -> str:
        """A new value name for a body MLIR's generic form spells out (named linalg ops)."""
        self.counter[0] += 1
        return f"%__{hint}{self.counter[0]}"


_ALIAS_USE = re.compile(r"[#!][A-Za-z_][A-Za-z0-9_$.]*")


def _counts_fit(op: Operation, opdef: OpDef) -> bool:
    """Whether the op has the operand, result and region counts its definition declares:
    custom forms can spell only those (generic text can carry any counts, for the verifier
    to report), so anything else prints in generic form."""
    if len(op.operand_types) != len(op.operands) or (op.results and len(op.result_types) != len(op.results)):
        return False
    operands, results, regions = _declared_counts(opdef)
    for (fixed, variadic), actual in ((operands, len(op.operands)), (results, len(op.result_types))):
        if actual < fixed or (not variadic and actual > fixed):
            return False
    return regions is None or len(op.regions) == regions


_Counts = tuple[tuple[int, bool], tuple[int, bool], int | None]


def _counts(opdef: OpDef) -> _Counts:
    """(fixed operands, any variadic), the same for results, and the region count (None: any)."""
    counts = []
    for specs in (opdef.operands, opdef.results):
        fixed = sum(1 for x in specs if not x.variadic and not getattr(x, "optional", False))
        variadic = any(x.variadic or getattr(x, "optional", False) for x in specs)
        counts.append((fixed, variadic))
    flexible = opdef.format in ("LINALG_NAMED", "SCF_REDUCE", "COLLECTIVE")
    return counts[0], counts[1], None if flexible else len(opdef.regions)


# Every registered op's counts, computed once at import (a constant table: an op defined
# later is counted where it is printed)
_DECLARED: dict[str, tuple[OpDef, _Counts]] = {name: (opdef, _counts(opdef)) for name, opdef in OPS.items()}


def _declared_counts(opdef: OpDef) -> _Counts:
    found = _DECLARED.get(opdef.name)
    if found is not None and found[0] is opdef:
        return found[1]
    return _counts(opdef)


_INDEX = ty.INDEX


def _indices(n: int) -> list[Type]:
    return [_INDEX] * n


def _implied_tensor_results(op: Operation) -> list[Type]:
    n_in, n_out = _segments(op, 2)
    return [t for t in op.operand_types[n_in : n_in + n_out] if isinstance(t, ty.TensorType)]


# The types a custom form does not spell but implies, as the parser builds them:
# format -> op -> (operand types or None, result types or None). An op whose types differ
# (read from generic text) prints in generic form.
_Implied = Callable[[Operation], tuple[list[Type] | None, list[Type] | None]]
_IMPLIED: dict[str, _Implied] = {
    "CONSTANT": lambda op: (None, [constant_type(op.attributes["value"])]),
    "ACCESS_TILE": lambda op: ([op.operand_types[0], *_indices(len(op.operands) - 1)], None),
    "IF": lambda op: ([ty.I1], None),
    "AFFINE_APPLY": lambda op: (_indices(len(op.operands)), [_INDEX]),
    "LINALG_MAP": lambda op: (None, _implied_tensor_results(op)),
    "LINALG_REDUCE": lambda op: (None, _implied_tensor_results(op)),
    "LINALG_DIMS": lambda op: (None, _implied_tensor_results(op)),
    "PAD": lambda op: ([op.operand_types[0], *_indices(len(op.operands) - 1)], None),
    "GENERATE": lambda op: (_indices(len(op.operands)), None),
}


def _types_fit(op: Operation, opdef: OpDef) -> bool:
    """Whether the op's types are the ones its custom form implies."""
    implied = _IMPLIED.get(opdef.format)
    if implied is None:
        return True
    try:
        operands, results = implied(op)
    except (KeyError, IndexError, ValueError, KtirError):
        return False
    return (operands is None or operands == op.operand_types) and (results is None or results == op.result_types)


def _ordered_aliases(module: Module) -> list[tuple[str, str]]:
    """Alias definitions in written order, each after the aliases its text uses."""
    texts = {f"#{n}": attr_text(a) for n, a in module.attr_aliases.items()}
    texts.update({f"!{n}": type_text(t) for n, t in module.type_aliases.items()})
    order = [k for k in module.alias_order if k in texts] + [k for k in texts if k not in module.alias_order]
    done: list[str] = []
    seen: set[str] = set()

    def visit(key: str, depth: int) -> None:
        if key in seen or depth > len(texts):
            return
        seen.add(key)
        for used in _ALIAS_USE.findall(texts[key]):
            if used in texts and used != key:
                visit(used, depth + 1)
        done.append(key)

    for key in order:
        visit(key, 0)
    return [(k, texts[k]) for k in done]


def _results_text(results: list[str]) -> str:
    if not results:
        return ""
    groups: list[str] = []
    i = 0
    while i < len(results):
        name = results[i]
        if name.endswith("#0") and "#" in name:
            base = name[:-2]
            n = 1
            while i + n < len(results) and results[i + n] == f"{base}#{n}":
                n += 1
            groups.append(f"{base}:{n}")
            i += n
        else:
            groups.append(name)
            i += 1
    return ", ".join(groups) + " = "


def _is_terminator(op: Operation) -> bool:
    opdef = SPELLINGS.get(op.name)
    return opdef is not None and "Terminator" in opdef.traits


def _is_empty_terminator(op: Operation, name: str) -> bool:
    # an implicit terminator is elided, unless a comment is attached to it
    return op.name == name and not op.operands and not op.attributes and not op.regions and not any(op.comments) and op.trailing_comment is None


# ---------------------------------------------------------------- format printers

# Each irregular format's printer is the function named after it (`_scf_reduce` prints
# SCF_REDUCE); the declarative formats' are generated (see the end of this module).
FormatPrinter = Callable[[Printer, Operation, OpDef, int, str], None]


def _module(p: Printer, op: Operation, d: OpDef, depth: int, head: str) -> None:
    name = op.attributes.get("sym_name")
    _need(name is None or isinstance(name, at.StringAttr))
    _need(len(op.regions) == 1 and len(op.regions[0].blocks) == 1 and not op.regions[0].blocks[0].arguments)
    text = f"{head}module"
    if isinstance(name, at.StringAttr):
        text += f" {_symbol_text(name.value)}"
    rest = dict_text(op.attributes, ("sym_name",))
    if rest:
        text += f" attributes {rest}"
    p.open_region(depth, text, op.regions[0], entry_label=False)


def _func(p: Printer, op: Operation, d: OpDef, depth: int, head: str) -> None:
    attrs = op.attributes
    name = attrs["sym_name"]
    fn = attrs["function_type"]
    assert isinstance(name, at.StringAttr) and isinstance(fn, at.TypeAttr)
    ftype = fn.value
    assert isinstance(ftype, ty.FunctionType)
    text = f"{head}func.func "
    vis = attrs.get("sym_visibility")
    _need(vis is None or (isinstance(vis, at.StringAttr) and vis.value in ("private", "public", "nested")))
    if isinstance(vis, at.StringAttr):
        text += f"{vis.value} "
    arg_attrs = _dict_list(attrs.get("arg_attrs"), len(ftype.inputs))
    res_attrs = _dict_list(attrs.get("res_attrs"), len(ftype.results))
    _need(len(op.regions) == 1)
    region = op.regions[0]
    body = bool(region.blocks)
    _need(not body or [a.type for a in region.blocks[0].arguments] == list(ftype.inputs))
    names = [f"{a.name}: " for a in region.blocks[0].arguments] if body else [""] * len(ftype.inputs)
    params = [f"{n}{type_text(t)}{_opt_dict(x)}" for n, t, x in zip(names, ftype.inputs, arg_attrs, strict=True)]
    text += f"{_symbol_text(name.value)}({', '.join(params)})"
    if ftype.results:
        if len(ftype.results) == 1 and not res_attrs[0]:
            text += f" -> {type_text(ftype.results[0])}"
        else:
            text += " -> (" + ", ".join(f"{type_text(t)}{_opt_dict(res_attrs[i])}" for i, t in enumerate(ftype.results)) + ")"
    rest = dict_text(attrs, ("sym_name", "function_type", "sym_visibility", "arg_attrs", "res_attrs"))
    if rest:
        text += f" attributes {rest}"
    if not body:
        p.emit(depth, text)
        return
    p.open_region(depth, text, region, entry_label=False)


def _dict_list(attr: Attribute | None, n: int) -> list[dict[str, Attribute]]:
    if attr is None:
        return [{} for _ in range(n)]
    # the custom form can only carry one non-empty-somewhere dictionary per argument
    _need(isinstance(attr, at.ArrayAttr) and len(attr.elements) == n and all(isinstance(e, at.DictAttr) for e in attr.elements))
    assert isinstance(attr, at.ArrayAttr)
    dicts = [dict(e.entries) for e in attr.elements if isinstance(e, at.DictAttr)]
    _need(any(dicts))
    return dicts


def _terminator(p: Printer, op: Operation, d: OpDef, depth: int, head: str) -> None:
    attrs = dict_text(op.attributes)
    text = f"{head}{op.name}"
    values = f" {', '.join(op.operands)} : {_types(op.operand_types)}" if op.operands else ""
    if d.option("attr_dict_last") and values:
        text += values + (f" {attrs}" if attrs else "")
    else:
        text += (f" {attrs}" if attrs else "") + values
    p.emit(depth, text)


def _constant(p: Printer, op: Operation, d: OpDef, depth: int, head: str) -> None:
    value = op.attributes["value"]
    _need(
        isinstance(value, at.IntegerAttr | at.FloatAttr | at.StringAttr) and value.type is not None
        or isinstance(value, at.BoolAttr | at.DenseAttr)
    )
    _need(not op.regions and len(op.result_types) == 1)
    text = attr_text(value)
    p.emit(depth, f"{head}{op.name}{_opt_dict(op.attributes, ('value',))} {text}")


def _flags(op: Operation) -> tuple[str, tuple[str, ...]]:
    """`fastmath<...>` / `overflow<...>` clauses and the attributes they print."""
    out = ""
    printed: list[str] = []
    for key, kw in (("fastmath", "fastmath"), ("overflowFlags", "overflow")):
        flag = op.attributes.get(key)
        if isinstance(flag, at.EnumAttr) and flag.dialect == "arith" and flag.name == kw and _BARE.match(flag.value.replace(",", "_")):
            out += f" {kw}<{flag.value}>"
            printed.append(key)
    return out, tuple(printed)


# ------------------------------------------------------------------ ktdp


def _ssa_names(names: Sequence[str], num_dims: int) -> Callable[[af.AffineExpr], str]:
    def namer(leaf: af.AffineExpr) -> str:
        if isinstance(leaf, af.Dim):
            return names[leaf.position]
        assert isinstance(leaf, af.Symbol)
        return f"symbol({names[num_dims + leaf.position]})"

    return namer


def _subscripts(amap: af.AffineMap, operands: Sequence[str]) -> str:
    namer = _ssa_names(operands, amap.num_dims)
    return ", ".join(format_expr(e, namer) for e in amap.results)


def _access_tile(p: Printer, op: Operation, d: OpDef, depth: int, head: str) -> None:
    _, n_idx, n_sym = _segments(op, 3)
    base, indices, symbols = _split(op.operands, [1, n_idx, n_sym])
    base_map = op.attributes["base_map"]
    _need(isinstance(base_map, at.AffineMapAttr) and base_map.value.num_dims + base_map.value.num_symbols == n_idx)
    assert isinstance(base_map, at.AffineMapAttr)
    _need(len(set(indices)) == len(indices))
    syms = f" symbols({', '.join(symbols)})" if symbols else ""
    p.emit(
        depth,
        f"{head}{op.name} {base[0]}[{_subscripts(base_map.value, indices)}]{syms}"
        f"{_opt_dict(op.attributes, ('base_map', 'operandSegmentSizes'))} : {type_text(op.operand_types[0])} -> {type_text(op.result_types[0])}",
    )


def _indirect_tile(p: Printer, op: Operation, d: OpDef, depth: int, head: str) -> None:
    _, n_views, n_captured, n_sym = _segments(op, 4)
    base, views, captured, symbols = _split(op.operands, [1, n_views, n_captured, n_sym])
    variables = [a.name for a in op.regions[0].blocks[0].arguments]
    names = variables + captured
    kinds = op.attributes["per_dim_subscript_kinds"]
    maps = op.attributes["per_dim_subscript_maps"]
    _need(isinstance(kinds, at.DenseArrayAttr) and kinds.element_type == ty.I1 and isinstance(maps, at.ArrayAttr))
    assert isinstance(kinds, at.DenseArrayAttr) and isinstance(maps, at.ArrayAttr)
    _need(sum(1 for k in kinds.values if k) == n_views and len(op.regions) == 1)
    view_iter = iter(views)
    subs = []
    for indirect, m in zip(kinds.values, maps.elements, strict=True):
        assert isinstance(m, at.AffineMapAttr)
        text = _subscripts(m.value, names)
        subs.append(f"ind({next(view_iter)}[{text}])" if indirect else f"({text})")
    syms = f" symbols({', '.join(symbols)})" if symbols else ""
    elided = ("per_dim_subscript_kinds", "per_dim_subscript_maps", "operandSegmentSizes")
    types = _types(op.operand_types[: 1 + n_views])
    _need(op.operand_types[1 + n_views :] == [ty.INDEX] * (len(op.operands) - 1 - n_views))
    p.emit(
        depth,
        f"{head}{op.name} intermediate_variables({', '.join(variables)}) {base[0]}[{', '.join(subs)}]{syms}"
        f"{_opt_dict(op.attributes, elided)} : {types} -> {type_text(op.result_types[0])}",
    )


def _runtime_arg_extract(p: Printer, op: Operation, d: OpDef, depth: int, head: str) -> None:
    kind = op.attributes["kind"]
    _need(isinstance(kind, at.EnumAttr) and kind.dialect == "ktdp" and kind.name == "runtime_arg_kind")
    _need(isinstance(kind, at.EnumAttr) and kind.value in ("value", "granularity", "upperbound"))
    # `!ktdp.access_tile<index>` here reads back as the stripped runtime_arg spelling
    _need(not (isinstance(op.operand_types[0], ty.AccessTileType) and op.operand_types[0].shape == ()))
    assert isinstance(kind, at.EnumAttr)
    p.emit(
        depth,
        f"{head}{op.name} {kind.value} from {op.operands[0]} : {type_text(op.operand_types[0])}{_opt_dict(op.attributes, ('kind',))} -> {type_text(op.result_types[0])}",
    )


def _produce(p: Printer, op: Operation, d: OpDef, depth: int, head: str) -> None:
    group = op.attributes["producer_tiles_per_group"]
    _need(_is_set(group) and len(op.regions) == 1 and len(op.result_types) == 1)
    text = f"{head}{op.name} producer_tiles_per_group = {attr_text(group)}{_opt_dict(op.attributes, ('producer_tiles_per_group',))} -> {type_text(op.result_types[0])}"
    p.open_region(depth, text, op.regions[0], entry_label=True)


def _inter_tile_head(op: Operation, head: str) -> tuple[str, list[str]]:
    a = op.attributes
    _need(_is_set(a.get("consumer_tiles_per_group")))
    _need("producer_dependency_per_consumer" not in a or _is_set(a["producer_dependency_per_consumer"]))
    text = f"{head}{op.name}({op.operands[0]}) consumer_tiles_per_group = {attr_text(a['consumer_tiles_per_group'])}"
    elided = ["consumer_tiles_per_group"]
    dep = a.get("producer_dependency_per_consumer")
    if dep is not None:
        text += f", producer_dependency_per_consumer = {attr_text(dep)}"
        elided.append("producer_dependency_per_consumer")
    return text, elided


def _identity(op: Operation) -> str:
    ids = op.operands[1:]
    if not ids:
        return "identity()"
    return f"identity({', '.join(ids)} : {_types(op.operand_types[1:])})"


_COLLECTIVE_DIMS = ("gather_dimensions", "scatter_dimensions", "split_dimensions", "concat_dimensions")


def _consume(p: Printer, op: Operation, d: OpDef, depth: int, head: str) -> None:
    """CONSUME, REDUCE and COLLECTIVE: an identity clause where the op has identity values
    or a combiner region (a reduce always has), the dimensions of a collective."""
    text, elided = _inter_tile_head(op, head)
    for key in _COLLECTIVE_DIMS if d.format == "COLLECTIVE" else ():
        if key in op.attributes:
            text += f", {key} = {_int_array(op.attributes[key])}"
            elided.append(key)
    if op.regions or len(op.operands) > 1:
        text += f", {_identity(op)}"
    text += f"{_opt_dict(op.attributes, elided)} : {type_text(op.operand_types[0])} -> {_types(op.result_types)}"
    if op.regions:
        p.open_region(depth, text, op.regions[0], entry_label=True)
    else:
        p.emit(depth, text)


_reduce = _collective = _consume


# ------------------------------------------------------------------ scf


def _ends_in_terminator(region: Region) -> bool:
    """The parser adds an implicit terminator to a region whose last block does not end in
    one (and gives `{}` a block): such a region cannot be printed in custom form as is."""
    if not region.blocks or not region.blocks[-1].operations:
        return False
    last = OPS.get(region.blocks[-1].operations[-1].name)
    return last is not None and "Terminator" in last.traits


def _arrow(types: Sequence[Type]) -> str:
    return f" -> ({_types(types)})" if types else ""


def _for(p: Printer, op: Operation, d: OpDef, depth: int, head: str) -> None:
    _need(len(op.regions) == 1 and op.regions[0].blocks and len(op.operands) >= 3)
    region = op.regions[0]
    args = region.blocks[0].arguments
    _need(len(args) == len(op.operands) - 2 and len(set(op.operand_types[:3])) == 1 and args[0].type == op.operand_types[0])
    _need([a.type for a in args[1:]] == op.operand_types[3:] == op.result_types)
    lb, ub, step, *inits = op.operands
    _need(inits or _ends_in_terminator(region))
    text = f"{head}scf.for {args[0].name} = {lb} to {ub} step {step}"
    if inits:
        bindings = ", ".join(f"{a.name} = {v}" for a, v in zip(args[1:], inits, strict=True))
        text += f" iter_args({bindings}) -> ({_types(op.result_types)})"
    if args[0].type != ty.INDEX:
        text += f" : {type_text(args[0].type)}"
    p.open_region(depth, text, region, entry_label=False, tail=_opt_dict(op.attributes), elide=None if inits else Scf.yield_)


def _if(p: Printer, op: Operation, d: OpDef, depth: int, head: str) -> None:
    then, other = op.regions[0], op.regions[1] if len(op.regions) > 1 else Region()
    elide = None if op.result_types else Scf.yield_
    # then: always a block; neither region's entry block has arguments (none are printed);
    # without results, both end in a terminator (the parser adds an implicit one)
    _need(then.blocks and all(not r.blocks[0].arguments for r in (then, other) if r.blocks))
    _need(elide is None or all(_ends_in_terminator(r) for r in (then, other) if r.blocks))
    p.emit(depth, f"{head}scf.if {op.operands[0]}{_arrow(op.result_types)} {{")
    p.region(then, depth, False, elide)
    if other.blocks:
        p.emit(depth, "} else {")
        p.region(other, depth, False, elide)
    p.emit(depth, "}" + _opt_dict(op.attributes))


def _while(p: Printer, op: Operation, d: OpDef, depth: int, head: str) -> None:
    before, after = op.regions
    # the before-region's arguments are the header's bindings, typed as the inputs
    _need(before.blocks and after.blocks and [a.type for a in before.blocks[0].arguments] == op.operand_types)
    bindings = ", ".join(f"{a.name} = {v}" for a, v in zip(before.blocks[0].arguments, op.operands, strict=True))
    fn = ty.FunctionType(inputs=tuple(op.operand_types), results=tuple(op.result_types))
    p.emit(depth, f"{head}scf.while ({bindings}) : {function_type_text(fn)} {{")
    p.region(before, depth, False)
    p.emit(depth, "} do {")
    p.region(after, depth, True)
    p.emit(depth, "}" + _opt_dict(op.attributes))


def _parallel(p: Printer, op: Operation, d: OpDef, depth: int, head: str) -> None:
    n_lb, n_ub, n_st, n_init = _segments(op, 4)
    lbs, ubs, steps, inits = _split(op.operands, [n_lb, n_ub, n_st, n_init])
    region = op.regions[0]
    _need(_ends_in_terminator(region))
    ivs_args = region.blocks[0].arguments
    _need(n_lb == n_ub == n_st == len(ivs_args) and all(a.type == ty.INDEX for a in ivs_args))
    _need(op.operand_types[: 3 * n_lb] == [ty.INDEX] * (3 * n_lb) and op.operand_types[3 * n_lb :] == op.result_types)
    ivs = ", ".join(a.name for a in region.blocks[0].arguments)
    text = f"{head}scf.parallel ({ivs}) = ({', '.join(lbs)}) to ({', '.join(ubs)}) step ({', '.join(steps)})"
    if inits:
        text += f" init ({', '.join(inits)})"
    text += _arrow(op.result_types)
    p.open_region(depth, text, region, entry_label=False, tail=_opt_dict(op.attributes, ("operandSegmentSizes",)), elide=Scf.reduce)


def _scf_reduce(p: Printer, op: Operation, d: OpDef, depth: int, head: str) -> None:
    if not op.operands:
        _need(not op.regions)
        p.emit(depth, f"{head}scf.reduce{_opt_dict(op.attributes)}")
        return
    _need(op.regions and all(r.blocks for r in op.regions))
    p.emit(depth, f"{head}scf.reduce({', '.join(op.operands)} : {_types(op.operand_types)}) {{")
    for i, region in enumerate(op.regions):
        if i > 0:
            p.emit(depth, "}, {")
        p.region(region, depth, True)
    p.emit(depth, "}" + _opt_dict(op.attributes))


def _forall(p: Printer, op: Operation, d: OpDef, depth: int, head: str) -> None:
    n_lb, n_ub, n_st, n_out = _segments(op, 4)
    d_lb, d_ub, d_st, outs = _split(op.operands, [n_lb, n_ub, n_st, n_out])
    a = op.attributes
    region = op.regions[0]
    _need(_ends_in_terminator(region))
    args = region.blocks[0].arguments
    _need(len(args) >= n_out)
    ivs = args[: len(args) - n_out]
    # one static entry per induction variable, index-typed, and outputs typed as results
    lb, ub, step = (a.get(k) for k in ("staticLowerBound", "staticUpperBound", "staticStep"))
    _need(all(isinstance(x, at.DenseArrayAttr) and _is_i64_array(x) and len(x.values) == len(ivs) for x in (lb, ub, step)))
    _need(all(v.type == ty.INDEX for v in ivs) and op.operand_types[: n_lb + n_ub + n_st] == [ty.INDEX] * (n_lb + n_ub + n_st))
    _need([v.type for v in args[len(ivs):]] == op.operand_types[n_lb + n_ub + n_st :] == op.result_types)
    assert isinstance(lb, at.DenseArrayAttr) and isinstance(step, at.DenseArrayAttr)
    lbs, ubs, steps = (_static_list(x, dynamic)[1:-1] for x, dynamic in ((lb, d_lb), (ub, d_ub), (step, d_st)))
    text = f"{head}scf.forall ({', '.join(v.name for v in ivs)})"
    if all(v == 0 for v in lb.values) and all(v == 1 for v in step.values):
        text += f" in ({ubs})"
    else:
        text += f" = ({lbs}) to ({ubs}) step ({steps})"
    if outs:
        shared = ", ".join(f"{b.name} = {v}" for b, v in zip(args[len(ivs):], outs, strict=True))
        text += f" shared_outs({shared})"
    text += _arrow(op.result_types)
    elided = ("staticLowerBound", "staticUpperBound", "staticStep", "operandSegmentSizes")
    p.open_region(depth, text, region, entry_label=False, tail=_opt_dict(a, elided))


def _execute_region(p: Printer, op: Operation, d: OpDef, depth: int, head: str) -> None:
    """EXECUTE_REGION, and IN_PARALLEL (no results)."""
    _need(op.regions[0].blocks and not op.regions[0].blocks[0].arguments)
    p.open_region(depth, f"{head}{op.name}{_arrow(op.result_types)}", op.regions[0], entry_label=False, tail=_opt_dict(op.attributes))


_in_parallel = _execute_region


# ------------------------------------------------------------------ affine


def _affine_apply(p: Printer, op: Operation, d: OpDef, depth: int, head: str) -> None:
    amap = op.attributes["map"]
    resolved = p.attr_aliases.get(amap.name) if isinstance(amap, at.AttrAliasRef) else amap
    _need(isinstance(resolved, at.AffineMapAttr))
    assert isinstance(resolved, at.AffineMapAttr)
    n_dims = resolved.value.num_dims
    _need(n_dims + resolved.value.num_symbols == len(op.operands))
    dims, syms = op.operands[:n_dims], op.operands[n_dims:]
    sym_text = f"[{', '.join(syms)}]" if syms else ""
    p.emit(depth, f"{head}{op.name} {attr_text(amap)}({', '.join(dims)}){sym_text}{_opt_dict(op.attributes, ('map',))}")


# ------------------------------------------------------------------ linalg


def _ins_outs(op: Operation, ins_optional: bool = False) -> str:
    n_in, n_out = _segments(op, 2)
    ins, outs = op.operands[:n_in], op.operands[n_in : n_in + n_out]
    in_t, out_t = op.operand_types[:n_in], op.operand_types[n_in : n_in + n_out]
    # MLIR cannot read an empty `ins()`/`outs()` back and the custom forms need `outs`
    # (named ops `ins` too): an op without them takes the generic form
    _need(outs and (ins or ins_optional))
    parts = [f"ins({', '.join(ins)} : {_types(in_t)})"] if ins else []
    parts.append(f"outs({', '.join(outs)} : {_types(out_t)})")
    return " ".join(parts)


def _results_arrow(op: Operation) -> str:
    return _arrow(op.result_types) if len(op.result_types) > 1 else f" -> {_types(op.result_types)}" if op.result_types else ""


def _linalg_named(p: Printer, op: Operation, d: OpDef, depth: int, head: str) -> None:
    maps = op.attributes.get("indexing_maps")
    _need(maps is None or isinstance(maps, at.ArrayAttr))
    _need(not op.regions)
    maps_text = f" indexing_maps = {attr_text(maps)}" if maps is not None else ""
    p.emit(
        depth,
        f"{head}{op.name}{maps_text}{_opt_dict(op.attributes, ('indexing_maps', 'operandSegmentSizes'))} {_ins_outs(op)}{_results_arrow(op)}",
    )


_GENERIC_TRAIT = ("indexing_maps", "iterator_types", "doc", "library_call")


def _linalg_generic(p: Printer, op: Operation, d: OpDef, depth: int, head: str) -> None:
    trait = {k: v for k, v in op.attributes.items() if k in _GENERIC_TRAIT}
    extra = {k: v for k, v in op.attributes.items() if k not in _GENERIC_TRAIT and k != "operandSegmentSizes"}
    text = f"{head}{op.name} {dict_text(trait, always=True)} {_ins_outs(op, ins_optional=True)}"
    if extra:
        text += f" attrs = {dict_text(extra, always=True)}"
    p.open_region(depth, text, op.regions[0], entry_label=True, tail=_results_arrow(op))


_SHORT_BODY_ATTRS = frozenset({"fastmath", "overflowFlags", "predicate"})


def _short_body(op: Operation, n_ins: int, init_first: bool) -> str | None:
    """The op name (with its flags, `arith.addf {fastmath = #arith.fastmath<fast>}`, as MLIR 22
    prints them) if the body is exactly what `{ op }` builds, else None. MLIR 22 gives
    the body the inputs and the init; map applies the op to the inputs, reduce to
    (init, inputs...)."""
    if len(op.regions) != 1 or len(op.regions[0].blocks) != 1:
        return None
    block = op.regions[0].blocks[0]
    if len(block.operations) != 2 or block.label is not None:
        return None
    inner, yield_op = block.operations
    n_out = len(block.arguments) - n_ins
    expected = [short_body_input(i) for i in range(n_ins)] + [short_body_init(i) for i in range(n_out)]
    names = [a.name for a in block.arguments]
    operands = [names[-1], *names[:-1]] if init_first and names else names[:n_ins]
    inner_def = OPS.get(inner.name)
    if (
        names != expected
        or inner_def is None
        or inner_def.format not in SHORT_BODY_FORMATS
        or inner.operands != operands
        or not set(inner.attributes) <= _SHORT_BODY_ATTRS
        or inner.results != [SHORT_BODY_RESULT]
        or yield_op.name != Linalg.yield_
        or yield_op.operands != [SHORT_BODY_RESULT]
        or yield_op.attributes
    ):
        return None
    return inner.name + _opt_dict(inner.attributes)


def _explicit_body(p: Printer, op: Operation, depth: int, text: str) -> None:
    region = op.regions[0]
    params = ", ".join(f"{a.name}: {type_text(a.type)}" for a in region.blocks[0].arguments)
    p.open_region(depth, f"{text} ({params})", region, entry_label=False)


def _linalg_map(p: Printer, op: Operation, d: OpDef, depth: int, head: str) -> None:
    """LINALG_MAP, and LINALG_REDUCE (with its dimensions)."""
    n_in, _ = _segments(op)
    reduce = d.format == "LINALG_REDUCE"
    tail = _opt_dict(op.attributes, ("operandSegmentSizes",))
    if reduce:
        dims = _int_array(op.attributes["dimensions"])
        tail = f" dimensions = {dims}{_opt_dict(op.attributes, ('operandSegmentSizes', 'dimensions'))}"
    short = _short_body(op, n_in, init_first=reduce)
    if short is not None:
        p.emit(depth, f"{head}{op.name} {{ {short} }} {_ins_outs(op)}{tail}")
        return
    _explicit_body(p, op, depth, f"{head}{op.name} {_ins_outs(op)}{tail}")


_linalg_reduce = _linalg_map


def _linalg_dims(p: Printer, op: Operation, d: OpDef, depth: int, head: str) -> None:
    key = "permutation" if op.name == Linalg.transpose else "dimensions"
    values = _int_array(op.attributes[key])
    p.emit(depth, f"{head}{op.name} {_ins_outs(op)} {key} = {values}{_opt_dict(op.attributes, ('operandSegmentSizes', key))}")


# ------------------------------------------------------------------ tensor, memref


def _reassociation(attr: Attribute) -> str:
    _need(isinstance(attr, at.ArrayAttr))
    assert isinstance(attr, at.ArrayAttr)
    groups = []
    for g in attr.elements:
        _need(isinstance(g, at.ArrayAttr) and all(isinstance(e, at.IntegerAttr) and e.type == ty.I64 for e in g.elements))
        assert isinstance(g, at.ArrayAttr)
        groups.append("[" + ", ".join(str(e.value) for e in g.elements if isinstance(e, at.IntegerAttr)) + "]")
    return "[" + ", ".join(groups) + "]"


def _pad(p: Printer, op: Operation, d: OpDef, depth: int, head: str) -> None:
    keys = ("static_low", "static_high")
    segs = _segments(op)
    low, high = _split(op.operands[1:], segs[1:])
    a = op.attributes
    _need("nofold" not in a or isinstance(a["nofold"], at.UnitAttr))
    nofold = " nofold" if "nofold" in a else ""
    text = f"{head}{op.name} {op.operands[0]}{nofold} low{_static_list(a.get(keys[0]), low)} high{_static_list(a.get(keys[1]), high)}"
    tail = f"{_opt_dict(a, (*keys, 'nofold', 'operandSegmentSizes'))} : {type_text(op.operand_types[0])} to {type_text(op.result_types[0])}"
    p.open_region(depth, text, op.regions[0], entry_label=True, tail=tail)


def _generate(p: Printer, op: Operation, d: OpDef, depth: int, head: str) -> None:
    extents = f" {', '.join(op.operands)}" if op.operands else ""
    tail = f"{_opt_dict(op.attributes)} : {type_text(op.result_types[0])}"
    p.open_region(depth, f"{head}{op.name}{extents}", op.regions[0], entry_label=True, tail=tail)


# ------------------------------------------------------------------ declarative formats
# The printers of the formats described in ktir.dialects.formats. Each description is
# turned, once, into the Python source of its printer (as ODS generates C++), with ODS's
# spacing rules applied when the code is made: `printer_source(FORMAT)` shows it.


def _space_before(text: str, after_punct: bool) -> bool:
    """ODS: whether a literal is preceded by a space, given what came before."""
    if len(text) != 1 and text != "->":
        return True
    if after_punct:
        return text[0] not in ">)}],"
    return text[0] not in "<>(){}[],"


class _Spacing:
    """ODS's spacing state: (may emit a space, last was punctuation)."""

    def __init__(self, space: bool = True, punct: bool = False) -> None:
        self.space, self.punct = space, punct

    def literal(self, text: str) -> str:
        """The literal with the space before it, if any."""
        if not text:
            self.space = False
            return ""
        sep = " " if self.space and _space_before(text, self.punct) else ""
        self.space = len(text) != 1 or text not in "<({["
        self.punct = text[0] != "_" and not text[0].isalpha()
        return sep + text

    def element(self) -> str:
        sep = " " if self.space else ""
        self.space, self.punct = True, False
        return sep


def _spelled_attr_text(kind: str, attr: Attribute, d: OpDef) -> str:
    if kind == "symbol":
        _need(isinstance(attr, at.SymbolRefAttr) and not attr.nested)
        return attr_text(attr)
    _need(isinstance(attr, at.IntegerAttr) and attr.type == ty.I64 and attr.value >= 0)
    assert isinstance(attr, at.IntegerAttr)
    if kind == "int":
        return str(attr.value)
    predicates = d.option("predicates")
    assert isinstance(predicates, tuple)
    _need(attr.value < len(predicates))
    return str(predicates[attr.value])


def _select_types_text(condition: Type, result: Type) -> str:
    """`T`, or `C, T` when the condition is not a plain i1."""
    if condition is ty.I1 or condition == ty.I1:
        return type_text(result)
    return f"{type_text(condition)}, {type_text(result)}"


class _PrinterSource(asm.Source):
    def __init__(self, fmt: asm.Format) -> None:
        super().__init__()
        self.fmt = fmt
        self.groups = {name: j for j, (name, _) in enumerate(fmt.operands)}
        self.starts: list[str] = []

    def operand_slice(self, name: str) -> str:
        j = self.groups[name]
        return f"{self.starts[j]}:{self.starts[j + 1]}"

    def first_type(self, name: str) -> str:
        if name in self.groups:
            return f"otypes[{self.starts[self.groups[name]]}]"
        return "rtypes[0]"

    def layout(self) -> None:
        """Operand groups: their start indices, checked against the counts the format allows."""
        fmt = self.fmt
        n_groups = len(fmt.operands)
        if fmt.segments:
            self.add(f"sizes = _segments(op, {n_groups})")
            for j, (_, mult) in enumerate(fmt.operands):
                if not mult:
                    self.add(f"_need(sizes[{j}] == 1)")
                elif mult == "+":
                    self.add(f"_need(sizes[{j}] >= 1)")
            self.add("s0 = 0")
            for j in range(n_groups):
                self.add(f"s{j + 1} = s{j} + sizes[{j}]")
            self.starts = [f"s{j}" for j in range(n_groups + 1)]
            return
        fixed = sum(1 for _, mult in fmt.operands if not mult)
        variadic = next((j for j, (_, mult) in enumerate(fmt.operands) if mult), None)
        if variadic is None:
            self.add(f"_need(len(operands) == {fixed})")
            self.starts = [str(j) for j in range(n_groups + 1)]
            return
        self.add(f"k = len(operands) - {fixed}")
        self.add(f"_need(k >= {1 if fmt.operands[variadic][1] == '+' else 0})")
        self.starts = [str(j) if j <= variadic else f"{j - 1} + k" for j in range(n_groups + 1)]

    def results(self) -> None:
        """The result count the format allows (no result, one, at most one, one or more, any)."""
        mult = self.fmt.results[0][1] if self.fmt.results else None
        check = {None: "not rtypes", "": "len(rtypes) == 1", "?": "len(rtypes) <= 1", "+": "rtypes"}.get(mult)
        if check is not None:
            self.add(f"_need({check})")

    def type_checks(self) -> None:
        """The types the syntax does not write must be the ones it implies. Compared as
        lists: list equality tries identity first (the parser gives derived types as the
        very objects they derive from, and pydantic's == is slow)."""
        for name, rule in self.fmt.type_rules.items():
            expected = asm.derived_code(rule, self.first_type(rule[1]))
            if name not in self.groups:
                self.add(f"_need(not rtypes or rtypes == [{expected}])")
            elif self.fmt.is_variadic(name):
                self.add(f"ts = otypes[{self.operand_slice(name)}]")
                self.add(f"_need(ts == [{expected}] * len(ts))")
            else:
                start = self.starts[self.groups[name]]
                self.add(f"_need(otypes[{start}:{start} + 1] == [{expected}])")

    def text(self, elements: tuple[asm.Element, ...], spacing: _Spacing) -> None:
        """Code that appends the elements' text to `out`; literals are folded into the
        constant printed before the next element."""
        pending = ""
        for i, e in enumerate(elements):
            before = (spacing.space, spacing.punct)
            if isinstance(e, asm.Literal):
                pending += spacing.literal(e.text)
                continue
            if _may_be_empty(e):
                self.flush(pending)
                pending = ""
            if isinstance(e, asm.AttrDict):
                self.add("out += _opt_dict(op.attributes, elided)")
            elif isinstance(e, asm.Group):
                self.group(e, spacing)
            else:
                self.element(e, pending + spacing.element())
                pending = ""
            nxt = elements[i + 1] if i + 1 < len(elements) else None
            # printed or not, what follows an optional element must be spaced the same
            if (
                _may_be_empty(e)
                and isinstance(nxt, asm.Literal)
                and _Spacing(spacing.space, spacing.punct).literal(nxt.text) != _Spacing(*before).literal(nxt.text)
            ):
                raise asm.FormatError(f"{self.fmt.name}: the spacing after an optional element would depend on whether it is printed")
        self.flush(pending)

    def flush(self, literal: str) -> None:
        if literal:
            self.add(f"out += {literal!r}")

    def append(self, prefix: str, code: str) -> None:
        self.add(f"out += {prefix!r} + {code}" if prefix else f"out += {code}")

    def group(self, e: asm.Group, spacing: _Spacing) -> None:
        if e.anchor in self.groups:
            self.add(f"if {self.starts[self.groups[e.anchor]]} != {self.starts[self.groups[e.anchor] + 1]}:")
        else:
            self.add(f"if {e.anchor!r} in op.attributes:")
        self.depth += 1
        self.text(e.elements, spacing)
        self.depth -= 1

    def element(self, e: asm.Element, sep: str) -> None:
        if isinstance(e, asm.OperandRef):
            if not e.variadic:
                self.append(sep, f"operands[{self.starts[self.groups[e.name]]}]")
            elif e.nonempty:
                self.append(sep, f"', '.join(operands[{self.operand_slice(e.name)}])")
            else:
                self.add(f"vs = operands[{self.operand_slice(e.name)}]")
                self.add(f"if vs: out += {sep!r} + ', '.join(vs)")
        elif isinstance(e, asm.TypeRef):
            if e.name not in self.groups:
                code = "_types(rtypes)" if e.variadic else "type_text(rtypes[0])"
            elif e.variadic:
                code = f"_types(otypes[{self.operand_slice(e.name)}])"
            else:
                code = f"type_text(otypes[{self.starts[self.groups[e.name]]}])"
            if e.variadic and not e.nonempty:
                self.add(f"text = {code}")
                self.add(f"if text: out += {sep!r} + text")
            else:
                self.append(sep, code)
        elif isinstance(e, asm.AttrRef):
            self.append(sep, f"_spelled_attr_text({e.kind!r}, op.attributes[{e.name!r}], d)")
        elif isinstance(e, asm.FunctionalType):
            self.append(sep, "function_type_text(ty.FunctionType(inputs=tuple(otypes), results=tuple(rtypes)))")
        else:
            assert isinstance(e, asm.Custom)
            args = e.args
            if e.name == "ArithFlags":
                self.add(f"if flags: out += {sep!r} + flags")
            elif e.name == "DynamicIndexList":
                self.append(sep, f"_static_list(op.attributes.get({args[1]!r}), operands[{self.operand_slice(args[0])}])")
            elif e.name == "Reassociation":
                self.append(sep, f"_reassociation(op.attributes[{args[0]!r}])")
            else:
                self.append(sep, f"_select_types_text({self.first_type(args[0])}, {self.first_type(args[1])})")


def _may_be_empty(e: asm.Element) -> bool:
    if isinstance(e, asm.Group | asm.AttrDict):
        return True
    if isinstance(e, asm.Custom):
        return e.name == "ArithFlags"
    if isinstance(e, asm.OperandRef | asm.TypeRef):
        return e.variadic and not e.nonempty
    return False


def _printer_source(fmt: asm.Format) -> str:
    src = _PrinterSource(fmt)
    src.lines.append(f"def print_{fmt.name}(p, op, d, depth, head):")
    src.add("operands = op.operands")
    src.add("otypes = op.operand_types")
    src.add("rtypes = op.result_types")
    src.layout()
    src.results()
    src.type_checks()
    elided = (*fmt.spelled, "operandSegmentSizes") if fmt.segments else fmt.spelled
    if fmt.has_flags:
        src.add("flags, flagged = _flags(op)")
        src.add("flags = flags.strip()")
        src.add(f"elided = ({''.join(f'{x!r}, ' for x in elided)}*flagged,)")
    else:
        src.add(f"elided = ({''.join(f'{x!r}, ' for x in elided)})")
    src.add("out = head + op.name")
    src.text(fmt.elements, _Spacing())
    src.add("p.emit(depth, out)")
    return "\n".join(src.lines) + "\n"


def printer_source(name: str) -> str:
    """The generated printer of the declarative format `name` (for reading)."""
    return _printer_source(asm.formats()[name])


def _declarative(fmt: asm.Format) -> FormatPrinter:
    namespace = asm.load_generated(_printer_source(fmt), "printer", fmt.name, globals())
    printer: FormatPrinter = namespace[f"print_{fmt.name}"]
    return printer


_FORMATS: dict[str, FormatPrinter] = {name: globals()[f"_{name.lower()}"] for name in asm.HAND_WRITTEN}
for _fmt in asm.formats().values():
    _FORMATS[_fmt.name] = _declarative(_fmt)


def print_module(module: Module) -> str:
    """Canonical text of `module`; parsing it gives back an equal module."""
    return Printer().module(module)


def print_op(op: Operation) -> str:
    p = Printer()
    p.operation(op, 0)
    return "\n".join(p.lines)
