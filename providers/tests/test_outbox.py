"""The locks and the interrupt mark (providers/outbox.py): an answer's keys and an interrupt take
turns per run, across workers (a file lock: a second open file is a second worker), and so do
replies, a second one waiting its turn when its adapter lets it."""

from __future__ import annotations

import os
import stat
import threading
import time
from pathlib import Path

import pytest

from providers.errors import ReplyInFlight, ReplyRefused
from providers.outbox import Outbox, keys_lock, last_interrupt_ns, mark_interrupt, reply_lock
from providers.schema import RunHandle
from providers.testing import returns_within


def handle(tmp_path) -> RunHandle:
    return RunHandle(run_id=1, worktree="/wt", tmux_socket="s", tmux_session="x", spool_dir=str(tmp_path))


def test_a_second_holder_waits_for_the_first_then_goes(tmp_path):
    run, order = handle(tmp_path), []
    held = threading.Event()

    def first() -> None:
        with keys_lock(run, busy="busy"):
            held.set()
            time.sleep(0.3)
            order.append("first done")

    t = threading.Thread(target=first)
    t.start()
    held.wait(5)
    with keys_lock(run, busy="busy", wait=5):
        order.append("second in")
    t.join()
    assert order == ["first done", "second in"]


def test_a_holder_that_does_not_let_go_in_time_refuses_the_second_with_its_reason(tmp_path):
    run = handle(tmp_path)
    busy = "An answer is being typed."
    with (
        keys_lock(run, busy=busy),
        pytest.raises(ReplyInFlight, match="being typed"),
        keys_lock(run, busy=busy, wait=0.1),
    ):
        pass


def test_an_interrupt_leaves_when_it_was_sent(tmp_path):
    run = handle(tmp_path)
    assert last_interrupt_ns(run) == 0
    before = time.time_ns()
    mark_interrupt(run)
    assert before <= last_interrupt_ns(run) <= time.time_ns()


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


def test_a_reply_that_may_wait_takes_its_turn_after_the_send_in_progress(tmp_path):
    run, order = handle(tmp_path), []
    held = threading.Event()

    def clear() -> None:
        with reply_lock(run):
            held.set()
            time.sleep(0.3)
            order.append("clear done")

    t = threading.Thread(target=clear)
    t.start()
    held.wait(5)
    with reply_lock(run, wait=5):
        order.append("reply sent")
    t.join()
    assert order == ["clear done", "reply sent"]


def test_a_reply_whose_turn_does_not_come_is_refused_without_offering_a_second_copy(tmp_path):
    run = handle(tmp_path)
    with (
        reply_lock(run),
        pytest.raises(ReplyRefused, match="was not sent") as refused,
        reply_lock(run, wait=0.1),
    ):
        pass
    assert not isinstance(refused.value, ReplyInFlight)


def test_an_interrupt_mark_never_writes_through_a_planted_symlink(tmp_path: Path) -> None:
    victim = tmp_path / "bashrc"
    victim.write_text("the operator's\n")
    (tmp_path / ".interrupted.tmp").symlink_to(victim)
    mark_interrupt(handle(tmp_path))
    assert victim.read_text() == "the operator's\n"
    assert stat.S_IMODE(os.stat(tmp_path / ".interrupted").st_mode) == 0o600


def test_a_fifo_as_the_interrupt_mark_reads_as_never(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / ".interrupted")
    assert returns_within(lambda: last_interrupt_ns(handle(tmp_path))) == 0


def test_a_lock_file_planted_as_a_symlink_is_not_opened_through_it(tmp_path: Path) -> None:
    victim = tmp_path / "elsewhere"
    victim.write_text("x")
    (tmp_path / ".keys.lock").symlink_to(victim)
    with (
        pytest.raises(ReplyRefused, match="is not a file lab will open"),
        keys_lock(handle(tmp_path), busy="b"),
    ):
        pass
    (tmp_path / ".reply.lock").symlink_to(victim)
    with pytest.raises(ReplyRefused, match="Nothing was sent"), reply_lock(handle(tmp_path)):
        pass
