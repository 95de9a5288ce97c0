"""Drivers: how the conformance suite (tests/conformance/) gets a live instance of each provider.

The suite (test_contract.py) states every seam obligation once, for every provider. A driver
adapts only what differs: what the provider needs configured, how to script its model (an
answer, a slow turn), which captured transcripts exercise its reader, and a worktree that
exercises its command discovery. A registered provider's driver is ``DRIVER`` in
``compat/<package>/driver.py`` (claude-code runs the real pinned binary against its scripted
model in a private HOME); the fakes' drivers are here and run `cat` in tmux.

Every id in providers/known.py is in the suite: one without a driver fails every test with the
same message, so a new provider cannot join lab without joining the suite.
"""

from __future__ import annotations

import abc
import importlib
import os
import uuid
from pathlib import Path
from typing import Any, ClassVar

import pytest
from django.utils.module_loading import import_string

from compat.adapter import AdapterRun, spawned
from providers.base import AgentProvider
from providers.known import KNOWN_PROVIDERS, package
from providers.schema import RunHandle
from providers.tmux import Tmux


class LiveRun(AdapterRun):
    """One spawned instance, read the way lab reads it (compat.adapter.AdapterRun)."""

    wait_timeout = 20.0


# Unique per session: the command-line test looks for this exact value in every process.
PROBE_ENV = ("LAB_CONFORMANCE_PROBE", f"passed through {uuid.uuid4().hex}")


class Driver(abc.ABC):
    """A provider's test double for the suite. Drivers start what they need themselves (a scripted
    model, a private HOME) and stop it in stop(): they may request only pytest's and
    pytest-django's own fixtures (settings, monkeypatch), never a compat/<package>/conftest.py one,
    which tests/conformance/ cannot see and another provider may name the same."""

    provider_id: ClassVar[str]
    # The AgentProvider class; a registered provider's comes from providers/known.py.
    dotted: ClassVar[str] = ""
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
        return import_string(self.provider_path())()

    @classmethod
    def provider_path(cls) -> str:
        """The dotted path of the provider's class."""
        return cls.dotted or KNOWN_PROVIDERS[cls.provider_id]

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
        run = spawned(provider, handle, options, LiveRun)
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


class RigDriver(Driver):
    """A driver over a provider's live-test rig (compat.adapter.AdapterRig, built lazily on the
    first live use, with lab's settings pointed at its private home and scripted model, closed
    at stop()) and its scripted model's `text`, `slow_text` and `when`. Declarations: `rig_path`
    and `scripted_path` (dotted, imported when used: the suite loads every driver), and
    `transcript_globs` ((folder, pattern) pairs: the captured and synthesized transcripts)."""

    rig_path: ClassVar[str]
    scripted_path: ClassVar[str]
    transcript_globs: ClassVar[tuple[tuple[Path, str], ...]] = ()
    slow_token: ClassVar[str] = "LAB-CONFORMANCE-SLOW"
    _rig: Any = None

    def rig(self) -> Any:
        if self._rig is None:
            settings = self.request.getfixturevalue("settings")
            self._rig = import_string(self.rig_path)(self.tmp_path / self.provider_id, settings)
        return self._rig

    def configure(self, *, live: bool) -> None:
        settings = self.request.getfixturevalue("settings")
        if live:
            self.rig()  # points LAB_AGENT_HOME/ENV/BIN_DIR at the private home and the model
        else:
            # Declaration tests: an empty private home, never the operator's own.
            (self.tmp_path / "home").mkdir(exist_ok=True)
            settings.LAB_AGENT_HOME = str(self.tmp_path / "home")
            settings.LAB_AGENT_ENV = {}

    def worktree(self, *, live: bool = False) -> Path:
        if live:
            return Path(self.rig().worktree)
        return Path(super().worktree())

    def script_answer(self, run: LiveRun, answer: str) -> None:
        scripted = importlib.import_module(self.scripted_path)
        self.rig().model.script.add(scripted.text(answer))

    def begin_slow_turn(self, run: LiveRun, *, seconds: float = 20.0) -> None:
        scripted = importlib.import_module(self.scripted_path)
        model = self.rig().model
        model.script.add(scripted.when(self.slow_token, scripted.slow_text(max(4, int(seconds / 0.5)), 0.5)))
        run.provider.reply(run.handle, f"{self.slow_token} stream please")
        model.wait_streaming(min_deltas=2, timeout=20)

    @classmethod
    def transcripts(cls, tmp_path: Path) -> list[Path]:
        return [p for folder, pattern in cls.transcript_globs for p in sorted(folder.glob(pattern))]

    def stop(self) -> None:
        super().stop()
        if self._rig is not None:
            self._rig.close()


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
FAKE_DRIVERS: dict[str, type[Driver]] = {d.provider_id: d for d in (FakeDriver, FakeApiKeyDriver)}


# Set by `make compat-check`, whose scratch install holds one provider's CLI: only that one runs.
CONFORMANCE_ONLY = "LAB_CONFORMANCE_ONLY"


def conformance_ids(known: dict[str, str] = KNOWN_PROVIDERS) -> list[str]:
    if only := os.environ.get(CONFORMANCE_ONLY):
        return [only]
    return sorted(set(known) | set(FAKE_DRIVERS))


def load_driver(provider_id: str, known: dict[str, str] = KNOWN_PROVIDERS) -> type[Driver]:
    """The driver class for `provider_id`; a registered provider without one fails its tests."""
    if provider_id in FAKE_DRIVERS:
        return FAKE_DRIVERS[provider_id]
    module = f"compat.{package(provider_id, known)}.driver"
    try:
        driver = importlib.import_module(module).DRIVER
    except ModuleNotFoundError as e:
        if e.name not in (module, module.rsplit(".", 1)[0]):
            raise  # the driver exists and itself imports something missing: show that
        driver = None
    except AttributeError:
        driver = None
    if not (isinstance(driver, type) and issubclass(driver, Driver) and driver.provider_id == provider_id):
        pytest.fail(
            f"{provider_id!r} is in providers/known.py but {module} has no conformance driver: export "
            f"DRIVER, a compat.conformance.Driver with provider_id = {provider_id!r} "
            "(docs/providers.md, 'Join the conformance suite')."
        )
    return driver
