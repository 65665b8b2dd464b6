"""Case generators: each level's module yields Drafts; `conformance.regen` writes them."""

from __future__ import annotations

from collections.abc import Iterator

from conformance.gen.draft import Draft


def all_drafts() -> Iterator[Draft]:
    from conformance.gen import checks, collective, core, full, multitile

    yield from checks.syntax_cases()
    yield from checks.validation_cases()
    yield from core.core_cases()
    yield from multitile.cases()
    yield from collective.cases()
    yield from full.cases()
