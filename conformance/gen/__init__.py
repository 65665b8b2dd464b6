"""Case generators: each level's module yields Drafts; `conformance.regen` writes them."""

from __future__ import annotations

from collections.abc import Iterator

from conformance.gen.draft import Draft


def all_drafts() -> Iterator[Draft]:
    from conformance.gen import edges, holes, memory
    from conformance.gen.checks import syntax_cases
    from conformance.gen.collective import cases as collective_cases
    from conformance.gen.core import core_cases
    from conformance.gen.full import cases as full_cases
    from conformance.gen.multitile import cases as multitile_cases
    from conformance.gen.validation import validation_cases

    yield from syntax_cases()
    yield from validation_cases()
    yield from core_cases()
    yield from memory.cases()
    yield from edges.cases()
    yield from holes.cases()
    yield from multitile_cases()
    yield from memory.multitile_cases()
    yield from edges.multitile_cases()
    yield from holes.multitile_cases()
    yield from collective_cases()
    yield from holes.collective_cases()
    yield from full_cases()
