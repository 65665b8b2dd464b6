"""Synthetic SDSC files shaped like torch-spyre's, for ops and features the five samples lack.

Addresses and coordinate folds are computed here from FORMAT.md's rules, independently of
ktir.lower, so that the lowering's address check also tests this file's arithmetic.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .stick import to_device

WORD = {"SEN169_FP16": 2, "IEEE_FP32": 4, "IEEE_INT32": 4}


@dataclass
class T:
    """One tensor argument of a synthetic SDSC."""

    label: str  # layout class (primaryDsInfo_ key)
    layout: list[str]  # innermost first
    stick: str
    scale: list[int]
    role: str  # "in" or "out"
    space: str = "hbm"
    base: int = 0  # bytes
    fmt: str = "SEN169_FP16"
    stick_size: int = 64
    symbols: list[int] | None = None  # per-core symbol ids instead of addresses


def device_extents(t: T, n: dict[str, int], per_core: dict[str, int], whole: bool) -> list[int]:
    """The device dims (outermost first, lanes last) of the whole tensor or one core's box."""
    sizes = []
    for d, s in zip(reversed(t.layout), reversed(t.scale), strict=True):
        extent = (n[d] if whole else per_core[d]) if s == 1 else 1
        if d == t.stick:
            extent = extent // t.stick_size if s == 1 else 1
        sizes.append(extent)
    return [*sizes, t.stick_size]


def core_table(n: dict[str, int], splits: dict[str, int], order: Sequence[str] | None = None) -> list[dict[str, int]]:
    """Mixed radix: the first dim of `order` (default N_ order) varies fastest."""
    dims = list(order or n)
    cores = math.prod(splits.get(d, 1) for d in n)
    table = []
    for c in range(cores):
        row, rest = {}, c
        for d in dims:
            k = splits.get(d, 1)
            row[d] = rest % k
            rest //= k
        table.append({d: row[d] for d in n})
    return table


def start_address(t: T, n: dict[str, int], per_core: dict[str, int], slices: dict[str, int]) -> int:
    if t.space == "lx":
        return t.base
    extents = device_extents(t, n, per_core, whole=True)
    strides = [math.prod(extents[i + 1 :]) for i in range(len(extents))]
    offset = 0
    for i, (d, s) in enumerate(zip(reversed(t.layout), reversed(t.scale), strict=True)):
        if s != 1:
            continue
        start = slices[d] * per_core[d]
        offset += (start // t.stick_size if d == t.stick else start) * strides[i]
    return t.base + offset * WORD[t.fmt]


def _fold(alpha: int, factor: int, label: str) -> tuple[dict[str, Any], dict[str, Any]]:
    return {"Affine": {"alpha_": alpha, "beta_": 0}}, {"factor_": factor, "label_": label}


def coord_info(t: T, d: str, s: int, n: dict[str, int], splits: dict[str, int], per_core: dict[str, int]) -> dict[str, Any]:
    stick = d == t.stick
    if s == 1:
        folds = [_fold(per_core[d], splits.get(d, 1), "core_fold"), _fold(0, 1, "corelet_fold"), _fold(0, 1, "row_fold")]
        if stick:
            folds += [_fold(t.stick_size, per_core[d] // t.stick_size, "elem_arr_1"), _fold(1, t.stick_size, "elem_arr_0")]
        else:
            folds.append(_fold(1, per_core[d], "elem_arr_0"))
    elif s == -2:
        folds = [_fold(t.stick_size, 1, "core_fold"), _fold(0, 1, "corelet_fold"), _fold(0, 1, "row_fold"),
                 _fold(t.stick_size, 1, "elem_arr_1"), _fold(0, t.stick_size, "elem_arr_0")]
    else:
        folds = [_fold(1, 1, "core_fold"), _fold(0, 1, "corelet_fold"), _fold(0, 1, "row_fold"), _fold(1, 1, "elem_arr_0")]
    return {
        "spatial": 3, "temporal": 0, "elemArr": 2 if stick else 1, "padding": "nopad",
        "folds": {"dim_prop_func": [f for f, _ in folds], "dim_prop_attr": [a for _, a in folds]},
    }


def sdsc(key: str, opfunc: str, n: dict[str, int], splits: dict[str, int], tensors: Sequence[T], *,
         ex_unit: str = "sfp", constants: dict[str, int] | None = None, order: Sequence[str] | None = None) -> dict[str, Any]:
    """An SDSC document: `{key: SuperDsc}`."""
    per_core = {d: n[d] // splits.get(d, 1) for d in n}
    table = core_table(n, splits, order)
    cores = len(table)
    labels: dict[str, dict[str, Any]] = {}
    nodes, lds = [], []
    for i, t in enumerate(tensors):
        labels[t.label] = {"layoutDimOrder_": t.layout, "stickDimOrder_": [t.stick], "stickSize_": [t.stick_size]}
        if t.symbols is not None:
            data = {f"[{c}, 0, 0]": str(t.symbols[c]) for c in range(cores)}
        else:
            data = {f"[{c}, 0, 0]": str(start_address(t, n, per_core, table[c])) for c in range(cores)}
        node: dict[str, Any] = {
            "nodeType_": "allocate", "name_": f"allocate-Tensor{i}_{t.space}", "prev_": "", "ldsIdx_": i,
            "component_": t.space, "layoutDimOrder_": t.layout, "maxDimSizes_": [-1] * len(t.layout),
            "startAddressCoreCorelet_": {
                "dim_prop_func": [{"Map": {}}, {"Const": {}}, {"Const": {}}],
                "dim_prop_attr": [{"factor_": cores, "label_": "core"}, {"factor_": 1, "label_": "corelet"},
                                  {"factor_": 1, "label_": "time"}],
                "data_": data,
            },
            "coordinates_": {"coordInfo": {d: coord_info(t, d, s, n, splits, per_core) for d, s in zip(t.layout, t.scale, strict=True)},
                             "coreIdToWkSlice_": {}},
        }
        if t.symbols is not None:
            node["isStartAddrSymbolic_"] = 1
        nodes.append(node)
        mem = {"lx": {"isPresent": 1}} if t.space == "lx" else {"hbm": {"isPresent": 1}, "lx": {"isPresent": 1}}
        lds.append({"ldsIdx_": i, "dsName_": f"Tensor{i}", "dsType_": t.label, "scale_": t.scale,
                    "wordLength": WORD[t.fmt], "dataFormat_": t.fmt, "memOrg_": mem})
    consts: Any = "{}"
    if constants:
        consts = {str(k): {"dataFormat_": "SEN169_FP16", "name_": name,
                           "data_": {"dim_prop_func": [{"Const": {}}, {"Const": {}}, {"Map": {}}],
                                     "dim_prop_attr": [{"factor_": cores, "label_": "core"}, {"factor_": 1, "label_": "corelet"},
                                                       {"factor_": 1, "label_": "time"}],
                                     "data_": {"[0, 0, 0]": [bits]}}}
                  for k, (name, bits) in enumerate(constants.items())}
    ins = [f"Tensor{i}-idx{i}" for i, t in enumerate(tensors) if t.role == "in"]
    outs = [f"Tensor{i}-idx{i}" for i, t in enumerate(tensors) if t.role == "out"]
    dsc = {
        "numCoresUsed_": cores, "numCoreletsUsed_": 1, "coreIdsUsed_": list(range(cores)),
        "N_": {"name_": "n", **{f"{d}_": v for d, v in n.items()}},
        "coordinateMasking_": {}, "maskingConstId_": -1,
        "dataStageParam_": {"0": {"ss_": {"name_": "core", **{f"{d}_": v for d, v in per_core.items()}},
                                  "el_": {"name_": "core", **{f"{d}_": v for d, v in per_core.items()}}}},
        "primaryDsInfo_": labels, "scheduleTree_": nodes, "labeledDs_": lds, "constantInfo_": consts,
        "computeOp_": [{"exUnit": ex_unit, "opFuncName": opfunc,
                        "attributes_": {"dataFormat_": "SEN169_FP16", "fidelity_": "regular"},
                        "location": "Inner", "inputLabeledDs": ins, "outputLabeledDs": outs}],
    }
    body = {
        "sdscFoldProps_": [{"factor_": 1, "label_": "time"}],
        "coreFoldProp_": {"factor_": cores, "label_": "core"}, "coreletFoldProp_": {"factor_": 1, "label_": "corelet"},
        "numCoresUsed_": cores, "coreIdToDsc_": {str(c): 0 for c in range(cores)},
        "numWkSlicesPerDim_": {d: splits.get(d, 1) for d in n},
        "coreIdToWkSlice_": {str(c): row for c, row in enumerate(table)},
        "coreIdToDscSchedule": {str(c): [[-1, 0, 0, 0]] for c in range(cores)},
        "dscs_": [{opfunc: dsc}],
    }
    return {key: body}


def write(path: Path, doc: dict[str, Any]) -> Path:
    path.write_text(json.dumps(doc, indent=1))
    return path


def device(x: np.ndarray, dims: Sequence[str], t: T) -> np.ndarray:
    return to_device(x, dims, t.layout, t.stick, t.stick_size)
