"""The Codex CLI adapter: the only code in lab that knows Codex exists. Declarations on the TUI
kit (providers/tui.py), which owns the reply, interrupt and answer protocols.

Every CLI fact used here is pinned in compat/codex/COMPAT-adapter.md and cites its section.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar

from django.conf import settings

from providers.base import RESUME_OPTION
from providers.bounded import put_bounded
from providers.codex import auth, transcript, trust
from providers.codex.commands import CLEAR, command_catalog
from providers.codex.dialogs import DENY, Choice, choice_for
from providers.codex.seed import (
    SEED_META,
    config_policy_drops,
    install_hooks,
    shell_policy_drops,
    trust_project,
)
from providers.codex.spool import SpoolView, current_identity, fold, write_clear_marker
from providers.errors import (
    DialogNotAnswerable,
    ReplyNotDelivered,
    ReplyRefused,
    SessionGone,
    SpawnFailed,
    StaleDialog,
    StillStarting,
    TranscriptUnreadable,
)
from providers.hook_writer import SPOOL_ENV
from providers.hookspool import spool_events
from providers.safefile import UnsafeFile, read_head, read_tail, write_private
from providers.schema import (
    Answer,
    AuthFlow,
    AuthFlowKind,
    CommandSpec,
    Cursor,
    Dialog,
    MessageKind,
    ProjectServers,
    RepositorySetting,
    RunHandle,
    RunState,
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
    AuthFromModule,
    AuthVerbs,
    NewLines,
    PastesAttachments,
)

READ_BUDGET = 4 * 1024 * 1024
# §4 (readiness): the composer takes a paste once it is drawn (alternate screen on, cursor
# shown); before that keys are lost. Bounded wait, then StillStarting (nothing sent).
READY_TIMEOUT_S = 20.0
READY_STEADY_S = 1.2
# §7: the PermissionRequest hook runs before the prompt is drawn (0.2-0.9 s before, live); the
# prompt hides the cursor while it shows. Keys go after it is drawn and settled.
PROMPT_SHOWN_TIMEOUT_S = 5.0
APPROVAL_SETTLE_S = 0.3
KEY_LANDED_TIMEOUT_S = 2.0
VERIFY_TIMEOUT_S = 15.0
CLEAR_TIMEOUT_S = 10.0
MAX_CACHE = 256
MAX_RESOLVED = 1000
TAIL_BYTES = 1024 * 1024
USAGE_TAIL_BYTES = 256 * 1024  # a token_count follows every request: the last one is near the end


SESSION_META_BYTES = 256 * 1024  # a rollout's first line (session_meta carries the instructions)
SESSION_HEAD_BYTES = 512 * 1024  # where a session's first prompt is looked for


class CodexProvider(AuthFromModule, PastesAttachments[SpoolView]):
    id = "codex"
    auth: ClassVar[AuthVerbs] = auth  # §10: an API key, or the CLI's own login
    binary_name = "codex"
    # §4 (reply pacing): Enter after the paste has landed; retried once on an unrecorded send.
    # §6: a PreToolUse may be followed by its PermissionRequest; a reply waits this long first.
    tool_settle_s = 1.5
    # §2 (images): a pasted image path becomes "[Image #N]" (the CLI's own image input).
    image_settle_s = 1.0

    def __init__(self) -> None:
        super().__init__()
        self._guard = threading.Lock()
        self._resolved: dict[str, None] = {}  # call ids a transcript read showed answered
        self._cursors: dict[str, Cursor] = {}  # _state_now's cursor per rollout

    # --- declarations ----------------------------------------------------------------------

    def display_name(self) -> str:
        return "Codex"

    def auth_flow(self) -> AuthFlow:
        return AuthFlow(
            kind=AuthFlowKind.API_KEY,
            instructions=(
                "Codex runs with an API key: set OPENAI_API_KEY in lab's agent environment "
                "(LAB_AGENT_ENV), or configure a model provider and its key variable in lab's "
                "Codex config."
            ),
            credential_name="OPENAI_API_KEY",
        )

    def seed_meta(self) -> SeedMeta:
        return SEED_META

    def spawn_options(self) -> list[SpawnOption]:
        return [
            SpawnOption(
                name="approval",
                label="Approvals",
                # §4: --ask-for-approval values 0.171.0 accepts that keep a human in the loop
                # or are safe inside the sandbox.
                choices=(
                    ("on-request", "Ask before running outside the sandbox"),
                    ("untrusted", "Ask before every command that is not known safe"),
                    ("never", "Never ask (commands stay in the sandbox)"),
                ),
                default="on-request",
                help_text="When Codex stops to ask before running a command.",
            ),
            SpawnOption(
                name="sandbox",
                label="Sandbox",
                choices=(
                    ("workspace-write", "Write inside the worktree"),
                    ("read-only", "Read only"),
                ),
                default="workspace-write",
            ),
        ]

    def commands(self, worktree: Path) -> list[CommandSpec]:
        return command_catalog(Path(worktree))

    # --- process ---------------------------------------------------------------------------

    def codex_home(self) -> Path:
        configured = settings.LAB_AGENT_ENV.get("CODEX_HOME")
        return Path(configured).expanduser() if configured else self.home() / ".codex"

    def env_overrides(self) -> dict[str, str]:
        return {"CODEX_HOME": str(self.codex_home())}

    def sessions(self, worktree: Path) -> list[SessionInfo]:
        """§1 (resume): the rollouts under CODEX_HOME/sessions whose session_meta names this
        worktree as its cwd."""
        cwd = os.path.realpath(worktree)
        found = []
        for path in (self.codex_home() / "sessions").glob("*/*/*/rollout-*.jsonl"):
            try:
                meta = transcript.session_meta(read_head(str(path), SESSION_META_BYTES))
                if meta is None or meta[1] != cwd:
                    continue
                st = path.lstat()
                read = transcript.read_transcript(
                    str(path), Cursor(), max_bytes=SESSION_HEAD_BYTES, max_passes=1
                )
            except (OSError, UnsafeFile, TranscriptUnreadable):
                continue
            first = next((m.text for m in read.messages if m.kind == MessageKind.USER_TEXT), "")
            found.append(SessionInfo(meta[0], str(path), first[:200], st.st_mtime, st.st_size))
        return sorted(found, key=lambda s: s.last_activity, reverse=True)

    def spawn(self, run: RunHandle, options: Mapping[str, str]) -> SpawnResult:
        declared = {o.name: o for o in self.spawn_options()}
        # §4: the default daemon outlives tmux; the pinned version is the verified one, so no
        # update check (its prompt would hold the TUI at start).
        argv = [self.binary(), "--no-daemon", "-c", "check_for_update_on_startup=false"]
        # §16: near a rate limit 0.171.0 opens a "switch model?" picker; a reply typed then would
        # pick its first row (another model). lab's continue must land at the prompt.
        argv += ["-c", "notice.hide_rate_limit_model_nudge=true"]
        resumed: SessionInfo | None = None
        if resume := options.get(RESUME_OPTION, ""):
            # §1 (resume): `codex resume <id>` appends to the thread's own rollout; its
            # SessionStart (source "resume") names it only at the first submit.
            resumed = next((s for s in self.sessions(Path(run.worktree)) if s.session_id == resume), None)
            if resumed is None:
                raise SpawnFailed(f"No {self.display_name()} session {resume!r} in {run.worktree} to resume.")
            argv = [self.binary(), "resume", resume, *argv[1:]]
        for name, flag in (("approval", "--ask-for-approval"), ("sandbox", "--sandbox")):
            value = options.get(name, declared[name].default)
            if value not in {v for v, _ in declared[name].choices}:
                raise SpawnFailed(f"Unknown {declared[name].label.lower()} setting {value!r}.")
            argv += [flag, value]
        if not run.spool_dir:
            raise SpawnFailed("Codex runs need a spool directory for their transcript's location.")
        Path(run.spool_dir).mkdir(parents=True, exist_ok=True, mode=0o700)
        # §6, §9: without trust the TUI holds on a trust screen (folder) or silently skips the
        # hooks; both are written the way Codex writes them when the operator accepts.
        try:
            trust_project(self.codex_home(), Path(run.worktree))
            install_hooks(self.codex_home())
        except OSError as exc:
            raise SpawnFailed(f"lab could not prepare Codex's config: {exc.strerror}") from None
        # §13: what lab puts in the run's environment (the commit guard) must reach the agent's
        # shell; an operator's shell_environment_policy that drops it would let the agent commit
        # unguarded (or break every git it runs), so that run does not start.
        guarded = [name for name, _ in run.env]
        dropped, setting = shell_policy_drops(self.codex_home(), guarded)
        if dropped:
            raise SpawnFailed(
                f"Codex's {setting} in {self.codex_home() / 'config.toml'} keeps "
                f"{', '.join(dropped)} from the agent's shell: lab's commit guard would not apply. "
                "Let these names through (or remove the setting) to start Codex runs."
            )
        argv += self.repository_layer_args(run, guarded)
        env = {**self.agent_env(), **dict(run.env), SPOOL_ENV: run.spool_dir}
        Tmux(run.tmux_socket).new_session(
            run.tmux_session,
            cwd=os.path.realpath(run.worktree),
            argv=argv,
            env=env,
            env_dir=str(Path(run.spool_dir).parent),
        )
        if resumed is not None:
            return SpawnResult(session_id=resumed.session_id, transcript_path=resumed.path)
        return SpawnResult(session_id="", transcript_path=self.placeholder(run.spool_dir))

    def repository_layer_args(self, run: RunHandle, guarded: list[str]) -> list[str]:
        """§15: the worktree's own `.codex/` layer. Untrusted, Codex has no way to start without
        it but its "Open restricted" screen, so a worktree that has one does not start. Trusted,
        it loads: its shell policy must keep the commit guard, and its MCP servers start only
        if the operator approved them (else each is turned off by an override)."""
        worktree = Path(run.worktree)
        entries = trust.project_entries(worktree)
        if not run.trusted:
            if entries:
                names = ", ".join(
                    e if e == trust.PROJECT_DIR else f"{trust.PROJECT_DIR}/{e}" for e in entries
                )
                raise SpawnFailed(
                    f"The repository has Codex project settings ({names}) "
                    "and is not trusted. Codex 0.171.0 cannot start without them except on a screen lab "
                    "does not drive: trust the repository on the new-run page, or remove .codex/ from "
                    "the branch, to start this run."
                )
            return []
        problems: list[RepositorySetting] = []
        config = trust.project_config(worktree, problems)
        if problems:
            raise SpawnFailed(f"The repository's .codex/config.toml: {problems[0].detail}.")
        dropped, setting = config_policy_drops(config or {}, guarded)
        if dropped:
            raise SpawnFailed(
                f"The repository's .codex/config.toml sets {setting}, which keeps {', '.join(dropped)} "
                "from the agent's shell: lab's commit guard would not apply. Remove the setting to start."
            )
        if run.choices.project_servers == ProjectServers.APPROVE:
            return []
        args = []
        for name, override in trust.disabled_servers(config).items():
            if not trust.PLAIN_NAME.fullmatch(name):
                raise SpawnFailed(f"lab cannot turn off the repository's MCP server {name!r} (its name).")
            args += ["-c", f"mcp_servers.{name}={override}"]
        return args

    @staticmethod
    def placeholder(spool_dir: str) -> str:
        """§5: the rollout is written at the first submit, under a name lab cannot know before.
        Until then the run's transcript is this empty file's name in the spool (a missing file
        reads empty), and the SessionStart hook that lands beside it names the real one."""
        return os.path.join(spool_dir, "00000000000000000000-start.jsonl")

    def seed_workspace(self, worktree: Path, choices: WorkspaceChoices | None = None) -> list[Path]:
        # §9: WorkspaceChoices: 0.171.0 adds no attribution line to commits (nothing to turn
        # off); a repository's MCP servers come only from its .codex/config.toml, which loads
        # in a trusted run only and is answered at spawn (repository_layer_args).
        return [*trust_project(self.codex_home(), Path(worktree)), *install_hooks(self.codex_home())]

    # --- repository trust (trust.py) -------------------------------------------------------

    def repository_settings(self, checkout: Path) -> list[RepositorySetting]:
        return trust.repository_settings(Path(checkout))

    def repository_trusted(self, repository: Path) -> bool:
        return trust.repository_trusted(self.codex_home(), Path(repository))

    def trust_repository(self, repository: Path) -> list[Path]:
        return trust.trust_repository(self.codex_home(), Path(repository))

    # --- transcript (transcript.py; the spool's identity rule in spool.py) --------------------

    def _valid_rollout(self, path: str) -> bool:
        p = Path(path)
        if ".." in p.parts or p.suffix != ".jsonl" or not p.name.startswith("rollout-"):
            return False
        root = os.path.realpath(self.codex_home() / "sessions")
        return os.path.realpath(p.parent).startswith(root + os.sep)

    def locate_in_spool(self, run: RunHandle, events: list[dict[str, Any]]) -> str:
        """§5: the newest of the SessionStart hooks' paths (a thread's first submit: at launch,
        after /new, after /clear) and lab's own clear marker (the new thread before its first
        submit). Both land in the spool dir, so a change is a file event there."""
        found = current_identity(run.spool_dir, events, valid=self._valid_rollout)
        # A resumed thread's rollout is known from spawn (run.transcript_path) until its hook.
        return found.path if found else (run.transcript_path or self.placeholder(run.spool_dir))

    def parse_transcript(self, path: str, cursor: Cursor, intents: Mapping[str, Any]) -> TranscriptRead:
        read = transcript.read_transcript(path, cursor, intents, max_bytes=READ_BUDGET, max_passes=1)
        done = [m.native_id for m in read.messages if m.kind == MessageKind.TOOL_RESULT and m.native_id]
        if done:
            self._note_resolved(done)
        return read

    def _note_resolved(self, call_ids: Iterable[str]) -> None:
        with self._guard:
            for call_id in call_ids:
                put_bounded(self._resolved, call_id, None, MAX_RESOLVED)

    def records_prompt(self, line: bytes, want: str) -> bool:
        return transcript.records_prompt(line, want)

    def records_images(self, line: bytes) -> list[str]:
        return transcript.records_images(line)

    def _state_now(self, run: RunHandle) -> RunState:
        """The transcript's state now, read on from this process's last cursor for the path."""
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
        with self._guard:
            resolved = frozenset(self._resolved)
        return fold(events, resolved | answered)

    def open_ids(self, view: SpoolView) -> frozenset[str]:
        # A pending approval is re-checked on every call: a decline closes it with no hook.
        return frozenset({view.pending.dialog.tool_use_id}) if view.pending is not None else frozenset()

    def answered_among(self, run: RunHandle, ids: frozenset[str]) -> frozenset[str]:
        """§6: a declined call gets no hook; its output in the rollout (or the turn's abort)
        closes it (another worker may have read that line, not this one)."""
        with self._guard:
            known = ids & self._resolved.keys()
        rest = ids - known
        if not rest:
            return frozenset(known)
        try:
            tail = read_tail(self.locate_transcript(run), TAIL_BYTES)
        except OSError:  # missing, or not a regular file
            return frozenset(known)
        closed = {i for i in rest if _closed_in(tail, i.encode())}
        self._note_resolved(closed)
        return frozenset(known | closed)

    def usage(self, run: RunHandle) -> Usage | None:
        """§16: the rollout's last token_count, from its tail (a bounded read)."""
        path = self.locate_transcript(run)
        if not path:
            return None
        try:
            tail = read_tail(path, USAGE_TAIL_BYTES)
            at_ns = os.stat(path).st_mtime_ns
        except (OSError, UnsafeFile):
            return None
        return transcript.last_usage(tail, at_ns)

    def asking(self, run: RunHandle, view: SpoolView) -> Asking | None:
        if view.pending is not None:
            return Asking("for approval", "allow or deny it")
        return Asking("for approval") if view.blocked else None

    # --- input (the protocols are the kit's) -------------------------------------------------

    def enter_delay(self, text: str) -> float:
        return 0.3  # §4 (reply pacing): Enter after the paste has landed

    def wait_ready(self, run: RunHandle, tmux: Tmux) -> None:
        """§4 (readiness): the TUI switches to the alternate screen and shows its cursor when its
        composer is drawn; lab reads tmux's flags for that (terminal state, not the screen's
        text). A first-run screen (folder trust, hooks review) is drawn about 0.4 s *after* the
        composer and hides the cursor, so the composer counts as live only once the cursor has
        stayed shown for READY_STEADY_S; until then nothing is sent."""
        deadline = time.monotonic() + READY_TIMEOUT_S
        steady_since: float | None = None
        while True:
            flags = tmux.pane_format(run.tmux_session, "#{alternate_on} #{cursor_flag} #{pane_dead}")
            if flags is None:
                raise SessionGone("The agent's terminal session is gone.")
            alternate, cursor, dead = [*flags.split(), "", "", ""][:3]
            if dead == "1":
                raise SessionGone(f"{self.display_name()} has exited.")
            if _ready_marker(run):
                # Live before: a hidden cursor now is a prompt or screen over the composer (§7),
                # unless it is only a redraw.
                if cursor == "1" or self._cursor_hidden(tmux, run, False, 1.0):
                    return
                raise ReplyRefused(
                    f"{self.display_name()} shows a prompt or screen in its terminal: nothing was "
                    "sent. Look at its Terminal view."
                )
            now = time.monotonic()
            steady_since = (steady_since or now) if alternate == "1" and cursor == "1" else None
            if steady_since is not None and now - steady_since >= READY_STEADY_S:
                _ready_marker(run, mark=True)
                return
            if now >= deadline:
                raise StillStarting(
                    f"{self.display_name()} is still starting, or shows a screen lab does not answer: "
                    "nothing was sent. Look at its Terminal view."
                )
            time.sleep(POLL_S)

    def special_send(self, run: RunHandle, tmux: Tmux, text: str, want: str) -> bool:
        """§5: /clear starts a new thread at once, and the TUI opens the new thread's lock file
        (`$CODEX_HOME/thread-writer-locks/<thread>.lock`): that open file, in this run's own
        process tree, is the receipt. No rollout is written until the next submit, so lab's marker in
        the spool is the new conversation's identity meanwhile."""
        if want != f"/{CLEAR}":
            return False
        pid = tmux.pane_pid(run.tmux_session)
        if pid is None:
            raise SessionGone("The agent's terminal session is gone.")
        before = _thread_locks(pid)
        tmux.paste(run.tmux_session, text)
        time.sleep(self.enter_delay(text))
        tmux.send_keys(run.tmux_session, "Enter")
        deadline = time.monotonic() + CLEAR_TIMEOUT_S
        while not (_thread_locks(pid) - before):
            if time.monotonic() >= deadline:
                raise ReplyNotDelivered(
                    f"{self.display_name()} has not started a new conversation after /{CLEAR}. "
                    "Look at its Terminal view."
                )
            time.sleep(POLL_S)
        stamp = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        write_clear_marker(run.spool_dir, text.strip(), time.time_ns(), stamp)
        return True

    def interrupt_applies(self, run: RunHandle) -> bool:
        """§11: one Esc stops a working turn. Sent only while the rollout says the turn works:
        at idle a first Esc arms "esc again to edit previous message" and a second opens that
        editor. Never Ctrl-C: it opens a dialog while working and exits at idle."""
        return self._state_now(run) == RunState.WORKING

    # --- answers (§7, dialogs.py): one key per option (y, p, Esc) ----------------------------

    def plan_answer(self, dialog: Dialog, answers: Sequence[Answer]) -> AnswerPlan:
        choice = choice_for(dialog, answers)
        return AnswerPlan(keys=choice, intent="allow" if choice.allows else "deny")

    def await_shown(self, run: RunHandle, tmux: Tmux, dialog: Dialog, plan: AnswerPlan) -> None:
        """§7: the prompt hides the terminal's cursor while it is drawn (tmux's flag, not the
        screen's text); a key sent before that is lost."""
        if self.pending_since(run, dialog) is None:
            raise StaleDialog("This dialog is no longer waiting for an answer. Nothing was sent.")
        if not self._prompt_shown(tmux, run):
            raise DialogNotAnswerable(
                f"{self.display_name()}'s approval prompt is not on its screen; lab sent nothing. "
                "Look at its Terminal view."
            )

    def pending_since(self, run: RunHandle, dialog: Dialog) -> int | None:
        now = self.spool_view(run).pending
        if now is None or now.dialog.tool_use_id != dialog.tool_use_id:
            return None
        return now.seen_ns or now.shown_ns

    def play_answer(self, run: RunHandle, tmux: Tmux, dialog: Dialog, plan: AnswerPlan) -> None:
        """The key, and once more only if the prompt is still there (the key was dropped,
        nothing else can have moved)."""
        choice: Choice = plan.keys
        tmux.send_keys(run.tmux_session, choice.tmux_key)
        if not self._cursor_hidden(tmux, run, False, KEY_LANDED_TIMEOUT_S):
            again = self.spool_view(run).pending
            if again is not None and again.dialog.tool_use_id == dialog.tool_use_id:
                tmux.send_keys(run.tmux_session, choice.tmux_key)

    def verify_answer(
        self, run: RunHandle, tmux: Tmux, dialog: Dialog, plan: AnswerPlan, mark: AnswerMark
    ) -> None:
        """Verified by the rollout: the call's output, or the turn's abort for a decline."""
        choice: Choice = plan.keys
        if not self._wait_answered(run, dialog.tool_use_id, mark, allows=choice.allows):
            if choice.allows:
                raise ReplyNotDelivered(
                    "The approval was sent, but Codex has recorded no result for the command yet: it "
                    "may still be running. The chat shows the result when it lands."
                )
            raise ReplyNotDelivered(
                "The answer was sent but Codex has not recorded it. Look at its Terminal view"
                " before answering again."
            )
        if choice.key == DENY and choice.text:
            self.reply(run, choice.text)

    def _prompt_shown(self, tmux: Tmux, run: RunHandle) -> bool:
        """§7: the cursor hidden for APPROVAL_SETTLE_S without a break: the prompt is drawn. (A
        redraw may hide it for an instant; a key sent then could land in the composer.)"""
        deadline = time.monotonic() + PROMPT_SHOWN_TIMEOUT_S
        hidden_since: float | None = None
        while True:
            flag = tmux.pane_format(run.tmux_session, "#{cursor_flag}")
            if flag is None:
                raise SessionGone("The agent's terminal session is gone.")
            now = time.monotonic()
            hidden_since = (hidden_since or now) if flag == "0" else None
            if hidden_since is not None and now - hidden_since >= APPROVAL_SETTLE_S:
                return True
            if now >= deadline:
                return False
            time.sleep(POLL_S / 2)

    def _cursor_hidden(self, tmux: Tmux, run: RunHandle, hidden: bool, timeout: float) -> bool:
        """Wait, bounded, until the pane's cursor is hidden (`hidden`) or shown again."""
        deadline = time.monotonic() + timeout
        while True:
            flag = tmux.pane_format(run.tmux_session, "#{cursor_flag}")
            if flag is None:
                raise SessionGone("The agent's terminal session is gone.")
            if (flag == "0") == hidden:
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(POLL_S)

    def _wait_answered(self, run: RunHandle, call_id: str, mark: AnswerMark, *, allows: bool) -> bool:
        needle = call_id.encode()
        deadline = time.monotonic() + VERIFY_TIMEOUT_S
        new = NewLines(mark.path, mark.size)
        while True:
            if allows and any(
                e.get("hook_event_name") == "PostToolUse" and e.get("tool_use_id") == call_id
                for e in spool_events(run.spool_dir)
            ):
                return True
            for line in new.read():
                if needle in line and b'"function_call_output"' in line:
                    return True
                if not allows and b'"turn_aborted"' in line:
                    return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(POLL_S)


def _closed_in(tail: bytes, needle: bytes) -> bool:
    """The call's output in the rollout's tail, or a turn_aborted after its function_call: a
    decline that wrote no output line."""
    if any(needle in line and b'"function_call_output"' in line for line in tail.splitlines()):
        return True
    at = tail.rfind(needle)
    return at >= 0 and b'"turn_aborted"' in tail[at:]


def _descendants(pid: int) -> list[int]:
    """`pid` and every process under it. The pane's process is whatever launched Codex: from
    node_modules/.bin it is the node shim, and the native binary that opens the lock files is
    its child (§5)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        # The command name sits in parentheses and may hold spaces: the fields follow its last ")".
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 1 and fields[1].isdigit():
            children.setdefault(int(fields[1]), []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        if current not in found:
            found.append(current)
            todo.extend(children.get(current, []))
    return found


def _thread_locks(pid: int) -> set[str]:
    """The thread lock files (§5) open in the pane's process tree: one per thread it writes."""
    found: set[str] = set()
    for proc in _descendants(pid):
        try:
            fds = os.listdir(f"/proc/{proc}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                target = os.readlink(f"/proc/{proc}/fd/{fd}")
            except OSError:
                continue
            if f"{os.sep}thread-writer-locks{os.sep}" in target and target.endswith(".lock"):
                found.add(target)
    return found


def _ready_marker(run: RunHandle, *, mark: bool = False) -> int:
    """When lab first saw the composer live (0: not yet): the settle is paid once per run."""
    path = os.path.join(run.spool_dir, ".ready")
    if mark:
        # The agent can write in its spool: a link planted here is replaced, never written through.
        write_private(path, str(time.time_ns()).encode())
        return 1
    return 1 if os.path.lexists(path) else 0
