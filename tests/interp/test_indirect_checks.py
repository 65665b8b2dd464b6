"""The checks on indirect access tiles fire, with the same coordinate and message, on the
fast paths (compact coordinates, box-shaped index reads, row gathers) and the general ones.
The kernels are built with `Builder.indirect_access_tile`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

import ktir
import reference_interp as ri
from ktir.builder import Builder, Indirect, Value, box, ind, ssa
from ktir.dialects.names import Arith, Ktdp
from ktir.ir import affine as af
from ktir.ir import attributes as at
from ktir.ir import types as ty

from .helpers import example, fails, run

INDEX, F32, I32 = ty.INDEX, ty.F32, ty.i(32)
# the 16 x 8 table without the point (0, 0)
NODIAG = af.IntegerSet(num_dims=2, num_symbols=0, constraints=(
    *box(16, 8).constraints, af.Constraint(expr=af.dim(0) + af.dim(1) - 1, is_equality=False)))


def _aliases(b: Builder, nodiag: bool = False, ids_tile: bool = False) -> dict[str, at.AttrAliasRef]:
    """The sets and maps of the kernels: #nodiag when the table leaves out (0, 0), #id1 and #four
    when a kernel writes 4 of the ids."""
    named = {"tab": box(16, 8), "nodiag": NODIAG if nodiag else None, "ids": box(8), "vars": box(4, 8),
             "blk": box(4, 8), "id1": af.AffineMap.identity(1) if ids_tile else None,
             "four": box(4) if ids_tile else None, "id2": af.AffineMap.identity(2)}
    return {name: b.alias(name, value) for name, value in named.items() if value is not None}


@dataclass(frozen=True)
class Kernel:
    """What a kernel's body works with: tile t handles ids r..r + 3 (r = 4t), the table rows
    they name and Y's rows r..r + 3 (`local` has no Y and no c4)."""

    b: Builder
    aliases: dict[str, at.AttrAliasRef]
    t: Value
    c0: Value
    c4: Value | None
    r: Value
    tab: Value
    idv: Value
    yv: Value | None

    def rows(self, name: str, shift: int = 0) -> Value:
        """The indirect tile of the table rows ids[r + m + shift], every column."""
        def subscripts(m: Value, k: Value) -> list[Indirect | Value]:
            at_ = ssa(self.r) + ssa(m)
            return [ind(self.idv, at_ + shift if shift else at_), k]

        return self.b.indirect_access_tile(self.tab, [4, 8], subscripts, tile_set=self.aliases["vars"],
                                           order=self.aliases["id2"], variables=["m", "k"], name=name)

    def block(self, name: str) -> Value:
        """The tile of Y's rows r..r + 3."""
        assert self.yv is not None
        return self.b.access_tile(self.yv, [self.r, self.c0], self.aliases["blk"], [4, 8], self.aliases["id2"], name=name)

    def load(self, tile: Value) -> Value:
        return self.b.load(tile, F32, name="rows")

    def gather(self) -> None:
        self.b.store(self.load(self.rows("src")), self.block("dst"))

    def scatter(self) -> None:
        self.b.store(self.load(self.block("src")), self.rows("dst"))

    def read(self, shift: int = 0) -> None:
        self.load(self.rows("src", shift))

    def on_tile_0(self, then: Callable[[], None], otherwise: Callable[[], None]) -> None:
        self.b.if_else(self.b.cmp(Arith.cmpi, "eq", self.t, self.c0, name="is0"), then, otherwise)

    def write_ids(self) -> None:
        """ids[4:8] = 1."""
        assert self.c4 is not None
        ones = self.b.constant(at.DenseAttr(type=ty.tensor((4,), I32), values=1), name="z")
        self.b.store(ones, self.b.access_tile(self.idv, [self.c4], self.aliases["four"], [4], self.aliases["id1"],
                                              name="ia"))


def kernel(body: Callable[[Kernel], None], nodiag: bool = False, ids_tile: bool = False) -> ktir.Module:
    """Grid [2]: a 16 x 8 f32 table (its coordinate set without (0, 0) when `nodiag`), 8 i32 ids
    and an 8 x 8 f32 Y, all global; `body` builds the rest."""
    b = Builder()
    aliases = _aliases(b, nodiag, ids_tile)
    with b.func("k", [("e_ptr", INDEX), ("ids_ptr", INDEX), ("y_ptr", INDEX)], grid=[2]) as (e_ptr, ids_ptr, y_ptr):
        c0, c4 = b.index(0, "c0"), b.index(4, "c4")
        (t,) = b.tile_id(names=["t"])
        r = b.arith.muli(t, c4, name="r")
        tab = b.memory_view(e_ptr, [16, 8], [8, 1], F32, coordinate_set=aliases["nodiag" if nodiag else "tab"],
                            name="tab")
        idv = b.memory_view(ids_ptr, [8], [1], I32, coordinate_set=aliases["ids"], name="idv")
        # Y shares the table's coordinate set (16 rows for 8; the verifier's C8 says so): kept
        # from the text kernels these replace, whose runs never reach past row 7 of Y
        yv = b.memory_view(y_ptr, [8, 8], [8, 1], F32, coordinate_set=aliases["tab"], name="yv")
        body(Kernel(b, aliases, t, c0, c4, r, tab, idv, yv))
        b.func_return()
    return b.module


def gather(nodiag: bool = False) -> ktir.Module:
    return kernel(Kernel.gather, nodiag)


def scatter() -> ktir.Module:
    return kernel(Kernel.scatter)


def racy_ids() -> ktir.Module:
    """Tile 0 writes ids[4:8] while tile 1 gathers by them."""
    return kernel(lambda k: k.on_tile_0(k.write_ids, k.read), ids_tile=True)


def racy_rows() -> ktir.Module:
    """Tile 0 scatters table rows that tile 1 gathers."""
    return kernel(lambda k: k.on_tile_0(k.scatter, k.read))


E = np.arange(128, dtype=np.float32).reshape(16, 8)


def args(ids: list[int], y: np.ndarray | None = None) -> dict[str, np.ndarray]:
    return {"e_ptr": E.copy(), "ids_ptr": np.asarray(ids, np.int32),
            "y_ptr": np.zeros((8, 8), np.float32) if y is None else y}


def test_gather_is_exact() -> None:
    ids = [3, 0, 15, 3, 7, 7, 1, 2]
    r = run(gather(), args=args(ids))
    np.testing.assert_array_equal(r.outputs["y_ptr"], E[ids])
    assert r.stats[0].bytes_read["global"] == 4 * 4 + 4 * 8 * 4


@pytest.mark.parametrize(("bad", "coord", "what"), [(16, (16, 0), "the view's sizes [16, 8]"),
                                                     (-1, (-1, 0), "the view's sizes [16, 8]")])
def test_gathered_row_outside_the_view(bad: int, coord: tuple[int, ...], what: str) -> None:
    ids = [3, 0, 15, 3, 7, 1, bad, 2]
    e = fails("out-of-view", gather(), args=args(ids))
    assert e.tile == 1 and e.coordinate == coord
    assert e.message.endswith(f": coordinate {coord} is outside {what}")
    assert e.op is not None and e.op.name == Ktdp.construct_indirect_access_tile


def test_index_view_read_outside_its_view() -> None:
    m = kernel(lambda k: k.read(shift=3))
    e = fails("out-of-view", m, args=args([0] * 8))
    assert e.tile == 1 and e.coordinate == (8,)
    assert e.message.endswith(": coordinate (8,) is outside the view's sizes [8]")


def test_gathered_row_outside_a_non_box_coordinate_set() -> None:
    run(gather(nodiag=True), args=args([1, 1, 2, 3, 4, 5, 6, 7]))
    e = fails("out-of-view", gather(nodiag=True), args=args([1, 1, 2, 3, 4, 0, 6, 7]))
    assert e.tile == 1 and e.coordinate == (0, 0)
    assert e.message.endswith(": coordinate (0, 0) is outside the view's coordinate_set")


def test_scatter_write_write_race_on_a_gathered_row() -> None:
    # tiles 0 and 1 both scatter into table row 5
    e = fails("race", scatter(), args=args([9, 5, 1, 2, 3, 4, 5, 6]))
    assert e.tile == 1 and e.coordinate == (5, 0)
    assert e.message.endswith(": data race on global array 'e_ptr' at coordinate (5, 0): tile 1 writes it here and "
                              "tile 0 wrote it in ktdp.store, and no inter-tile op orders the two")


def test_scatter_duplicates_within_one_store_are_a_store_conflict_not_a_race() -> None:
    y = np.arange(64, dtype=np.float32).reshape(8, 8)
    e = fails("store-conflict", scatter(), args=args([5, 5, 1, 2, 3, 4, 6, 7], y=y))
    assert e.op is not None and e.op.name == Ktdp.store
    assert "twice" in e.message


def test_gather_after_an_unordered_scatter_races() -> None:
    e = fails("race", racy_rows(), args=args([0, 1, 2, 3, 8, 2, 9, 10]))
    assert e.tile == 1 and e.coordinate == (2, 0) and e.op is not None and e.op.name == Ktdp.load
    assert "tile 1 reads it here and tile 0 wrote it in ktdp.store" in e.message


def test_scatter_after_an_unordered_gather_races() -> None:
    m = kernel(lambda k: k.on_tile_0(k.read, k.scatter))
    e = fails("race", m, args=args([0, 1, 2, 3, 8, 9, 3, 10]))
    assert e.tile == 1 and e.coordinate == (3, 0) and e.op is not None and e.op.name == Ktdp.store
    assert "tile 0 read it in ktdp.load" in e.message


def test_the_index_read_races_with_an_unordered_write_of_the_ids() -> None:
    # tile 0 rewrites ids[4:8] while tile 1 reads them as indices
    e = fails("race", racy_ids(), args=args([0] * 8))
    assert e.tile == 1 and e.coordinate == (4,) and e.op is not None
    assert e.op.name == Ktdp.construct_indirect_access_tile
    assert "global array 'ids_ptr'" in e.message and "tile 0 wrote it in ktdp.store" in e.message


def local() -> ktir.Module:
    """Tile t writes row 3 of its 16 x 8 scratchpad table with 2s, then gathers rows ids[0:4]."""
    b = Builder()
    aliases = _aliases(b)
    one = b.alias("one", box(1, 8, fixed=[0]))
    with b.func("k", [("ids_ptr", INDEX)], grid=[2]) as (ids_ptr,):
        c0, c3 = b.index(0, "c0"), b.index(3, "c3")
        (t,) = b.tile_id(names=["t"])
        r = b.index(0, "r")
        tab = b.memory_view(c0, [16, 8], [8, 1], F32, memory_space=at.MemorySpaceAttr(kind="ct_local"),
                            coordinate_set=aliases["tab"], name="tab")
        idv = b.memory_view(ids_ptr, [8], [1], I32, coordinate_set=aliases["ids"], name="idv")
        row = b.access_tile(tab, [c3, c0], one, [1, 8], aliases["id2"], name="row")
        b.store(b.constant(at.DenseAttr(type=ty.tensor((1, 8), F32), values=2.0), name="v"), row)
        Kernel(b, aliases, t, c0, None, r, tab, idv, None).read()
        b.func_return()
    return b.module


def test_gather_of_scratchpad_rows_never_written() -> None:
    e = fails("uninitialised", local(), args={"ids_ptr": np.array([3, 3, 6, 3, 0, 0, 0, 0], np.int32)})
    assert e.tile == 0 and e.coordinate == (6, 0)
    assert e.message.endswith(": reads the ct_local memory of tile 0 at coordinate (6, 0), which was never written")
    run(local(), args={"ids_ptr": np.array([3, 3, 3, 3, 0, 0, 0, 0], np.int32)})


def test_embedding_example_id_out_of_range() -> None:
    V, B, H = 300, 512, 1024
    ids = np.arange(B, dtype=np.int32) % V
    ids[200] = V
    a = {"e_ptr": np.zeros((V, H), np.float16), "ids_ptr": ids, "y_ptr": np.zeros((B, H), np.float16), "V": V, "B": B, "H": H}
    with pytest.raises(ri.KtirRuntimeError) as info:
        ri.run(example("embedding_gather.ktir"), args=a)
    e = info.value
    # row 200 is in tile 200 // 128 = 1's block at r = 128, read first for columns 0..1023
    assert e.kind == "out-of-view" and e.tile == 1 and e.coordinate == (V, 0)
    assert e.message.endswith(f": coordinate ({V}, 0) is outside the view's sizes [{V}, {H}]")


def test_paged_attention_block_table_entry_outside_the_pool() -> None:
    NP, S, W = 64, 4, 16
    rng = np.random.default_rng(0)
    bt = rng.permutation(NP).reshape(S, W).astype(np.int32)
    bt[2, 5] = NP
    a = {"q_ptr": rng.standard_normal((S, 128)).astype(np.float16),
         "kc_ptr": rng.standard_normal((NP, 16, 128)).astype(np.float16),
         "vc_ptr": rng.standard_normal((NP, 16, 128)).astype(np.float16),
         "bt_ptr": bt, "lens_ptr": np.array([256, 100, 64, 1], np.int32),
         "o_ptr": np.zeros((S, 128), np.float16), "NP": NP, "S": S, "W": W}
    with pytest.raises(ri.KtirRuntimeError) as info:
        ri.run(example("paged_attention.ktir"), args=a)
    e = info.value
    assert e.kind == "out-of-view" and e.tile == 2 and e.coordinate == (NP, 0, 0)
    assert e.message.endswith(f": coordinate ({NP}, 0, 0) is outside the view's sizes [{NP}, 16, 128]")


def _general_paths_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Turn off the fast paths (box reads of index views, whole-row gathers)."""
    import reference_interp.access as access
    import reference_interp.ops.ktdp as ktdp

    monkeypatch.setattr(access, "_row_gather", lambda *a: None)
    monkeypatch.setattr(ktdp, "_index_box", lambda *a: None)


def _error(m: ktir.Module, a: dict[str, np.ndarray]) -> tuple[str, int | None, tuple[int, ...] | None, str]:
    with pytest.raises(ri.KtirRuntimeError) as info:
        run(m, args=a)
    e = info.value
    return e.kind, e.tile, e.coordinate, e.message


SMALL_TABLE = {"e_ptr": E[:10].copy(), "ids_ptr": np.array([3, 0, 9, 3, 7, 12, 1, 2], np.int32),
               "y_ptr": np.zeros((8, 8), np.float32)}


@pytest.mark.parametrize(("make", "a"), [
    (gather, SMALL_TABLE),  # row 12 is in the view (16 rows) but beyond the 10-row array
    (racy_ids, args([0] * 8)),  # the index read races
    (racy_rows, args([0, 1, 2, 3, 8, 2, 9, 10])),  # the row gather races
    (gather, args([3, 0, 15, 3, 7, 1, 16, 2])),  # out of the view
])
def test_fast_paths_report_what_the_general_paths_report(make: Callable[[], ktir.Module], a: dict[str, np.ndarray],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    fast = _error(make(), {k: v.copy() for k, v in a.items()})
    _general_paths_only(monkeypatch)
    assert _error(make(), {k: v.copy() for k, v in a.items()}) == fast


def test_fast_paths_give_the_general_paths_results_and_stats(monkeypatch: pytest.MonkeyPatch) -> None:
    V, B, H = 300, 256, 2048  # two column blocks: the second's columns are a captured offset plus a variable
    rng = np.random.default_rng(1)
    table, ids = rng.standard_normal((V, H)).astype(np.float16), rng.integers(0, V, B).astype(np.int32)
    a = {"e_ptr": table, "ids_ptr": ids, "y_ptr": np.zeros((B, H), np.float16), "V": V, "B": B, "H": H}
    m = example("embedding_gather.ktir")
    import reference_interp.access as access

    rows = access._row_gather
    taken: list[bool] = []

    def counted(*args: Any) -> Any:
        got = rows(*args)
        taken.append(got is not None)
        return got

    monkeypatch.setattr(access, "_row_gather", counted)
    fast = ri.run(m, args=a)
    np.testing.assert_array_equal(fast.outputs["y_ptr"], table[ids])
    assert taken == [True] * 4  # both column blocks of both 128-row blocks copy whole rows
    _general_paths_only(monkeypatch)
    slow = ri.run(m, args=a)
    np.testing.assert_array_equal(fast.outputs["y_ptr"], slow.outputs["y_ptr"])
    assert fast.stats == slow.stats
