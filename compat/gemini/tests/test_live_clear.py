"""Live: /clear and its alias /new start a new conversation, confirmed by the new session's
SessionStart hook; a new identity whose first line is the command (compat/gemini/COMPAT.md §5)."""

from __future__ import annotations

import pytest

from compat.gemini.scripted_model import text
from providers.hookspool import spool_events
from providers.schema import MessageKind

pytestmark = pytest.mark.live


@pytest.mark.parametrize("command", ["/clear", "/new"])
def test_a_clear_starts_a_new_session_file_named_by_its_hook(gemini_rig, command):
    gemini_rig.model.script.add(text("Before."), text("After."))
    run = gemini_rig.start()
    run.provider.reply(run.handle, "first conversation")
    run.wait(lambda r: r.answered("Before."), what="the first turn")
    first = run.path
    run.provider.reply(run.handle, command)
    run.wait(lambda r: r.path != first and r.texts(MessageKind.USER_TEXT) == [command], what="the marker")
    run.provider.reply(run.handle, "second conversation")
    run.wait(lambda r: r.answered("After."), what="the turn in the new session")
    starts = [e for e in spool_events(run.handle.spool_dir) if e.get("hook_event_name") == "SessionStart"]
    assert [e["source"] for e in starts] == ["startup", "clear"]
    assert run.path == starts[-1]["transcript_path"] != first
    assert run.texts(MessageKind.USER_TEXT) == ["second conversation"]
