"""The target description schema: one accelerator, every number with its provenance.

A target description is a TOML file validated by `Target`. Every number is a small table
that carries its value and where it comes from: `source = "id"` names an entry of the
file's `[sources]` table (a public document), `assumption = "id"` names an entry of its
`[assumptions]` table (the reasoning behind a figure that is not public). Exactly one of
the two is required, so an unsourced number cannot be written.

    count = { value = 32, source = "torch-spyre-arch" }
    hz = { value = 1.2e9, assumption = "clock" }

Units are part of the field name (`capacity_bytes`, `latency_cycles`) or, for bandwidths,
an explicit `unit` (`"B/s"` or `"B/cycle"`). `python -m ktir.targets.gen_schema` regenerates
the published JSON Schema (`target.schema.json` beside this file).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

SCHEMA_VERSION = 1

# The cost model keeps per-tile and per-link tables: a description of more tiles than this
# is refused rather than exhausting memory.
MAX_TILES = 1 << 16
# The working range of the numbers the cost model computes with: any figure at most
# MAX_FIGURE, and every rate it divides by (per cycle) and the clock at least MIN_RATE and
# MIN_CLOCK_HZ, so no cycle count or time it derives overflows a float (a rate of 1e-320
# once made `work / rate` infinite).
MAX_FIGURE = 1e18
# one queue server and one trace lane per DMA engine
MAX_DMA_ENGINES = 1024
MIN_RATE = 1e-6
MIN_CLOCK_HZ = 1.0

# Element-type names used as keys of per-dtype rates. `f8` stands for every 8-bit float
# format; a specific format (`f8E4M3FN`) takes precedence over it when both are given.
DType = Literal[
    "f64", "f32", "tf32", "bf16", "f16", "f8", "f8E4M3FN", "f8E5M2", "f8E4M3", "f8E5M2FNUZ", "f8E4M3FNUZ",
    "i64", "i32", "i16", "i8", "i4", "i2", "i1",
]

NAME_PATTERN = r"^[a-z0-9][a-z0-9_.-]*$"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


# ---------------------------------------------------------------------- provenance


class Source(_Model):
    """A public document that states figures of the target."""

    title: str = Field(description="Title of the document, with its publisher or venue.")
    url: str | None = Field(default=None, description="Where it can be read (URL or DOI link).")
    note: str | None = Field(default=None, description="What it says, in one line, or how to find the figure in it.")


class Assumption(_Model):
    """The reasoning behind a figure that no public source states."""

    reasoning: str = Field(description="Why this value: what it is derived from and how sensitive results are to it.")
    based_on: list[str] = Field(default_factory=list, description="Keys of [sources] entries the reasoning relies on.")


class _Provenance(_Model):
    source: str | None = Field(default=None, description="Key of the [sources] entry that states this figure.")
    assumption: str | None = Field(default=None, description="Key of the [assumptions] entry that explains this figure.")
    note: str | None = Field(default=None, description="How the value follows from its source or assumption (a derivation).")

    @model_validator(mode="after")
    def _one_provenance(self) -> _Provenance:
        if (self.source is None) == (self.assumption is None):
            raise ValueError("give exactly one of `source` (a public figure) or `assumption` (a reasoned guess)")
        return self


class Quantity(_Provenance):
    """A non-negative number with its provenance."""

    value: float = Field(ge=0, le=MAX_FIGURE, allow_inf_nan=False, description="The number, in the unit named by the field.")


class Count(_Provenance):
    """A non-negative integer with its provenance."""

    value: int = Field(ge=0, le=int(MAX_FIGURE), description="The integer, in the unit named by the field.")


class IntList(_Provenance):
    """A list of integers (a shape, a set of tile positions) with its provenance."""

    value: list[Annotated[int, Field(ge=0, le=int(MAX_FIGURE))]] = Field(description="The integers.")


class Bandwidth(_Provenance):
    """A data rate: bytes per second or bytes per clock cycle."""

    value: float = Field(gt=0, le=MAX_FIGURE, allow_inf_nan=False, description="The rate, in `unit`.")
    unit: Literal["B/s", "B/cycle"] = Field(description="Bytes per second, or bytes per cycle of the target's clock.")

    def per_cycle(self, clock_hz: float) -> float:
        return self.value if self.unit == "B/cycle" else self.value / clock_hz


# ---------------------------------------------------------------------- parts


class SubnormalMode(_Provenance):
    """How arithmetic treats subnormal (denormal) floating-point values, with its provenance."""

    value: Literal["preserve", "flush-to-zero"] = Field(
        description="`preserve`: IEEE 754 gradual underflow (what the reference interpreter computes); "
        "`flush-to-zero`: subnormal inputs read as zero and subnormal results are written as zero, keeping the sign."
    )


class Numerics(_Model):
    """Floating-point behaviour that conformance results depend on (spec/targets.md)."""

    subnormals: SubnormalMode = Field(description="Subnormal handling of every floating-point element type not listed below.")
    subnormals_by_dtype: dict[DType, SubnormalMode] = Field(
        default_factory=dict, description="Element types whose subnormal handling differs from `subnormals`."
    )

    def subnormal_mode(self, dtype: str) -> str:
        """The mode for one element type (`f8` covers the 8-bit formats not named)."""
        found = self.subnormals_by_dtype.get(dtype)  # type: ignore[call-overload]
        if found is None and dtype.startswith("f8"):
            found = self.subnormals_by_dtype.get("f8")
        return (found or self.subnormals).value


class Clock(_Model):
    hz: Quantity = Field(description="Clock frequency of the compute tiles, in hertz. Cycle counts in the file use it.")


class Tiles(_Model):
    count: Count = Field(description="Number of compute tiles (cores) that a kernel's grid is mapped onto.")
    vendor_name: str = Field(default="tile", description="What the vendor calls a compute tile (core, Tensix, PE cluster).")


class Ring(_Model):
    """Tiles 0..n-1 on a ring; a transfer takes the shorter way round (ties go up)."""

    topology: Literal["ring"] = Field(description="Selects this arrangement.")
    bidirectional: bool = Field(description="Links in both directions (else only tile i -> i+1).")
    link_bandwidth: Bandwidth = Field(description="Bandwidth of one link in one direction.")
    hop_latency_cycles: Quantity = Field(description="Cycles added per link traversed.")


class Mesh2D(_Model):
    """Tiles on a cols x rows grid (tile t at column t mod cols, row t div cols), X-then-Y routing."""

    topology: Literal["mesh2d"] = Field(description="Selects this arrangement.")
    shape: IntList = Field(description="[columns, rows]; columns x rows must equal the tile count.")
    wraparound: bool = Field(description="Torus links from the last column/row back to the first.")
    link_bandwidth: Bandwidth = Field(description="Bandwidth of one link in one direction.")
    hop_latency_cycles: Quantity = Field(description="Cycles added per link traversed.")


class Crossbar(_Model):
    """Every tile has one ingress and one egress port into a non-blocking switch."""

    topology: Literal["crossbar"] = Field(description="Selects this arrangement.")
    port_bandwidth: Bandwidth = Field(description="Bandwidth of one tile's ingress port, and of its egress port.")
    latency_cycles: Quantity = Field(description="Cycles through the switch.")


Interconnect = Annotated[Ring | Mesh2D | Crossbar, Field(discriminator="topology")]


class _Unit(_Model):
    name: str = Field(pattern=NAME_PATTERN, description="Name of the unit (unique within the target).")
    count: Count = Field(description="Number of such units per tile; a tile's op uses all of them together.")
    startup_cycles: Quantity | None = Field(default=None, description="Fixed cycles per op (pipeline fill and drain); 0 when absent.")


class SystolicArray(_Unit):
    """A 2-D array of multiply-accumulate processing elements."""

    kind: Literal["systolic"] = Field(description="Selects this kind of unit.")
    shape: IntList = Field(description="[rows, columns] of processing elements.")
    macs_per_cycle: dict[DType, Quantity] = Field(description="Multiply-accumulates per cycle of ONE unit, by input element type.")


class MatrixEngine(_Unit):
    """A matrix-multiply engine that is not (or not publicly) a systolic array."""

    kind: Literal["matrix"] = Field(description="Selects this kind of unit.")
    shape: IntList | None = Field(default=None, description="Native operand tile, when known.")
    macs_per_cycle: dict[DType, Quantity] = Field(description="Multiply-accumulates per cycle of ONE unit, by input element type.")


class VectorUnit(_Unit):
    """A 1-D SIMD unit for elementwise ops, reductions and special functions."""

    kind: Literal["vector"] = Field(description="Selects this kind of unit.")
    lanes: Count = Field(description="SIMD lanes (informative; the rates below are what the cost model uses).")
    elements_per_cycle: dict[DType, Quantity] = Field(description="Elements per cycle of ONE unit for simple arithmetic, by element type.")
    transcendentals_per_cycle: dict[DType, Quantity] = Field(
        default_factory=dict, description="Elements per cycle of ONE unit for exp, log, tanh, division, sqrt... (defaults to elements_per_cycle)."
    )


ComputeUnit = Annotated[SystolicArray | MatrixEngine | VectorUnit, Field(discriminator="kind")]


class MemoryLevel(_Model):
    name: str = Field(pattern=NAME_PATTERN, description="Name of the level (e.g. lpddr5, lx).")
    scope: Literal["global", "ct_local"] = Field(
        description="`global`: shared by all tiles (KTIR `#ktdp.memory_space<global>`); `ct_local`: one per tile (`ct_local`)."
    )
    description: str | None = Field(default=None, description="What the level is, in one line.")
    capacity_bytes: Count = Field(description="Capacity: in total for global, per tile for ct_local.")
    bandwidth: Bandwidth = Field(description="Peak bandwidth: in total for global, per tile for ct_local.")
    latency_cycles: Quantity = Field(description="Cycles from a request to its first byte.")
    granularity_bytes: Count = Field(description="Transfer unit: the memory moves whole aligned granules of this size; a transfer costs every granule its contiguous runs touch.")
    alignment_bytes: Count | None = Field(
        default=None,
        description="Required alignment of a transfer's start address, in bytes (a power of two); absent: the "
        "level has no alignment requirement beyond the element size.",
    )
    attach_tiles: IntList | None = Field(
        default=None,
        description="global levels on a ring or mesh: the tiles whose interconnect stop the memory is attached to "
        "(a transfer uses the nearest).",
    )


class Dma(_Model):
    engines_per_tile: Count = Field(description="Transfers a tile can have in flight at once (issued in program order).")
    engine_bandwidth: Bandwidth = Field(description="Peak rate of one transfer.")
    setup_cycles: Quantity = Field(description="Fixed cycles to start one transfer (descriptor, address generation).")


# ---------------------------------------------------------------------- the target


class Target(_Model):
    """One accelerator: tiles and interconnect, compute units, memory levels, DMA, clock."""

    schema_version: Literal[1] = Field(description="Version of this schema; readers reject versions they do not know.")
    name: str = Field(pattern=NAME_PATTERN, description="Short name used on the command line (`--target NAME`).")
    title: str = Field(description="Human-readable name of the product or configuration modelled.")
    vendor: str | None = Field(default=None, description="Who makes it.")
    description: str = Field(description="What is modelled and what is not, in a few sentences.")
    dtypes: list[DType] = Field(description="Element types the hardware supports natively.")
    numerics: Numerics | None = Field(
        default=None,
        description="Floating-point behaviour (subnormal handling); absent: not stated, and conformance claims "
        "must not assume either mode.",
    )
    clock: Clock = Field(description="The clock that cycle counts refer to.")
    tiles: Tiles = Field(description="The compute tiles.")
    interconnect: Interconnect = Field(description="How tiles (and global memory) are connected: ring, mesh2d or crossbar.")
    compute_units: list[ComputeUnit] = Field(description="Compute units of ONE tile.")
    memory: list[MemoryLevel] = Field(description="Memory levels: exactly one of scope global and one of scope ct_local.")
    dma: Dma = Field(description="Each tile's transfer engines.")
    power_watts: Quantity | None = Field(default=None, description="Board power (informative).")
    headline_ops_per_second: Quantity | None = Field(
        default=None,
        description="The vendor's headline peak (2 ops per multiply-accumulate); the derived rates must reach it.",
    )
    sources: dict[str, Source] = Field(description="Public documents that figures cite by key.")
    assumptions: dict[str, Assumption] = Field(default_factory=dict, description="Reasoned guesses that figures cite by key.")

    @model_validator(mode="after")
    def _check(self) -> Target:
        self._check_provenance()
        self._check_memory()
        self._check_units()
        self._check_topology()
        self._check_divisors()
        return self

    def _check_divisors(self) -> None:
        """Figures the cost model divides by, or sizes tables with, within working range."""
        if self.clock.hz.value < MIN_CLOCK_HZ:
            raise ValueError(f"clock.hz must be at least {MIN_CLOCK_HZ:g}")
        if self.tiles.count.value > MAX_TILES:
            raise ValueError(f"tiles.count {self.tiles.count.value} is more than the {MAX_TILES} tiles the cost model handles")
        for u in self.compute_units:
            if u.count.value < 1:
                raise ValueError(f"compute unit {u.name}: count must be at least 1")
            # each table on its own: merged, a transcendental rate would hide the element rate of its dtype
            tables = [u.elements_per_cycle, u.transcendentals_per_cycle] if isinstance(u, VectorUnit) else [u.macs_per_cycle]
            for dtype, rate in ((d, r) for t in tables for d, r in t.items()):
                if rate.value < MIN_RATE:
                    raise ValueError(f"compute unit {u.name}: the {dtype} rate must be at least {MIN_RATE:g} per cycle")
        for path, q in iter_quantities(self):
            if isinstance(q, Bandwidth) and q.per_cycle(self.clock.hz.value) < MIN_RATE:
                raise ValueError(f"{path}: {q.value:g} {q.unit} is less than {MIN_RATE:g} bytes per cycle")
        if not 1 <= self.dma.engines_per_tile.value <= MAX_DMA_ENGINES:
            raise ValueError(f"dma.engines_per_tile must be from 1 to {MAX_DMA_ENGINES}")
        for m in self.memory:
            if m.granularity_bytes.value < 1:
                raise ValueError(f"memory.{m.name}.granularity_bytes must be at least 1")

    def _check_provenance(self) -> None:
        used_sources: set[str] = set()
        used_assumptions: set[str] = set()
        for path, q in iter_quantities(self):
            if q.source is not None:
                if q.source not in self.sources:
                    raise ValueError(f"{path}: source '{q.source}' is not in [sources]")
                used_sources.add(q.source)
            if q.assumption is not None:
                if q.assumption not in self.assumptions:
                    raise ValueError(f"{path}: assumption '{q.assumption}' is not in [assumptions]")
                used_assumptions.add(q.assumption)
        for key, assumption in self.assumptions.items():
            for ref in assumption.based_on:
                if ref not in self.sources:
                    raise ValueError(f"assumptions.{key}.based_on: source '{ref}' is not in [sources]")
                used_sources.add(ref)
        unused = sorted((set(self.sources) - used_sources) | (set(self.assumptions) - used_assumptions))
        if unused:
            raise ValueError(f"declared but never cited: {', '.join(unused)}")

    def _check_memory(self) -> None:
        for m in self.memory:
            a = m.alignment_bytes.value if m.alignment_bytes is not None else None
            if a is not None and (a < 1 or a & (a - 1)):
                raise ValueError(f"memory.{m.name}.alignment_bytes: {a} is not a power of two")
        for scope in ("global", "ct_local"):
            levels = [m.name for m in self.memory if m.scope == scope]
            if len(levels) != 1:
                raise ValueError(f"schema version 1 needs exactly one memory level of scope {scope} (found {levels or 'none'})")
        names = [m.name for m in self.memory]
        if len(set(names)) != len(names):
            raise ValueError(f"memory level names repeat: {names}")
        g = self.global_memory
        needs_attach = not isinstance(self.interconnect, Crossbar)
        if needs_attach and (g.attach_tiles is None or not g.attach_tiles.value):
            raise ValueError(f"memory.{g.name}: a {self.interconnect.topology} needs attach_tiles")
        if g.attach_tiles is not None:
            bad = [t for t in g.attach_tiles.value if t >= self.tiles.count.value]
            if bad:
                raise ValueError(f"memory.{g.name}.attach_tiles: {bad} are not tiles (count {self.tiles.count.value})")
        if self.local_memory.attach_tiles is not None:
            raise ValueError(f"memory.{self.local_memory.name}: attach_tiles is for the global level only")

    def _check_units(self) -> None:
        names = [u.name for u in self.compute_units]
        if len(set(names)) != len(names):
            raise ValueError(f"compute unit names repeat: {names}")
        if not any(u.kind in ("systolic", "matrix") for u in self.compute_units):
            raise ValueError("a target needs at least one systolic or matrix unit")
        if not any(u.kind == "vector" for u in self.compute_units):
            raise ValueError("a target needs at least one vector unit")
        for u in self.compute_units:
            if isinstance(u, SystolicArray) and len(u.shape.value) != 2:
                raise ValueError(f"compute unit {u.name}: shape is [rows, columns]")
            rates = u.elements_per_cycle if isinstance(u, VectorUnit) else u.macs_per_cycle
            if not rates:
                raise ValueError(f"compute unit {u.name}: give at least one rate")
        if self.tiles.count.value < 1:
            raise ValueError("tiles.count must be at least 1")
        if self.dma.engines_per_tile.value < 1:
            raise ValueError("dma.engines_per_tile must be at least 1")

    def _check_topology(self) -> None:
        ic = self.interconnect
        if isinstance(ic, Mesh2D):
            if len(ic.shape.value) != 2:
                raise ValueError("interconnect.shape is [columns, rows]")
            cols, rows = ic.shape.value
            if cols * rows != self.tiles.count.value:
                raise ValueError(f"interconnect.shape {cols}x{rows} does not hold {self.tiles.count.value} tiles")

    # convenience -------------------------------------------------------------

    @property
    def clock_hz(self) -> float:
        return self.clock.hz.value

    @property
    def global_memory(self) -> MemoryLevel:
        return next(m for m in self.memory if m.scope == "global")

    @property
    def local_memory(self) -> MemoryLevel:
        return next(m for m in self.memory if m.scope == "ct_local")

    def peak_macs_per_cycle(self, dtype: str) -> float:
        """Multiply-accumulates per cycle of the whole target at `dtype` (0 if unsupported)."""
        per_tile = sum(u.count.value * u.macs_per_cycle[dtype].value  # type: ignore[index]
                       for u in self.compute_units
                       if isinstance(u, SystolicArray | MatrixEngine) and dtype in u.macs_per_cycle)
        return per_tile * self.tiles.count.value


def iter_quantities(model: BaseModel, path: str = "") -> list[tuple[str, _Provenance]]:
    """Every number of a target with its dotted path, e.g. ('memory.lx.capacity_bytes', Count)."""
    out: list[tuple[str, _Provenance]] = []

    def visit(value: Any, where: str) -> None:
        if isinstance(value, _Provenance):
            out.append((where, value))
        elif isinstance(value, BaseModel):
            for key in type(value).model_fields:
                visit(getattr(value, key), f"{where}.{key}" if where else key)
        elif isinstance(value, dict):
            for key, item in value.items():
                visit(item, f"{where}.{key}")
        elif isinstance(value, list):
            for i, item in enumerate(value):
                label = getattr(item, "name", None) or str(i)
                visit(item, f"{where}.{label}")

    visit(model, path)
    return out


# ---------------------------------------------------------------------- JSON Schema

SCHEMA_PATH = Path(__file__).with_name("target.schema.json")
SCHEMA_ID = "urn:ktir:schema:target:v1"


def json_schema() -> dict[str, Any]:
    """The JSON Schema of target descriptions (what `target.schema.json` holds)."""
    schema = Target.model_json_schema()
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": SCHEMA_ID, **schema}


def json_schema_text() -> str:
    return json.dumps(json_schema(), indent=2, sort_keys=True) + "\n"
