"""Hardware model: target descriptions, the cost model and timeline traces.

    >>> from ktir.targets import load_target, OpRecord, Kind, KernelTrace, estimate
    >>> spyre = load_target("spyre")
    >>> trace = KernelTrace([OpRecord(0, 0, "ktdp.load", Kind.TRANSFER, bytes_read={"global": 1 << 20})])
    >>> est = estimate(trace, spyre)
    >>> est.report.binding.category
    'dma'

- `schema`: the pydantic model of a target description (TOML), every number with its source.
- `loader`: the built-in targets (`spyre`, `wormhole-n150`) and files by path.
- `records`: the trace records the cost model reads (`OpRecord`, `KernelTrace`).
- `roofline`: a lower bound per kernel and its binding resource.
- `timeline`: the timeline simulation (queues per tile, shared memory and links).
- `report`: the cost report (pydantic, JSON) and its terminal tables.
- `perfetto`: Chrome/Perfetto trace-event JSON; `svg`: a static picture of a timeline.
- `from_interp`: records from the reference interpreter's event trace.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ktir.lazy import lazy_exports

if TYPE_CHECKING:
    from ktir.targets.loader import TargetError, builtin_targets, load_target, parse_target
    from ktir.targets.machine import Machine
    from ktir.targets.records import KernelTrace, Kind, OpRecord, TraceError
    from ktir.targets.report import CostReport, Estimate, estimate
    from ktir.targets.roofline import Roofline, roofline
    from ktir.targets.schema import SCHEMA_VERSION, Target
    from ktir.targets.timeline import Timeline, simulate

# loaded on first use (ktir.lazy): importing a submodule such as the CLI's stays cheap
__getattr__ = lazy_exports(
    __name__,
    {
        "TargetError": "ktir.targets.loader",
        "builtin_targets": "ktir.targets.loader",
        "load_target": "ktir.targets.loader",
        "parse_target": "ktir.targets.loader",
        "Machine": "ktir.targets.machine",
        "KernelTrace": "ktir.targets.records",
        "Kind": "ktir.targets.records",
        "OpRecord": "ktir.targets.records",
        "TraceError": "ktir.targets.records",
        "CostReport": "ktir.targets.report",
        "Estimate": "ktir.targets.report",
        "estimate": "ktir.targets.report",
        "Roofline": "ktir.targets.roofline",
        "roofline": "ktir.targets.roofline",
        "SCHEMA_VERSION": "ktir.targets.schema",
        "Target": "ktir.targets.schema",
        "Timeline": "ktir.targets.timeline",
        "simulate": "ktir.targets.timeline",
    },
)

__all__ = [
    "SCHEMA_VERSION",
    "CostReport",
    "Estimate",
    "KernelTrace",
    "Kind",
    "Machine",
    "OpRecord",
    "Roofline",
    "Target",
    "TargetError",
    "Timeline",
    "TraceError",
    "builtin_targets",
    "estimate",
    "load_target",
    "parse_target",
    "roofline",
    "scratchpad_bytes",
    "simulate",
]


def scratchpad_bytes(target: str) -> int:
    """ct_local capacity per tile of a target (what an executor checks scratchpad use against)."""
    from ktir.targets.loader import load_target

    return load_target(target).local_memory.capacity_bytes.value
