"""Opening a file the agent or its CLI can write: a regular file only, a bounded read. No Django.

The agent runs as lab's user and can put anything where lab reads: a FIFO (an open or a read
waits for a writer that never comes, and on the event loop that stops every page and socket),
a symlink to /dev/zero or to any file on the machine, or a file too large to hold. Every such
read goes through here: one open with O_NONBLOCK and (unless the caller follows symlinks by
design) O_NOFOLLOW, one fstat, and nothing but a regular file is read, never more than a limit.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager, suppress

# The hook writer caps a payload at this (providers/hook_writer.py), so no genuine
# spool file is larger.
MAX_SPOOL_BYTES = 4 * 1024 * 1024

_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)


class UnsafeFile(OSError):
    """The path is there but is not a file lab reads: a symlink, a FIFO, a device, a directory,
    or a file over the limit. The message names the path and what it is."""


class TooLarge(UnsafeFile):
    pass


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISDIR, "a directory"),
    ):
        if test(mode):
            return name
    return "something"


def open_fd(path: str | os.PathLike[str], *, follow: bool = False) -> tuple[int, os.stat_result]:
    """(fd, its fstat) of a regular file; the caller closes the fd. FileNotFoundError when it
    is missing; UnsafeFile for a symlink (unless `follow`) or anything but a regular file. The
    open never blocks: a FIFO is refused by its fstat, not waited on."""
    try:
        fd = os.open(path, _FLAGS if follow else _FLAGS | os.O_NOFOLLOW)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EMLINK) and not follow:
            raise UnsafeFile(exc.errno, "is a symlink, not followed", str(path)) from None
        raise
    try:
        st = os.fstat(fd)
    except BaseException:
        os.close(fd)
        raise
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise UnsafeFile(errno.EINVAL, f"is {_kind(st.st_mode)}, not a regular file", str(path))
    return fd, st


@contextmanager
def open_regular(
    path: str | os.PathLike[str], *, follow: bool = False
) -> Iterator[tuple[int, os.stat_result]]:
    """open_fd as a context manager that closes the fd."""
    fd, st = open_fd(path, follow=follow)
    try:
        yield fd, st
    finally:
        os.close(fd)


def read_regular(path: str | os.PathLike[str], limit: int, *, offset: int = 0, follow: bool = False) -> bytes:
    """The file's bytes from `offset`, all of them: TooLarge when more than `limit` are there
    (checked on the fstat size and again on what the read returns, for a file still growing)."""
    with open_regular(path, follow=follow) as (fd, st):
        if st.st_size - offset > limit:
            raise TooLarge(
                errno.EFBIG, f"holds {st.st_size - offset} bytes, over the {limit}-byte limit", str(path)
            )
        data = pread_upto(fd, limit + 1, offset)
        if len(data) > limit:
            raise TooLarge(errno.EFBIG, f"grew over the {limit}-byte limit while read", str(path))
        return data


def read_head(path: str | os.PathLike[str], limit: int, *, offset: int = 0, follow: bool = False) -> bytes:
    """At most `limit` bytes of the file from `offset` (the rest is left unread)."""
    with open_regular(path, follow=follow) as (fd, _st):
        return pread_upto(fd, limit, offset)


def read_tail(path: str | os.PathLike[str], limit: int) -> bytes:
    """The file's last `limit` bytes (all of it when smaller)."""
    with open_regular(path) as (fd, st):
        return pread_upto(fd, limit, max(0, st.st_size - limit))


def pread_upto(fd: int, limit: int, offset: int) -> bytes:
    """Up to `limit` bytes of an open file from `offset`, in bounded reads."""
    parts, got = [], 0
    while got < limit:
        chunk = os.pread(fd, min(limit - got, 1024 * 1024), offset + got)
        if not chunk:
            break
        parts.append(chunk)
        got += len(chunk)
    return b"".join(parts)


def write_private(path: str | os.PathLike[str], data: bytes) -> None:
    """Replace `path` with `data`, 0600 whatever the umask. Where the agent can write (its spool,
    its run folder) a symlink planted as the temp file must not make lab write through it, so
    the temp name is removed and created anew, never followed."""
    tmp = f"{os.fspath(path)}.tmp"
    with suppress(FileNotFoundError):
        os.unlink(tmp)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, path)
