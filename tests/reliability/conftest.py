"""Fixtures of the reliability tests that run lab as its own process."""

from __future__ import annotations

import pytest

from providers.tmux import Tmux
from tests.reliability.support import Lab


@pytest.fixture
def lab(tmp_path):
    lab = Lab(tmp_path)
    lab.manage("migrate", "-v0")
    yield lab
    lab.kill()
    Tmux(lab.socket_name).kill_server()
