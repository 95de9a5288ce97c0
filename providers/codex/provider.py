"""The Codex CLI adapter: the only code in lab that knows Codex exists.

Every CLI fact used here is pinned in compat/codex/COMPAT-adapter.md and cites its section.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Hashable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path

import orjson
from django.conf import settings

from providers.base import AgentProvider
from providers.codex import transcript, trust
from providers.codex.commands import CLEAR, command_catalog
from providers.codex.dialogs import DENY, choice_for
from providers.codex.seed import (
    SEED_META,
    SPOOL_ENV,
    config_policy_drops,
    install_hooks,
    shell_policy_drops,
    trust_project,
)
from providers.codex.spool import (
    SpoolView,
    current_identity,
    event_time_ns,
    fold,
    write_clear_marker,
)
from providers.errors import (
    DialogNotAnswerable,
    PromptPending,
    ReplyInFlight,
    ReplyNotDelivered,
    ReplyRefused,
    SessionGone,
    SpawnFailed,
    StaleDialog,
    StillStarting,
)
from providers.hookspool import spool_events, spool_signature
from providers.outbox import (
    REPLY_TURN_WAIT_S,
    Outbox,
    keys_lock,
    last_interrupt_ns,
    mark_interrupt,
    normalize,
    reply_lock,
)
from providers.safefile import read_head, read_tail
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
    MessageKind,
    ProjectServers,
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

READ_BUDGET = 4 * 1024 * 1024
POLL_S = 0.05
# §4 (readiness): the composer takes a paste once it is drawn (alternate screen on, cursor
# shown); before that keys are lost. Bounded wait, then StillStarting (nothing sent).
READY_TIMEOUT_S = 20.0
READY_STEADY_S = 1.2
# §4 (reply pacing): Enter after the paste has landed; retried once on an unrecorded send.
ENTER_DELAY_S = 0.3
RETRY_ENTER_AFTER_S = 3.0
DELIVERY_TIMEOUT_S = 20.0
# §6: a PreToolUse may be followed by its PermissionRequest; a reply waits this long first.
TOOL_SETTLE_S = 1.5
# §7: the PermissionRequest hook runs before the prompt is drawn (0.2-0.9 s before, live); the
# prompt hides the cursor while it shows. Keys go after it is drawn and settled.
PROMPT_SHOWN_TIMEOUT_S = 5.0
APPROVAL_SETTLE_S = 0.3
KEY_LANDED_TIMEOUT_S = 2.0
VERIFY_TIMEOUT_S = 15.0
CLEAR_TIMEOUT_S = 10.0
# A reply sent while another send (a /clear, a reply awaiting its receipt) holds the run waits
# its turn this long: about one send's own worst case (ready, settle, both delivery waits).
MAX_CACHE = 256
# §4 (mode prefixes): a leading "!" runs the rest as a shell command in the user's shell.
SHELL_PREFIX = "!"
TAIL_BYTES = 1024 * 1024
READ_CHUNK = 64 * 1024 * 1024  # a verify loop's read per poll, bounded: the rest comes next poll


class CodexProvider(AgentProvider):
    id = "codex"

    def __init__(self) -> None:
        # One instance per process (providers.registry): this state outlives a request.
        self._guard = threading.Lock()
        self._intents: OrderedDict[str, str] = OrderedDict()  # call_id → allow | deny
        self._resolved: OrderedDict[str, None] = OrderedDict()
        self._views: OrderedDict[str, tuple[Hashable, SpoolView]] = OrderedDict()
        self._located: OrderedDict[str, tuple[Hashable, str]] = OrderedDict()
        self._cursors: OrderedDict[str, Cursor] = OrderedDict()

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

    def binary(self) -> str:
        return str(Path(settings.LAB_AGENT_BIN_DIR) / "codex")

    def home(self) -> Path:
        return Path(settings.LAB_AGENT_HOME or os.environ.get("HOME", "/root")).expanduser()

    def codex_home(self) -> Path:
        configured = settings.LAB_AGENT_ENV.get("CODEX_HOME")
        return Path(configured).expanduser() if configured else self.home() / ".codex"

    def agent_env(self) -> dict[str, str]:
        env = {
            "HOME": str(self.home()),
            "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
            "TERM": "xterm-256color",
            "LANG": os.environ.get("LANG", "C.UTF-8"),
            "USER": os.environ.get("USER", "root"),
            "SHELL": os.environ.get("SHELL", "/bin/bash"),
        }
        env.update(settings.LAB_AGENT_ENV)
        env["CODEX_HOME"] = str(self.codex_home())
        return env

    def spawn(self, run: RunHandle, options: Mapping[str, str]) -> SpawnResult:
        declared = {o.name: o for o in self.spawn_options()}
        # §4: the default daemon outlives tmux; the pinned version is the verified one, so no
        # update check (its prompt would hold the TUI at start).
        argv = [self.binary(), "--no-daemon", "-c", "check_for_update_on_startup=false"]
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

    # --- transcript ------------------------------------------------------------------------

    def _valid_rollout(self, path: str) -> bool:
        p = Path(path)
        if ".." in p.parts or p.suffix != ".jsonl" or not p.name.startswith("rollout-"):
            return False
        root = os.path.realpath(self.codex_home() / "sessions")
        return os.path.realpath(p.parent).startswith(root + os.sep)

    def locate_transcript(self, run: RunHandle) -> str:
        """§5: the newest of the SessionStart hooks' paths (a thread's first submit: at launch,
        after /new, after /clear) and lab's own clear marker (the new thread before its first
        submit). Both land in the spool dir, so a change is a file event there."""
        if not run.spool_dir:
            return run.transcript_path
        key = spool_signature(run.spool_dir)
        with self._guard:
            cached = self._located.get(run.spool_dir)
        if cached is not None and cached[0] == key:
            return cached[1]
        found = current_identity(run.spool_dir, spool_events(run.spool_dir), valid=self._valid_rollout)
        located = found.path if found else self.placeholder(run.spool_dir)
        with self._guard:
            self._located[run.spool_dir] = (key, located)
            while len(self._located) > MAX_CACHE:
                self._located.popitem(last=False)
        return located

    def read_transcript(self, path: str, cursor: Cursor) -> TranscriptRead:
        with self._guard:
            intents = dict(self._intents)
        read = transcript.read_transcript(path, cursor, intents, max_bytes=READ_BUDGET, max_passes=1)
        done = [m.native_id for m in read.messages if m.kind == MessageKind.TOOL_RESULT and m.native_id]
        if done:
            with self._guard:
                for call_id in done:
                    self._resolved[call_id] = None
                while len(self._resolved) > 1000:
                    self._resolved.popitem(last=False)
        return read

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
            self._cursors[path] = read.cursor
            while len(self._cursors) > MAX_CACHE:
                self._cursors.popitem(last=False)
        return read.state

    # --- live signals (§6) ------------------------------------------------------------------

    def spool_view(self, run: RunHandle) -> SpoolView:
        if not run.spool_dir:
            return SpoolView()
        key = spool_signature(run.spool_dir)
        with self._guard:
            cached = self._views.get(run.spool_dir)
            resolved = frozenset(self._resolved)
        # A pending approval is re-checked on every call: a decline closes it with no hook.
        if cached is not None and cached[0] == key and cached[1].pending is None:
            return cached[1]
        view = fold(spool_events(run.spool_dir), resolved)
        if view.pending is not None and self._closed_in_rollout(run, view.pending.dialog.tool_use_id):
            # §6: a declined call gets no hook; its output in the rollout closes it (another
            # worker may have read that line, not this one).
            view = fold(spool_events(run.spool_dir), resolved | {view.pending.dialog.tool_use_id})
        with self._guard:
            self._views[run.spool_dir] = (key, view)
            while len(self._views) > MAX_CACHE:
                self._views.popitem(last=False)
        return view

    def _closed_in_rollout(self, run: RunHandle, call_id: str) -> bool:
        path = self.locate_transcript(run)
        try:
            tail = read_tail(path, TAIL_BYTES)
        except OSError:  # missing, or not a regular file
            return False
        needle = call_id.encode()
        return any(
            needle in line and b'"function_call_output"' in line for line in tail.splitlines()
        ) or _aborted_after(tail, needle)

    def pending_dialog(self, run: RunHandle) -> Dialog | None:
        return self.spool_view(run).dialog

    def blocked_state(self, run: RunHandle) -> RunState | None:
        return RunState.NEEDS_INPUT if self.spool_view(run).blocked else None

    def sweep(self, run: RunHandle) -> None:
        """Hook payloads older than a turn is likely to need go; SessionStart ones stay (they
        name the conversation) and so does anything a pending approval rests on."""
        if not run.spool_dir:
            return
        view = self.spool_view(run)
        if view.pending is not None or view.unsettled_tool_ns:
            return
        cutoff = time.time_ns() - 600 * 1_000_000_000
        for event in spool_events(run.spool_dir):
            name = str(event.get("_spool_name", ""))
            if event.get("hook_event_name") != "SessionStart" and 0 < event_time_ns(name) < cutoff:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(os.path.join(run.spool_dir, name))

    # --- input -----------------------------------------------------------------------------

    def _asking(self, run: RunHandle) -> bool:
        view = self.spool_view(run)
        return view.pending is not None or view.blocked

    def _refuse_if_asking(self, run: RunHandle) -> None:
        if self._asking(run):
            raise PromptPending(
                f"{self.display_name()} is asking for approval: answer it above. Nothing was sent."
            )

    def _wait_tool_settled(self, run: RunHandle) -> None:
        while True:
            began = self.spool_view(run).unsettled_tool_ns
            if not began or time.time_ns() - began >= TOOL_SETTLE_S * 1e9:
                return
            time.sleep(POLL_S)

    def _wait_ready(self, run: RunHandle, tmux: Tmux) -> None:
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
                    "sent. Check the terminal with the attach command."
                )
            now = time.monotonic()
            steady_since = (steady_since or now) if alternate == "1" and cursor == "1" else None
            if steady_since is not None and now - steady_since >= READY_STEADY_S:
                _ready_marker(run, mark=True)
                return
            if now >= deadline:
                raise StillStarting(
                    f"{self.display_name()} is still starting, or shows a screen lab does not answer: "
                    "nothing was sent. Check the terminal with the attach command."
                )
            time.sleep(POLL_S)

    def prepare_reply(self, text: str) -> str:
        text = sanitize_text(text, max_bytes=settings.LAB_REPLY_MAX_BYTES)
        if text.startswith(SHELL_PREFIX):
            raise ReplyRefused(
                "A message starting with “!” runs as a shell command in Codex's terminal, so lab "
                "does not send it. To send it as text, start it with a space."
            )
        return text

    def reply(self, run: RunHandle, text: str, *, again: bool = False) -> None:
        text = self.prepare_reply(text)
        tmux = Tmux(run.tmux_socket)
        if not tmux.has_session(run.tmux_session):
            raise SessionGone("The agent's terminal session is gone.")
        want = normalize(text)
        with reply_lock(run, wait=REPLY_TURN_WAIT_S):
            outbox = Outbox(run.spool_dir)
            pending = outbox.find(want)
            if pending is not None and not again:
                path, offset = str(pending.get("path", "")), pending.get("offset", 0)
                if isinstance(offset, int) and self._wait_recorded(run, path, offset, want, timeout=0):
                    outbox.remove(want)
                    raise ReplyInFlight(
                        "That message reached Codex after all: it is in the chat. Send it again only "
                        "if you mean to send it twice."
                    )
                raise ReplyInFlight(
                    "The same message was sent before and Codex has not recorded it yet: it may "
                    "still land. lab does not send it twice unless you choose to."
                )
            self._refuse_if_asking(run)
            self._wait_ready(run, tmux)
            self._wait_tool_settled(run)
            self._refuse_if_asking(run)
            if want == f"/{CLEAR}":
                self._clear(run, tmux, text)
                return
            path = self.locate_transcript(run)
            start = _size(path)
            outbox.add({"want": want, "path": path, "offset": start, "at": time.time()})
            tmux.paste(run.tmux_session, text)
            time.sleep(ENTER_DELAY_S)
            if self._asking(run):
                raise ReplyNotDelivered(
                    "Codex began asking for approval while the message was being pasted, so lab did "
                    "not press Enter. The text may be in its input box; answer the prompt first."
                )
            tmux.send_keys(run.tmux_session, "Enter")
            if not self._wait_recorded(run, path, start, want, timeout=RETRY_ENTER_AFTER_S):
                # §4: an Enter on a composer holding the text submits it; on an empty one it does
                # nothing. Never into a prompt.
                if self._asking(run):
                    raise ReplyNotDelivered(
                        "Codex has not recorded the message and is now asking for approval; lab did "
                        "not press Enter again. Answer the prompt first."
                    )
                tmux.send_keys(run.tmux_session, "Enter")
            if not self._wait_recorded(run, path, start, want, timeout=DELIVERY_TIMEOUT_S):
                raise ReplyNotDelivered(
                    "Codex has not recorded the message yet, so lab cannot tell whether it arrived. "
                    "If it lands, it appears in the chat. lab will not send the same text again "
                    "until then."
                )
            outbox.remove(want)

    def _clear(self, run: RunHandle, tmux: Tmux, text: str) -> None:
        """§5: /clear starts a new thread at once, and the TUI opens the new thread's lock file
        (`$CODEX_HOME/thread-writer-locks/<thread>.lock`): that open file, in this run's own
        process tree, is the receipt. No rollout is written until the next submit, so lab's marker in
        the spool is the new conversation's identity meanwhile."""
        pid = tmux.pane_pid(run.tmux_session)
        if pid is None:
            raise SessionGone("The agent's terminal session is gone.")
        before = _thread_locks(pid)
        tmux.paste(run.tmux_session, text)
        time.sleep(ENTER_DELAY_S)
        tmux.send_keys(run.tmux_session, "Enter")
        deadline = time.monotonic() + CLEAR_TIMEOUT_S
        while not (_thread_locks(pid) - before):
            if time.monotonic() >= deadline:
                raise ReplyNotDelivered(
                    f"{self.display_name()} has not started a new conversation after /{CLEAR}. Check "
                    "the terminal with the attach command."
                )
            time.sleep(POLL_S)
        stamp = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        write_clear_marker(run.spool_dir, text.strip(), time.time_ns(), stamp)

    def _wait_recorded(self, run: RunHandle, path: str, start: int, want: str, *, timeout: float) -> bool:
        """§2: a submitted prompt is a `response_item` user message with the text. The first
        submit of a thread writes a new rollout, which the SessionStart hook names: follow it."""
        deadline = time.monotonic() + timeout
        offset, pending = start, b""
        while True:
            current = self.locate_transcript(run)
            if current != path:
                path, offset, pending = current, 0, b""
            try:
                chunk = read_head(path, READ_CHUNK, offset=offset)
            except OSError:  # missing yet, or not a regular file
                chunk = b""
            if chunk:
                offset += len(chunk)
                pending += chunk
                *lines, pending = pending.split(b"\n")
                if any(records_prompt(line, want) for line in lines):
                    return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(POLL_S)

    def interrupt(self, run: RunHandle) -> None:
        """§11: one Esc stops a working turn. Sent only while the rollout says the turn works:
        at idle a first Esc arms "esc again to edit previous message" and a second opens that
        editor. Never Ctrl-C: it opens a dialog while working and exits at idle. Never on an
        approval prompt (§7: Esc there declines it, an answer nobody chose, and an answer on
        its way would then be typed into the composer): PromptPending, nothing sent."""
        tmux = Tmux(run.tmux_socket)
        if not tmux.has_session(run.tmux_session):
            raise SessionGone("The agent's terminal session is gone.")
        busy = f"An answer is being sent to {self.display_name()}; the interrupt was not sent. Try again."
        with keys_lock(run, busy=busy):
            view = self.spool_view(run)
            if view.pending is not None or view.blocked:
                where = "allow or deny it above" if view.pending is not None else "answer it in its terminal"
                raise PromptPending(
                    f"{self.display_name()} is asking for approval: {where}. The interrupt was not "
                    "sent: its Esc would have answered for you."
                )
            if self._state_now(run) == RunState.WORKING:
                mark_interrupt(run)
                tmux.send_keys(run.tmux_session, "Escape")

    def answer_dialog(self, run: RunHandle, dialog: Dialog, answers: Sequence[Answer]) -> None:
        """§7: one key per option (y, p, Esc), after the prompt is drawn; verified by the
        rollout (the call's output, or the turn's abort for a decline)."""
        choice = choice_for(dialog, answers)
        tmux = Tmux(run.tmux_socket)
        if not tmux.has_session(run.tmux_session):
            raise SessionGone("The agent's terminal session is gone.")
        view = self.spool_view(run)
        if view.pending is None or view.pending.dialog.tool_use_id != dialog.tool_use_id:
            raise StaleDialog("That approval is no longer pending.")
        path = self.locate_transcript(run)
        start = _size(path)
        # §7: the prompt hides the terminal's cursor while it is drawn (tmux's flag, not the
        # screen's text); a key sent before that is lost. Played when it shows, and once more
        # only if the prompt is still there (the key was dropped, nothing else can have moved).
        if not self._prompt_shown(tmux, run):
            raise DialogNotAnswerable(
                f"{self.display_name()}'s approval prompt is not on its screen; lab sent nothing. "
                "Check the terminal with the attach command."
            )
        busy = f"An interrupt is being sent to {self.display_name()}; nothing was answered. Try again."
        with keys_lock(run, busy=busy):
            # Read again after the wait for the prompt, right before the key: an approval gone
            # (answered, aborted) or dismissed by an interrupt since its tool began would take
            # the key as composer text.
            now = self.spool_view(run).pending
            if now is None or now != view.pending or last_interrupt_ns(run) >= (now.seen_ns or now.shown_ns):
                raise StaleDialog("That approval is no longer pending. Nothing was sent.")
            with self._guard:  # the backstop's intent, recorded before the first key
                self._intents.pop(dialog.tool_use_id, None)
                self._intents[dialog.tool_use_id] = "allow" if choice.allows else "deny"
                while len(self._intents) > 100:
                    self._intents.popitem(last=False)
            tmux.send_keys(run.tmux_session, choice.tmux_key)
            if not self._cursor_hidden(tmux, run, False, KEY_LANDED_TIMEOUT_S):
                again = self.spool_view(run).pending
                if again is not None and again == view.pending:  # the same prompt, still showing
                    tmux.send_keys(run.tmux_session, choice.tmux_key)
        if not self._wait_answered(run, dialog.tool_use_id, path, start, allows=choice.allows):
            if choice.allows:
                raise ReplyNotDelivered(
                    "The approval was sent, but Codex has recorded no result for the command yet: it "
                    "may still be running. The chat shows the result when it lands."
                )
            raise ReplyNotDelivered(
                "The answer was sent but Codex has not recorded it. Check the terminal with the "
                "attach command before answering again."
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

    def _wait_answered(self, run: RunHandle, call_id: str, path: str, start: int, *, allows: bool) -> bool:
        needle = call_id.encode()
        deadline = time.monotonic() + VERIFY_TIMEOUT_S
        offset, pending = start, b""
        while True:
            if allows and any(
                e.get("hook_event_name") == "PostToolUse" and e.get("tool_use_id") == call_id
                for e in spool_events(run.spool_dir)
            ):
                return True
            try:
                chunk = read_head(path, READ_CHUNK, offset=offset)
            except OSError:  # missing yet, or not a regular file
                chunk = b""
            offset += len(chunk)
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                if needle in line and b'"function_call_output"' in line:
                    return True
                if not allows and b'"turn_aborted"' in line:
                    return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(POLL_S)

    def intents(self) -> dict[str, str]:
        with self._guard:
            return dict(self._intents)

    # --- auth ------------------------------------------------------------------------------

    def auth_status(self) -> AuthStatus:
        from providers.codex.auth import auth_status

        return auth_status(self)

    def login_start(self) -> LoginStart:
        from providers.codex.auth import login_start

        return login_start(self)

    def login_code(self, code: str) -> AuthStatus:
        from providers.codex.auth import login_with_api_key

        return login_with_api_key(self, code)

    def logout(self) -> AuthStatus:
        from providers.codex.auth import logout

        return logout(self)


def records_prompt(line: bytes, want: str) -> bool:
    """Whether a rollout line records `want` (normalized) as the operator's message (§2)."""
    if b'"response_item"' not in line or b'"user"' not in line:
        return False
    try:
        entry = orjson.loads(line)
    except orjson.JSONDecodeError:
        return False
    payload = entry.get("payload") if isinstance(entry, dict) else None
    if not isinstance(payload, dict) or payload.get("type") != "message" or payload.get("role") != "user":
        return False
    content = payload.get("content")
    if not isinstance(content, list):
        return False
    text = "".join(
        c.get("text", "") for c in content if isinstance(c, dict) and c.get("type") == "input_text"
    )
    return normalize(text) == want


def _aborted_after(tail: bytes, needle: bytes) -> bool:
    """A turn_aborted after the call's function_call: a decline that wrote no output line."""
    at = tail.rfind(needle)
    return at >= 0 and b'"turn_aborted"' in tail[at:]


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except FileNotFoundError:
        return 0


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
        Path(path).write_text(str(time.time_ns()))
        return 1
    return 1 if os.path.exists(path) else 0
