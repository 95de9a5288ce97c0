"""The agent's environment (API keys included) is on no command line: tmux keeps the argv of
the command that started its server for the server's whole life, and /proc/<pid>/cmdline is
readable by every local user. Tmux.new_session hands the environment over in a 0600 file
that its launcher deletes before it execs the program."""

from __future__ import annotations

import os
import secrets
import stat
import uuid
from pathlib import Path

import pytest

from providers.errors import SpawnFailed
from providers.testing import command_lines_containing, spawned_environ
from providers.tmux import Tmux


@pytest.fixture
def tmux():
    server = Tmux(f"labsec-{uuid.uuid4().hex[:10]}")
    yield server
    server.kill_server()


def test_the_environment_reaches_the_program_and_no_command_line(tmux, tmp_path):
    key = f"sk-lab-probe-{secrets.token_hex(16)}"
    env_dir = tmp_path / "private"
    env_dir.mkdir(mode=0o700)
    # The first session starts the server: its argv is the one tmux keeps for its whole life.
    pid = tmux.new_session(
        "lab-envtest",
        cwd=str(tmp_path),
        argv=["cat"],  # looked up on the given PATH, as env(1) would
        env={"PATH": "/usr/bin:/bin", "ANTHROPIC_API_KEY": key},
        env_dir=str(env_dir),
    )
    environ = spawned_environ(pid)
    assert environ == {"PATH": "/usr/bin:/bin", "ANTHROPIC_API_KEY": key}
    assert os.path.realpath(f"/proc/{pid}/exe") == os.path.realpath("/usr/bin/cat")
    assert command_lines_containing(key) == []
    assert list(env_dir.iterdir()) == []  # the launcher deleted the file before it exec'd


def test_the_environment_file_is_private_and_gone_when_tmux_refuses(tmux, tmp_path, monkeypatch):
    seen: list[int] = []

    def refuse(self, name, *, command, **kwargs):
        seen.append(stat.S_IMODE(Path(command[4]).stat().st_mode))
        raise SpawnFailed("tmux could not start the session: refused for the test")

    monkeypatch.setattr(Tmux, "_new_session", refuse)
    with pytest.raises(SpawnFailed):
        tmux.new_session(
            "lab-envtest", cwd=str(tmp_path), argv=["cat"], env={"K": "v"}, env_dir=str(tmp_path)
        )
    assert seen == [0o600]
    assert [p for p in tmp_path.iterdir() if p.name.startswith(".lab-env-")] == []
