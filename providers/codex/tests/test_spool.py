"""The hook spool folded into Codex's live signals, and the run's conversation identity."""

from __future__ import annotations

import json
import os
from pathlib import Path

from providers.codex.dialogs import OPTIONS
from providers.codex.spool import current_identity, fold, write_clear_marker
from providers.hookspool import spool_events, spool_signature
from providers.schema import DialogKind

PRE = {"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": "touch x"}}
ASK = {
    "hook_event_name": "PermissionRequest",
    "tool_name": "Bash",
    "tool_input": {"command": "touch x", "description": "outside the sandbox"},
}


def events(*items: dict) -> list[dict]:
    return [{**e, "_spool_name": f"{1000 + i:020d}-1.json"} for i, e in enumerate(items)]


def test_a_permission_request_pairs_with_its_pre_tool_use():
    view = fold(events(PRE | {"tool_use_id": "call_1"}, ASK))
    assert view.dialog is not None
    assert view.dialog.tool_use_id == "call_1" and view.dialog.kind == DialogKind.APPROVAL
    assert view.dialog.body == "touch x" and view.dialog.prompt.endswith(": outside the sandbox")
    assert view.dialog.options == OPTIONS
    assert not view.blocked and view.unsettled_tool_ns == 0


def test_post_tool_use_or_the_rollouts_result_closes_it():
    pre, post = PRE | {"tool_use_id": "call_1"}, {"hook_event_name": "PostToolUse", "tool_use_id": "call_1"}
    assert fold(events(pre, ASK, post)).dialog is None
    assert fold(events(pre, ASK), resolved=frozenset({"call_1"})).dialog is None  # a decline: no hook


def test_a_new_prompt_or_the_turns_end_closes_it():
    pre = PRE | {"tool_use_id": "call_1"}
    for closing in ("UserPromptSubmit", "Stop", "SessionStart"):
        assert fold(events(pre, ASK, {"hook_event_name": closing})).dialog is None


def test_an_unpaired_permission_request_is_blocked_not_answerable():
    view = fold(events(ASK))
    assert view.dialog is None and view.blocked


def test_a_tool_that_began_without_asking_yet_is_unsettled():
    view = fold(events(PRE | {"tool_use_id": "call_1"}))
    assert view.unsettled_tool_ns == 1000 and view.dialog is None


def test_the_identity_is_the_newest_session_start_or_clear_marker(tmp_path: Path):
    spool = tmp_path / "spool"
    spool.mkdir()
    start = {"hook_event_name": "SessionStart", "transcript_path": "/s/rollout-a.jsonl", "source": "startup"}
    (spool / f"{100:020d}-1.json").write_text(json.dumps(start))
    assert (
        current_identity(str(spool), spool_events(str(spool)), valid=lambda p: True).path
        == "/s/rollout-a.jsonl"
    )
    marker = write_clear_marker(str(spool), "/clear", 200, "2026-12-04T01:00:00.000Z")
    assert current_identity(str(spool), spool_events(str(spool)), valid=lambda p: True).path == marker
    assert os.path.basename(marker) not in [e["_spool_name"] for e in spool_events(str(spool))]
    after = start | {"transcript_path": "/s/rollout-b.jsonl", "source": "clear"}
    (spool / f"{300:020d}-1.json").write_text(json.dumps(after))
    assert (
        current_identity(str(spool), spool_events(str(spool)), valid=lambda p: True).path
        == "/s/rollout-b.jsonl"
    )
    # A path the provider does not accept (outside its sessions dir) is never an identity.
    assert current_identity(str(spool), spool_events(str(spool)), valid=lambda p: False).path == marker


def test_the_signature_changes_when_a_payload_is_renamed_in_within_one_clock_tick(tmp_path):
    # The hook writes `.<name>.tmp` then renames it; both can fall in one tick of the
    # filesystem's coarse clock, leaving the directory's mtime and entry count as they were.
    spool = tmp_path / "spool"
    spool.mkdir()
    tmp = spool / ".00000000000000000001-1.json.tmp"
    tmp.write_text("{}")
    before = spool_signature(str(spool))
    mtime = os.stat(spool).st_mtime_ns
    tmp.rename(spool / "00000000000000000001-1.json")
    os.utime(spool, ns=(mtime, mtime))
    assert spool_signature(str(spool)) != before
