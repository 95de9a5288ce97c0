"""providers.hookspool: the spool the agent can write into never hangs or floods lab."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import orjson
import pytest

from providers.hookspool import spool_events
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
