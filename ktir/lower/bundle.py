"""SDSC bundles: `bundle.mlir` (the `sdscbundle` dialect) sequencing `sdsc_*.json` files.

    bundle = load_bundle("path/to/bundle_dir")
    for step in bundle.steps(): step.filename, step.bindings, step.loops

`bundle.mlir` is a small MLIR module: one `func.func` whose body runs
`sdscbundle.sdsc_execute (%a, ...) {sdsc_filename = "...", symbol_ids = [-1, ...]}` in
order, possibly inside `scf.for` loops with constant bounds. Symbolic start addresses in
an SDSC (negative ids) are bound to the execute's operands, which are sums of bundle
arguments (`sdscbundle.input_arg_extract`), device allocations
(`sdscbundle.device_mem_allocate`), constants and affine functions of loop variables. Every
operand is evaluated here to a `Linear` form over those variables.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Literal

from lark import Lark, Token, Tree, UnexpectedInput

from ktir.dialects.names import Arith
from ktir.fileio import confined_file
from ktir.ir import affine as af
from ktir.ir.attributes import AffineMapAttr
from ktir.lower.errors import SdscError
from ktir.lower.sdsc_model import SdscFile, load_sdsc_file

# The subset of MLIR that torch-spyre's bundle.mlir uses (the `sdscbundle` dialect plus
# func, arith, affine and scf), per the SuperDSC-Bundle interface specification.
GRAMMAR = r"""
start: alias* (module | func+)
module: "module" "{" alias* func* "}"
alias: ATTR_ALIAS "=" AFFINE_MAP
func: "func.func" SYMBOL "(" [param ("," param)*] ")" block
param: SSA ":" type
block: "{" stmt* "}"

?stmt: SSA "=" value                                                  -> assign
     | "sdscbundle.sdsc_execute" "(" [SSA ("," SSA)*] ")" attr_dict  -> execute
     | "scf.for" SSA "=" SSA "to" SSA "step" SSA (":" type)? block    -> loop
     | RETURN                                                         -> ret

?value: "sdscbundle.input_arg_extract" NAME "from" SSA ":" type "->" type  -> extract
      | "sdscbundle.device_mem_allocate" INT "bytes" ":" type             -> allocate
      | "arith.constant" INT ":" type                                    -> constant
      | ARITH_OP SSA "," SSA ":" type                                    -> arith
      | "affine.apply" (ATTR_ALIAS | AFFINE_MAP) "(" [SSA ("," SSA)*] ")" symbols?  -> apply

symbols: "[" [SSA ("," SSA)*] "]"

attr_dict: "{" [attr_entry ("," attr_entry)*] "}"
attr_entry: (NAME | STRING) "=" attr_value
?attr_value: STRING -> string
           | INT -> integer
           | "[" [INT ("," INT)*] "]" -> int_list

type: INDEX | INPUT_ARG_TYPE

INDEX: "index"
RETURN: "return" | "func.return"
ARITH_OP: "arith.addi" | "arith.subi" | "arith.muli"
INPUT_ARG_TYPE: /!sdscbundle\.input_arg<[^>]*>/
AFFINE_MAP: /affine_map<\((?:[^()]|\([^()]*\))*\)(?:\[[^\]]*\])?\s*->\s*\((?:[^()]|\((?:[^()]|\([^()]*\))*\))*\)>/
ATTR_ALIAS: /#[A-Za-z_][A-Za-z0-9_$.]*/
SSA: /%[A-Za-z0-9_$.#-]+/
SYMBOL: /@[A-Za-z_][A-Za-z0-9_$.]*/
NAME: /[A-Za-z_][A-Za-z0-9_$.]*/
INT: /-?[0-9]+/
STRING: /"(?:[^"\\]|\\.)*"/

COMMENT: /\/\/[^\n]*/
%import common.WS
%ignore WS
%ignore COMMENT
"""


@cache
def _parser() -> Lark:
    return Lark(GRAMMAR, parser="lalr", propagate_positions=True)


# ---------------------------------------------------------------------------- linear forms

VarKind = Literal["arg", "alloc", "iv"]


@dataclass(frozen=True)
class Var:
    """A value the bundle does not know statically: an argument, an allocation or a loop variable."""

    name: str  # the SSA name without %
    kind: VarKind
    size: int | None = None  # bytes of an allocation
    lower: int = 0  # range of a loop variable: lower, lower + step, ..., < upper
    upper: int = 0
    step: int = 1

    @property
    def last(self) -> int:
        """The largest value a loop variable takes."""
        return self.lower + (self.upper - 1 - self.lower) // self.step * self.step


@dataclass(frozen=True)
class Linear:
    """`const + Σ coeff · var` over bundle variables (addresses in bytes)."""

    const: int = 0
    terms: tuple[tuple[Var, int], ...] = ()

    @staticmethod
    def of(var: Var) -> Linear:
        return Linear(0, ((var, 1),))

    def _combine(self, other: Linear, sign: int) -> Linear:
        coeffs: dict[Var, int] = dict(self.terms)
        for var, c in other.terms:
            coeffs[var] = coeffs.get(var, 0) + sign * c
        terms = tuple(sorted(((v, c) for v, c in coeffs.items() if c), key=lambda vc: vc[0].name))
        return Linear(self.const + sign * other.const, terms)

    def __add__(self, other: Linear) -> Linear:
        return self._combine(other, 1)

    def __sub__(self, other: Linear) -> Linear:
        return self._combine(other, -1)

    def scale(self, k: int) -> Linear:
        return Linear(self.const * k, tuple((v, c * k) for v, c in self.terms if c * k))

    @property
    def is_const(self) -> bool:
        return not self.terms

    def vars(self, *kinds: VarKind) -> list[tuple[Var, int]]:
        return [(v, c) for v, c in self.terms if v.kind in kinds]

    def __str__(self) -> str:
        parts = [f"{c}*%{v.name}" if c != 1 else f"%{v.name}" for v, c in self.terms]
        if self.const or not parts:
            parts.append(str(self.const))
        return " + ".join(parts)


# ---------------------------------------------------------------------------- the program


@dataclass(frozen=True)
class Loop:
    var: Var
    line: int


@dataclass(frozen=True)
class Execute:
    """One `sdscbundle.sdsc_execute`: the SDSC it runs and the values of its symbols."""

    filename: str
    bindings: Mapping[int, Linear]  # symbol id -> value
    loops: tuple[Loop, ...]  # enclosing loops, outermost first
    line: int
    column: int


@dataclass(frozen=True)
class LoopNode:
    loop: Loop
    body: tuple[Node, ...]


Node = Execute | LoopNode


@dataclass
class Bundle:
    """A parsed bundle: the function's body as a tree of executes and loops, plus its SDSCs."""

    path: str  # bundle.mlir
    name: str
    params: tuple[Var, ...]
    body: tuple[Node, ...]
    sdscs: dict[str, SdscFile | None] = field(default_factory=dict)  # None: file not present

    def steps(self) -> Iterator[Execute]:
        """The executes in program order (each once, whatever its loops)."""

        def walk(nodes: Sequence[Node]) -> Iterator[Execute]:
            for n in nodes:
                if isinstance(n, Execute):
                    yield n
                else:
                    yield from walk(n.body)

        return walk(self.body)

    @property
    def missing(self) -> list[str]:
        return [name for name, s in self.sdscs.items() if s is None]


class _Evaluator:
    """Evaluates the bundle function into executes with linear symbol bindings."""

    def __init__(self, path: str, aliases: Mapping[str, af.AffineMap]) -> None:
        self.path = path
        self.aliases = aliases
        self.values: dict[str, Linear] = {}
        self.params: dict[str, Var] = {}

    def error(self, message: str, node: Tree[Token] | Token) -> SdscError:
        meta = node if isinstance(node, Token) else node.meta
        line = getattr(meta, "line", 0) or 0
        column = getattr(meta, "column", 0) or 0
        return SdscError(message, self.path, line, column)

    def value(self, token: Token) -> Linear:
        name = str(token)
        if name in self.values:
            return self.values[name]
        if name in self.params:
            raise self.error(f"{name} is a !sdscbundle.input_arg; extract it with sdscbundle.input_arg_extract before use", token)
        raise self.error(f"{name} is not defined", token)

    def define(self, token: Token, value: Linear) -> None:
        name = str(token)
        if name in self.values or name in self.params:
            raise self.error(f"{name} is defined twice", token)
        self.values[name] = value

    def constant(self, token: Token, what: str) -> int:
        value = self.value(token)
        if not value.is_const:
            raise self.error(f"the {what} {token} = {value} is not a compile-time constant", token)
        return value.const

    def params_of(self, func: Tree[Token]) -> tuple[Var, ...]:
        out = []
        for p in func.children[1:-1]:
            if p is None:
                continue
            name_tok, type_tree = _tok(_tree(p).children[0]), _tree(_tree(p).children[1])
            name = str(name_tok)[1:]
            var = Var(name, "arg")
            type_text = str(type_tree.children[0])
            if type_text == "index":
                self.values[str(name_tok)] = Linear.of(var)
            else:
                self.params[str(name_tok)] = var
            out.append(var)
        return tuple(out)

    def block(self, block: Tree[Token], loops: tuple[Loop, ...]) -> tuple[Node, ...]:
        nodes: list[Node] = []
        for stmt in map(_tree, block.children):
            if stmt.data == "assign":
                target, value = _tok(stmt.children[0]), _tree(stmt.children[1])
                self.define(target, self.evaluate(value, str(target)))
            elif stmt.data == "execute":
                nodes.append(self.execute(stmt, loops))
            elif stmt.data == "loop":
                nodes.append(self.loop(stmt, loops))
        return tuple(nodes)

    def evaluate(self, tree: Tree[Token], target: str) -> Linear:
        kind = tree.data
        if kind == "constant":
            return Linear(int(_tok(tree.children[0])))
        if kind == "allocate":
            size = int(_tok(tree.children[0]))
            if size <= 0:
                raise self.error(f"device_mem_allocate of {size} bytes", tree)
            return Linear.of(Var(target[1:], "alloc", size=size))
        if kind == "extract":
            return self.extract(tree)
        if kind == "arith":
            return self.arith(tree)
        return self.apply(tree)

    def extract(self, tree: Tree[Token]) -> Linear:
        field_tok, source = _tok(tree.children[0]), _tok(tree.children[1])
        param = self.params.get(str(source))
        if param is None:
            raise self.error(f"{source} is not an !sdscbundle.input_arg parameter", source)
        if str(field_tok) == "value":
            return Linear.of(param)
        type_text = str(_tree(tree.children[2]).children[0])
        m = re.search(rf"\b{re.escape(str(field_tok))}\s*=\s*(\d+)", type_text)
        if m is None:
            raise self.error(f"input_arg_extract {field_tok}: the type {type_text} gives no {field_tok}", field_tok)
        return Linear(int(m.group(1)))

    def arith(self, tree: Tree[Token]) -> Linear:
        op, lhs_tok, rhs_tok = (_tok(c) for c in tree.children[:3])
        lhs, rhs = self.value(lhs_tok), self.value(rhs_tok)
        if op == Arith.addi:
            return lhs + rhs
        if op == Arith.subi:
            return lhs - rhs
        if lhs.is_const:
            return rhs.scale(lhs.const)
        if rhs.is_const:
            return lhs.scale(rhs.const)
        raise self.error(f"arith.muli of two non-constant values ({lhs} and {rhs}) is not affine", op)

    def apply(self, tree: Tree[Token]) -> Linear:
        map_tok = _tok(tree.children[0])
        amap = self.affine_map(map_tok)
        dims = [c for c in tree.children[1:] if isinstance(c, Token)]
        syms_tree = next((c for c in tree.children[1:] if isinstance(c, Tree)), None)
        syms = [_tok(c) for c in syms_tree.children if c is not None] if syms_tree is not None else []
        if len(dims) != amap.num_dims or len(syms) != amap.num_symbols or len(amap.results) != 1:
            raise self.error(
                f"affine.apply: the map takes {amap.num_dims} dims and {amap.num_symbols} symbols and must have one "
                f"result; given {len(dims)} and {len(syms)}",
                map_tok,
            )
        env_d = [self.value(t) for t in dims]
        env_s = [self.value(t) for t in syms]
        return self.linear(amap.results[0], env_d, env_s, map_tok)

    def affine_map(self, tok: Token) -> af.AffineMap:
        text = str(tok)
        if text.startswith("#"):
            found = self.aliases.get(text[1:])
            if found is None:
                raise self.error(f"{text} is not defined", tok)
            return found
        return parse_affine_map(text, self.path, tok.line or 0, tok.column or 0)

    def linear(self, e: af.AffineExpr, dims: Sequence[Linear], syms: Sequence[Linear], tok: Token) -> Linear:
        if isinstance(e, af.Const):
            return Linear(e.value)
        if isinstance(e, af.Dim):
            return dims[e.position]
        if isinstance(e, af.Symbol):
            return syms[e.position]
        assert isinstance(e, af.Binary)
        lhs = self.linear(e.lhs, dims, syms, tok)
        rhs = self.linear(e.rhs, dims, syms, tok)
        if e.kind == "add":
            return lhs + rhs
        if e.kind == "mul" and (lhs.is_const or rhs.is_const):
            return rhs.scale(lhs.const) if lhs.is_const else lhs.scale(rhs.const)
        if lhs.is_const and rhs.is_const and rhs.const > 0:
            return Linear(_fold(e.kind, lhs.const, rhs.const))
        raise self.error(f"affine.apply: '{e.kind}' of non-constant values is not a linear address", tok)

    def execute(self, stmt: Tree[Token], loops: tuple[Loop, ...]) -> Execute:
        operands = [_tok(o) for o in stmt.children[:-1] if o is not None]
        entries = _attr_entries(_tree(stmt.children[-1]))
        filename = entries.get("sdsc_filename")
        if not isinstance(filename, str):
            raise self.error("sdsc_execute needs sdsc_filename = \"...\"", stmt)
        ids = entries.get("symbol_ids", [])
        if not isinstance(ids, list):
            raise self.error("symbol_ids must be a list of integers", stmt)
        if len(ids) != len(operands):
            raise self.error(f"sdsc_execute has {len(operands)} operands but {len(ids)} symbol_ids", stmt)
        bindings: dict[int, Linear] = {}
        for sid, tok in zip(ids, operands, strict=True):
            if sid >= 0:
                raise self.error(f"symbol id {sid} must be negative", stmt)
            bindings[sid] = self.value(tok)
        return Execute(filename, bindings, loops, stmt.meta.line, stmt.meta.column)

    def loop(self, stmt: Tree[Token], loops: tuple[Loop, ...]) -> LoopNode:
        iv_tok, lb_tok, ub_tok, step_tok = (_tok(c) for c in stmt.children[:4])
        body = _tree(stmt.children[-1])
        lb = self.constant(lb_tok, "lower bound")
        ub = self.constant(ub_tok, "upper bound")
        step = self.constant(step_tok, "step")
        if step <= 0:
            raise self.error(f"scf.for step {step} must be positive", step_tok)
        var = Var(str(iv_tok)[1:], "iv", lower=lb, upper=ub, step=step)
        self.define(iv_tok, Linear.of(var))
        loop = Loop(var, stmt.meta.line)
        return LoopNode(loop, self.block(body, (*loops, loop)))


def _tok(node: object) -> Token:
    assert isinstance(node, Token), node
    return node


def _tree(node: object) -> Tree[Token]:
    assert isinstance(node, Tree), node
    return node


def _fold(kind: str, a: int, b: int) -> int:
    if kind == "floordiv":
        return a // b
    if kind == "ceildiv":
        return -((-a) // b)
    return a % b


def _attr_entries(attrs: Tree[Token]) -> dict[str, object]:
    out: dict[str, object] = {}
    for entry in attrs.children:
        if entry is None:
            continue
        entry = _tree(entry)
        key = str(_tok(entry.children[0])).strip('"')
        value = _tree(entry.children[1])
        if value.data == "string":
            out[key] = str(_tok(value.children[0]))[1:-1]
        elif value.data == "integer":
            out[key] = int(_tok(value.children[0]))
        else:
            out[key] = [int(_tok(c)) for c in value.children if c is not None]
    return out


def parse_affine_map(text: str, path: str | None = None, line: int = 0, column: int = 0) -> af.AffineMap:
    """Parse `affine_map<...>` with the KTIR parser."""
    from ktir.syntax.diagnostics import KtirError
    from ktir.syntax.parser import parse

    try:
        module = parse(f"#m = {text}")
    except KtirError as e:
        raise SdscError(f"bad affine map {text}: {e.diagnostics[0].message}", path, line, column) from None
    attr = module.attr_aliases["m"]
    if not isinstance(attr, AffineMapAttr):
        raise SdscError(f"{text} is not an affine map", path, line, column)
    return attr.value


def parse_bundle_text(text: str, path: str = "bundle.mlir") -> Bundle:
    """Parse bundle.mlir text (without loading the SDSC files)."""
    try:
        tree = _parser().parse(text)
    except UnexpectedInput as e:
        raise SdscError(_syntax_message(e, text), path, e.line, e.column) from None
    aliases: dict[str, af.AffineMap] = {}
    funcs: list[Tree[Token]] = []
    items = [c for c in tree.children if isinstance(c, Tree)]
    items = [i for c in items for i in ([_tree(x) for x in c.children] if c.data == "module" else [c])]
    for node in items:
        if node.data == "alias":
            name_tok, map_tok = _tok(node.children[0]), _tok(node.children[1])
            aliases[str(name_tok)[1:]] = parse_affine_map(str(map_tok), path, map_tok.line or 0, map_tok.column or 0)
        elif node.data == "func":
            funcs.append(node)
    if len(funcs) != 1:
        raise SdscError(f"a bundle holds one func.func, found {len(funcs)}", path)
    (func,) = funcs
    ev = _Evaluator(path, aliases)
    params = ev.params_of(func)
    body = ev.block(_tree(func.children[-1]), ())
    return Bundle(path=path, name=str(func.children[0])[1:], params=params, body=body)


def _syntax_message(e: UnexpectedInput, text: str) -> str:
    token = getattr(e, "token", None)
    if token is not None and str(token):
        word = str(token)
    else:
        lines = text.splitlines()
        row = lines[e.line - 1] if 0 < e.line <= len(lines) else ""
        word = row[e.column - 1 :].split()[0] if row[e.column - 1 :].split() else "end of input"
    if word.startswith(("sdscbundle.", "arith.", "affine.", "scf.", "func.", "memref.", "tensor.")):
        return f"'{word}' is not supported in bundle.mlir (known: sdscbundle.sdsc_execute, input_arg_extract, device_mem_allocate, arith.constant/addi/subi/muli, affine.apply, scf.for)"
    return f"unexpected '{word}'"


def load_bundle(path: str | Path, *, skip_missing: bool = False) -> Bundle:
    """Parse a bundle (a directory holding bundle.mlir, or the .mlir file itself) and load the
    SDSC files it executes, which are named relative to the .mlir file.

    A referenced file that is not present is an error, or with `skip_missing` is recorded
    as None (its steps are left out of the lowering).
    """
    given = Path(path)
    mlir = given / "bundle.mlir" if given.is_dir() else given
    base = mlir.parent
    try:
        text = mlir.read_text(encoding="utf-8")
    except FileNotFoundError:
        where = "no bundle.mlir in this directory" if given.is_dir() else "no such file"
        raise SdscError(where, str(given)) from None
    except UnicodeDecodeError as e:
        raise SdscError(f"not UTF-8 text (byte {e.start})", str(mlir)) from None
    bundle = parse_bundle_text(text, str(mlir))
    for step in bundle.steps():
        if step.filename in bundle.sdscs:
            continue
        try:
            file = confined_file(base, step.filename)
        except ValueError as e:
            raise SdscError(f"{step.filename}, executed by the bundle: {e}", str(mlir), step.line, step.column) from None
        if not file.is_file():
            if not skip_missing:
                raise SdscError(
                    f"{step.filename}, executed by the bundle, is not present (--skip-missing lowers the steps that are)",
                    str(mlir), step.line, step.column,
                )
            bundle.sdscs[step.filename] = None
            continue
        bundle.sdscs[step.filename] = load_sdsc_file(file)
    return bundle
