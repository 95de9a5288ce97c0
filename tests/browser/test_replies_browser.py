"""What the page says about a reply, in a real browser against the real Claude Code TUI: a
reply that lands shows as sent; one that would act on the TUI is refused with its reason, the
draft kept, and nothing happens in the terminal."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from compat.claude_code.scripted_model import text, tool_use, when
from providers.tmux import Tmux
from tests.browser.conftest import LIVE_TIMEOUT_MS, LabServer, RunPage, start_run

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def replies_run(context: Any, lab_server: LabServer) -> RunPage:
    p = context.new_page()
    try:
        return start_run(p, lab_server.repo, "lab/browser-replies")
    finally:
        p.close()


def open_run(page: Any, run: RunPage) -> None:
    page.goto(run.url)
    page.wait_for_function("() => window.__ws && window.__ws.opens >= 1")
    expect(page.locator("#panel")).to_have_attribute("data-state", "idle", timeout=LIVE_TIMEOUT_MS)


def send(page: Any, message: str) -> None:
    box = page.locator("#composer textarea")
    box.fill(message)
    box.press("Enter")


def worktree_file(lab_server: LabServer, name: str) -> list[Path]:
    return list((lab_server.log.parent / "data" / "worktrees").glob(f"browser-replies-*/{name}"))


def test_combining_characters_land_and_show_as_sent(page: Any, lab_server: LabServer, replies_run) -> None:
    lab_server.model.script.add(when("caf\u00e9", text("Noted the accents.")))  # the model sees NFC
    open_run(page, replies_run)
    send(page, "cafe\u0301 na\u0308ive")
    expect(page.locator("#transcript .msg-user_text").last).to_have_text("caf\u00e9 n\u00e4ive")
    expect(page.locator("#transcript .msg-assistant_text").last).to_contain_text("Noted the accents.")
    expect(page.locator("#composer .error")).to_have_count(0)
    expect(page.locator("#composer textarea")).to_have_value("")


def test_a_leading_bang_is_refused_with_its_reason_and_runs_nothing(
    page: Any, lab_server: LabServer, replies_run
) -> None:
    open_run(page, replies_run)
    send(page, "!touch bang.txt")
    expect(page.locator("#composer .error")).to_contain_text("runs as a shell command")
    expect(page.locator("#composer textarea")).to_have_value("!touch bang.txt")
    assert worktree_file(lab_server, "bang.txt") == []
    assert not lab_server.transcript_contains("<bash-input>")


def test_a_reply_while_permission_is_asked_is_refused_and_answers_nothing(
    page: Any, lab_server: LabServer, replies_run
) -> None:
    bash = tool_use("Bash", {"command": "touch approved.txt", "description": "touch"})
    lab_server.model.script.add(when("BASHME", bash, text("ran it")))
    open_run(page, replies_run)
    send(page, "BASHME please")
    expect(page.locator("#transcript .msg-tool_use").last).to_contain_text("Bash", timeout=LIVE_TIMEOUT_MS)
    # Within the first seconds the page may still say working (the CLI's reminder comes ~6 s
    # later); the refusal does not depend on that.
    send(page, "No! Do not run that command.")
    expect(page.locator("#composer .error")).to_contain_text("is asking permission", timeout=LIVE_TIMEOUT_MS)
    expect(page.locator("#composer textarea")).to_have_value("No! Do not run that command.")
    assert worktree_file(lab_server, "approved.txt") == []
    assert not lab_server.transcript_contains("No! Do not run that command.")
    # New conversation goes the same way: refused beside its button, the draft left alone.
    page.once("dialog", lambda dialog: dialog.accept())
    page.locator("form.new-conversation").get_by_role("button", name="New conversation").click()
    expect(page.locator("#new-conversation-note")).to_contain_text("is asking permission")
    expect(page.locator("#composer textarea")).to_have_value("No! Do not run that command.")
    # The operator declines it in the terminal; the run comes back and takes replies again.
    Tmux(lab_server.tmux_socket).send_keys(replies_run.tmux_session, "Escape")
    expect(page.locator("#panel")).to_have_attribute("data-state", "idle", timeout=LIVE_TIMEOUT_MS)
    assert worktree_file(lab_server, "approved.txt") == []


def test_a_typed_help_is_refused_and_the_run_keeps_working(
    page: Any, lab_server: LabServer, replies_run
) -> None:
    lab_server.model.script.add(when("after help", text("Still responsive.")))
    open_run(page, replies_run)
    send(page, "/help")
    expect(page.locator("#composer .error")).to_contain_text("/help is not available from the chat")
    send(page, "after help, are you there?")
    expect(page.locator("#transcript .msg-assistant_text").last).to_contain_text(
        "Still responsive.", timeout=LIVE_TIMEOUT_MS
    )
    expect(page.locator("#composer .error")).to_have_count(0)
