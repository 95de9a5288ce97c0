"""lab on a phone: at 390×844 every page and dialog fits the width (no sideways
scrolling; long links, paths and branch names wrap; wide code scrolls inside its own box),
touch targets are at least 44 px high, the "/" menu's command names stay whole, the state
badge does not cover messages, and a page woken from sleep reconnects and catches up."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from compat.claude_code.scripted_model import ask_user_question, text, when
from tests.browser.conftest import (
    LIVE_TIMEOUT_MS,
    WS_PROBE,
    AuthServer,
    LabServer,
    RunPage,
    _git_repo,
    log_in,
    screenshot,
    start_run,
)
from tests.browser.test_chat_browser import expect_state, send

pytestmark = pytest.mark.browser

PHONE = {"width": 390, "height": 844}
REAL_SHAPED_URL = (
    "https://claude.ai/oauth/authorize?code=true&client_id=9d1c250a-e61b-44d9-88ed-5944d1962f5e"
    "&response_type=code&redirect_uri=https%3A%2F%2Fconsole.anthropic.com%2Foauth%2Fcode%2Fcallback"
    "&scope=org%3Acreate_api_key+user%3Aprofile+user%3Ainference+user%3Asessions%3Aclaude_code"
    "&code_challenge=" + "Q" * 43 + "&code_challenge_method=S256&state=" + "S" * 43
)
LONG_BRANCH = "lab/phone-a-branch-name-long-enough-to-need-wrapping-on-a-small-screen"

# Elements whose right edge is past the viewport and that no scrolling box of their own holds.
OVERFLOWING = """(width) => {
  const scrolls = (el) => {
    for (let a = el.parentElement; a && a !== document.body; a = a.parentElement) {
      if (["auto", "scroll", "hidden", "clip"].includes(getComputedStyle(a).overflowX)) return true;
    }
    return false;
  };
  return [...document.querySelectorAll("body *")]
    .filter((el) => { const r = el.getBoundingClientRect(); return r.width > 0 && r.right > width + 0.5; })
    .filter((el) => !scrolls(el))
    .map((el) => el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") + "." + String(el.className));
}"""

# Visible controls lower than 44 px (WCAG 2.5.5; links inside running text are exempt). xterm.js's
# input helper is an invisible textarea at the cursor, not a control: a tap on the terminal
# focuses it.
SMALL_TARGETS = """() => [...document.querySelectorAll(
    'button, .button, input:not([type=hidden]):not([type=checkbox]):not([type=radio]), select, ' +
    'textarea:not(.xterm-helper-textarea), ' +
    'header.top a, summary, [role=option], .run-row a, .dialog .option')]
  .filter((el) => { const r = el.getBoundingClientRect(); return r.width && r.height && r.height < 43.5; })
  .map((el) => el.tagName.toLowerCase() + "." + String(el.className) + " "
    + (el.textContent || "").trim().slice(0, 30) + " " + el.getBoundingClientRect().height)"""


def fits(page: Any, name: str, *, targets: bool = True) -> None:
    page.wait_for_function("() => document.documentElement.clientWidth === 390")
    wide = page.evaluate("() => document.documentElement.scrollWidth")
    assert wide <= 390, f"{name}: the page scrolls sideways at 390 px: {wide} px wide"
    assert page.evaluate(OVERFLOWING, 390) == [], name
    if targets:
        assert page.evaluate(SMALL_TARGETS) == [], name
    screenshot(page, f"26-phone-{name}")


@pytest.fixture(scope="module")
def phone(browser: Any, lab_server: LabServer) -> Iterator[Any]:
    ctx = browser.new_context(base_url=lab_server.url, viewport=PHONE, is_mobile=True, has_touch=True)
    ctx.set_default_timeout(LIVE_TIMEOUT_MS)
    ctx.add_init_script(WS_PROBE)
    page = ctx.new_page()
    log_in(page, lab_server.url)
    page.close()
    try:
        yield ctx
    finally:
        ctx.close()


@pytest.fixture(scope="module")
def phone_run(phone: Any, lab_server: LabServer) -> RunPage:
    p = phone.new_page()
    try:
        return start_run(p, lab_server.repo, LONG_BRANCH)
    finally:
        p.close()


@pytest.fixture
def mobile(phone: Any) -> Iterator[Any]:
    p = phone.new_page()
    try:
        yield p
    finally:
        p.close()


def test_every_page_fits_a_phone(mobile: Any, phone_run: RunPage, lab_server: LabServer) -> None:
    [wt] = (lab_server.log.parent / "data" / "worktrees").glob("phone-a-branch-name-*")
    (wt / "wide.py").write_text("x = '" + "w" * 600 + "'\n")  # a diff line wider than any phone
    pages = {
        "runs": "/",
        "new-run": "/runs/new/",
        "providers": "/providers/",
        "password": "/account/password/",
        "run": phone_run.url,
        "changes": phone_run.url + "changes/",
        "terminal": phone_run.url + "terminal/",
    }
    for name, url in pages.items():
        mobile.goto(url)
        fits(mobile, name)
    # The new-run form with its errors beside the fields.
    mobile.goto("/runs/new/")
    mobile.get_by_label("Repository").fill("/nonexistent/" + "deep/" * 40 + "repository")
    mobile.get_by_label("Branch").fill("lab/x")
    mobile.get_by_role("button", name="Start").click()
    expect(mobile.get_by_text("No such directory.")).to_be_visible()
    fits(mobile, "new-run-errors")
    # Django's admin: its own styles, but still no sideways scrolling.
    mobile.goto("/admin/")
    fits(mobile, "admin", targets=False)


def test_the_terminal_with_the_keyboard_taken_fits_a_phone(mobile: Any, phone_run: RunPage) -> None:
    mobile.goto(phone_run.url + "terminal/")
    expect(mobile.locator("#terminal")).to_have_attribute("data-live", "1")
    mobile.get_by_role("button", name="Take the keyboard").click()
    expect(mobile.locator("#keyboard .banner")).to_be_visible()
    expect(mobile.locator(".keybar .key")).to_have_count(8)  # the keys a phone keyboard lacks
    fits(mobile, "terminal-typing")
    mobile.get_by_role("button", name="Give the keyboard back").click()
    expect(mobile.get_by_role("button", name="Take the keyboard")).to_be_visible()


def test_the_runs_list_wraps_a_long_branch(mobile: Any, phone_run: RunPage) -> None:
    mobile.goto("/")
    row = mobile.locator("tr.run-row", has_text=phone_run.name)
    expect(row).to_have_count(1)
    expect(row.locator("code")).to_have_text(LONG_BRANCH)
    fits(mobile, "runs-long-branch")


def test_the_run_page_its_menu_and_its_dialog_fit_a_phone(
    mobile: Any, phone_run: RunPage, lab_server: LabServer
) -> None:
    long_reply = "\n\n".join(f"Paragraph {i} of a reply taller than a phone's screen." for i in range(40))
    lab_server.model.script.add(
        when("PHONE-LONG-2e7", text(long_reply)),
        when("PHONE-ASK-93b", ask_user_question(), text("Phone answer noted.")),
    )
    mobile.goto(phone_run.url)
    mobile.wait_for_function("() => window.__ws && window.__ws.opens >= 1")
    expect_state(mobile, "idle")
    send(mobile, "PHONE-LONG-2e7")
    expect(mobile.locator("#transcript .msg-assistant_text").last).to_contain_text("Paragraph 39")
    expect_state(mobile, "idle")
    send(mobile, "PHONE-ASK-93b please")
    form = mobile.locator("#dialog form.dialog-question")
    expect(form).to_be_visible()
    fits(mobile, "run-question")

    # The state badge never covers a message, wherever the page is scrolled.
    for y in (0, 400, 800, 10_000):
        mobile.evaluate(f"window.scrollTo(0, {y})")
        covered = mobile.evaluate(
            """() => { const b = document.querySelector('#panel .badge').getBoundingClientRect();
                return [...document.querySelectorAll('#transcript > li')].filter((li) => {
                  const r = li.getBoundingClientRect();
                  return r.left < b.right && b.left < r.right
                    && r.top < b.bottom && b.top < r.bottom; }).length; }"""
        )
        assert covered == 0, f"the badge covers {covered} message(s) at scroll {y}"

    form.locator("label.option", has_text="Green").locator("input").check()
    form.get_by_role("button", name="Answer", exact=True).click()
    expect_state(mobile, "idle")

    # The "/" menu: every command name on one line.
    box = mobile.locator("#composer textarea")
    box.fill("/")
    box.press("End")
    menu = mobile.locator("#command-menu")
    expect(menu).to_be_visible()
    expect(menu.locator("[role=option]").first).to_be_visible()
    # The lines a name's text occupies (a flex item is one box however many lines it holds).
    broken = mobile.evaluate(
        """() => [...document.querySelectorAll('#command-menu [role=option] code')].filter((c) => {
             const range = document.createRange(); range.selectNodeContents(c);
             const tops = new Set([...range.getClientRects()].map((r) => Math.round(r.top)));
             return tops.size !== 1 || c.scrollWidth > c.clientWidth + 1; }).map((c) => c.textContent)"""
    )
    assert broken == [], broken
    fits(mobile, "command-menu")
    box.fill("")

    # With the keyboard's share of the screen gone, the composer is still in view.
    mobile.set_viewport_size({"width": 390, "height": 420})
    box.focus()
    box.scroll_into_view_if_needed()
    rect = box.bounding_box()
    assert rect is not None and rect["y"] + rect["height"] <= 420.5, rect
    mobile.set_viewport_size(PHONE)


def test_a_page_woken_from_sleep_reconnects_and_catches_up(
    mobile: Any, phone: Any, phone_run: RunPage, lab_server: LabServer
) -> None:
    mobile.goto(phone_run.url)
    mobile.wait_for_function("() => window.__ws && window.__ws.opens >= 1")
    expect_state(mobile, "idle")
    # "Asleep": the socket stays open in the browser's eyes but nothing it receives arrives (a
    # phone's suspended tab, a NAT that forgot the connection).
    mobile.evaluate(
        """() => { window.__asleep = true;
             document.addEventListener("htmx:wsBeforeMessage", (e) => {
               if (window.__asleep) e.preventDefault(); }, true); }"""
    )
    lab_server.model.script.add(when("PHONE-WAKE-5d1", text("Said while the phone slept.")))
    other = phone.new_page()
    try:
        other.goto(phone_run.url)
        other.wait_for_function("() => window.__ws && window.__ws.opens >= 1")
        send(other, "PHONE-WAKE-5d1")
        said = other.locator("#transcript .msg-assistant_text").last
        expect(said).to_have_text("Said while the phone slept.")
        expect_state(other, "idle")
    finally:
        other.close()
    slept = mobile.locator("#transcript .msg-assistant_text", has_text="Said while the phone slept.")
    expect(slept).to_have_count(0)  # the sleeping page missed it
    opens, closes = mobile.evaluate("[window.__ws.opens, window.__ws.closes.length]")
    # Woken (the network is back): the page drops the socket it holds, reconnects, catches up.
    mobile.evaluate("() => { window.__asleep = false; window.dispatchEvent(new Event('online')); }")
    mobile.wait_for_function(f"() => window.__ws.opens > {opens}")
    assert len(mobile.evaluate("window.__ws.closes")) > closes  # the held socket was closed
    expect(slept).to_have_count(1)
    expect(mobile.locator("#connection")).to_be_hidden()


def test_the_login_pages_fit_a_phone(browser: Any, lab_server: LabServer) -> None:
    ctx = browser.new_context(base_url=lab_server.url, viewport=PHONE, is_mobile=True, has_touch=True)
    try:
        page = ctx.new_page()
        page.goto("/login/")
        fits(page, "login")
        page.goto("/account/once/not-a-real-token/")
        expect(page.get_by_role("heading")).to_have_text(re.compile("used or has expired"))
        fits(page, "login-link-expired")
    finally:
        ctx.close()


def test_the_login_card_with_a_pending_link_fits_a_phone(
    browser: Any, auth_server: AuthServer, tmp_path: Path
) -> None:
    ctx = browser.new_context(base_url=auth_server.url, viewport=PHONE, is_mobile=True, has_touch=True)
    ctx.set_default_timeout(LIVE_TIMEOUT_MS)
    try:
        page = ctx.new_page()
        log_in(page, auth_server.url)
        # Where a run start refused while logged out offers the card: the new-run page.
        page.goto("/runs/new/")
        page.get_by_label("Repository").fill(str(_git_repo(tmp_path / "repo")))
        page.get_by_label("Branch").fill("lab/phone-logged-out")
        page.get_by_role("button", name="Start").click()
        card = page.locator("#auth-card-claude-code")
        card.locator(".auth-login").click()
        expect(card.locator("a.auth-url")).to_be_visible()
        # The offline sign-in server's link is short; the real one is ~400 characters with a
        # percent-encoded stretch no line breaks in. The card shows it as text: give it that.
        page.evaluate(
            "(url) => document.querySelectorAll('#auth-card-claude-code code').forEach((c) => {"
            " if (c.textContent.startsWith('https://')) c.textContent = url; })",
            REAL_SHAPED_URL,
        )
        fits(page, "login-pending")
        card.locator("details.auth-alternative summary").click()  # the localhost way's link too
        expect(card.locator("details.auth-alternative a")).to_be_visible()
        fits(page, "login-pending-alternative")
        box = card.bounding_box()
        assert box is not None and box["width"] <= 390, box
    finally:
        ctx.close()


def test_an_ended_runs_last_terminal_output_and_the_changes_title_fit_a_phone(
    mobile: Any, lab_server: LabServer
) -> None:
    """The TUI's last screen is as wide as its terminal (about 200 columns): it scrolls in its
    own box instead of making the whole page 1475 px wide."""
    run = start_run(mobile, lab_server.repo, "lab/phone-ended")
    mobile.wait_for_function("() => window.__ws && window.__ws.opens >= 1")
    expect_state(mobile, "idle")
    shown = subprocess.run(
        [
            "tmux",
            "-L",
            lab_server.tmux_socket,
            "display-message",
            "-p",
            "-t",
            f"={run.tmux_session}:",
            "#{pane_pid}",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    # What an agent prints last can be one long line (a stack trace, a JSON error) or a screen
    # as wide as its terminal. Written where lab keeps an exit (lab keeps a record it finds),
    # so the test does not hang on what the TUI draws as it dies.
    run_id = run.url.rstrip("/").rsplit("/", 1)[-1]
    record = lab_server.log.parent / "data" / "runs" / run_id / "exit.json"
    record.parent.mkdir(parents=True, exist_ok=True)
    record.write_text(json.dumps({"status": 1, "output": "Error: " + "x" * 300 + "\n" + "─" * 200}))
    os.kill(int(shown.stdout), signal.SIGTERM)
    expect(mobile.locator("#panel .exit-reason pre")).not_to_be_empty()
    expect(mobile.locator("#panel .exit-reason pre")).to_contain_text("x" * 300)
    fits(mobile, "run-ended")
    mobile.reload()
    expect(mobile.locator("#panel .exit-reason pre")).to_contain_text("x" * 300)
    fits(mobile, "run-ended-reloaded")

    mobile.goto(run.url + "changes/")
    # Each line of the link is a target of its own (a link that wraps is two short boxes).
    heights = mobile.evaluate(
        "() => [...document.querySelector('.run-head h1 a').getClientRects()].map((r) => r.height)"
    )
    assert heights and min(heights) >= 43.5, heights
    fits(mobile, "changes-title")
