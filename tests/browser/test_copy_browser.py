"""Copy buttons, one handler for every page (static/lab/lab.js), in a real Chromium: a button
copies exactly its text (a code block's without the button's own label), and where the
Clipboard API is refused the text is selected for Ctrl-C and the button says so, never
"Copied" for a copy that did not happen."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from compat.claude_code.scripted_model import text, when
from tests.browser.conftest import LabServer, RunPage

pytestmark = pytest.mark.browser

REFUSE_CLIPBOARD = "() => { navigator.clipboard.writeText = () => Promise.reject(new Error('refused')); }"


def open_run(page: Any, run: RunPage) -> None:
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    page.goto(run.url)
    page.wait_for_function("() => window.__ws && window.__ws.opens >= 1")


def test_the_attach_command_is_copied_or_selected_for_ctrl_c(page: Any, chat_run: RunPage) -> None:
    open_run(page, chat_run)
    attach = page.locator(".run-head code.copyable").inner_text()
    button = page.locator(".run-head button.copy")
    button.click()
    expect(button).to_have_text("Copied")
    assert page.evaluate("navigator.clipboard.readText()") == attach
    expect(button).to_have_text("Copy")

    page.evaluate(REFUSE_CLIPBOARD)
    button.click()
    expect(button).to_have_text("Press Ctrl-C to copy")
    assert page.evaluate("window.getSelection().toString()") == attach


def test_a_code_block_copies_its_code_without_the_button_label(
    page: Any, chat_run: RunPage, lab_server: LabServer
) -> None:
    lab_server.model.script.add(when("COPYBLOCK", text("Here:\n\n```\ncopy line one\ncopy line two\n```\n")))
    open_run(page, chat_run)
    box = page.locator("#composer textarea")
    box.fill("COPYBLOCK please")
    box.press("Enter")
    block = page.locator("#transcript .md pre", has_text="copy line one").last
    button = block.locator(".copy-code")
    button.click()
    expect(button).to_have_text("Copied")
    assert page.evaluate("navigator.clipboard.readText()").rstrip("\n") == "copy line one\ncopy line two"


def test_a_text_shown_nowhere_is_put_in_a_field_for_ctrl_c(page: Any, chat_run: RunPage) -> None:
    # The auth card's local sign-in link: the URL is only in the button's data-copy. The old
    # fallback selected the card's *other* URL and said "Press Ctrl-C".
    open_run(page, chat_run)
    page.evaluate(REFUSE_CLIPBOARD)
    page.evaluate(
        """() => document.querySelector("main").insertAdjacentHTML("beforeend",
             '<p id="elsewhere"><code>http://example.test/other</code></p>'
             + '<p id="local"><a href="#">Open the local sign-in link</a> '
             + '<button type="button" data-copy="http://localhost:1/callback?x=1">Copy link</button></p>')"""
    )
    button = page.locator("#local button")
    button.click()
    expect(button).to_have_text("Press Ctrl-C to copy")
    field = page.locator("#local input.copy-fallback")
    expect(field).to_have_value("http://localhost:1/callback?x=1")
    assert page.evaluate("document.activeElement && document.activeElement.className") == "copy-fallback"
