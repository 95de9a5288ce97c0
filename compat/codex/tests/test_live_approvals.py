"""Live: an escalated exec_command fires PermissionRequest and draws Codex's approval prompt with
its three options; approving (y) runs it, Esc aborts the whole turn (COMPAT.md §8, §9)."""

from __future__ import annotations

import json

import pytest

from compat.codex.live import events, payloads
from compat.codex.scripted_model import exec_command, text, when

pytestmark = pytest.mark.live

PROMPT_RE = r"Would you like to run the following command\?[\s\S]*Press enter to confirm or esc to cancel"


def outputs(lines, call_id):
    return [p for p in payloads(lines, "response_item", "function_call_output") if p["call_id"] == call_id]


def calls(lines):
    return payloads(lines, "response_item", "function_call")


def start_escalated(codex_tui, codex_home, codex_model, token, marker):
    # Relative to the worktree (tmp_path/wt) so the prompt's lines do not wrap.
    cmd = f"touch ../{marker.name}"
    codex_model.script.add(
        when(
            token,
            exec_command(cmd, escalated=True, justification=f"Needs the outside {token}"),
            text(f"ran {token}"),
        )
    )
    tui = codex_tui()
    tui.prompt(f"please {token}")
    [rollout] = tui.wait_rollouts(1)
    tui.wait_pane(PROMPT_RE, timeout=60, settle=0.5)
    return tui, rollout, cmd


def test_escalated_call_fires_permission_request_and_shows_three_options(
    codex_tui, codex_home, codex_model, tmp_path
):
    marker = tmp_path / "m-APPR-1"
    tui, rollout, cmd = start_escalated(codex_tui, codex_home, codex_model, "APPR-1", marker)
    [req] = codex_home.spool.wait("PermissionRequest")
    p = req["payload"]
    assert p["tool_name"] == "Bash"
    assert p["tool_input"] == {"command": cmd, "description": "Needs the outside APPR-1"}
    assert "tool_use_id" not in p, "PermissionRequest does not name the call (PreToolUse does)"
    [pre] = codex_home.spool.entries("PreToolUse")
    assert pre["payload"]["tool_input"] == {"command": cmd}
    assert pre["payload"]["tool_use_id"].startswith("call_")
    screen = tui.pane()
    assert "1. Yes, proceed (y)" in screen
    assert f"2. Yes, and don't ask again for commands that start with `{cmd}` (p)" in screen
    assert "3. No, and tell Codex what to do differently (esc)" in screen
    assert "Reason: Needs the outside APPR-1" in screen and f"$ {cmd}" in screen
    # Pending: the rollout's newest call has no output, and nothing else marks the wait.
    lines = tui.read_lines(rollout)
    [call] = calls(lines)
    assert json.loads(call["arguments"])["sandbox_permissions"] == "require_escalated"
    assert outputs(lines, call["call_id"]) == []
    assert not events(lines, "task_complete")
    assert not marker.exists()


def test_approve_with_y_runs_the_command_and_the_turn_completes(codex_tui, codex_home, codex_model, tmp_path):
    marker = tmp_path / "m-APPR-2"
    tui, rollout, _cmd = start_escalated(codex_tui, codex_home, codex_model, "APPR-2", marker)
    tui.send_keys("y")
    lines = tui.wait_for(rollout, lambda ls: events(ls, "task_complete") and ls)
    [call] = calls(lines)
    [out] = outputs(lines, call["call_id"])
    assert "Process exited with code 0" in out["output"]
    assert marker.exists()
    sent = codex_model.wait_function_output(call["call_id"])
    assert "Process exited with code 0" in sent["output"]
    assert events(lines, "task_complete")[-1]["last_agent_message"] == "ran APPR-2"
    tui.wait_pane(r"You approved codex to run .* this time")
    assert len(codex_home.spool.wait("PostToolUse")) == 1


def test_esc_on_the_prompt_aborts_the_whole_turn(codex_tui, codex_home, codex_model, tmp_path):
    marker = tmp_path / "m-APPR-3"
    tui, rollout, _cmd = start_escalated(codex_tui, codex_home, codex_model, "APPR-3", marker)
    tui.send_keys("Escape")
    lines = tui.wait_for(rollout, lambda ls: events(ls, "turn_aborted") and ls)
    [call] = calls(lines)
    [out] = outputs(lines, call["call_id"])
    assert out["output"].endswith("aborted by user")
    assert events(lines, "turn_aborted")[-1]["reason"] == "interrupted"
    user = [p for p in payloads(lines, "response_item", "message") if p["role"] == "user"]
    assert user[-1]["content"][0]["text"].startswith("<turn_aborted>")
    assert not events(lines, "task_complete")
    assert not marker.exists()
    tui.wait_pane(r"You canceled the request to run")
    tui.wait_pane(r"Conversation interrupted")
    # The model never hears about it: no request carries the aborted output.
    assert [
        r for r in codex_model.turn_requests() if call["call_id"] in json.dumps(r["body"]["input"][-1:])
    ] == []
    assert codex_home.spool.entries("Stop") == [], "an aborted turn runs no Stop hook"


def test_plain_exec_command_runs_without_asking(codex_tui, codex_home, codex_model):
    codex_model.script.add(when("APPR-4", exec_command("echo plain-APPR-4"), text("plain done APPR-4")))
    tui = codex_tui()
    tui.prompt("please APPR-4")
    [rollout] = tui.wait_rollouts(1)
    lines = tui.wait_for(rollout, lambda ls: events(ls, "task_complete") and ls)
    [call] = calls(lines)
    assert "plain-APPR-4" in outputs(lines, call["call_id"])[0]["output"]
    assert codex_home.spool.entries("PermissionRequest") == []


def decide(behavior: str, message: str = "") -> dict:
    decision = {"behavior": behavior, **({"message": message} if message else {})}
    return {"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": decision}}


@pytest.mark.parametrize("behavior", ["allow", "deny"])
def test_a_permission_request_hook_can_answer_and_no_prompt_is_drawn(tmp_path, codex_model, behavior):
    """Claude Code's hook answer works: the hook prints a decision on stdout and Codex obeys it
    without drawing the prompt. A deny does not abort the turn: the model hears the refusal."""
    from compat.codex.conftest import make_git_worktree
    from compat.codex.home import prepare_home
    from compat.codex.live import CodexTUI

    script = tmp_path / "decide.py"
    script.write_text(
        f"import sys\nsys.stdin.read()\nprint({json.dumps(json.dumps(decide(behavior, 'not today')))})\n"
    )
    hooks = {
        "hooks": {"PermissionRequest": [{"hooks": [{"type": "command", "command": f"python3 {script}"}]}]}
    }
    wt = make_git_worktree(tmp_path / "wt")
    env = prepare_home(tmp_path / "home", wt, codex_model.url, hooks=hooks)
    token = f"HOOKANS-{behavior}"
    codex_model.script.add(
        when(
            token,
            exec_command("touch ../m-hook", escalated=True, justification="why"),
            text(f"after {token}"),
        )
    )
    tui = CodexTUI(env, wt).start()
    try:
        tui.wait_ready()
        tui.prompt(f"go {token}")
        [rollout] = tui.wait_rollouts(1)
        lines = tui.wait_for(rollout, lambda ls: events(ls, "task_complete") and ls)
        [call] = calls(lines)
        [out] = outputs(lines, call["call_id"])
        assert "Would you like to run the following command?" not in tui.pane()
        if behavior == "allow":
            assert "Process exited with code 0" in out["output"]
            assert (tmp_path / "m-hook").exists()
        else:
            assert (
                out["output"] == 'exec_command failed: CreateProcess { message: "Rejected(\\"not today\\")" }'
            )
            assert not (tmp_path / "m-hook").exists()
            tui.wait_pane(r"Blocked by hook[\s\S]*not today")
        assert not events(lines, "turn_aborted")
        assert codex_model.wait_function_output(call["call_id"])["output"] == out["output"]
    finally:
        tui.kill()


def test_p_allows_the_command_prefix_for_good_in_a_rules_file(codex_tui, codex_home, codex_model, tmp_path):
    marker = tmp_path / "m-APPR-5"
    tui, rollout, _cmd = start_escalated(codex_tui, codex_home, codex_model, "APPR-5", marker)
    tui.send_keys("p")
    tui.wait_for(rollout, lambda ls: events(ls, "task_complete"))
    assert marker.exists()
    rules = codex_home.codex_home / "rules" / "default.rules"
    assert rules.read_text().strip() == 'prefix_rule(pattern=["touch", "../m-APPR-5"], decision="allow")'
    # The same command again runs without a prompt (the hook still sees the request once only).
    marker.unlink()
    codex_model.script.add(
        when("APPR-6", exec_command("touch ../m-APPR-5", escalated=True, justification="again"))
    )
    tui.wait_pane(r"\? for shortcuts", settle=0.3)
    tui.prompt("again APPR-6")
    tui.wait_for(rollout, lambda ls: len(events(ls, "task_complete")) == 2)
    assert marker.exists()
    assert len(codex_home.spool.entries("PermissionRequest")) == 1
