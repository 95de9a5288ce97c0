"""The runs feed in Chromium: while the operator looks at the runs list, a live run
(the real Claude Code TUI against the scripted model) reaches a question; the tab title and the
favicon count it, the row says what it waits for, an opted-in notification is shown, and a
click on it opens the run at its dialog."""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import expect

from compat.claude_code.scripted_model import ask_user_question, slow_text, text, when
from tests.browser.conftest import LabServer, RunPage, screenshot, start_run
from tests.browser.test_chat_browser import expect_state, open_run, send

pytestmark = pytest.mark.browser

# Records each Notification the page constructs (the real one is still shown).
NOTIFICATION_SPY = """
(() => {
  const Real = window.Notification;
  if (!Real) return;
  window.__notes = [];
  window.Notification = class extends Real {
    constructor(title, options) {
      super(title, options);
      window.__notes.push({ title, tag: (options || {}).tag, body: (options || {}).body });
      window.__lastNote = this;
    }
  };
})();
"""


@pytest.fixture(scope="module")
def feed_run(context: Any, lab_server: LabServer) -> RunPage:
    p = context.new_page()
    try:
        return start_run(p, lab_server.repo, "lab/browser-feed")
    finally:
        p.close()


def test_a_run_that_asks_is_counted_in_the_title_and_notified(
    context: Any, page: Any, feed_run: RunPage, lab_server: LabServer
) -> None:
    lab_server.model.script.add(
        when("FEED-ASK-7f3", ask_user_question(question="Which fruit for the feed?"), text("Fruit noted."))
    )
    context.grant_permissions(["notifications"], origin=lab_server.url)
    page.add_init_script(NOTIFICATION_SPY)
    page.goto("/")
    page.wait_for_function("() => window.__ws && window.__ws.opens >= 1")
    row = page.locator(f"#run-row-{feed_run.url.rstrip('/').rsplit('/', 1)[-1]}")
    expect(row.locator(".badge")).to_have_text("idle")
    expect(page).to_have_title("Runs · lab")
    # Opt in: the permission is asked only by this click.
    toggle = page.locator("#notify-toggle")
    expect(toggle).to_have_text("Notify me")
    toggle.click()
    expect(toggle).to_have_text("Notifications on")

    asker = context.new_page()
    try:
        open_run(asker, feed_run)
        expect_state(asker, "idle")
        send(asker, "FEED-ASK-7f3 please")
        expect(asker.locator("#dialog form.dialog-question")).to_be_visible()
    finally:
        asker.close()

    # The list page, never touched since: the row, the title, the favicon, the notification.
    expect(row.locator(".badge")).to_have_text("question")
    expect(row.locator(".waiting")).to_have_text("waiting for: Which fruit for the feed?")
    expect(page).to_have_title("(1) Runs · lab")
    assert page.evaluate("document.getElementById('favicon').href").startswith("data:image/png")
    page.wait_for_function("() => window.__notes.length > 0")
    [note] = page.evaluate("window.__notes")
    assert note["title"] == f"lab: {feed_run.name} asks: Which fruit for the feed?", note
    screenshot(page, "26-feed-question")

    # A click on the notification opens the run at its dialog.
    page.evaluate("window.__lastNote.onclick()")
    expect(page).to_have_url(re.compile(re.escape(feed_run.url) + "#dialog$"))
    form = page.locator("#dialog form.dialog-question")
    expect(form).to_be_visible()
    expect(page).to_have_title(f"(1) {feed_run.name} · lab")

    # Answered: nothing waits any more.
    form.locator("label.option", has_text="Red").locator("input").check()
    form.get_by_role("button", name="Answer", exact=True).click()
    expect_state(page, "idle")
    expect(page).to_have_title(f"{feed_run.name} · lab")
    assert page.evaluate("document.getElementById('favicon').getAttribute('href')") == "data:,"


def test_a_long_turn_that_ends_is_notified_and_a_quick_one_is_not(
    context: Any, page: Any, feed_run: RunPage, lab_server: LabServer
) -> None:
    lab_server.model.script.add(
        when("FEED-QUICK-a90", text("Quick.")),
        when("FEED-SLOW-b17", slow_text(words=8, delay_s=1.0)),
    )
    context.grant_permissions(["notifications"], origin=lab_server.url)
    page.add_init_script(NOTIFICATION_SPY)
    page.add_init_script("localStorage.setItem('lab.notify', 'on')")  # opted in before
    page.goto("/")
    page.wait_for_function("() => window.__ws && window.__ws.opens >= 1")
    row = page.locator(f"#run-row-{feed_run.url.rstrip('/').rsplit('/', 1)[-1]}")
    expect(row.locator(".badge")).to_have_text("idle")

    sender = context.new_page()
    try:
        open_run(sender, feed_run)
        expect_state(sender, "idle")
        send(sender, "FEED-QUICK-a90")
        expect(sender.locator("#transcript .msg-assistant_text").last).to_have_text("Quick.")
        expect_state(sender, "idle")
        send(sender, "FEED-SLOW-b17")
        expect(row.locator(".badge")).to_have_text("working")
        expect_state(sender, "idle")
    finally:
        sender.close()
    page.wait_for_function("() => window.__notes.length > 0")
    assert page.evaluate("window.__notes.map((n) => n.title)") == [f"lab: {feed_run.name} finished its turn"]
    expect(row.locator(".badge")).to_have_text("idle")


def test_a_run_started_elsewhere_joins_an_open_runs_list(
    context: Any, page: Any, feed_run: RunPage, lab_server: LabServer
) -> None:
    page.goto("/")
    page.wait_for_function("() => window.__ws && window.__ws.opens >= 1")
    expect(page.locator(f"#run-row-{run_id(feed_run)}")).to_be_visible()
    starter = context.new_page()
    try:
        other = start_run(starter, lab_server.repo, "lab/browser-feed-joins")
        # The list page, never reloaded, draws the new run's row from the feed.
        row = page.locator(f"#run-row-{run_id(other)}")
        expect(row).to_be_visible()
        expect(row.locator(".badge")).to_have_text("idle")
        starter.once("dialog", lambda dialog: dialog.accept())  # "End this run?"
        starter.get_by_role("button", name="End run").click()
        expect(starter.locator("#panel")).to_have_attribute("data-state", "ended")
    finally:
        starter.close()
    expect(row.locator(".badge")).to_have_text("ended")


def test_a_runs_list_that_slept_through_a_question_catches_up_when_it_wakes(
    context: Any, page: Any, feed_run: RunPage, lab_server: LabServer
) -> None:
    lab_server.model.script.add(
        when("FEED-SLEEP-c42", ask_user_question(question="Which fruit while asleep?"), text("Noted."))
    )
    page.goto("/")
    page.wait_for_function("() => window.__ws && window.__ws.opens >= 1")
    row = page.locator(f"#run-row-{run_id(feed_run)}")
    expect(row.locator(".badge")).to_have_text("idle")
    # "Asleep": the socket stays open in the browser's eyes but nothing it receives arrives
    # (stopped before any of the page's own handlers sees it: htmx-ws's swap and the feed's).
    page.evaluate(
        """() => { window.__asleep = true;
             window.addEventListener("htmx:wsBeforeMessage", (e) => {
               if (window.__asleep) { e.preventDefault(); e.stopPropagation(); } }, true); }"""
    )
    asker = context.new_page()
    try:
        open_run(asker, feed_run)
        expect_state(asker, "idle")
        send(asker, "FEED-SLEEP-c42 please")
        expect(asker.locator("#dialog form.dialog-question")).to_be_visible()
        assert row.locator(".badge").inner_text() == "idle"  # the sleeping list missed it
        opens = page.evaluate("window.__ws.opens")
        # Woken: the page drops the socket it holds, reconnects, and the feed's snapshot
        # disagrees with the row, so the list is drawn again.
        page.evaluate("() => { window.__asleep = false; window.dispatchEvent(new Event('online')); }")
        page.wait_for_function(f"() => window.__ws.opens > {opens}")
        expect(row.locator(".badge")).to_have_text("question")
        expect(row.locator(".waiting")).to_have_text("waiting for: Which fruit while asleep?")
        expect(page).to_have_title("(1) Runs · lab")
        form = asker.locator("#dialog form.dialog-question")
        form.locator("label.option", has_text="Red").locator("input").check()
        form.get_by_role("button", name="Answer", exact=True).click()
        expect_state(asker, "idle")
    finally:
        asker.close()
    expect(row.locator(".badge")).to_have_text("idle")
    expect(page).to_have_title("Runs · lab")


def run_id(run: RunPage) -> str:
    return run.url.rstrip("/").rsplit("/", 1)[-1]
