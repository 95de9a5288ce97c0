"""FakeProvider: every mandatory method and optional capability, for the generic layer's tests.

Its "CLI" is `cat` in a real tmux session (lab's liveness checks stay real) and its
transcript is a JSONL file of {"kind", "text", ...} lines that the fake itself appends to, so
a test drives a conversation by calling `fake_append`. Variants lack one optional capability
each, so the degradation paths are tested too. Never the only test of a feature: the real
adapter has its own live tests.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from providers.base import AgentProvider
from providers.errors import (
    DialogNotAnswerable,
    InvalidCode,
    LoginFailed,
    ReplyNotDelivered,
    SessionGone,
)
from providers.jsonl import read_lines
from providers.sanitize import sanitize_text
from providers.schema import (
    Answer,
    AuthFlow,
    AuthFlowKind,
    AuthStatus,
    CommandRole,
    CommandSpec,
    Cursor,
    Dialog,
    DialogKind,
    LoginStart,
    Message,
    MessageKind,
    Option,
    Quota,
    RepositorySetting,
    RunHandle,
    RunState,
    SeedMeta,
    SpawnOption,
    SpawnResult,
    TranscriptRead,
    Usage,
    WorkspaceChoices,
)
from providers.tmux import LAUNCHER, Tmux

FAKE_ROOT_ENV = "LAB_FAKE_PROVIDER_ROOT"
FAKE_ANSWER_DELAY_ENV = "LAB_FAKE_ANSWER_DELAY_S"
# The fake CLI's project settings: one "hook" per line. A line starting "redirect " stands for a
# changed model endpoint. spawn records in FakeProvider.loaded whether it loaded them.
FAKE_SETTINGS = ".fake-agent"


def returns_within[T](fn: Callable[[], T], seconds: float = 5.0) -> T:
    """fn's result, or AssertionError when it has not returned by the deadline: a test of a
    call that must never block (a FIFO planted where lab reads). The blocked thread is left
    behind as a daemon, so the test run still ends."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["result"] = fn()
        except BaseException as exc:  # noqa: BLE001 — re-raised in the caller's thread
            box["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        raise AssertionError(f"still blocked after {seconds} s")
    if "error" in box:
        raise box["error"]
    return box["result"]


def fake_root() -> Path:
    return Path(os.environ.get(FAKE_ROOT_ENV, "/tmp/lab-fake-provider"))


def fake_append(path: str | Path, **entry: object) -> None:
    """Append one transcript entry as the fake CLI would."""
    with open(path, "ab") as f:
        f.write(json.dumps(entry).encode() + b"\n")


class FakeProvider(AgentProvider):
    id = "fake"

    def __init__(self) -> None:
        self.sent: list[tuple[str, object]] = []  # what reached the "TUI", in order
        self.loaded: list[RepositorySetting] = []  # the project settings spawn took
        self.lock = threading.Lock()
        self.logged_in = False
        self.pending_login = False
        self.deliver = True  # False: reply raises ReplyNotDelivered, as a TUI that drops text
        # The fake's scripted model: each reply consumes one answer (appended as the assistant's,
        # turn over); with none scripted the turn stays working until interrupt().
        self.script: list[str] = []
        self.seeded_choices: WorkspaceChoices | None = None  # what the last seed_workspace got

    def display_name(self) -> str:
        return "Fake Agent"

    def auth_flow(self) -> AuthFlow:
        return AuthFlow(kind=AuthFlowKind.OAUTH_CODE, instructions="Open the link and paste the code.")

    def seed_meta(self) -> SeedMeta:
        return SeedMeta(context_file="FAKE.md", skills_dir=".fake/skills", exclude_entries=("/FAKE.md",))

    def commands(self, worktree: Path) -> list[CommandSpec]:
        return [
            CommandSpec(name="new", description="Start over", role=CommandRole.CLEAR),
            CommandSpec(name="echo", description="Echo the arguments", argument_hint="TEXT"),
            CommandSpec(
                name="settings",
                description="Open settings",
                chat_safe=False,
                reason="opens a UI",
                aliases=("prefs",),
            ),
        ]

    def spawn_options(self) -> list[SpawnOption]:
        return [
            SpawnOption(
                name="speed", label="Speed", choices=(("slow", "Slow"), ("fast", "Fast")), default="fast"
            )
        ]

    def spawn(self, run: RunHandle, options: Mapping[str, str]) -> SpawnResult:
        session_id = str(uuid.uuid4())
        path = fake_root() / str(run.run_id) / f"{session_id}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch()
        env = {"PATH": "/usr/bin:/bin", **dict(run.env)}
        # What the fake "CLI" took from the worktree's own settings (repository trust).
        self.loaded = self.repository_settings(Path(run.worktree)) if run.trusted else []
        Tmux(run.tmux_socket).new_session(run.tmux_session, cwd=run.worktree, argv=["/bin/cat"], env=env)
        return SpawnResult(session_id=session_id, transcript_path=str(path))

    def seed_workspace(self, worktree: Path, choices: WorkspaceChoices | None = None) -> list[Path]:
        self.seeded_choices = choices or WorkspaceChoices()
        return []

    def repository_settings(self, checkout: Path) -> list[RepositorySetting]:
        try:
            lines = (Path(checkout) / FAKE_SETTINGS).read_text().splitlines()
        except FileNotFoundError:
            return []
        return [
            RepositorySetting(FAKE_SETTINGS, "hook", line, redirects=line.startswith("redirect "))
            for line in lines
            if line.strip()
        ]

    def _trust_record(self) -> Path:
        return fake_root() / "trusted.json"

    def repository_trusted(self, repository: Path) -> bool:
        try:
            return os.path.realpath(repository) in json.loads(self._trust_record().read_text())
        except FileNotFoundError:
            return False

    def trust_repository(self, repository: Path) -> list[Path]:
        if self.repository_trusted(repository):
            return []
        record = self._trust_record()
        record.parent.mkdir(parents=True, exist_ok=True)
        trusted = json.loads(record.read_text()) if record.exists() else []
        record.write_text(json.dumps([*trusted, os.path.realpath(repository)]))
        return [record]

    def locate_transcript(self, run: RunHandle) -> str:
        # clear/epoch: the newest file of the run's directory (the fake's /new makes one).
        files = sorted(Path(run.transcript_path).parent.glob("*.jsonl"), key=lambda p: p.stat().st_mtime_ns)
        return str(files[-1]) if files else run.transcript_path

    def read_transcript(self, path: str, cursor: Cursor) -> TranscriptRead:
        lines = read_lines(path, cursor.offset, cursor.inode)
        seq = 0 if lines.reset else cursor.next_seq
        state: RunState = cursor.provider_state or RunState.IDLE  # type: ignore[assignment]
        dialog = None
        messages = []
        for _start, raw in lines.lines:
            try:
                entry = json.loads(raw)
                kind = MessageKind(entry["kind"])
            except (ValueError, KeyError, TypeError):
                messages.append(
                    Message(seq=seq, kind=MessageKind.LIFECYCLE, text="unreadable line", is_error=True)
                )
                seq += 1
                continue
            messages.append(
                Message(
                    seq=seq,
                    kind=kind,
                    text=str(entry.get("text", "")),
                    limit=str(entry.get("limit", "")),
                    resets_at=int(entry.get("resets_at", 0)),
                )
            )
            seq += 1
            # An explicit state wins, so the fake's clear echo ("/new", state idle) derives idle
            # as the seam requires of a lone command echo; a plain prompt starts a turn.
            if "state" in entry:
                state = RunState(entry["state"])
            else:
                state = RunState.WORKING if kind is MessageKind.USER_TEXT else RunState.IDLE
        last_dialog = _pending_dialog(path)
        if last_dialog is not None:
            dialog = last_dialog
        new_cursor = Cursor(
            path=path, offset=lines.offset, inode=lines.inode, next_seq=seq, provider_state=state
        )
        return TranscriptRead(
            messages=messages, cursor=new_cursor, state=state, dialog=dialog, reset=lines.reset
        )

    def reply(self, run: RunHandle, text: str, *, again: bool = False) -> None:
        text = sanitize_text(text, max_bytes=64 * 1024)
        if not Tmux(run.tmux_socket).has_session(run.tmux_session):
            raise SessionGone("The agent's terminal session is gone.")
        with self.lock:
            self.sent.append(("reply", text))
        if not self.deliver:
            raise ReplyNotDelivered("The fake dropped it.")
        path = self.locate_transcript(run)
        if text.strip() == "/new":
            path = str(Path(path).with_name(f"{uuid.uuid4()}.jsonl"))
            fake_append(path, kind="user_text", text="/new", state="idle")
            return
        fake_append(path, kind="user_text", text=text)
        with self.lock:
            answer = self.script.pop(0) if self.script else None
        if answer is not None:
            fake_append(path, kind="assistant_text", text=answer, state="idle")

    def interrupt(self, run: RunHandle) -> None:
        with self.lock:
            self.sent.append(("interrupt", None))
        fake_append(self.locate_transcript(run), kind="lifecycle", text="Interrupted", state="idle")

    def answer_dialog(self, run: RunHandle, dialog: Dialog, answers: Sequence[Answer]) -> None:
        if len(answers) != len(dialog.all_questions):
            raise DialogNotAnswerable("One answer per question.")
        with self.lock:
            self.sent.append(("answer", (dialog.tool_use_id, tuple(answers))))
        # A real recipe takes seconds (settle, keys, verification): a test running lab in
        # subprocesses sets this so racing answers from several workers overlap.
        time.sleep(float(os.environ.get(FAKE_ANSWER_DELAY_ENV, "0")))
        path = self.locate_transcript(run)
        Path(path + ".dialog").unlink(missing_ok=True)
        fake_append(path, kind="tool_result", text=f"answered {dialog.tool_use_id}", state="working")

    def auth_status(self) -> AuthStatus:
        return AuthStatus(
            logged_in=self.logged_in, method="fake", account="fake@example.invalid" if self.logged_in else ""
        )

    def login_start(self) -> LoginStart:
        self.pending_login = True
        return LoginStart(url="https://fake.invalid/authorize?state=1")

    def login_code(self, code: str) -> AuthStatus:
        if not self.pending_login or code != "good-code":
            raise InvalidCode("That code wasn't accepted.")
        self.pending_login, self.logged_in = False, True
        return self.auth_status()

    def logout(self) -> AuthStatus:
        self.logged_in = self.pending_login = False
        return self.auth_status()


def fake_raise_dialog(path: str | Path, dialog_json: Mapping[str, object]) -> None:
    """Make the fake show a pending dialog (beside the transcript, as a live channel would)."""
    Path(str(path) + ".dialog").write_text(json.dumps(dialog_json))
    fake_append(path, kind="tool_use", text="asks", state="working")


def _pending_dialog(path: str) -> Dialog | None:
    try:
        data = json.loads(Path(path + ".dialog").read_text())
    except (FileNotFoundError, ValueError):
        return None
    return Dialog(
        tool_use_id=data["tool_use_id"],
        kind=DialogKind(data.get("kind", "question")),
        prompt=data.get("prompt", ""),
        options=tuple(
            Option(label=o)
            if isinstance(o, str)
            else Option(label=o["label"], takes_text=bool(o.get("takes_text")))
            for o in data.get("options", ())
        ),
        multi=bool(data.get("multi", False)),
        header=data.get("header", ""),
        body=data.get("body", ""),
        free_text=bool(data.get("free_text", True)),
    )


class FakeLiveSignals:
    """The LiveSignals capability of the fake: a blocked flag file beside the transcript."""

    def pending_dialog(self, run: RunHandle) -> Dialog | None:
        return _pending_dialog(run.transcript_path)

    def blocked_state(self, run: RunHandle) -> RunState | None:
        return RunState.NEEDS_INPUT if Path(run.transcript_path + ".blocked").exists() else None

    def sweep(self, run: RunHandle) -> None:
        return None


class FakeConnectingReporter:
    def connecting(self, run: RunHandle) -> bool:
        return False


def fake_report_usage(path: str | Path, **usage: Any) -> None:
    """What the fake's CLI last reported about context and quota (UsageReporter): a file
    beside the transcript; `quotas` as [(name, used_percent, resets_at)]."""
    quotas = usage.pop("quotas", None)
    usage["quotas"] = None if quotas is None else [list(q) for q in quotas]
    Path(str(path) + ".usage").write_text(json.dumps(usage))


class FakeUsageReporter:
    def usage(self, run: RunHandle) -> Usage | None:
        try:
            data = json.loads(Path(run.transcript_path + ".usage").read_text())
        except (OSError, ValueError):
            return None
        quotas = data.pop("quotas", None)
        return Usage(**data, quotas=None if quotas is None else tuple(Quota(*q) for q in quotas))


class FullFakeProvider(FakeProvider, FakeLiveSignals, FakeConnectingReporter, FakeUsageReporter):
    """Every optional capability."""


class FakeWithoutLiveSignals(FakeProvider, FakeConnectingReporter):
    id = "fake-no-live"


class FakeWithoutConnecting(FakeProvider, FakeLiveSignals):
    id = "fake-no-connecting"


class FakeApiKeyProvider(FullFakeProvider):
    """The fake with an api-key auth flow: no browser sign-in, a named credential instead."""

    id = "fake-api-key"

    def display_name(self) -> str:
        return "Keyed Fake Agent"

    def auth_flow(self) -> AuthFlow:
        return AuthFlow(
            kind=AuthFlowKind.API_KEY,
            instructions="Set the key in lab's agent environment and restart lab.",
            credential_name="FAKE_API_KEY",
        )

    def auth_status(self) -> AuthStatus:
        key = os.environ.get("FAKE_API_KEY", "")
        return AuthStatus(logged_in=bool(key), method="api-key", detail="" if key else "No key is set.")

    def login_start(self) -> LoginStart:
        raise LoginFailed("This provider signs in with a key, not in the browser.")

    def login_code(self, code: str) -> AuthStatus:
        raise InvalidCode("This provider takes no login code.")

    def logout(self) -> AuthStatus:
        return self.auth_status()


def spawned_environ(pid: int, *, timeout: float = 10.0) -> dict[str, str]:
    """The environment a pane's program was started with. Tmux.new_session runs it through
    its launcher, which reads the environment from a file; until the launcher has exec'd the
    program its pid shows the launcher's own environment, so this waits for that exec (an
    observable event), then reads it."""
    deadline = time.monotonic() + timeout
    tmux = os.path.realpath(shutil.which("tmux") or "tmux")
    while True:
        # Still tmux's fork, the launcher before its exec, or mid-exec (cmdline and environ
        # read empty while the new image is set up): wait.
        exe = os.path.realpath(f"/proc/{pid}/exe")
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        if exe != tmux and cmdline and LAUNCHER.encode() not in cmdline:
            raw = Path(f"/proc/{pid}/environ").read_bytes().decode(errors="surrogateescape")
            if raw:
                break
        if time.monotonic() > deadline:
            raise TimeoutError(f"pid {pid} never exec'd past lab's launcher")
        time.sleep(0.01)
    return dict(item.split("=", 1) for item in raw.split("\0") if "=" in item)


def command_lines_containing(needle: str) -> list[str]:
    """Every process on the machine whose command line holds `needle`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            raw = (entry / "cmdline").read_bytes()
        except OSError:  # exited meanwhile, or not ours to read
            continue
        if needle.encode() in raw:
            found.append(f"{entry.name}: {raw.replace(b'\0', b' ').decode(errors='replace')}")
    return found
