"""The Gemini CLI adapter: the only code in lab that knows Gemini CLI exists. Declarations on the
TUI kit (providers/tui.py), which owns the reply, interrupt and answer protocols.

Every CLI fact used here is pinned in compat/gemini/COMPAT.md and cites its section.
"""

from __future__ import annotations

import os
import termios
import threading
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar

from django.conf import settings

from providers.bounded import put_bounded
from providers.errors import (
    ReplyNotDelivered,
    ReplyRefused,
    SessionGone,
    SpawnFailed,
    StaleDialog,
    StillStarting,
)
from providers.gemini import auth, transcript, trust
from providers.gemini.commands import ALIASES, CLEAR, command_catalog
from providers.gemini.dialogs import (
    ASK_TOOL,
    DENY,
    PLAN_TOOL,
    Choice,
    QuestionIntent,
    choice_for,
    result_mismatch,
)
from providers.gemini.recipes import OpKind, Recipe, intent_for, plan_recipe, question_recipe
from providers.gemini.seed import SEED_META, ConfigRefused, folder_trusted, install_settings, trust_folder
from providers.gemini.spool import (
    CLEAR_SUFFIX,
    MARKER_MAX_BYTES,
    SpoolView,
    current_transcript,
    dialog_time_ns,
    event_time_ns,
    fold,
    marker_line,
    marker_session,
    newest_marker,
)
from providers.hook_writer import SPOOL_ENV
from providers.hookspool import spool_events
from providers.safefile import read_regular, read_tail, write_private
from providers.schema import (
    Answer,
    AuthFlow,
    AuthFlowKind,
    AuthStatus,
    CommandSpec,
    Cursor,
    Dialog,
    DialogKind,
    RepositorySetting,
    RunHandle,
    RunState,
    SeedMeta,
    SpawnOption,
    SpawnResult,
    TranscriptRead,
    WorkspaceChoices,
)
from providers.tmux import Tmux
from providers.tui import (
    POLL_S,
    AnswerMark,
    AnswerPlan,
    Asking,
    AuthFromModule,
    AuthVerbs,
    NewLines,
    TuiAdapter,
)

READ_BUDGET = 4 * 1024 * 1024
# §4 (readiness): the composer reads keys once the CLI has put its terminal in raw mode, after
# its session started; bounded, then StillStarting (nothing sent).
READY_TIMEOUT_S = 30.0
# §7: Notification{ToolPermission} runs before the confirmation is drawn; keys go after this.
APPROVAL_SETTLE_S = 0.6
# §7: a question's Notification comes right after its BeforeTool; an answer waits this long for it.
SHOWN_TIMEOUT_S = 10.0
VERIFY_TIMEOUT_S = 15.0
CLEAR_TIMEOUT_S = 10.0
# §5: how long after its spool entry lands the AfterAgent hook's process has exited.
HOOK_EXIT_S = 0.5
HOOK_WRITER = b"hook_writer.py"
MAX_CACHE = 256
TAIL_BYTES = 1024 * 1024
PLAN_MAX_BYTES = 256 * 1024


class GeminiProvider(AuthFromModule, TuiAdapter[SpoolView]):
    id = "gemini"
    auth: ClassVar[AuthVerbs] = auth  # §10: Google sign-in (code paste), or an API key
    binary_name = "gemini"
    # §4: one process (no re-exec of a child node that tmux's kill-session would leave behind).
    env_defaults = {"GEMINI_CLI_NO_RELAUNCH": "true"}
    # §6: BeforeTool may be followed by its confirmation; a reply waits this long first.
    tool_settle_s = 1.5

    def __init__(self) -> None:
        super().__init__()
        self._guard = threading.Lock()
        self._cursors: dict[str, Cursor] = {}

    # --- declarations ----------------------------------------------------------------------

    def display_name(self) -> str:
        return "Gemini CLI"

    def auth_flow(self) -> AuthFlow:
        return AuthFlow(
            kind=AuthFlowKind.OAUTH_CODE,
            instructions=(
                "Sign in with Google: open the link, allow access, and paste the code Google shows "
                "you. Or run Gemini CLI with an API key: set GEMINI_API_KEY in lab's agent "
                "environment (LAB_AGENT_ENV)."
            ),
            credential_name=auth.API_KEY_NAME,
        )

    def login_code(self, code: str) -> AuthStatus:
        # §10: the code Google's page shows goes to the CLI's own sign-in.
        return auth.login_code(self, code)

    def seed_meta(self) -> SeedMeta:
        return SEED_META

    def spawn_options(self) -> list[SpawnOption]:
        return [
            SpawnOption(
                name="approval",
                label="Approvals",
                # §4: --approval-mode values that keep a human in the loop.
                choices=(
                    ("default", "Ask before every edit and command"),
                    ("auto_edit", "Edit files without asking; ask before commands"),
                    # §7: read-only until the operator approves a plan on the page.
                    ("plan", "Plan first: read only until you approve a plan"),
                ),
                default="default",
                help_text="When Gemini CLI stops to ask before using a tool.",
            ),
        ]

    def commands(self, worktree: Path) -> list[CommandSpec]:
        return command_catalog(Path(worktree))

    # --- process ---------------------------------------------------------------------------

    def gemini_home(self) -> Path:
        """§4: GEMINI_CLI_HOME stands for the home the CLI keeps `.gemini/` in."""
        configured = settings.LAB_AGENT_ENV.get("GEMINI_CLI_HOME")
        return Path(configured).expanduser() if configured else self.home()

    def gemini_dir(self) -> Path:
        return self.gemini_home() / ".gemini"

    def env_overrides(self) -> dict[str, str]:
        return {"GEMINI_CLI_HOME": str(self.gemini_home())}

    def spawn(self, run: RunHandle, options: Mapping[str, str]) -> SpawnResult:
        declared = {o.name: o for o in self.spawn_options()}
        value = options.get("approval", declared["approval"].default)
        if value not in {v for v, _ in declared["approval"].choices}:
            raise SpawnFailed(f"Unknown approvals setting {value!r}.")
        if not run.spool_dir:
            raise SpawnFailed("Gemini CLI runs need a spool directory for their hooks.")
        Path(run.spool_dir).mkdir(parents=True, exist_ok=True, mode=0o700)
        worktree = Path(run.worktree)
        if not run.trusted:
            # §9: in a folder it does not trust the CLI runs no hook at all (lab's included) and
            # reads no GEMINI.md: lab trusts the worktree's folder, which is harmless only while
            # the repository brings no Gemini settings of its own.
            found = trust.project_files(worktree)
            if found:
                raise SpawnFailed(
                    f"The repository has Gemini CLI settings ({', '.join(found)}) and is not trusted. "
                    "Gemini CLI 0.61.0 runs no hooks in a folder it does not trust, so lab cannot "
                    "start it without loading them: trust the repository on the new-run page, or "
                    "remove these files from the branch, to start this run."
                )
        try:
            install_settings(self.gemini_dir())
            trust_folder(self.gemini_dir(), worktree, True)
        except ConfigRefused as exc:
            raise SpawnFailed(str(exc)) from None
        except OSError as exc:
            raise SpawnFailed(f"lab could not prepare Gemini CLI's settings: {exc.strerror}") from None
        env = {**self.agent_env(), **dict(run.env), SPOOL_ENV: run.spool_dir}
        env.update(guard_parameters(env))
        Tmux(run.tmux_socket).new_session(
            run.tmux_session,
            cwd=os.path.realpath(run.worktree),
            argv=[self.binary(), "--approval-mode", value],
            env=env,
            env_dir=str(Path(run.spool_dir).parent),
        )
        return SpawnResult(session_id="", transcript_path=self.placeholder(run.spool_dir))

    @staticmethod
    def placeholder(spool_dir: str) -> str:
        """§5: lab learns the session file from the SessionStart hook; until it lands, the run's
        transcript is this empty name in the spool (a missing file reads empty)."""
        return os.path.join(spool_dir, "00000000000000000000-start.jsonl")

    def seed_workspace(self, worktree: Path, choices: WorkspaceChoices | None = None) -> list[Path]:
        # §12: WorkspaceChoices: 0.61.0 adds no attribution to commits (nothing to turn off);
        # the repository's MCP servers load only in a trusted folder, decided at spawn.
        return install_settings(self.gemini_dir())

    # --- repository trust (trust.py) -------------------------------------------------------

    def repository_settings(self, checkout: Path) -> list[RepositorySetting]:
        return trust.repository_settings(Path(checkout))

    def repository_trusted(self, repository: Path) -> bool:
        return folder_trusted(self.gemini_dir(), Path(repository))

    def trust_repository(self, repository: Path) -> list[Path]:
        return trust_folder(self.gemini_dir(), Path(repository), True)

    # --- transcript --------------------------------------------------------------------------

    def _valid_session(self, path: str) -> bool:
        p = Path(path)
        if ".." in p.parts or p.suffix != ".jsonl" or not p.name.startswith("session-"):
            return False
        root = os.path.realpath(self.gemini_dir() / "tmp")
        return p.parent.name == "chats" and os.path.realpath(p.parent).startswith(root + os.sep)

    def locate_in_spool(self, run: RunHandle, events: list[dict[str, Any]]) -> str:
        """§5: the newest SessionStart's transcript_path (launch, /clear), or lab's clear marker
        written after it; both land in the spool, so a change is a file event there."""
        session = current_transcript(events, self._valid_session)
        marker, marked_ns = newest_marker(run.spool_dir)
        started_ns = max(
            (
                event_time_ns(str(e.get("_spool_name", "")))
                for e in events
                if e.get("hook_event_name") == "SessionStart" and e.get("transcript_path") == session
            ),
            default=0,
        )
        if marker and marked_ns >= started_ns:
            return marker
        return session or self.placeholder(run.spool_dir)

    def locate_transcript(self, run: RunHandle) -> str:
        """A clear marker stands for the new session until that session records a prompt (§5):
        then the session file is the conversation (read again on every call while the marker
        stands: a small file, and no hook lands when the prompt is recorded)."""
        located = super().locate_transcript(run)
        if not located.endswith(CLEAR_SUFFIX):
            return located
        try:
            session = marker_session(read_tail(located, MARKER_MAX_BYTES))
            if (
                session
                and self._valid_session(session)
                and transcript.has_prompt(read_tail(session, TAIL_BYTES))
            ):
                return session
        except OSError:
            pass
        return located

    def parse_transcript(self, path: str, cursor: Cursor, intents: Mapping[str, Any]) -> TranscriptRead:
        return transcript.read_transcript(path, cursor, intents, max_bytes=READ_BUDGET, max_passes=1)

    def records_prompt(self, line: bytes, want: str) -> bool:
        return transcript.records_prompt(line, want)

    def _state_now(self, run: RunHandle) -> RunState:
        path = self.locate_transcript(run)
        with self._guard:
            cursor = self._cursors.get(path, Cursor())
        while True:
            read = self.read_transcript(path, cursor)
            if read.cursor == cursor or read.cursor.offset == cursor.offset:
                break
            cursor = read.cursor
        with self._guard:
            put_bounded(self._cursors, path, read.cursor, MAX_CACHE)
        return read.state

    # --- live signals (§6, spool.py) --------------------------------------------------------

    def fold_spool(self, run: RunHandle, events: list[dict[str, Any]], answered: frozenset[str]) -> SpoolView:
        return fold(events, answered, self._read_plan)

    def _read_plan(self, event: dict[str, Any]) -> str:
        """§7: the plan an exit_plan_mode call asks about: its `plan_filename` in the session's
        plans folder (`<project temp>/<session id>/plans/`, the project temp folder being the
        one above the hook's session file's `chats/`). "" when lab cannot read it safely."""
        session, session_id = str(event.get("transcript_path", "")), str(event.get("session_id", ""))
        raw = event.get("tool_input")
        name = raw.get("plan_filename") if isinstance(raw, dict) else None
        if not isinstance(name, str) or not self._valid_session(session):
            return ""
        if not session_id or not session_id.replace("-", "").isalnum():
            return ""
        plans = os.path.realpath(Path(session).parent.parent / session_id / "plans")
        path = os.path.realpath(os.path.join(plans, name.strip()))
        if not path.startswith(plans + os.sep):
            return ""
        try:
            return read_regular(path, PLAN_MAX_BYTES).decode("utf-8", "replace")
        except OSError:
            return ""

    def open_ids(self, view: SpoolView) -> frozenset[str]:
        # A declined confirmation (or a cancelled question) gets no hook: only the session file
        # closes it.
        ids = {view.pending.dialog.tool_use_id} if view.pending is not None else set()
        return frozenset(ids | ({view.in_dialog} if view.in_dialog else set()))

    def answered_among(self, run: RunHandle, ids: frozenset[str]) -> frozenset[str]:
        """§6: "Request cancelled." recorded after the call began closes its confirmation."""
        try:
            tail = read_tail(self.locate_transcript(run), TAIL_BYTES)
        except OSError:
            return frozenset()
        cancelled = [_iso_ns(line) for line in tail.splitlines() if transcript.CANCELLED.encode() in line]
        latest = max(cancelled, default=0)
        return frozenset(i for i in ids if 0 < dialog_time_ns(i) <= latest)

    def asking(self, run: RunHandle, view: SpoolView) -> Asking | None:
        if view.pending is not None and view.pending.dialog.kind == DialogKind.QUESTION:
            return Asking("a question", "answer or decline it")
        if view.pending is not None and view.pending.dialog.kind == DialogKind.PLAN:
            return Asking("for approval of a plan", "approve or reject it")
        if view.pending is not None:
            return Asking("for approval", "allow or deny it")
        # §7: a question or plan lab has no dialog for is the terminal's to answer.
        if view.in_dialog_tool == ASK_TOOL:
            return Asking("a question")
        if view.in_dialog_tool == PLAN_TOOL:
            return Asking("for approval of a plan")
        return Asking("for approval") if view.blocked else None

    # --- input (the protocols are the kit's) -------------------------------------------------

    def enter_delay(self, text: str) -> float:
        return 0.3  # §4 (reply pacing): Enter after the paste has landed

    def wait_ready(self, run: RunHandle, tmux: Tmux) -> None:
        """§4 (readiness): the session has started (its SessionStart hook), no hook of lab's is
        still running, and the CLI has put its terminal in raw mode (the pty's termios and the
        process tree, not the screen's text)."""
        deadline = time.monotonic() + READY_TIMEOUT_S
        while True:
            flags = tmux.pane_format(run.tmux_session, "#{pane_dead} #{pane_tty}")
            if flags is None:
                raise SessionGone("The agent's terminal session is gone.")
            dead, _, tty = flags.partition(" ")
            if dead == "1":
                raise SessionGone(f"{self.display_name()} has exited.")
            events = spool_events(run.spool_dir)
            started = any(e.get("hook_event_name") == "SessionStart" for e in events)
            newest = max((event_time_ns(str(e.get("_spool_name", ""))) for e in events), default=0)
            # §4: while hooks run the composer is hidden ("Executing Hooks") and a paste is lost.
            hooks_done = (time.time_ns() - newest) / 1e9 >= HOOK_EXIT_S and not _hook_running(tmux, run)
            if started and hooks_done and _raw_mode(tty):
                return
            if time.monotonic() >= deadline:
                raise StillStarting(
                    f"{self.display_name()} is still starting, or shows a screen lab does not answer: "
                    "nothing was sent. Look at its Terminal view."
                )
            time.sleep(POLL_S)

    def special_send(self, run: RunHandle, tmux: Tmux, text: str, want: str) -> bool:
        """§5: /clear (or /new) writes nothing to the old session: the new session's
        SessionStart{source: "clear"} hook is the receipt."""
        if want not in {f"/{CLEAR}", *(f"/{a}" for a in ALIASES[CLEAR])}:
            return False
        self._wait_turn_over(run, text.strip())
        before = {str(e.get("_spool_name")) for e in spool_events(run.spool_dir)}
        tmux.paste(run.tmux_session, text)
        time.sleep(self.enter_delay(text))
        tmux.send_keys(run.tmux_session, "Enter")
        deadline = time.monotonic() + CLEAR_TIMEOUT_S
        while not any(
            e.get("hook_event_name") == "SessionStart"
            and e.get("source") == "clear"
            and str(e.get("_spool_name")) not in before
            for e in spool_events(run.spool_dir)
        ):
            if time.monotonic() >= deadline:
                raise ReplyNotDelivered(
                    f"{self.display_name()} has not started a new conversation after {text.strip()}. "
                    "Look at its Terminal view."
                )
            time.sleep(POLL_S)
        session = current_transcript(spool_events(run.spool_dir), self._valid_session)
        stamp = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        name = os.path.join(run.spool_dir, f"{time.time_ns():020d}{CLEAR_SUFFIX}")
        write_private(name, marker_line(text.strip(), session, stamp) + b"\n")
        return True

    def _wait_turn_over(self, run: RunHandle, command: str) -> None:
        """§5: a slash command is refused while a turn runs, its AfterAgent hook included
        ("Slash commands cannot be queued"): wait, bounded, until the newest BeforeAgent has its
        AfterAgent and the hook has had time to exit."""
        deadline = time.monotonic() + CLEAR_TIMEOUT_S
        while True:
            began = ended = 0
            for event in spool_events(run.spool_dir):
                at = event_time_ns(str(event.get("_spool_name", "")))
                if event.get("hook_event_name") == "BeforeAgent":
                    began = at
                elif event.get("hook_event_name") == "AfterAgent":
                    ended = at
            settled = (time.time_ns() - ended) / 1e9 >= HOOK_EXIT_S
            if (not began or ended >= began) and settled and self._state_now(run) != RunState.WORKING:
                return
            if time.monotonic() >= deadline:
                raise ReplyRefused(
                    f"{self.display_name()} is still working, and it does not queue {command}: nothing "
                    "was sent. Send it again once the turn has ended, or stop the turn first."
                )
            time.sleep(POLL_S)

    def interrupt_applies(self, run: RunHandle) -> bool:
        """§11: one Esc stops a working turn. Sent only while the session file says the turn
        works: at idle a second Esc opens the rewind picker."""
        return self._state_now(run) == RunState.WORKING

    # --- answers (§7, dialogs.py) ------------------------------------------------------------

    def plan_answer(self, dialog: Dialog, answers: Sequence[Answer]) -> AnswerPlan:
        if dialog.kind == DialogKind.PLAN:
            recipe = plan_recipe(dialog, answers)
            if recipe is None:
                # "Reject — keep planning": Esc cancels the turn; plan mode stays.
                return AnswerPlan(keys=Choice(DENY, "Escape", False))
            at_ns = int(dialog.tool_use_id.partition("tool-")[2] or 0)
            return AnswerPlan(keys=recipe, intent=intent_for(dialog, recipe, at_ns))
        if dialog.kind == DialogKind.QUESTION:
            if not answers:
                # Esc: the CLI cancels the question and the turn ("Request cancelled.").
                return AnswerPlan(keys=Choice(DENY, "Escape", False))
            # §7: the session file names the call by an id no hook carries: the intent holds
            # the time its BeforeTool ran and the questions, which the reader pairs it by.
            recipe = question_recipe(dialog, answers)
            at_ns = int(dialog.tool_use_id.partition("tool-")[2] or 0)
            return AnswerPlan(keys=recipe, intent=intent_for(dialog, recipe, at_ns))
        # An approval: the verification below checks the outcome (no intent is recorded).
        return AnswerPlan(keys=choice_for(dialog, answers))

    def encode_intent(self, intent: Any) -> Any:
        return intent.to_json() if isinstance(intent, QuestionIntent) else intent

    def decode_intent(self, data: Any) -> Any:
        return QuestionIntent.from_json(data) if isinstance(data, dict) else data

    def await_shown(self, run: RunHandle, tmux: Tmux, dialog: Dialog, plan: AnswerPlan) -> None:
        """§7: a dialog is drawn just after its Notification hook; keys wait for it."""
        deadline = time.monotonic() + SHOWN_TIMEOUT_S
        while True:
            pending = self.spool_view(run).pending
            if pending is None or pending.dialog.tool_use_id != dialog.tool_use_id:
                raise StaleDialog("This dialog is no longer waiting for an answer. Nothing was sent.")
            if pending.shown_ns:
                break
            if time.monotonic() >= deadline:
                what = "plan" if dialog.kind == DialogKind.PLAN else "question"
                raise ReplyNotDelivered(
                    f"{self.display_name()} has not shown the {what} yet, so lab sent nothing. "
                    "Try again, or look at its Terminal view."
                )
            time.sleep(POLL_S)
        wait = APPROVAL_SETTLE_S - (time.time_ns() - pending.shown_ns) / 1e9
        if wait > 0:
            time.sleep(wait)

    def pending_since(self, run: RunHandle, dialog: Dialog) -> int | None:
        now = self.spool_view(run).pending
        if now is None or now.dialog.tool_use_id != dialog.tool_use_id:
            return None
        return now.seen_ns or now.shown_ns

    def play_answer(self, run: RunHandle, tmux: Tmux, dialog: Dialog, plan: AnswerPlan) -> None:
        if isinstance(plan.keys, Recipe):
            for op in plan.keys.ops:
                if op.kind == OpKind.PASTE:
                    tmux.paste(run.tmux_session, op.value)
                else:
                    tmux.send_keys(run.tmux_session, op.value)
                time.sleep(op.pause_after)
            return
        choice: Choice = plan.keys
        tmux.send_keys(run.tmux_session, choice.tmux_key)

    def verify_answer(
        self, run: RunHandle, tmux: Tmux, dialog: Dialog, plan: AnswerPlan, mark: AnswerMark
    ) -> None:
        """An allowed call's AfterTool hook; a declined one's "Request cancelled."; an answered
        question's AfterTool, whose answers must be the ones sent."""
        if isinstance(plan.keys, Recipe):
            self._verify_question(run, plan.intent, mark)
            return
        choice: Choice = plan.keys
        if dialog.kind in (DialogKind.QUESTION, DialogKind.PLAN):
            if not self._wait_answered(run, mark, allows=False):
                what = "question" if dialog.kind == DialogKind.QUESTION else "plan's turn"
                raise ReplyNotDelivered(
                    f"Esc was sent but Gemini CLI has not recorded the {what} as cancelled. "
                    "Look at its Terminal view before answering again."
                )
            return
        if not self._wait_answered(run, mark, allows=choice.allows):
            if choice.allows:
                raise ReplyNotDelivered(
                    "The approval was sent, but Gemini CLI has recorded no result for the call yet: "
                    "it may still be running. The chat shows the result when it lands."
                )
            raise ReplyNotDelivered(
                "The answer was sent but Gemini CLI has not recorded it. Look at its Terminal view"
                " before answering again."
            )
        if choice.key == DENY and choice.text:
            self.reply(run, choice.text)

    def _verify_question(self, run: RunHandle, intent: QuestionIntent, mark: AnswerMark) -> None:
        """§7: the ask_user (exit_plan_mode) call's AfterTool carries what the tool recorded
        (`tool_response`'s llmContent); an answer that is not the one sent is no success."""
        tool = PLAN_TOOL if intent.kind == "plan" else ASK_TOOL
        deadline = time.monotonic() + VERIFY_TIMEOUT_S
        new = NewLines(mark.path, mark.size)
        while True:
            for event in spool_events(run.spool_dir):
                if (
                    event.get("hook_event_name") == "AfterTool"
                    and event.get("tool_name") == tool
                    and str(event.get("_spool_name")) not in mark.spool_names
                ):
                    response = event.get("tool_response")
                    output = response.get("llmContent") if isinstance(response, dict) else None
                    problem = result_mismatch(intent, output)
                    if problem:
                        raise ReplyNotDelivered(problem)
                    return
            if any(transcript.CANCELLED.encode() in line for line in new.read()):
                what = "plan" if intent.kind == "plan" else "question"
                raise ReplyNotDelivered(
                    f"Gemini CLI cancelled the {what} instead of recording lab's answer: the turn "
                    "has ended. Send your answer as a message if it still matters."
                )
            if time.monotonic() >= deadline:
                raise ReplyNotDelivered(
                    "The answer was sent but Gemini CLI has not recorded it. Look at its Terminal view"
                    " before answering again."
                )
            time.sleep(POLL_S)

    def _wait_answered(self, run: RunHandle, mark: AnswerMark, *, allows: bool) -> bool:
        deadline = time.monotonic() + VERIFY_TIMEOUT_S
        new = NewLines(mark.path, mark.size)
        while True:
            if allows and any(
                e.get("hook_event_name") == "AfterTool" and str(e.get("_spool_name")) not in mark.spool_names
                for e in spool_events(run.spool_dir)
            ):
                return True
            if not allows and any(transcript.CANCELLED.encode() in line for line in new.read()):
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(POLL_S)


def guard_parameters(env: Mapping[str, str]) -> dict[str, str]:
    """§13: Gemini's shell appends `core.hooksPath=""` to the GIT_CONFIG_COUNT entries of every
    command it runs (turning off every git hook, lab's commit guard with them), but passes
    GIT_CONFIG_PARAMETERS through, which git applies after them: the hooks path lab set is
    repeated there. {} when the environment sets none."""
    count = env.get("GIT_CONFIG_COUNT", "0")
    hooks = [
        env.get(f"GIT_CONFIG_VALUE_{i}", "")
        for i in range(int(count) if count.isdigit() else 0)
        if env.get(f"GIT_CONFIG_KEY_{i}", "").lower() == "core.hookspath"
    ]
    if not hooks:
        return {}
    quoted = "'core.hooksPath'=" + "'" + hooks[-1].replace("'", "'\\''") + "'"
    earlier = env.get("GIT_CONFIG_PARAMETERS", "")
    return {"GIT_CONFIG_PARAMETERS": f"{earlier} {quoted}" if earlier else quoted}


def _hook_running(tmux: Tmux, run: RunHandle) -> bool:
    """Whether a process under the pane runs lab's hook writer (§4)."""
    pid = tmux.pane_pid(run.tmux_session)
    if pid is None:
        return False
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 1 and fields[1].isdigit():
            children.setdefault(int(fields[1]), []).append(int(entry))
    todo = list(children.get(pid, []))
    while todo:
        current = todo.pop()
        try:
            with open(f"/proc/{current}/cmdline", "rb") as f:
                if HOOK_WRITER in f.read():
                    return True
        except OSError:
            pass
        todo.extend(children.get(current, []))
    return False


def _raw_mode(tty: str) -> bool:
    """Whether the pane's terminal is out of canonical mode (the CLI reads keys one by one)."""
    if not tty.startswith("/dev/pts/"):
        return False
    try:
        fd = os.open(tty, os.O_RDONLY | os.O_NOCTTY | os.O_NONBLOCK)
    except OSError:
        return False
    try:
        return not termios.tcgetattr(fd)[3] & termios.ICANON
    except termios.error:
        return False
    finally:
        os.close(fd)


def _iso_ns(line: bytes) -> int:
    """The record's "timestamp" (ISO, UTC) in ns; 0 when it has none."""
    at = line.find(b'"timestamp":"')
    if at < 0:
        return 0
    start = at + len(b'"timestamp":"')
    stamp = line[start : line.find(b'"', start)].decode(errors="replace")
    try:
        return int(datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() * 1e9)
    except ValueError:
        return 0
