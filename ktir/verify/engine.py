"""The verifier's walk: SSA scopes, structure, and dispatch to per-op rules.

Structural problems have their own IDs (`ssa.undefined`, `region.terminator`, ...);
op constraints report the IDs declared in the op's definition (`ktdp.load.C1`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from ktir.dialects.access import AccessError, OpView, named
from ktir.dialects.base import OpDef
from ktir.dialects.names import Builtin, Func
from ktir.dialects.registry import OPS
from ktir.dialects.traits import ISOLATED_FROM_ABOVE, TERMINATOR, VARIADIC_REGIONS
from ktir.ir import attributes as at
from ktir.ir import types as ty
from ktir.ir.base import Attribute, Type
from ktir.ir.operation import Location, Module, Operation, Region
from ktir.syntax.diagnostics import Diagnostic, Severity

# Structural rule IDs and what they mean (listed in the spec next to the op constraints).
STRUCTURAL_RULES: dict[str, str] = {
    "ssa.undefined": "Every operand names a value defined before it, in an enclosing scope.",
    "ssa.redefined": "A value name is defined once in its scope (no shadowing of visible names).",
    "ssa.type": "An operand's stated type equals the type its value was defined with.",
    "op.operands": "An op has the number of operands its definition allows.",
    "op.results": "An op has the number of results its definition allows.",
    "op.attribute": "An op carries every attribute its definition requires.",
    "region.count": "An op has exactly the regions its definition declares.",
    "region.terminator": "Each block of a region ends with the terminator its op expects, and only there.",
    "type.memory_space": "A `#ktdp.memory_space` in a memref type (written as the attribute or as a string) names `global`"
    " or `ct_local`, gives `ct_id` only with `ct_local`, and never a negative one.",
}
# Diagnostics that are warnings, not rules (the program stays valid); `legacy` comes from the
# parser. Listed in spec/diagnostics.md through the docs directive `ktir:warnings`.
WARNINGS: dict[str, str] = {
    "legacy": "A legacy spelling (`!ktdp.tile`, `#ktdp.spyre_memory_space<...>`, ...); it is printed in canonical form.",
    "op.unknown": "An op KTIR does not define, accepted in generic form and not checked.",
    "arith.constant.nan": "A float bit pattern that is a NaN in its type but an infinity in a wider one"
    " (`0xFF80 : f16` is bf16's and f32's -inf pattern, f16's is `0xFC00`): the value is the NaN, as MLIR reads it.",
    "ktdp.construct_access_tile.shape": "The result type's shape differs from the extents of `access_tile_set` in"
    " the order's permutation; constructing the tile is a `runtime.type` dynamic error.",
    "ktdp.construct_indirect_access_tile.shape": "The result type's shape differs from the extents of"
    " `variables_space_set` in the order's permutation; constructing the tile is a `runtime.type` dynamic error.",
}

@dataclass
class ValueInfo:
    type: Type
    loc: Location | None
    op: Operation | None  # defining op; None for block arguments
    index: int = 0  # result index, or block argument index
    uses: int = 0
    owner: Operation | None = None  # for block arguments: the op whose region holds them
    region: int = 0


@dataclass
class Report:
    diagnostics: list[Diagnostic] = field(default_factory=list)

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity == "error"]


class Check:
    """What a rule sees for one op: resolved types and attributes, and ways to report."""

    def __init__(self, verifier: Verifier, op: Operation, opdef: OpDef, loc: Location | None) -> None:
        self.v = verifier
        self.op = op
        self.opdef = opdef
        self.loc = loc
        self.operand_types = [verifier.rtype(t) for t in op.operand_types]
        self.result_types = [verifier.rtype(t) for t in op.result_types]
        self._view: OpView | None = None

    # ------------------------------------------------------------ reading

    def attr(self, name: str) -> Attribute | None:
        a = self.op.attributes.get(name)
        return self.v.rattr(a) if a is not None else None

    def defining_op(self, value: str) -> Operation | None:
        info = self.v.lookup(value)
        return info.op if info is not None else None

    def value_info(self, value: str) -> ValueInfo | None:
        return self.v.lookup(value)

    @property
    def named(self) -> OpView:
        """The op seen through its definition (`ktir.dialects.access`): operands by name."""
        if self._view is None:
            self._view = named(self.op)
        return self._view

    def operand(self, name: str) -> str:
        """The SSA value of the single operand `name`."""
        return self.named.operand(name)

    def operand_type(self, name: str) -> Type:
        """The resolved type of the single operand `name`."""
        return self.operand_types[self.named.operand_position(name)]

    def operand_types_of(self, name: str) -> list[Type]:
        """The resolved types of operand group `name` (variadic or optional)."""
        return [self.operand_types[i] for i in self.named.operand_positions(name)]

    def result_type(self, name: str) -> Type:
        """The resolved type of the single result `name`."""
        return self.result_types[self.named.result_position(name)]

    def result_types_of(self, name: str) -> list[Type]:
        """The resolved types of result group `name`."""
        return [self.result_types[i] for i in self.named.result_positions(name)]

    def segments(self) -> list[int] | None:
        seg = self.op.attributes.get("operandSegmentSizes")
        if isinstance(seg, at.DenseArrayAttr) and sum(int(x) for x in seg.values) == len(self.op.operands):
            sizes = [int(x) for x in seg.values]
            # a negative size splits nothing; `named` refuses it too
            return sizes if all(x >= 0 for x in sizes) else None
        return None

    # ------------------------------------------------------------ reporting

    def fail(self, cid: str, message: str, related: tuple[Location | None, str] | None = None) -> None:
        """Report constraint `cid` (e.g. "C2") of this op."""
        ident = f"{self.op.name}.{cid}"
        known = {c.id for c in self.opdef.constraints}
        assert cid in known, f"{ident} is not declared in the op definition"
        self.v.error(ident, message, self.loc, related)

    def note(self, message: str, ident: str = "undecided") -> None:
        self.v.emit("note", ident, message, self.loc)


Rule = Callable[[Check], None]
RULES: dict[str, Rule] = {}
# Rules on the type of every defined value (op results, block arguments), whatever its op.
ValueRule = Callable[["Verifier", Type, "Location | None"], None]
VALUE_RULES: list[ValueRule] = []


def rule(*names: str) -> Callable[[Rule], Rule]:
    """Register a rule function for the named ops."""

    def register(fn: Rule) -> Rule:
        for name in names:
            if name in RULES:
                raise ValueError(f"two rules for {name}")
            RULES[name] = fn
        return fn

    return register


class Verifier:
    def __init__(self, module: Module, filename: str | None = None) -> None:
        self.module = module
        self.filename = filename or module.filename
        self.report = Report()
        self.scopes: list[dict[str, ValueInfo]] = []
        self.symbols: dict[str, Operation] = {}
        self._type_cache: dict[int, Type] = {}
        self.grid: tuple[int, ...] = (1,)
        self.grid_given = False  # without a grid attribute, tile-id sets are not bounded by it
        self.current_func: Operation | None = None
        self.futures: list[tuple[str, ValueInfo]] = []
        self.stack: list[Operation] = []  # enclosing ops of the op being checked

    # ------------------------------------------------------------ diagnostics

    def emit(self, severity: Severity, ident: str, message: str, loc: Location | None,
             related: tuple[Location | None, str] | None = None) -> None:
        assert severity != "warning" or ident in WARNINGS, f"warning {ident} is not listed in WARNINGS"
        notes: tuple[Diagnostic, ...] = ()
        if related is not None:
            rloc, rmsg = related
            if rloc is not None:
                notes = (Diagnostic("note", "", rmsg, rloc.line, rloc.column, self.filename),)
        line, col = (loc.line, loc.column) if loc is not None else (0, 0)
        self.report.diagnostics.append(Diagnostic(severity, ident, message, line, col, self.filename, notes))

    def error(self, ident: str, message: str, loc: Location | None,
              related: tuple[Location | None, str] | None = None) -> None:
        self.emit("error", ident, message, loc, related)

    # ------------------------------------------------------------ aliases

    def rattr(self, a: Attribute) -> Attribute:
        seen = 0
        while isinstance(a, at.AttrAliasRef):
            target = self.module.attr_aliases.get(a.name)
            if target is None or seen > 64:
                return a
            a, seen = target, seen + 1
        return a

    def rtype(self, t: Type) -> Type:
        """Resolve type aliases, also inside shaped and tile types."""
        cached = self._type_cache.get(id(t))
        if cached is not None:
            return cached
        out = self._resolve_type(t, 0)
        self._type_cache[id(t)] = out
        return out

    def _resolve_type(self, t: Type, depth: int) -> Type:
        if depth > 64:
            return t
        if isinstance(t, ty.TypeAliasRef):
            target = self.module.type_aliases.get(t.name)
            return t if target is None else self._resolve_type(target, depth + 1)
        if isinstance(t, ty.TensorType | ty.MemRefType | ty.VectorType):
            inner = self._resolve_type(t.element_type, depth + 1)
            return t if inner is t.element_type else t.model_copy(update={"element_type": inner})
        if isinstance(t, ty.TileFutureType):
            parts = tuple(self._resolve_type(p, depth + 1) for p in t.partial_types)
            return t.model_copy(update={"partial_types": parts, "groups": self.rattr(t.groups)})
        return t

    # ------------------------------------------------------------ scopes

    def lookup(self, name: str) -> ValueInfo | None:
        for scope in reversed(self.scopes):
            info = scope.get(name)
            if info is not None:
                return info
        return None

    def define(self, name: str, info: ValueInfo) -> None:
        for value_rule in VALUE_RULES:
            value_rule(self, info.type, info.loc)
        if self.lookup(name) is not None:
            previous = self.lookup(name)
            self.error(
                "ssa.redefined",
                f"redefinition of value '{name}'",
                info.loc,
                (previous.loc if previous else None, f"'{name}' is first defined here"),
            )
            return
        self.scopes[-1][name] = info

    # ------------------------------------------------------------ walk

    def run(self) -> Report:
        self._collect_symbols(self.module.operations)
        self.scopes.append({})
        for op in self.module.operations:
            self.visit(op, None)
        self.scopes.pop()
        return self.report

    def _collect_symbols(self, ops: list[Operation]) -> None:
        for op in ops:
            if op.name == Builtin.module and op.regions:
                for block in op.regions[0].blocks:
                    self._collect_symbols(block.operations)
            name = op.attributes.get("sym_name")
            if op.name == Func.func and isinstance(name, at.StringAttr):
                if name.value in self.symbols:
                    self.error("func.func.C4", f"redefinition of symbol '@{name.value}'", op.loc,
                               (self.symbols[name.value].loc, "first defined here"))
                else:
                    self.symbols[name.value] = op

    def visit(self, op: Operation, parent_loc: Location | None) -> None:
        loc = op.loc or parent_loc
        opdef = OPS.get(op.name)
        undefined: set[str] = set()
        for i, (name, t) in enumerate(zip(op.operands, op.operand_types, strict=False)):
            info = self.lookup(name)
            if info is None:
                if name not in undefined:  # `arith.addi %a, %a`: one error, as MLIR gives
                    self.error("ssa.undefined", f"use of undefined value '{name}'", loc)
                undefined.add(name)
                continue
            info.uses += 1
            if self.rtype(info.type) != self.rtype(t):
                from ktir.ir.asm import type_text

                self.error(
                    "ssa.type",
                    f"operand {i} ('{name}') is used as {type_text(t)} but has type {type_text(info.type)}",
                    loc,
                    (info.loc, f"'{name}' is defined here"),
                )
        if len(op.operand_types) != len(op.operands):
            self.error("op.operands", f"'{op.name}' lists {len(op.operands)} operands but {len(op.operand_types)} types", loc)
        if opdef is None:
            self.emit("warning", "op.unknown", f"'{op.name}' is not a KTIR op; it is accepted but not checked", loc)
        is_func = op.name == Func.func
        outer_func, outer_grid, outer_given = self.current_func, self.grid, self.grid_given
        if is_func:
            self.current_func = op
            self.grid = self._grid(op, loc)
        if opdef is not None and self._check_counts(op, opdef, loc):
            # op rules assume the operands, results and attributes their definition declares
            check = Check(self, op, opdef, loc)
            fn = RULES.get(op.name)
            if check_typed(check) and fn is not None:
                try:
                    fn(check)
                except AccessError as e:  # e.g. an operandSegmentSizes that does not split the operands
                    self.error("op.operands", str(e), loc)
        isolated = opdef is not None and ISOLATED_FROM_ABOVE in opdef.traits
        self.stack.append(op)
        saved = self.scopes
        if isolated:
            self.scopes = [{}]
        for index, region in enumerate(op.regions):
            self.visit_region(op, index, region, loc)
        if isolated:
            self.scopes = saved
        self.stack.pop()
        if is_func:
            self.current_func, self.grid, self.grid_given = outer_func, outer_grid, outer_given
        for i, (name, t) in enumerate(zip(op.results, op.result_types, strict=False)):
            info = ValueInfo(t, loc, op, i)
            self.define(name, info)
            if isinstance(self.rtype(t), ty.TileFutureType):
                self.futures.append((name, info))

    def _check_counts(self, op: Operation, opdef: OpDef, loc: Location | None) -> bool:
        """Operand, result, attribute and region counts from the op's definition; True if all hold."""
        before = len(self.report.errors)
        for what, specs, actual in (("operand", opdef.operands, len(op.operands)), ("result", opdef.results, len(op.result_types))):
            fixed = sum(1 for x in specs if not x.variadic and not getattr(x, "optional", False))
            variadic = any(x.variadic or getattr(x, "optional", False) for x in specs)
            if actual < fixed or (not variadic and actual > fixed):
                wanted = f"at least {fixed}" if variadic else str(fixed)
                self.error(f"op.{what}s", f"'{op.name}' takes {wanted} {what}(s), found {actual}", loc)
        for attr in opdef.attributes:
            if not attr.optional and attr.name not in op.attributes:
                self.error("op.attribute", f"'{op.name}' requires the attribute '{attr.name}' ({attr.type.spelling()})", loc)
        if VARIADIC_REGIONS not in opdef.traits and len(op.regions) != len(opdef.regions):
            self.error("region.count", f"'{op.name}' has {len(opdef.regions)} region(s), found {len(op.regions)}", loc)
        return len(self.report.errors) == before

    def visit_region(self, op: Operation, index: int, region: Region, loc: Location | None) -> None:
        expected = _terminator_for(op, index)
        for block in region.blocks:
            self.scopes.append({})
            for i, arg in enumerate(block.arguments):
                self.define(arg.name, ValueInfo(arg.type, arg.loc or block.loc or loc, None, i, owner=op, region=index))
            for position, inner in enumerate(block.operations):
                self.visit(inner, loc)
                inner_def = OPS.get(inner.name)
                is_last = position == len(block.operations) - 1
                if inner_def is not None and TERMINATOR in inner_def.traits and not is_last:
                    self.error("region.terminator", f"'{inner.name}' must be the last op of its block", inner.loc or loc)
            if expected is not None:
                last = block.operations[-1] if block.operations else None
                if last is None or last.name not in expected:
                    found = f"'{last.name}'" if last is not None else "an empty block"
                    self.error(
                        "region.terminator",
                        f"region {index} of '{op.name}' must end with {' or '.join(repr(e) for e in sorted(expected))}, found {found}",
                        (last.loc if last is not None and last.loc else loc),
                    )
            self._check_future_uses(block)
            self.scopes.pop()

    def _check_future_uses(self, block: object) -> None:
        """Futures defined in this scope: exactly one use (checked when the scope closes)."""
        scope = self.scopes[-1]
        for name, info in list(self.futures):
            if scope.get(name) is info:
                self.futures.remove((name, info))
                if info.uses != 1:
                    self.error(
                        "ktdp.inter_tile_produce.C4",
                        f"tile future '{name}' must have exactly one use, found {info.uses}",
                        info.loc,
                    )

    def _grid(self, op: Operation, loc: Location | None) -> tuple[int, ...]:
        grid = op.attributes.get("grid")
        self.grid_given = grid is not None
        if grid is None:
            return (1,)
        grid = self.rattr(grid)
        values = grid.elements if isinstance(grid, at.ArrayAttr) else ()
        dims = [e.value for e in values if isinstance(e, at.IntegerAttr)]
        if not values or len(dims) != len(values) or any(d <= 0 for d in dims):
            self.error("func.func.C2", "`grid` must be a non-empty array of positive integers", loc)
            return (1,)
        return tuple(dims)


def check_typed(check: Check) -> bool:
    """The generic pass: the op's typed constraints (`Constraint.check`), in their order, each
    reported under its numbered ID. It stops at the first broken one, since later rules assume
    the earlier ones (unless the constraint says others do not depend on it, `stops=False`);
    True when the op's rule function may run."""
    checked = check.opdef.checked_constraints()
    if not checked:
        return True
    from ktir.ir.asm import type_text

    for constraint in checked:
        assert constraint.check is not None
        message = constraint.check.violation(check.opdef, check.operand_types, check.result_types, type_text)
        if message is not None:
            check.fail(constraint.id, message)
            if getattr(constraint.check, "stops", True):
                return False
    return True


def _terminator_for(op: Operation, index: int) -> set[str] | None:
    opdef = OPS.get(op.name)
    if opdef is None or index >= len(opdef.regions):
        return None
    term = opdef.regions[index].terminator
    if not term:
        return None
    return {t.strip() for t in term.split("|")}


def walk_ops(module: Module) -> Iterator[Operation]:
    yield from module.walk()


def verify(module: Module, filename: str | None = None) -> list[Diagnostic]:
    """All diagnostics for `module`: errors, warnings and notes, in walk order (the rules
    register themselves when the package `ktir.verify` is imported)."""
    return Verifier(module, filename).run().diagnostics
