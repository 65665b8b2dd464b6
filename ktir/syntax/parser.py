"""Text -> typed AST. `parse(text)` reads it with the production parser (ktir.syntax.
fastparse); the LALR grammar (ktir.lark, normative) reports the errors and is the tests'
oracle (`parse(text, fast=False)`).

Each grammar rule has one callback below (`_Builder`), which both parsers call with the
rule's children; op rules build generic `Operation`s, so the custom and generic forms of
an op give the same AST (MLIR semantics: the custom syntax is sugar). Op names come from
the registry.
"""

from __future__ import annotations

import functools
import gc
import re
import struct
from collections.abc import Callable
from importlib import resources
from operator import itemgetter
from typing import Any, NamedTuple

from ktir.dialects.names import Ktdp, Linalg, Scf
from ktir.dialects.registry import SPELLINGS
from ktir.ir import affine as af
from ktir.ir import attributes as at
from ktir.ir import types as ty
from ktir.ir.asm import type_text
from ktir.ir.attributes import constant_type as _constant_type
from ktir.ir.base import Attribute, Type, trusted
from ktir.ir.floats import float_from_bits
from ktir.ir.named_affine import AffineName as _AffName
from ktir.ir.named_affine import UndeclaredAffineName, collect_names, resolve_names, ssa_map
from ktir.ir.operation import (
    Block,
    BlockArgument,
    Module,
    Operation,
    Region,
    trusted_argument,
    trusted_block,
    trusted_operation,
    trusted_region,
)
from ktir.ir.types import KDYNAMIC
from ktir.ir.types import i1_like as i1_like  # read by the generated callbacks (derived i1 types)
from ktir.syntax import assembly as asm
from ktir.syntax.comments import attach as attach_comments
from ktir.syntax.comments import blank_lines
from ktir.syntax.diagnostics import Diagnostic, ParseError
from ktir.syntax.fastparse import parse_fast
from ktir.syntax.lalr import Driver, UnexpectedToken, load_tables
from ktir.syntax.lexer import LexError, Tok
from ktir.syntax.limits import (
    INT64_MAX,
    MAX_AFFINE_DEPTH,
    MAX_INT_WIDTH,
    MAX_NESTING,
    MAX_RANK,
    check_module_nesting,
    literal_digits_error,
    text_nesting,
)
from ktir.syntax.mlir_generic import NAMED_OP, default_indexing_maps, from_mlir, memory_space_from_string

# Block-argument names of the short `{ arith.addf }` bodies of linalg.map/reduce.
SHORT_BODY_RESULT = "%__0"


def short_body_input(i: int) -> str:
    return f"%__in{i}"


def short_body_init(i: int) -> str:
    return f"%__init{i}"


class _NoMemorySpace(Attribute):
    """Legacy `#ktdp.spyre_memory_space<unspecified>`: dropped where it appears."""


NO_MEMORY_SPACE = _NoMemorySpace()


class C(NamedTuple):
    """A tagged clause, so builders find optional pieces by name, not by position."""

    tag: str
    value: Any


def _err(tok: Tok | None, message: str) -> ParseError:
    if tok is None:
        return ParseError(message, 0, 0)
    return ParseError(message, tok.line, tok.column)


def _int(tok: Tok, text: str | None = None, base: int = 10) -> int:
    """The integer literal of `tok` (or the digits `text` taken from it), within the
    bound of ktir.syntax.limits (int() of a long literal is slow, then refused)."""
    digits = tok.value if text is None else text
    problem = literal_digits_error(digits)
    if problem is not None:
        raise _err(tok, problem)
    return int(digits, base)


def _int64(tok: Tok, value: int, what: str) -> int:
    if value > INT64_MAX:
        raise _err(tok, f"{what} {value} does not fit in 64 bits (at most {INT64_MAX})")
    return value


_FIRST = itemgetter(0)
_SECOND = itemgetter(1)
_THIRD = itemgetter(2)


def _clauses(children: list[Any]) -> dict[str, Any]:
    return {c.tag: c.value for c in children if isinstance(c, C)}


def _values(toks: list[Tok]) -> list[str]:
    return [t.value for t in toks]


class BadEscape(ValueError):
    pass


def _finite(tok: Tok) -> float:
    """A decimal float literal; one that overflows to infinity is an error (MLIR has no
    decimal spelling of inf: it is written as a hexadecimal bit pattern)."""
    value = float(tok.value)
    if value in (float("inf"), float("-inf")):
        raise _err(tok, f"floating-point literal {tok.value} is out of range (write inf or nan as a hexadecimal bit pattern)")
    return value


# MLIR's escapes: `\\n`, `\\t`, `\\"`, `\\\\`, or two hex digits; anything else after a `\\` is an error
_ESCAPE = re.compile(r'\\(?:([nt"\\])|([0-9a-fA-F]{2})|(.?))', re.DOTALL)
_SIMPLE_ESCAPES = {"n": "\n", "t": "\t", '"': '"', "\\": "\\"}


def _unescape(m: re.Match[str]) -> str:
    if m.group(1):
        return _SIMPLE_ESCAPES[m.group(1)]
    if m.group(2):
        return chr(int(m.group(2), 16))
    raise BadEscape(f"invalid escape '\\{m.group(3)}' in string (use \\n, \\t, \\\", \\\\ or two hex digits)")


def _unquote(s: str) -> str:
    """The contents of a quoted string with MLIR escapes (\\n, \\t, \\", \\\\, \\XX hex)."""
    body = s[1:-1]
    return _ESCAPE.sub(_unescape, body) if "\\" in body else body


def _unq(tok: Tok) -> str:
    """Unquote a STRING token, reporting a bad escape at the token."""
    try:
        return _unquote(tok.value)
    except BadEscape as e:
        raise _err(tok, str(e)) from None


def _dense_i64(values: list[int]) -> at.DenseArrayAttr:
    # static sizes, offsets, strides, dimensions: int64 (the generic form reads them back as array<i64: ...>)
    return _dense_array(ty.I64, _dense_array_ints(ty.I64, tuple(values)))


def _aff_name(tok: Tok, is_symbol: bool) -> _AffName:
    # built without validation: one per name in every subscript and map (hot)
    line, column, _ = tok.location()
    return trusted(_AffName, {"name": tok.value, "is_symbol": is_symbol, "line": line, "column": column})


def _segments(*sizes: int) -> at.DenseArrayAttr:
    return _dense_array(ty.I32, sizes)


# Attributes are frozen: the few distinct small ones a parse builds over and over are
# validated once (pydantic validation is a large share of a parse).
@functools.lru_cache(maxsize=4096)
def _dense_array(element_type: Type, values: tuple[int, ...]) -> at.DenseArrayAttr:
    return at.DenseArrayAttr(element_type=element_type, values=values)


@functools.lru_cache(maxsize=4096)
def _integer_attr(value: int, type_: Type | None) -> at.IntegerAttr:
    return at.IntegerAttr(value=value, type=type_)


@functools.lru_cache(maxsize=4096)
def _alias_ref(name: str) -> at.AttrAliasRef:
    return at.AttrAliasRef(name=name)


def _mixed(entries: list[Any]) -> tuple[list[int], list[str]]:
    """Split a `[0, %o]` list into static values (kDynamic for SSA) and dynamic operands."""
    static: list[int] = []
    dynamic: list[str] = []
    for e in entries:
        if isinstance(e, Tok):
            static.append(KDYNAMIC)
            dynamic.append(e.value)
        else:
            static.append(e)
    return static, dynamic


def _no_unspecified_space(attrs: list[Any]) -> None:
    if any(a is NO_MEMORY_SPACE for a in attrs):
        raise ParseError(
            "the legacy '#ktdp.spyre_memory_space<unspecified>' means no memory space: it can stand only in a"
            " memref type or an attribute dictionary (where it is dropped)",
            0,
            0,
        )


def _dense_array_ints(element: ty.IntegerType, values: tuple[Any, ...]) -> tuple[Any, ...]:
    """Integer elements within the width of `element` (MLIR: "integer constant out of
    range"); i1 elements as booleans, as MLIR holds and prints them (`-1` is `true`)."""
    width = element.width
    low = 0 if element.signedness == "unsigned" else -(1 << (width - 1))
    high = (1 << (width - 1)) if element.signedness == "signed" else (1 << width)
    for v in values:
        if not isinstance(v, int) or isinstance(v, bool):
            continue
        if not low <= v < high:
            raise ParseError(f"integer constant {v} out of range of {type_text(element)}", 0, 0)
    if width == 1:
        return tuple(bool(v) for v in values)
    return values


# -2**63 is written `-9223372036854775808`: the literal is negated after it is read
_AFFINE_FOLD_MAX = INT64_MAX + 1


def _folded(expr: af.AffineExpr) -> af.AffineExpr:
    """`expr` unless a constant folded into its top (`c`, `x + c`, `x * c`) left int64."""
    const = expr if isinstance(expr, af.Const) else expr.rhs if isinstance(expr, af.Binary) else None
    if isinstance(const, af.Const) and not -_AFFINE_FOLD_MAX <= const.value <= _AFFINE_FOLD_MAX:
        raise ParseError(f"affine constant {const.value} does not fit in 64 bits", 0, 0)
    return expr


def _bounded(expr: af.AffineExpr) -> af.AffineExpr:
    """`expr` as stored (its constants folded), within the bounds of ktir.syntax.limits."""
    problem = af.bound_problem(expr, MAX_AFFINE_DEPTH, INT64_MAX)
    if problem is not None:
        raise ParseError(problem, 0, 0)
    return expr


def _ssa_subscript(expr: af.AffineExpr) -> af.AffineExpr:
    """A subscript over SSA values: bounded, and naming only `%values` (a bare name is
    no value, and the generic form, which lists the values as operands, cannot write it)."""
    _bounded(expr)
    leaves: list[_AffName] = []
    collect_names(expr, leaves)
    for leaf in leaves:
        if not leaf.name.startswith("%"):
            raise ParseError(f"expected an SSA value (%name) in a subscript, found '{leaf.name}'", leaf.line, leaf.column)
    return expr


def _resolve(expr: af.AffineExpr, names: dict[Any, af.AffineExpr]) -> af.AffineExpr:
    _bounded(expr)  # before the (recursive) resolution; constraints check again once built
    try:
        return resolve_names(expr, names)
    except UndeclaredAffineName as e:
        raise ParseError(str(e), e.line, e.column) from None


class _Builder:
    """Inline LALR callbacks, one per grammar rule or alias."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.warnings: list[Diagnostic] = []
        # type text -> Type for this file (see PARSED_TYPE in the grammar)
        self.types: dict[str, Type | None] = {}
        self.in_type_parse = False
        # aliases must be defined before use, as in MLIR
        self.attr_aliases: set[str] = set()
        self.alias_values: dict[str, Attribute] = {}
        self.type_aliases: set[str] = set()
        self.alias_lines: list[tuple[int, int, str]] = []  # (line, column, `#name` or `!name`), in written order
        self.comments: list[tuple[int, int, str]] = []
        # regions whose entry block was written with a `^label`: header-supplied block
        # arguments may not be declared there too (MLIR: "invalid block name in region
        # with named arguments"). Keyed by id() but holding the region: a region dropped during
        # the parse (e.g. the standard body of a named op read in generic form) must not free
        # its id for a later region to inherit the flag
        self.labelled_entries: dict[int, Region] = {}

    def _warn(self, tok: Tok | None, message: str) -> None:
        line, col = (tok.line, tok.column) if tok is not None else (0, 0)
        self.warnings.append(Diagnostic("warning", "legacy", message, line, col))

    # ------------------------------------------------------------ top level

    def start(self, children: list[Any]) -> Module:
        operations: list[Operation] = []
        attr_aliases: dict[str, Attribute] = {}
        type_aliases: dict[str, Type] = {}
        for item in children:
            if isinstance(item, Operation):
                operations.append(item)
            elif item.tag == "attr_alias":
                attr_aliases[item.value[0]] = item.value[1]
            else:
                type_aliases[item.value[0]] = item.value[1]
        fields = {
            "attr_aliases": attr_aliases,
            "type_aliases": type_aliases,
            "operations": operations,
            "filename": None,
            "warnings": self.warnings,
            "alias_comments": {},
            "alias_order": [key for _, _, key in self.alias_lines],
            "trailing_comments": [],
        }
        return trusted(Module, fields)  # one per parse, from fields built here

    def attr_alias_def(self, c: list[Any]) -> C:
        _no_unspecified_space(c[1:])
        name = c[0].value[1:]
        if name in self.attr_aliases:
            raise _err(c[0], f"redefinition of attribute alias '#{name}'")
        self.attr_aliases.add(name)
        self.alias_values[name] = c[1]
        self.alias_lines.append((c[0].line, c[0].column, "#" + name))
        return C("attr_alias", (name, c[1]))

    def type_alias_def(self, c: list[Any]) -> C:
        name = c[0].value[1:]
        if name in self.type_aliases:
            raise _err(c[0], f"redefinition of type alias '!{name}'")
        self.type_aliases.add(name)
        self.alias_lines.append((c[0].line, c[0].column, "!" + name))
        return C("type_alias", (name, c[1]))

    def operation(self, c: list[Any]) -> Operation:
        if len(c) == 1:
            # results may go unnamed (MLIR allows it); they cannot be used
            op: Operation = c[0]
            return op
        groups, op = c[0], c[1]
        first = groups[0][0]
        # a group `%x:N` is expanded only once N is known to match the op: the count is
        # user text and may be huge
        given = sum(1 if n is None else n for _, n in groups)
        if given != len(op.result_types):
            raise ParseError(
                f"'{op.name}' defines {len(op.result_types)} result(s) but {given} name(s) are given",
                first.line,
                first.column,
            )
        names: list[str] = []
        for tok, n in groups:
            names.extend([tok.value] if n is None else [f"{tok.value}#{i}" for i in range(n)])
        # set as trusted_operation sets fields (pydantic's __setattr__ is slow on the hot path)
        fields = op.__dict__
        fields["results"] = names
        fields["loc"] = first.location()
        op.__pydantic_fields_set__.update(("results", "loc"))
        return op

    def result_def(self, c: list[Any]) -> tuple[Tok, int | None]:
        """`%x` (count None) or `%x:N`; expanded by `operation`."""
        tok = c[0]
        if "#" in tok.value:
            raise _err(tok, f"result name '{tok.value}' may not contain '#'")
        if len(c) == 1:
            return tok, None
        count = _int(c[1])
        if count < 1:
            raise _err(c[1], "a result group must have at least one result")
        return tok, count

    # ------------------------------------------------------------ shared pieces

    def attr_dict(self, c: list[tuple[str, Attribute]]) -> C:
        return C("attrs", {k: v for k, v in c if v is not NO_MEMORY_SPACE})

    def attr_entry(self, c: list[Any]) -> tuple[str, Attribute]:
        name = c[0].value
        return (_unq(c[0]) if name.startswith('"') else name), c[1]

    def unit_entry(self, c: list[Any]) -> tuple[str, Attribute]:
        return self.attr_entry([c[0], at.UnitAttr()])

    def region(self, c: list[Any]) -> Region:
        ops = [x for x in c if isinstance(x, Operation)]
        blocks = [x for x in c if isinstance(x, Block)]
        if ops:
            blocks.insert(0, trusted_block(ops, [], None, None))
        labelled = bool(blocks) and not ops
        if blocks and blocks[0].label is not None:
            # the entry block's label carries no meaning (nothing may branch to it)
            blocks[0].label = None
        region = trusted_region(blocks)  # `{}` is a region with no blocks, as in MLIR
        if labelled:
            self.labelled_entries[id(region)] = region
        return region

    def _header_args(self, region: Region, args: list[BlockArgument], tok: Tok | None, message: str) -> None:
        """`args`, which the op's header declares, as the arguments of the region's entry
        block: the region may not open with a block label of its own (`message`)."""
        if args and self.labelled_entries.get(id(region)) is region:
            loc = region.blocks[0].loc
            if loc is not None:
                raise ParseError(message, loc.line, loc.column)
            raise _err(tok, message)
        _entry(region).arguments = args

    def block(self, c: list[Any]) -> Block:
        label = c[0]
        args: list[BlockArgument] = []
        ops: list[Operation] = []
        for x in c[1:]:
            if isinstance(x, C):
                args = x.value
            else:
                ops.append(x)
        return trusted_block(ops, args, label.value, label.location())

    def block_param_list(self, c: list[Any]) -> C:
        return C("params", c[0].value if c else [])

    def block_param(self, c: list[Any]) -> BlockArgument:
        return trusted_argument(c[0].value, c[1], c[0].location())

    def binding(self, c: list[Tok]) -> tuple[str, str]:
        return c[0].value, c[1].value

    def results_arrow(self, c: list[Any]) -> C:
        return C("results", _plain(c[0]))

    def results_types(self, c: list[Any]) -> C:
        return C("results", c[0].value if isinstance(c[0], C) else [c[0]])

    # result type lists keep per-result attributes (func.func); other users drop them
    def single_result_type(self, c: list[Type]) -> list[tuple[Type, dict[str, Attribute]]]:
        return [(c[0], {})]

    def result_type(self, c: list[Any]) -> tuple[Type, dict[str, Attribute]]:
        return c[0], (c[1].value if len(c) > 1 else {})

    # ------------------------------------------------------------ types

    def index_type(self, c: list[Tok]) -> Type:
        return ty.INDEX

    def integer_type(self, c: list[Tok]) -> Type:
        tok = c[0]
        text = tok.value
        digits = text[1:] if text[0] == "i" else text[2:]
        if len(digits) > 8 or int(digits) > MAX_INT_WIDTH:
            raise _err(tok, f"integer type '{text}' is wider than {MAX_INT_WIDTH} bits")
        if text[0] == "s":
            return ty.IntegerType(width=int(digits), signedness="signed")
        if text[0] == "u":
            return ty.IntegerType(width=int(digits), signedness="unsigned")
        return ty.IntegerType(width=int(digits))

    def float_type(self, c: list[Tok]) -> Type:
        return ty.FloatType(kind=c[0].value)

    def none_type(self, c: list[Any]) -> Type:
        return ty.NoneType()

    def shape_prefix(self, c: list[Tok]) -> Any:
        text = "".join(c[0].value.split())
        if text == "*x":
            return "unranked"
        dims = text[:-1].split("x")
        if len(dims) > MAX_RANK:
            raise _err(c[0], f"a shape of rank {len(dims)}: at most {MAX_RANK} dimensions")
        return tuple(None if d == "?" else _int64(c[0], _int(c[0], d), "dimension") for d in dims)

    def _shape(self, c: list[Any]) -> tuple[Any, list[Any]]:
        if c and (isinstance(c[0], tuple) or c[0] == "unranked"):
            return c[0], c[1:]
        return (), c

    def tensor_type(self, c: list[Any]) -> Type:
        shape, rest = self._shape(c)
        if shape == "unranked":
            return ty.UnrankedTensorType(element_type=rest[0])
        encoding = rest[1] if len(rest) > 1 else None
        return ty.TensorType(shape=shape, element_type=rest[0], encoding=encoding)

    def encoding(self, c: list[Attribute]) -> Attribute:
        _no_unspecified_space(c)
        return c[0]

    def memref_extras(self, c: list[Attribute]) -> list[Attribute]:
        return [a for a in c if a is not NO_MEMORY_SPACE]

    def memref_type(self, c: list[Any]) -> Type:
        shape, rest = self._shape(c)
        extras: list[Attribute] = rest[1] if len(rest) > 1 else []
        if shape == "unranked":
            if len(extras) > 1:
                raise ParseError("an unranked memref has no layout", 0, 0)
            return ty.UnrankedMemRefType(element_type=rest[0], memory_space=extras[0] if extras else None)
        layout: Attribute | None = None
        space: Attribute | None = None
        if len(extras) == 2:
            layout, space = extras
        elif len(extras) == 1:
            extra = extras[0]
            if isinstance(extra, at.AttrAliasRef):  # `#map` names a layout or a memory space
                extra = self.alias_values.get(extra.name, extra)
            if isinstance(extra, at.StridedLayoutAttr | at.AffineMapAttr):
                layout = extras[0]
            else:
                space = extras[0]
        return ty.MemRefType(shape=shape, element_type=rest[0], layout=layout, memory_space=memory_space_from_string(space))

    def vector_type(self, c: list[Any]) -> Type:
        shape, rest = self._shape(c)
        if shape == "unranked" or any(d is None for d in shape):
            raise ParseError("vector dimensions must be static", 0, 0)
        return ty.VectorType(shape=shape, element_type=rest[0])

    def complex_type(self, c: list[Type]) -> Type:
        return ty.ComplexType(element_type=c[0])

    def tuple_type(self, c: list[Any]) -> Type:
        return ty.TupleType(types=tuple(c[0].value) if c else ())

    def access_tile_type(self, c: list[Any]) -> Type:
        kw = c[0]
        shape, rest = self._shape(c[1:])
        if kw.value == "!ktdp.tile":
            self._warn(kw, "legacy spelling '!ktdp.tile'; the canonical type is '!ktdp.access_tile'")
        return self._access_tile(kw, shape, rest[0])

    def _access_tile(self, tok: Tok | None, shape: Any, element: Type) -> Type:
        if shape == "unranked":
            raise _err(tok, "an access tile must be ranked")
        if element != ty.INDEX:
            raise _err(tok, "the element type of an access tile must be 'index'")
        return ty.AccessTileType(shape=shape)

    def short_access_tile(self, c: list[Any]) -> Type:
        lt = c[0]
        shape, rest = self._shape(c[1:-1])
        tile = self._access_tile(lt, shape, rest[0])
        dims = "x".join("?" if d is None else str(d) for d in tile.shape)  # type: ignore[attr-defined]
        canon = f"!ktdp.access_tile<{dims + 'x' if dims else ''}index>"
        self._warn(lt, f"short access tile type; the canonical spelling is '{canon}'")
        return tile

    def tile_future_type(self, c: list[Any]) -> Type:
        kw, body = c
        if body.tag == "legacy":
            self._warn(kw, "legacy tile_future form; the canonical form puts the partial types in parentheses: '!ktdp.tile_future<(T), groups = ...>'")
        return ty.TileFutureType(partial_types=tuple(body.value[0]), groups=body.value[1])

    def groupless_future_body(self, c: list[Any]) -> C:
        # `!ktdp.tile_future<T>`: the groups come from the op's `groups = ...` (legacy_groups);
        # a unit attribute stands in until then (the verifier rejects it anywhere else)
        return C("legacy", ([c[0]], at.UnitAttr()))

    def _with_groups(self, tok: Tok, t: Type, groups: Attribute) -> Type:
        """ktir-cpu's oldest form: the op's `groups = S` completes its `!ktdp.tile_future<T>`."""
        self._warn(tok, "legacy 'groups = ...' on the op; the canonical form carries the groups in the future's type: "
                        "'!ktdp.tile_future<(T), groups = ...>'")
        if isinstance(t, ty.TileFutureType) and isinstance(t.groups, at.UnitAttr):
            return ty.TileFutureType(partial_types=t.partial_types, groups=groups)
        return t

    def future_body(self, c: list[Any]) -> C:
        return C("current", (c[0].value, c[1]))

    def legacy_future_body(self, c: list[Any]) -> C:
        return C("legacy", ([c[0]], c[1]))

    def short_tile_future(self, c: list[Any]) -> Type:
        lt = c[0]
        types = next(x for x in c if isinstance(x, C)).value
        groups = [x for x in c if isinstance(x, Attribute)][-1]
        self._warn(lt, "short tile_future type; the canonical spelling is '!ktdp.tile_future<(...), groups = ...>'")
        return ty.TileFutureType(partial_types=tuple(types), groups=groups)

    def runtime_arg_type(self, c: list[Any]) -> Type:
        kw, value_type, *params = c
        fields: dict[str, int] = {}
        for name, tok, value in params:
            if name not in ("granularity", "upperbound"):
                raise _err(tok, f"unknown runtime_arg parameter '{name}' (expected granularity or upperbound)")
            if value <= 0:
                raise _err(tok, f"runtime_arg {name} must be positive")
            fields[name] = value
        return ty.RuntimeArgType(value_type=value_type, **fields)

    def short_runtime_arg(self, c: list[Any]) -> Type:
        lt = c[0]
        t = self.runtime_arg_type([lt, *c[1:-1]])
        self._warn(lt, "short runtime_arg type; the canonical spelling is '!ktdp.runtime_arg<...>'")
        return t

    def runtime_arg_param(self, c: list[Tok]) -> tuple[str, Tok, int]:
        return c[0].value, c[0], _int64(c[1], _int(c[1]), "runtime_arg parameter")

    def dialect_type(self, c: list[Tok]) -> Type:
        text = c[0].value
        head, body = text.split("<", 1)
        dialect, name = head[1:].split(".", 1)
        return ty.DialectType(dialect=dialect, name=name, body=body[:-1])

    def parsed_type(self, c: list[Tok]) -> Type:
        t = self.types[c[0].value]
        assert t is not None
        return t

    def type_alias_ref(self, c: list[Tok]) -> Type:
        name = c[0].value[1:]
        if name not in self.type_aliases:
            raise _err(c[0], f"undefined type alias '!{name}' (aliases are defined at the top, before use)")
        return ty.TypeAliasRef(name=name)

    def function_type(self, c: list[Any]) -> ty.FunctionType:
        if len(c) == 1:
            return ty.FunctionType(inputs=(), results=tuple(_plain(c[0])))
        return ty.FunctionType(inputs=tuple(c[0].value), results=tuple(_plain(c[1])))

    # ------------------------------------------------------------ attributes

    def pos_int(self, c: list[Tok]) -> int:
        return _int(c[0])

    def neg_int(self, c: list[Tok]) -> int:
        return -_int(c[0])

    def pos_float(self, c: list[Tok]) -> float:
        return _finite(c[0])

    def neg_float(self, c: list[Tok]) -> float:
        return -_finite(c[0])

    def int_attr(self, c: list[Any]) -> Attribute:
        t = c[1] if len(c) > 1 else None
        if isinstance(t, ty.FloatType):
            try:
                return at.FloatAttr(value=float(c[0]), type=t)
            except OverflowError:
                raise _err(None, f"integer literal {c[0]} is too large for a floating-point value") from None
        try:
            return _integer_attr(c[0], t)
        except TypeError:  # a type that cannot be hashed: not kept
            return at.IntegerAttr(value=c[0], type=t)

    def float_attr(self, c: list[Any]) -> Attribute:
        return at.FloatAttr(value=c[0], type=c[1] if len(c) > 1 else None)

    def hex_attr(self, c: list[Any]) -> Attribute:
        bits = _int(c[0], base=16)
        t = c[1] if len(c) > 1 else None
        if isinstance(t, ty.FloatType):
            if bits >> t.width:
                raise _err(c[0], f"hexadecimal float {c[0].value} has more than the {t.width} bits of {t.kind}")
            return at.FloatAttr(value=_float_from_bits(bits, t), type=t, bits=bits)
        return at.IntegerAttr(value=bits, type=t)

    def bool_attr(self, c: list[Tok]) -> Attribute:
        return at.BoolAttr(value=c[0].value == "true")

    def string_attr(self, c: list[Any]) -> Attribute:
        return at.StringAttr(value=_unq(c[0]), type=c[1] if len(c) > 1 else None)

    def unit_attr(self, c: list[Any]) -> Attribute:
        return at.UnitAttr()

    def array_attr(self, c: list[Attribute]) -> Attribute:
        _no_unspecified_space(c)
        return trusted(at.ArrayAttr, {"elements": tuple(c)})

    def dict_attr(self, c: list[C]) -> Attribute:
        return at.DictAttr(entries=tuple(c[0].value.items()))

    def dense_attr(self, c: list[Any]) -> Attribute:
        t = c[-1]
        if len(c) == 1:
            return at.DenseAttr(type=t, values=())
        body = c[0]
        if isinstance(body, C):
            return at.DenseAttr(type=t, hex=body.value)
        element = getattr(t, "element_type", None)
        if isinstance(element, ty.FloatType):
            # MLIR reads a hex integer in a float literal as the element's bit pattern
            body = _hex_to_float(body, element)
        return at.DenseAttr(type=t, values=body)

    def dense_hex(self, c: list[Tok]) -> C:
        text = _unq(c[0])
        if not _HEX_BLOB.fullmatch(text):
            # MLIR: "expected string containing hex digits starting with `0x`"; a byte is two digits
            raise _err(c[0], "a quoted dense literal must be a hex blob: \"0x\" and bytes of two hex digits each")
        return C("hex", text)

    def dense_hex_int(self, c: list[Tok]) -> int:
        return _HexBits(_int(c[0], base=16))

    def dense_bool(self, c: list[Tok]) -> bool:
        return c[0].value == "true"

    def dense_list(self, c: list[Any]) -> tuple[Any, ...]:
        return tuple(c)

    def dense_resource_attr(self, c: list[Any]) -> Attribute:
        return at.DenseResourceAttr(handle=c[0].value, type=c[1])

    def dense_array_attr(self, c: list[Any]) -> Attribute:
        values = tuple(c[1]) if len(c) > 1 else ()
        element = c[0]
        if isinstance(element, ty.IntegerType) and values:
            values = _dense_array_ints(element, values)
        return at.DenseArrayAttr(element_type=element, values=values)

    def strided_attr(self, c: list[Any]) -> Attribute:
        offset = c[1].value if len(c) > 1 else 0
        return at.StridedLayoutAttr(strides=tuple(c[0]), offset=offset)

    def dynamic_stride(self, c: list[Any]) -> None:
        return None

    def memory_space_attr(self, c: list[Tok]) -> Attribute:
        kw, kind = c[0], c[1]
        legacy = kw.value == "#ktdp.spyre_memory_space"
        key = c[2].value if len(c) > 2 else None
        num = _int64(c[3], _int(c[3]), "ct_id") if len(c) > 3 else None
        if legacy:
            mapping = {"HBM": "global", "LX": "ct_local"}
            if kind.value == "unspecified" and key is None:
                self._warn(kw, f"legacy spelling '{kw.value}<unspecified>'; the canonical form omits the memory space")
                return NO_MEMORY_SPACE
            if kind.value == "L0":
                raise _err(
                    kind,
                    f"'{kw.value}<L0>' was dropped upstream and has no KTIR equivalent: use"
                    " '#ktdp.memory_space<ct_local>' for a tile's local memory",
                )
            if kind.value not in mapping:
                raise _err(kind, f"unknown spyre memory space '{kind.value}' (expected HBM or LX)")
            if key is not None and key != "core":
                raise _err(c[2], f"expected 'core', found '{key}'")
            space = mapping[kind.value]
            canon = f"#ktdp.memory_space<{space}" + (f", ct_id = {num}" if num is not None else "") + ">"
            self._warn(kw, f"legacy spelling '{kw.value}<{kind.value}>'; the canonical spelling is '{canon}'")
            return at.MemorySpaceAttr(kind=space, ct_id=num)  # type: ignore[arg-type]
        if kind.value not in ("global", "ct_local"):
            raise _err(kind, f"unknown memory space '{kind.value}' (expected global or ct_local)")
        if key is not None and key != "ct_id":
            raise _err(c[2], f"expected 'ct_id', found '{key}'")
        return at.MemorySpaceAttr(kind=kind.value, ct_id=num)

    def symbol_ref_attr(self, c: list[Tok]) -> Attribute:
        names = [_symbol_name(t) for t in c]
        return at.SymbolRefAttr(root=names[0], nested=tuple(names[1:]))

    def dialect_attr(self, c: list[Tok]) -> Attribute:
        text = c[0].value
        head, body = text.split("<", 1)
        dialect, name = head[1:].split(".", 1)
        inner = body[:-1]
        if inner.replace("_", "").isalnum() and inner[:1].isalpha():
            return at.EnumAttr(dialect=dialect, name=name, value=inner)
        return at.DialectAttr(dialect=dialect, name=name, body=inner)

    def attr_alias_ref(self, c: list[Tok]) -> Attribute:
        name = c[0].value[1:]
        if name not in self.attr_aliases:
            raise _err(c[0], f"undefined attribute alias '#{name}' (aliases are defined at the top, before use)")
        return _alias_ref(name)

    def type_attr(self, c: list[Type]) -> Attribute:
        return at.TypeAttr(value=c[0])

    # ------------------------------------------------------------ affine

    def aff_name(self, c: list[Tok]) -> af.AffineExpr:
        return _aff_name(c[0], False)

    def aff_symbol(self, c: list[Tok]) -> af.AffineExpr:
        return _aff_name(c[0], True)

    def aff_const(self, c: list[Tok]) -> af.AffineExpr:
        value = _int(c[0])
        if value > _AFFINE_FOLD_MAX:
            raise _err(c[0], f"affine constant {value} does not fit in 64 bits")
        return af.const(value)

    # constants fold as the expression is built: keep them int64-sized on the way (a
    # chain of products would otherwise grow without bound), exact at the end (_bounded);
    # aff_add, aff_sub and aff_mul are built from _AFFINE_BINARY below
    def aff_div(self, c: list[Any]) -> af.AffineExpr:
        return _folded(af.binary(c[1].value, c[0], c[2]))

    def aff_neg(self, c: list[af.AffineExpr]) -> af.AffineExpr:
        return _folded(af.mul(c[0], af.const(-1)))

    def aff_params(self, c: list[Any]) -> tuple[int, int, dict[str, af.AffineExpr]]:
        dims: list[Tok] = c[0]
        syms: list[Tok] = c[1].value if len(c) > 1 else []
        names: dict[str, af.AffineExpr] = {}
        for i, t in enumerate(dims):
            if t.value in names:
                raise _err(t, f"redefinition of affine identifier '{t.value}'")
            names[t.value] = af.dim(i)
        for i, t in enumerate(syms):
            if t.value in names:
                raise _err(t, f"redefinition of affine identifier '{t.value}'")
            names[t.value] = af.sym(i)
        return len(dims), len(syms), names

    def affine_map_attr(self, c: list[Any]) -> Attribute:
        nd, ns, names = c[0]
        results = tuple(_resolve(e, names) for e in c[1:])
        return at.AffineMapAttr(value=af.AffineMap(num_dims=nd, num_symbols=ns, results=results))

    def aff_constraint(self, c: list[Any]) -> tuple[af.AffineExpr, str, af.AffineExpr]:
        return c[0], c[1].value, c[2]

    def affine_set_attr(self, c: list[Any]) -> Attribute:
        nd, ns, names = c[0]
        cons = tuple(
            af.constraint(_resolve(lhs, names), op, _resolve(rhs, names)) for lhs, op, rhs in c[1:]
        )
        for con in cons:
            _bounded(con.expr)  # `lhs - rhs` may fold constants out of range
        return at.IntegerSetAttr(value=af.IntegerSet(num_dims=nd, num_symbols=ns, constraints=cons))

    def subscripts(self, c: list[af.AffineExpr]) -> C:
        for e in c:
            _ssa_subscript(e)
        return C("subscripts", c)

    # ------------------------------------------------------------ op helpers

    def _op(
        self,
        tok: Tok,
        operands: list[str] | None = None,
        operand_types: list[Type] | None = None,
        result_types: list[Type] | None = None,
        attributes: dict[str, Attribute] | None = None,
        regions: list[Region] | None = None,
    ) -> Operation:
        opdef = SPELLINGS[tok.value]
        for region in regions or []:
            _entry(region)  # custom forms always have a block, even when written `{}`
        # the parser builds well-formed fields itself: skip pydantic validation (hot path)
        return trusted_operation(
            opdef.name,
            operands or [],
            operand_types or [],
            [],
            result_types or [],
            attributes or {},
            None,
            regions or [],
            [],
            tok.location(),
        )

    # ------------------------------------------------------------ generic form

    def generic_op(self, c: list[Any]) -> Operation:
        name_tok: Tok = c[0]
        name = _unq(name_tok)
        cl = _clauses(c)
        fn: ty.FunctionType = c[-1]
        operands = _values(cl.get("values", []))
        if len(operands) != len(fn.inputs):
            raise _err(name_tok, f"'{name}' has {len(operands)} operand(s) but its type lists {len(fn.inputs)}")
        attrs: dict[str, Attribute] = dict(cl.get("attrs", {}))
        props: dict[str, Attribute] | None = cl.get("props")
        opdef = SPELLINGS.get(name)
        if opdef is not None:
            name = opdef.name
            if props is not None:
                # properties of a defined op are its inherent attributes (`<{}>`: none)
                attrs.update(props)
                props = None
        op = Operation(
            name=name,
            operands=operands,
            operand_types=list(fn.inputs),
            result_types=list(fn.results),
            attributes=attrs,
            properties=props,
            regions=cl.get("regions", []),
            successors=cl.get("succ", []),
            loc=name_tok.location(),
        )
        # what MLIR's generic print spells out (named-op bodies, defaults) folds back
        return op if opdef is None else from_mlir(op)

    def successors(self, c: list[Tok]) -> C:
        return C("succ", _values(c))

    # ------------------------------------------------------------ builtin, func

    def module_op(self, c: list[Any]) -> Operation:
        tok = c[0]
        cl = _clauses(c)
        attrs: dict[str, Attribute] = dict(cl.get("module_attrs", {}))
        sym = next((x for x in c[1:] if isinstance(x, Tok)), None)
        if sym is not None:
            attrs["sym_name"] = at.StringAttr(value=_symbol_name(sym))
        return self._op(tok, attributes=attrs, regions=[c[-1]])

    def func_op(self, c: list[Any]) -> Operation:
        tok = c[0]
        cl = _clauses(c)
        sym = next(x for x in c[1:] if isinstance(x, Tok) and x.type == "SYMBOL_REF")
        params: list[tuple[str | None, Type, dict[str, Attribute]]] = cl.get("params", [])
        results: list[tuple[Type, dict[str, Attribute]]] = cl.get("func_results", [])
        # a function header is read once per function, often the whole of a small file: its
        # pieces are built without validation, and gathered with map (no generator frames)
        inputs = tuple(map(_SECOND, params))
        function_type = trusted(ty.FunctionType, {"inputs": inputs, "results": tuple(map(_FIRST, results))})
        attrs: dict[str, Attribute] = {
            "sym_name": trusted(at.StringAttr, {"value": _symbol_name(sym), "type": None}),
            "function_type": trusted(at.TypeAttr, {"value": function_type}),
        }
        if "visibility" in cl:
            attrs["sym_visibility"] = at.StringAttr(value=cl["visibility"])
        if any(map(_THIRD, params)):
            attrs["arg_attrs"] = at.ArrayAttr(elements=tuple(at.DictAttr(entries=tuple(p[2].items())) for p in params))
        if any(map(_SECOND, results)):
            attrs["res_attrs"] = at.ArrayAttr(elements=tuple(at.DictAttr(entries=tuple(r[1].items())) for r in results))
        attrs.update(cl.get("func_attrs", {}))
        region = c[-1] if isinstance(c[-1], Region) else None
        declaration = region is None
        if region is None:
            region = Region()  # a declaration: argument names, if any, are not kept
        else:
            names = list(map(_FIRST, params))
            if None in names:
                raise _err(tok, "a function with a body must name every argument ('%name: type')")
            args = list(map(trusted_argument, names, inputs))
            self._header_args(region, args, tok, "the entry block of a function takes its arguments from the signature; it has no label")
        op = self._op(tok, attributes=attrs, regions=[region])
        if declaration:
            op.regions[0].blocks = []  # a declaration has an empty body region
        return op

    def named_param(self, c: list[Any]) -> tuple[str, Type, dict[str, Attribute]]:
        return c[0].value, c[1], (c[2].value if len(c) > 2 else {})

    def anonymous_param(self, c: list[Any]) -> tuple[None, Type, dict[str, Attribute]]:
        return None, c[0], (c[1].value if len(c) > 1 else {})

    def terminator_op(self, c: list[Any]) -> Operation:
        tok = c[0]
        attrs: dict[str, Attribute] = {}
        values: list[Tok] = []
        types: list[Type] = []
        for x in c[1:]:
            if x.tag == "attrs" or x.tag == "trailing":
                attrs.update(x.value)
            elif x.tag == "values":
                values = x.value
            elif x.tag == "types":
                types = x.value
        if len(values) != len(types):
            raise _err(tok, f"{len(values)} value(s) but {len(types)} type(s)")
        return self._op(tok, _values(values), types, [], attrs)

    # ------------------------------------------------------------ arith, math

    def constant_op(self, c: list[Any]) -> Operation:
        tok, value = c[0], c[-1]
        attrs = dict(c[1].value) if len(c) > 2 else {}
        # an untyped literal is i64 / f64, as in MLIR; store the type so text round-trips
        if isinstance(value, at.IntegerAttr) and value.type is None:
            value = at.IntegerAttr(value=value.value, type=ty.I64)
        elif isinstance(value, at.FloatAttr) and value.type is None:
            value = at.FloatAttr(value=value.value, type=ty.F64, bits=value.bits)
        attrs["value"] = value
        return self._op(tok, result_types=[constant_type(value)], attributes=attrs)

    def op_flags(self, c: list[Tok]) -> C:
        kind = c[0].value
        flags = ",".join(t.value for t in c[1:])
        key = "fastmath" if kind == "fastmath" else "overflowFlags"
        return C("flag", (key, at.EnumAttr(dialect="arith", name=kind, value=flags)))

    # ------------------------------------------------------------ ktdp

    def access_tile_op(self, c: list[Any]) -> Operation:
        tok, base = c[0], c[1]
        cl = _clauses(c)
        sm = ssa_map(cl.get("subscripts", []))
        symbols: list[str] = cl.get("symbols", [])
        attrs = dict(cl.get("attrs", {}))
        attrs["base_map"] = at.AffineMapAttr(value=sm.map)
        attrs["operandSegmentSizes"] = _segments(1, len(sm.operands), len(symbols))
        operands = [base.value, *sm.operands, *symbols]
        base_t, result_t = c[-2], c[-1]
        return self._op(tok, operands, [base_t] + [ty.INDEX] * (len(operands) - 1), [result_t], attrs)

    def indirect_dim(self, c: list[Any]) -> C:
        view = c[0]
        exprs = c[1].value if len(c) > 1 else []
        return C("indirect", (view.value, exprs))

    def direct_dim(self, c: list[af.AffineExpr]) -> C:
        return C("direct", _ssa_subscript(c[0]))

    def indirect_tile_op(self, c: list[Any]) -> Operation:
        tok = c[0]
        variables: list[str] = c[1].value
        base = c[2]
        dims = [x for x in c[3:] if isinstance(x, C) and x.tag in ("direct", "indirect")]
        cl = _clauses(c)
        symbols: list[str] = cl.get("symbols", [])
        types: list[Type] = cl["types"]
        result_t: Type = c[-1]
        all_exprs: list[af.AffineExpr] = []
        for d in dims:
            all_exprs.extend([d.value] if d.tag == "direct" else d.value[1])
        captured = [n for n in ssa_map(all_exprs, variables).operands if n not in variables]
        kinds: list[bool] = []
        maps: list[Attribute] = []
        views: list[str] = []
        for d in dims:
            exprs = [d.value] if d.tag == "direct" else d.value[1]
            sm = ssa_map(exprs, variables + captured)
            kinds.append(d.tag == "indirect")
            maps.append(at.AffineMapAttr(value=sm.map))
            if d.tag == "indirect":
                views.append(d.value[0])
        if len(types) != 1 + len(views):
            raise _err(tok, f"expected {1 + len(views)} type(s) (base and index views), found {len(types)}")
        attrs = dict(cl.get("attrs", {}))
        attrs["per_dim_subscript_kinds"] = at.DenseArrayAttr(element_type=ty.I1, values=tuple(kinds))
        attrs["per_dim_subscript_maps"] = at.ArrayAttr(elements=tuple(maps))
        attrs["operandSegmentSizes"] = _segments(1, len(views), len(captured), len(symbols))
        operands = [base.value, *views, *captured, *symbols]
        operand_types = [*types, *([ty.INDEX] * (len(captured) + len(symbols)))]
        args = [BlockArgument(name=v, type=ty.INDEX) for v in variables]
        region = Region(blocks=[Block(arguments=args, operations=[Operation(name=Ktdp.region_terminator)])])
        return self._op(tok, operands, operand_types, [result_t], attrs, [region])

    def runtime_arg_extract_op(self, c: list[Any]) -> Operation:
        tok, kind, val = c[0], c[1], c[2]
        if kind.value not in ("value", "granularity", "upperbound"):
            raise _err(kind, f"unknown runtime_arg field '{kind.value}' (expected value, granularity or upperbound)")
        cl = _clauses(c)
        attrs = dict(cl.get("attrs", {}))
        attrs["kind"] = at.EnumAttr(dialect="ktdp", name="runtime_arg_kind", value=kind.value)
        arg_t: Type = c[3]
        if isinstance(arg_t, ty.AccessTileType) and arg_t.shape == ():
            # upstream prints the runtime_arg stripped: `<index>` here is !ktdp.runtime_arg<index>
            arg_t = ty.RuntimeArgType(value_type=ty.INDEX)
        return self._op(tok, [val.value], [arg_t], [c[-1]], attrs)

    def legacy_future_type(self, c: list[Type]) -> C:
        return C("legacy_future", c[1])  # warned about at the op's keyword (types carry no position)

    def produce_op(self, c: list[Any]) -> Operation:
        tok, group_set = c[0], c[1]
        cl = _clauses(c)
        attrs = dict(cl.get("attrs", {}))
        attrs["producer_tiles_per_group"] = group_set
        if "legacy_future" in cl:
            self._warn(tok, "legacy 'T -> !ktdp.tile_future<...>' result form; the input type is implied by the partial types")
        future = cl["future"] if "future" in cl else cl["legacy_future"]
        if "legacy_groups" in cl:
            future = self._with_groups(tok, future, cl["legacy_groups"])
        return self._op(tok, result_types=[future], attributes=attrs, regions=[c[-1]])

    def _inter_tile(self, c: list[Any]) -> Operation:
        tok, future, group_set = c[0], c[1], c[2]
        cl = _clauses(c)
        attrs = dict(cl.get("attrs", {}))
        attrs["consumer_tiles_per_group"] = group_set
        if "dependency" in cl:
            attrs["producer_dependency_per_consumer"] = cl["dependency"]
        for x in c:
            if isinstance(x, C) and x.tag == "dims":
                attrs[x.value[0]] = _dense_i64(x.value[1])
        ids, id_types = cl.get("identity", ([], []))
        if len(ids) != len(id_types):
            raise _err(tok, f"{len(ids)} identity value(s) but {len(id_types)} type(s)")
        future_t = [x for x in c if isinstance(x, Type)][0]
        if "legacy_groups" in cl:
            future_t = self._with_groups(tok, future_t, cl["legacy_groups"])
        regions = [c[-1]] if isinstance(c[-1], Region) else []
        return self._op(tok, [future.value, *ids], [future_t, *id_types], list(cl["types"]), attrs, regions)

    consume_op = reduce_op = collective_op = _inter_tile

    def collective_dims(self, c: list[Any]) -> C:
        return C("dims", (c[0].value.value, c[1]))

    # ------------------------------------------------------------ scf

    def _implicit_yield(self, region: Region, tok: Tok, terminator: str = Scf.yield_) -> Region:
        _entry(region)
        block = region.blocks[-1]
        last = block.operations[-1] if block.operations else None
        last_def = SPELLINGS.get(last.name) if last is not None else None
        if last_def is not None and "Terminator" in last_def.traits:
            return region  # an explicit terminator (possibly the wrong one: the verifier says so)
        if last is None or last.name != terminator:
            block.operations.append(Operation(name=terminator))  # implicit: no location
        return region

    def iter_args(self, c: list[Any]) -> C:
        return C("iter_args", (c[:-1], _plain(c[-1])))

    def for_op(self, c: list[Any]) -> Operation:
        tok, iv, lb, ub, step = c[0], c[1], c[2], c[3], c[4]
        cl = _clauses(c)
        region: Region = next(x for x in c if isinstance(x, Region))
        bindings, result_types = cl.get("iter_args", ([], []))
        if len(bindings) != len(result_types):
            raise _err(tok, f"{len(bindings)} iter_args but {len(result_types)} result type(s)")
        iv_t = cl.get("iv_type", ty.INDEX)
        args = [BlockArgument(name=iv.value, type=iv_t)]
        args += [BlockArgument(name=name, type=t) for (name, _), t in zip(bindings, result_types, strict=True)]
        self._header_args(region, args, tok, "the scf.for body takes its arguments from the loop header; its entry block has no label")
        if not bindings:
            self._implicit_yield(region, tok)
        operands = [lb.value, ub.value, step.value, *(init for _, init in bindings)]
        return self._op(tok, operands, [iv_t] * 3 + list(result_types), list(result_types), dict(cl.get("attrs", {})), [region])

    def if_op(self, c: list[Any]) -> Operation:
        tok, cond = c[0], c[1]
        cl = _clauses(c)
        then = next(x for x in c if isinstance(x, Region))
        results = cl.get("results", [])
        other = cl.get("else", Region())
        if not results:
            self._implicit_yield(then, tok)
            if "else" in cl:
                self._implicit_yield(other, tok)
        op = self._op(tok, [cond.value], [ty.I1], list(results), dict(cl.get("attrs", {})), [then, other])
        if "else" not in cl:
            op.regions[1].blocks = []  # no else: an empty region
        return op

    def while_op(self, c: list[Any]) -> Operation:
        tok = c[0]
        bindings = [x for x in c if isinstance(x, tuple) and not isinstance(x, C)]
        fn: ty.FunctionType = next(x for x in c if isinstance(x, ty.FunctionType))
        before, after = [x for x in c if isinstance(x, Region)]
        cl = _clauses(c)
        if len(bindings) != len(fn.inputs):
            raise _err(tok, f"{len(bindings)} initial value(s) but {len(fn.inputs)} input type(s)")
        args = [BlockArgument(name=n, type=t) for (n, _), t in zip(bindings, fn.inputs, strict=True)]
        self._header_args(before, args, tok, "the scf.while before-region takes its arguments from the header; its entry block has no label")
        return self._op(tok, [v for _, v in bindings], list(fn.inputs), list(fn.results), dict(cl.get("attrs", {})), [before, after])

    def parallel_op(self, c: list[Any]) -> Operation:
        tok = c[0]
        ivs, lbs, ubs, steps = (_values(x.value) for x in c[1:5])
        if not (len(ivs) == len(lbs) == len(ubs) == len(steps)):
            raise _err(tok, "scf.parallel needs one lower bound, upper bound and step per induction variable")
        cl = _clauses(c)
        inits: list[str] = cl.get("init", [])
        results = list(cl.get("results", []))
        if len(inits) != len(results):
            raise _err(tok, f"{len(inits)} init value(s) but {len(results)} result type(s)")
        region = next(x for x in c if isinstance(x, Region))
        args = [BlockArgument(name=v, type=ty.INDEX) for v in ivs]
        self._header_args(region, args, tok, "the scf.parallel body takes its arguments from the header; its entry block has no label")
        self._implicit_yield(region, tok, Scf.reduce)
        n = len(ivs)
        attrs = dict(cl.get("attrs", {}))
        attrs["operandSegmentSizes"] = _segments(n, n, n, len(inits))
        return self._op(tok, [*lbs, *ubs, *steps, *inits], [ty.INDEX] * (3 * n) + results, results, attrs, [region])

    def reduce_operands(self, c: list[Any]) -> C:
        return C("reduce", (_values(c[0].value), list(c[1].value), list(c[2:])))

    def scf_reduce_op(self, c: list[Any]) -> Operation:
        cl = _clauses(c)
        vals, types, regions = cl.get("reduce", ([], [], []))
        if len(vals) != len(types):
            raise _err(c[0], f"{len(vals)} value(s) but {len(types)} type(s)")
        return self._op(c[0], vals, types, [], dict(cl.get("attrs", {})), regions)

    def forall_in(self, c: list[Any]) -> C:
        return C("bounds", ([0] * len(c), c, [1] * len(c)))

    def forall_range(self, c: list[Any]) -> C:
        return C("bounds", (c[0], c[1], c[2]))

    def forall_op(self, c: list[Any]) -> Operation:
        tok = c[0]
        ivs = _values(c[1].value)
        cl = _clauses(c)
        lbs, ubs, steps = cl["bounds"]
        if not (len(ivs) == len(lbs) == len(ubs) == len(steps)):
            raise _err(tok, "scf.forall needs one bound and step per induction variable")
        outs: list[tuple[str, str]] = cl.get("shared_outs", [])
        results = list(cl.get("results", []))
        if len(outs) != len(results):
            raise _err(tok, f"{len(outs)} shared output(s) but {len(results)} result type(s)")
        region = next(x for x in c if isinstance(x, Region))
        args = [BlockArgument(name=v, type=ty.INDEX) for v in ivs]
        args += [BlockArgument(name=n, type=t) for (n, _), t in zip(outs, results, strict=True)]
        self._header_args(region, args, tok, "the scf.forall body takes its arguments from the header; its entry block has no label")
        self._implicit_yield(region, tok, Scf.forall_in_parallel)
        terminator = region.blocks[-1].operations[-1]
        if not terminator.regions:
            terminator.regions = [Region(blocks=[Block()])]
        s_lb, d_lb = _mixed(lbs)
        s_ub, d_ub = _mixed(ubs)
        s_st, d_st = _mixed(steps)
        attrs = dict(cl.get("attrs", {}))
        attrs["staticLowerBound"] = _dense_i64(s_lb)
        attrs["staticUpperBound"] = _dense_i64(s_ub)
        attrs["staticStep"] = _dense_i64(s_st)
        attrs["operandSegmentSizes"] = _segments(len(d_lb), len(d_ub), len(d_st), len(outs))
        dyn = [*d_lb, *d_ub, *d_st]
        return self._op(tok, [*dyn, *(v for _, v in outs)], [ty.INDEX] * len(dyn) + results, results, attrs, [region])

    def execute_region_op(self, c: list[Any]) -> Operation:
        """scf.execute_region, and scf.forall.in_parallel (no results)."""
        cl = _clauses(c)
        region = next(x for x in c if isinstance(x, Region))
        return self._op(c[0], result_types=list(cl.get("results", [])), attributes=dict(cl.get("attrs", {})), regions=[region])

    in_parallel_op = execute_region_op

    # ------------------------------------------------------------ affine

    def affine_apply_op(self, c: list[Any]) -> Operation:
        tok, amap = c[0], c[1]
        cl = _clauses(c)
        dims = _values(cl.get("values", []))
        syms: list[str] = cl.get("affine_symbols", [])
        attrs = dict(cl.get("attrs", {}))
        attrs["map"] = amap
        operands = [*dims, *syms]
        return self._op(tok, operands, [ty.INDEX] * len(operands), [ty.INDEX], attrs)

    # ------------------------------------------------------------ linalg

    def _dps(self, tok: Tok, cl: dict[str, Any]) -> tuple[list[str], list[Type], dict[str, Attribute]]:
        ins, in_types = cl.get("ins", ([], []))
        outs, out_types = cl["outs"]
        if len(ins) != len(in_types) or len(outs) != len(out_types):
            raise _err(tok, "each ins/outs value needs one type")
        attrs = dict(cl.get("attrs", {}))
        attrs["operandSegmentSizes"] = _segments(len(ins), len(outs))
        return [*ins, *outs], [*in_types, *out_types], attrs

    def linalg_named_op(self, c: list[Any]) -> Operation:
        tok = c[0]
        cl = _clauses(c)
        operands, types, attrs = self._dps(tok, cl)
        # the maps an op takes by default are no maps (MLIR prints them only when not)
        if "indexing_maps" in cl and cl["indexing_maps"] != default_indexing_maps(SPELLINGS[tok.value].name):
            attrs["indexing_maps"] = cl["indexing_maps"]
        op = self._op(tok, operands, types, list(cl.get("results", [])), attrs)
        if NAMED_OP in attrs:
            self._named_op(op)
        return op

    def _named_op(self, op: Operation) -> None:
        """MLIR's custom print of `ktir fmt --generic`'s transposed matmul: linalg.matmul with
        the transposing maps (often as `#map` aliases) and `{ktir.named_op = "..."}` is KTIR's op."""
        maps = op.attributes.get("indexing_maps")
        if isinstance(maps, at.ArrayAttr):
            op.attributes["indexing_maps"] = at.ArrayAttr(elements=tuple(
                self.alias_values.get(e.name, e) if isinstance(e, at.AttrAliasRef) else e for e in maps.elements))
        from_mlir(op)
        if "indexing_maps" in op.attributes and maps is not None:
            op.attributes["indexing_maps"] = maps  # not KTIR's op: the maps stay as written

    def linalg_generic_op(self, c: list[Any]) -> Operation:
        tok = c[0]
        cl = _clauses(c)
        operands, types, attrs = self._dps(tok, cl)
        attrs.update(cl.get("extra_attrs", {}))
        region = next(x for x in c if isinstance(x, Region))
        return self._op(tok, operands, types, list(cl.get("results", [])), attrs, [region])

    def short_body(self, c: list[Any]) -> C:
        attrs = dict(c[1].value) if len(c) > 1 else {}
        return C("short", (c[0], attrs))

    def explicit_body(self, c: list[Any]) -> C:
        params: list[BlockArgument] = c[0].value if len(c) > 1 else []
        region: Region = c[-1]
        self._header_args(region, params, None, "the body takes its arguments from the parenthesised list; its entry block has no label")
        return C("body", region)

    def _tensor_results(self, out_types: list[Type]) -> list[Type]:
        return [t for t in out_types if isinstance(t, ty.TensorType)]

    def _short_region(self, short_body: tuple[Tok, dict[str, Attribute]], in_types: list[Type], out_types: list[Type],
                      n_ins: int) -> Region:
        """Build the body MLIR builds for `{ arith.addf }` (or `{ arith.addi {overflowFlags = ...} }`):
        block args, the op with the attributes, linalg.yield."""
        short, short_attrs = short_body
        if not out_types:
            # the op's result is the element of the (first) output: none, no body to build
            raise _err(short, f"the short body `{{ {short.value} }}` needs an output in `outs(...)`")
        elem_in = [ty.element_type(t) for t in in_types]
        elem_out = [ty.element_type(t) for t in out_types]
        args = [BlockArgument(name=short_body_input(i), type=t) for i, t in enumerate(elem_in)]
        args += [BlockArgument(name=short_body_init(i), type=t) for i, t in enumerate(elem_out[: len(out_types)])]
        # map applies the op to the inputs; reduce to (init, inputs...), as MLIR 22 builds it
        operand_args = [args[-1], *args[:-1]] if n_ins < 0 else args[:n_ins]
        inner = self._op(short, [a.name for a in operand_args], [a.type for a in operand_args], [elem_out[0]],
                         dict(short_attrs))
        from_mlir(inner)  # `#arith.overflow<none>` is the custom form's absent flag
        inner.results = [SHORT_BODY_RESULT]
        inner.loc = None  # part of the short form's text, not an op of its own
        yield_op = Operation(name=Linalg.yield_, operands=[SHORT_BODY_RESULT], operand_types=[elem_out[0]])
        return Region(blocks=[Block(arguments=args, operations=[inner, yield_op])])

    def linalg_map_op(self, c: list[Any]) -> Operation:
        """linalg.map, and linalg.reduce (the one with `dimensions`)."""
        tok = c[0]
        cl = _clauses(c)
        operands, types, attrs = self._dps(tok, cl)
        dims = next((x for x in c if isinstance(x, list)), None)
        if dims is not None:
            attrs["dimensions"] = _dense_i64(dims)
        in_types, out_types = cl["ins"][1], cl["outs"][1]
        if "short" in cl:
            # MLIR 22 gives a map's body one argument per input plus one for the init element
            region = self._short_region(cl["short"], in_types, out_types, len(in_types) if dims is None else -1)
        elif "body" in cl:
            region = cl["body"]
        else:
            raise _err(tok, f"{SPELLINGS[tok.value].name} needs a body: `{{ op }}` or `(args) {{ ... }}`")
        return self._op(tok, operands, types, self._tensor_results(out_types), attrs, [region])

    linalg_reduce_op = linalg_map_op

    def linalg_dims_op(self, c: list[Any]) -> Operation:
        tok = c[0]
        cl = _clauses(c)
        operands, types, attrs = self._dps(tok, cl)
        key = next(x for x in c if isinstance(x, C) and x.tag == "dims_key").value
        dims = next(x for x in c if isinstance(x, list))
        expected = "permutation" if tok.value.endswith("transpose") else "dimensions"
        if key.value != expected:
            raise _err(key, f"expected '{expected}', found '{key.value}'")
        attrs[expected] = _dense_i64(dims)
        return self._op(tok, operands, types, self._tensor_results(cl["outs"][1]), attrs)

    # ------------------------------------------------------------ tensor, memref

    def _slice_parts(self, lists: list[list[Any]], attrs: dict[str, Attribute], names: tuple[str, ...]) -> list[list[str]]:
        dynamic: list[list[str]] = []
        for key, entries in zip(names, lists, strict=True):
            static, dyn = _mixed(entries)
            attrs[key] = _dense_i64(static)
            dynamic.append(dyn)
        return dynamic

    def reassociation(self, c: list[list[int]]) -> C:
        return C("reassociation", at.ArrayAttr(elements=tuple(at.ArrayAttr(elements=tuple(at.IntegerAttr(value=v, type=ty.I64) for v in g)) for g in c)))

    def pad_op(self, c: list[Any]) -> Operation:
        tok, src = c[0], c[1]
        lists = [x for x in c if isinstance(x, list)]
        cl = _clauses(c)
        attrs = dict(cl.get("attrs", {}))
        if any(isinstance(x, Tok) and x.type == "NOFOLD" for x in c):
            attrs["nofold"] = at.UnitAttr()
        dyn = self._slice_parts(lists, attrs, ("static_low", "static_high"))
        attrs["operandSegmentSizes"] = _segments(1, *(len(d) for d in dyn))
        flat = [v for d in dyn for v in d]
        region = next(x for x in c if isinstance(x, Region))
        return self._op(tok, [src.value, *flat], [c[-2]] + [ty.INDEX] * len(flat), [c[-1]], attrs, [region])

    def generate_op(self, c: list[Any]) -> Operation:
        cl = _clauses(c)
        vals = _values(cl.get("values", []))
        region = next(x for x in c if isinstance(x, Region))
        return self._op(c[0], vals, [ty.INDEX] * len(vals), [c[-1]], dict(cl.get("attrs", {})), [region])


# The rules whose callback only passes its children on: as they are, the first alone, or
# as a clause of the tag given, holding the children, the first child, the first child's
# value (a token's text, a clause's content), the names of an optional value_list, or
# the names and types of an optional `value_list ":" type_list`.
_PASS_CHILDREN = ("op_results", "mixed_list", "mixed_parens", "int_list", "paren_result_types", "aff_dims",
                  "dense_array_values", "stride_list")
_PASS_FIRST = ("type_only", "dense_body")
_CLAUSE_OF_CHILDREN = {"value_list": "values", "type_list": "types", "block_params": "params", "func_params": "params",
                       "aff_syms": "syms", "generic_regions": "regions", "shared_outs": "shared_outs"}
_CLAUSE_OF_FIRST = {"legacy_groups": "legacy_groups", "strided_offset": "offset", "future_type": "future",
                    "dependency": "dependency", "dims_key": "dims_key", "iv_type": "iv_type", "else_region": "else",
                    "indexing_maps": "indexing_maps", "func_results": "func_results"}
_CLAUSE_OF_VALUE = {"properties": "props", "module_attrs": "module_attrs", "visibility": "visibility",
                    "func_attrs": "func_attrs", "trailing_attrs": "trailing", "extra_attrs": "extra_attrs"}
_CLAUSE_OF_NAMES = {"symbols_clause": "symbols", "intermediate_vars": "variables", "affine_symbols": "affine_symbols",
                    "init_clause": "init"}
_CLAUSE_OF_NAMES_TYPES = {"ins_clause": "ins", "outs_clause": "outs", "identity_clause": "identity"}
_AFFINE_BINARY = {"aff_add": af.add, "aff_sub": af.sub, "aff_mul": af.mul}
for _rule, _combine in _AFFINE_BINARY.items():
    setattr(_Builder, _rule, lambda self, c, combine=_combine: _folded(combine(c[0], c[1])))
for _rule in _PASS_CHILDREN:
    setattr(_Builder, _rule, lambda self, c: c)
for _rule in _PASS_FIRST:
    setattr(_Builder, _rule, lambda self, c: c[0])
for _rule, _tag in _CLAUSE_OF_CHILDREN.items():
    setattr(_Builder, _rule, lambda self, c, tag=_tag: C(tag, c))
for _rule, _tag in _CLAUSE_OF_FIRST.items():
    setattr(_Builder, _rule, lambda self, c, tag=_tag: C(tag, c[0]))
for _rule, _tag in _CLAUSE_OF_VALUE.items():
    setattr(_Builder, _rule, lambda self, c, tag=_tag: C(tag, c[0].value))
for _rule, _tag in _CLAUSE_OF_NAMES.items():
    setattr(_Builder, _rule, lambda self, c, tag=_tag: C(tag, _values(c[0].value) if c else []))
for _rule, _tag in _CLAUSE_OF_NAMES_TYPES.items():
    setattr(_Builder, _rule, lambda self, c, tag=_tag: C(tag, (_values(c[0].value), list(c[1].value)) if c else ([], [])))


# ---------------------------------------------------------------- declarative formats
# The callbacks of the formats described in ktir.dialects.formats. Each description is
# turned, once, into the Python source of its callback (as ODS generates C++), which reads
# the rule's children in the written order: anonymous tokens are dropped, so the children
# are the operands, attributes, types and clauses. `callback_source(FORMAT)` shows the code.


def _spelled_attr(kind: str, tok: Tok, opdef: Any) -> Attribute:
    if kind == "int":
        return at.IntegerAttr(value=_int64(tok, _int(tok), "integer"), type=ty.I64)
    if kind == "symbol":
        return at.SymbolRefAttr(root=_symbol_name(tok))
    predicates = opdef.option("predicates")
    if tok.value not in predicates:
        raise _err(tok, f"unknown predicate '{tok.value}' for {opdef.name} (expected one of {', '.join(predicates)})")
    return at.IntegerAttr(value=predicates.index(tok.value), type=ty.I64)


def _count_mismatch(tok: Tok, values: list[str], types: list[Type]) -> ParseError:
    return _err(tok, f"{len(values)} value(s) but {len(types)} type(s)")


def _type_mismatch(tok: Tok, opdef: Any, operands: int, types: int) -> ParseError:
    return _err(tok, f"'{opdef.name}' has {operands} operand(s) but its type lists {types}")


def _read_code(src: asm.Source, elements: tuple[asm.Element, ...]) -> None:
    """Code that reads `elements` from the children `c` at index `i`."""
    present = "i < n and "
    for e in elements:
        if isinstance(e, asm.Literal):
            continue
        if isinstance(e, asm.OperandRef):
            _read_ref(src, e, f"v_{e.name}", "c[i].value", "[t.value for t in c[i].value]", "values")
        elif isinstance(e, asm.TypeRef):
            _read_ref(src, e, f"t_{e.name}", "c[i]", "list(c[i].value)", "types")
        elif isinstance(e, asm.FunctionalType):
            src.add("fn = c[i]; i += 1")
        elif isinstance(e, asm.AttrDict):
            src.add(f'if {present}type(c[i]) is C and c[i].tag == "attrs":')
            src.add("    attrs.update(c[i].value); i += 1")
        elif isinstance(e, asm.AttrRef):
            src.add(f"a_{e.name} = _spelled_attr({e.kind!r}, c[i], opdef); i += 1")
        elif isinstance(e, asm.Custom):
            args = e.args
            if e.name == "ArithFlags":
                src.add(f'while {present}type(c[i]) is C and c[i].tag == "flag":')
                src.add('    if c[i].value[1].value != "none":  # MLIR\'s default: the same op as no flag')
                src.add("        attrs[c[i].value[0]] = c[i].value[1]")
                src.add("    i += 1")
            elif e.name == "DynamicIndexList":
                src.add(f"static, v_{args[0]} = _mixed(c[i]); i += 1")
                src.add(f"a_{args[1]} = _dense_i64(static)")
            elif e.name == "Reassociation":
                src.add(f"a_{args[0]} = c[i].value; i += 1")
            else:  # SelectTypes: `T` or `C, T`
                src.add("if i + 1 < n:")
                src.add(f"    t_{args[0]} = c[i]; t_{args[1]} = c[i + 1]; i += 2")
                src.add("else:")
                src.add(f"    t_{args[0]} = ty.I1; t_{args[1]} = c[i]; i += 1")
        else:
            first = _first_read(e.elements)
            src.add(f"if {present}{first}:")
            src.depth += 1
            _read_code(src, e.elements)
            src.depth -= 1
            src.add("else:")
            src.add("    " + "; ".join(_absent(e.elements)) if _absent(e.elements) else "    pass")


def _read_ref(src: asm.Source, e: asm.OperandRef | asm.TypeRef, var: str, one: str, many: str, tag: str) -> None:
    """Code that reads one operand or type reference into `var`: `one` is the child's value
    for a single one, `many` for a variadic list (a `tag` clause, absent when it may be empty)."""
    if not e.variadic:
        src.add(f"{var} = {one}; i += 1")
    elif e.nonempty:
        src.add(f"{var} = {many}; i += 1")
    else:
        src.add(f'if i < n and type(c[i]) is C and c[i].tag == "{tag}":')
        src.add(f"    {var} = {many}; i += 1")
        src.add("else:")
        src.add(f"    {var} = []")


def _first_read(elements: tuple[asm.Element, ...]) -> str:
    """The test that an optional group is present: its first child is there."""
    for e in elements:
        if isinstance(e, asm.OperandRef):
            return 'type(c[i]) is C and c[i].tag == "values"' if e.variadic else 'type(c[i]) is Tok and c[i].type == "VALUE_ID"'
        if isinstance(e, asm.AttrRef):
            return "type(c[i]) is Tok"
        if isinstance(e, asm.TypeRef):
            return 'type(c[i]) is C and c[i].tag == "types"' if e.variadic else "isinstance(c[i], Type)"
    raise asm.FormatError("an optional group must start with an operand, attribute or type")


def _absent(elements: tuple[asm.Element, ...]) -> list[str]:
    """Defaults for what an absent optional group would have given."""
    out = []
    for e in elements:
        if isinstance(e, asm.OperandRef | asm.TypeRef):
            prefix = "v" if isinstance(e, asm.OperandRef) else "t"
            out.append(f"{prefix}_{e.name} = []" if e.variadic else f"{prefix}_{e.name} = None")
        elif isinstance(e, asm.AttrRef):
            out.append(f"a_{e.name} = None")
    return out


def _derived_code(rule: asm.TypeRule) -> str:
    return asm.derived_code(rule, f"t_{rule[1]}")


def _callback_source(fmt: asm.Format) -> str:
    src = asm.Source()
    src.lines.append(f"def {fmt.rule}(self, c):")
    src.add("tok = c[0]")
    src.add("n = len(c)")
    src.add("i = 1")
    src.add("attrs = {}")
    _read_code(src, fmt.elements)
    functional = any(isinstance(e, asm.FunctionalType) for e in fmt.elements)
    names = []
    for name, mult in fmt.operands:
        names.append(f"*v_{name}" if mult else f"v_{name}")
    src.add(f"operands = [{', '.join(names)}]")
    if functional:
        src.add("if len(fn.inputs) != len(operands):")
        src.add("    raise _type_mismatch(tok, opdef, len(operands), len(fn.inputs))")
        src.add("operand_types = list(fn.inputs)")
        src.add("result_types = list(fn.results)")
    else:
        types = []
        for name, mult in fmt.operands:
            if name in fmt.type_rules:
                code = _derived_code(fmt.type_rules[name])
                types.append(f"*[{code}] * len(v_{name})" if mult else code)
            elif mult:
                src.add(f"if len(v_{name}) != len(t_{name}):")
                src.add(f"    raise _count_mismatch(tok, v_{name}, t_{name})")
                types.append(f"*t_{name}")
            else:
                types.append(f"t_{name}")
        src.add(f"operand_types = [{', '.join(types)}]")
        results = []
        for name, mult in fmt.results:
            code = _derived_code(fmt.type_rules[name]) if name in fmt.type_rules else f"t_{name}"
            if mult in ("*", "+"):
                results.append(f"*{code}")
            elif mult == "?":
                results.append(f"*([{code}] if opdef.results else [])")
            else:
                results.append(code)
        src.add(f"result_types = [{', '.join(results)}]")
    for name in fmt.spelled:
        src.add(f"attrs[{name!r}] = a_{name}")
    if fmt.segments:
        sizes = ", ".join(f"len(v_{name})" if mult else "1" for name, mult in fmt.operands)
        src.add(f'attrs["operandSegmentSizes"] = _segments({sizes})')
    src.add("return self._op(tok, operands, operand_types, result_types, attrs)")
    if any("opdef" in line for line in src.lines):
        src.lines.insert(2, "    opdef = SPELLINGS[tok.value]")
    return "\n".join(src.lines) + "\n"


def callback_source(name: str) -> str:
    """The generated callback of the declarative format `name` (for reading)."""
    return _callback_source(asm.formats()[name])


def _format_callback(fmt: asm.Format) -> Callable[[_Builder, list[Any]], Operation]:
    namespace = asm.load_generated(_callback_source(fmt), "parser callback", fmt.name, globals())
    callback: Callable[[_Builder, list[Any]], Operation] = namespace[fmt.rule]
    return callback


for _fmt in asm.formats().values():
    setattr(_Builder, _fmt.rule, _format_callback(_fmt))


def _entry(region: Region) -> Block:
    """The entry block, created empty for a region written `{}` whose op needs one."""
    if not region.blocks:
        region.blocks.append(trusted_block([], [], None, None))
    return region.blocks[0]


def _plain(pairs: list[tuple[Type, dict[str, Attribute]]]) -> list[Type]:
    return [t for t, _ in pairs]


def _symbol_name(tok: Tok) -> str:
    body = tok.value[1:]
    if not body.startswith('"'):
        return body
    try:
        return _unquote(body)
    except BadEscape as e:
        raise _err(tok, str(e)) from None


def constant_type(value: Attribute) -> Type:
    try:
        return _constant_type(value)
    except ValueError as e:
        raise ParseError(str(e), 0, 0) from None


_HEX_BLOB = re.compile(r"0x(?:[0-9a-fA-F]{2})+")


# (struct format of the bits, of the float, left shift into it) of the float kinds the
# standard library reads: a kernel's `0xFF800000 : f32` (-inf) need not import numpy and
# ml_dtypes (half a second of a cold `ktir validate`)
_IEEE = {"f16": ("<H", "<e", 0), "bf16": ("<I", "<f", 16), "f32": ("<I", "<f", 0), "f64": ("<Q", "<d", 0)}


def _float_from_bits(bits: int, t: ty.FloatType) -> float:
    """ktir.ir.floats.float_from_bits, without numpy for the kinds of _IEEE; the other
    kinds, and an f16 NaN (whose payload the standard library drops), through it.
    tests/syntax/test_parser_units.py compares the two bit for bit."""
    layout = _IEEE.get(t.kind)
    if layout is None:
        return float_from_bits(bits, t)
    int_format, float_format, shift = layout
    if t.kind == "f16" and bits & 0x7C00 == 0x7C00 and bits & 0x3FF:
        return float_from_bits(bits, t)
    value: float = struct.unpack(float_format, struct.pack(int_format, bits << shift))[0]
    return value


class _HexBits(int):
    """An integer written in hex inside a dense literal (a bit pattern for float elements)."""


def _hex_to_float(values: Any, element: ty.FloatType) -> Any:
    if isinstance(values, tuple):
        return tuple(_hex_to_float(v, element) for v in values)
    if isinstance(values, _HexBits):
        if values >> element.width:
            raise ParseError(f"hexadecimal float {hex(values)} has more than the {element.width} bits of {element.kind}", 0, 0)
        return _float_from_bits(int(values), element)
    return values


# ---------------------------------------------------------------- entry points


@functools.cache
def _grammar_text() -> str:
    return resources.files("ktir.syntax").joinpath("ktir.lark").read_text()


GRAMMAR_STARTS = ("start", "type_only")


@functools.cache
def _driver() -> Driver:
    """The grammar's tables and callbacks (the tables from the on-disk cache: lark builds
    them only when the grammar changed). Shared, never changed by a parse: each parse has
    its own _Builder and lexer."""
    return Driver(load_tables(_grammar_text(), GRAMMAR_STARTS), _Builder)


def _grammar_parse(text: str, b: _Builder) -> Module:
    """The grammar's parse of `text`, built through `b` (comments go to b.comments)."""
    driver = _driver()
    hook = functools.partial(_type_hook, driver, b)
    module: Module = driver.parse(text, "start", b, driver.lexer(hook, b.comments))
    return module


def _type_hook(driver: Driver, b: _Builder, text: str) -> bool:
    """Parse a type's text once per file. Types that warn or fail are not shortcut, so
    the main parse reports them at their real position."""
    cache = b.types
    if text in cache:
        return cache[text] is not None
    if b.in_type_parse:
        return False  # inside a type being parsed: plain tokens
    n_warnings = len(b.warnings)
    b.in_type_parse = True
    try:
        # comments inside a type are the main parse's to keep: this lexer has no sink
        parsed: Type | None = driver.parse(text, "type_only", b, driver.lexer(functools.partial(_type_hook, driver, b)))
    except (UnexpectedToken, ParseError, LexError):
        parsed = None
    finally:
        b.in_type_parse = False
    if len(b.warnings) != n_warnings:
        del b.warnings[n_warnings:]
        parsed = None
    cache[text] = parsed
    return parsed is not None


def _expected_text(expected: set[str]) -> str:
    names = _terminal_names()
    shown = sorted({names.get(e) or ("an operation" if e.startswith("OP_") else e) for e in expected})
    if len(shown) > 8:
        shown = shown[:8] + ["..."]
    return ", ".join(shown)


@functools.cache
def _terminal_names() -> dict[str, str]:
    type_words = {"tensor", "memref", "vector", "complex", "tuple", "none"}
    names: dict[str, str] = {}
    for name, kind, value in _driver().terminals:
        if name in ("ACCESS_TILE_KW", "FUTURE_KW", "RUNTIME_ARG_KW") or (kind == "str" and value in type_words):
            names[name] = "a type"
        elif kind == "str":
            names[name] = f"'{value}'"
    names.update(
        {
            "VALUE_ID": "an SSA value (%name)",
            "SYMBOL_REF": "a symbol (@name)",
            "BLOCK_ID": "a block label (^bb)",
            "ATTR_ALIAS": "an attribute alias (#name)",
            "TYPE_ALIAS": "a type alias (!name)",
            "BARE_ID": "an identifier",
            "STRING": "a string",
            "INT": "an integer",
            "FLOAT": "a float",
            "HEX_INT": "a hex integer",
            "DIMS": "a shape (e.g. 4x8x)",
            "INTEGER_TYPE": "a type",
            "FLOAT_TYPE": "a type",
            "INDEX": "a type",
            "CMP_OP": "'==', '>=' or '<='",
            "DIALECT_TYPE": "a type",
            "PARSED_TYPE": "a type",
            "DIALECT_ATTR": "an attribute",
            "$END": "end of input",
        }
    )
    return names


def parse(text: str, filename: str | None = None, *, fast: bool = True) -> Module:
    """Parse KTIR text into a Module. Raises ParseError (a KtirError) on bad input.

    One production parser reads the text: ktir.syntax.fastparse. Where it rejects the
    text, the grammar (ktir.lark, the normative one) runs only to report the error, where
    and as it sees it. `fast=False`: the grammar alone, the oracle the tests compare with
    (they check that the two accept the same texts, into the same modules). Every parse
    has its own state: parses in several threads need no lock."""
    nesting = text_nesting(text, filename)
    collecting = gc.isenabled()
    if collecting:  # the caller's young garbage goes now, not aged with the tree (fastparse._age_new_objects)
        gc.collect(1)
    gc.disable()  # a parse makes many objects and no garbage cycles: the collector only costs
    try:
        b = _Builder()
        module = _parse_fast(text, b) if fast else None
        if module is None:
            b = _Builder()
            module = _parse_lalr(text, filename, b)  # raises the text's error
            if fast:
                raise ParseError(
                    "KTIR's parser does not read this text, which its grammar accepts: a bug in"
                    " ktir/syntax/fastparse.py, please report it (parse(..., fast=False) reads it)",
                    1,
                    1,
                    filename,
                    "syntax.internal",
                )
        if nesting > MAX_NESTING:  # the module's depth is at most its text's
            check_module_nesting(module, b.alias_lines, filename)
        attach_comments(module, b.comments + blank_lines(text), b.alias_lines)
    finally:
        if collecting:
            gc.enable()
    module.filename = filename
    for w in module.warnings:
        object.__setattr__(w, "file", filename)
    return module


def _parse_fast(text: str, b: _Builder) -> Module | None:
    """The production parser's module, built through the fresh builder `b`; None where it
    rejects the text."""
    try:
        return parse_fast(text, b)  # type: ignore[no-any-return]
    except Exception:  # noqa: BLE001 - Fallback, or an error the grammar will report
        return None


def _parse_lalr(text: str, filename: str | None, b: _Builder) -> Module:
    try:
        return _grammar_parse(text, b)
    except LexError as e:
        hint = _LOOKALIKES.get(text[e.pos]) if e.pos < len(text) else None
        message = f"{e.message}: {hint}" if hint else e.message
        raise ParseError(message, e.line, e.column, filename) from None
    except UnexpectedToken as e:
        tok = e.token
        fallback = {t for t in e.state.parse_conf.states[e.state.position] if t.isupper()}
        if tok.type == "BARE_ID" and "." in tok.value and any(x.startswith("OP_") for x in fallback):
            message = (
                f"unknown operation '{tok.value}': KTIR does not define it; write it in MLIR's generic form,"
                f' e.g. "{tok.value}"(%operands) : (operand types) -> (result types)'
            )
            raise ParseError(message, tok.line, tok.column, filename) from None
        expected = _expected_text(_driver().acceptable(e.state) or fallback)  # what would really be shifted
        if tok.type == "$END":
            line, col = _end_position(text)
            raise ParseError(f"unexpected end of input; expected {expected}", line, col, filename) from None
        raise ParseError(f"unexpected {_describe(tok)}; expected {expected}", tok.line, tok.column, filename) from None
    except ParseError as e:
        raise ParseError(e.message, e.line, e.column, filename) from None


# Characters that text copied from an editor, a web page or a word processor brings in and
# that look like (or are invisible next to) what MLIR expects; MLIR rejects them too.
_LOOKALIKES = {
    "\ufeff": "a UTF-8 byte order mark (BOM); save the file as UTF-8 without a BOM",
    "\u00a0": "a no-break space; use an ordinary space",
    "\u200b": "a zero-width space; delete it",
    "\u201c": 'a typographic quote; use the ASCII double quote "',
    "\u201d": 'a typographic quote; use the ASCII double quote "',
    "\u2018": "a typographic quote; MLIR strings use the ASCII double quote \"",
    "\u2019": "a typographic quote; MLIR strings use the ASCII double quote \"",
    "\u2212": "a Unicode minus sign; use the ASCII hyphen-minus -",
    "\u2013": "an en dash; use the ASCII hyphen-minus -",
}


def _describe(tok: Any) -> str:
    if tok.type.startswith("OP_"):
        return f"operation '{tok.value}'"
    return f"'{tok.value}'"


def _end_position(text: str) -> tuple[int, int]:
    lines = text.split("\n")
    return len(lines), len(lines[-1]) + 1
