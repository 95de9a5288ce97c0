"""The chat in a real browser against the real Claude Code TUI and the scripted model.

One lab server and one Chromium per session; the chat tests share one run (one real claude),
in file order, and each checks what it adds against what the page had before. Every wait is
on the DOM (Playwright's auto-waiting expect) or on the scripted model's own log.
"""

from __future__ import annotations

import re
import subprocess
import time
from typing import Any

import pytest
from playwright.sync_api import expect

from compat.claude_code.scripted_model import last_human_text, slow_text, text, when
from tests.browser.conftest import (
    LIVE_TIMEOUT_MS,
    OPERATOR,
    LabServer,
    RunPage,
    log_in,
    screenshot,
    start_run,
)

pytestmark = pytest.mark.browser


# --- helpers ---------------------------------------------------------------------------------


def open_run(page: Any, run: RunPage) -> None:
    """Open the run page and wait until its socket is open and has said hello."""
    page.goto(run.url)
    page.wait_for_function("() => window.__ws && window.__ws.opens >= 1")


def transcript(page: Any) -> list[dict[str, Any]]:
    return page.eval_on_selector_all(
        "#transcript li[id^=msg-]",
        "els => els.map(e => ({id: e.id, seq: Number(e.dataset.seq), text: e.innerText.trim()}))",
    )


def assert_contiguous(items: list[dict[str, Any]]) -> None:
    ids = [m["id"] for m in items]
    assert len(ids) == len(set(ids)), f"duplicate message ids: {ids}"
    assert [m["seq"] for m in items] == list(range(len(items))), [m["seq"] for m in items]
    epochs = {re.fullmatch(r"msg-(\w+)-\d+", i).group(1) for i in ids}  # type: ignore[union-attr]
    assert len(epochs) == 1, epochs


def send(page: Any, message: str) -> None:
    box = page.locator("#composer textarea")
    box.fill(message)
    box.press("Enter")


def expect_state(page: Any, state: str) -> None:
    expect(page.locator("#panel")).to_have_attribute("data-state", state, timeout=LIVE_TIMEOUT_MS)
    expect(page.locator("#panel .badge")).to_have_text(state)


def wait_until(predicate: Any, what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


# --- 1. login --------------------------------------------------------------------------------


def test_it_logs_in_through_the_login_form(browser: Any, lab_server: LabServer) -> None:
    ctx = browser.new_context(base_url=lab_server.url)
    ctx.set_default_timeout(LIVE_TIMEOUT_MS)
    try:
        page = ctx.new_page()
        page.goto("/login/")
        page.get_by_label("Username").fill(OPERATOR)
        page.get_by_label("Password").fill("not-the-password")
        page.get_by_role("button", name="Log in").click()
        expect(page).to_have_url(re.compile(r"/login/$"))
        expect(page.locator("main form")).to_contain_text("correct username and password")

        log_in(page, lab_server.url)  # from / -> redirected to /login/ -> the runs list
        expect(page).to_have_url(f"{lab_server.url}/")
        expect(page.get_by_role("button", name="Log out")).to_be_visible()
    finally:
        ctx.close()


# --- 2. a new run from the form --------------------------------------------------------------


def test_it_creates_a_run_from_the_form_and_lands_on_its_page(page: Any, chat_run: RunPage) -> None:
    # chat_run went through the form (provider select, repository path, branch) and landed.
    open_run(page, chat_run)
    expect(page.get_by_role("heading", name=chat_run.name)).to_be_visible()
    expect(page.locator(".run-head")).to_contain_text("lab/browser-chat")
    expect(page.locator(".run-head")).to_contain_text("Claude Code")
    expect(page.locator(".run-head code.copyable")).to_contain_text(f"attach -t ={chat_run.tmux_session}")
    # The form's defaults: attribution on, the repository's MCP servers rejected; the test
    # bed's agent home trusts its repository (as the operator's own use of the CLI would).
    expect(page.locator(".run-head .guard")).to_have_text(
        "Commit guard on: seeded files stay out of the agent's commits · "
        "the repository's agent settings: loaded (you trust it) · its MCP servers: rejected"
    )
    expect_state(page, "idle")
    expect(page.locator("#composer textarea")).to_be_enabled()

    page.goto("/")
    row = page.locator("table.runs tr", has_text="lab/browser-chat")
    expect(row).to_have_count(1)
    expect(row.locator(".badge")).to_have_text("idle")  # the live badge, pushed over /ws/lab/


def test_the_new_run_form_refuses_a_path_that_is_not_a_git_repository(
    page: Any, lab_server: LabServer
) -> None:
    page.goto("/runs/new/")
    expect(page.get_by_label("Attribution in commits")).to_be_checked()
    expect(page.get_by_label("Project MCP servers")).to_have_value("reject")
    screenshot(page, "2-new-run-form")
    page.get_by_label("Repository").fill(str(lab_server.home))
    page.get_by_label("Branch").fill("lab/never")
    page.get_by_role("button", name="Start").click()
    expect(page.locator("form.stack")).to_contain_text("Not a git repository.")
    expect(page).to_have_url(re.compile(r"/runs/new/$"))


# --- 3. a message and the reply, live --------------------------------------------------------


def test_a_sent_message_and_the_scripted_reply_appear_without_reload(
    page: Any, chat_run: RunPage, lab_server: LabServer
) -> None:
    lab_server.model.script.add(when("PING", text("PONG from the model")))
    open_run(page, chat_run)
    page.evaluate("window.__noReload = true")
    before = transcript(page)

    send(page, "PING from the browser")
    expect(page.locator("#transcript .msg-user_text").last).to_have_text("PING from the browser")
    expect(page.locator("#transcript .msg-assistant_text").last).to_have_text("PONG from the model")
    expect(page.locator("#composer textarea")).to_have_value("")  # the composer cleared on success
    expect_state(page, "idle")

    assert page.evaluate("window.__noReload") is True, "the page reloaded"
    after = transcript(page)
    assert after[: len(before)] == before
    assert_contiguous(after)
    screenshot(page, "3-reply")


# --- 4. Shift+Enter ---------------------------------------------------------------------------


def test_shift_enter_inserts_a_newline_and_enter_sends_both_lines(page: Any, chat_run: RunPage) -> None:
    open_run(page, chat_run)
    replies: list[str] = []
    page.on("request", lambda r: replies.append(r.url) if "/reply/" in r.url else None)
    box = page.locator("#composer textarea")
    box.click()
    box.press_sequentially("first line")
    box.press("Shift+Enter")
    box.press_sequentially("second line")
    expect(box).to_have_value("first line\nsecond line")
    assert replies == [], "Shift+Enter sent the message"

    box.press("Enter")
    expect(page.locator("#transcript .msg-user_text").last).to_contain_text("first line")
    expect(page.locator("#transcript .msg-user_text").last).to_contain_text("second line")
    expect(box).to_have_value("")
    assert len(replies) == 1
    expect_state(page, "idle")


# --- 5. interrupt -----------------------------------------------------------------------------


def test_interrupt_stops_a_slow_stream_and_the_run_goes_idle(
    page: Any, chat_run: RunPage, lab_server: LabServer
) -> None:
    model = lab_server.model
    # A keyword no other test sends: wait_for_request looks at every request the model has had,
    # and another file's "FEED-SLOW-…" turn would match a bare "SLOW" before this one started.
    model.script.add(when("CHAT-SLOW-e41", slow_text(40, 1.0)))
    open_run(page, chat_run)
    lifecycle_before = page.locator("#transcript .msg-lifecycle").count()

    send(page, "CHAT-SLOW-e41 stream, please")
    interrupt = page.get_by_role("button", name="Interrupt")
    expect(interrupt).to_be_visible()
    expect_state(page, "working")
    model.wait_for_request(
        lambda r: (
            r.get("kind") == "turn"
            and "CHAT-SLOW-e41" in last_human_text(r["body"])
            and r.get("deltas_sent", 0) >= 1
        ),
        timeout=60,
    )
    interrupt.click()

    lifecycle = page.locator("#transcript .msg-lifecycle")
    expect(lifecycle).to_have_count(lifecycle_before + 1)
    expect(lifecycle.last).to_contain_text(re.compile("interrupted", re.IGNORECASE))
    expect_state(page, "idle")
    expect(interrupt).to_have_count(0)
    expect(page.locator("#composer textarea")).to_be_enabled()
    assert_contiguous(transcript(page))
    screenshot(page, "5-interrupted")


# --- 6. reload --------------------------------------------------------------------------------


def test_a_reload_renders_the_same_transcript(page: Any, chat_run: RunPage) -> None:
    open_run(page, chat_run)
    before = transcript(page)
    assert len(before) >= 4  # the earlier tests' messages
    page.reload()
    page.wait_for_function("() => window.__ws && window.__ws.opens >= 1")
    expect(page.locator("#transcript li[id^=msg-]")).to_have_count(len(before))
    assert transcript(page) == before
    assert_contiguous(before)


def test_the_run_page_shows_no_transcript_messages_as_flash_lines(
    page: Any, chat_run: RunPage, lab_server: LabServer
) -> None:
    lab_server.model.script.add(when("FLASH", text("flash check reply")))
    open_run(page, chat_run)
    send(page, "FLASH check")
    expect(page.locator("#transcript")).to_contain_text("flash check reply")
    page.reload()
    expect(page.locator("#transcript li[id^=msg-]").first).to_be_visible()
    expect(page.locator("ul.flash", has_text="Message(seq=")).to_have_count(0)


# --- 7. the socket drops mid-stream -----------------------------------------------------------


def server_state(page: Any, lab_server: LabServer, run: RunPage) -> str:
    """The state the server renders now, fetched past the cut proxy (same cookies: cookies
    are per host, not per port)."""
    html = page.context.request.get(run.url.replace(lab_server.url, lab_server.direct_url)).text()
    match = re.search(r'id="panel" class="panel" data-state="(\w+)"', html)
    assert match, html[:2000]
    return match.group(1)


def drop_mid_stream(page: Any, lab_server: LabServer, run: RunPage, prompt: str, reply: str) -> None:
    """Send `prompt`; once its reply streams, cut the network until the reply is in the
    transcript and the server has settled idle; then let the page reconnect."""
    model = lab_server.model
    send(page, prompt)
    expect(page.locator("#transcript .msg-user_text").last).to_have_text(prompt)
    expect(page.locator("#composer textarea")).to_have_value("")  # the reply POST is done
    model.wait_for_request(
        lambda r: (
            r.get("kind") == "turn" and prompt in last_human_text(r["body"]) and r.get("deltas_sent", 0) >= 1
        ),
        timeout=60,
    )
    closes = len(page.evaluate("window.__ws.closes"))
    opens = page.evaluate("window.__ws.opens")
    lab_server.proxy.cut()  # mid-stream the network drops: the socket dies abnormally (1006)
    try:
        page.wait_for_function(f"() => window.__ws.closes.length > {closes}")
        # While the page is away the reply lands in the transcript (the record, read-through).
        wait_until(lambda: lab_server.transcript_contains(reply), "the reply in the transcript")
        wait_until(lambda: server_state(page, lab_server, run) == "idle", "the server to settle idle")
        assert reply not in page.locator("#transcript").inner_text()
    finally:
        lab_server.proxy.restore()
    page.wait_for_function(f"() => window.__ws.opens > {opens}")
    assert 1006 in page.evaluate("window.__ws.closes")[closes:]


def test_a_dropped_socket_reconnects_with_no_gap_and_no_duplicate(
    page: Any, chat_run: RunPage, lab_server: LabServer
) -> None:
    words = " ".join(f"gap{i}" for i in range(6))
    lab_server.model.script.add(when("GAP", slow_text(words.split(), 0.4)))
    open_run(page, chat_run)
    expect_state(page, "idle")
    before = transcript(page)

    drop_mid_stream(page, lab_server, chat_run, "GAP: stream while the socket drops", words)
    expect(page.locator("#transcript .msg-assistant_text").last).to_have_text(words)

    after = transcript(page)
    assert after[: len(before)] == before, "messages the page had changed"
    assert_contiguous(after)
    new = [m["text"] for m in after[len(before) :]]
    assert new.count("GAP: stream while the socket drops") == 1
    assert new.count(words) == 1

    # And the page still receives live messages on the new socket.
    lab_server.model.script.add(when("AFTER", text("after the reconnect")))
    send(page, "AFTER the drop")
    expect(page.locator("#transcript .msg-assistant_text").last).to_have_text("after the reconnect")
    expect_state(page, "idle")
    final = transcript(page)
    assert final[: len(after)] == after
    assert_contiguous(final)


def test_after_a_reconnect_the_state_badge_is_current(
    page: Any, chat_run: RunPage, lab_server: LabServer
) -> None:
    lab_server.model.script.add(when("BADGE", slow_text(["badge0", "badge1", "badge2"], 0.4)))
    open_run(page, chat_run)
    expect_state(page, "idle")
    drop_mid_stream(page, lab_server, chat_run, "BADGE: settle while away", "badge0 badge1 badge2")
    expect(page.locator("#transcript .msg-assistant_text").last).to_have_text("badge0 badge1 badge2")
    # The server says idle (drop_mid_stream waited for it); the reconnected page must too.
    expect(page.locator("#panel")).to_have_attribute("data-state", "idle", timeout=10_000)


# --- 8. an ended run ------------------------------------------------------------------------


def test_an_ended_run_shows_ended_a_disabled_composer_and_stays_readable(
    page: Any, lab_server: LabServer
) -> None:
    lab_server.model.script.add(when("LAST", text("The last words of this run")))
    run = start_run(page, lab_server.repo, "lab/browser-ended")
    page.wait_for_function("() => window.__ws && window.__ws.opens >= 1")
    send(page, "LAST message before the end")
    expect(page.locator("#transcript .msg-assistant_text").last).to_have_text("The last words of this run")
    expect_state(page, "idle")
    readable = transcript(page)

    subprocess.run(
        ["tmux", "-L", lab_server.tmux_socket, "kill-session", "-t", f"={run.tmux_session}"], check=True
    )
    expect_state(page, "ended")  # pushed live: the watcher sees the TUI's process exit
    expect(page.locator("#composer textarea")).to_be_disabled()
    expect(page.locator("#composer button[type=submit]")).to_be_disabled()
    expect(page.get_by_role("button", name="Interrupt")).to_have_count(0)

    page.reload()
    expect_state(page, "ended")
    expect(page.locator("#composer")).to_contain_text("The run has ended")
    expect(page.locator("#composer textarea")).to_be_disabled()
    expect(page.locator("#composer button[type=submit]")).to_be_disabled()
    expect(page.get_by_role("button", name="End run")).to_have_count(0)
    assert transcript(page) == readable
    assert_contiguous(readable)
    screenshot(page, "8-ended")

    page.goto("/")
    row = page.locator("table.runs tr", has_text="lab/browser-ended")
    expect(row.locator(".badge")).to_have_text("ended")
