"""providers.safefile: a regular file only, never more than the limit, never a wait."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from providers.safefile import TooLarge, UnsafeFile, read_head, read_regular, read_tail


def test_a_regular_file_is_read(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(b"hello")
    assert read_regular(tmp_path / "f", 5) == b"hello"
    assert read_regular(tmp_path / "f", 5, offset=2) == b"llo"
    assert read_head(tmp_path / "f", 2) == b"he"
    assert read_tail(tmp_path / "f", 2) == b"lo"


def test_over_the_limit_is_refused_and_says_so(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(b"hello")
    with pytest.raises(TooLarge, match="over the 4-byte limit"):
        read_regular(tmp_path / "f", 4)


def _plant(kind: str, path: Path) -> None:
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "symlink":
        os.symlink("/dev/zero", path)
    else:
        os.mkdir(path)


@pytest.mark.parametrize(
    ("kind", "says"), [("fifo", "is a FIFO"), ("symlink", "is a symlink"), ("dir", "is a directory")]
)
def test_anything_but_a_regular_file_is_refused_at_once(tmp_path: Path, kind: str, says: str) -> None:
    _plant(kind, tmp_path / "f")
    with pytest.raises(UnsafeFile, match=says):
        read_regular(tmp_path / "f", 1024)


def test_following_a_symlink_still_refuses_a_device(tmp_path: Path) -> None:
    os.symlink("/dev/zero", tmp_path / "f")
    with pytest.raises(UnsafeFile, match="character device"):
        read_head(tmp_path / "f", 1024, follow=True)


def test_a_missing_file_is_file_not_found(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        read_regular(tmp_path / "nope", 10)
