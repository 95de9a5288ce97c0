"""Live: the real claude TUI, offline, answers a prompt from the scripted model."""

from __future__ import annotations

from compat.claude_code.live import has_assistant_text, turn_ended
from compat.claude_code.scripted_model import text


def test_prompt_gets_scripted_text_in_transcript(scripted_model, live_tui):
    scripted_model.script.add(text("Hello from the scripted model."))
    tui = live_tui("--permission-mode", "manual")
    tui.prompt("hello world")
    tui.wait_for(has_assistant_text("Hello from the scripted model."), timeout=60)
    lines = tui.wait_for(lambda ls: ls if turn_ended(ls) else None, timeout=30)
    users = [e for e in lines if e.get("type") == "user"]
    assert users[0]["message"]["content"] == "hello world"
    assert users[0]["sessionId"] == tui.session_id
    assert [r for r in scripted_model.turn_requests()], "the CLI never asked the scripted model"
