"""The Claude Code adapter: the only code in lab that knows Claude Code exists. Declarations on
the TUI kit (providers/tui.py), which owns the reply, interrupt and answer protocols; the CLI's
facts are in the pure modules beside this file (transcript.py, spool.py, dialogs.py,
recipes.py, commands.py, seed.py, trust.py) and the auth verbs in auth.py.

Every CLI fact used here is pinned in compat/claude_code/COMPAT.md and cites its section.
"""

from __future__ import annotations

import os
import re
import shlex
import stat
import sys
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson
from django.conf import settings

from providers.base import RESUME_OPTION
from providers.bounded import put_bounded
from providers.claude_code import auth, recipes, seed, transcript, trust
from providers.claude_code.commands import command_catalog
from providers.claude_code.dialogs import Intent, intent_for, intent_from_json, intent_to_json
from providers.claude_code.spool import SpoolView, event_time_ns, fold, sweepable, usage_from_status
from providers.claude_code.tool_results import ToolResults
from providers.errors import (
    ReplyNotDelivered,
    SessionGone,
    SpawnFailed,
    StaleDialog,
    StillStarting,
    TranscriptUnreadable,
)
from providers.hookspool import spool_events
from providers.outbox import keys_lock, reply_lock
from providers.safefile import UnsafeFile, read_regular
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
    RepositorySetting,
    RunHandle,
    SeedMeta,
    SessionInfo,
    SpawnOption,
    SpawnResult,
    TranscriptRead,
    Usage,
    WorkspaceChoices,
)
from providers.tmux import Tmux
from providers.tui import (
    POLL_S,
    AnswerMark,
    AnswerPlan,
    Asking,
    NewLines,
    PastesAttachments,
    spool_names,
    transcript_size,
)

_AGENT_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")  # compat §13: agentId in the launch result
SESSION_HEAD_BYTES = 256 * 1024  # where a session's first prompt is looked for
UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
# One pass of read_transcript: a first read of a big transcript goes in passes of this much, so
# its peak stays small (the index calls again until the cursor stops; appends fit in one).
READ_BUDGET = 512 * 1024
MAX_FIRST_SEEN = 1000  # dialogs whose tool_use a transcript read showed (the settle anchor)
# compat §6 (reply pacing): 2.1.328 submitted an immediate Enter after a 7-line paste 6/6
# times; 2.1.198 dropped it. The pacing stays, scaled with the paste: it costs little.
ENTER_DELAY_BASE_S = 0.15
ENTER_DELAY_PER_KB_S = 0.25
ENTER_DELAY_MAX_S = 1.5
MAX_STATUS_BYTES = 256 * 1024  # one statusLine payload: 0.8-1.3 KB with an API key (compat §16)
STATUS_NAME = "status.line"
STATUS_SETTLE_NS = 100_000_000
MAX_USAGE_SEEN = 1024
# The usage last read from each status file, by path: (the lstat that read it, the usage).
_usage_seen: dict[str, tuple[tuple[int, ...], Usage | None]] = {}
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
# compat §6 (the prompt's place): in the fullscreen renderer the composer's cursor sits this
# many rows above the pane's bottom (composer line, rule, footer); any other screen moves it.
COMPOSER_ROWS_FROM_BOTTOM = 3
# compat §6 (the prompt's place): lab's status line (compat §16), which prints nothing of its own,
# keeps one more row under the footer.
STATUS_LINE_ROWS = 1
RETURN_VERIFY_S = 3.0
# compat §7 (verification): how long a played answer may take to be recorded before lab looks
# at whether a retry is safe, and the overall bound before it reports "not recorded".
VERIFY_RETRY_S = 3.0
VERIFY_TIMEOUT_S = 15.0
# compat §8: PermissionRequest fires for AskUserQuestion and ExitPlanMode as the picker is
# shown; keys sent before it land nowhere useful (run 2 of the live suite: an Enter sent on the
# PreToolUse anchor was lost, the PermissionRequest came after it). Bounded wait for it.
SHOWN_WAIT_S = 3.0
HOOK_EVENTS = ("SessionStart", "SessionEnd", "UserPromptSubmit", "Notification", "Stop")
MATCHED_HOOK_EVENTS = ("PreToolUse", "PostToolUse", "PermissionRequest")


def enter_delay(text: str) -> float:
    return min(ENTER_DELAY_BASE_S + ENTER_DELAY_PER_KB_S * len(text.encode()) / 1024, ENTER_DELAY_MAX_S)


class ClaudeCodeProvider(PastesAttachments[SpoolView]):
    id = "claude-code"
    binary_name = "claude"
    env_defaults = {"DISABLE_AUTOUPDATER": "1"}  # the pinned version is the verified one
    shell_prefix = transcript.SHELL_PREFIX  # compat §6 (mode prefixes): bash mode
    # compat §6 (prompts take keys): how long after a tool's PreToolUse its PermissionRequest
    # may still come; a reply waits that long before its first key.
    tool_settle_s = 2.0
    # compat §9: one Esc stops a working turn. Never two (at idle a double Esc opens Rewind)
    # and never Ctrl-C (a second one at idle exits the CLI).
    interrupt_key = "Escape"
    # compat §6 (attachments): a pasted image path becomes "[Image #N]" once the CLI has read
    # the file; the receipt then checks each one.
    image_settle_s = 1.0

    def __init__(self) -> None:
        super().__init__()
        self._guard = threading.Lock()
        self._first_seen: dict[str, int] = {}  # tool_use_id → time_ns
        self.tool_results = ToolResults()

    # --- declarations ----------------------------------------------------------------------

    def display_name(self) -> str:
        return "Claude Code"

    def auth_flow(self) -> AuthFlow:
        return AuthFlow(
            kind=AuthFlowKind.OAUTH_CODE,
            instructions=("Open the link, sign in, and paste the code the page shows you back here."),
            credential_name="ANTHROPIC_API_KEY",
        )

    def seed_meta(self) -> SeedMeta:
        return seed.SEED_META

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
        return command_catalog(Path(worktree), home=self.home())

    def seed_workspace(self, worktree: Path, choices: WorkspaceChoices | None = None) -> list[Path]:
        # Only the key lab itself passes the agent (LAB_AGENT_ENV) is approved: never one
        # found anywhere else.
        api_key = settings.LAB_AGENT_ENV.get("ANTHROPIC_API_KEY") or None
        return seed.seed_workspace(
            Path(worktree), home=self.home(), choices=choices or WorkspaceChoices(), api_key=api_key
        )

    # --- the process (compat §4, §8) ---------------------------------------------------------

    def transcript_root(self) -> Path:
        return self.home() / ".claude" / "projects"

    def sessions(self, worktree: Path) -> list[SessionInfo]:
        """compat §1: the worktree's transcripts are <projects>/<its cwd, encoded>/<id>.jsonl."""
        folder = self.transcript_root() / transcript.project_dir_name(os.path.realpath(worktree))
        found = []
        for path in folder.glob("*.jsonl"):
            if not UUID_RE.fullmatch(path.stem):
                continue
            try:
                st = path.lstat()
                first = transcript.first_prompt(str(path), SESSION_HEAD_BYTES)
            except (OSError, TranscriptUnreadable):
                continue
            found.append(
                SessionInfo(
                    session_id=path.stem,
                    path=str(path),
                    first_prompt=first,
                    last_activity=st.st_mtime,
                    size=st.st_size,
                )
            )
        return sorted(found, key=lambda s: s.last_activity, reverse=True)

    def spawn(self, run: RunHandle, options: Mapping[str, str]) -> SpawnResult:
        session_id = str(uuid.uuid4())
        cwd = os.path.realpath(run.worktree)
        argv = [self.binary(), "--session-id", session_id]
        if resume := options.get(RESUME_OPTION, ""):
            # compat §1 (resume): --resume <id> appends to the session's own transcript, in the
            # project folder of the cwd it was started in.
            known = {s.session_id for s in self.sessions(Path(cwd))}
            if not UUID_RE.fullmatch(resume) or resume not in known:
                raise SpawnFailed(f"No {self.display_name()} session {resume!r} in {cwd} to resume.")
            session_id = resume
            argv = [self.binary(), "--resume", session_id]
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
        inline: dict[str, object] = {}
        if run.spool_dir:
            Path(run.spool_dir).mkdir(parents=True, exist_ok=True, mode=0o700)
            inline.update(self.hook_settings(run.spool_dir))
            inline.update(self.status_settings(run))
        env = {**self.agent_env(), **dict(run.env)}
        if not run.trusted:
            argv += seed.untrusted_args(cwd)
            inline.update(seed.untrusted_settings(Path(cwd), run.choices))
            env.update(seed.UNTRUSTED_ENV)
        if inline:
            argv += ["--settings", orjson.dumps(inline).decode()]
        # The environment file goes beside the spool, in the run's private directory.
        env_dir = str(Path(run.spool_dir).parent) if run.spool_dir else None
        Tmux(run.tmux_socket).new_session(run.tmux_session, cwd=cwd, argv=argv, env=env, env_dir=env_dir)
        path = self.transcript_root() / transcript.project_dir_name(cwd) / f"{session_id}.jsonl"
        return SpawnResult(session_id=session_id, transcript_path=str(path))

    def hook_settings(self, spool_dir: str) -> dict[str, object]:
        """compat §8: --settings takes inline JSON; each hook runs lab's hook writer with the
        run's spool dir as its argument."""
        script = Path(__file__).parent.parent / "hook_writer.py"
        command = shlex.join([sys.executable, "-S", str(script), spool_dir])
        handlers = [{"type": "command", "command": command, "timeout": 10}]
        hooks: dict[str, object] = {event: [{"hooks": handlers}] for event in HOOK_EVENTS}
        hooks.update({event: [{"matcher": "*", "hooks": handlers}] for event in MATCHED_HOOK_EVENTS})
        return {"hooks": hooks}

    # --- the status line (compat §16) ------------------------------------------------------

    @staticmethod
    def status_file(run: RunHandle) -> Path:
        # In the spool, so a new status wakes the run's watcher (the page's figures follow the
        # run as it works), under a name the spool's fold and sweep never read (not *.json).
        return Path(run.spool_dir) / STATUS_NAME

    def status_settings(self, run: RunHandle) -> dict[str, object]:
        """The statusLine that writes each payload to the run's status file, then runs the
        operator's own status line (their settings, which lab's inline one overrides) on it."""
        script = Path(__file__).parent.parent / "hook_writer.py"
        argv = [sys.executable, "-S", str(script), "--status", str(self.status_file(run))]
        own = seed.operator_status_line(self.home(), Path(run.worktree), trusted=run.trusted)
        line: dict[str, object] = {"type": "command"}
        if own is not None:
            # The CLI runs a statusLine command through a shell: the operator's runs as it would.
            argv += ["--", "/bin/sh", "-c", own["command"]]
            line.update({k: v for k, v in own.items() if k not in ("type", "command")})
        line["command"] = shlex.join(argv)
        return {"statusLine": line}

    def usage(self, run: RunHandle) -> Usage | None:
        # Asked on every watcher wake, so on every appended line: the file is read and parsed
        # again only when an lstat says it changed (the writer renames a new file in).
        where = os.path.join(run.spool_dir, STATUS_NAME)
        try:
            st = os.lstat(where)
        except OSError:
            return None
        key = (st.st_ino, st.st_dev, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        seen = _usage_seen.get(where)
        if seen is not None and seen[0] == key:
            return seen[1]
        usage = self._read_usage(Path(where))
        # A file written in the last STATUS_SETTLE_NS is not remembered: a rewrite within the
        # same filesystem timestamp tick could reuse its inode, size and times.
        if stat.S_ISREG(st.st_mode) and time.time_ns() - st.st_mtime_ns > STATUS_SETTLE_NS:
            _usage_seen[where] = (key, usage)
            while len(_usage_seen) > MAX_USAGE_SEEN:
                del _usage_seen[next(iter(_usage_seen))]
        return usage

    @staticmethod
    def _read_usage(path: Path) -> Usage | None:
        try:
            raw = read_regular(str(path), MAX_STATUS_BYTES)
            at_ns = path.stat().st_mtime_ns
            data = orjson.loads(raw)
        except (OSError, UnsafeFile, orjson.JSONDecodeError):
            return None
        return usage_from_status(data, at_ns) if isinstance(data, dict) else None

    # --- repository trust (trust.py; the record in seed.py) ---------------------------------

    def repository_settings(self, checkout: Path) -> list[RepositorySetting]:
        return trust.repository_settings(Path(checkout))

    def repository_trusted(self, repository: Path) -> bool:
        return seed.repository_trusted(Path(repository), home=self.home())

    def trust_repository(self, repository: Path) -> list[Path]:
        return seed.trust_repository(Path(repository), home=self.home())

    # --- transcripts (compat §1, §5, §13; transcript.py) --------------------------------------

    def locate_in_spool(self, run: RunHandle, events: list[dict[str, Any]]) -> str:
        """compat §5: /clear writes a new <uuid>.jsonl and SessionStart(source=clear) names it.
        The newest SessionStart in the spool wins; the spawn-time path otherwise."""
        root = self.transcript_root().resolve()
        for event in reversed(events):
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
        session = Path(located).with_suffix("")
        path = session / "subagents" / f"agent-{side}.jsonl"
        # Resolved whole: a symlink anywhere below the session's project dir (a symlinked
        # subagents folder) would lead the read outside the transcript tree.
        expected = Path(os.path.realpath(session.parent)) / session.name / "subagents" / path.name
        if os.path.realpath(path) != str(expected):
            return ""
        return str(path) if path.is_file() else ""

    def parse_transcript(self, path: str, cursor: Cursor, intents: Mapping[str, Any]) -> TranscriptRead:
        # One READ_BUDGET pass per call: bounded memory, and the caller's index gets a checkpoint
        # per pass of a huge file (it calls again until the cursor stops moving).
        read = transcript.read_transcript(path, cursor, intents, max_bytes=READ_BUDGET, max_passes=1)
        if read.dialog is not None:
            with self._guard:
                if read.dialog.tool_use_id not in self._first_seen:
                    # The settle anchor when the transcript shows the picker before the spool
                    # does (an answer settles from the spool's signs or from its own start
                    # when no read saw it).
                    put_bounded(self._first_seen, read.dialog.tool_use_id, time.time_ns(), MAX_FIRST_SEEN)
        return read

    def encode_intent(self, intent: Intent) -> dict[str, Any]:
        return intent_to_json(intent)

    def decode_intent(self, data: Any) -> Intent:
        return intent_from_json(data)

    def first_seen_ns(self, tool_use_id: str) -> int | None:
        """When a transcript read first showed this dialog's tool_use (None: none did)."""
        with self._guard:
            return self._first_seen.get(tool_use_id)

    def records_prompt(self, line: bytes, want: str) -> bool:
        return transcript.records_prompt(line, want)

    def records_images(self, line: bytes) -> list[str]:
        return transcript.records_images(line)

    def image_paste(self, path: str, index: int) -> str:
        # compat §6 (attachments): a later path pasted with a leading space still attaches,
        # and the placeholders stay apart.
        return f" {path}" if index else path

    def file_reference(self, rel: str) -> str:
        return f"@{rel}"  # compat §13: the CLI reads a mentioned file itself, no prompt

    # --- the live channel (compat §8; spool.py) -----------------------------------------------

    def fold_spool(self, run: RunHandle, events: list[dict[str, Any]], answered: frozenset[str]) -> SpoolView:
        return fold(events, answered, rules_load=run.trusted)

    def open_ids(self, view: SpoolView) -> frozenset[str]:
        return view.open_ids

    def answered_among(self, run: RunHandle, ids: frozenset[str]) -> frozenset[str]:
        # A decline gets no closing hook: its tool_result in the transcript closes it.
        return self.tool_results.among(self.locate_transcript(run), ids)

    def sweepable(self, run: RunHandle, view: SpoolView, now_ns: int) -> list[str]:
        return sweepable(view, now_ns)

    def connecting(self, run: RunHandle) -> bool:
        """compat §6 (readiness): starting until the SessionStart hook has run. (The input goes
        live about a second later; a reply waits for that itself.)"""
        if not run.spool_dir:
            return False
        return not self.session_started(run, self._session_start_ns(run))

    def _session_start_ns(self, run: RunHandle) -> int:
        """When the newest SessionStart hook ran (0: not yet); without a spool, long enough ago
        that the classic renderer counts as ready (no signal)."""
        if not run.spool_dir:
            return time.time_ns() - int(CLASSIC_READY_S * 1e9)
        starts = [e for e in spool_events(run.spool_dir) if e.get("hook_event_name") == "SessionStart"]
        return event_time_ns(starts[-1]) if starts else 0

    def asking(self, run: RunHandle, view: SpoolView) -> Asking | None:
        """A picker, a permission prompt (compat §8: PermissionRequest as it is shown, or its
        reminder). A denial is closed by its tool_result only (compat §7 "Approvals"), which
        spool_view has already checked."""
        if view.dialog is not None:
            if view.dialog.kind == DialogKind.APPROVAL:
                return Asking("permission", "allow or deny it")
            return Asking("a question", "answer or decline it")
        if view.blocked or view.permission_open:
            return Asking("permission")
        return None

    # --- input (compat §6, §9; the protocols are the kit's) ------------------------------------

    def clean_reply(self, text: str) -> str:
        # compat §6 (invisible characters): the CLI strips these from a paste and then holds it
        # for review, so the first Enter is not a submit. Stripped first, the paste submits.
        return INVISIBLE.sub("", text)

    def enter_delay(self, text: str) -> float:
        return enter_delay(text)

    def wait_ready(self, run: RunHandle, tmux: Tmux) -> None:
        """compat §6 (readiness): SessionStart fires ~1 s before the input is live, and a
        multi-line paste sent then sits unsubmitted. The fullscreen renderer switches its
        terminal to mouse tracking when its input goes live; the classic renderer (the CLI falls
        back to it by itself) never does, and its input is live CLASSIC_READY_S after
        SessionStart. lab reads tmux's mode flags (terminal state, not the screen) and the hook,
        never the pane's text."""
        deadline = time.monotonic() + READY_TIMEOUT_S
        while True:
            started_ns = self._session_start_ns(run)
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
        rows = COMPOSER_ROWS_FROM_BOTTOM
        if run.spool_dir and self.status_file(run).exists():  # lab's status line has drawn
            if seed.operator_status_line(self.home(), Path(run.worktree), trusted=run.trusted) is not None:
                return None  # the operator's own status line is as tall as it prints
            rows += STATUS_LINE_ROWS
        return int(y) == int(height) - rows

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

    # --- answers (compat §7; dialogs.py, recipes.py) ------------------------------------------

    def plan_answer(self, dialog: Dialog, answers: Sequence[Answer]) -> AnswerPlan:
        """The recipe's keys after the picker settled; an empty `answers` declines (Esc)."""
        recipe = recipes.recipe_for(dialog, answers)
        intent = None if recipe.declines else intent_for(dialog, recipes.normalized_answers(dialog, answers))
        return AnswerPlan(keys=recipe, intent=intent)

    def await_shown(self, run: RunHandle, tmux: Tmux, dialog: Dialog, plan: AnswerPlan) -> None:
        """compat §7 (settle): wait until the recipe's settle after the newest sign of the
        picker: its PermissionRequest hook (the picker being shown; waited for up to
        SHOWN_WAIT_S), else its PreToolUse, or the first transcript read that showed the
        tool_use. Re-evaluated while waiting, since a later sign moves the anchor. Unknown
        dialog: settle from now."""
        settle = plan.keys.settle
        start_ns = time.time_ns()
        shown_deadline = time.monotonic() + SHOWN_WAIT_S
        while True:
            pending = self.spool_view(run).find(dialog.tool_use_id)
            if pending is not None and not pending.shown and time.monotonic() < shown_deadline:
                time.sleep(POLL_S)
                continue
            signs = [pending.signal_ns] if pending else []
            first_seen = self.first_seen_ns(dialog.tool_use_id)
            if first_seen is not None:
                signs.append(first_seen)
            anchor = max(signs) if signs else start_ns
            wait = (anchor + settle * 1e9 - time.time_ns()) / 1e9
            if wait <= 0:
                return
            time.sleep(min(wait, 0.1))

    def pending_since(self, run: RunHandle, dialog: Dialog) -> int | None:
        """A tool_result, a clearing hook or a new prompt has closed the dialog: None. Several
        prompts at once (compat §8): lab cannot tell which one the terminal shows."""
        if not run.spool_dir:
            return None
        view = self.spool_view(run)
        if view.prompts_at_once:
            raise StaleDialog(
                "Claude Code now asks more than one permission at once and lab cannot tell which "
                "one its terminal shows: answer them there. Nothing was sent."
            )
        pending = view.find(dialog.tool_use_id)
        if pending is None or pending.dialog.all_questions != dialog.all_questions:
            return None
        times = (event_time_ns({"_spool_name": f}) or pending.seen_ns for f in pending.files)
        return min([pending.seen_ns, *times])

    def play_answer(self, run: RunHandle, tmux: Tmux, dialog: Dialog, plan: AnswerPlan) -> None:
        for op in plan.keys.ops:
            if op.kind == recipes.OpKind.PASTE:
                tmux.paste(run.tmux_session, op.value)
            else:
                tmux.send_keys(run.tmux_session, op.value)
            time.sleep(op.pause_after)

    def verify_answer(
        self, run: RunHandle, tmux: Tmux, dialog: Dialog, plan: AnswerPlan, mark: AnswerMark
    ) -> None:
        """Verified by the dialog's PostToolUse hook or its tool_result; retried only when
        nothing at all landed."""
        recipe: recipes.Recipe = plan.keys
        if self._wait_answered(run, dialog.tool_use_id, mark, VERIFY_RETRY_S, plan.intent):
            return
        # compat §7 (dropped keys): a key sent while the picker is still being drawn is lost,
        # not queued, and the drop window is the start of the sequence. A retry is safe only if
        # nothing at all happened (no byte in the transcript, no hook fired: the picker is
        # untouched on row 0) and the recipe is one screen of bare keys, so a partial landing
        # can only have been a total loss. Anything else is left to the operator: resending
        # Down/paste/Enter into a screen that moved on could answer wrongly or send a prompt.
        if recipe.retry_safe and self._untouched(run, dialog, mark):
            self.await_shown(run, tmux, dialog, plan)  # from a later anchor if the picker came late
            with keys_lock(run, busy=self.answer_busy()):
                self.refuse_if_stale(run, dialog)
                self.play_answer(run, tmux, dialog, plan)
        if not self._wait_answered(run, dialog.tool_use_id, mark, VERIFY_TIMEOUT_S, plan.intent):
            if recipe.name.startswith("approval-allow"):
                # An allowed tool records its result only when it finishes (compat §7): a long
                # command is not a lost answer.
                raise ReplyNotDelivered(
                    "The answer was sent, but Claude Code has recorded no result for the tool "
                    "yet: it may still be running. The transcript shows the result when it "
                    "lands; look at its Terminal view if it does not."
                )
            raise ReplyNotDelivered(
                "The answer was sent but Claude Code has not recorded it. Look at its Terminal view"
                " before answering again."
            )

    def _untouched(self, run: RunHandle, dialog: Dialog, mark: AnswerMark) -> bool:
        """Nothing landed: the transcript did not grow, the picker is still pending, and the only
        hooks since the keys are the picker's own (PermissionRequest, Notification)."""
        if transcript_size(mark.path) != mark.size or self.spool_view(run).find(dialog.tool_use_id) is None:
            return False
        new = spool_names(run.spool_dir) - mark.spool_names
        if not new:
            return True
        for event in spool_events(run.spool_dir):
            if event.get("_spool_name") in new and event.get("hook_event_name") not in (
                "PermissionRequest",
                "Notification",
            ):
                return False
        return True

    def _wait_answered(
        self, run: RunHandle, tool_use_id: str, mark: AnswerMark, timeout: float, intent: Intent | None
    ) -> bool:
        """The PostToolUse hook for the id (an answer, an approval) or a tool_result for it in
        the transcript (also a decline or rejection, which get no PostToolUse, compat §8). A
        tool_result that records something else than `intent` (a rejection without the feedback
        sent: another Esc answered first) is not this answer's success: ReplyNotDelivered."""
        needle = tool_use_id.encode()
        deadline = time.monotonic() + timeout
        new = NewLines(mark.path, mark.size)
        while True:
            for event in spool_events(run.spool_dir):
                if event.get("hook_event_name") == "PostToolUse" and event.get("tool_use_id") == tool_use_id:
                    return True
            for line in new.read():
                if needle in line and b'"tool_result"' in line and b'"type":"user"' in line:
                    self._refuse_mismatch(line, intent)
                    return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(POLL_S)

    def _refuse_mismatch(self, line: bytes, intent: Intent | None) -> None:
        try:
            entry = orjson.loads(line)
        except orjson.JSONDecodeError:
            return
        problem = (
            transcript.result_mismatch(intent, entry)
            if intent is not None and isinstance(entry, dict)
            else ""
        )
        if problem:
            raise ReplyNotDelivered(
                f"Claude Code recorded a different result than the answer lab sent: {problem}"
            )

    # --- auth (auth.py) --------------------------------------------------------------------

    def auth_status(self) -> AuthStatus:
        return auth.auth_status(self)

    def login_start(self) -> LoginStart:
        return auth.login_start(self)

    def login_code(self, code: str) -> AuthStatus:
        return auth.login_code(self, code)

    def logout(self) -> AuthStatus:
        return auth.logout(self)
