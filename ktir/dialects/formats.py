"""Declarative assembly formats: the custom syntax of the regular op formats, as data.

An op definition names its format (`OpDef.format`); this module describes the regular
ones in a small language modelled on MLIR's ODS `assemblyFormat`. The grammar rule, the
parse-tree -> Operation conversion and the printer of each format described here are all
derived from its description by `ktir.syntax.assembly` (which holds the language's
reader and the list of formats still written by hand, with the reason for each). This
module only states the formats; it reads no text.

The language (as ODS, with the same spacing rules when printing):

- `` `lit` ``: a keyword or punctuation; ``` `` ``` prints no space before what follows.
- `$name`: an operand (one value, or a comma-separated list if it is variadic) or an
  attribute the format spells (see `attributes`).
- `type($name)`: the type of an operand or result (a type list if variadic).
- `functional-type(operands, results)`: `(T, ...) -> R` for all operands and results.
- `attr-dict`: the optional `{...}` of the attributes the format does not spell.
- `custom<Name>(...)`: a shared piece of syntax: `ArithFlags` (`fastmath<...>`,
  `overflow<...>`), `DynamicIndexList` (`[0, %o]`: static values in an i64 array attribute,
  SSA values as operands), `Reassociation` (`[[0, 1], [2]]`), `SelectTypes`
  (`T` or `C, T`: the condition's type is written when it is not i1).
- `( ... )?`: an optional group, present when its anchor (`^`) is: a variadic operand or
  type list that is not empty, or an attribute that is set.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class AssemblyFormat:
    """The custom syntax of one format.

    `operands` and `results` name the values in order; a suffix `*` marks a variadic group
    that may be empty, `+` one that may not, `?` a result only some ops of the format have
    (as their definitions say). Each operand and result type is either written (`type(...)`
    or `functional-type`) or derived as `types` states: `$other` (the same type as a
    written one), `index`, `i1`, `i1_like($x)` (i1 with the shape of x) or
    `element_type($x)`. `attributes` gives the kind of each attribute the format spells
    as `$name`: `predicate` (a keyword stored as its index in the op's `predicates`
    option), `int` (a non-negative integer, i64) or `symbol` (`@name`). `segments` adds
    the `operandSegmentSizes` attribute of ops with several variadic operand groups.
    """

    syntax: str
    operands: tuple[str, ...] = ()
    results: tuple[str, ...] = ()
    types: tuple[tuple[str, str], ...] = ()
    attributes: tuple[tuple[str, str], ...] = ()
    segments: bool = False
    rule: str = ""  # the grammar rule's name, when not `<format>_op`


_SAME = (("operand", "$result"),)
_INDEX_LISTS = (("offsets", "index"), ("sizes", "index"), ("strides", "index"))
_OSS = (
    "custom<DynamicIndexList>($offsets, $static_offsets) custom<DynamicIndexList>($sizes, $static_sizes)"
    " custom<DynamicIndexList>($strides, $static_strides)"
)

FORMATS: dict[str, AssemblyFormat] = {
    # ------------------------------------------------------------ func
    "CALL": AssemblyFormat(
        "$callee `(` $operands `)` attr-dict `:` functional-type(operands, results)",
        operands=("operands*",),
        results=("results*",),
        attributes=(("callee", "symbol"),),
    ),
    # ------------------------------------------------------------ arith, math
    "UNARY": AssemblyFormat(
        "$operand custom<ArithFlags>($fastmath, $overflowFlags) attr-dict `:` type($result)",
        operands=("operand",),
        results=("result",),
        types=_SAME,
    ),
    "BINARY": AssemblyFormat(
        "$lhs `,` $rhs custom<ArithFlags>($fastmath, $overflowFlags) attr-dict `:` type($result)",
        operands=("lhs", "rhs"),
        results=("result",),
        types=(("lhs", "$result"), ("rhs", "$result")),
    ),
    "TERNARY": AssemblyFormat(
        "$a `,` $b `,` $c custom<ArithFlags>($fastmath, $overflowFlags) attr-dict `:` type($result)",
        operands=("a", "b", "c"),
        results=("result",),
        types=(("a", "$result"), ("b", "$result"), ("c", "$result")),
    ),
    "CAST": AssemblyFormat(
        "$in attr-dict `:` type($in) `to` type($out)",
        operands=("in",),
        results=("out",),
    ),
    "CMP": AssemblyFormat(
        "$predicate `,` $lhs `,` $rhs attr-dict `:` type($lhs)",
        operands=("lhs", "rhs"),
        results=("result",),
        types=(("rhs", "$lhs"), ("result", "i1_like($lhs)")),
        attributes=(("predicate", "predicate"),),
    ),
    "SELECT": AssemblyFormat(
        "$condition `,` $true_value `,` $false_value attr-dict `:` custom<SelectTypes>(type($condition), type($result))",
        operands=("condition", "true_value", "false_value"),
        results=("result",),
        types=(("true_value", "$result"), ("false_value", "$result")),
    ),
    # ------------------------------------------------------------ ktdp
    "TILE_ID": AssemblyFormat(
        "attr-dict `:` type($ids)",
        results=("ids+",),
    ),
    "MEMORY_VIEW": AssemblyFormat(
        "$offset `,` `sizes` `` `:` custom<DynamicIndexList>($sizes, $static_sizes) `,` `strides` `` `:`"
        " custom<DynamicIndexList>($strides, $static_strides) attr-dict `:` type($result)",
        operands=("offset", "sizes*", "strides*"),
        results=("result",),
        types=(("offset", "index"), ("sizes", "index"), ("strides", "index")),
        segments=True,
    ),
    "DISTRIBUTED_VIEW": AssemblyFormat(
        "`(` ($views^ `:` type($views))? `)` attr-dict `:` type($result)",
        operands=("views*",),
        results=("result",),
    ),
    "LOAD": AssemblyFormat(
        "$tile attr-dict `:` type($tile) `->` type($result)",
        operands=("tile",),
        results=("result",),
    ),
    "STORE": AssemblyFormat(
        "$value `,` $tile attr-dict `:` type($value) `,` type($tile)",
        operands=("value", "tile"),
    ),
    # ------------------------------------------------------------ scf
    "CONDITION": AssemblyFormat(
        "`(` $condition `)` attr-dict ($args^ `:` type($args))?",
        operands=("condition", "args*"),
        types=(("condition", "i1"),),
    ),
    # ------------------------------------------------------------ linalg
    "LINALG_INDEX": AssemblyFormat(
        "$dim attr-dict `:` type($result)",
        results=("result",),
        attributes=(("dim", "int"),),
    ),
    # ------------------------------------------------------------ tensor, memref
    "EMPTY": AssemblyFormat(
        "`(` $dynamic_sizes `)` attr-dict `:` type($result)",
        operands=("dynamic_sizes*",),
        results=("result",),
        types=(("dynamic_sizes", "index"),),
    ),
    "SPLAT": AssemblyFormat(
        "$input (`[` $dynamic_sizes^ `]`)? attr-dict `:` type($result)",
        operands=("input", "dynamic_sizes*"),
        results=("result",),
        types=(("input", "element_type($result)"), ("dynamic_sizes", "index")),
    ),
    "EXTRACT": AssemblyFormat(
        "$source `[` $indices `]` attr-dict `:` type($source)",
        operands=("source", "indices*"),
        results=("result",),
        types=(("indices", "index"), ("result", "element_type($source)")),
    ),
    "INSERT": AssemblyFormat(
        "$scalar `into` $dest `[` $indices `]` attr-dict `:` type($dest)",
        operands=("scalar", "dest", "indices*"),
        results=("result",),
        types=(("scalar", "element_type($dest)"), ("indices", "index"), ("result", "$dest")),
    ),
    "MEMREF_STORE": AssemblyFormat(
        "$value `,` $memref `[` $indices `]` attr-dict `:` type($memref)",
        operands=("value", "memref", "indices*"),
        types=(("value", "element_type($memref)"), ("indices", "index")),
        rule="store_like_op",
    ),
    "SLICE": AssemblyFormat(
        f"$source `` {_OSS} attr-dict `:` type($source) `to` type($result)",
        operands=("source", "offsets*", "sizes*", "strides*"),
        results=("result",),
        types=_INDEX_LISTS,
        segments=True,
    ),
    "INSERT_SLICE": AssemblyFormat(
        f"$source `into` $dest `` {_OSS} attr-dict `:` type($source) `into` type($dest)",
        operands=("source", "dest", "offsets*", "sizes*", "strides*"),
        results=("result?",),
        types=(*_INDEX_LISTS, ("result", "$dest")),
        segments=True,
    ),
    "EXPAND_SHAPE": AssemblyFormat(
        "$src custom<Reassociation>($reassociation) `output_shape`"
        " custom<DynamicIndexList>($output_shape, $static_output_shape) attr-dict `:` type($src) `into` type($result)",
        operands=("src", "output_shape*"),
        results=("result",),
        types=(("output_shape", "index"),),
    ),
    "COLLAPSE_SHAPE": AssemblyFormat(
        "$src custom<Reassociation>($reassociation) attr-dict `:` type($src) `into` type($result)",
        operands=("src",),
        results=("result",),
    ),
    "RESHAPE": AssemblyFormat(
        "$source `(` $shape `)` attr-dict `:` functional-type(operands, results)",
        operands=("source", "shape"),
        results=("result",),
    ),
    "CONCAT": AssemblyFormat(
        "`dim` `(` $dim `)` $inputs attr-dict `:` functional-type(operands, results)",
        operands=("inputs+",),
        results=("result",),
        attributes=(("dim", "int"),),
    ),
    "DIM": AssemblyFormat(
        "$source `,` $index attr-dict `:` type($source)",
        operands=("source", "index"),
        results=("result",),
        types=(("index", "index"), ("result", "index")),
    ),
    "REINTERPRET_CAST": AssemblyFormat(
        "$source `to` `offset` `` `:` custom<DynamicIndexList>($offsets, $static_offsets) `,` `sizes` `` `:`"
        " custom<DynamicIndexList>($sizes, $static_sizes) `,` `strides` `` `:`"
        " custom<DynamicIndexList>($strides, $static_strides) attr-dict `:` type($source) `to` type($result)",
        operands=("source", "offsets*", "sizes*", "strides*"),
        results=("result",),
        types=_INDEX_LISTS,
        segments=True,
    ),
}
