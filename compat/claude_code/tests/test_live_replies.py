"""Live: what a reply does to the real pinned TUI, and what lab says about it (COMPAT §6).

Each case goes through ClaudeCodeProvider.reply, the production path, and is judged on what the
CLI recorded (transcript lines, hook spool, files the agent's shell touched): a reply that lands
is reported as delivered; a reply that would act on the TUI (answer a prompt, run a shell
command) is refused before any key and nothing happens.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from compat.adapter import AdapterRun
from compat.claude_code.adapter import spawn_adapter_run
from compat.claude_code.home import installed_version
from compat.claude_code.scripted_model import text, tool_use, when
from providers.claude_code import provider as claude_provider
from providers.claude_code.provider import ClaudeCodeProvider
from providers.claude_code.transcript import records_prompt
from providers.errors import PromptPending, ReplyInFlight, ReplyNotDelivered, ReplyRefused
from providers.tmux import Tmux

pytestmark = pytest.mark.live


@pytest.fixture
def spawn(adapter_settings, claude_home, tmp_path):
    started: list[AdapterRun] = []

    def start() -> AdapterRun:
        run = spawn_adapter_run(tmp_path / f"run{len(started)}", claude_home.worktree)
        started.append(run)
        return run

    yield start
    for run in started:
        Tmux(run.handle.tmux_socket).kill_server()


@pytest.fixture
def live_run(spawn):
    return spawn()


def entries(run: AdapterRun) -> list[dict[str, Any]]:
    path = run.provider.locate_transcript(run.handle)
    try:
        raw = Path(path).read_bytes().splitlines()
    except FileNotFoundError:
        return []
    return [json.loads(line) for line in raw if line.strip()]


def user_contents(run: AdapterRun) -> list[str]:
    out = []
    for e in entries(run):
        content = e.get("message", {}).get("content") if e.get("type") == "user" else None
        if isinstance(content, str) and not e.get("isMeta"):
            out.append(content)
    return out


def wait_for(predicate, what: str, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def test_receipts_match_what_the_cli_records(scripted_model, live_run):
    """compat §6 (receipts): NFC, invisible characters dropped, an unknown command's entry;
    "#" and "&" are plain text. Each reply returns (no false "not delivered")."""
    provider, handle = live_run.provider, live_run.handle
    timings = {}
    provider.reply(handle, "warm up")  # the first reply also waits for the input to go live

    def send(label: str, reply: str) -> None:
        started = time.monotonic()
        provider.reply(handle, reply)  # raises ReplyNotDelivered if no receipt matched
        timings[label] = time.monotonic() - started

    send("combining", "cafe\u0301 na\u0308ive")
    assert "caf\u00e9 n\u00e4ive" in user_contents(live_run)  # the CLI records NFC

    invisible = "\u00ad\u200b\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\ufeff"
    send("bidi", f"first \u202eevil\u202c line{invisible}\nsecond line")
    assert "first evil line\nsecond line" in user_contents(live_run)

    # A lone zero-width joiner is stripped too (one inside an emoji sequence is kept): lab keeps
    # it, the CLI holds the paste for review, lab's retry Enter submits it, the receipt matches.
    send("zwj", "lone \u200djoiner")
    assert "lone joiner" in user_contents(live_run)
    timings.pop("zwj")

    send("unknown", "/nosuchcommand-xyz")
    assert any(
        e.get("subtype") == "informational" and e.get("content") == "Unknown command: /nosuchcommand-xyz"
        for e in entries(live_run)
    )
    send("hash", "#remember this note")
    send("amp", "&do it in the background")
    # A reply sent while the turn before it still runs is received as queued (its enqueue entry):
    # the user entry comes when the CLI takes it, on a loaded machine after the reply returned.
    wait_for(
        lambda: {"#remember this note", "&do it in the background"} <= set(user_contents(live_run)),
        "both texts recorded as the operator's messages",
    )
    # Delivered on the first Enter: no retry was needed (the CLI did not hold any for review).
    assert all(t < ClaudeCodeProvider.retry_enter_after_s for t in timings.values()), timings


def test_the_cli_holds_a_paste_with_invisible_characters_for_review(scripted_model, live_run):
    """compat §6 (invisible characters): pasted raw, the CLI strips them and does not submit on
    the first Enter; lab strips them first. The second Enter submits the stripped text."""
    tmux, session = Tmux(live_run.handle.tmux_socket), live_run.handle.tmux_session
    live_run.provider.reply(live_run.handle, "warm up")  # the input is live
    tmux.paste(session, "raw \u202eevil\u202c zero\u200bwidth")
    time.sleep(claude_provider.enter_delay("raw"))
    tmux.send_keys(session, "Enter")
    deadline = time.monotonic() + 3.0  # a bounded look for a record that must not come
    while time.monotonic() < deadline:
        assert "raw evil zerowidth" not in user_contents(live_run), "submitted on the first Enter"
        time.sleep(0.1)
    tmux.send_keys(session, "Enter")
    wait_for(lambda: "raw evil zerowidth" in user_contents(live_run), "the stripped text after Enter")


def test_a_leading_bang_is_refused_and_runs_nothing(scripted_model, live_run, claude_home):
    """compat §6 (mode prefixes): "!" is bash mode, run at once with no permission prompt; lab
    refuses it before any key. " !" is text."""
    marker = claude_home.worktree / "bang.txt"
    with pytest.raises(ReplyRefused, match="shell command"):
        live_run.provider.reply(live_run.handle, "!touch bang.txt")
    live_run.provider.reply(live_run.handle, " !touch spaced.txt")
    assert " !touch spaced.txt" in user_contents(live_run)
    assert not marker.exists() and not (claude_home.worktree / "spaced.txt").exists()
    # The fact behind the refusal, typed raw: it runs, and lab's receipt knows its record.
    tmux, session = Tmux(live_run.handle.tmux_socket), live_run.handle.tmux_session
    tmux.paste(session, "!touch bang.txt")
    time.sleep(0.2)
    tmux.send_keys(session, "Enter")
    wait_for(lambda: "<bash-input>touch bang.txt</bash-input>" in user_contents(live_run), "bash-input")
    assert marker.exists()
    raw = Path(live_run.provider.locate_transcript(live_run.handle)).read_bytes().splitlines()
    assert any(records_prompt(line, "!touch bang.txt") for line in raw)


def test_a_reply_while_a_permission_prompt_is_open_is_refused(scripted_model, live_run, claude_home):
    """No reply answers a prompt: with "Do you want to proceed?" on screen, "No! Do not run
    that command." is refused before any key; the command does not run."""
    bash = tool_use("Bash", {"command": "touch approved.txt", "description": "touch"})
    scripted_model.script.add(when("BASH1", bash, text("done")))
    live_run.provider.reply(live_run.handle, "BASH1 please")
    wait_for(lambda: live_run.provider.spool_view(live_run.handle).permission_open, "the prompt")
    with pytest.raises(PromptPending, match="asking permission"):
        live_run.provider.reply(live_run.handle, "No! Do not run that command.")
    assert "No! Do not run that command." not in user_contents(live_run)
    assert not (claude_home.worktree / "approved.txt").exists()
    # Still pending: the operator declines it in the terminal (Esc), then replies go through.
    Tmux(live_run.handle.tmux_socket).send_keys(live_run.handle.tmux_session, "Escape")
    # Closed by the rejection's tool_result, which the provider learns from reading the transcript.
    wait_for(lambda: live_run.refresh() and not live_run.provider._asking(live_run.handle), "closed")
    live_run.provider.reply(live_run.handle, "fine, skip it")
    assert not (claude_home.worktree / "approved.txt").exists()


def test_leftover_text_in_the_composer_is_submitted_with_the_next_reply(scripted_model, live_run):
    """A killed lab can leave a paste without its Enter; the next reply lands merged with it
    and is reported delivered (it was)."""
    live_run.provider.reply(live_run.handle, "warm up")
    Tmux(live_run.handle.tmux_socket).paste(live_run.handle.tmux_session, "left over\nfrom before")
    live_run.provider.reply(live_run.handle, "the next message")  # no ReplyNotDelivered
    # (If "warm up" was still being answered, the receipt was the enqueue: the entry follows.)
    wait_for(
        lambda: any(c.endswith("the next message") and "left over" in c for c in user_contents(live_run)),
        "the merged message",
    )


def test_an_unrecorded_reply_is_not_called_lost_and_is_never_sent_twice(
    scripted_model, live_run, monkeypatch
):
    """/help opens a screen and (fullscreen renderer) records nothing, open or closed: lab says
    it cannot tell, and refuses the same text again unless asked for a second copy."""
    monkeypatch.setattr(ClaudeCodeProvider, "delivery_timeout_s", 4.0)
    live_run.provider.reply(live_run.handle, "warm up")
    with pytest.raises(ReplyNotDelivered) as raised:
        live_run.provider.reply(live_run.handle, "/help")
    assert "composer" not in str(raised.value) and "cannot tell" in str(raised.value)
    with pytest.raises(ReplyInFlight, match="not recorded it yet"):
        live_run.provider.reply(live_run.handle, "/help")
    assert live_run.provider.return_to_prompt(live_run.handle) is True  # one Esc, verified
    live_run.provider.reply(live_run.handle, "back at the prompt")  # a different text goes
    with pytest.raises(ReplyInFlight, match="not recorded it yet"):
        live_run.provider.reply(live_run.handle, "/help")
    assert not any("<command-name>/help</command-name>" in json.dumps(e) for e in entries(live_run))


def test_a_reply_that_lands_late_is_reported_as_landed_not_sent_twice(scripted_model, live_run, monkeypatch):
    """With no time to see its receipt, lab reports "cannot tell"; the text lands; a resend is
    refused with "reached Claude Code after all", and the CLI recorded it once."""
    live_run.provider.reply(live_run.handle, "warm up")
    monkeypatch.setattr(ClaudeCodeProvider, "retry_enter_after_s", 0.0)
    monkeypatch.setattr(ClaudeCodeProvider, "delivery_timeout_s", 0.0)
    with pytest.raises(ReplyNotDelivered, match="cannot tell"):
        live_run.provider.reply(live_run.handle, "late but sure")
    wait_for(lambda: "late but sure" in user_contents(live_run), "the late receipt")
    with pytest.raises(ReplyInFlight, match="reached Claude Code after all"):
        live_run.provider.reply(live_run.handle, "late but sure")
    assert user_contents(live_run).count("late but sure") == 1


def test_the_classic_renderer_takes_replies(scripted_model, claude_home, spawn):
    """compat §6 (readiness): after failed boots the CLI falls back to its classic renderer by
    itself (fullscreenAutoDisabled), which never turns on mouse tracking."""
    state_file = claude_home.home / ".claude.json"
    state = json.loads(state_file.read_text())
    state["fullscreenAutoDisabled"] = {"version": installed_version(), "at": int(time.time() * 1000)}
    state_file.write_text(json.dumps(state))
    scripted_model.script.add(text("Classic hello."))
    run = spawn()
    started = time.monotonic()
    run.provider.reply(run.handle, "hello\nfrom a classic pane")
    elapsed = time.monotonic() - started
    assert Tmux(run.handle.tmux_socket).pane_format(run.handle.tmux_session, "#{mouse_any_flag}") == "0"
    assert any("from a classic pane" in c for c in user_contents(run))
    assert elapsed < claude_provider.READY_TIMEOUT_S


def test_a_prompt_sent_while_working_is_reported_queued_at_once(scripted_model, live_run):
    """compat §1: the enqueue is recorded at once; the message itself only after the turn.
    The read reports it queued until the CLI dequeues it."""
    from compat.claude_code.scripted_model import slow_text

    scripted_model.script.add(when("SLOW", slow_text(10, 0.7)), when("FOLLOW", text("Follow-up handled.")))
    assert live_run.provider.connecting(live_run.handle)  # spawned, SessionStart not run yet
    live_run.provider.reply(live_run.handle, "SLOW please")
    assert not live_run.provider.connecting(live_run.handle)
    scripted_model.wait_streaming(min_deltas=2, timeout=60)
    live_run.provider.reply(live_run.handle, "FOLLOW up while you work")
    read = live_run.refresh()
    assert read.queued == ("FOLLOW up while you work",)
    assert "FOLLOW up while you work" not in live_run.texts("user_text")
    live_run.wait(lambda r: "Follow-up handled." in r.texts("assistant_text"), timeout=90, what="answer")
    assert live_run.last.queued == ()
    assert "FOLLOW up while you work" in live_run.texts("user_text")


def test_return_to_the_prompt_closes_a_screen_and_never_touches_the_prompt(scripted_model, live_run):
    """compat §6 (the prompt's place): the composer's cursor is 3 rows above the bottom in the
    fullscreen renderer; /help moves it. One Esc closes the screen; at the prompt no key is sent
    (a draft survives, which a second Esc would clear)."""
    provider, handle = live_run.provider, live_run.handle
    tmux, session = Tmux(handle.tmux_socket), handle.tmux_session
    provider.reply(handle, "warm up")
    assert provider.at_prompt(handle) is True
    tmux.paste(session, "/help")
    time.sleep(0.2)
    tmux.send_keys(session, "Enter")
    wait_for(lambda: provider.at_prompt(handle) is False, "the help screen")
    assert provider.return_to_prompt(handle) is True
    assert provider.at_prompt(handle) is True
    tmux.paste(session, "a draft kept")
    assert provider.return_to_prompt(handle) is True  # at the prompt: nothing sent
    tmux.send_keys(session, "Enter")
    wait_for(lambda: "a draft kept" in user_contents(live_run), "the draft, submitted")
