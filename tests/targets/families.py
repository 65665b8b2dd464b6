"""SPMD kernel families for property tests: every tile runs the same program on its own data."""

from __future__ import annotations

from ktir.targets.records import KernelTrace, Kind, OpRecord

from .helpers import streaming


def stream(tiles: int, chunks: int, chunk_bytes: int, elements: int, double_buffered: bool) -> KernelTrace:
    return streaming(chunks, chunk_bytes, elements, double_buffered, tiles=tiles)


def tiled_matmul(tiles: int, k_steps: int, a_bytes: int, b_bytes: int, macs: int) -> KernelTrace:
    """Per tile: for each k, load an A and a B block and accumulate a matmul; then store C."""
    records = []
    for t in range(tiles):
        seq = 0
        acc = None
        for _ in range(k_steps):
            la, lb = seq, seq + 1
            records.append(OpRecord(t, la, "ktdp.load", Kind.TRANSFER, bytes_read={"global": a_bytes}, result_bytes=a_bytes))
            records.append(OpRecord(t, lb, "ktdp.load", Kind.TRANSFER, bytes_read={"global": b_bytes}, result_bytes=b_bytes))
            deps = (la, lb) if acc is None else (acc, la, lb)
            records.append(OpRecord(t, seq + 2, "linalg.matmul", Kind.MATRIX, deps=deps, macs=macs, dtype="f16", result_bytes=4096))
            acc = seq + 2
            seq += 3
        records.append(OpRecord(t, seq, "ktdp.store", Kind.TRANSFER, deps=(acc,) if acc is not None else (), bytes_written={"global": 4096}))
    return KernelTrace(records, grid=(tiles,), name="matmul")


def all_reduce(tiles: int, nbytes: int, elements: int) -> KernelTrace:
    """Per tile: load a partial, post it, receive everyone's, combine, store."""
    records = []
    for t in range(tiles):
        records.append(OpRecord(t, 0, "ktdp.load", Kind.TRANSFER, bytes_read={"global": nbytes}, result_bytes=nbytes))
        records.append(OpRecord(t, 1, "ktdp.inter_tile_produce", Kind.POST, deps=(0,), sync="f0:0"))
        records.append(OpRecord(t, 2, "ktdp.inter_tile_reduce", Kind.RECEIVE, deps=(1,), sync="f0:0",
                                sources=tuple((p, nbytes) for p in range(tiles))))
        records.append(OpRecord(t, 3, "ktdp.inter_tile_reduce", Kind.VECTOR, deps=(2,), elements=elements * tiles, dtype="f16",
                                result_bytes=nbytes))
        records.append(OpRecord(t, 4, "ktdp.store", Kind.TRANSFER, deps=(3,), bytes_written={"global": nbytes}))
    return KernelTrace(records, grid=(tiles,), name="all_reduce")
