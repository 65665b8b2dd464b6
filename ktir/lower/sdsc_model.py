"""Pydantic models of an SDSC (SuperDSC) JSON file, as torch-spyre's Inductor backend writes it.

Field names are the JSON keys. Parsing is tolerant: every model keeps the keys it does not
know (`extra="allow"`), and only what the lowering reads is typed. A file whose typed parts
do not fit is reported with the JSON path of the offending key.

    sdsc = load_sdsc_file("sdsc_3.json")
    sdsc.key, sdsc.opfunc, sdsc.dsc.N_
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ktir.lower.errors import SdscError


class _Tolerant(BaseModel):
    """Keeps unknown keys (SDSC keeps growing); types only the keys the lowering reads."""

    model_config = ConfigDict(extra="allow", frozen=True)


class FoldProperty(_Tolerant):
    """`{"factor_": 32, "label_": "core"}`."""

    factor_: int = Field(description="number of positions of this fold level")
    label_: str = Field(description="fold level name: time, core, corelet, core_fold, elem_arr_0, ...")


class FoldManager(_Tolerant):
    """A value folded over levels: per level a function (Map, Const, Affine) and a property."""

    dim_prop_func: list[dict[str, Any]] = Field(default_factory=list, description="one {kind: params} per level")
    dim_prop_attr: list[FoldProperty] = Field(default_factory=list, description="one fold property per level")
    data_: dict[str, Any] = Field(default_factory=dict, description='values by position, e.g. {"[3, 0, 0]": "6144"}')

    def affine(self, level: int) -> tuple[int, int] | None:
        """(alpha, beta) of an Affine level, None for other kinds."""
        func = self.dim_prop_func[level] if level < len(self.dim_prop_func) else {}
        params = func.get("Affine")
        if not isinstance(params, dict):
            return None
        return int(params.get("alpha_", 0)), int(params.get("beta_", 0))


class CoordinateInfo(_Tolerant):
    """How one dimension's coordinate decomposes over core, corelet, row and element folds."""

    elemArr: int | None = Field(default=None, description="1 = non-stick dim, 2 = stick dim")
    padding: str | None = Field(default=None, description='"nopad" when the dim is not padded')
    folds: FoldManager = Field(default_factory=FoldManager, description="the mixed-radix decomposition")


class Coordinates(_Tolerant):
    coordInfo: dict[str, CoordinateInfo] = Field(default_factory=dict, description="by dimension label")


class ScheduleNode(_Tolerant):
    """A `scheduleTree_` node; the lowering understands `allocate` nodes only."""

    nodeType_: str = Field(description='"allocate"')
    name_: str = Field(default="", description='"allocate-Tensor0_hbm"')
    ldsIdx_: int | None = Field(default=None, description="index of the labeledDs_ entry this node places")
    component_: str | None = Field(default=None, description='"hbm" (device DRAM) or "lx" (per-core scratchpad)')
    layoutDimOrder_: list[str] = Field(default_factory=list, description="dims, innermost first")
    maxDimSizes_: list[int] = Field(default_factory=list, description="-1 = unbounded")
    isStartAddrSymbolic_: bool | int | None = Field(default=None, description="addresses are symbol ids")
    nonUnifiedAllocInHBM_: bool | int | None = Field(default=None, description="one HBM tensor per core")
    indirectAllocType_: str | None = Field(default=None, description='"no_indirection", "value_tensor", "index_tensor"')
    startAddressCoreCorelet_: FoldManager | None = Field(default=None, description="start address per core")
    backGapCore_: dict[str, Any] | None = Field(default=None, description="per-dim padding after the data")
    coordinates_: Coordinates = Field(default_factory=Coordinates, description="coordinate folds per dim")


class LayoutInfo(_Tolerant):
    """A `primaryDsInfo_` entry: one tiling shared by a class of tensors."""

    layoutDimOrder_: list[str] = Field(description="dims, innermost (smallest stride) first")
    stickDimOrder_: list[str] = Field(description="the stick dim(s)")
    stickSize_: list[int] = Field(description="elements per stick, parallel to stickDimOrder_")


class LabeledDs(_Tolerant):
    """A tensor argument of the op (`labeledDs_` entry)."""

    ldsIdx_: int = Field(description="position; scheduleTree_ nodes refer to it")
    dsName_: str = Field(description='"Tensor0"')
    dsType_: str = Field(description="layout class: a key of primaryDsInfo_ (INPUT, OUTPUT, KERNEL, ...)")
    scale_: list[int] = Field(description="per layout dim: 1 spans, -1 broadcast/reduced, -2 stick broadcast/reduced")
    wordLength: int | None = Field(default=None, description="bytes per element")
    dataFormat_: str = Field(description='device data format, e.g. "SEN169_FP16"')
    memOrg_: dict[str, Any] = Field(default_factory=dict, description="hbm / lx presence")


class ComputeOp(_Tolerant):
    exUnit: str | None = Field(default=None, description='"sfp" or "pt"')
    opFuncName: str = Field(description='the SDSC op function, e.g. "add", "batchmatmul"')
    attributes_: dict[str, Any] = Field(default_factory=dict, description="dataFormat_, fidelity_")
    inputLabeledDs: list[str] = Field(default_factory=list, description='"Tensor0-idx0", ...')
    outputLabeledDs: list[str] = Field(default_factory=list, description='"Tensor2-idx2"')
    indirectAccessIndexLabeledDs: list[str] | None = Field(default=None, description="index tensors of gathers")
    interimLabeledDs: list[str] | None = Field(default=None, description="fused intermediates")


class ConstantInfo(_Tolerant):
    dataFormat_: str = Field(description="format of the encoded bits")
    name_: str = Field(description='"eps", "scaling_factor", ...')
    data_: FoldManager = Field(description="encoded value(s)")


class Dsc(_Tolerant):
    """The design space config `dscs_[0][opfunc]`: the op's iteration space, tensors and compute."""

    numCoresUsed_: int | None = None
    N_: dict[str, Any] = Field(description='iteration space {"name_": "n", "mb_": 256, "out_": 512}')
    dataStageParam_: dict[str, Any] = Field(default_factory=dict, description="per-core extents (ss_, el_)")
    primaryDsInfo_: dict[str, LayoutInfo] = Field(description="layout classes by label")
    scheduleTree_: list[ScheduleNode] = Field(description="one allocate node per tensor")
    labeledDs_: list[LabeledDs] = Field(description="the tensors, inputs first")
    constantInfo_: dict[str, ConstantInfo] = Field(default_factory=dict, description='scalar constants ("{}" = none)')
    coordinateMasking_: dict[str, Any] = Field(default_factory=dict, description="padding masks of reductions")
    maskingConstId_: int = -1
    computeOp_: list[ComputeOp] = Field(description="the compute op (one)")

    @field_validator("constantInfo_", mode="before")
    @classmethod
    def _empty_string_means_none(cls, value: Any) -> Any:
        # Quirk of the writer: no constants is the string "{}", not an object.
        if isinstance(value, str) and value.strip() in ("", "{}"):
            return {}
        return value


class SuperDsc(_Tolerant):
    """The top-level object of an SDSC file (the value under its single key)."""

    numCoresUsed_: int = Field(description="cores the op runs on")
    coreFoldProp_: FoldProperty | None = None
    coreletFoldProp_: FoldProperty | None = None
    numWkSlicesPerDim_: dict[str, int] = Field(default_factory=dict, description="splits per iteration dim")
    coreIdToWkSlice_: dict[str, dict[str, int]] = Field(default_factory=dict, description="core -> slice per dim")
    coreIdToDsc_: dict[str, int] = Field(default_factory=dict, description="core -> index into dscs_")
    dscs_: list[dict[str, Dsc]] = Field(description="one {opfunc: DSC} entry")
    datadscs_: list[Any] | None = Field(default=None, description="data-movement DSCs (legacy / experimental)")


class SdscFile(BaseModel):
    """One parsed SDSC file: its top-level key (`"3_exp"`), the SuperDsc, and where it came from."""

    model_config = ConfigDict(frozen=True)

    key: str
    superdsc: SuperDsc
    path: str | None = None

    @property
    def index(self) -> int | None:
        """The op's index in its bundle, from a `"<idx>_<opfunc>"` key (None for `"<opfunc>"`)."""
        head, sep, _ = self.key.partition("_")
        return int(head) if sep and head.isdigit() else None

    @property
    def opfunc(self) -> str:
        (name,) = self.superdsc.dscs_[0].keys()
        return name

    @property
    def dsc(self) -> Dsc:
        return next(iter(self.superdsc.dscs_[0].values()))


def _json_path(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def parse_sdsc(data: Any, path: str | None = None) -> SdscFile:
    """Validate a decoded SDSC document; raise SdscError naming the key at fault."""
    if not isinstance(data, dict) or len(data) != 1:
        keys = ", ".join(map(repr, data)) if isinstance(data, dict) else type(data).__name__
        raise SdscError(f"an SDSC file holds one object under a single key (the op name); found {keys}", path)
    ((key, body),) = data.items()
    if not isinstance(body, dict):
        raise SdscError(f"{key}: expected an object, found {type(body).__name__}", path)
    if not body.get("dscs_"):
        if body.get("datadscs_"):
            raise SdscError(
                f"{key}: a data-movement SDSC (datadscs_ without dscs_, the Nov-2025 'reshape' form) is not supported",
                path,
            )
        raise SdscError(f"{key}.dscs_: missing or empty: no compute op to lower", path)
    try:
        superdsc = SuperDsc.model_validate(body)
    except ValidationError as e:
        first = e.errors()[0]
        where = _json_path((key, *first["loc"]))
        raise SdscError(f"{where}: {first['msg']}", path) from None
    folds = (superdsc.model_extra or {}).get("sdscFoldProps_")
    if folds is not None and not isinstance(folds, list):  # an extra field the lowering walks
        raise SdscError(f"{key}.sdscFoldProps_: expected a list, found {type(folds).__name__}", path)
    if len(superdsc.dscs_) != 1 or len(superdsc.dscs_[0]) != 1:
        raise SdscError(f"{key}.dscs_: expected one {{opfunc: DSC}} entry, found {len(superdsc.dscs_)} entries", path)
    return SdscFile(key=key, superdsc=superdsc, path=path)


def load_sdsc_file(path: str | Path) -> SdscFile:
    """Read and validate one SDSC JSON file."""
    name = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise SdscError(f"not UTF-8 text (byte {e.start})", name) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise SdscError(f"not JSON: {e.msg}", name, e.lineno, e.colno) from None
    except RecursionError:
        raise SdscError("not an SDSC file: JSON nested too deeply", name) from None
    return parse_sdsc(data, name)
