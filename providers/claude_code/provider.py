"""The Claude Code adapter: the only code in lab that knows Claude Code exists.

Every CLI fact used here is pinned in compat/COMPAT.md and cites its section.
"""

from __future__ import annotations

import os
import re
import shlex
import sys
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path

import orjson
from django.conf import settings

from providers.base import AgentProvider
from providers.claude_code import transcript
from providers.claude_code.spool import spool_events
from providers.errors import (
    DialogNotAnswerable,
    ReplyNotDelivered,
    SessionGone,
    SpawnFailed,
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
    LoginStart,
    RunHandle,
    SeedMeta,
    SpawnOption,
    SpawnResult,
    TranscriptRead,
)
from providers.tmux import Tmux

UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")

# compat §6 (reply pacing): 2.1.328 submitted an immediate Enter after a 7-line paste 6/6
# times; 2.1.198 dropped it. The pacing stays, scaled with the paste: it costs little.
ENTER_DELAY_BASE_S = 0.15
ENTER_DELAY_PER_KB_S = 0.25
ENTER_DELAY_MAX_S = 1.5
DELIVERY_TIMEOUT_S = 20.0
RETRY_ENTER_AFTER_S = 3.0
READY_TIMEOUT_S = 30.0


def project_dir_name(cwd: str) -> str:
    # compat §1: every non-alphanumeric character of the cwd becomes '-'.
    return "".join(ch if ch.isascii() and ch.isalnum() else "-" for ch in cwd)


def enter_delay(text: str) -> float:
    return min(ENTER_DELAY_BASE_S + ENTER_DELAY_PER_KB_S * len(text.encode()) / 1024, ENTER_DELAY_MAX_S)


class ClaudeCodeProvider(AgentProvider):
    id = "claude-code"

    # --- declarations ----------------------------------------------------------------------

    def display_name(self) -> str:
        return "Claude Code"

    def auth_flow(self) -> AuthFlow:
        return AuthFlow(
            kind=AuthFlowKind.OAUTH_CODE,
            instructions=(
                "Open the link, sign in, and paste the code the page shows you back here."
            ),
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
                choices=(("", "The CLI's default"), ("opus", "Opus"), ("sonnet", "Sonnet"), ("haiku", "Haiku")),
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
        Tmux(run.tmux_socket).new_session(run.tmux_session, cwd=cwd, argv=argv, env=self.agent_env())
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

    def seed_workspace(self, worktree: Path) -> list[Path]:
        from providers.claude_code.seed import seed_workspace

        return seed_workspace(Path(worktree), home=self.home())

    # --- transcript ------------------------------------------------------------------------

    def locate_transcript(self, run: RunHandle) -> str:
        """compat §5: /clear writes a new <uuid>.jsonl and SessionStart(source=clear) names it.
        The newest SessionStart in the spool wins; the spawn-time path otherwise."""
        root = self.transcript_root().resolve()
        for event in reversed(spool_events(run.spool_dir)):
            if event.get("hook_event_name") != "SessionStart":
                continue
            path = event.get("transcript_path")
            if isinstance(path, str) and self._is_transcript_path(path, root):
                return path
        return run.transcript_path

    @staticmethod
    def _is_transcript_path(path: str, root: Path) -> bool:
        p = Path(path)
        if ".." in p.parts or p.suffix != ".jsonl" or not UUID_RE.match(p.stem):
            return False
        return p.parent.parent == root

    def read_transcript(self, path: str, cursor: Cursor) -> TranscriptRead:
        return transcript.read_transcript(path, cursor)

    # --- input -----------------------------------------------------------------------------

    def reply(self, run: RunHandle, text: str) -> None:
        text = sanitize_text(text, max_bytes=settings.LAB_REPLY_MAX_BYTES)
        tmux = Tmux(run.tmux_socket)
        if not tmux.has_session(run.tmux_session):
            raise SessionGone("The agent's terminal session is gone.")
        self._wait_ready(run, tmux)
        path = self.locate_transcript(run)
        start = _size(path)
        tmux.paste(run.tmux_session, text)
        time.sleep(enter_delay(text))
        tmux.send_keys(run.tmux_session, "Enter")
        if not self._wait_recorded(run, path, start, text, timeout=RETRY_ENTER_AFTER_S):
            # An Enter that raced the paste is retried once: on a composer holding the text it
            # submits it, on an empty one it does nothing (compat §6).
            tmux.send_keys(run.tmux_session, "Enter")
        if not self._wait_recorded(run, path, start, text, timeout=DELIVERY_TIMEOUT_S):
            raise ReplyNotDelivered(
                "The agent did not record the message in time. It was not lost: it is still in "
                "the composer; check the terminal with the attach command."
            )

    def _wait_ready(self, run: RunHandle, tmux: Tmux) -> None:
        """compat §6 (readiness): SessionStart fires ~1 s before the input is live, and a
        multi-line paste sent then sits unsubmitted. The TUI switches its terminal to mouse
        tracking when its input goes live: lab reads that mode flag from tmux (terminal state,
        not the screen) and the hook, never the pane's text."""
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            started = not run.spool_dir or any(
                e.get("hook_event_name") == "SessionStart" for e in spool_events(run.spool_dir)
            )
            flag = tmux.pane_format(run.tmux_session, "#{mouse_any_flag}")
            if flag is None:
                raise SessionGone("The agent's terminal session is gone.")
            if started and flag == "1":
                return
            time.sleep(0.05)
        raise ReplyNotDelivered("The agent has not finished starting; try again in a moment.")

    def _wait_recorded(self, run: RunHandle, path: str, start: int, text: str, *, timeout: float) -> bool:
        """compat §1: a submitted prompt is a user entry (the <pasted_content> wrapper around a
        multi-line paste), a queued one a queue-operation enqueue, a slash command its echo.
        compat §5: /clear writes its echo into the *new* transcript, so follow a rotation."""
        want = _normalize(text)
        deadline = time.monotonic() + timeout
        offset, pending = start, b""
        while time.monotonic() < deadline:
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
            time.sleep(0.05)
        return False

    def interrupt(self, run: RunHandle) -> None:
        # compat §9: one Esc stops a working turn. Never two (at idle a double Esc opens
        # Rewind) and never Ctrl-C (a second one at idle exits the CLI).
        tmux = Tmux(run.tmux_socket)
        if not tmux.has_session(run.tmux_session):
            raise SessionGone("The agent's terminal session is gone.")
        tmux.send_keys(run.tmux_session, "Escape")

    def answer_dialog(self, run: RunHandle, dialog: Dialog, answers: Sequence[Answer]) -> None:
        raise DialogNotAnswerable("Answering dialogs from the browser is not available yet.")

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
    return " ".join(text.split())


_PASTED = re.compile(r'<pasted_content id="[^"]*">(.*?)</pasted_content id="[^"]*">', re.S)


def records_prompt(line: bytes, want: str) -> bool:
    """Whether a transcript line records `want` (normalized) as the operator's input."""
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
    else:
        return False
    if not isinstance(content, str):
        return False
    if command := _COMMAND_NAME.search(content):
        args = _COMMAND_ARGS.search(content)
        content = f"{command.group(1)} {args.group(1) if args else ''}"
    return _normalize(_PASTED.sub(lambda m: m.group(1), content)) == want


_COMMAND_NAME = re.compile(r"<command-name>([^<]*)</command-name>")
_COMMAND_ARGS = re.compile(r"<command-args>([^<]*)</command-args>")
