"""providers.keywindow: the window answers as a plain deque of the last N keys would, however
its reads are split, and keeps digests instead of the keys."""

from __future__ import annotations

from collections import deque

from hypothesis import given
from hypothesis import strategies as st

from providers.keywindow import KeyWindow, _digest, _find


class Reference:
    """The window as it was written before: the last `size` keys with their values."""

    def __init__(self, size: int) -> None:
        self.items: deque[tuple[str, str]] = deque(maxlen=size)

    def seen(self, key: str) -> bool:
        if any(k == key for k, _ in self.items):
            return True
        self.items.append((key, ""))
        return False

    def add(self, key: str, value: str) -> None:
        self.items.append((key, value))

    def get(self, key: str) -> str:
        return next((v for k, v in reversed(self.items) if k == key), "")


keys = st.sampled_from([f"u:{n}" for n in range(5)])
steps = st.lists(
    st.tuples(st.sampled_from(["seen", "add", "get", "cut"]), keys, st.sampled_from(["Bash", "Read", ""])),
    max_size=80,
)


@given(size=st.integers(1, 6), ops=steps)
def test_a_dedupe_window_answers_like_the_last_n_keys_across_any_cuts(size: int, ops: list) -> None:
    ref, window = Reference(size), KeyWindow()
    open_ = window.open(size)
    for op, key, _ in ops:
        if op == "cut":  # one read ends, the next starts from the frozen state
            open_ = open_.freeze().open(size)
        elif op == "get":
            assert (key in open_) == any(k == key for k, _ in ref.items)
        else:
            assert open_.seen(key) == ref.seen(key)
    assert len(open_.freeze()) == len(ref.items)


@given(size=st.integers(1, 6), ops=steps)
def test_a_valued_window_names_the_newest_copy_of_a_key(size: int, ops: list) -> None:
    ref, open_ = Reference(size), KeyWindow().open(size, valued=True)
    for op, key, value in ops:
        if op == "cut":
            open_ = open_.freeze().open(size, valued=True)
        elif op == "add":
            open_.add(key, value)
            ref.add(key, value)
        else:
            assert open_.get(key) == ref.get(key)


def test_a_read_that_adds_nothing_hands_the_same_window_on() -> None:
    window = KeyWindow().open(4)
    window.seen("a")
    frozen = window.freeze()
    again = frozen.open(4)
    assert again.seen("a")
    assert again.freeze() is frozen


def test_a_window_keeps_eight_bytes_per_key_not_the_key() -> None:
    window = KeyWindow().open(256)
    for n in range(300):
        window.seen(f"a:msg_{n:032d}:0")
    frozen = window.freeze()
    assert len(frozen) == 256
    assert len(frozen.digests) == 256 * 8
    assert frozen.values == ()


def test_a_digest_found_across_two_slots_is_not_a_match() -> None:
    digest = _digest("key")
    straddling = bytearray(3) + digest + bytearray(5)  # the digest at offset 3, inside slots 0-1
    assert _find(straddling, digest) == -1
    assert _find(straddling + digest, digest) == 2
    assert _find(bytearray(digest) + straddling, digest) == 0
