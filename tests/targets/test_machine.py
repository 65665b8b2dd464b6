"""Routes through each topology, memory attachment, rates per dtype."""

from __future__ import annotations

import pytest

from ktir.targets import load_target
from ktir.targets.machine import Machine

from .helpers import bw, q, toy


def ring(n: int, bidirectional: bool = True) -> Machine:
    return Machine(toy(**{
        "tiles.count": q(n),
        "interconnect": {"topology": "ring", "bidirectional": bidirectional, "link_bandwidth": bw(8), "hop_latency_cycles": q(3)},
    }))


def mesh(cols: int, rows: int, wrap: bool) -> Machine:
    return Machine(toy(**{
        "tiles.count": q(cols * rows),
        "interconnect": {"topology": "mesh2d", "shape": q([cols, rows]), "wraparound": wrap, "link_bandwidth": bw(8),
                         "hop_latency_cycles": q(1)},
    }))


def test_ring_takes_the_shorter_way_round():
    m = ring(8)
    assert m.topology.route(1, 3) == ("1->2", "2->3")
    assert m.topology.route(1, 7) == ("1->0", "0->7")
    assert m.topology.route(0, 4) == ("0->1", "1->2", "2->3", "3->4")  # a tie goes up
    assert m.topology.route(5, 5) == ()
    assert len(m.topology.capacity) == 16


def test_unidirectional_ring_always_goes_up():
    m = ring(8, bidirectional=False)
    assert m.topology.route(1, 7) == tuple(f"{i}->{i + 1}" for i in range(1, 7))
    assert m.topology.route(7, 1) == ("7->0", "0->1")
    assert len(m.topology.capacity) == 8


def test_mesh_routes_x_then_y():
    m = mesh(4, 3, wrap=False)
    # tile 1 = (1, 0), tile 11 = (3, 2)
    assert m.topology.route(1, 11) == ("1->2", "2->3", "3->7", "7->11")
    assert m.topology.route(11, 1) == ("11->10", "10->9", "9->5", "5->1")


def test_torus_wraps_when_shorter():
    m = mesh(4, 4, wrap=True)
    assert m.topology.route(0, 3) == ("0->3",)  # (0,0) -> (3,0) by the wraparound link
    assert m.topology.route(0, 12) == ("0->12",)
    assert m.topology.latency(m.topology.route(0, 15)) == 2


def test_crossbar_goes_out_of_one_port_into_another():
    m = Machine(toy(**{"interconnect": {"topology": "crossbar", "port_bandwidth": bw(64), "latency_cycles": q(7)},
                       "memory.0.attach_tiles": None}))
    assert m.topology.route(0, 3) == ("out0", "in3")
    assert m.topology.latency(("out0", "in3")) == 7
    assert m.memory_route(2, inbound=True).links == ("in2",)
    assert m.memory_route(2, inbound=False).links == ("out2",)


def test_memory_uses_the_nearest_attach_point():
    m = Machine(load_target("spyre"))  # LPDDR5 at ring stops 0 and 16
    assert m.memory_route(0, True).links == ()
    assert m.memory_route(3, True).links == ("0->1", "1->2", "2->3")
    assert m.memory_route(13, True).links == ("16->15", "15->14", "14->13")
    assert m.memory_route(30, False).links == ("30->31", "31->0")
    assert m.memory_route(3, True).latency == 3 * 2


def test_spyre_rates_per_cycle():
    m = Machine(load_target("spyre"))
    assert m.clock_hz == 1.2e9
    assert m.global_bw == pytest.approx(200e9 / 1.2e9)
    assert m.topology.capacity["0->1"] == 128
    assert m.matrix_rate("f16") == (1024.0, None)
    assert m.matrix_rate("f8E4M3FN") == (2048.0, None)  # any 8-bit float uses the f8 rate
    assert m.matrix_rate("i8") == (4096.0, None)
    rate, warning = m.matrix_rate("f32")
    assert rate == 1024.0 and warning is not None and "f32" in warning
    assert m.vector_rate("f16", False) == (4 * 64.0, None)
    assert m.vector_rate("f16", True) == (4 * 16.0, None)
    assert m.global_bytes(1) == 128 and m.global_bytes(129) == 256
