"""A parse leaves the caller's garbage collectable as before it.

The parse ages the tree it built into the oldest generation (so the collector does not walk
it again at once). Done blindly, that also moved the caller's young cyclic garbage there,
where only a full collection finds it, and such collections are rare: a fuzz run of one
process grew 30 KB per input (print_generic's closures hold the printed module in a cycle).
"""

from __future__ import annotations

import gc
import weakref
from pathlib import Path

import ktir

TEXT = (Path(__file__).resolve().parents[2] / "examples" / "softmax.ktir").read_text()


class _Node:
    pass


def test_young_garbage_is_not_aged_by_a_parse() -> None:
    assert gc.isenabled()
    ktir.parse(TEXT, "softmax.ktir")  # a first parse in a process loads code (and collects)
    node = _Node()
    node.cycle = node  # type: ignore[attr-defined]
    alive = weakref.ref(node)
    del node
    ktir.parse(TEXT, "softmax.ktir")
    gc.collect(1)  # a young collection, as the collector runs them: it must find the cycle
    assert alive() is None


def test_the_parsed_tree_survives() -> None:
    module = ktir.parse(TEXT, "softmax.ktir")
    gc.collect()
    assert ktir.print_module(module) == ktir.print_module(ktir.parse(TEXT, "softmax.ktir"))
