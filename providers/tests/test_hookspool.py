"""providers.hookspool: the spool the agent can write into never hangs or floods lab."""

from __future__ import annotations

import asyncio
import logging
import os
from pathlib import Path

import orjson
import pytest

from providers.hookspool import one_look, spool_events, spool_signature
from providers.safefile import MAX_SPOOL_BYTES
from providers.testing import returns_within


def _payload(spool: Path, name: str, event: str) -> None:
    (spool / name).write_bytes(orjson.dumps({"hook_event_name": event}))


def test_a_fifo_in_the_spool_is_skipped_not_waited_on(tmp_path: Path) -> None:
    _payload(tmp_path, "00000000000000000001-1.json", "SessionStart")
    os.mkfifo(tmp_path / "00000000000000000002-2.json")
    _payload(tmp_path, "00000000000000000003-3.json", "Stop")
    events = returns_within(lambda: spool_events(str(tmp_path)))
    assert [e["hook_event_name"] for e in events] == ["SessionStart", "Stop"]


def test_a_symlink_to_dev_zero_in_the_spool_is_skipped(tmp_path: Path) -> None:
    os.symlink("/dev/zero", tmp_path / "00000000000000000001-1.json")
    _payload(tmp_path, "00000000000000000002-2.json", "Stop")
    events = returns_within(lambda: spool_events(str(tmp_path)))
    assert [e["hook_event_name"] for e in events] == ["Stop"]


def test_a_symlink_to_a_real_payload_is_not_followed(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere.txt"
    elsewhere.write_bytes(orjson.dumps({"hook_event_name": "SessionStart", "transcript_path": "/etc/x"}))
    spool = tmp_path / "spool"
    spool.mkdir()
    os.symlink(elsewhere, spool / "00000000000000000001-1.json")
    assert spool_events(str(spool)) == []


def test_a_payload_over_the_hook_writers_cap_is_skipped_and_logged_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    big = tmp_path / "00000000000000000001-1.json"
    big.write_bytes(b'{"hook_event_name": "Stop", "pad": "' + b"x" * MAX_SPOOL_BYTES + b'"}')
    _payload(tmp_path, "00000000000000000002-2.json", "SessionStart")
    with caplog.at_level(logging.WARNING, logger="providers.hookspool"):
        assert [e["hook_event_name"] for e in spool_events(str(tmp_path))] == ["SessionStart"]
        spool_events(str(tmp_path))
    skipped = [r.getMessage() for r in caplog.records if "Skipped" in r.getMessage()]
    assert len(skipped) == 1 and str(big) in skipped[0] and "limit" in skipped[0]


def test_a_payload_at_the_cap_is_read(tmp_path: Path) -> None:
    head = b'{"hook_event_name": "Stop", "pad": "'
    (tmp_path / "00000000000000000001-1.json").write_bytes(
        head + b"x" * (MAX_SPOOL_BYTES - len(head) - 2) + b'"}'
    )
    assert [e["hook_event_name"] for e in spool_events(str(tmp_path))] == ["Stop"]


@pytest.fixture
def listings(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every directory listed from here on."""
    listed: list[str] = []
    real = os.listdir

    def listdir(path: str = ".") -> list[str]:
        listed.append(os.fspath(path))
        return real(path)

    monkeypatch.setattr(os, "listdir", listdir)
    return listed


def test_one_look_lists_and_reads_the_spool_once_however_often_it_is_asked(
    tmp_path: Path, listings: list[str]
) -> None:
    _payload(tmp_path, "00000000000000000001-1.json", "SessionStart")
    with one_look():
        signature = spool_signature(str(tmp_path))
        first = spool_events(str(tmp_path))
        first[0]["hook_event_name"] = "changed by a caller"  # what the next caller gets is the payload
        assert spool_signature(str(tmp_path)) == signature
        assert [e["hook_event_name"] for e in spool_events(str(tmp_path))] == ["SessionStart"]
    assert listings == [str(tmp_path)]


def test_outside_a_look_a_new_payload_is_seen_at_once(tmp_path: Path) -> None:
    _payload(tmp_path, "00000000000000000001-1.json", "SessionStart")
    with one_look():
        before = spool_signature(str(tmp_path))
        assert len(spool_events(str(tmp_path))) == 1
        _payload(tmp_path, "00000000000000000002-2.json", "Stop")
        assert len(spool_events(str(tmp_path))) == 1  # the look sees the spool as it first was
    assert spool_signature(str(tmp_path)) != before
    assert [e["hook_event_name"] for e in spool_events(str(tmp_path))] == ["SessionStart", "Stop"]


def test_a_look_holds_in_its_threads_and_not_in_another_task(tmp_path: Path, listings: list[str]) -> None:
    _payload(tmp_path, "00000000000000000001-1.json", "SessionStart")
    spool = str(tmp_path)

    async def main() -> None:
        go = asyncio.Event()

        async def other_wake() -> None:  # another run's wake, running while this one looks
            await go.wait()
            spool_signature(spool)
            spool_signature(spool)

        other = asyncio.create_task(other_wake())
        with one_look():
            spool_signature(spool)
            await asyncio.to_thread(spool_signature, spool)  # the wake's step, in a thread
            await asyncio.to_thread(spool_events, spool)
            go.set()
            await other

    asyncio.run(main())
    assert len(listings) == 1 + 2  # this wake's one look; the other task's two, unshared


def test_a_context_copied_during_a_look_does_not_keep_it_after_the_look(tmp_path: Path) -> None:
    import contextvars

    _payload(tmp_path, "00000000000000000001-1.json", "SessionStart")
    with one_look():
        spool_events(str(tmp_path))
        copied = contextvars.copy_context()  # as a task started during the look would hold
    _payload(tmp_path, "00000000000000000002-2.json", "Stop")
    assert len(copied.run(spool_events, str(tmp_path))) == 2
