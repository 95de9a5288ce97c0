"""lab's data dir, database and secrets are its user's alone: 0700 directories, 0600 files,
whatever existed before. No Django: settings call it before Django is set up.

A data dir someone made beforehand keeps the umask's 0755 and a SQLite file Django created
in it 0644: every local user could then read the sessions table and log in with a session
key. lab fixes such modes at start, and refuses to start when it cannot (the path belongs to
another user, or lab may not change it).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from pathlib import Path


class NotPrivate(Exception):
    """The path cannot be made private to lab's user; the message says which and why."""


def private_dir(path: Path) -> None:
    """`path` is a directory of lab's user with mode 0700 (created so when missing)."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    _make_private(path, want_dir=True, mode=0o700)


def private_file(path: Path, *, create: bool = False) -> None:
    """`path`, when it exists, is a regular file of lab's user with mode 0600. With `create`, a
    missing one is created empty at 0600, so whoever writes it next keeps that mode."""
    if create:
        # Any failure but "exists" is left to whoever writes the file next: it says what is wrong.
        with contextlib.suppress(OSError):
            os.close(
                os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
            )
    _make_private(path, want_dir=False, mode=0o600)


def _make_private(path: Path, *, want_dir: bool, mode: int) -> None:
    # Checked and changed through one fd opened without following a symlink, so what is
    # checked is what is changed.
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | (os.O_DIRECTORY if want_dir else 0)
    what = "a directory" if want_dir else "a regular file"
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        return
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise NotPrivate(
                f"{path} is not {what} (a symlink or something else); lab keeps its data only in its own."
            ) from None
        raise NotPrivate(f"lab cannot open {path}: {exc.strerror}.") from None
    try:
        st = os.fstat(fd)
        if not (stat.S_ISDIR if want_dir else stat.S_ISREG)(st.st_mode):
            raise NotPrivate(f"{path} is not {what}; lab keeps its data only in its own.")
        if st.st_uid != os.geteuid():
            raise NotPrivate(
                f"{path} belongs to user id {st.st_uid}, not to lab's user ({os.geteuid()}): lab keeps "
                "its sessions and secret key only where no one else can read them. Use a LAB_DATA_DIR of "
                "your own."
            )
        if stat.S_IMODE(st.st_mode) != mode:
            try:
                os.fchmod(fd, mode)
            except OSError as exc:
                raise NotPrivate(
                    f"{path} has mode {stat.S_IMODE(st.st_mode):04o} and lab cannot make it {mode:04o} "
                    f"({exc.strerror}): other local users could read lab's sessions."
                ) from None
    finally:
        os.close(fd)
