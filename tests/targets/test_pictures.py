"""The README's pictures are real timelines of repository kernels, and current."""

from __future__ import annotations

import pytest

pytest.importorskip("reference_interp")

from .make_pictures import IMAGES, PICTURES  # noqa: E402


@pytest.mark.parametrize("name", sorted(PICTURES))
def test_picture_is_current(name):
    path = IMAGES / name
    assert path.exists(), f"{path} is missing: run `python -m tests.targets.make_pictures`"
    assert path.read_text(encoding="utf-8") == PICTURES[name](), f"{path.name} is stale: run `python -m tests.targets.make_pictures`"
