"""providers.outbox: the file sits in the spool the agent can write into."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from providers.outbox import Outbox
from providers.testing import returns_within


def test_a_symlink_planted_as_the_temp_file_is_never_written_through(tmp_path: Path) -> None:
    victim = tmp_path / "bashrc"
    victim.write_text("the operator's file\n")
    spool = tmp_path / "spool"
    spool.mkdir()
    os.symlink(victim, spool / ".outbox.tmp")
    outbox = Outbox(str(spool))
    outbox.add({"want": "hello", "offset": 1})
    assert victim.read_text() == "the operator's file\n"
    assert outbox.find("hello") == {"want": "hello", "offset": 1}


def test_the_outbox_is_0600_whatever_the_umask(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        Outbox(str(tmp_path)).add({"want": "hello"})
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / ".outbox").st_mode) == 0o600


def test_a_fifo_as_the_outbox_reads_as_empty(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / ".outbox")
    assert returns_within(lambda: Outbox(str(tmp_path)).entries()) == []
