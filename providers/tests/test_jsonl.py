"""providers.jsonl: incremental, bounded, refusing anything but a regular file."""

from __future__ import annotations

import os
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from providers import jsonl
from providers.errors import TranscriptUnreadable
from providers.jsonl import read_lines


def _write(path: Path, data: bytes, mode: str = "ab") -> None:
    with open(path, mode) as f:
        f.write(data)


def test_it_reads_complete_lines_with_offsets(tmp_path: Path) -> None:
    p = tmp_path / "t.jsonl"
    _write(p, b'{"a":1}\n{"b":2}\n')
    read = read_lines(str(p))
    assert read.lines == [(0, b'{"a":1}'), (8, b'{"b":2}')]
    assert read.offset == 16
    assert read.inode == os.stat(p).st_ino
    assert not read.reset and not read.more and read.oversized == 0


def test_it_holds_back_a_partial_last_line(tmp_path: Path) -> None:
    p = tmp_path / "t.jsonl"
    _write(p, b'{"a":1}\n{"b":')
    first = read_lines(str(p))
    assert first.lines == [(0, b'{"a":1}')]
    assert first.offset == 8
    _write(p, b"2}\n")
    second = read_lines(str(p), first.offset, first.inode)
    assert second.lines == [(8, b'{"b":2}')]
    assert second.offset == 16


def test_it_never_reads_before_the_offset(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    p = tmp_path / "t.jsonl"
    _write(p, b"x" * 100 + b"\n" + b"y\n")
    positions: list[int] = []
    real = os.pread

    def spy(fd: int, n: int, pos: int) -> bytes:
        positions.append(pos)
        return real(fd, n, pos)

    monkeypatch.setattr(jsonl.os, "pread", spy)
    read = read_lines(str(p), 101, os.stat(p).st_ino)
    assert read.lines == [(101, b"y")]
    assert min(positions) == 101


def test_it_resets_on_truncation(tmp_path: Path) -> None:
    p = tmp_path / "t.jsonl"
    _write(p, b"one\ntwo\n")
    first = read_lines(str(p))
    _write(p, b"new\n", mode="wb")
    second = read_lines(str(p), first.offset, first.inode)
    assert second.reset
    assert second.lines == [(0, b"new")]


def test_it_resets_when_the_file_is_replaced(tmp_path: Path) -> None:
    p = tmp_path / "t.jsonl"
    _write(p, b"one\n")
    first = read_lines(str(p))
    other = tmp_path / "other.jsonl"
    _write(other, b"one\ntwo\nthree\n")
    os.replace(other, p)
    second = read_lines(str(p), first.offset, first.inode)
    assert second.reset
    assert [raw for _, raw in second.lines] == [b"one", b"two", b"three"]


def test_a_missing_file_reads_empty(tmp_path: Path) -> None:
    read = read_lines(str(tmp_path / "not-yet.jsonl"))
    assert read.lines == [] and read.offset == 0 and not read.reset


def test_a_vanished_file_is_a_reset(tmp_path: Path) -> None:
    assert read_lines(str(tmp_path / "gone.jsonl"), 10, 1234).reset


def test_it_refuses_a_symlink(tmp_path: Path) -> None:
    target = tmp_path / "t.jsonl"
    _write(target, b"x\n")
    link = tmp_path / "link.jsonl"
    link.symlink_to(target)
    with pytest.raises(TranscriptUnreadable):
        read_lines(str(link))


def test_it_refuses_a_fifo_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(TranscriptUnreadable):
        read_lines(str(fifo))


def test_it_refuses_a_directory(tmp_path: Path) -> None:
    with pytest.raises(TranscriptUnreadable):
        read_lines(str(tmp_path))


def test_it_skips_an_oversized_line_in_bounded_memory(tmp_path: Path) -> None:
    p = tmp_path / "big.jsonl"
    big = 50 * 1024 * 1024
    with open(p, "wb") as f:
        f.write(b'{"a":1}\n')
        block = b"z" * (1024 * 1024)
        for _ in range(big // len(block)):
            f.write(block)
        f.write(b'\n{"b":2}\n')
    tracemalloc.start()
    try:
        read = read_lines(str(p))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert [raw for _, raw in read.lines] == [b'{"a":1}', b'{"b":2}']
    assert read.oversized == 1
    assert read.skipped == [(8, big)]
    assert read.offset == os.path.getsize(p)
    assert peak < 20 * 1024 * 1024  # max_line_bytes (8 MiB) + a chunk, never the 50 MB


def test_an_oversized_line_spanning_calls_is_skipped_once(tmp_path: Path) -> None:
    p = tmp_path / "t.jsonl"
    _write(p, b"ok\n" + b"x" * 50)
    first = read_lines(str(p), max_line_bytes=20)
    assert first.lines == [(0, b"ok")]
    assert first.skip_from == 3
    assert first.offset == 53  # past the bytes already dropped: they are never re-read
    _write(p, b"x" * 50 + b"\nafter\n")
    second = read_lines(str(p), first.offset, first.inode, max_line_bytes=20, skip_from=first.skip_from)
    assert second.skipped == [(3, 100)]
    assert second.lines == [(104, b"after")]
    assert second.skip_from is None


def test_a_byte_budget_splits_a_large_read(tmp_path: Path) -> None:
    p = tmp_path / "t.jsonl"
    lines = [f'{{"n":{i}}}'.encode() for i in range(1000)]
    _write(p, b"\n".join(lines) + b"\n")
    got: list[bytes] = []
    offset, inode, calls = 0, 0, 0
    while True:
        read = read_lines(str(p), offset, inode, max_line_bytes=64, max_bytes=500, chunk_bytes=128)
        got += [raw for _, raw in read.lines]
        offset, inode, calls = read.offset, read.inode, calls + 1
        if not read.more:
            break
    assert got == lines
    assert calls > 10


def test_a_pass_reads_no_more_than_its_budget_unless_one_line_is_longer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    p = tmp_path / "t.jsonl"
    _write(p, b"".join(f'{{"n":{i:04}}}\n'.encode() for i in range(1000)) + b"x" * 3000 + b"\nend\n")
    real, read_bytes = os.pread, []
    monkeypatch.setattr(jsonl.os, "pread", lambda fd, n, at: read_bytes.append(n) or real(fd, n, at))
    offset, inode, passes = 0, 0, []
    while True:
        read_bytes.clear()
        read = read_lines(str(p), offset, inode, max_line_bytes=8192, max_bytes=500, chunk_bytes=128)
        passes.append((sum(read_bytes), [raw for _, raw in read.lines]))
        offset, inode = read.offset, read.inode
        if not read.more:
            break
    assert [raw for _, lines in passes for raw in lines] == [
        *(f'{{"n":{i:04}}}'.encode() for i in range(1000)),
        b"x" * 3000,
        b"end",
    ]
    long_pass = next(i for i, (_, lines) in enumerate(passes) if b"x" * 3000 in lines)
    # The budget holds for every pass but the one that had to finish the long line.
    assert all(n <= 500 for i, (n, _) in enumerate(passes) if i != long_pass)
    assert passes[long_pass][0] <= 3001 + 128


@settings(max_examples=150, deadline=None)
@given(
    data=st.lists(st.binary(max_size=40), max_size=30).map(lambda parts: b"\n".join(parts)),
    limit=st.integers(min_value=1, max_value=48),
    budget=st.integers(min_value=1, max_value=120),
    chunk=st.integers(min_value=1, max_value=64),
)
def test_reads_in_budgeted_passes_equal_one_whole_read(
    tmp_path_factory: pytest.TempPathFactory, data: bytes, limit: int, budget: int, chunk: int
) -> None:
    path = tmp_path_factory.mktemp("budget") / "t.jsonl"
    _write(path, data)
    whole = read_lines(str(path), max_line_bytes=limit, chunk_bytes=chunk)
    lines: list[tuple[int, bytes]] = []
    skipped: list[tuple[int, int]] = []
    offset, inode, skip_from = 0, 0, None
    for _ in range(10 * len(data) + 2):
        read = read_lines(
            str(path),
            offset,
            inode,
            max_line_bytes=limit,
            skip_from=skip_from,
            max_bytes=budget,
            chunk_bytes=chunk,
        )
        lines += read.lines
        skipped += read.skipped
        offset, inode, skip_from = read.offset, read.inode, read.skip_from
        if not read.more:
            break
    assert lines == whole.lines
    assert skipped == whole.skipped
    assert offset == whole.offset


@settings(max_examples=150, deadline=None)
@given(
    data=st.lists(st.binary(max_size=40), max_size=30).map(lambda parts: b"\n".join(parts)),
    cuts=st.lists(st.integers(min_value=0, max_value=2000), max_size=6),
    chunk=st.integers(min_value=1, max_value=64),
    limit=st.integers(min_value=1, max_value=48),
)
def test_incremental_reads_equal_one_whole_read(
    tmp_path_factory: pytest.TempPathFactory, data: bytes, cuts: list[int], chunk: int, limit: int
) -> None:
    base = tmp_path_factory.mktemp("inc")
    whole_path, inc_path = base / "whole.jsonl", base / "inc.jsonl"
    _write(whole_path, data)
    whole = read_lines(str(whole_path), max_line_bytes=limit, chunk_bytes=chunk)
    points = sorted({min(c, len(data)) for c in cuts} | {len(data)})
    lines: list[tuple[int, bytes]] = []
    skipped: list[tuple[int, int]] = []
    offset, inode, skip_from, prev = 0, 0, None, 0
    for point in points:
        _write(inc_path, data[prev:point])
        prev = point
        read = read_lines(
            str(inc_path),
            offset,
            inode,
            max_line_bytes=limit,
            skip_from=skip_from,
            chunk_bytes=chunk,
        )
        assert not read.reset
        lines += read.lines
        skipped += read.skipped
        offset, inode, skip_from = read.offset, read.inode, read.skip_from
    assert lines == whole.lines
    assert skipped == whole.skipped
    assert offset == whole.offset
    # Every complete line is either returned or skipped as oversized.
    complete = data.split(b"\n")[:-1]
    assert len(whole.lines) + len(whole.skipped) == len(complete)
