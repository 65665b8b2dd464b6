"""From a parsed SDSC file to a `KernelSpec`: iteration space, work slices, stick layouts, addresses.

The device layout of a tensor (FORMAT.md 1.5): its layout class lists dims innermost first;
the device array has the dims in reverse order, the stick dim counted in sticks, plus a
trailing lane dim of `stickSize_` elements, row-major. A tensor spans an iteration dim
(`scale_` 1), is broadcast/reduced over it (-1: extent 1) or holds one element per stick
(-2, stick dim only: one stick, lane 0).

Core c works on slice `coreIdToWkSlice_[c][d]` of each dim d: elements
`[slice * size/splits, (slice + 1) * size/splits)`. In HBM the core's data is a box of the
whole tensor, starting at `base + offset(slice)`; in LX each core holds just its box at one
scratchpad address. `check_addresses` recomputes every core's start address this way and
refuses a file whose stored addresses disagree.
"""

from __future__ import annotations

import math
import re
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ktir.ir import types as ty
from ktir.ir.base import Type
from ktir.lower.errors import SdscError
from ktir.lower.sdsc_model import LabeledDs, ScheduleNode, SdscFile

# Device data formats (torch_spyre/csrc/types_mapping.h) and the KTIR element type used for
# each. SEN169_FP16 ("DLFloat16", 1-6-9) is treated as f16, as torch-spyre's KTIR emitter does.
ELEMENT_TYPES: dict[str, Type] = {
    "SEN169_FP16": ty.F16,
    "IEEE_FP16": ty.F16,
    "IEEE_FP32": ty.F32,
    "IEEE_INT32": ty.I32,
    "SENINT8": ty.I8,
    "SEN143_FP8": ty.F8E4M3FN,
    "SEN152_FP8": ty.F8E5M2,
}

_BYTES = {"f16": 2, "f32": 4, "i32": 4, "i8": 1, "f8E4M3FN": 1, "f8E5M2": 1}

Space = Literal["hbm", "lx"]
Role = Literal["input", "output"]


def element_bytes(t: Type) -> int:
    if isinstance(t, ty.FloatType):
        return _BYTES[t.kind]
    assert isinstance(t, ty.IntegerType)
    return t.width // 8


@dataclass(frozen=True)
class IterDim:
    """One dim of the op's iteration space (`N_`), split into `splits` equal work slices."""

    name: str
    size: int
    splits: int

    @property
    def per_core(self) -> int:
        return self.size // self.splits


@dataclass(frozen=True)
class DeviceDim:
    """One dim of a tensor's device array (outermost first): an iteration dim or the lanes."""

    dim: str  # iteration dim label; for the lane dim, the stick dim's label
    kind: Literal["whole", "sticks", "lanes"]
    extent: int  # in the whole tensor
    tile: int  # in one core's box


@dataclass(frozen=True)
class Address:
    """A start address as stored: concrete bytes, or a symbol id resolved by bundle.mlir."""

    value: int | None = None
    symbol: int | None = None

    def __str__(self) -> str:
        return str(self.value) if self.symbol is None else f"symbol {self.symbol}"


@dataclass(frozen=True)
class TensorSpec:
    """One tensor argument of the op, with its device layout and per-core addresses."""

    index: int  # ldsIdx_
    name: str  # dsName_
    role: Role
    layout_label: str  # dsType_
    layout: tuple[str, ...]  # layoutDimOrder_, innermost first
    stick_dim: str
    stick_size: int
    scale: Mapping[str, int]
    data_format: str
    element_type: Type
    space: Space
    device: tuple[DeviceDim, ...]  # outermost first; the lane dim last
    addresses: tuple[Address, ...]  # start address per core id

    @property
    def word_bytes(self) -> int:
        return element_bytes(self.element_type)

    def spans(self, dim: str) -> bool:
        return self.scale.get(dim) == 1

    @property
    def sparse(self) -> bool:
        """One valid element per stick (scale -2 on the stick dim)."""
        return self.scale.get(self.stick_dim) == -2

    @property
    def view_shape(self) -> tuple[int, ...]:
        """The memory view: the whole tensor in HBM, one core's box in LX."""
        return tuple(d.extent if self.space == "hbm" else d.tile for d in self.device)

    @property
    def tile_shape(self) -> tuple[int, ...]:
        """What one core loads or stores: its box; of a sparse stick only lane 0."""
        return tuple(1 if (d.kind == "lanes" and self.sparse) else d.tile for d in self.device)

    @property
    def strides(self) -> tuple[int, ...]:
        return row_major_strides(self.view_shape)

    @property
    def view_bytes(self) -> int:
        return math.prod(self.view_shape) * self.word_bytes

    def tile_start(self, slices: Mapping[str, int]) -> tuple[int, ...]:
        """Device coordinates where a core's box starts, for the core's work slices."""
        if self.space == "lx":
            return tuple(0 for _ in self.device)
        return tuple(slices.get(d.dim, 0) * d.tile if d.kind != "lanes" and self.spans(d.dim) else 0 for d in self.device)

    def core_offset(self, slices: Mapping[str, int]) -> int:
        """Element offset of a core's box from the tensor's base."""
        return sum(s * st for s, st in zip(self.tile_start(slices), self.strides, strict=True))

    def describe_layout(self) -> str:
        names = [f"{d.dim}/{self.stick_size}" if d.kind == "sticks" else ("lanes" if d.kind == "lanes" else d.dim) for d in self.device]
        return "[" + ", ".join(f"{n}={e}" for n, e in zip(names, self.view_shape, strict=True)) + "]"


@dataclass(frozen=True)
class KernelSpec:
    """Everything the emitter needs about one SDSC: grid, slices, tensors, compute."""

    name: str  # KTIR function name, e.g. "sdsc_4_add"
    key: str  # the SDSC's top-level key
    opfunc: str
    ex_unit: str | None
    source: str | None
    dims: tuple[IterDim, ...]  # N_ order
    slices: tuple[Mapping[str, int], ...]  # per core id: slice per dim
    tensors: tuple[TensorSpec, ...]
    inputs: tuple[int, ...]  # tensor positions, compute operand order
    outputs: tuple[int, ...]
    constants: Mapping[str, float] = field(default_factory=dict)
    dsc_name: str = ""  # the key of the DSC in dscs_[0] (usually the op function)

    @property
    def where(self) -> str:
        """The JSON path of the DSC, for messages."""
        return f"{self.key}.dscs_[0].{self.dsc_name or self.opfunc}"

    @property
    def num_cores(self) -> int:
        return len(self.slices)

    def dim(self, name: str) -> IterDim:
        return next(d for d in self.dims if d.name == name)

    def base(self, t: TensorSpec) -> int:
        """A concrete tensor's base byte address: core 0's address minus core 0's offset."""
        first = t.addresses[0]
        assert first.value is not None
        return first.value - t.core_offset(self.slices[0]) * t.word_bytes

    @property
    def symbolic(self) -> bool:
        return any(a.symbol is not None for t in self.tensors for a in t.addresses)


def row_major_strides(shape: Sequence[int]) -> tuple[int, ...]:
    strides = []
    acc = 1
    for n in reversed(shape):
        strides.append(acc)
        acc *= n
    return tuple(reversed(strides))


# ---------------------------------------------------------------------------- building


class _Where:
    """JSON paths for messages: `4_add.dscs_[0].add.labeledDs_[1].scale_`."""

    def __init__(self, sdsc: SdscFile) -> None:
        self.sdsc = sdsc
        self.dsc = f"{sdsc.key}.dscs_[0].{sdsc.opfunc}"

    def error(self, message: str) -> SdscError:
        return SdscError(message, self.sdsc.path)


def build_kernel(sdsc: SdscFile, name: str | None = None) -> KernelSpec:
    """Derive and check the KernelSpec of one SDSC; SdscError on anything that changes meaning."""
    w = _Where(sdsc)
    _reject_unsupported_features(sdsc, w)
    dims = _iteration_dims(sdsc, w)
    slices = _core_slices(sdsc, dims, w)
    (compute,) = sdsc.dsc.computeOp_ if len(sdsc.dsc.computeOp_) == 1 else _one_compute_op(sdsc, w)
    inputs = tuple(_operand_index(ref, sdsc, w, "inputLabeledDs") for ref in compute.inputLabeledDs)
    outputs = tuple(_operand_index(ref, sdsc, w, "outputLabeledDs") for ref in compute.outputLabeledDs)
    if not outputs:
        raise w.error(f"{w.dsc}.computeOp_[0].outputLabeledDs: the compute op names no output")
    if accumulates(compute.opFuncName):
        # torch-spyre lists a reduction's output among its inputs on purpose (the output is the
        # accumulator): it is no operand; the reduction starts from its identity (FORMAT.md §10)
        inputs = tuple(i for i in inputs if i not in outputs)
    tensors = tuple(_tensor(sdsc, lds, pos, dims, len(slices), "output" if pos in outputs else "input", w)
                    for pos, lds in enumerate(sdsc.dsc.labeledDs_))
    unused = [t.name for t in tensors if t.index not in inputs and t.index not in outputs]
    if unused:
        raise w.error(f"{w.dsc}.labeledDs_: {', '.join(unused)} is neither an input nor an output of the compute op")
    kernel = KernelSpec(
        name=name or function_name(sdsc),
        key=sdsc.key,
        opfunc=compute.opFuncName,
        ex_unit=compute.exUnit,
        source=sdsc.path,
        dims=dims,
        slices=slices,
        tensors=tensors,
        inputs=inputs,
        outputs=outputs,
        constants=_constants(sdsc, w),
        dsc_name=sdsc.opfunc,
    )
    return kernel


# op functions whose output accumulates (torch-spyre names it among the inputs too)
_ACCUMULATING = frozenset({"sum", "max", "min", "mean"})


def accumulates(opfunc: str) -> bool:
    """Whether `opfunc` is a reduction (its output the accumulator): `sum`, `maxnonstick`, ..."""
    return opfunc.removesuffix("nonstick") in _ACCUMULATING


def function_name(sdsc: SdscFile) -> str:
    """The KTIR function name of an SDSC: `sdsc_` + its top-level key (`sdsc_3_exp`)."""
    return "sdsc_" + re.sub(r"[^A-Za-z0-9_]", "_", sdsc.key)


def _one_compute_op(sdsc: SdscFile, w: _Where) -> Any:
    raise w.error(f"{w.dsc}.computeOp_: expected one compute op, found {len(sdsc.dsc.computeOp_)}")


def _reject_unsupported_features(sdsc: SdscFile, w: _Where) -> None:
    top = sdsc.superdsc
    dsc = sdsc.dsc
    extra = top.model_extra or {}
    folds = extra.get("sdscFoldProps_") or []
    if any(isinstance(f, dict) and f.get("factor_", 1) != 1 for f in folds):
        raise w.error(f"{sdsc.key}.sdscFoldProps_: time folds with factor > 1 are not supported")
    corelets = (dsc.model_extra or {}).get("numCoreletsUsed_", 1)
    if corelets not in (None, 1):
        raise w.error(f"{w.dsc}.numCoreletsUsed_: {corelets} corelets per core are not supported (only 1)")
    if any(v not in (0, None) for v in top.coreIdToDsc_.values()):
        raise w.error(f"{sdsc.key}.coreIdToDsc_: cores run different DSCs; only one DSC (index 0) is supported")
    symbolic_dims = (dsc.model_extra or {}).get("dimToSymbolMapping_") or dsc.N_.get("dimToSymbolMapping_")
    if symbolic_dims:
        raise w.error(f"{w.dsc}.dimToSymbolMapping_: symbolic dimension sizes are not supported")
    if dsc.coordinateMasking_:
        raise w.error(f"{w.dsc}.coordinateMasking_: masked (padded) reductions are not supported")


def _iteration_dims(sdsc: SdscFile, w: _Where) -> tuple[IterDim, ...]:
    top = sdsc.superdsc
    dims: list[IterDim] = []
    sizes: dict[str, int] = {}
    for key, value in sdsc.dsc.N_.items():
        if key == "name_" or not key.endswith("_"):
            continue
        if key == "paddingSizes_":
            if _nonzero(value):
                raise w.error(f"{w.dsc}.N_.paddingSizes_: padded iteration dims are not supported")
            continue
        if isinstance(value, bool) or not isinstance(value, int):
            continue  # other annotations beside the sizes
        if value == -1:
            continue  # the dim does not take part in this op
        if value <= 0:
            raise w.error(f"{w.dsc}.N_.{key}: size {value} must be positive")
        sizes[key[:-1]] = value
    if not sizes:
        raise w.error(f"{w.dsc}.N_: no iteration dims")
    for name, size in sizes.items():
        splits = top.numWkSlicesPerDim_.get(name, 1)
        if splits < 1 or size % splits:
            raise w.error(f"{sdsc.key}.numWkSlicesPerDim_.{name}: {splits} slices do not divide the size {size} evenly")
        dims.append(IterDim(name, size, splits))
    for name, splits in top.numWkSlicesPerDim_.items():
        if name not in sizes and splits != 1:
            raise w.error(f"{sdsc.key}.numWkSlicesPerDim_.{name}: '{name}' is not a dim of N_")
    _check_data_stage(sdsc, dims, w)
    return tuple(dims)


def _nonzero(value: Any) -> bool:
    if isinstance(value, dict):
        return any(_nonzero(v) for v in value.values())
    if isinstance(value, list):
        return any(_nonzero(v) for v in value)
    return isinstance(value, int | float) and value != 0


def _check_data_stage(sdsc: SdscFile, dims: Sequence[IterDim], w: _Where) -> None:
    """`dataStageParam_` per-core extents must be size/splits (no epilogue tiles)."""
    for stage, entry in sdsc.dsc.dataStageParam_.items():
        if not isinstance(entry, dict):
            continue
        for part in ("ss_", "el_"):
            extents = entry.get(part)
            if not isinstance(extents, dict):
                continue
            for d in dims:
                got = extents.get(d.name + "_")
                if isinstance(got, int) and not isinstance(got, bool) and got != d.per_core:
                    raise w.error(
                        f"{w.dsc}.dataStageParam_.{stage}.{part}.{d.name}_: per-core extent {got}, but "
                        f"N_ / numWkSlicesPerDim_ gives {d.size} / {d.splits} = {d.per_core} (uneven splits are not supported)"
                    )


def _core_slices(sdsc: SdscFile, dims: Sequence[IterDim], w: _Where) -> tuple[Mapping[str, int], ...]:
    top = sdsc.superdsc
    n = top.numCoresUsed_
    if n < 1:
        raise w.error(f"{sdsc.key}.numCoresUsed_: {n} must be positive")
    inner = sdsc.dsc.numCoresUsed_
    if inner is not None and inner != n:
        raise w.error(f"{w.dsc}.numCoresUsed_: {inner}, but the SuperDsc says {n}")
    expected = math.prod(d.splits for d in dims)
    if expected != n:
        raise w.error(f"{sdsc.key}.numCoresUsed_: {n} cores, but numWkSlicesPerDim_ makes {expected} work slices")
    table = top.coreIdToWkSlice_
    if not table and n == 1:
        return ({d.name: 0 for d in dims},)
    slices: list[Mapping[str, int]] = []
    seen: dict[tuple[int, ...], int] = {}
    for core in range(n):
        entry = table.get(str(core))
        if entry is None:
            raise w.error(f"{sdsc.key}.coreIdToWkSlice_: no entry for core {core}")
        row = {d.name: entry.get(d.name, 0) for d in dims}
        for d in dims:
            if not 0 <= row[d.name] < d.splits:
                raise w.error(f"{sdsc.key}.coreIdToWkSlice_.{core}.{d.name}: slice {row[d.name]} is not in [0, {d.splits})")
        unknown = sorted(set(entry) - {d.name for d in dims})
        if unknown:
            raise w.error(f"{sdsc.key}.coreIdToWkSlice_.{core}: '{unknown[0]}' is not a dim of N_")
        key = tuple(row[d.name] for d in dims)
        if key in seen:
            raise w.error(f"{sdsc.key}.coreIdToWkSlice_: cores {seen[key]} and {core} work on the same slice {row}")
        seen[key] = core
        slices.append(row)
    return tuple(slices)


_IDX = re.compile(r"-idx(\d+)$")


def _operand_index(ref: str, sdsc: SdscFile, w: _Where, field_name: str) -> int:
    m = _IDX.search(ref)
    tensors = sdsc.dsc.labeledDs_
    if m is None or not 0 <= int(m.group(1)) < len(tensors):
        raise w.error(f"{w.dsc}.computeOp_[0].{field_name}: '{ref}' names no labeledDs_ entry (expected '<dsName_>-idx<ldsIdx_>')")
    idx = int(m.group(1))
    if tensors[idx].dsName_ not in ref:
        raise w.error(f"{w.dsc}.computeOp_[0].{field_name}: '{ref}' does not match labeledDs_[{idx}].dsName_ '{tensors[idx].dsName_}'")
    return idx


def _allocate_node(sdsc: SdscFile, idx: int, w: _Where) -> tuple[int, ScheduleNode]:
    found = []
    for pos, node in enumerate(sdsc.dsc.scheduleTree_):
        if node.nodeType_ != "allocate":
            raise w.error(f"{w.dsc}.scheduleTree_[{pos}].nodeType_: '{node.nodeType_}' nodes are not supported (only 'allocate')")
        if node.ldsIdx_ == idx:
            found.append((pos, node))
    if len(found) != 1:
        what = "no allocate node" if not found else f"{len(found)} allocate nodes"
        raise w.error(f"{w.dsc}.scheduleTree_: {what} for ldsIdx_ {idx}; expected one")
    return found[0]


def _tensor(sdsc: SdscFile, lds: LabeledDs, pos: int, dims: Sequence[IterDim], n_cores: int, role: Role, w: _Where) -> TensorSpec:
    here = f"{w.dsc}.labeledDs_[{pos}]"
    if lds.ldsIdx_ != pos:
        raise w.error(f"{here}.ldsIdx_: {lds.ldsIdx_}, expected {pos} (tensors are listed in ldsIdx_ order)")
    node_pos, node = _allocate_node(sdsc, pos, w)
    at_node = f"{w.dsc}.scheduleTree_[{node_pos}]"
    layout_info = sdsc.dsc.primaryDsInfo_.get(lds.dsType_)
    if layout_info is None:
        known = ", ".join(sdsc.dsc.primaryDsInfo_) or "none"
        raise w.error(f"{here}.dsType_: unknown layout class '{lds.dsType_}' (primaryDsInfo_ has {known})")
    at_layout = f"{w.dsc}.primaryDsInfo_.{lds.dsType_}"
    layout = tuple(layout_info.layoutDimOrder_)
    if node.layoutDimOrder_ and tuple(node.layoutDimOrder_) != layout:
        raise w.error(f"{at_node}.layoutDimOrder_: {node.layoutDimOrder_} differs from {at_layout}.layoutDimOrder_ {list(layout)}")
    sizes = {d.name: d for d in dims}
    for d in layout:
        if d not in sizes:
            raise w.error(f"{at_layout}.layoutDimOrder_: '{d}' is not a dim of N_")
    if len(set(layout)) != len(layout):
        raise w.error(f"{at_layout}.layoutDimOrder_: {list(layout)} repeats a dim")
    if len(layout_info.stickDimOrder_) != 1 or len(layout_info.stickSize_) != 1:
        raise w.error(f"{at_layout}.stickDimOrder_: {layout_info.stickDimOrder_}: sticks over several dims are not supported")
    stick_dim = layout_info.stickDimOrder_[0]
    stick = layout_info.stickSize_[0]
    if stick_dim not in layout:
        raise w.error(f"{at_layout}.stickDimOrder_: stick dim '{stick_dim}' is not in layoutDimOrder_ {list(layout)}")
    if stick < 1:
        raise w.error(f"{at_layout}.stickSize_: {stick} must be positive")
    if len(lds.scale_) != len(layout):
        raise w.error(f"{here}.scale_: {len(lds.scale_)} entries for the {len(layout)} dims of layout class {lds.dsType_}")
    scale = dict(zip(layout, lds.scale_, strict=True))
    for d, s in scale.items():
        if s not in (1, -1, -2):
            raise w.error(f"{here}.scale_: {s} for dim '{d}' (expected 1, -1 or -2)")
        if s == -2 and d != stick_dim:
            raise w.error(f"{here}.scale_: -2 (stick broadcast) on '{d}', which is not the stick dim '{stick_dim}'")
        if s == -1 and d == stick_dim:
            raise w.error(f"{here}.scale_: -1 on the stick dim '{d}' is not supported (a stick broadcast is -2)")
    element = ELEMENT_TYPES.get(lds.dataFormat_)
    if element is None:
        raise w.error(f"{here}.dataFormat_: data format '{lds.dataFormat_}' is not supported (known: {', '.join(ELEMENT_TYPES)})")
    if lds.wordLength is not None and lds.wordLength != element_bytes(element):
        raise w.error(f"{here}.wordLength: {lds.wordLength} bytes, but {lds.dataFormat_} elements have {element_bytes(element)}")
    space = node.component_
    if space not in ("hbm", "lx"):
        raise w.error(f"{at_node}.component_: '{space}' (expected 'hbm' or 'lx')")
    if node.nonUnifiedAllocInHBM_:
        raise w.error(f"{at_node}.nonUnifiedAllocInHBM_: per-core HBM tensors are not supported")
    if node.indirectAllocType_ not in (None, "no_indirection"):
        raise w.error(f"{at_node}.indirectAllocType_: '{node.indirectAllocType_}' (indirect access) is not supported")
    if node.backGapCore_ and _nonzero(node.backGapCore_):
        raise w.error(f"{at_node}.backGapCore_: padded tensors (back gaps) are not supported")
    device = _device_dims(layout, scale, stick_dim, stick, sizes, f"{here} ({lds.dsName_})", w)
    spec = TensorSpec(
        index=pos,
        name=lds.dsName_,
        role=role,
        layout_label=lds.dsType_,
        layout=layout,
        stick_dim=stick_dim,
        stick_size=stick,
        scale=scale,
        data_format=lds.dataFormat_,
        element_type=element,
        space=space,  # type: ignore[arg-type]
        device=device,
        addresses=_addresses(node, n_cores, at_node, w),
    )
    _check_coordinate_folds(spec, node, sizes, at_node, w)
    return spec


def _device_dims(layout: Sequence[str], scale: Mapping[str, int], stick_dim: str, stick: int,
                 sizes: Mapping[str, IterDim], where: str, w: _Where) -> tuple[DeviceDim, ...]:
    out: list[DeviceDim] = []
    for d in reversed(layout):
        it = sizes[d]
        spanned = scale[d] == 1
        if d != stick_dim:
            out.append(DeviceDim(d, "whole", it.size if spanned else 1, it.per_core if spanned else 1))
            continue
        if spanned and (it.size % stick or it.per_core % stick):
            raise w.error(
                f"{where}: stick dim '{d}' of size {it.size} in {it.splits} slices does not fill whole sticks of "
                f"{stick} (padded sticks are not supported)"
            )
        out.append(DeviceDim(d, "sticks", it.size // stick if spanned else 1, it.per_core // stick if spanned else 1))
    out.append(DeviceDim(stick_dim, "lanes", stick, stick))
    return tuple(out)


_POSITION = re.compile(r"^\[\s*(\d+)\s*(?:,\s*(\d+)\s*)?(?:,\s*(\d+)\s*)?\]$")


def _addresses(node: ScheduleNode, n_cores: int, at_node: str, w: _Where) -> tuple[Address, ...]:
    fold = node.startAddressCoreCorelet_
    if fold is None:
        raise w.error(f"{at_node}.startAddressCoreCorelet_: missing")
    found: dict[int, Address] = {}
    for key, raw in fold.data_.items():
        m = _POSITION.match(key)
        if m is None:
            raise w.error(f"{at_node}.startAddressCoreCorelet_.data_: position '{key}' is not '[core, corelet, time]'")
        core, corelet, time = (int(g) if g is not None else 0 for g in m.groups())
        if corelet or time:
            continue
        value = _int(raw)
        if value is None:
            raise w.error(f"{at_node}.startAddressCoreCorelet_.data_.{key}: '{raw}' is not an integer address")
        found[core] = Address(symbol=value) if value < 0 else Address(value=value)
    missing = [c for c in range(n_cores) if c not in found]
    if missing:
        raise w.error(f"{at_node}.startAddressCoreCorelet_.data_: no start address for core {missing[0]}")
    return tuple(found[c] for c in range(n_cores))


def _int(raw: Any) -> int | None:
    if isinstance(raw, bool):
        return None
    if isinstance(raw, int):
        return raw
    if isinstance(raw, str) and re.fullmatch(r"-?\d+", raw.strip()):
        return int(raw)
    return None


def _check_coordinate_folds(t: TensorSpec, node: ScheduleNode, sizes: Mapping[str, IterDim], at_node: str, w: _Where) -> None:
    """The folds of each dim must multiply to the tensor's extent in that dim."""
    for d, info in node.coordinates_.coordInfo.items():
        if d not in t.scale:
            raise w.error(f"{at_node}.coordinates_.coordInfo: '{d}' is not a dim of layout class {t.layout_label}")
        factors = [p.factor_ for p in info.folds.dim_prop_attr]
        if not factors or t.scale[d] == -1:
            continue
        want = sizes[d].size if t.scale[d] == 1 else t.stick_size
        if math.prod(factors) != want:
            raise w.error(
                f"{at_node}.coordinates_.coordInfo.{d}: the fold factors {factors} cover {math.prod(factors)} "
                f"elements, but {t.name} has {want} in '{d}'"
            )


# ---------------------------------------------------------------------------- constants


def decode_sen169(bits: int) -> float:
    """SEN169_FP16 ("DLFloat16"): sign, 6-bit exponent with bias 31, 9-bit mantissa (inferred).

    The bias follows from torch-spyre's encodings (2^-8 -> 11776, 1e-5 -> 7327). All ones is
    taken as infinity; there are no subnormals.
    """
    sign = -1.0 if bits & 0x8000 else 1.0
    exponent = (bits >> 9) & 0x3F
    mantissa = bits & 0x1FF
    if exponent == 0 and mantissa == 0:
        return 0.0 * sign
    if exponent == 0x3F and mantissa == 0x1FF:
        return sign * math.inf
    return sign * (1.0 + mantissa / 512.0) * 2.0 ** (exponent - 31)


def _decode(bits: int, data_format: str) -> float | None:
    if data_format == "SEN169_FP16":
        return decode_sen169(bits)
    if data_format == "IEEE_FP32":
        return float(struct.unpack("<f", struct.pack("<I", bits & 0xFFFFFFFF))[0])
    return None


def _constants(sdsc: SdscFile, w: _Where) -> dict[str, float]:
    out: dict[str, float] = {}
    for key, c in sdsc.dsc.constantInfo_.items():
        here = f"{w.dsc}.constantInfo_.{key}"
        values = {tuple(_flat_bits(v)) for v in c.data_.data_.values()}
        if len(values) != 1:
            raise w.error(f"{here}.data_: per-core constant values are not supported")
        bits = next(iter(values))
        if len(bits) != 1:
            raise w.error(f"{here}.data_: expected one encoded value, found {list(bits)}")
        value = _decode(bits[0], c.dataFormat_)
        if value is None:
            raise w.error(f"{here}.dataFormat_: cannot decode constants in '{c.dataFormat_}'")
        out[c.name_] = value
    return out


def _flat_bits(raw: Any) -> list[int]:
    items = raw if isinstance(raw, list) else [raw]
    out = []
    for item in items:
        value = _int(item)
        if value is None:
            raise SdscError(f"constant bits '{item}' are not an integer")
        out.append(value)
    return out


# ---------------------------------------------------------------------------- addresses


@dataclass(frozen=True)
class AddressCheck:
    """The outcome of recomputing one tensor's per-core start addresses."""

    tensor: str
    space: Space
    cores: int
    base: int | None  # bytes; None when symbolic
    status: Literal["match", "symbolic"]

    def __str__(self) -> str:
        if self.status == "symbolic":
            return f"{self.tensor} ({self.space}): symbolic start addresses, checked against bundle.mlir when lowered as a bundle"
        where = "scratchpad offset" if self.space == "lx" else "base"
        return f"{self.tensor} ({self.space}): {self.cores} core start addresses match the layout ({where} {self.base})"


def check_addresses(kernel: KernelSpec) -> list[AddressCheck]:
    """Recompute every core's start address from the layout; SdscError on the first mismatch."""
    report = []
    for t in kernel.tensors:
        if any(a.symbol is not None for a in t.addresses):
            if any(a.symbol is None for a in t.addresses):
                raise SdscError(f"{kernel.key}: {t.name} mixes symbolic and concrete start addresses", kernel.source)
            report.append(AddressCheck(t.name, t.space, kernel.num_cores, None, "symbolic"))
            continue
        base = kernel.base(t)
        if base < 0 or base % t.word_bytes:
            raise SdscError(
                f"{kernel.key}: {t.name} ({t.space}): core 0 starts at {t.addresses[0]}, which puts the tensor base at "
                f"{base}, not a multiple of its {t.word_bytes}-byte elements",
                kernel.source,
            )
        for core, stored in enumerate(t.addresses):
            want = base + t.core_offset(kernel.slices[core]) * t.word_bytes
            if stored.value != want and t.space == "lx":
                raise SdscError(
                    f"{kernel.key}: {t.name} (lx): core {core} has start address {stored}, but LX tensors sit at one "
                    f"scratchpad offset on every core ({base} on core 0)",
                    kernel.source,
                )
            if stored.value != want:
                slices = ", ".join(f"{k}={v}" for k, v in kernel.slices[core].items())
                raise SdscError(
                    f"{kernel.key}: {t.name} ({t.space}): core {core} (slice {slices}) has start address {stored}, but the "
                    f"layout {t.describe_layout()} of {t.layout_label} from base {base} gives {want}",
                    kernel.source,
                )
        report.append(AddressCheck(t.name, t.space, kernel.num_cores, base, "match"))
    return report
