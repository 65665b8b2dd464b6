"""The checks on indirect access tiles fire, with the same coordinate and message, on the
fast paths (compact coordinates, box-shaped index reads, row gathers) and the general ones."""

from __future__ import annotations

import numpy as np
import pytest

import reference_interp as ri

from .helpers import example, fails, run

HEAD = """
#tab = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 7 >= 0)>
#ids = affine_set<(d0) : (d0 >= 0, -d0 + 7 >= 0)>
#vars = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 7 >= 0)>
#blk = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 7 >= 0)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
"""

VIEWS = """
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %t = ktdp.get_compute_tile_id : index
  %r = arith.muli %t, %c4 : index
  %tab = ktdp.construct_memory_view %e_ptr, sizes: [16, 8], strides: [8, 1] {coordinate_set = #tab, memory_space = #ktdp.memory_space<global>} : memref<16x8xf32>
  %idv = ktdp.construct_memory_view %ids_ptr, sizes: [8], strides: [1] {coordinate_set = #ids, memory_space = #ktdp.memory_space<global>} : memref<8xi32>
  %yv = ktdp.construct_memory_view %y_ptr, sizes: [8, 8], strides: [8, 1] {coordinate_set = #tab, memory_space = #ktdp.memory_space<global>} : memref<8x8xf32>
"""

IND = ("ktdp.construct_indirect_access_tile intermediate_variables(%m, %k) %tab[ind(%idv[{sub}]), (%k)] "
       "{{variables_space_order = #id2, variables_space_set = #vars}} : memref<16x8xf32>, memref<8xi32> "
       "-> !ktdp.access_tile<4x8xindex>")
BOX = ("ktdp.construct_access_tile %yv[%r, %c0] {access_tile_order = #id2, access_tile_set = #blk} "
       ": memref<8x8xf32> -> !ktdp.access_tile<4x8xindex>")
LOAD = "ktdp.load {0} : !ktdp.access_tile<4x8xindex> -> tensor<4x8xf32>"
STORE = "ktdp.store {0}, {1} : tensor<4x8xf32>, !ktdp.access_tile<4x8xindex>"


def kernel(body: str) -> str:
    return f"""{HEAD}
func.func @k(%e_ptr: index, %ids_ptr: index, %y_ptr: index) attributes {{grid = [2]}} {{
{VIEWS}
{body}
  return
}}
"""


GATHER = kernel(f"""
  %src = {IND.format(sub='%r + %m')}
  %rows = {LOAD.format('%src')}
  %dst = {BOX}
  {STORE.format('%rows', '%dst')}""")

SCATTER = kernel(f"""
  %src = {BOX}
  %rows = {LOAD.format('%src')}
  %dst = {IND.format(sub='%r + %m')}
  {STORE.format('%rows', '%dst')}""")

E = np.arange(128, dtype=np.float32).reshape(16, 8)


def args(ids: list[int], y: np.ndarray | None = None) -> dict[str, np.ndarray]:
    return {"e_ptr": E.copy(), "ids_ptr": np.asarray(ids, np.int32),
            "y_ptr": np.zeros((8, 8), np.float32) if y is None else y}


def test_gather_is_exact() -> None:
    ids = [3, 0, 15, 3, 7, 7, 1, 2]
    r = run(GATHER, args=args(ids))
    np.testing.assert_array_equal(r.outputs["y_ptr"], E[ids])
    assert r.stats[0].bytes_read["global"] == 4 * 4 + 4 * 8 * 4


@pytest.mark.parametrize(("bad", "coord", "what"), [(16, (16, 0), "the view's sizes [16, 8]"),
                                                     (-1, (-1, 0), "the view's sizes [16, 8]")])
def test_gathered_row_outside_the_view(bad: int, coord: tuple[int, ...], what: str) -> None:
    ids = [3, 0, 15, 3, 7, 1, bad, 2]
    e = fails("out-of-view", GATHER, args=args(ids))
    assert e.tile == 1 and e.coordinate == coord
    assert e.message.endswith(f": coordinate {coord} is outside {what}")
    assert e.op is not None and e.op.name == "ktdp.construct_indirect_access_tile"


def test_index_view_read_outside_its_view() -> None:
    text = kernel(f"""
  %src = {IND.format(sub='%r + %m + 3')}
  %rows = {LOAD.format('%src')}""")
    e = fails("out-of-view", text, args=args([0] * 8))
    assert e.tile == 1 and e.coordinate == (8,)
    assert e.message.endswith(": coordinate (8,) is outside the view's sizes [8]")


def test_gathered_row_outside_a_non_box_coordinate_set() -> None:
    # the table's coordinate_set leaves out the point (0, 0) only
    text = GATHER.replace("#tab = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 7 >= 0)>",
                          "#tab = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 7 >= 0)>\n"
                          "#nodiag = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 7 >= 0, d0 + d1 - 1 >= 0)>")
    text = text.replace("sizes: [16, 8], strides: [8, 1] {coordinate_set = #tab",
                        "sizes: [16, 8], strides: [8, 1] {coordinate_set = #nodiag")
    run(text, args=args([1, 1, 2, 3, 4, 5, 6, 7]))
    e = fails("out-of-view", text, args=args([1, 1, 2, 3, 4, 0, 6, 7]))
    assert e.tile == 1 and e.coordinate == (0, 0)
    assert e.message.endswith(": coordinate (0, 0) is outside the view's coordinate_set")


def test_scatter_write_write_race_on_a_gathered_row() -> None:
    # tiles 0 and 1 both scatter into table row 5
    e = fails("race", SCATTER, args=args([9, 5, 1, 2, 3, 4, 5, 6]))
    assert e.tile == 1 and e.coordinate == (5, 0)
    assert e.message.endswith(": data race on global array 'e_ptr' at coordinate (5, 0): tile 1 writes it here and "
                              "tile 0 wrote it in ktdp.store, and no inter-tile op orders the two")


def test_scatter_duplicates_within_one_store_are_a_store_conflict_not_a_race() -> None:
    y = np.arange(64, dtype=np.float32).reshape(8, 8)
    e = fails("store-conflict", SCATTER, args=args([5, 5, 1, 2, 3, 4, 6, 7], y=y))
    assert e.op is not None and e.op.name == "ktdp.store"
    assert "twice" in e.message


def test_gather_after_an_unordered_scatter_races() -> None:
    body = f"""
  %is0 = arith.cmpi eq, %t, %c0 : index
  scf.if %is0 {{
    %src = {BOX}
    %rows = {LOAD.format('%src')}
    %dst = {IND.format(sub='%r + %m')}
    {STORE.format('%rows', '%dst')}
  }} else {{
    %src = {IND.format(sub='%r + %m')}
    %rows = {LOAD.format('%src')}
  }}"""
    e = fails("race", kernel(body), args=args([0, 1, 2, 3, 8, 2, 9, 10]))
    assert e.tile == 1 and e.coordinate == (2, 0) and e.op is not None and e.op.name == "ktdp.load"
    assert "tile 1 reads it here and tile 0 wrote it in ktdp.store" in e.message


def test_scatter_after_an_unordered_gather_races() -> None:
    body = f"""
  %is0 = arith.cmpi eq, %t, %c0 : index
  scf.if %is0 {{
    %src = {IND.format(sub='%r + %m')}
    %rows = {LOAD.format('%src')}
  }} else {{
    %src = {BOX}
    %rows = {LOAD.format('%src')}
    %dst = {IND.format(sub='%r + %m')}
    {STORE.format('%rows', '%dst')}
  }}"""
    e = fails("race", kernel(body), args=args([0, 1, 2, 3, 8, 9, 3, 10]))
    assert e.tile == 1 and e.coordinate == (3, 0) and e.op is not None and e.op.name == "ktdp.store"
    assert "tile 0 read it in ktdp.load" in e.message


def test_the_index_read_races_with_an_unordered_write_of_the_ids() -> None:
    # tile 0 rewrites ids[4:8] while tile 1 reads them as indices
    body = f"""
  %is0 = arith.cmpi eq, %t, %c0 : index
  scf.if %is0 {{
    %z = arith.constant dense<1> : tensor<4xi32>
    %ia = ktdp.construct_access_tile %idv[%c4] {{access_tile_order = #id1, access_tile_set = #four}} : memref<8xi32> -> !ktdp.access_tile<4xindex>
    ktdp.store %z, %ia : tensor<4xi32>, !ktdp.access_tile<4xindex>
  }} else {{
    %src = {IND.format(sub='%r + %m')}
    %rows = {LOAD.format('%src')}
  }}"""
    text = kernel(body).replace("#id2 = ", "#id1 = affine_map<(d0) -> (d0)>\n#four = affine_set<(d0) : (d0 >= 0, -d0 + 3 >= 0)>\n#id2 = ")
    e = fails("race", text, args=args([0] * 8))
    assert e.tile == 1 and e.coordinate == (4,) and e.op is not None
    assert e.op.name == "ktdp.construct_indirect_access_tile"
    assert "global array 'ids_ptr'" in e.message and "tile 0 wrote it in ktdp.store" in e.message


LOCAL = f"""{HEAD}
#one = affine_set<(d0, d1) : (d0 == 0, d1 >= 0, -d1 + 7 >= 0)>
func.func @k(%ids_ptr: index) attributes {{grid = [2]}} {{
  %c0 = arith.constant 0 : index
  %c3 = arith.constant 3 : index
  %t = ktdp.get_compute_tile_id : index
  %r = arith.constant 0 : index
  %tab = ktdp.construct_memory_view %c0, sizes: [16, 8], strides: [8, 1] {{coordinate_set = #tab, memory_space = #ktdp.memory_space<ct_local>}} : memref<16x8xf32>
  %idv = ktdp.construct_memory_view %ids_ptr, sizes: [8], strides: [1] {{coordinate_set = #ids, memory_space = #ktdp.memory_space<global>}} : memref<8xi32>
  %row = ktdp.construct_access_tile %tab[%c3, %c0] {{access_tile_order = #id2, access_tile_set = #one}} : memref<16x8xf32> -> !ktdp.access_tile<1x8xindex>
  %v = arith.constant dense<2.0> : tensor<1x8xf32>
  ktdp.store %v, %row : tensor<1x8xf32>, !ktdp.access_tile<1x8xindex>
  %src = {IND.format(sub='%r + %m')}
  %rows = {LOAD.format('%src')}
  return
}}
"""


def test_gather_of_scratchpad_rows_never_written() -> None:
    e = fails("uninitialised", LOCAL, args={"ids_ptr": np.array([3, 3, 6, 3, 0, 0, 0, 0], np.int32)})
    assert e.tile == 0 and e.coordinate == (6, 0)
    assert e.message.endswith(": reads the ct_local memory of tile 0 at coordinate (6, 0), which was never written")
    run(LOCAL, args={"ids_ptr": np.array([3, 3, 3, 3, 0, 0, 0, 0], np.int32)})


def test_embedding_example_id_out_of_range() -> None:
    V, B = 300, 256
    ids = np.arange(B, dtype=np.int32) % V
    ids[200] = V
    a = {"e_ptr": np.zeros((V, 128), np.float16), "ids_ptr": ids, "y_ptr": np.zeros((B, 128), np.float16), "V": V, "B": B}
    with pytest.raises(ri.KtirRuntimeError) as info:
        ri.run(example("embedding_gather.ktir"), args=a)
    e = info.value
    # row 200 is in tile (200 // 32) % 4 = 2's block at r = 192
    assert e.kind == "out-of-view" and e.tile == 2 and e.coordinate == (V, 0)
    assert e.message.endswith(f": coordinate ({V}, 0) is outside the view's sizes [{V}, 128]")


def test_paged_attention_block_table_entry_outside_the_pool() -> None:
    NP = 32
    rng = np.random.default_rng(0)
    bt = rng.permutation(NP)[:32].reshape(4, 8).astype(np.int32)
    bt[2, 5] = NP
    a = {"q_ptr": rng.standard_normal((4, 64)).astype(np.float16),
         "kc_ptr": rng.standard_normal((NP, 16, 64)).astype(np.float16),
         "vc_ptr": rng.standard_normal((NP, 16, 64)).astype(np.float16),
         "bt_ptr": bt, "lens_ptr": np.array([128, 100, 64, 1], np.int32),
         "o_ptr": np.zeros((4, 64), np.float16), "NP": NP}
    with pytest.raises(ri.KtirRuntimeError) as info:
        ri.run(example("paged_attention.ktir"), args=a)
    e = info.value
    assert e.kind == "out-of-view" and e.tile == 2 and e.coordinate == (NP, 0, 0)
    assert e.message.endswith(f": coordinate ({NP}, 0, 0) is outside the view's sizes [{NP}, 16, 64]")


def _general_paths_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Turn off the fast paths (box reads of index views, whole-row gathers)."""
    import reference_interp.access as access
    import reference_interp.ops.ktdp as ktdp

    monkeypatch.setattr(access, "_row_gather", lambda *a: None)
    monkeypatch.setattr(ktdp, "_index_box", lambda *a: None)


def _error(text: str, a: dict[str, np.ndarray]) -> tuple[str, int | None, tuple[int, ...] | None, str]:
    with pytest.raises(ri.KtirRuntimeError) as info:
        run(text, args=a)
    e = info.value
    return e.kind, e.tile, e.coordinate, e.message


SMALL_TABLE = {"e_ptr": E[:10].copy(), "ids_ptr": np.array([3, 0, 9, 3, 7, 12, 1, 2], np.int32),
               "y_ptr": np.zeros((8, 8), np.float32)}
RACY_IDS = kernel(f"""
  %is0 = arith.cmpi eq, %t, %c0 : index
  scf.if %is0 {{
    %z = arith.constant dense<1> : tensor<4xi32>
    %ia = ktdp.construct_access_tile %idv[%c4] {{access_tile_order = #id1, access_tile_set = #four}} : memref<8xi32> -> !ktdp.access_tile<4xindex>
    ktdp.store %z, %ia : tensor<4xi32>, !ktdp.access_tile<4xindex>
  }} else {{
    %src = {IND.format(sub='%r + %m')}
    %rows = {LOAD.format('%src')}
  }}""").replace("#id2 = ", "#id1 = affine_map<(d0) -> (d0)>\n#four = affine_set<(d0) : (d0 >= 0, -d0 + 3 >= 0)>\n#id2 = ")
RACY_ROWS = kernel(f"""
  %is0 = arith.cmpi eq, %t, %c0 : index
  scf.if %is0 {{
    %src = {BOX}
    %rows = {LOAD.format('%src')}
    %dst = {IND.format(sub='%r + %m')}
    {STORE.format('%rows', '%dst')}
  }} else {{
    %src = {IND.format(sub='%r + %m')}
    %rows = {LOAD.format('%src')}
  }}""")


@pytest.mark.parametrize(("text", "a"), [
    (GATHER, SMALL_TABLE),  # row 12 is in the view (16 rows) but beyond the 10-row array
    (RACY_IDS, args([0] * 8)),  # the index read races
    (RACY_ROWS, args([0, 1, 2, 3, 8, 2, 9, 10])),  # the row gather races
    (GATHER, args([3, 0, 15, 3, 7, 1, 16, 2])),  # out of the view
])
def test_fast_paths_report_what_the_general_paths_report(text: str, a: dict[str, np.ndarray],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    fast = _error(text, {k: v.copy() for k, v in a.items()})
    _general_paths_only(monkeypatch)
    assert _error(text, {k: v.copy() for k, v in a.items()}) == fast


def test_fast_paths_give_the_general_paths_results_and_stats(monkeypatch: pytest.MonkeyPatch) -> None:
    V, B = 300, 256
    rng = np.random.default_rng(1)
    a = {"e_ptr": rng.standard_normal((V, 128)).astype(np.float16), "ids_ptr": rng.integers(0, V, B).astype(np.int32),
         "y_ptr": np.zeros((B, 128), np.float16), "V": V, "B": B}
    m = example("embedding_gather.ktir")
    fast = ri.run(m, args=a)
    np.testing.assert_array_equal(fast.outputs["y_ptr"], a["e_ptr"][a["ids_ptr"]])
    _general_paths_only(monkeypatch)
    slow = ri.run(m, args=a)
    np.testing.assert_array_equal(fast.outputs["y_ptr"], slow.outputs["y_ptr"])
    assert fast.stats == slow.stats
