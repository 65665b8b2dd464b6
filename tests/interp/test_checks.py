"""Each runtime check fires, with the op, tile and coordinate in the diagnostic."""

from __future__ import annotations

import numpy as np
import pytest

import reference_interp as ri

from .helpers import fails, run

VIEW = "#ktdp.memory_space<global>"
ALIASES = """
#v16 = affine_set<(d0) : (d0 >= 0, -d0 + 15 >= 0)>
#v4 = affine_set<(d0) : (d0 >= 0, -d0 + 3 >= 0)>
#id1 = affine_map<(d0) -> (d0)>
#all = affine_set<(d0)[s0] : (d0 - s0 * 4 >= 0, -d0 + s0 * 4 + 3 >= 0)>
#g0 = affine_set<(d0) : (d0 == 0)>
"""


def kernel(body: str, args: str = "%x: index", grid: int = 4) -> str:
    return f"""{ALIASES}
func.func @k({args}) attributes {{grid = [{grid}]}} {{
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %t = ktdp.get_compute_tile_id : index
  %xv = ktdp.construct_memory_view %x, sizes: [16], strides: [1] {{coordinate_set = #v16, memory_space = {VIEW}}} : memref<16xf32>
{body}
  return
}}
"""


TILE = "ktdp.construct_access_tile %xv[{0}] {{access_tile_order = #id1, access_tile_set = #v4}} : memref<16xf32> -> !ktdp.access_tile<4xindex>"
LOAD = "ktdp.load {0} : !ktdp.access_tile<4xindex> -> tensor<4xf32>"
STORE = "ktdp.store {0}, {1} : tensor<4xf32>, !ktdp.access_tile<4xindex>"

X = {"x": np.zeros(16, np.float32)}


# ---------------------------------------------------------------------- races


def test_write_write_race() -> None:
    body = f"""
  %a = {TILE.format('%c0')}
  %v = {LOAD.format('%a')}
  %b = {TILE.format('%c4')}
  {STORE.format('%v', '%b')}"""
    e = fails("race", kernel(body), args=X)
    assert e.tile == 1 and e.coordinate == (4,)
    assert "tile 1 writes it here and tile 0 wrote it in ktdp.store" in e.message
    assert e.op is not None and e.op.name == "ktdp.store" and e.diagnostics[0].line > 0


def test_read_after_unordered_write() -> None:
    # tile 0 writes x[0:4]; tile 1 reads it: no inter-tile op orders them
    body = f"""
  %a = {TILE.format('%c0')}
  %is0 = arith.cmpi eq, %t, %c0 : index
  scf.if %is0 {{
    %z = arith.constant dense<1.0> : tensor<4xf32>
    {STORE.format('%z', '%a')}
  }} else {{
    %v = {LOAD.format('%a')}
  }}"""
    e = fails("race", kernel(body), args=X)
    assert e.tile == 1 and e.coordinate == (0,) and "wrote it in ktdp.store" in e.message


def test_write_after_unordered_read() -> None:
    body = f"""
  %a = {TILE.format('%c0')}
  %is0 = arith.cmpi eq, %t, %c0 : index
  scf.if %is0 {{
    %v = {LOAD.format('%a')}
  }} else {{
    %z = arith.constant dense<1.0> : tensor<4xf32>
    {STORE.format('%z', '%a')}
  }}"""
    e = fails("race", kernel(body), args=X)
    assert e.tile == 1 and "tile 0 read it in ktdp.load" in e.message


BARRIER = """
  %tok = arith.constant dense<0.0> : tensor<1xf32>
  %f = ktdp.inter_tile_produce producer_tiles_per_group = #all -> !ktdp.tile_future<(tensor<1xf32>), groups = #g0> {
  ^bb0(%gid: index):
    ktdp.yield_partial %tok : tensor<1xf32>
  }
  %done = ktdp.inter_tile_reduce(%f) consumer_tiles_per_group = #all, identity(%tok : tensor<1xf32>) : !ktdp.tile_future<(tensor<1xf32>), groups = #g0> -> tensor<1xf32> {
  ^bb0(%p: tensor<1xf32>, %q: tensor<1xf32>):
    ktdp.yield_reduced %p : tensor<1xf32>
  }"""


def test_a_barrier_orders_the_write_before_the_reads() -> None:
    # tile 0 writes x[0:4] before the barrier; every tile reads it after
    body = f"""
  %a = {TILE.format('%c0')}
  %is0 = arith.cmpi eq, %t, %c0 : index
  scf.if %is0 {{
    %z = arith.constant dense<1.0> : tensor<4xf32>
    {STORE.format('%z', '%a')}
  }}
{BARRIER}
  %v = {LOAD.format('%a')}"""
    r = run(kernel(body), args=X)
    assert r.outputs["x"][:4].tolist() == [1.0] * 4
    # reading before the barrier is still a race
    early = body.replace(BARRIER, "").replace(f"  %v = {LOAD.format('%a')}", "") + f"\n  %v = {LOAD.format('%a')}\n{BARRIER}"
    fails("race", kernel(early), args=X)


@pytest.mark.parametrize("late_race", [False, True])
def test_hundreds_of_barriers_then_a_race(late_race: bool) -> None:
    # 70 barriers on 4 tiles make 280 segments: the write map outgrows 8-bit entries while
    # the tiles take turns writing x[0:4], each turn ordered by the barrier after it
    loop_barrier = BARRIER.replace("\n  ", "\n    ")
    body = f"""
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c70 = arith.constant 70 : index
  %a = {TILE.format('%c0')}
  %z = arith.constant dense<1.0> : tensor<4xf32>
  scf.for %i = %c0 to %c70 step %c1 {{
    %who = arith.remui %i, %c4 : index
    %mine = arith.cmpi eq, %who, %t : index
    scf.if %mine {{
      {STORE.format('%z', '%a')}
    }}
{loop_barrier}
  }}"""
    if late_race:  # tiles 0 and 1 write once more, with no barrier between them
        body += f"""
  %late = arith.cmpi ult, %t, %c2 : index
  scf.if %late {{
    {STORE.format('%z', '%a')}
  }}"""
        e = fails("race", kernel(body), args=X)
        assert e.tile == 1 and "tile 0 wrote it" in e.message
    else:
        assert run(kernel(body), args=X).outputs["x"][:4].tolist() == [1.0] * 4


def test_race_detection_can_be_switched_off() -> None:
    body = f"""
  %a = {TILE.format('%c0')}
  %z = arith.constant dense<1.0> : tensor<4xf32>
  {STORE.format('%z', '%a')}"""
    fails("race", kernel(body), args=X)
    run(kernel(body), args=X, check_races=False)


def test_same_tile_accesses_never_race() -> None:
    body = f"""
  %i = arith.muli %t, %c4 : index
  %a = {TILE.format('%i')}
  %v = {LOAD.format('%a')}
  {STORE.format('%v', '%a')}
  %w = {LOAD.format('%a')}
  {STORE.format('%w', '%a')}"""
    run(kernel(body), args=X)


# Races are tracked per element while every access to an array is element-aligned and per
# byte from the first access that is not: tile 0 works on the f32 elements of x, tile 1 on
# its bytes (an i8 view at x's byte address), so answers must be exact at byte level.
BYTES = f"""
  %is0 = arith.cmpi eq, %t, %c0 : index
  %xb_ptr = arith.muli %x, %c4 : index
  %xb = ktdp.construct_memory_view %xb_ptr, sizes: [64], strides: [1] {{coordinate_set = #v64, memory_space = {VIEW}}} : memref<64xi8>
  %ones = arith.constant dense<1> : tensor<4xi8>
  scf.if %is0 {{
    {{tile0}}
  }} else {{
    {{tile1}}
  }}"""
BYTE_STORE = ("%b{0} = ktdp.construct_access_tile %xb[{1}] {{access_tile_order = #id1, access_tile_set = #v4}} : memref<64xi8> -> "
              "!ktdp.access_tile<4xindex>\n    ktdp.store %ones, %b{0} : tensor<4xi8>, !ktdp.access_tile<4xindex>\n")


def _f32(i: int, what: str) -> str:
    tile = TILE.format(f"%e{i}")
    head = f"%e{i} = arith.constant {4 * i} : index\n    %a{i} = {tile}\n    "
    if what == "store":
        return head + "%z = arith.constant dense<2.0> : tensor<4xf32>\n    " + STORE.format("%z", f"%a{i}") + "\n    "
    return head + f"%v{i} = {LOAD.format(f'%a{i}')}\n    "


def _bytes(*offsets: int) -> str:
    out = ""
    for k, off in enumerate(offsets):
        out += f"%o{k} = arith.constant {off} : index\n    " + BYTE_STORE.format(k, f"%o{k}") + "    "
    return out


@pytest.mark.parametrize(
    ("tile0", "tile1", "race"),
    [
        # tile 0 writes elements 0..3 = bytes 0..15; tile 1 writes bytes 16..19 (no race), then 12..15 (race)
        (_f32(0, "store"), _bytes(16), None),
        (_f32(0, "store"), _bytes(16, 12), ("write-write", 12)),
        # byte accesses from the start: bytes 2..5 and 6..9 share f32 element 1 but not a byte
        (_bytes(2), _bytes(6), None),
        (_bytes(2), _bytes(6, 5), ("write-write", 5)),
        # an aligned read recorded per element, then checked per byte
        (_f32(0, "load"), _bytes(16), None),
        (_f32(0, "load"), _bytes(16, 14), ("read-write", 14)),
        # two loads make a read record whose bitmap an aligned store materialises; then bytes
        # (tile 0 reads bytes 0..15 and 32..47, tile 1 writes 16..31: inside the record's span)
        (_f32(0, "load") + _f32(2, "load"), _f32(1, "store") + _bytes(20), None),
        (_f32(0, "load") + _f32(2, "load"), _f32(1, "store") + _bytes(20, 44), ("read-write", 44)),
    ],
    ids=["element-then-bytes", "element-then-bytes-race", "bytes", "bytes-race", "read-record", "read-record-race",
         "read-bitmap", "read-bitmap-race"],
)
def test_races_are_exact_per_byte_when_views_disagree_on_element_size(
        tile0: str, tile1: str, race: tuple[str, int] | None) -> None:
    text = kernel(BYTES.replace("{tile0}", tile0).replace("{tile1}", tile1), grid=2).replace(
        "#g0 =", "#v64 = affine_set<(d0) : (d0 >= 0, -d0 + 63 >= 0)>\n#g0 =")
    if race is None:
        run(text, args=X)
        return
    kind, byte = race
    e = fails("race", text, args=X)
    assert e.tile == 1 and e.coordinate == (byte,), e.message
    assert ("tile 0 read it" if kind == "read-write" else "tile 0 wrote it") in e.message


REMOTE = """
#s = affine_set<(d0) : (d0 >= 0, -d0 + 3 >= 0)>
#id1 = affine_map<(d0) -> (d0)>
func.func @k() attributes {grid = [2]} {
  %c0 = arith.constant 0 : index
  %z = arith.constant dense<1.0> : tensor<4xf32>
  %v = ktdp.construct_memory_view %c0, sizes: [4], strides: [1] {coordinate_set = #s, memory_space = SPACE} : memref<4xf32>
  %a = ktdp.construct_access_tile %v[%c0] {access_tile_order = #id1, access_tile_set = #s} : memref<4xf32> -> !ktdp.access_tile<4xindex>
  ktdp.store %z, %a : tensor<4xf32>, !ktdp.access_tile<4xindex>
  return
}
"""


def test_remote_scratchpad_writes_race() -> None:
    # both tiles write tile 0's scratchpad: a race, found although scratchpads are usually private
    e = fails("race", REMOTE.replace("SPACE", "#ktdp.memory_space<ct_local, ct_id = 0>"))
    assert e.tile == 1 and "tile 0 wrote it" in e.message
    # each tile writes its own scratchpad: no race
    run(REMOTE.replace("SPACE", "#ktdp.memory_space<ct_local>"))


@pytest.mark.parametrize(
    ("text", "shares"),
    [
        (REMOTE.replace("SPACE", "#ktdp.memory_space<ct_local>"), False),
        (REMOTE.replace("SPACE", "#ktdp.memory_space<ct_local, ct_id = 1>"), True),
        # through an alias, even one the kernel does not use
        ("#far = #ktdp.memory_space<ct_local, ct_id = 0>\n" + REMOTE.replace("SPACE", "#ktdp.memory_space<ct_local>"), True),
        # a memref handed to other tiles by a tile future
        (REMOTE.replace("SPACE", "#ktdp.memory_space<ct_local>").replace(
            "  return\n", "  %m = memref.alloc() : memref<4xf32>\n  %f = \"test.share\"(%m) : (memref<4xf32>) -> "
            "!ktdp.tile_future<(memref<4xf32>), groups = #s>\n  return\n"), True),
    ],
    ids=["own", "ct_id", "alias", "future"],
)
def test_which_programs_can_reach_another_tiles_scratchpad(text: str, shares: bool) -> None:
    from reference_interp.compiler import Program

    from .helpers import module

    assert Program(module(text)).shares_scratchpads() is shares


# ---------------------------------------------------------------------- views and bounds


def test_out_of_view_coordinate() -> None:
    body = f"""
  %i = arith.constant 13 : index
  %a = {TILE.format('%i')}"""
    e = fails("out-of-view", kernel(body, grid=1), args=X)
    assert e.coordinate == (16,) and "outside the view's sizes" in e.message


def test_out_of_coordinate_set() -> None:
    text = """
#even = affine_set<(d0) : (d0 >= 0, -d0 + 15 >= 0, d0 mod 2 == 0)>
#two = affine_set<(d0) : (d0 >= 0, -d0 + 1 >= 0)>
#id1 = affine_map<(d0) -> (d0)>
func.func @k(%x: index) {
  %c2 = arith.constant 2 : index
  %xv = ktdp.construct_memory_view %x, sizes: [16], strides: [1] {coordinate_set = #even, memory_space = #ktdp.memory_space<global>} : memref<16xf32>
  %a = ktdp.construct_access_tile %xv[%c2] {access_tile_order = #id1, access_tile_set = #two} : memref<16xf32> -> !ktdp.access_tile<2xindex>
  return
}
"""
    e = fails("out-of-view", text, args=X)
    assert e.coordinate == (3,) and "coordinate_set" in e.message


def test_out_of_bounds_of_the_array() -> None:
    body = f"""
  %i = arith.constant 12 : index
  %a = {TILE.format('%i')}
  %v = {LOAD.format('%a')}"""
    e = fails("out-of-bounds", kernel(body, grid=1), args={"x": np.zeros(14, np.float32)})
    assert e.coordinate == (14,) and "global array 'x'" in e.message


def test_view_outside_every_array() -> None:
    body = f"""
  %a = {TILE.format('%c0')}
  %v = {LOAD.format('%a')}"""
    e = fails("out-of-bounds", kernel(body, args="%y: index, %x: index", grid=1),
              args={"y": np.zeros(4, np.float32), "x": 10_000})
    assert "does not lie in any array" in e.message


def test_scratchpad_capacity() -> None:
    text = """
#big = affine_set<(d0) : (d0 >= 0, -d0 + 1023 >= 0)>
#id1 = affine_map<(d0) -> (d0)>
func.func @k(%at: index) {
  %c0 = arith.constant 0 : index
  %v = ktdp.construct_memory_view %at, sizes: [1024], strides: [1] {coordinate_set = #big, memory_space = #ktdp.memory_space<ct_local>} : memref<1024xf32>
  %z = arith.constant dense<0.0> : tensor<1024xf32>
  %a = ktdp.construct_access_tile %v[%c0] {access_tile_order = #id1, access_tile_set = #big} : memref<1024xf32> -> !ktdp.access_tile<1024xindex>
  ktdp.store %z, %a : tensor<1024xf32>, !ktdp.access_tile<1024xindex>
  return
}
"""
    assert run(text, args={"at": 0}, target="spyre").stats[0].scratchpad_peak == 4096
    # 2 MiB - 1 KiB: the last element lands past the end of the scratchpad
    e = fails("capacity", text, args={"at": (2 * 1024 * 1024 - 1024) // 4}, target="spyre")
    assert e.coordinate == (256,) and "2097152 bytes" in e.message
    fails("capacity", text, args={"at": 0}, scratchpad_bytes=2048)
    run(text, args={"at": 1 << 20})  # no target: unlimited


def test_uninitialised_scratchpad_read() -> None:
    text = """
#s = affine_set<(d0) : (d0 >= 0, -d0 + 7 >= 0)>
#id1 = affine_map<(d0) -> (d0)>
func.func @k() {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %v = ktdp.construct_memory_view %c0, sizes: [8], strides: [1] {coordinate_set = #s, memory_space = #ktdp.memory_space<ct_local>} : memref<8xf32>
  %z = arith.constant dense<0.0> : tensor<4xf32>
  %four = affine_set_placeholder
  return
}
""".replace("  %four = affine_set_placeholder\n", """  %lo = ktdp.construct_access_tile %v[%c0] {access_tile_order = #id1, access_tile_set = #h} : memref<8xf32> -> !ktdp.access_tile<4xindex>
  ktdp.store %z, %lo : tensor<4xf32>, !ktdp.access_tile<4xindex>
  %all = ktdp.construct_access_tile %v[%c0] {access_tile_order = #id1, access_tile_set = #s} : memref<8xf32> -> !ktdp.access_tile<8xindex>
  %r = ktdp.load %all : !ktdp.access_tile<8xindex> -> tensor<8xf32>
""").replace("#id1 =", "#h = affine_set<(d0) : (d0 >= 0, -d0 + 3 >= 0)>\n#id1 =")
    e = fails("uninitialised", text)
    assert e.coordinate == (4,) and "never written" in e.message


def test_uninitialised_alloc_read() -> None:
    text = """
func.func @k() -> f32 {
  %c0 = arith.constant 0 : index
  %m = memref.alloc() : memref<4xf32>
  %v = memref.load %m[%c0] : memref<4xf32>
  return %v : f32
}
"""
    fails("uninitialised", text)
    ok = text.replace("  %v = memref.load", "  %one = arith.constant 1.0 : f32\n  memref.store %one, %m[%c0] : memref<4xf32>\n  %v = memref.load")
    assert run(ok).returns[0] == (np.float32(1.0),)


# ---------------------------------------------------------------------- limits


def test_step_limit_stops_an_endless_loop() -> None:
    text = """
func.func @k() -> index {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.while (%a = %c0) : (index) -> index {
    %go = arith.cmpi sge, %a, %c0 : index
    scf.condition(%go) %a : index
  } do {
  ^bb0(%b: index):
    %n = arith.addi %b, %c1 : index
    scf.yield %n : index
  }
  return %r : index
}
"""
    e = fails("step-limit", text, step_limit=10_000)
    assert "10000" in e.message


def test_memory_limit() -> None:
    text = """
func.func @k() -> tensor<100000x100000xf32> {
  %e = tensor.empty() : tensor<100000x100000xf32>
  return %e : tensor<100000x100000xf32>
}
"""
    fails("memory-limit", text)
    fails("memory-limit", text.replace("100000x100000", "1000x1000"), max_value_bytes=1000)


def test_huge_integer_set_is_refused() -> None:
    text = """
#tri = affine_set<(d0, d1) : (d0 >= 0, -d0 + 99999 >= 0, d1 >= 0, d0 - d1 >= 0)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @k(%x: index) {
  %c0 = arith.constant 0 : index
  %v = ktdp.construct_memory_view %x, sizes: [100000, 100000], strides: [100000, 1] {memory_space = #ktdp.memory_space<global>} : memref<100000x100000xf32>
  %a = ktdp.construct_access_tile %v[%c0, %c0] {access_tile_order = #id2, access_tile_set = #tri} : memref<100000x100000xf32> -> !ktdp.access_tile<100000x100000xindex>
  return
}
"""
    e = fails("memory-limit", text, args={"x": np.zeros(4, np.float32)})
    assert "bounding box of 10000000000 points" in e.message


def test_deadlock_is_reported() -> None:
    # only tile 0 reaches the produce; the others wait for it forever... and tile 0 waits for them
    text = f"""{ALIASES}
func.func @k() attributes {{grid = [4]}} {{
  %c0 = arith.constant 0 : index
  %t = ktdp.get_compute_tile_id : index
  %tok = arith.constant dense<0.0> : tensor<1xf32>
  %is0 = arith.cmpi eq, %t, %c0 : index
  scf.if %is0 {{
    %f = ktdp.inter_tile_produce producer_tiles_per_group = #all -> !ktdp.tile_future<(tensor<1xf32>), groups = #g0> {{
    ^bb0(%gid: index):
      ktdp.yield_partial %tok : tensor<1xf32>
    }}
    %r = ktdp.inter_tile_reduce(%f) consumer_tiles_per_group = #all, identity(%tok : tensor<1xf32>) : !ktdp.tile_future<(tensor<1xf32>), groups = #g0> -> tensor<1xf32> {{
    ^bb0(%p: tensor<1xf32>, %q: tensor<1xf32>):
      ktdp.yield_reduced %p : tensor<1xf32>
    }}
  }}
  return
}}
"""
    e = fails("deadlock", text)
    assert "tile 0 waits in ktdp.inter_tile_reduce" in e.message and "1, 2, 3" in e.message


# ---------------------------------------------------------------------- undefined behaviour


@pytest.mark.parametrize(
    ("op", "a", "b"),
    [("divsi", 7, 0), ("remui", 7, 0), ("divsi", -(2**31), -1), ("shli", 1, 32), ("ceildivsi", 1, 0)],
)
def test_undefined_integer_ops(op: str, a: int, b: int) -> None:
    text = f"""
func.func @k(%a: i32, %b: i32) -> i32 {{
  %r = arith.{op} %a, %b : i32
  return %r : i32
}}
"""
    fails("undefined", text, args={"a": a, "b": b})
    tensor_text = text.replace(": i32", ": tensor<2xi32>").replace("-> i32", "-> tensor<2xi32>")
    fails("undefined", tensor_text, args={"a": np.array([1, a], np.int32), "b": np.array([1, b], np.int32)})


def test_fptosi_of_nan_is_undefined() -> None:
    text = """
func.func @k(%a: f32) -> i32 {
  %r = arith.fptosi %a : f32 to i32
  return %r : i32
}
"""
    fails("undefined", text, args={"a": float("nan")})
    fails("undefined", text, args={"a": 3e9})
    assert run(text, args={"a": -2.7}).returns[0] == (-2,)


def test_non_positive_step() -> None:
    text = """
func.func @k(%s: index) {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  scf.for %i = %c0 to %c4 step %s {
  }
  return
}
"""
    fails("undefined", text, args={"s": 0})


def test_strict_mode_flags_reading_tensor_empty() -> None:
    text = """
func.func @k(%a: tensor<4xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4xf32>
  %r = arith.addf %a, %e : tensor<4xf32>
  return %r : tensor<4xf32>
}
"""
    a = np.ones(4, np.float32)
    assert run(text, args={"a": a}, strict=False).returns[0][0].tolist() == [1.0] * 4  # zeros when lenient
    fails("undefined", text, args={"a": a})  # the default
    e = fails("undefined", text, args={"a": a}, strict=True)
    assert "tensor.empty" in e.message and e.op is not None and e.op.name == "arith.addf"
    # only using the shape (outs of an elementwise op), or filling it completely, is fine
    ok = """
func.func @k(%a: tensor<4xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4xf32>
  %r = linalg.exp ins(%a : tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %half = tensor.extract_slice %r[0] [2] [1] : tensor<4xf32> to tensor<2xf32>
  %e2 = tensor.empty() : tensor<4xf32>
  %p = tensor.insert_slice %half into %e2[0] [2] [1] : tensor<2xf32> into tensor<4xf32>
  %q = tensor.insert_slice %half into %p[2] [2] [1] : tensor<2xf32> into tensor<4xf32>
  %s = arith.addf %q, %r : tensor<4xf32>
  return %s : tensor<4xf32>
}
"""
    run(ok, args={"a": a}, strict=True)
    partial = ok.replace("  %q = tensor.insert_slice %half into %p[2] [2] [1] : tensor<2xf32> into tensor<4xf32>\n", "").replace(
        "arith.addf %q, %r", "arith.addf %p, %r")
    fails("undefined", partial, args={"a": a}, strict=True)


def test_matmul_into_tensor_empty_is_flagged_in_strict_mode() -> None:
    text = """
func.func @k(%a: tensor<2x2xf32>) -> tensor<2x2xf32> {
  %e = tensor.empty() : tensor<2x2xf32>
  %r = linalg.matmul ins(%a, %a : tensor<2x2xf32>, tensor<2x2xf32>) outs(%e : tensor<2x2xf32>) -> tensor<2x2xf32>
  return %r : tensor<2x2xf32>
}
"""
    fails("undefined", text, args={"a": np.eye(2, dtype=np.float32)}, strict=True)


# ---------------------------------------------------------------------- arguments


def test_argument_errors() -> None:
    body = f"""
  %a = {TILE.format('%c0')}"""
    text = kernel(body, grid=1)
    assert "missing argument(s) x" in fails("argument", text).message
    assert "unknown argument(s) y" in fails("argument", text, args={"x": np.zeros(16, np.float32), "y": 1}).message
    fails("argument", text, args={"x": 1.5})
    memref_arg = """
func.func @k(%m: memref<4xf32>) {
  return
}
"""
    fails("argument", memref_arg, args={"m": np.zeros(4, np.float16)})
    fails("argument", memref_arg, args={"m": np.zeros(5, np.float32)})
    with pytest.raises(ri.KtirRuntimeError, match="unknown target"):
        run(memref_arg, args={"m": np.zeros(4, np.float32)}, target="nope")


def test_choose_function() -> None:
    text = "func.func @a() { return }\nfunc.func @b() { return }\n"
    assert "choose one with func=" in fails("argument", text).message
    assert run(text, func="b").grid == (1,)
    assert "no function @c" in fails("argument", text, func="c").message


def test_default_function_ignores_private_ones() -> None:
    text = """
func.func private @helper(%x: index) -> index {
  func.return %x : index
}
func.func private @decl(%x: index) -> index
func.func @main(%n: index) -> index {
  %r = func.call @helper(%n) : (index) -> index
  func.return %r : index
}
"""
    assert run(text, args={"n": 7}).returns == [(7,)]
    assert run(text, func="helper", args={"x": 3}).returns == [(3,)]  # still runnable by name
    assert "declaration" in fails("argument", text, func="decl").message
    only_private = "func.func private @h() { return }\n"
    assert "only private functions (@h)" in fails("argument", only_private).message


@pytest.mark.parametrize(
    ("text", "op", "spelled"),
    [
        ("""
func.func @k() -> vector<4xf32> {
  %a = arith.constant dense<1.0> : vector<4xf32>
  %r = arith.addf %a, %a : vector<4xf32>
  func.return %r : vector<4xf32>
}
""", "arith.constant", "vector<4xf32>"),
        ("""
func.func @k() -> tensor<4xcomplex<f32>> {
  %a = tensor.empty() : tensor<4xcomplex<f32>>
  func.return %a : tensor<4xcomplex<f32>>
}
""", "tensor.empty", "complex<f32>"),
        ("""
func.func @k(%a: vector<4xf32>) {
  return
}
""", "func.func", "vector<4xf32>"),
    ],
)
def test_vector_and_complex_values_are_rejected_naming_the_op(text: str, op: str, spelled: str) -> None:
    e = fails("unsupported", text)
    assert e.op is not None and e.op.name == op
    assert spelled in e.message and "KTIR 0.1 defines no operation" in e.message
    assert e.diagnostics[0].line > 0


@pytest.mark.parametrize("where", ["func", "nested"])
def test_multi_block_regions_are_rejected_naming_the_op(where: str) -> None:
    body = """
  "cf.br"() [^bb1] : () -> ()
^bb1:
  func.return %n : index
""" if where == "func" else """
  %r = scf.execute_region -> index {
    "cf.br"() [^bb1] : () -> ()
  ^bb1:
    scf.yield %n : index
  }
  func.return %r : index
"""
    e = fails("unsupported", f"func.func @k(%n: index) -> index {{{body}}}\n", args={"n": 1})
    assert e.op is not None and e.op.name == ("func.func" if where == "func" else "scf.execute_region")
    assert "2 blocks" in e.message


def test_unknown_op_is_a_compile_error() -> None:
    text = """
func.func @k() {
  "mydialect.foo"() : () -> ()
  return
}
"""
    e = fails("unsupported", text)
    assert "mydialect.foo" in e.message


@pytest.mark.parametrize(("lo", "hi"), [(-(1 << 63), 2), (-(1 << 63), (1 << 63) - 1), (0, (1 << 63) - 1)])
@pytest.mark.parametrize("grid", [1, 2])
def test_a_loop_of_more_than_2_63_trips_is_the_step_limit(lo: int, hi: int, grid: int) -> None:
    """Bounds near INT64_MIN and INT64_MAX: len(range(...)) raised OverflowError past 2^63
    trips (runtime.internal, fuzz seed 80287, input 51489); the loop stops with the step
    limit before it starts, per tile and in lockstep (grid 2)."""
    from ktir.builder import Builder
    from ktir.ir import types as ty

    b = Builder()
    with b.func("k", [], grid=[grid]):
        start, stop, one = b.constant(lo, ty.INDEX), b.constant(hi, ty.INDEX), b.constant(1, ty.INDEX)
        with b.for_(start, stop, one) as (iv,):
            b.constant(0, ty.INDEX)
        b.func_return()
    e = fails("step-limit", b.module)
    assert "iterations" in e.message
