"""The Claude Code adapter: the only code in lab that knows Claude Code exists.

Every CLI fact used here is pinned in compat/claude_code/COMPAT.md and cites its section.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shlex
import sys
import threading
import time
import unicodedata
import uuid
from collections import OrderedDict
from collections.abc import Hashable, Iterator, Mapping, Sequence
from pathlib import Path

import orjson
from django.conf import settings

from providers.base import AgentProvider
from providers.claude_code import recipes, transcript
from providers.claude_code.dialogs import Intent, intent_for
from providers.claude_code.livesignals import SpoolView, event_time_ns, fold, sweepable
from providers.claude_code.spool import spool_events, spool_signature
from providers.errors import (
    InvalidReply,
    PromptPending,
    ReplyInFlight,
    ReplyNotDelivered,
    ReplyRefused,
    SessionGone,
    SpawnFailed,
    StillStarting,
)
from providers.sanitize import sanitize_text
from providers.schema import (
    Answer,
    AuthFlow,
    AuthFlowKind,
    AuthStatus,
    CommandSpec,
    Cursor,
    Dialog,
    DialogKind,
    LoginStart,
    MessageKind,
    RunHandle,
    RunState,
    SeedMeta,
    SpawnOption,
    SpawnResult,
    TranscriptRead,
    WorkspaceChoices,
)
from providers.tmux import Tmux

_AGENT_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")  # compat §13: agentId in the launch result
UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")

# compat §6 (reply pacing): 2.1.328 submitted an immediate Enter after a 7-line paste 6/6
# times; 2.1.198 dropped it. The pacing stays, scaled with the paste: it costs little.
ENTER_DELAY_BASE_S = 0.15
ENTER_DELAY_PER_KB_S = 0.25
ENTER_DELAY_MAX_S = 1.5
DELIVERY_TIMEOUT_S = 20.0
RETRY_ENTER_AFTER_S = 3.0
READ_BUDGET = 4 * 1024 * 1024
# A reply sent while the CLI starts waits this long for its input, then gets StillStarting
# (nothing sent). Starts took 1-2 s idle, 3-11 s under load (NOTES-live.md).
READY_TIMEOUT_S = 15.0
# compat §6 (readiness, classic renderer): no mode flag marks its input live; it is live within
# this long after SessionStart (the composer drew 0.4-0.5 s after it, live runs).
CLASSIC_READY_S = 1.5
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

# The backstop's intents (docs/architecture.md, "Dialog answering"): in memory, per tool_use_id, bounded.
MAX_INTENTS = 100
MAX_RESOLVED = 1000  # tool_use_ids the transcript shows answered (reconciles the spool)
MAX_VIEWS = 256  # cached spool views, one per run
# compat §7 (verification): how long a played answer may take to be recorded before lab looks
# at whether a retry is safe, and the overall bound before it reports "not recorded".
VERIFY_RETRY_S = 3.0
# compat §8: PermissionRequest fires for AskUserQuestion and ExitPlanMode as the picker is
# shown; keys sent before it land nowhere useful (run 2 of the live suite: an Enter sent on the
# PreToolUse anchor was lost, the PermissionRequest came after it). Bounded wait for it.
SHOWN_WAIT_S = 3.0
VERIFY_TIMEOUT_S = 15.0
POLL_S = 0.05


def project_dir_name(cwd: str) -> str:
    # compat §1: every non-alphanumeric character of the cwd becomes '-'.
    return "".join(ch if ch.isascii() and ch.isalnum() else "-" for ch in cwd)


def enter_delay(text: str) -> float:
    return min(ENTER_DELAY_BASE_S + ENTER_DELAY_PER_KB_S * len(text.encode()) / 1024, ENTER_DELAY_MAX_S)


class ClaudeCodeProvider(AgentProvider):
    id = "claude-code"

    def __init__(self) -> None:
        # One instance per process (providers.registry): this state outlives a request.
        self._guard = threading.Lock()
        self._intents: OrderedDict[str, Intent] = OrderedDict()
        self._resolved: OrderedDict[str, None] = OrderedDict()
        self._resolved_gen = 0
        self._first_seen: OrderedDict[str, int] = OrderedDict()  # tool_use_id → time_ns
        self._views: OrderedDict[str, tuple[Hashable, SpoolView]] = OrderedDict()
        self._located: dict[str, tuple[Hashable, str]] = {}
        self._started: OrderedDict[str, None] = OrderedDict()  # spool dirs with a SessionStart

    # --- declarations ----------------------------------------------------------------------

    def display_name(self) -> str:
        return "Claude Code"

    def auth_flow(self) -> AuthFlow:
        return AuthFlow(
            kind=AuthFlowKind.OAUTH_CODE,
            instructions=("Open the link, sign in, and paste the code the page shows you back here."),
        )

    def seed_meta(self) -> SeedMeta:
        from providers.claude_code.seed import SEED_META

        return SEED_META

    def spawn_options(self) -> list[SpawnOption]:
        return [
            SpawnOption(
                name="permission_mode",
                label="Permission mode",
                # compat §4: the --permission-mode choices 2.1.328 accepts (bypass needs a
                # sandbox and is never offered).
                choices=(
                    ("default", "Ask before each action (manual)"),
                    ("acceptEdits", "Accept edits automatically"),
                    ("auto", "Auto mode"),
                    ("plan", "Plan first"),
                ),
                default="default",
                help_text="How the agent asks before acting.",
            ),
            SpawnOption(
                name="model",
                label="Model",
                choices=(
                    ("", "The CLI's default"),
                    ("opus", "Opus"),
                    ("sonnet", "Sonnet"),
                    ("haiku", "Haiku"),
                ),
                default="",
            ),
        ]

    def commands(self, worktree: Path) -> list[CommandSpec]:
        from providers.claude_code.commands import command_catalog

        return command_catalog(Path(worktree), home=self.home())

    # --- process ---------------------------------------------------------------------------

    def binary(self) -> str:
        return str(Path(settings.LAB_AGENT_BIN_DIR) / "claude")

    def home(self) -> Path:
        return Path(settings.LAB_AGENT_HOME or os.environ.get("HOME", "/root")).expanduser()

    def agent_env(self) -> dict[str, str]:
        env = {
            "HOME": str(self.home()),
            "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
            "TERM": "xterm-256color",
            "LANG": os.environ.get("LANG", "C.UTF-8"),
            "USER": os.environ.get("USER", "root"),
            "SHELL": os.environ.get("SHELL", "/bin/bash"),
            "DISABLE_AUTOUPDATER": "1",  # the pinned version is the verified one
        }
        env.update(settings.LAB_AGENT_ENV)
        return env

    def transcript_root(self) -> Path:
        return self.home() / ".claude" / "projects"

    def spawn(self, run: RunHandle, options: Mapping[str, str]) -> SpawnResult:
        session_id = str(uuid.uuid4())
        cwd = os.path.realpath(run.worktree)
        argv = [self.binary(), "--session-id", session_id]
        mode = options.get("permission_mode", "default")
        allowed = {v for v, _ in self.spawn_options()[0].choices}
        if mode not in allowed:
            raise SpawnFailed(f"Unknown permission mode {mode!r}.")
        # compat §4: the UI's "manual" is --permission-mode manual; the transcript says default.
        argv += ["--permission-mode", "manual" if mode == "default" else mode]
        if model := options.get("model", ""):
            if not re.fullmatch(r"[a-z0-9.\-]{1,64}", model):
                raise SpawnFailed(f"Not a model name: {model!r}.")
            argv += ["--model", model]
        if run.spool_dir:
            Path(run.spool_dir).mkdir(parents=True, exist_ok=True, mode=0o700)
            argv += ["--settings", orjson.dumps(self.hook_settings(run.spool_dir)).decode()]
        env = {**self.agent_env(), **dict(run.env)}
        # The environment file goes beside the spool, in the run's private directory.
        env_dir = str(Path(run.spool_dir).parent) if run.spool_dir else None
        Tmux(run.tmux_socket).new_session(run.tmux_session, cwd=cwd, argv=argv, env=env, env_dir=env_dir)
        path = self.transcript_root() / project_dir_name(cwd) / f"{session_id}.jsonl"
        return SpawnResult(session_id=session_id, transcript_path=str(path))

    def hook_settings(self, spool_dir: str) -> dict[str, object]:
        """compat §8: --settings takes inline JSON; each hook runs our spool writer."""
        script = Path(__file__).with_name("hook_spool.py")
        command = shlex.join([sys.executable, "-S", str(script), spool_dir])
        hook = [{"hooks": [{"type": "command", "command": command, "timeout": 10}]}]
        matcher_hook = [{"matcher": "*", "hooks": hook[0]["hooks"]}]
        return {
            "hooks": {
                "SessionStart": hook,
                "SessionEnd": hook,
                "UserPromptSubmit": hook,
                "PreToolUse": matcher_hook,
                "PostToolUse": matcher_hook,
                "PermissionRequest": matcher_hook,
                "Notification": hook,
                "Stop": hook,
            }
        }

    def seed_workspace(self, worktree: Path, choices: WorkspaceChoices | None = None) -> list[Path]:
        from providers.claude_code.seed import seed_workspace

        # Only the key lab itself passes the agent (LAB_AGENT_ENV) is approved: never one
        # found anywhere else.
        api_key = settings.LAB_AGENT_ENV.get("ANTHROPIC_API_KEY") or None
        return seed_workspace(
            Path(worktree), home=self.home(), choices=choices or WorkspaceChoices(), api_key=api_key
        )

    # --- transcript ------------------------------------------------------------------------

    def locate_transcript(self, run: RunHandle) -> str:
        """compat §5: /clear writes a new <uuid>.jsonl and SessionStart(source=clear) names it.
        The newest SessionStart in the spool wins; the spawn-time path otherwise."""
        if not run.spool_dir:
            return run.transcript_path
        # Called on every watcher wake and socket catch-up: re-read the spool only when it
        # changed (one stat + listdir otherwise).
        key = (spool_signature(run.spool_dir), run.transcript_path)
        with self._guard:
            cached = self._located.get(run.spool_dir)
        if cached is not None and cached[0] == key:
            return cached[1]
        located = run.transcript_path
        root = self.transcript_root().resolve()
        for event in reversed(spool_events(run.spool_dir)):
            if event.get("hook_event_name") != "SessionStart":
                continue
            path = event.get("transcript_path")
            if isinstance(path, str) and self._is_transcript_path(path, root):
                located = path
                break
        with self._guard:
            self._located[run.spool_dir] = (key, located)
            while len(self._located) > MAX_VIEWS:
                self._located.pop(next(iter(self._located)))
        return located

    @staticmethod
    def _is_transcript_path(path: str, root: Path) -> bool:
        p = Path(path)
        if ".." in p.parts or p.suffix != ".jsonl" or not UUID_RE.match(p.stem):
            return False
        if p.parent.parent != root:
            return False
        # The project dir must really be under the root: a symlinked one could lead out of it
        # (O_NOFOLLOW guards only the last component).
        return os.path.realpath(p.parent) == str(root / p.parent.name)

    def side_transcript(self, run: RunHandle, side: str) -> str:
        """compat §13: a background agent writes <session dir>/<session id>/subagents/
        agent-<agentId>.jsonl beside the session's own transcript."""
        located = self.locate_transcript(run)
        if not located or not _AGENT_ID.fullmatch(side):
            return ""
        path = Path(located).with_suffix("") / "subagents" / f"agent-{side}.jsonl"
        return str(path) if path.is_file() and not path.is_symlink() else ""

    def read_transcript(self, path: str, cursor: Cursor) -> TranscriptRead:
        with self._guard:
            intents = dict(self._intents)
        # One 4 MiB pass per call: bounded memory, and the caller's index gets a checkpoint per
        # pass of a huge file (it calls again until the cursor stops moving).
        read = transcript.read_transcript(path, cursor, intents, max_bytes=READ_BUDGET, max_passes=1)
        results = [m.native_id for m in read.messages if m.kind == MessageKind.TOOL_RESULT and m.native_id]
        with self._guard:
            for tool_use_id in results:
                if tool_use_id not in self._resolved:
                    self._resolved[tool_use_id] = None
                    self._resolved_gen += 1
                    while len(self._resolved) > MAX_RESOLVED:
                        self._resolved.popitem(last=False)
            if read.dialog is not None and read.dialog.tool_use_id not in self._first_seen:
                # The settle anchor when the transcript shows the picker before the spool does.
                self._first_seen[read.dialog.tool_use_id] = time.time_ns()
                while len(self._first_seen) > MAX_RESOLVED:
                    self._first_seen.popitem(last=False)
        return read

    def intents(self) -> dict[str, Intent]:
        """A copy of the backstop's recorded intents (tests, diagnostics)."""
        with self._guard:
            return dict(self._intents)

    def _record_intent(self, intent: Intent) -> None:
        with self._guard:
            self._intents.pop(intent.tool_use_id, None)
            self._intents[intent.tool_use_id] = intent
            while len(self._intents) > MAX_INTENTS:
                self._intents.popitem(last=False)  # oldest evicted: its check stays silent

    # --- live signals (compat §8) -----------------------------------------------------------

    def setup(self, run: RunHandle) -> tuple[dict[str, object], list[str]]:
        return self.hook_settings(run.spool_dir), []

    def spool_view(self, run: RunHandle) -> SpoolView:
        """The spool folded, cached on (the spool's signature, the transcript's resolved ids):
        the watcher calls this on every wake, and an unchanged spool costs one stat + listdir."""
        if not run.spool_dir:
            return SpoolView()
        # The stat + listdir outside the guard: a thread holding the provider-wide lock across
        # syscalls made every other run's watcher queue behind it (and behind the GIL it must
        # take back); py-spy showed watcher threads waiting here at 50 busy runs.
        signature = spool_signature(run.spool_dir)
        with self._guard:
            key: Hashable = (signature, self._resolved_gen)
            cached = self._views.get(run.spool_dir)
            if cached is not None and cached[0] == key:
                return cached[1]
            resolved = frozenset(self._resolved)
        view = fold(spool_events(run.spool_dir), resolved)
        with self._guard:
            self._views[run.spool_dir] = (key, view)
            self._views.move_to_end(run.spool_dir)
            while len(self._views) > MAX_VIEWS:
                self._views.popitem(last=False)
        return view

    def pending_dialog(self, run: RunHandle) -> Dialog | None:
        return self.spool_view(run).dialog

    def blocked_state(self, run: RunHandle) -> RunState | None:
        # compat §8: a permission prompt lab has no dialog for (no PermissionRequest paired with
        # a PreToolUse): needs_input and the attach command. With one, pending_dialog offers
        # the approval; either way only the operator answers it.
        return RunState.NEEDS_INPUT if self.spool_view(run).blocked else None

    def change_signature(self, run: RunHandle) -> Hashable:
        return spool_signature(run.spool_dir) if run.spool_dir else (0, 0)

    def sweep(self, run: RunHandle) -> None:
        view = self.spool_view(run)
        for name in sweepable(view, time.time_ns()):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(os.path.join(run.spool_dir, name))

    def connecting(self, run: RunHandle) -> bool:
        """compat §6 (readiness): starting until the SessionStart hook has run. (The input goes
        live about a second later; a reply waits for that itself.) Remembered once seen, so a
        started run costs no spool read."""
        if not run.spool_dir:
            return False
        with self._guard:
            if run.spool_dir in self._started:
                return False
        if not _session_start_ns(run):
            return True
        with self._guard:
            self._started[run.spool_dir] = None
            while len(self._started) > MAX_VIEWS:
                self._started.popitem(last=False)
        return False

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
        with _reply_lock(run):
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

    # --- input -----------------------------------------------------------------------------

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
        want = _normalize(text)
        with _reply_lock(run):
            outbox = _Outbox(run.spool_dir)
            pending = outbox.find(want)
            if pending is not None and not again:
                self._refuse_resend(run, outbox, pending)
            self._refuse_if_asking(run)
            self._wait_ready(run, tmux)
            self._wait_tool_settled(run)
            self._refuse_if_asking(run)
            path = self.locate_transcript(run)
            start = _size(path)
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

    def _refuse_resend(self, run: RunHandle, outbox: _Outbox, pending: dict[str, object]) -> None:
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

    def _asking(self, run: RunHandle) -> str:
        """What the CLI is asking now, from the live channel ("" when nothing): a picker, a
        permission prompt (compat §8: PermissionRequest as it is shown, or its reminder)."""
        view = self.spool_view(run)
        if view.dialog is not None and view.dialog.kind != DialogKind.APPROVAL:
            return "a question"
        if view.dialog is not None:
            # An approval (compat §7 "Approvals"): a denial is closed by its tool_result only.
            if _has_tool_result(self.locate_transcript(run), view.dialog.tool_use_id):
                return ""
            return "permission"
        if view.blocked:
            return "permission"
        if view.permission_open:
            # A rejected tool gets no PostToolUse: its tool_result closes the prompt, and this
            # worker may not have read it yet (the watcher may run in another one).
            tool_use_id = view.permission_tool_use_id
            if tool_use_id and _has_tool_result(self.locate_transcript(run), tool_use_id):
                return ""
            return "permission"
        return ""

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
            started_ns = _session_start_ns(run)
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
        `want` is normalized (see _normalize); timeout 0 looks once."""
        deadline = time.monotonic() + timeout
        offset, pending = start, b""
        while True:
            current = self.locate_transcript(run)
            if current != path:
                path, offset, pending = current, 0, b""
            try:
                with open(path, "rb") as f:
                    f.seek(offset)
                    chunk = f.read()
            except FileNotFoundError:
                chunk = b""
            if chunk:
                offset += len(chunk)
                pending += chunk
                *lines, pending = pending.split(b"\n")
                if any(records_prompt(line, want) for line in lines):
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
        tmux.send_keys(run.tmux_session, "Escape")

    def answer_dialog(self, run: RunHandle, dialog: Dialog, answers: Sequence[Answer]) -> None:
        """Play the recipe for `answers` (an empty sequence declines: Esc) and wait, bounded,
        until the CLI records the result. compat §7.

        Raises DialogNotAnswerable before anything is sent when the answers do not fit,
        ReplyNotDelivered when keys were sent but nothing was recorded in time (the caller must
        then not offer the same answer again: some keys may have landed)."""
        recipe = recipes.recipe_for(dialog, answers)
        tmux = Tmux(run.tmux_socket)
        if not tmux.has_session(run.tmux_session):
            raise SessionGone("The agent's terminal session is gone.")
        if not recipe.declines:
            # Recorded before the first key, so the backstop sees it whenever the result lands.
            self._record_intent(intent_for(dialog, recipes.normalized_answers(dialog, answers)))
        path = self.locate_transcript(run)
        self._settle(run, dialog, recipe.settle)
        before = (_size(path), set(self._spool_names(run)))
        self._play(tmux, run, recipe)
        if self._wait_answered(run, dialog.tool_use_id, path, before[0], VERIFY_RETRY_S):
            return
        # compat §7 (dropped keys): a key sent while the picker is still being drawn is lost,
        # not queued, and the drop window is the start of the sequence. A retry is safe only if
        # nothing at all happened (no byte in the transcript, no hook fired: the picker is
        # untouched on row 0) and the recipe is one screen of bare keys, so a partial landing
        # can only have been a total loss. Anything else is left to the operator: resending
        # Down/paste/Enter into a screen that moved on could answer wrongly or send a prompt.
        if recipe.retry_safe and self._untouched(run, dialog, path, *before):
            self._settle(run, dialog, recipe.settle)  # from a later anchor if the picker came late
            self._play(tmux, run, recipe)
        if not self._wait_answered(run, dialog.tool_use_id, path, before[0], VERIFY_TIMEOUT_S):
            if recipe.name.startswith("approval-allow"):
                # An allowed tool records its result only when it finishes (compat §7): a long
                # command is not a lost answer.
                raise ReplyNotDelivered(
                    "The answer was sent, but Claude Code has recorded no result for the tool "
                    "yet: it may still be running. The transcript shows the result when it "
                    "lands; check the terminal with the attach command if it does not."
                )
            raise ReplyNotDelivered(
                "The answer was sent but Claude Code has not recorded it. Check the terminal "
                "with the attach command before answering again."
            )

    def _untouched(self, run: RunHandle, dialog: Dialog, path: str, size: int, names: set[str]) -> bool:
        """Nothing landed: the transcript did not grow, the picker is still pending, and the only
        hooks since the keys are the picker's own (PermissionRequest, Notification)."""
        if _size(path) != size or self.spool_view(run).find(dialog.tool_use_id) is None:
            return False
        for event in spool_events(run.spool_dir):
            if event.get("_spool_name") in names:
                continue
            if event.get("hook_event_name") not in ("PermissionRequest", "Notification"):
                return False
        return True

    def _spool_names(self, run: RunHandle) -> list[str]:
        try:
            return [n for n in os.listdir(run.spool_dir) if n.endswith(".json")] if run.spool_dir else []
        except FileNotFoundError:
            return []

    def _settle(self, run: RunHandle, dialog: Dialog, settle: float) -> None:
        """compat §7 (settle): wait until `settle` after the newest sign of the picker: its
        PermissionRequest hook (the picker being shown; waited for up to SHOWN_WAIT_S), else its
        PreToolUse, or the first transcript read that showed the tool_use. Re-evaluated while
        waiting, since a later sign moves the anchor. Unknown dialog: settle from now."""
        start_ns = time.time_ns()
        shown_deadline = time.monotonic() + SHOWN_WAIT_S
        while True:
            pending = self.spool_view(run).find(dialog.tool_use_id)
            if pending is not None and not pending.shown and time.monotonic() < shown_deadline:
                time.sleep(POLL_S)
                continue
            signs = [pending.signal_ns] if pending else []
            with self._guard:
                if dialog.tool_use_id in self._first_seen:
                    signs.append(self._first_seen[dialog.tool_use_id])
            anchor = max(signs) if signs else start_ns
            wait = (anchor + settle * 1e9 - time.time_ns()) / 1e9
            if wait <= 0:
                return
            time.sleep(min(wait, 0.1))

    def _play(self, tmux: Tmux, run: RunHandle, recipe: recipes.Recipe) -> None:
        for op in recipe.ops:
            if op.kind == recipes.OpKind.PASTE:
                tmux.paste(run.tmux_session, op.value)
            else:
                tmux.send_keys(run.tmux_session, op.value)
            time.sleep(op.pause_after)

    def _wait_answered(self, run: RunHandle, tool_use_id: str, path: str, start: int, timeout: float) -> bool:
        """The PostToolUse hook for the id (an answer, an approval) or a tool_result for it in
        the transcript (also a decline or rejection, which get no PostToolUse, compat §8)."""
        needle = tool_use_id.encode()
        deadline = time.monotonic() + timeout
        offset, pending = start, b""
        while True:
            for event in spool_events(run.spool_dir):
                if event.get("hook_event_name") == "PostToolUse" and event.get("tool_use_id") == tool_use_id:
                    return True
            try:
                with open(path, "rb") as f:
                    f.seek(offset)
                    chunk = f.read()
            except FileNotFoundError:
                chunk = b""
            if chunk:
                offset += len(chunk)
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    if needle in line and b'"tool_result"' in line and b'"type":"user"' in line:
                        return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(POLL_S)

    # --- auth ------------------------------------------------------------------------------

    def auth_status(self) -> AuthStatus:
        from providers.claude_code.auth import auth_status

        return auth_status(self)

    def login_start(self) -> LoginStart:
        from providers.claude_code.auth import login_start

        return login_start(self)

    def login_code(self, code: str) -> AuthStatus:
        from providers.claude_code.auth import login_code

        return login_code(self, code)

    def logout(self) -> AuthStatus:
        from providers.claude_code.auth import logout

        return logout(self)


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except FileNotFoundError:
        return 0


def _normalize(text: str) -> str:
    """What a receipt compares: compat §6 (receipts), the CLI records NFC and drops invisible
    format characters (a lone zero-width joiner too); whitespace is collapsed (the paste wrapper
    adds newlines)."""
    text = unicodedata.normalize("NFC", text)
    text = "".join(ch for ch in text if unicodedata.category(ch) != "Cf")
    return " ".join(text.split())


TAIL_BYTES = 1024 * 1024


def _has_tool_result(path: str, tool_use_id: str) -> bool:
    """Whether the transcript's last MiB holds a tool_result for the id (a prompt just closed)."""
    try:
        with open(path, "rb") as f:
            f.seek(max(0, os.fstat(f.fileno()).st_size - TAIL_BYTES))
            tail = f.read()
    except FileNotFoundError:
        return False
    needle = tool_use_id.encode()
    return any(
        needle in line and b'"tool_result"' in line and b'"type":"user"' in line for line in tail.splitlines()
    )


def _session_start_ns(run: RunHandle) -> int:
    """When the newest SessionStart hook ran (0: not yet); without a spool, now (no signal)."""
    if not run.spool_dir:
        return time.time_ns() - int(CLASSIC_READY_S * 1e9)
    starts = [e for e in spool_events(run.spool_dir) if e.get("hook_event_name") == "SessionStart"]
    return event_time_ns(starts[-1]) if starts else 0


@contextlib.contextmanager
def _reply_lock(run: RunHandle) -> Iterator[None]:
    """One reply at a time per run, across every lab worker on the host (a file lock in the
    run's spool dir: the tmux pane is on this host, so its workers share the directory)."""
    if not run.spool_dir:
        yield
        return
    Path(run.spool_dir).mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(os.path.join(run.spool_dir, ".reply.lock"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ReplyInFlight("Another message to this run is being sent: wait for it.") from None
        yield
    finally:
        os.close(fd)  # releases the lock


class _Outbox:
    """Sent texts Claude Code has not recorded yet (normalized), where each one's receipt would
    start, and when: a resend is refused while the first may still land. A dotfile in the spool
    dir (the spool reader skips those), shared by every worker; the newest few are kept."""

    MAX = 8

    def __init__(self, spool_dir: str) -> None:
        self.path = os.path.join(spool_dir, ".outbox") if spool_dir else ""

    def entries(self) -> list[dict[str, object]]:
        if not self.path:
            return []
        try:
            data = orjson.loads(Path(self.path).read_bytes())
        except (OSError, orjson.JSONDecodeError):
            return []
        return [e for e in data if isinstance(e, dict)] if isinstance(data, list) else []

    def find(self, want: str) -> dict[str, object] | None:
        return next((e for e in self.entries() if e.get("want") == want), None)

    def add(self, entry: dict[str, object]) -> None:
        kept = [e for e in self.entries() if e.get("want") != entry.get("want")]
        self._write([*kept, entry][-self.MAX :])

    def remove(self, want: str) -> None:
        self._write([e for e in self.entries() if e.get("want") != want])

    def _write(self, entries: list[dict[str, object]]) -> None:
        if not self.path:
            return
        if not entries:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path)
            return
        tmp = f"{self.path}.tmp"
        Path(tmp).write_bytes(orjson.dumps(entries))
        os.replace(tmp, self.path)


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
        return _normalize(f"{command.group(1)} {args.group(1) if args else ''}") == want
    if bash := _BASH_INPUT.fullmatch(content):
        return _normalize(SHELL_PREFIX + bash.group(1)) == want  # compat §6: bash mode
    got = _normalize(_PASTED.sub(lambda m: m.group(1), content))
    return got == want or (bool(want) and got.endswith(want))


_UNKNOWN = "Unknown command: "
_BASH_INPUT = re.compile(r"<bash-input>(.*)</bash-input>", re.S)
_COMMAND_NAME = re.compile(r"<command-name>([^<]*)</command-name>")
_COMMAND_ARGS = re.compile(r"<command-args>([^<]*)</command-args>")
