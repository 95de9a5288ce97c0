"""Drivers: how the conformance suite gets a live instance of each provider.

The suite (test_contract.py) states every seam obligation once, for every provider. A driver
adapts only what differs: which class to load, what the provider needs configured, how to
script its model (an answer, a slow turn), which captured transcripts exercise its reader,
and a worktree that exercises its command discovery. claude-code runs the real pinned binary
against compat's scripted model in a private HOME; the fakes run `cat` in tmux.

Every id in settings.LAB_KNOWN_PROVIDERS is parametrized here: one without a driver fails
every test with the same message, so a new provider cannot join lab without joining the suite.
"""

from __future__ import annotations

import abc
import os
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar

import pytest
from django.conf import settings
from django.utils.module_loading import import_string

from compat.codex.driver import codex_driver

# claude-code's driver requests these lazily (getfixturevalue), so fake-only tests never start
# a scripted model; importing them here makes them visible to this directory.
from compat.conftest import claude_home, scripted_model  # noqa: F401
from providers.base import AgentProvider
from providers.schema import Cursor, Message, MessageKind, RunHandle, RunState, TranscriptRead
from providers.tmux import Tmux

REPO = Path(__file__).resolve().parents[2]


@dataclass
class LiveRun:
    """One spawned instance, read the way lab reads it: locate, then read from the cursor,
    and a new located identity starts over from an empty Cursor (the clear/epoch obligation)."""

    provider: AgentProvider
    handle: RunHandle
    path: str = ""
    cursor: Cursor = field(default_factory=Cursor)
    messages: list[Message] = field(default_factory=list)
    last: TranscriptRead | None = None
    identities: list[str] = field(default_factory=list)

    def refresh(self) -> TranscriptRead:
        path = self.provider.locate_transcript(self.handle)
        if path != self.path:
            self.path, self.cursor, self.messages = path, Cursor(), []
            self.identities.append(path)
        read = self.provider.read_transcript(path, self.cursor)
        if read.reset:
            self.messages = []
        self.messages.extend(read.messages)
        self.cursor, self.last = read.cursor, read
        return read

    @property
    def state(self) -> RunState:
        return self.last.state if self.last else RunState.IDLE

    def wait(self, predicate: Callable[[LiveRun], bool], *, timeout: float = 20.0, what: str) -> None:
        deadline = time.monotonic() + timeout
        while True:
            self.refresh()
            if predicate(self):
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}; last messages: {self.messages[-6:]!r}")
            time.sleep(0.05)

    def texts(self, kind: MessageKind) -> list[str]:
        return [m.text for m in self.messages if m.kind == kind]

    def answered(self, answer: str) -> bool:
        return answer in self.texts(MessageKind.ASSISTANT_TEXT) and self.state == RunState.IDLE

    def alive(self) -> bool:
        return Tmux(self.handle.tmux_socket).has_session(self.handle.tmux_session)


# Unique per session: the command-line test looks for this exact value in every process.
PROBE_ENV = ("LAB_CONFORMANCE_PROBE", f"passed through {uuid.uuid4().hex}")


class Driver(abc.ABC):
    provider_id: ClassVar[str]
    dotted: ClassVar[str]
    # Whether the CLI clears context at all; False lets a provider with no clear command pass
    # the clear/epoch test by declaring so (and it must then have no CLEAR row).
    clears: ClassVar[bool] = True
    # Whether a reply sent while a turn works is taken (queued by the CLI). A CLI that cannot
    # take one declares False: its adapter must then raise ReplyNotDelivered, typed, and lose
    # nothing. A reply to an idle terminal is always delivered.
    queues_while_working: ClassVar[bool] = True

    def __init__(self, request: pytest.FixtureRequest, tmp_path: Path) -> None:
        self.request, self.tmp_path = request, tmp_path
        self.started: list[LiveRun] = []

    def provider(self, *, live: bool = False) -> AgentProvider:
        """A fresh instance, configured for this test (never the registry's cached one)."""
        self.configure(live=live)
        return import_string(self.dotted)()

    def configure(self, *, live: bool) -> None:
        """Settings and environment the provider reads (a private HOME, a data root)."""
        return None  # a provider that reads nothing from settings needs nothing here

    def worktree(self, *, live: bool = False) -> Path:
        path = self.tmp_path / "wt"
        path.mkdir(exist_ok=True)
        return path

    def populate_worktree(self, worktree: Path) -> None:
        """Write the provider's own command/skill files, so commands() has discovered rows."""
        return None  # a CLI without custom commands has only its builtins

    def start(self) -> LiveRun:
        """Spawn the real CLI through the production spawn(), with the declared defaults, the
        way runs.services.run_start does."""
        provider = self.provider(live=True)
        handle = RunHandle(
            run_id=1,
            worktree=str(self.worktree(live=True)),
            tmux_socket=f"labconf-{uuid.uuid4().hex[:10]}",
            tmux_session="lab-conformance",
            spool_dir=str(self.tmp_path / "spool"),
            env=(PROBE_ENV,),  # as run_start passes the commit guard's
        )
        options = {o.name: o.default for o in provider.spawn_options()}
        result = provider.spawn(handle, options)
        handle = replace(handle, session_id=result.session_id, transcript_path=result.transcript_path)
        run = LiveRun(provider=provider, handle=handle)
        self.started.append(run)
        return run

    def stop(self) -> None:
        for run in self.started:
            Tmux(run.handle.tmux_socket).kill_server()

    @abc.abstractmethod
    def script_answer(self, run: LiveRun, answer: str) -> None:
        """The model's answer to the next prompt."""

    @abc.abstractmethod
    def begin_slow_turn(self, run: LiveRun, *, seconds: float = 20.0) -> None:
        """Send a prompt whose turn keeps working for about `seconds` (or until interrupted)."""

    @classmethod
    @abc.abstractmethod
    def transcripts(cls, tmp_path: Path) -> list[Path]:
        """Transcripts that exercise the reader: captured fixtures, or generated ones."""


class ClaudeCodeDriver(Driver):
    provider_id = "claude-code"
    dotted = "providers.claude_code.ClaudeCodeProvider"

    def configure(self, *, live: bool) -> None:
        # As a deployment would: LAB_AGENT_HOME for the private HOME, LAB_AGENT_ENV for the
        # scripted model's URL and key. Declaration tests get an empty private HOME, so the
        # operator's own ~/.claude never leaks into a result.
        django_settings = self.request.getfixturevalue("settings")
        if live:
            home = self.request.getfixturevalue("claude_home")
            django_settings.LAB_AGENT_HOME = str(home.home)
            django_settings.LAB_AGENT_ENV = {
                k: v for k, v in home.env.items() if k not in ("HOME", "PATH", "TERM", "LANG")
            }
        else:
            (self.tmp_path / "home").mkdir(exist_ok=True)
            django_settings.LAB_AGENT_HOME = str(self.tmp_path / "home")

    def worktree(self, *, live: bool = False) -> Path:
        if live:
            return Path(self.request.getfixturevalue("claude_home").worktree)
        return super().worktree()

    def populate_worktree(self, worktree: Path) -> None:
        # A project command and a skill (compat §10), and a project command named like the
        # builtin clear: the catalog must still keep names unique and one CLEAR row.
        commands = worktree / ".claude" / "commands"
        commands.mkdir(parents=True, exist_ok=True)
        (commands / "deploy.md").write_text("---\ndescription: Deploy the branch\n---\nDeploy $ARGUMENTS\n")
        (commands / "clear.md").write_text("Clear the build cache.\n")
        skill = worktree / ".claude" / "skills" / "review"
        skill.mkdir(parents=True, exist_ok=True)
        (skill / "SKILL.md").write_text("---\nname: review\ndescription: Review the diff\n---\nReview.\n")

    @property
    def model(self) -> Any:
        return self.request.getfixturevalue("scripted_model")

    def script_answer(self, run: LiveRun, answer: str) -> None:
        from compat.scripted_model import text

        self.model.script.add(text(answer))

    def begin_slow_turn(self, run: LiveRun, *, seconds: float = 20.0) -> None:
        from compat.scripted_model import slow_text, when

        self.model.script.add(when("SLOW", slow_text(max(4, int(seconds / 0.5)), 0.5)))
        run.provider.reply(run.handle, "SLOW stream please")
        self.model.wait_streaming(min_deltas=2, timeout=20)

    @classmethod
    def transcripts(cls, tmp_path: Path) -> list[Path]:
        from compat.home import fixture_paths

        # The captured fixtures of every version: a run started under an older pin stays readable.
        return fixture_paths()


class FakeDriver(Driver):
    provider_id = "fake"
    dotted = "providers.testing.FullFakeProvider"

    def configure(self, *, live: bool) -> None:
        from providers.testing import FAKE_ROOT_ENV

        self.request.getfixturevalue("monkeypatch").setenv(FAKE_ROOT_ENV, str(self.tmp_path / "fake-root"))

    def script_answer(self, run: LiveRun, answer: str) -> None:
        run.provider.script.append(answer)  # type: ignore[attr-defined]

    def begin_slow_turn(self, run: LiveRun, *, seconds: float = 20.0) -> None:
        # Nothing scripted for it: the fake's turn stays working until the next answer or an
        # interrupt, however long `seconds` is.
        run.provider.reply(run.handle, "a long task")

    @classmethod
    def transcripts(cls, tmp_path: Path) -> list[Path]:
        from providers.testing import fake_append

        tmp_path.mkdir(parents=True, exist_ok=True)
        path = tmp_path / "generated.jsonl"
        kinds = ["user_text", "assistant_text", "tool_use", "tool_result", "lifecycle"]
        for i in range(300):
            kind = kinds[i % len(kinds)]
            fake_append(path, kind=kind, text=f"entry {i} é✓ " + "x" * (i % 37), state="working")
            if i % 50 == 7:
                with path.open("ab") as f:
                    f.write(b"{not json\n")  # a corrupt line: a lifecycle warning, both ways
        fake_append(path, kind="assistant_text", text="done", state="idle")
        return [path]


class FakeApiKeyDriver(FakeDriver):
    provider_id = "fake-api-key"
    dotted = "providers.testing.FakeApiKeyProvider"


# Fakes join the suite so the generic layer's tests rest on a fake that meets the same contract.
DRIVERS: dict[str, type[Driver]] = {
    d.provider_id: d for d in (ClaudeCodeDriver, codex_driver(Driver), FakeDriver, FakeApiKeyDriver)
}


def conformance_ids() -> list[str]:
    return sorted(set(settings.LAB_KNOWN_PROVIDERS) | set(DRIVERS))


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "provider_id" in metafunc.fixturenames:
        metafunc.parametrize("provider_id", conformance_ids())


@pytest.fixture
def driver(provider_id: str, request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Driver]:
    driver_cls = DRIVERS.get(provider_id)
    if driver_cls is None:
        pytest.fail(
            f"{provider_id!r} is in LAB_KNOWN_PROVIDERS but has no conformance driver: add one to "
            "tests/conformance/conftest.py (docs/providers.md, 'Join the conformance suite')."
        )
    d = driver_cls(request, tmp_path)
    try:
        yield d
    finally:
        d.stop()


@pytest.fixture
def live(driver: Driver) -> LiveRun:
    """A spawned instance whose terminal is ready for a reply."""
    return driver.start()


@pytest.fixture
def dead_handle(tmp_path: Path) -> RunHandle:
    """A run whose terminal does not exist (a tmux socket with no server)."""
    return RunHandle(
        run_id=99,
        worktree=str(tmp_path),
        tmux_socket=f"labconf-dead-{os.getpid()}",
        tmux_session="lab-gone",
        transcript_path=str(tmp_path / "gone.jsonl"),
        spool_dir=str(tmp_path / "gone-spool"),
    )
