"""An answer's own verification (compat §7): the tool_result it waits for must record the answer
it sent. The live proofs of the interrupt/answer ordering are in
compat/claude_code/tests/test_live_approvals.py."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from providers.claude_code.provider import ClaudeCodeProvider
from providers.claude_code.tests import entries as E
from providers.claude_code.tests.test_transcript import REJECTION, approval_intent
from providers.errors import ReplyNotDelivered
from providers.schema import RunHandle
from providers.tui import AnswerMark

SAID = " To tell you how to proceed, the user said:\n"


def verify(tmp_path: Path, content: str, *, key: str, feedback: str = "") -> bool:
    """answer_dialog's wait, on a transcript where the tool's result landed after the keys."""
    path = tmp_path / "t.jsonl"
    result = E.tool_result("toolu_b", content, is_error=True)
    path.write_bytes(orjson.dumps(result) + b"\n")
    run = RunHandle(run_id=1, worktree=str(tmp_path), tmux_socket="s", tmux_session="x", spool_dir="")
    intent = approval_intent(key, feedback)
    return ClaudeCodeProvider()._wait_answered(
        run, "toolu_b", AnswerMark(str(path), 0, frozenset()), 0.0, intent
    )


def test_a_denial_whose_feedback_reached_the_tool_is_the_answers_success(tmp_path):
    assert verify(tmp_path, REJECTION + SAID + "use printf", key="deny-feedback@3", feedback="use printf")
    assert verify(tmp_path, REJECTION + " STOP what you are doing", key="deny")


def test_a_rejection_without_the_feedback_sent_is_not_the_answers_success(tmp_path):
    # Another Esc (an interrupt) denied the tool first: the feedback went nowhere it was meant to.
    with pytest.raises(ReplyNotDelivered, match="recorded a rejection without it"):
        verify(tmp_path, REJECTION + " STOP what you are doing", key="deny-feedback@3", feedback="use printf")
    with pytest.raises(ReplyNotDelivered, match="lab allowed the tool"):
        verify(tmp_path, REJECTION + " STOP what you are doing", key="allow@0")
