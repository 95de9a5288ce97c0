"""Slash commands in Chromium: the composer autocomplete and the New conversation button,
against the real Claude Code TUI and the scripted model.

One run of its own (a New conversation restarts its transcript): its worktree branches from a
commit that adds a project command, .claude/commands/browser-hello.md, so the catalog the menu
shows holds the pinned builtins and that command with its frontmatter description.
"""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from compat.claude_code.scripted_model import text, when
from providers.claude_code.commands import BUILTINS
from tests.browser.conftest import LabServer, RunPage, commit_file, screenshot, start_run
from tests.browser.test_chat_browser import assert_contiguous, expect_state, open_run, send, transcript

pytestmark = pytest.mark.browser

# The pinned table's text (it moves with the CLI version; compat §10), as the page must show it.
CLEAR_DESCRIPTION = next(p.description for p in BUILTINS if p.name == "clear")
PROJECT_COMMAND = "browser-hello"
PROJECT_DESCRIPTION = "Greets the browser suite from the project"
PROJECT_HINT = "<name>"
PROJECT_BODY = (
    "---\n"
    f"description: {PROJECT_DESCRIPTION}\n"
    f"argument-hint: {PROJECT_HINT}\n"
    "---\n"
    "BROWSER-HELLO: say hello to $ARGUMENTS\n"
)


@pytest.fixture(scope="module")
def cmd_run(context: Any, lab_server: LabServer) -> RunPage:
    commit_file(lab_server.repo, f".claude/commands/{PROJECT_COMMAND}.md", PROJECT_BODY)
    p = context.new_page()
    try:
        return start_run(p, lab_server.repo, "lab/browser-commands")
    finally:
        p.close()


def menu(page: Any) -> Any:
    return page.locator("#command-menu")


def options(page: Any) -> Any:
    return page.locator("#command-menu [role=option]")


def selected(page: Any) -> Any:
    return page.locator('#command-menu [role=option][aria-selected="true"]')


def test_typing_a_slash_opens_the_menu_and_the_keys_drive_it(page: Any, cmd_run: RunPage) -> None:
    open_run(page, cmd_run)
    box = page.locator("#composer textarea")
    expect(menu(page)).to_be_hidden()
    box.click()
    box.press_sequentially("/")
    expect(menu(page)).to_be_visible()
    rows = options(page)
    expect(rows.first).to_be_visible()
    count = rows.count()
    assert count > 5, count  # the whole chat-safe catalog (at most 50 rows)
    expect(rows.nth(0)).to_have_attribute("aria-selected", "true")
    expect(selected(page)).to_have_count(1)

    # Down and Up move the selection; Up from the first row wraps to the last.
    box.press("ArrowDown")
    expect(rows.nth(1)).to_have_attribute("aria-selected", "true")
    expect(rows.nth(0)).to_have_attribute("aria-selected", "false")
    box.press("ArrowDown")
    expect(rows.nth(2)).to_have_attribute("aria-selected", "true")
    box.press("ArrowUp")
    expect(rows.nth(1)).to_have_attribute("aria-selected", "true")
    box.press("ArrowUp")
    box.press("ArrowUp")
    expect(rows.nth(count - 1)).to_have_attribute("aria-selected", "true")
    expect(selected(page)).to_have_count(1)
    expect(box).to_have_value("/")  # the arrows moved the menu, not the caret's text

    # Filtered as you type: "/cle" -> /clear first, with its hint and its description.
    box.press_sequentially("cle")
    first = rows.first
    expect(first.locator("code")).to_have_text("/clear")
    expect(first.locator(".hint")).to_have_text("[name]")
    expect(first.locator(".desc")).to_have_text(CLEAR_DESCRIPTION)
    expect(first).to_have_attribute("aria-selected", "true")
    for name in options(page).locator("code").all_inner_texts():
        assert "cle" in name, name
    screenshot(page, "6-menu-clear")

    # Esc closes the menu and keeps the text.
    box.press("Escape")
    expect(menu(page)).to_be_hidden()
    expect(options(page)).to_have_count(0)
    expect(box).to_have_value("/cle")

    # Typing on reopens it; Tab fills the selected command (a space after it: /clear takes
    # an argument) and the menu goes; nothing is sent.
    box.press_sequentially("a")
    expect(options(page).first.locator("code")).to_have_text("/clear")
    box.press("Tab")
    expect(box).to_have_value("/clear ")
    expect(menu(page)).to_be_hidden()
    expect(box).to_be_focused()
    expect(page.locator("#transcript .msg-user_text", has_text="/clear")).to_have_count(0)
    box.fill("")


def test_a_project_command_shows_with_its_description_and_a_click_fills_it(
    page: Any, cmd_run: RunPage, lab_server: LabServer
) -> None:
    lab_server.model.script.add(when("BROWSER-HELLO", text("Hello, project command")))
    open_run(page, cmd_run)
    box = page.locator("#composer textarea")
    box.click()
    box.press_sequentially("/browser")
    row = options(page).filter(has_text=f"/{PROJECT_COMMAND}")
    expect(row).to_have_count(1)
    expect(row.locator(".desc")).to_have_text(PROJECT_DESCRIPTION)
    expect(row.locator(".hint")).to_have_text(PROJECT_HINT)
    screenshot(page, "6-menu-project-command")

    row.click()  # the mouse
    expect(box).to_have_value(f"/{PROJECT_COMMAND} ")
    expect(menu(page)).to_be_hidden()
    expect(box).to_be_focused()

    # It runs on the plain reply path; the CLI expands it into the prompt the model answers.
    box.press_sequentially("world")
    box.press("Enter")
    expect(page.locator("#transcript .msg-assistant_text").last).to_have_text("Hello, project command")
    expect_state(page, "idle")
    request = lab_server.model.wait_for_request(
        lambda r: r.get("kind") == "turn" and "BROWSER-HELLO: say hello to world" in str(r.get("body")),
        timeout=10,
    )
    assert request


def test_new_conversation_restarts_the_transcript_and_the_chat_goes_on(
    page: Any, cmd_run: RunPage, lab_server: LabServer
) -> None:
    model = lab_server.model
    model.script.add(when("OLDCONV-ONE", text("reply before the clear")))
    model.script.add(when("NEWCONV-TWO", text("reply in the new conversation")))
    open_run(page, cmd_run)
    page.evaluate("window.__noReload = true")
    send(page, "OLDCONV-ONE message")
    expect(page.locator("#transcript .msg-assistant_text").last).to_have_text("reply before the clear")
    expect_state(page, "idle")
    epoch = page.locator("#transcript").get_attribute("data-epoch")
    assert len(transcript(page)) >= 2

    dialogs: list[str] = []

    def accept(dialog: Any) -> None:
        dialogs.append(dialog.message)
        dialog.accept()

    page.on("dialog", accept)
    page.locator("form.new-conversation").get_by_role("button", name="New conversation").click()

    # The transcript restarts: a new epoch, the old messages gone, the "/clear" line first.
    expect(page.locator("#transcript")).not_to_have_attribute("data-epoch", epoch or "")
    expect(page.locator("#transcript")).not_to_contain_text("OLDCONV-ONE")
    expect(page.locator("#transcript")).not_to_contain_text("reply before the clear")
    first = page.locator("#transcript li[id^=msg-]").first
    expect(first).to_contain_text("/clear")
    expect(first).to_have_class("msg msg-user_text")
    expect_state(page, "idle")
    assert dialogs and "new conversation" in dialogs[0].lower(), dialogs
    screenshot(page, "6-new-conversation")

    # The next message lands in the new conversation, and only the new one.
    send(page, "NEWCONV-TWO message")
    expect(page.locator("#transcript .msg-assistant_text").last).to_have_text("reply in the new conversation")
    expect_state(page, "idle")
    after = transcript(page)
    assert_contiguous(after)
    assert "/clear" in after[0]["text"]
    assert [m["text"] for m in after if "CONV-" in m["text"]] == ["NEWCONV-TWO message"]
    assert page.evaluate("window.__noReload") is True, "the page reloaded"
    # The model saw a fresh conversation: no earlier turn in the request after the clear.
    request = model.wait_for_request(
        lambda r: r.get("kind") == "turn" and "NEWCONV-TWO" in str(r.get("body")), timeout=10
    )
    assert "OLDCONV-ONE" not in str(request["body"]["messages"])
