"""The conformance suite's parametrization: every registered provider plus the fakes, each
through its driver (compat/conformance.py finds a provider's in compat/<package>/driver.py)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from compat.conformance import Driver, LiveRun, conformance_ids, load_driver
from providers.schema import RunHandle


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "provider_id" in metafunc.fixturenames:
        metafunc.parametrize("provider_id", conformance_ids())


@pytest.fixture
def driver(provider_id: str, request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Driver]:
    d = load_driver(provider_id)(request, tmp_path)
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
