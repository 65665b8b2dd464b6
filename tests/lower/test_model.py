"""Reading SDSC files: tolerant of unknown keys, loud (naming the key) on what changes meaning."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ktir.lower import SdscError, build_kernel, load_sdsc_file, lower_sdsc, parse_sdsc
from ktir.lower.layout import decode_sen169

from .stick import DATA

EXP = "small_bmm_sdsc_3_exp_2d_hbm_to_lx.json"


def _doc() -> dict[str, Any]:
    return json.loads((DATA / EXP).read_text())


def _dsc(doc: dict[str, Any]) -> dict[str, Any]:
    return doc["3_exp"]["dscs_"][0]["exp"]


def test_unknown_keys_are_kept() -> None:
    doc = _doc()
    doc["3_exp"]["futureField_"] = {"x": 1}
    _dsc(doc)["labeledDs_"][0]["newAnnotation_"] = [1, 2]
    sdsc = parse_sdsc(doc)
    assert sdsc.superdsc.model_extra == {"sdscFoldProps_": doc["3_exp"]["sdscFoldProps_"], "sdscFolds_": doc["3_exp"]["sdscFolds_"],
                                         "coreIdToDscSchedule": doc["3_exp"]["coreIdToDscSchedule"], "futureField_": {"x": 1}}
    assert sdsc.dsc.labeledDs_[0].model_extra == {"newAnnotation_": [1, 2]}
    lower_sdsc(sdsc)  # still lowers


def test_file_identity() -> None:
    sdsc = load_sdsc_file(DATA / EXP)
    assert (sdsc.key, sdsc.index, sdsc.opfunc) == ("3_exp", 3, "exp")
    assert sdsc.dsc.constantInfo_ == {}  # the writer's "{}" string


def _set(path: list[Any], value: Any) -> Callable[[dict[str, Any]], None]:
    def edit(doc: dict[str, Any]) -> None:
        node: Any = _dsc(doc)
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value

    return edit


def _top(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def edit(doc: dict[str, Any]) -> None:
        doc["3_exp"][key] = value

    return edit


BAD: list[tuple[str, Callable[[dict[str, Any]], None], str]] = [
    ("scale type", _set(["labeledDs_", 1, "scale_"], "wide"), r"3_exp\.dscs_\[0\]\.exp\.labeledDs_\[1\]\.scale_: Input should be a valid list"),
    ("scale value", _set(["labeledDs_", 1, "scale_"], [1, 3]), r"labeledDs_\[1\]\.scale_: 3 for dim 'mb' \(expected 1, -1 or -2\)"),
    ("data format", _set(["labeledDs_", 0, "dataFormat_"], "SEN153_FP9"), r"labeledDs_\[0\]\.dataFormat_: data format 'SEN153_FP9' is not supported"),
    ("layout class", _set(["labeledDs_", 0, "dsType_"], "KERNEL_IDX"), r"labeledDs_\[0\]\.dsType_: unknown layout class 'KERNEL_IDX' \(primaryDsInfo_ has OUTPUT\)"),
    ("layout order", _set(["primaryDsInfo_", "OUTPUT", "layoutDimOrder_"], ["mb", "out"]),
     r"scheduleTree_\[0\]\.layoutDimOrder_: \['out', 'mb'\] differs from 3_exp\.dscs_\[0\]\.exp\.primaryDsInfo_\.OUTPUT\.layoutDimOrder_ \['mb', 'out'\]"),
    ("two stick dims", _set(["primaryDsInfo_", "OUTPUT", "stickDimOrder_"], ["out", "mb"]), r"sticks over several dims are not supported"),
    ("component", _set(["scheduleTree_", 1, "component_"], "l3"), r"scheduleTree_\[1\]\.component_: 'l3' \(expected 'hbm' or 'lx'\)"),
    ("missing address", _set(["scheduleTree_", 0, "startAddressCoreCorelet_", "data_"], {"[0, 0, 0]": "524288"}),
     r"scheduleTree_\[0\]\.startAddressCoreCorelet_\.data_: no start address for core 1"),
    ("bad address", _set(["scheduleTree_", 0, "startAddressCoreCorelet_", "data_", "[4, 0, 0]"], "0x80"), r"data_\.\[4, 0, 0\]: '0x80' is not an integer address"),
    ("uneven stage", _set(["dataStageParam_", "0", "ss_", "mb_"], 9), r"dataStageParam_\.0\.ss_\.mb_: per-core extent 9, but N_ / numWkSlicesPerDim_ gives 256 / 32 = 8"),
    ("masking", _set(["coordinateMasking_"], {"out": [[500, 12]]}), r"coordinateMasking_: masked \(padded\) reductions are not supported"),
    ("indirect", _set(["scheduleTree_", 0, "indirectAllocType_"], "value_tensor"), r"indirectAllocType_: 'value_tensor' \(indirect access\)"),
    ("back gap", _set(["scheduleTree_", 0, "backGapCore_"], {"out": {"-1": 64}}), r"backGapCore_: padded tensors \(back gaps\) are not supported"),
    ("folds", _set(["scheduleTree_", 0, "coordinates_", "coordInfo", "mb", "folds", "dim_prop_attr", 0, "factor_"], 16),
     r"coordInfo\.mb: the fold factors \[16, 1, 1, 8\] cover 128 elements, but Tensor0 has 256 in 'mb'"),
    ("operand ref", _set(["computeOp_", 0, "inputLabeledDs"], ["Tensor0-idx7"]), r"inputLabeledDs: 'Tensor0-idx7' names no labeledDs_ entry"),
    ("node type", _set(["scheduleTree_", 0, "nodeType_"], "loop"), r"scheduleTree_\[0\]\.nodeType_: 'loop' nodes are not supported"),
    ("symbolic dims", _set(["dimToSymbolMapping_"], {"mb": "-1"}), r"dimToSymbolMapping_: symbolic dimension sizes are not supported"),
    ("cores", _top("numCoresUsed_", 16), r"3_exp\.dscs_\[0\]\.exp\.numCoresUsed_: 32, but the SuperDsc says 16"),
    ("slice table", _top("coreIdToWkSlice_", {**{str(c): {"mb": c} for c in range(32)}, "5": {"mb": 4}}),
     r"coreIdToWkSlice_: cores 4 and 5 work on the same slice \{'mb': 4, 'out': 0\}"),
    ("splits", _top("numWkSlicesPerDim_", {"mb": 32, "out": 3}), r"numWkSlicesPerDim_\.out: 3 slices do not divide the size 512 evenly"),
]


@pytest.mark.parametrize(("case", "edit", "message"), BAD, ids=[b[0] for b in BAD])
def test_bad_input_is_refused_naming_the_key(case: str, edit: Callable[[dict[str, Any]], None], message: str) -> None:
    doc = copy.deepcopy(_doc())
    edit(doc)
    with pytest.raises(SdscError, match=message):
        lower_sdsc(parse_sdsc(doc, "x.json"))


def test_document_shape_errors(tmp_path: Path) -> None:
    with pytest.raises(SdscError, match="one object under a single key"):
        parse_sdsc({"a": {}, "b": {}})
    with pytest.raises(SdscError, match=r"data-movement SDSC \(datadscs_ without dscs_"):
        parse_sdsc({"reshape": {"numCoresUsed_": 1, "dscs_": [], "datadscs_": [{"x": 1}]}})
    bad = tmp_path / "bad.json"
    bad.write_text('{"3_exp": {"numCoresUsed_": 1,}}')
    with pytest.raises(SdscError) as info:
        load_sdsc_file(bad)
    assert info.value.render().startswith(f"{bad}:1:") and "not JSON" in info.value.render()


def test_kernel_spec_of_the_matmul() -> None:
    kernel = build_kernel(load_sdsc_file(DATA / "mm512_sdsc_0_batchmatmul.json"))
    assert [(d.name, d.size, d.splits) for d in kernel.dims] == [("mb", 512, 32), ("out", 512, 1), ("in", 512, 1)]
    a, b, c = kernel.tensors
    assert (a.view_shape, a.tile_shape) == ((8, 512, 64), (8, 16, 64))  # [in/64, mb, lanes]
    assert (b.view_shape, b.tile_shape) == ((8, 512, 64), (8, 512, 64))  # [out/64, in, lanes]: every core reads all of B
    assert [a.core_offset(s) for s in kernel.slices[:3]] == [0, 1024, 2048]  # elements


@pytest.mark.parametrize(("bits", "value"), [(11776, 2.0**-8), (7327, 1.0000e-5), (0, 0.0), (31 << 9, 1.0), ((31 << 9) | 0x8000 | 256, -1.5)])
def test_sen169_constants(bits: int, value: float) -> None:
    assert decode_sen169(bits) == pytest.approx(value, rel=2e-3)
