"""Live: reply delivery by bracketed paste, the turn boundaries in the rollout, Esc while
streaming, the Ctrl-C hazard, and the question tool in default and Plan mode (COMPAT.md §2, §3,
§6, §9, §10)."""

from __future__ import annotations

import json
import time

import pytest

from compat.codex.live import events, message_texts, payloads
from compat.codex.scripted_model import request_user_input, slow_text, text, when

pytestmark = pytest.mark.live


def test_multiline_paste_arrives_as_one_user_message(codex_tui, codex_model):
    codex_model.script.add(when("PASTE-1", text("pasted ok")))
    tui = codex_tui()
    prompt = "first line PASTE-1\nsecond line\n\nfourth line with `code` and $HOME"
    tui.prompt(prompt)
    [rollout] = tui.wait_rollouts(1)
    lines = tui.wait_for(rollout, lambda ls: events(ls, "task_complete") and ls)
    humans = [t for t in message_texts(lines, "user") if not t.startswith("<")]
    assert humans == [prompt]
    [item] = [p["item"] for p in events(lines, "item_completed") if p["item"]["type"] == "UserMessage"]
    assert item["content"] == [{"type": "text", "text": prompt, "text_elements": []}]
    assert codex_model.turn_requests()[0]["body"]["input"][-1]["content"][0]["text"] == prompt


def test_turn_boundaries_and_synthetic_messages(codex_tui, codex_model):
    codex_model.script.add(when("TURN-1", text("turn one reply")))
    tui = codex_tui()
    tui.prompt("go TURN-1")
    [rollout] = tui.wait_rollouts(1)
    lines = tui.wait_for(rollout, lambda ls: events(ls, "task_complete") and ls)
    kinds = [(e["type"], e["payload"].get("type")) for e in lines]
    assert kinds[0] == ("session_meta", None)
    started = kinds.index(("event_msg", "task_started"))
    assert kinds.index(("turn_context", None)) > started
    assert kinds[-1] == ("event_msg", "task_complete")
    [begin] = events(lines, "task_started")
    [end] = events(lines, "task_complete")
    assert begin["turn_id"] == end["turn_id"] and end["last_agent_message"] == "turn one reply"
    users = message_texts(lines, "user")
    assert users[0].startswith("<environment_context>") and users[-1] == "go TURN-1"
    assert all(
        p["role"] in ("user", "assistant", "developer") for p in payloads(lines, "response_item", "message")
    )
    assert [e["ordinal"] for e in lines] == list(range(len(lines)))
    # The legacy event types are gone in 0.171.0.
    assert not events(lines, "user_message") and not events(lines, "agent_message")


def test_esc_while_streaming_aborts_the_turn(codex_tui, codex_home, codex_model):
    codex_model.script.add(when("INT-1", slow_text(60, 0.5)), when("INT-2", text("after the interrupt")))
    tui = codex_tui()
    tui.prompt("slowly INT-1")
    [rollout] = tui.wait_rollouts(1)
    codex_model.wait_streaming(min_deltas=3, timeout=60)
    tui.wait_pane(r"word2")
    tui.send_keys("Escape")
    lines = tui.wait_for(rollout, lambda ls: events(ls, "turn_aborted") and ls)
    assert events(lines, "turn_aborted")[-1]["reason"] == "interrupted"
    assert message_texts(lines, "user")[-1].startswith("<turn_aborted>")
    assert message_texts(lines, "assistant") == [], "the streamed part is not kept"
    codex_model.wait_for_request(lambda r: r.get("event") == "client_disconnected", timeout=30)
    tui.wait_pane(r"Conversation interrupted")
    assert codex_home.spool.entries("Stop") == []
    # Idle again: the next prompt runs a normal turn in the same rollout.
    tui.prompt("then INT-2")
    lines = tui.wait_for(rollout, lambda ls: events(ls, "task_complete") and ls)
    assert message_texts(lines, "assistant") == ["after the interrupt"]


def test_ctrl_c_while_streaming_aborts_the_turn_without_a_dialog(codex_tui, codex_model):
    """With --no-daemon there is no "Task is still running" dialog (its "Run in background" needs
    the daemon): Ctrl-C aborts like Esc. It is still never sent: a turn that ends just before
    the key arrives turns it into the idle Ctrl-C, which quits codex (next test)."""
    codex_model.script.add(when("CTRLC-1", slow_text(60, 0.5)))
    tui = codex_tui()
    tui.prompt("slowly CTRLC-1")
    [rollout] = tui.wait_rollouts(1)
    codex_model.wait_streaming(min_deltas=2, timeout=60)
    tui.send_keys("C-c")
    lines = tui.wait_for(rollout, lambda ls: events(ls, "turn_aborted") and ls)
    assert events(lines, "turn_aborted")[-1]["reason"] == "interrupted"
    tui.wait_pane(r"Conversation interrupted")
    assert "Task is still running" not in tui.pane()
    assert not tui.pane_dead()


def test_ctrl_c_at_idle_exits_codex(codex_tui, codex_home):
    tui = codex_tui()
    tui.send_keys("C-c")
    deadline = time.monotonic() + 20
    while not tui.pane_dead() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert tui.pane_dead(), tui.pane()


def test_request_user_input_is_refused_in_default_mode(codex_tui, codex_model):
    codex_model.script.add(when("ASK-1", request_user_input(), text("asked")))
    tui = codex_tui()
    tui.prompt("question ASK-1")
    [rollout] = tui.wait_rollouts(1)
    lines = tui.wait_for(rollout, lambda ls: events(ls, "task_complete") and ls)
    [out] = payloads(lines, "response_item", "function_call_output")
    assert out["output"] == "request_user_input is unavailable in Default mode"
    assert "Which color do you prefer?" not in tui.pane()


STOP_PEEK = """
import json, sys
payload = json.load(sys.stdin)
seen = []
with open(payload["transcript_path"]) as f:
    for line in f:
        try:
            e = json.loads(line)
        except ValueError:
            continue
        if e.get("payload", {}).get("type") == "task_complete":
            seen.append(e["payload"]["turn_id"])
entry = {"turn_id": payload["turn_id"], "complete_in_rollout": payload["turn_id"] in seen}
with open(sys.argv[1], "a") as out:
    out.write(json.dumps(entry) + "\\n")
"""


def test_the_stop_hook_runs_before_task_complete_is_written(tmp_path, codex_model):
    """A reader woken by Stop must still wait for the rollout's task_complete line."""
    from compat.codex.conftest import make_git_worktree
    from compat.codex.home import prepare_home
    from compat.codex.live import CodexTUI

    script, record = tmp_path / "peek.py", tmp_path / "peek.jsonl"
    script.write_text(STOP_PEEK)
    hooks = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": f"python3 {script} {record}"}]}]}}
    wt = make_git_worktree(tmp_path / "wt")
    env = prepare_home(tmp_path / "home", wt, codex_model.url, hooks=hooks)
    codex_model.script.add(when("PEEK-1", text("peek reply")))
    tui = CodexTUI(env, wt).start()
    try:
        tui.wait_ready()
        tui.prompt("hello PEEK-1")
        [rollout] = tui.wait_rollouts(1)
        tui.wait_for(rollout, lambda ls: events(ls, "task_complete"))
        deadline = time.monotonic() + 30
        while not record.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        [seen] = [json.loads(line) for line in record.read_text().splitlines()]
        assert seen["complete_in_rollout"] is False
    finally:
        tui.kill()


def test_a_prompt_submitted_while_streaming_steers_the_running_turn(codex_tui, codex_model):
    """Enter while working does not queue: Codex drops the stream in flight (its text is never
    written), adds the prompt to the same turn and asks the model again."""
    codex_model.script.add(when("STEER-1", slow_text(40, 0.5)), when("STEER-2", text("steered reply")))
    tui = codex_tui()
    tui.prompt("first STEER-1")
    [rollout] = tui.wait_rollouts(1)
    codex_model.wait_streaming(min_deltas=3, timeout=60)
    tui.prompt("then STEER-2")
    lines = tui.wait_for(rollout, lambda ls: events(ls, "task_complete") and ls)
    assert len(events(lines, "task_started")) == 1 and len(events(lines, "task_complete")) == 1
    assert not events(lines, "turn_aborted")
    assert [t for t in message_texts(lines, "user") if not t.startswith("<")] == [
        "first STEER-1",
        "then STEER-2",
    ]
    assert message_texts(lines, "assistant") == ["steered reply"]
    second = codex_model.turn_requests()[1]["body"]["input"]
    assert [i["content"][0]["text"] for i in second[-2:]] == ["first STEER-1", "then STEER-2"]


def plan_mode_question(codex_tui, codex_model, token):
    codex_model.script.add(when(token, request_user_input(), text(f"thanks {token}")))
    tui = codex_tui()
    tui.send_literal("/plan")
    tui.wait_pane(r"/plan\s+switch to Plan mode", settle=0.3)
    tui.send_keys("Enter")
    tui.wait_pane(r"Plan mode \(shift\+tab to cycle\)", settle=0.3)
    tui.prompt(f"ask me {token}")
    tui.wait_pane(r"Question 1/1[\s\S]*Which color do you prefer\?", settle=0.5)
    [rollout] = tui.wait_rollouts(1)
    return tui, rollout


def test_in_plan_mode_request_user_input_draws_a_picker_and_the_answer_is_its_output(
    codex_tui, codex_home, codex_model
):
    tui, rollout = plan_mode_question(codex_tui, codex_model, "PLANQ-1")
    screen = tui.pane()
    for row in ("› 1. Red", "2. Green", "3. Blue", "4. None of the above"):
        assert row in screen
    assert "enter to submit answer | esc to interrupt" in screen
    # Pending: the call has no output; PreToolUse (tool_input = the questions) is the live signal.
    lines = tui.read_lines(rollout)
    [call] = payloads(lines, "response_item", "function_call")
    assert call["name"] == "request_user_input" and not payloads(
        lines, "response_item", "function_call_output"
    )
    [pre] = codex_home.spool.wait("PreToolUse")
    assert pre["payload"]["tool_name"] == "request_user_input"
    assert pre["payload"]["tool_input"]["questions"][0]["question"] == "Which color do you prefer?"
    assert pre["payload"]["tool_use_id"] == call["call_id"]
    assert codex_home.spool.entries("PermissionRequest") == []
    tui.send_keys("Down")
    tui.wait_pane(r"› 2\. Green", settle=0.3)
    tui.send_keys("Enter")
    lines = tui.wait_for(rollout, lambda ls: events(ls, "task_complete") and ls)
    [out] = payloads(lines, "response_item", "function_call_output")
    assert json.loads(out["output"]) == {"answers": {"color": {"answers": ["Green"]}}}
    assert codex_model.wait_function_output(call["call_id"])["output"] == out["output"]


def test_esc_on_the_plan_mode_question_aborts_the_turn(codex_tui, codex_model):
    tui, rollout = plan_mode_question(codex_tui, codex_model, "PLANQ-2")
    tui.send_keys("Escape")
    lines = tui.wait_for(rollout, lambda ls: events(ls, "turn_aborted") and ls)
    assert events(lines, "turn_aborted")[-1]["reason"] == "interrupted"
    assert not events(lines, "task_complete")


def test_tab_instead_of_enter_queues_the_prompt_for_after_the_turn(codex_tui, codex_model):
    codex_model.script.add(when("QUEUE-1", slow_text(12, 0.5)), when("QUEUE-2", text("queued reply")))
    tui = codex_tui()
    tui.prompt("first QUEUE-1")
    [rollout] = tui.wait_rollouts(1)
    codex_model.wait_streaming(min_deltas=2, timeout=60)
    tui.send_paste("then QUEUE-2")
    tui.wait_pane(r"tab to queue message", settle=0.2)
    tui.send_keys("Tab")
    tui.wait_pane(r"Queued follow-up inputs\s+↳ then QUEUE-2")
    assert "then QUEUE-2" not in message_texts(tui.read_lines(rollout), "user"), "not written while queued"
    lines = tui.wait_for(rollout, lambda ls: len(events(ls, "task_complete")) == 2 and ls)
    assert len(events(lines, "task_started")) == 2 and not events(lines, "turn_aborted")
    assert [t for t in message_texts(lines, "user") if not t.startswith("<")] == [
        "first QUEUE-1",
        "then QUEUE-2",
    ]
    assert message_texts(lines, "assistant") == [
        " ".join(f"word{i}" for i in range(12)) + " ",
        "queued reply",
    ]


def test_tab_at_idle_submits_like_enter(codex_tui, codex_model):
    """So paste + Tab is one recipe for both states: submit when idle, queue while working."""
    codex_model.script.add(when("IDLETAB-1", text("idle tab reply")))
    tui = codex_tui()
    tui.send_paste("hello IDLETAB-1")
    tui.wait_pane(r"› hello IDLETAB-1", settle=0.2)
    tui.send_keys("Tab")
    [rollout] = tui.wait_rollouts(1)
    lines = tui.wait_for(rollout, lambda ls: events(ls, "task_complete") and ls)
    assert message_texts(lines, "assistant") == ["idle tab reply"]
