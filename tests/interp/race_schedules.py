"""Random schedules for driving `RaceTracker` directly (test_race_oracle, test_write_boxes).

A schedule is (tiles, steps): each step is ("read" | "write", tile, access), ("post", tile)
(an `inter_tile_produce`, closing the tile's segment) or ("join", tile, posts) (a delivery op
receiving earlier posts, by their order of posting). A join drawn before any post is dropped.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st


@st.composite
def schedules(draw: st.DrawFn, accesses: st.SearchStrategy[Any], max_steps: int,
              mix: tuple[str, ...]) -> tuple[int, list[tuple[Any, ...]]]:
    """Up to `max_steps` steps on 2-4 tiles, the kind of each drawn from `mix` (repeat a kind
    to make it likelier), each read or write drawing its access from `accesses`."""
    n = draw(st.integers(2, 4))
    steps: list[tuple[Any, ...]] = []
    posts = 0
    for _ in range(draw(st.integers(1, max_steps))):
        t = draw(st.integers(0, n - 1))
        what = draw(st.sampled_from(mix))
        if what == "join" and posts:
            steps.append(("join", t, draw(st.lists(st.integers(0, posts - 1), min_size=1, max_size=3))))
        elif what == "post":
            steps.append(("post", t))
            posts += 1
        elif what in ("read", "write"):
            steps.append((what, t, draw(accesses)))
    return n, steps
