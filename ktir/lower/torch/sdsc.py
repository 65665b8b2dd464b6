"""SDSC (SuperDSC) JSON for the kernels that have one, so the two lowering paths can be
checked against each other: torch -> KTIR directly, and torch -> SDSC -> `ktir.lower`.

Written from ../shared/sdsc-samples/FORMAT.md. A kernel gets an SDSC when it is one op that
SDSC has (a unary or binary elementwise op, or a matmul without bias) over whole row-major
buffers whose innermost dim fills whole sticks. Row-major with the stick dim innermost is
exactly SDSC's device layout (dims = reverse(layoutDimOrder_), stick dim in sticks, lanes
last), so the same buffers feed both kernels. Everything else is listed with its reason.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ktir.lower.torch.expr import Expr, Op
from ktir.lower.torch.refs import STICK_BYTES, Buffer, Ref, element_bytes
from ktir.lower.torch.work import Division

UNARY = {"exp": "exp", "log": "log", "sqrt": "sqrt", "rsqrt": "rsqrt", "tanh": "tanh", "abs": "abs", "neg": "neg",
         "reciprocal": "reciprocal", "relu": "relufwd", "sigmoid": "sigmoid", "silu": "silu"}
BINARY = {"add": "add", "sub": "sub", "mul": "mul", "div": "realdiv", "maximum": "maximum", "minimum": "minimum"}
FORMATS = {"f16": "SEN169_FP16", "f32": "IEEE_FP32"}
POINTWISE_DIMS = ["mb", "x", "y", "i", "j", "ki", "kj"]
MATMUL_DIMS = ["ki", "kj", "y", "x", "mb", "out", "in"]


@dataclass(frozen=True)
class Tensor:
    buffer: str
    label: str  # layout class
    layout: list[str]  # dims innermost first
    scale: list[int]  # per layout dim: 1 spans it, -1 broadcast / reduced
    role: str  # in | out
    strides: dict[str, int]  # element stride of each spanned dim in the buffer


@dataclass(frozen=True)
class Spec:
    """What one SDSC says: op, iteration space (outermost first), splits, tensors."""

    opfunc: str
    dims: list[str]
    sizes: dict[str, int]
    splits: dict[str, int]
    tensors: list[Tensor]
    ktype: str


def _whole(ref: Ref, buffers: Mapping[str, Buffer]) -> bool:
    """`ref` is its whole buffer, row-major, possibly broadcast (stride-0 dims of extent 1 in it)."""
    buf = buffers[ref.buffer]
    if ref.offset != 0:
        return False
    kept = tuple(n for n, s in zip(ref.shape, ref.strides, strict=True) if s != 0)
    if math.prod(kept) != buf.size:
        return False
    dense = Ref(ref.buffer, ref.ktype, 0, kept, tuple(s for s in ref.strides if s != 0))
    return dense.is_contiguous()


def elementwise_spec(expr: Expr, out: Ref, div: Division, buffers: Mapping[str, Buffer]) -> Spec | str:
    """The SDSC of a one-op elementwise kernel, or why there is none."""
    if not isinstance(expr, Op) or expr.name not in UNARY and expr.name not in BINARY:
        return "not a single elementwise op SDSC has"
    operands = list(expr.args)
    if not all(isinstance(a, Ref) for a in operands):
        return "an operand is a constant or a fused expression"
    refs = [a for a in operands if isinstance(a, Ref)]
    ktype = out.ktype
    if ktype not in FORMATS or any(r.ktype != ktype for r in refs):
        return f"element types {sorted({ktype, *(r.ktype for r in refs)})} (SDSC: one of f16, f32)"
    rank = out.rank
    stick = STICK_BYTES // element_bytes(ktype)
    if rank == 0 or rank > len(POINTWISE_DIMS) + 1 or out.shape[-1] % stick:
        return f"the innermost dim {out.shape[-1] if rank else 0} does not fill whole sticks of {stick}"
    if not all(_whole(r, buffers) for r in [*refs, out]) or any(r.strides[-1] == 0 for r in refs):
        return "an operand is not a whole row-major buffer with the stick dim innermost"
    names = POINTWISE_DIMS[: rank - 1] + ["out"]
    layout = list(reversed(names))
    tensors = []
    for ref, role in [*((r, "in") for r in refs), (out, "out")]:
        scale = [1 if ref.strides[names.index(d)] != 0 else -1 for d in layout]
        strides = {d: s for d, s in zip(names, ref.strides, strict=True) if s != 0}
        tensors.append(Tensor(ref.buffer, "OUTPUT", layout, scale, role, strides))
    opfunc = UNARY.get(expr.name) or BINARY[expr.name]
    return Spec(opfunc, names, dict(zip(names, out.shape, strict=True)), _splits(names, div), tensors, ktype)


def matmul_spec(a: Ref, b: Ref, bias: Ref | None, out: Ref, div: Division, buffers: Mapping[str, Buffer]) -> Spec | str:
    """The SDSC (batchmatmul) of a matmul kernel, or why there is none."""
    if bias is not None:
        return "a matmul with a bias (SDSC has no fused bias)"
    ktype = out.ktype
    if ktype not in FORMATS or a.ktype != ktype or b.ktype != ktype:
        return "mixed or unsupported element types"
    stick = STICK_BYTES // element_bytes(ktype)
    if a.shape[-1] % stick or out.shape[-1] % stick:
        return f"K={a.shape[-1]} or N={out.shape[-1]} does not fill whole sticks of {stick}"
    nb = out.rank - 2
    broadcast = any(s == 0 and n > 1 for r in (a, b, out) for n, s in zip(r.shape, r.strides, strict=True))
    if nb > 4 or broadcast or not all(_whole(r, buffers) for r in (a, b, out)):
        return "an operand is broadcast, strided or not a whole row-major buffer"
    names = MATMUL_DIMS[-(nb + 3) :]  # [..batch, mb, out, in]
    batch, (m, n, k) = names[:nb], names[nb:]
    sizes = {**dict(zip(batch, out.shape[:nb], strict=True)), m: out.shape[-2], n: out.shape[-1], k: a.shape[-1]}
    rb = list(reversed(batch))
    tensors = [
        Tensor(a.buffer, "INPUT", [k, m, *rb], [1] * (nb + 2), "in", dict(zip([*batch, m, k], a.strides, strict=True))),
        Tensor(b.buffer, "KERNEL", [n, k, *rb], [1] * (nb + 2), "in", dict(zip([*batch, k, n], b.strides, strict=True))),
        Tensor(out.buffer, "OUTPUT", [n, m, *rb], [1] * (nb + 2), "out", dict(zip([*batch, m, n], out.strides, strict=True))),
    ]
    out_names = [*batch, m, n]
    return Spec("batchmatmul", [*batch, m, n, k], sizes, _splits(out_names, div), tensors, ktype)


def _splits(names: Sequence[str], div: Division) -> dict[str, int]:
    per_dim = dict(zip(div.split, div.grid, strict=True))
    return {name: per_dim.get(d, 1) for d, name in enumerate(names)}


# ---------------------------------------------------------------------- the JSON


def _fold(alpha: int, factor: int, label: str) -> tuple[dict[str, Any], dict[str, Any]]:
    return {"Affine": {"alpha_": alpha, "beta_": 0}}, {"factor_": factor, "label_": label}


def _coord_info(dim: str, stick_dim: str, spans: bool, splits: int, per_core: int, stick: int) -> dict[str, Any]:
    if spans and dim == stick_dim:
        folds = [_fold(per_core, splits, "core_fold"), _fold(0, 1, "corelet_fold"), _fold(0, 1, "row_fold"),
                 _fold(stick, per_core // stick, "elem_arr_1"), _fold(1, stick, "elem_arr_0")]
    elif spans:
        folds = [_fold(per_core, splits, "core_fold"), _fold(0, 1, "corelet_fold"), _fold(0, 1, "row_fold"),
                 _fold(1, per_core, "elem_arr_0")]
    else:
        folds = [_fold(1, 1, "core_fold"), _fold(0, 1, "corelet_fold"), _fold(0, 1, "row_fold"), _fold(1, 1, "elem_arr_0")]
    return {
        "spatial": 3, "temporal": 0, "elemArr": 2 if dim == stick_dim else 1, "padding": "nopad",
        "folds": {"dim_prop_func": [f for f, _ in folds], "dim_prop_attr": [a for _, a in folds]},
    }


def to_json(spec: Spec, key: str) -> dict[str, Any]:
    """The SDSC document `{key: SuperDsc}`; each tensor's base address is its index << 32 bytes."""
    word = element_bytes(spec.ktype)
    stick = STICK_BYTES // word
    per_core = {d: spec.sizes[d] // spec.splits.get(d, 1) for d in spec.dims}
    # core -> slice: mixed radix, the first iteration dim fastest (FORMAT.md 1.2)
    cores = math.prod(spec.splits.get(d, 1) for d in spec.dims)
    table = []
    for c in range(cores):
        row, rest = {}, c
        for d in spec.dims:
            row[d] = rest % spec.splits.get(d, 1)
            rest //= spec.splits.get(d, 1)
        table.append(row)
    labels: dict[str, Any] = {}
    nodes, lds = [], []
    for i, t in enumerate(spec.tensors):
        stick_dim = t.layout[0]
        labels.setdefault(t.label, {"layoutDimOrder_": t.layout, "stickDimOrder_": [stick_dim], "stickSize_": [stick]})
        base = (i + 1) << 32
        addresses = {}
        for c, row in enumerate(table):
            offset = sum(row[d] * per_core[d] * t.strides[d] for d in t.strides)
            addresses[f"[{c}, 0, 0]"] = str(base + offset * word)
        nodes.append({
            "nodeType_": "allocate", "name_": f"allocate-Tensor{i}_hbm", "prev_": "", "ldsIdx_": i, "component_": "hbm",
            "layoutDimOrder_": t.layout, "maxDimSizes_": [-1] * len(t.layout),
            "startAddressCoreCorelet_": {
                "dim_prop_func": [{"Map": {}}, {"Const": {}}, {"Const": {}}],
                "dim_prop_attr": [{"factor_": cores, "label_": "core"}, {"factor_": 1, "label_": "corelet"}, {"factor_": 1, "label_": "time"}],
                "data_": addresses,
            },
            "coordinates_": {
                "coordInfo": {
                    d: _coord_info(d, stick_dim, s == 1, spec.splits.get(d, 1), per_core[d], stick) for d, s in zip(t.layout, t.scale, strict=True)
                },
                "coreIdToWkSlice_": {},
            },
        })
        lds.append({"ldsIdx_": i, "dsName_": f"Tensor{i}", "dsType_": t.label, "scale_": t.scale, "wordLength": word,
                    "dataFormat_": FORMATS[spec.ktype], "memOrg_": {"hbm": {"isPresent": 1}, "lx": {"isPresent": 1}}})
    dsc = {
        "numCoresUsed_": cores, "numCoreletsUsed_": 1, "coreIdsUsed_": list(range(cores)),
        "N_": {"name_": "n", **{f"{d}_": spec.sizes[d] for d in spec.dims}},
        "coordinateMasking_": {}, "maskingConstId_": -1,
        "dataStageParam_": {"0": {"ss_": {"name_": "core", **{f"{d}_": v for d, v in per_core.items()}},
                                  "el_": {"name_": "core", **{f"{d}_": v for d, v in per_core.items()}}}},
        "primaryDsInfo_": labels, "scheduleTree_": nodes, "labeledDs_": lds, "constantInfo_": "{}",
        "computeOp_": [{
            "exUnit": "pt" if spec.opfunc == "batchmatmul" else "sfp", "opFuncName": spec.opfunc,
            "attributes_": {"dataFormat_": FORMATS[spec.ktype], "fidelity_": "regular"}, "location": "Inner",
            "inputLabeledDs": [f"Tensor{i}-idx{i}" for i, t in enumerate(spec.tensors) if t.role == "in"],
            "outputLabeledDs": [f"Tensor{i}-idx{i}" for i, t in enumerate(spec.tensors) if t.role == "out"],
        }],
    }
    body = {
        "sdscFoldProps_": [{"factor_": 1, "label_": "time"}],
        "coreFoldProp_": {"factor_": cores, "label_": "core"}, "coreletFoldProp_": {"factor_": 1, "label_": "corelet"},
        "numCoresUsed_": cores, "coreIdToDsc_": {str(c): 0 for c in range(cores)},
        "numWkSlicesPerDim_": {d: spec.splits.get(d, 1) for d in spec.dims},
        "coreIdToWkSlice_": {str(c): row for c, row in enumerate(table)},
        "coreIdToDscSchedule": {str(c): [[-1, 0, 0, 0]] for c in range(cores)},
        "dscs_": [{spec.opfunc: dsc}],
    }
    return {key: body}


