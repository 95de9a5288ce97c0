"""Input to Claude Code's terminal: a reply (sanitized, paced, confirmed by its receipt in the
transcript, never sent twice by accident), an interrupt, and the way back to the prompt
(compat §6, §9). Keys only on an operator's request; never while the CLI asks something.
The fourth floor of ClaudeCodeProvider, beside answering."""

from __future__ import annotations

import re
import time

import orjson
from django.conf import settings

from providers.claude_code.reading import NewLines, transcript_size
from providers.claude_code.signals import CLASSIC_READY_S, POLL_S, Signals, session_start_ns
from providers.errors import (
    InvalidReply,
    PromptPending,
    ReplyInFlight,
    ReplyNotDelivered,
    ReplyRefused,
    SessionGone,
    StillStarting,
)
from providers.outbox import REPLY_TURN_WAIT_S, Outbox, keys_lock, mark_interrupt, normalize, reply_lock
from providers.sanitize import sanitize_text
from providers.schema import DialogKind, RunHandle
from providers.tmux import Tmux

# compat §6 (reply pacing): 2.1.328 submitted an immediate Enter after a 7-line paste 6/6
# times; 2.1.198 dropped it. The pacing stays, scaled with the paste: it costs little.
ENTER_DELAY_BASE_S = 0.15
ENTER_DELAY_PER_KB_S = 0.25
ENTER_DELAY_MAX_S = 1.5
DELIVERY_TIMEOUT_S = 20.0
RETRY_ENTER_AFTER_S = 3.0
# A reply sent while the CLI starts waits this long for its input, then gets StillStarting
# (nothing sent). Starts took 1-2 s idle, 3-11 s under load (NOTES-live.md).
READY_TIMEOUT_S = 15.0
# compat §6 (invisible characters): what 2.1.328 strips from a paste (then holding it for
# review): soft hyphen, zero-width space, bidi embeddings/overrides/isolates, BOM. Zero-width
# joiner (emoji sequences) is kept.
INVISIBLE = re.compile("[\u00ad\u200b\u202a-\u202e\u2066-\u2069\ufeff]")
# compat §6 (prompts take keys): how long after a tool's PreToolUse its PermissionRequest may
# still come; a reply waits that long before its first key.
TOOL_SETTLE_S = 2.0
# compat §6 (the prompt's place): in the fullscreen renderer the composer's cursor sits this
# many rows above the pane's bottom (composer line, rule, footer); any other screen moves it.
COMPOSER_ROWS_FROM_BOTTOM = 3
RETURN_VERIFY_S = 3.0
# compat §6 (mode prefixes): the only prefix that switches the composer's mode ("#", "&" are text).
SHELL_PREFIX = "!"


def enter_delay(text: str) -> float:
    return min(ENTER_DELAY_BASE_S + ENTER_DELAY_PER_KB_S * len(text.encode()) / 1024, ENTER_DELAY_MAX_S)


class Replying(Signals):
    def prepare_reply(self, text: str) -> str:
        """The text as lab will paste it, or ReplyRefused/InvalidReply before anything is sent."""
        text = sanitize_text(text, max_bytes=settings.LAB_REPLY_MAX_BYTES)
        # compat §6 (invisible characters): the CLI strips these from a paste and then holds it
        # for review, so the first Enter is not a submit. Stripped first, the paste submits.
        text = INVISIBLE.sub("", text)
        if not text.strip():
            raise InvalidReply("The text is empty.")
        if text.startswith(SHELL_PREFIX):
            # compat §6 (mode prefixes): a leading "!" is bash mode, run at once with no
            # permission prompt even in manual mode. Only a leading one: " !x" is text.
            raise ReplyRefused(
                "A message starting with “!” runs as a shell command in Claude Code's terminal, so "
                "lab does not send it. To send it as text, start it with a space."
            )
        return text

    def reply(self, run: RunHandle, text: str, *, again: bool = False) -> None:
        text = self.prepare_reply(text)
        tmux = Tmux(run.tmux_socket)
        if not tmux.has_session(run.tmux_session):
            raise SessionGone("The agent's terminal session is gone.")
        want = normalize(text)
        # A send ahead (New conversation's /clear, another tab's message) is waited for: this
        # one then goes, into the new conversation. The outbox still refuses a second copy.
        with reply_lock(run, wait=REPLY_TURN_WAIT_S):
            outbox = Outbox(run.spool_dir)
            pending = outbox.find(want)
            if pending is not None and not again:
                self._refuse_resend(run, outbox, pending)
            self._refuse_if_asking(run)
            self._wait_ready(run, tmux)
            self._wait_tool_settled(run)
            self._refuse_if_asking(run)
            path = self.locate_transcript(run)
            start = transcript_size(path)
            outbox.add({"want": want, "path": path, "offset": start, "at": time.time()})
            tmux.paste(run.tmux_session, text)
            time.sleep(enter_delay(text))
            if self._asking(run):
                raise ReplyNotDelivered(
                    "Claude Code began asking something while the message was being pasted, so lab "
                    "did not press Enter. The text may be in its input box; answer the prompt first."
                )
            tmux.send_keys(run.tmux_session, "Enter")
            if not self._wait_recorded(run, path, start, want, timeout=RETRY_ENTER_AFTER_S):
                # An Enter that raced the paste is retried once: on a composer holding the text it
                # submits it, on an empty one it does nothing (compat §6). Never into a prompt.
                if self._asking(run):
                    raise ReplyNotDelivered(
                        "Claude Code has not recorded the message and is now asking something; "
                        "lab did not press Enter again. Answer the prompt first."
                    )
                tmux.send_keys(run.tmux_session, "Enter")
            if not self._wait_recorded(run, path, start, want, timeout=DELIVERY_TIMEOUT_S):
                # lab cannot see the composer (it never reads the pane): say what it knows.
                raise ReplyNotDelivered(
                    "Claude Code has not recorded the message yet, so lab cannot tell whether it "
                    "arrived. If it lands, it appears in the chat. lab will not send the same text "
                    "again until then."
                )
            outbox.remove(want)

    def _refuse_resend(self, run: RunHandle, outbox: Outbox, pending: dict[str, object]) -> None:
        """The same text as an unconfirmed earlier send: never a second copy by accident."""
        path, offset = str(pending.get("path", "")), pending.get("offset", 0)
        landed = isinstance(offset, int) and self._wait_recorded(
            run, path, offset, str(pending["want"]), timeout=0
        )
        if landed:
            outbox.remove(str(pending["want"]))
            raise ReplyInFlight(
                "That message reached Claude Code after all: it is in the chat. Send it again "
                "only if you mean to send it twice."
            )
        age = max(0, int(time.time() - float(str(pending.get("at", 0)))))
        raise ReplyInFlight(
            f"The same message was sent {age} s ago and Claude Code has not recorded it yet: it "
            "may still land, or wait in Claude Code's input box. lab does not send it twice "
            "unless you choose to."
        )

    def _wait_tool_settled(self, run: RunHandle) -> None:
        """compat §6 (prompts take keys): a tool that just began may be about to ask permission;
        its PermissionRequest comes after its PreToolUse. Wait, bounded, until it asked (then
        _refuse_if_asking refuses) or TOOL_SETTLE_S passed (it runs: the reply is queued)."""
        while True:
            began = self.spool_view(run).unsettled_tool_ns
            if not began or time.time_ns() - began >= TOOL_SETTLE_S * 1e9:
                return
            time.sleep(POLL_S)

    def _refuse_if_asking(self, run: RunHandle) -> None:
        asking = self._asking(run)
        if asking:
            raise PromptPending(
                f"{self.display_name()} is asking {asking}: answer it above. Nothing was sent."
            )

    def _wait_ready(self, run: RunHandle, tmux: Tmux) -> None:
        """compat §6 (readiness): SessionStart fires ~1 s before the input is live, and a
        multi-line paste sent then sits unsubmitted. The fullscreen renderer switches its
        terminal to mouse tracking when its input goes live; the classic renderer (the CLI falls
        back to it by itself) never does, and its input is live CLASSIC_READY_S after
        SessionStart. lab reads tmux's mode flags (terminal state, not the screen) and the hook,
        never the pane's text."""
        deadline = time.monotonic() + READY_TIMEOUT_S
        while True:
            started_ns = session_start_ns(run)
            flags = tmux.pane_format(run.tmux_session, "#{mouse_any_flag} #{alternate_on}")
            if flags is None:
                raise SessionGone("The agent's terminal session is gone.")
            mouse, _, alternate = flags.partition(" ")
            if started_ns and mouse == "1":
                return
            if started_ns and alternate == "0" and time.time_ns() - started_ns >= CLASSIC_READY_S * 1e9:
                return
            if time.monotonic() >= deadline:
                raise StillStarting(
                    f"{self.display_name()} is still starting: nothing was sent. Try again in a moment."
                )
            time.sleep(POLL_S)

    def _wait_recorded(self, run: RunHandle, path: str, start: int, want: str, *, timeout: float) -> bool:
        """compat §1: a submitted prompt is a user entry (the <pasted_content> wrapper around a
        multi-line paste), a queued one a queue-operation enqueue, a slash command its echo.
        compat §5: /clear writes its echo into the *new* transcript, so follow a rotation.
        `want` is normalized (see providers.outbox.normalize); timeout 0 looks once."""
        deadline = time.monotonic() + timeout
        new = NewLines(path, start)
        while True:
            current = self.locate_transcript(run)
            if current != new.path:
                new = NewLines(current, 0)
            if any(records_prompt(line, want) for line in new.read()):
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.05)

    def interrupt(self, run: RunHandle) -> None:
        # compat §9: one Esc stops a working turn. Never two (at idle a double Esc opens
        # Rewind) and never Ctrl-C (a second one at idle exits the CLI).
        tmux = Tmux(run.tmux_socket)
        if not tmux.has_session(run.tmux_session):
            raise SessionGone("The agent's terminal session is gone.")
        busy = "An answer is being typed into Claude Code's terminal; the interrupt was not sent. Try again."
        with keys_lock(run, busy=busy):
            # On a prompt, Esc is an answer (compat §7: it denies the tool, declines the
            # question) that nobody chose, and an answer already on its way would then type its
            # keys into the composer: only the operator's answer answers.
            self._refuse_interrupt_if_asking(run)
            mark_interrupt(run)
            tmux.send_keys(run.tmux_session, "Escape")

    def _refuse_interrupt_if_asking(self, run: RunHandle) -> None:
        view = self.spool_view(run)
        name = self.display_name()
        if view.dialog is not None:
            what = "permission" if view.dialog.kind == DialogKind.APPROVAL else "a question"
            how = "allow or deny it" if view.dialog.kind == DialogKind.APPROVAL else "answer or decline it"
            raise PromptPending(
                f"{name} is asking {what}: {how} above. The interrupt was not sent: its Esc would "
                "have answered for you."
            )
        if view.blocked or view.permission_open:
            raise PromptPending(
                f"{name} is asking permission in its terminal: answer it there. The interrupt was "
                "not sent: its Esc would have answered for you."
            )

    def at_prompt(self, run: RunHandle) -> bool | None:
        """compat §6 (the prompt's place): tmux's cursor position and alternate-screen flag
        (terminal state, not the screen's text). The classic renderer draws inline: None."""
        flags = Tmux(run.tmux_socket).pane_format(
            run.tmux_session, "#{alternate_on} #{cursor_y} #{pane_height}"
        )
        if flags is None:
            raise SessionGone("The agent's terminal session is gone.")
        alternate, y, height = [*flags.split(), "", "", ""][:3]
        if alternate != "1" or not y.isdigit() or not height.isdigit():
            return None
        return int(y) == int(height) - COMPOSER_ROWS_FROM_BOTTOM

    def return_to_prompt(self, run: RunHandle) -> bool | None:
        """One Esc, only when the prompt is not showing and nothing is asking: Esc closes a
        screen (compat §6), while at the prompt a second one would clear the draft or open
        Rewind (§9), and on a permission prompt or picker it would decline it. Verified by the
        cursor's return, bounded. One key per call: the operator asks again if needed."""
        tmux = Tmux(run.tmux_socket)
        with reply_lock(run):
            at = self.at_prompt(run)
            if at is not False:
                return at  # already there, or it cannot tell: no key
            self._refuse_if_asking(run)
            tmux.send_keys(run.tmux_session, "Escape")
            deadline = time.monotonic() + RETURN_VERIFY_S
            while time.monotonic() < deadline:
                if self.at_prompt(run):
                    return True
                time.sleep(POLL_S)
            return False


_PASTED = re.compile(r'<pasted_content id="[^"]*">(.*?)</pasted_content id="[^"]*">', re.S)


def records_prompt(line: bytes, want: str) -> bool:
    """Whether a transcript line records `want` (normalized) as the operator's input: compat §6
    (receipts). A line ending with it counts too: text a killed lab left in the composer is
    submitted with the next message, which did land."""
    try:
        entry = orjson.loads(line)
    except orjson.JSONDecodeError:
        return False
    if not isinstance(entry, dict):
        return False
    kind = entry.get("type")
    if kind == "queue-operation" and entry.get("operation") == "enqueue":
        content = entry.get("content")
    elif kind == "user" and not entry.get("isMeta"):
        content = (entry.get("message") or {}).get("content")
    elif kind == "system" and entry.get("subtype") == "local_command":
        content = entry.get("content")  # compat §2: /context echoes as a system entry
    elif kind == "system" and entry.get("subtype") == "informational":
        # compat §6: an unknown slash command is consumed with "Unknown command: /name".
        content = entry.get("content")
        if isinstance(content, str) and content.startswith(_UNKNOWN):
            return want.startswith("/") and want.split(" ", 1)[0] == content[len(_UNKNOWN) :].strip()
        return False
    else:
        return False
    if not isinstance(content, str):
        return False
    if command := _COMMAND_NAME.search(content):
        args = _COMMAND_ARGS.search(content)
        return normalize(f"{command.group(1)} {args.group(1) if args else ''}") == want
    if bash := _BASH_INPUT.fullmatch(content):
        return normalize(SHELL_PREFIX + bash.group(1)) == want  # compat §6: bash mode
    got = normalize(_PASTED.sub(lambda m: m.group(1), content))
    return got == want or (bool(want) and got.endswith(want))


_UNKNOWN = "Unknown command: "
_BASH_INPUT = re.compile(r"<bash-input>(.*)</bash-input>", re.S)
_COMMAND_NAME = re.compile(r"<command-name>([^<]*)</command-name>")
_COMMAND_ARGS = re.compile(r"<command-args>([^<]*)</command-args>")
