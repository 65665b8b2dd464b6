"""The interpreter's bounded memos (reference_interp/memo.py)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reference_interp.memo import MISSING, Memo, ObjectMemo


@given(st.integers(1, 6), st.lists(st.tuples(st.integers(0, 9), st.one_of(st.none(), st.integers())), max_size=60))
def test_memo_answers_what_was_put_since_it_last_forgot(limit: int, puts: list[tuple[int, int | None]]) -> None:
    memo: Memo[int, int | None] = Memo(limit)
    since_clear: dict[int, int | None] = {}  # the model: a dict emptied whenever a new key meets a full memo
    for key, value in puts:
        if len(since_clear) >= limit and key not in since_clear:
            since_clear.clear()
        since_clear[key] = value
        assert memo.put(key, value) is value
        assert len(memo) == len(since_clear) <= limit
        for k in range(10):
            assert memo.get(k) == since_clear.get(k, MISSING)


def test_a_remembered_none_is_not_missing() -> None:
    memo: Memo[str, None] = Memo(2)
    assert memo.get("a") is MISSING
    memo.put("a", None)
    assert memo.get("a") is None


class _Equal:
    """Equal to every other instance: an ObjectMemo must still tell them apart."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Equal)

    def __hash__(self) -> int:
        return 0


def test_object_memo_goes_by_identity_and_extra_key() -> None:
    memo: ObjectMemo[str] = ObjectMemo(8)
    a, b = _Equal(), _Equal()
    memo.put(a, "a")
    memo.put(a, "a, f32", extra=("f32",))
    assert memo.get(a) == "a"
    assert memo.get(a, ("f32",)) == "a, f32"
    assert memo.get(a, ("f16",)) is MISSING
    assert memo.get(b) is MISSING


def test_object_memo_never_mistakes_a_new_object_at_a_reused_address() -> None:
    memo: ObjectMemo[int] = ObjectMemo(8)
    old = _Equal()
    memo.put(old, 1)
    # the entry keeps `old` alive, so its id cannot be reused while remembered; a forged entry
    # under another object's id (what a reused id would look like) is not a hit
    new = _Equal()
    memo._data[(id(new), ())] = (old, 1)
    assert memo.get(new) is MISSING
    assert memo.get(old) == 1


def test_object_memo_forgets_everything_when_full() -> None:
    memo: ObjectMemo[int] = ObjectMemo(2)
    objs = [_Equal() for _ in range(3)]
    memo.put(objs[0], 0)
    memo.put(objs[1], 1)
    memo.put(objs[1], 11)  # a key already held does not make room
    assert len(memo) == 2 and memo.get(objs[0]) == 0
    memo.put(objs[2], 2)
    assert len(memo) == 1 and memo.get(objs[0]) is MISSING and memo.get(objs[2]) == 2


@pytest.mark.parametrize("cls", [Memo, ObjectMemo])
def test_a_memo_holds_at_least_one_entry(cls: type) -> None:
    with pytest.raises(ValueError, match="at least one entry"):
        cls(0)
