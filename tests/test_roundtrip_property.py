"""Property tests: the printer inverts the parser on random well-typed modules.

`tests/strategies.py` builds modules exactly as the parser would build them from their
custom syntax, so `parse(print_module(m)) == m` checks both that the generator follows
the parser's conventions and that the printer is the parser's inverse.

The strict-xfail tests at the end are minimal reproducers of library bugs found while
writing these properties; each one starts passing (and so fails as XPASS) once its bug
is fixed, at which point the marker (and the matching entry of
`strategies.KNOWN_BUGS`) should be removed.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from ktir import parse, print_module
from ktir.dialects.registry import OPS
from ktir.ir import affine as af
from ktir.ir import types as ty
from ktir.ir.affine_text import format_expr, format_set
from ktir.ir.base import Type
from ktir.ir.operation import Module, Operation, Region
from ktir.syntax.diagnostics import ParseError

try:  # tests/ as a package, or as a rootdir-relative directory (pytest's default)
    from .strategies import KNOWN_BUGS, Options, affine_exprs, generate_module, modules
except ImportError:
    from strategies import KNOWN_BUGS, Options, affine_exprs, generate_module, modules  # type: ignore[no-redef]

SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ---------------------------------------------------------------- helpers


def _first_difference(a: Module, b: Module) -> str:
    """A short description of where two modules differ (for failure messages)."""
    if a.attr_aliases != b.attr_aliases:
        return f"attribute aliases differ:\n  {a.attr_aliases}\n  {b.attr_aliases}"
    if a.type_aliases != b.type_aliases:
        return f"type aliases differ:\n  {a.type_aliases}\n  {b.type_aliases}"
    for x, y in zip(a.walk(), b.walk(), strict=False):
        if x.name != y.name:
            return f"op {x.name} vs {y.name}"
        for key in ("operands", "operand_types", "results", "result_types", "attributes", "properties", "successors"):
            if getattr(x, key) != getattr(y, key):
                return f"{x.name}.{key}:\n  generated {getattr(x, key)}\n  reparsed  {getattr(y, key)}"
        for rx, ry in zip(x.regions, y.regions, strict=False):
            for bx, by in zip(rx.blocks, ry.blocks, strict=False):
                if (bx.label, bx.arguments) != (by.label, by.arguments) or len(bx.operations) != len(by.operations):
                    return f"{x.name} block: {bx.label} {bx.arguments} vs {by.label} {by.arguments}"
    return "modules differ"


def comments(m: Module) -> tuple[object, ...]:
    """The `//` comments of a module, which AST equality ignores."""
    ops = [(op.name, op.comments, op.trailing_comment) for op in m.walk()]
    return dict(m.alias_comments), list(m.trailing_comments), ops


def assert_roundtrip(m: Module) -> None:
    text = print_module(m)
    note(text)
    m1 = parse(text)
    assert m1 == m, _first_difference(m, m1)
    assert comments(m1) == comments(m)
    assert print_module(m1) == text


class _Checker:
    """Well-formedness of generated modules: SSA dominance, operand types, terminators."""

    def __init__(self, module: Module) -> None:
        self.aliases = module.type_aliases

    def resolve(self, t: Type) -> Type:
        while isinstance(t, ty.TypeAliasRef):
            t = self.aliases[t.name]
        return t

    def region(self, region: Region, scope: list[dict[str, Type]], spec_terminator: str = "") -> None:
        inner: dict[str, Type] = {}
        scope = [*scope, inner]
        for block in region.blocks:
            for arg in block.arguments:
                self.define(arg.name, arg.type, scope)
            for op in block.operations:
                self.op(op, scope)
        if spec_terminator and region.blocks:
            last = region.blocks[-1].operations
            assert last and last[-1].name == spec_terminator, f"region does not end with {spec_terminator}"

    def define(self, name: str, t: Type, scope: list[dict[str, Type]]) -> None:
        assert all(name not in s for s in scope), f"{name} redefined"
        scope[-1][name] = t

    def lookup(self, name: str, scope: list[dict[str, Type]]) -> Type:
        for s in reversed(scope):
            if name in s:
                return s[name]
        raise AssertionError(f"{name} used before its definition")

    def op(self, op: Operation, scope: list[dict[str, Type]]) -> None:
        assert len(op.operands) == len(op.operand_types), op.name
        for name, t in zip(op.operands, op.operand_types, strict=True):
            defined = self.lookup(name, scope)
            assert self.resolve(defined) == self.resolve(t), f"{op.name}: {name} is {defined}, used as {t}"
        opdef = OPS.get(op.name)
        isolated = op.name in ("func.func", "builtin.module")
        for i, region in enumerate(op.regions):
            term = ""
            if opdef is not None and i < len(opdef.regions):
                term = opdef.regions[i].terminator
            self.region(region, [scope[0]] if isolated else scope, term)
        for name, t in zip(op.results, op.result_types, strict=True):
            self.define(name, t, scope)
        if op.name == "scf.for":
            inits = [self.resolve(t) for t in op.operand_types[3:]]
            yielded = [self.resolve(t) for t in op.regions[0].blocks[-1].operations[-1].operand_types]
            assert inits == [self.resolve(t) for t in op.result_types] == yielded
        if op.name == "ktdp.load":
            tile, result = self.resolve(op.operand_types[0]), self.resolve(op.result_types[0])
            assert isinstance(tile, ty.AccessTileType) and isinstance(result, ty.TensorType)
            assert tile.shape == result.shape
        if op.name in ("arith.addf", "arith.addi", "math.fma", "arith.select"):
            assert len({self.resolve(t) for t in op.operand_types[-2:] + op.result_types}) == 1


def check_well_formed(m: Module) -> None:
    checker = _Checker(m)
    top: dict[str, Type] = {}
    for op in m.operations:
        checker.op(op, [top])


# ---------------------------------------------------------------- properties


@SETTINGS
@given(modules())
def test_print_parse_roundtrip(m: Module) -> None:
    """parse(print(m)) == m, and printing the reparsed module gives the same text."""
    check_well_formed(m)
    assert_roundtrip(m)


def test_roundtrip_fixed_seeds() -> None:
    """The same property on a fixed set of seeds (reproducible, larger modules)."""
    failures = []
    for seed in range(120):
        m = generate_module(seed, Options(budget=120))
        check_well_formed(m)
        text = print_module(m)
        try:
            m1 = parse(text)
        except ParseError as e:
            failures.append(f"seed {seed}: reparse failed: {e}")
            continue
        if m1 != m:
            failures.append(f"seed {seed}: {_first_difference(m, m1)}")
        elif comments(m1) != comments(m):
            failures.append(f"seed {seed}: comments moved or were lost")
        elif print_module(m1) != text:
            failures.append(f"seed {seed}: printing is not a fixpoint")
    assert not failures, "\n".join(failures[:5])


def test_generator_covers_every_op() -> None:
    """Every op of the registry, every assembly format, generic ops, aliases and blocks."""
    seen: set[str] = set()
    generic = 0
    aliases = type_aliases = successors = properties = 0
    for seed in range(300):
        m = generate_module(seed)
        aliases += len(m.attr_aliases)
        type_aliases += len(m.type_aliases)
        for op in m.walk():
            seen.add(op.name)
            if op.name not in OPS:
                generic += 1
                successors += bool(op.successors)
                properties += bool(op.properties)
    missing = sorted(set(OPS) - seen)
    assert not missing, f"ops never generated: {missing}"
    assert {d.format for d in OPS.values()} <= {OPS[n].format for n in seen if n in OPS}
    assert generic and aliases and type_aliases and successors and properties


def test_generator_writes_comments() -> None:
    assert any(op.comments or op.trailing_comment for seed in range(20) for op in generate_module(seed).walk())


def test_generator_is_deterministic() -> None:
    assert generate_module(1234) == generate_module(1234)
    assert print_module(generate_module(1234)) == print_module(generate_module(1234))


# ---------------------------------------------------------------- affine expressions


POINT = st.lists(st.integers(-60, 60), min_size=5, max_size=5)


@SETTINGS
@given(affine_exprs(num_dims=3, num_symbols=2), POINT)
def test_affine_expr_roundtrip(expr: af.AffineExpr, point: list[int]) -> None:
    """format_expr inside an affine_map attribute parses back to the same tree and value."""
    text = f"#m = affine_map<(d0, d1, d2)[s0, s1] -> ({format_expr(expr)})>\n"
    note(text)
    module = parse(text)
    parsed = module.attr_aliases["m"].value.results[0]  # type: ignore[attr-defined]
    assert parsed == expr
    assert af.evaluate(parsed, point[:3], point[3:]) == af.evaluate(expr, point[:3], point[3:])
    assert print_module(module) == text


@SETTINGS
@given(affine_exprs(num_dims=2, num_symbols=1), affine_exprs(num_dims=2, num_symbols=1), st.sampled_from(["==", ">=", "<="]))
def test_affine_set_roundtrip(lhs: af.AffineExpr, rhs: af.AffineExpr, op: str) -> None:
    iset = af.IntegerSet(num_dims=2, num_symbols=1, constraints=(af.constraint(lhs, op, rhs),))  # type: ignore[arg-type]
    text = f"#s = affine_set<{format_set(iset)}>\n"
    note(text)
    assert parse(text).attr_aliases["s"].value == iset  # type: ignore[attr-defined]


@st.composite
def _expr_and_meaning(draw: st.DrawFn, depth: int = 4):  # type: ignore[no-untyped-def]
    """An expression built with the smart constructors and, alongside, its plain meaning."""
    leaves = [(af.dim(i), lambda d, s, i=i: d[i]) for i in range(3)]
    leaves += [(af.sym(i), lambda d, s, i=i: s[i]) for i in range(2)]

    def build(n: int):  # type: ignore[no-untyped-def]
        if n == 0 or draw(st.integers(0, 3)) == 0:
            if draw(st.booleans()):
                return draw(st.sampled_from(leaves))
            c = draw(st.integers(-20, 20))
            return af.const(c), (lambda d, s: c)
        kind = draw(st.sampled_from(("add", "sub", "mul", "neg", "floordiv", "ceildiv", "mod")))
        (a, fa) = build(n - 1)
        if kind in ("add", "sub"):
            (b, fb) = build(n - 1)
            if kind == "add":
                return af.add(a, b), (lambda d, s: fa(d, s) + fb(d, s))
            return af.sub(a, b), (lambda d, s: fa(d, s) - fb(d, s))
        if kind == "neg":
            return -a, (lambda d, s: -fa(d, s))
        c = draw(st.integers(-6, 6) if kind == "mul" else st.integers(1, 9))
        if kind == "mul":
            return af.mul(a, af.const(c)), (lambda d, s: fa(d, s) * c)
        if kind == "floordiv":
            return af.binary("floordiv", a, af.const(c)), (lambda d, s: fa(d, s) // c)
        if kind == "ceildiv":
            return af.binary("ceildiv", a, af.const(c)), (lambda d, s: -((-fa(d, s)) // c))
        return af.binary("mod", a, af.const(c)), (lambda d, s: fa(d, s) % c)

    return build(depth)


@SETTINGS
@given(_expr_and_meaning(), POINT)
def test_affine_smart_constructors_preserve_meaning(pair, point: list[int]) -> None:  # type: ignore[no-untyped-def]
    """Simplification on construction keeps the value; so does print -> parse."""
    expr, meaning = pair
    dims, syms = point[:3], point[3:]
    expected = meaning(dims, syms)
    assert af.evaluate(expr, dims, syms) == expected
    text = f"#m = affine_map<(d0, d1, d2)[s0, s1] -> ({format_expr(expr)})>\n"
    parsed = parse(text).attr_aliases["m"].value.results[0]  # type: ignore[attr-defined]
    assert af.evaluate(parsed, dims, syms) == expected


# ---------------------------------------------------------------- library bug reproducers

_FUT = "!ktdp.tile_future<(tensor<4xf32>), groups = affine_set<(g) : (g == 0)>>"
_SET = "affine_set<(i)[g] : (i >= 0)>"


def _func(body: str, params: str = "") -> str:
    return f"func.func @f({params}) {{\n  {body}\n  func.return\n}}\n"


def _reparses_to_itself(text: str) -> None:
    m = parse(text)
    printed = print_module(m)
    m1 = parse(printed)
    assert m1 == m
    assert print_module(m1) == printed


def _xfail(id_: str, text: str, reason: str) -> object:
    """A fixed library bug, kept as a regression test (`reason` says what went wrong)."""
    return pytest.param(text, id=id_)


BUGS = [
    # --- canonical output the parser rejects
    _xfail(
        "scf.while-attr-dict",
        _func("scf.while () : () -> () {\n    %c = arith.constant true\n    scf.condition(%c)\n  } do {\n    scf.yield\n  } {tag}"),
        "parser.while_op collects bindings with isinstance(x, tuple), which also matches the attr-dict clause "
        "C (a NamedTuple): any scf.while with a trailing attribute dictionary fails to parse",
    ),
    _xfail(
        "symbol-name-with-quote",
        'module @"a\\22b" {\n}\n',
        "a symbol name containing '\"' prints as @\"a\\\"b\", but the lexer's @\"[^\"\\n]*\" has no escapes",
    ),
    _xfail(
        "func.call-nested-callee",
        '"func.call"() {callee = @a::@b} : () -> ()\n',
        "the CALL printer prints any callee in the custom form; `func.call @a::@b()` does not parse",
    ),
    _xfail(
        "func.call-callee-not-symbol",
        'func.call @f() {callee = 5} : () -> ()\n',
        "the attr dict overrides the header callee; the CALL printer then prints `func.call 5()`",
    ),
    _xfail(
        "linalg-named-indexing_maps-alias",
        "#m = [affine_map<(d0) -> (d0)>]\n"
        + _func(
            "%0 = linalg.copy {indexing_maps = #m} ins(%t : tensor<4xf32>) outs(%t : tensor<4xf32>) -> tensor<4xf32>",
            "%t: tensor<4xf32>",
        ),
        "LINALG_NAMED prints indexing_maps from the attr dict in the header, where the grammar wants '[...]'",
    ),
    _xfail(
        "consume-dependency-not-a-set",
        _func(
            f"%r = ktdp.inter_tile_consume(%fu) consumer_tiles_per_group = {_SET} "
            f"{{producer_dependency_per_consumer = 5}} : {_FUT} -> tensor<4xf32>",
            f"%fu: {_FUT}",
        ),
        "_inter_tile_head prints producer_dependency_per_consumer from the attr dict in the header; "
        "the grammar only takes an affine_set or an alias there",
    ),
    _xfail(
        "affine.apply-map-not-a-map",
        _func('%0 = "affine.apply"(%a) {map = 5} : (index) -> index', "%a: index"),
        "AFFINE_APPLY prints a non-map `map` attribute in the custom form: `affine.apply 5(%a)`",
    ),
    _xfail(
        "produce-set-not-a-set",
        _func(
            f'%0 = "ktdp.inter_tile_produce"() ({{\n  ^bb0(%g: index):\n    "ktdp.yield_partial"() : () -> ()\n  }})'
            f" {{producer_tiles_per_group = 5}} : () -> {_FUT}"
        ),
        "PRODUCE prints a non-set producer_tiles_per_group in the custom form",
    ),
    _xfail(
        "constant-value-not-a-literal",
        _func('%0 = "arith.constant"() {value = unit} : () -> i32'),
        "CONSTANT prints any `value` in the custom form; `arith.constant unit` does not parse",
    ),
    _xfail(
        "attr-alias-mentions-type-alias",
        "!t = i32\n#a = !t\n",
        "the printer emits every attribute alias before every type alias, so `#a = !t` is printed before "
        "`!t = ...` and the reparse rejects the use of an undefined alias",
    ),
    # --- the AST changes through print -> parse
    _xfail(
        "access-tile-same-value-as-dim-and-symbol",
        _func(
            "%m = memref.alloc() : memref<4xf32>\n  %x = ktdp.construct_access_tile %m[%i + symbol(%i)] "
            "{access_tile_order = affine_map<(d0) -> (d0)>, access_tile_set = affine_set<(d0) : (d0 >= 0)>}"
            " : memref<4xf32> -> !ktdp.access_tile<4xindex>",
            "%i: index",
        ),
        "parser.ssa_map keys its name table by SSA name, so `symbol(%i)` overwrites the dim `%i`: the map "
        "becomes (d0)[s0] -> (s0 + s0) and prints as `symbol(%i) + symbol(%i)`",
    ),
    _xfail(
        "empty-properties",
        '"x.y"() <{}> : () -> ()\n',
        "`<{}>` parses to properties={} but prints as nothing, which parses to properties=None",
    ),
    _xfail(
        "func-sym_visibility-not-a-string",
        "func.func @f() attributes {sym_visibility = 3} {\n  func.return\n}\n",
        "FUNC elides sym_visibility from the attr dict but only prints it when it is a StringAttr",
    ),
    _xfail(
        "func-arg_attrs-all-empty",
        "func.func private @f(i32) attributes {arg_attrs = [{}]}\n",
        "FUNC elides arg_attrs and prints nothing for empty dictionaries; the reparse has no arg_attrs",
    ),
    _xfail(
        "module-sym_name-not-a-string",
        "module attributes {sym_name = 3} {\n}\n",
        "MODULE elides sym_name from the attr dict but only prints it (as @name) when it is a StringAttr",
    ),
    _xfail(
        "fastmath-enum-of-another-dialect",
        _func("%0 = arith.addf %a, %a {fastmath = #foo.fastmath<fast>} : f32", "%a: f32"),
        "_flags prints any EnumAttr under `fastmath` as `fastmath<...>`, which reparses as #arith.fastmath",
    ),
    _xfail(
        "fastmath-with-non-enum-overflowFlags",
        _func("%0 = arith.addf %a, %a {fastmath = #arith.fastmath<fast>, overflowFlags = 3} : f32", "%a: f32"),
        "_elementwise elides both flag keys when any flag prints, dropping a non-enum overflowFlags",
    ),
    _xfail(
        "pad-nofold-not-unit",
        _func(
            "%0 = tensor.pad %t low[0] high[0] {\n  ^bb0(%i: index):\n    tensor.yield %a : f32\n  }"
            " {nofold = 1} : tensor<4xf32> to tensor<4xf32>",
            "%t: tensor<4xf32>, %a: f32",
        ),
        "PAD prints `nofold` for any value of the attribute; it reparses as a UnitAttr",
    ),
    _xfail(
        "collective-dims-not-i64",
        _func(
            f"%r = ktdp.inter_tile_gather(%fu) consumer_tiles_per_group = {_SET} "
            f"{{gather_dimensions = array<i32: 0>}} : {_FUT} -> tensor<4xf32>",
            f"%fu: {_FUT}",
        ),
        "COLLECTIVE prints any DenseArrayAttr *_dimensions as `[...]`, which reparses as array<i64: ...>",
    ),
    _xfail(
        "cmpi-predicate-not-i64",
        _func('%0 = "arith.cmpi"(%a, %a) {predicate = 2 : i32} : (i32, i32) -> i1', "%a: i32"),
        "CMP prints the predicate by index and drops its type; it reparses as `2 : i64` "
        "(likewise linalg.index/concat `dim`, reassociation and static_* arrays of other integer types)",
    ),
]


@pytest.mark.parametrize("text", BUGS)
def test_library_bug_reproducers(text: str) -> None:
    _reparses_to_itself(text)


def test_comments_on_elided_terminator_survive() -> None:
    text = _func("scf.for %i = %a to %a step %a {\n    // before\n    scf.yield  // after\n  }", "%a: index")
    printed = print_module(parse(text))
    assert "// before" in printed and "// after" in printed


def test_invalid_string_escape_is_a_parse_error() -> None:
    with pytest.raises(ParseError):
        parse('#a = "x\\qy"\n')


def test_no_known_bugs_are_avoided() -> None:
    # the generator covers every case; a new workaround needs a reproducer in BUGS
    assert not KNOWN_BUGS


def test_short_body_accepts_only_elementwise_ops() -> None:
    # `{ linalg.yield }` once parsed and printed as `%__0 = linalg.yield ...`
    with pytest.raises(ParseError, match="expected an operation"):
        parse(_func(
            "%0 = linalg.map { linalg.yield } ins(%t : tensor<4xf32>) outs(%o : tensor<4xf32>)",
            "%t: tensor<4xf32>, %o: tensor<4xf32>",
        ))
