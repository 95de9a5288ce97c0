"""The Terminal view in a real browser on the real Claude Code TUI: the pane live (a chat reply
shows up in it), read-only until the keyboard is taken, keys typed into the TUI once it is (its
own /help screen opened and closed from the view), the chat refusing to type meanwhile, and the
chat's state true afterwards."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from compat.claude_code.scripted_model import text, when
from providers.tmux import Tmux
from tests.browser.conftest import LIVE_TIMEOUT_MS, LabServer, RunPage, start_run

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def terminal_run(context: Any, lab_server: LabServer) -> RunPage:
    p = context.new_page()
    try:
        return start_run(p, lab_server.repo, "lab/browser-terminal")
    finally:
        p.close()


def screen(page: Any) -> Any:
    return page.locator("#terminal .xterm-rows")


def open_terminal(page: Any, run: RunPage) -> list[str]:
    """The Terminal view, live; returns the list the page's console errors collect in."""
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(run.url + "terminal/")
    expect(page.locator("#terminal")).to_have_attribute("data-live", "1", timeout=LIVE_TIMEOUT_MS)
    return errors


def test_the_terminal_shows_the_pane_live_and_a_takeover_types_into_the_tui(
    context: Any, page: Any, lab_server: LabServer, terminal_run: RunPage
) -> None:
    errors = open_terminal(page, terminal_run)
    expect(page.locator("#terminal")).to_have_attribute("data-cols", "200")  # lab's size, not the window's

    # A reply sent from the chat appears in the terminal view as the TUI draws it.
    lab_server.model.script.add(when("TERMVIEW-5d2", text("Pong from the model.")))
    chat = context.new_page()
    chat.goto(terminal_run.url)
    expect(chat.locator("#panel")).to_have_attribute("data-state", "idle", timeout=LIVE_TIMEOUT_MS)
    chat.locator("#composer textarea").fill("TERMVIEW-5d2 from the chat")
    chat.locator("#composer textarea").press("Enter")
    expect(screen(page)).to_contain_text("Pong from the model.", timeout=LIVE_TIMEOUT_MS)
    expect(chat.locator("#panel")).to_have_attribute("data-state", "idle", timeout=LIVE_TIMEOUT_MS)

    # Read-only: keys typed into the view go nowhere.
    tmux = Tmux(lab_server.tmux_socket)
    session = terminal_run.tmux_session
    page.locator("#terminal").click()
    page.keyboard.type("zq-read-only")
    expect(page.locator("#terminal-status")).to_contain_text("read-only")
    assert "zq-read-only" not in tmux.capture(session)

    # Taking the keyboard: the banner says so, the chat says so and refuses to type.
    page.get_by_role("button", name="Take the keyboard").click()
    expect(page.locator("#keyboard .banner")).to_contain_text("You are typing into Claude Code's terminal")
    expect(chat.locator("#keyboard-note")).to_contain_text("is typing into the terminal")
    chat.locator("#composer textarea").fill("a racing reply")
    chat.locator("#composer textarea").press("Enter")
    expect(chat.locator("#composer .error")).to_contain_text("holds the keyboard")
    expect(chat.locator("#composer textarea")).to_have_value("a racing reply")

    # The TUI's own /help screen, opened and closed from the view.
    page.locator("#terminal").click()
    page.keyboard.type("/help")
    expect(screen(page)).to_contain_text("/help", timeout=LIVE_TIMEOUT_MS)
    page.keyboard.press("Enter")
    expect(screen(page)).to_contain_text("Esc to", timeout=LIVE_TIMEOUT_MS)
    page.keyboard.press("Escape")
    expect(screen(page)).not_to_contain_text("Esc to close", timeout=LIVE_TIMEOUT_MS)

    # Given back: the chat types again, and its state is still true.
    page.get_by_role("button", name="Give the keyboard back").click()
    expect(page.get_by_role("button", name="Take the keyboard")).to_be_visible()
    expect(chat.locator("#keyboard-note")).to_have_text("")
    lab_server.model.script.add(when("TERMBACK-9a4", text("Back in the chat.")))
    chat.locator("#composer textarea").fill("TERMBACK-9a4 works")
    chat.locator("#composer textarea").press("Enter")
    expect(chat.locator("#transcript .msg-assistant_text").last).to_contain_text("Back in the chat.")
    expect(chat.locator("#panel")).to_have_attribute("data-state", "idle", timeout=LIVE_TIMEOUT_MS)
    expect(screen(page)).to_contain_text("Back in the chat.", timeout=LIVE_TIMEOUT_MS)
    chat.close()
    assert errors == []
