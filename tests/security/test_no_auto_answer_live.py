"""Case 10, live: the real Claude Code 2.1.328 TUI in manual mode asks to run a Bash command.
lab shows the run needs_input with the attach command and leaves the prompt alone: the command
never runs, whatever lab's watcher, page or socket does meanwhile."""

from __future__ import annotations

import time
import uuid

import pytest

from compat.scripted_model import text, tool_use
from providers.tmux import Tmux
from runs import services

pytestmark = pytest.mark.live


@pytest.fixture
def live_settings(settings, claude_home, tmp_path):
    env = {k: v for k, v in claude_home.env.items() if k not in ("HOME", "PATH", "TERM", "LANG")}
    settings.LAB_AGENT_HOME = str(claude_home.home)
    settings.LAB_AGENT_ENV = env
    settings.LAB_TMUX_SOCKET = f"labsec-{uuid.uuid4().hex[:10]}"
    settings.DATA_DIR = tmp_path / "data"
    settings.LAB_RUNS_DIR = tmp_path / "data" / "runs"
    yield settings
    Tmux(settings.LAB_TMUX_SOCKET).kill_server()


@pytest.mark.django_db(transaction=True)
def test_a_bash_permission_prompt_leaves_the_run_needs_input_and_unanswered(
    live_settings,
    claude_home,
    scripted_model,
    authed_client,
    tmp_path,
):
    pwned = tmp_path / f"pwned-{uuid.uuid4().hex}"
    scripted_model.script.add(
        tool_use("Bash", {"command": f"touch {pwned}"}, text="Running it."), text("done")
    )
    run = services.run_start(
        provider_id="claude-code", repository=claude_home.worktree, branch="lab/live-bash",
        options={"permission_mode": "default"},
    )  # fmt: skip
    services.run_reply(run=run, text="please run the command")
    deadline = time.monotonic() + 60
    body = ""
    while time.monotonic() < deadline:
        body = authed_client.get(f"/runs/{run.pk}/").content.decode()
        if 'data-state="needs_input"' in body:
            break
        time.sleep(0.5)
    assert 'data-state="needs_input"' in body, "the Bash prompt never showed as needs_input"
    assert "tmux -L" in body  # the copyable attach command
    assert '<form class="dialog dialog-approval"' in body  # offered to the operator, not answered
    # lab keeps looking (page loads, state reads) for a while: the prompt stays unanswered.
    for _ in range(6):
        body = authed_client.get(f"/runs/{run.pk}/").content.decode()
        assert 'data-state="needs_input"' in body
        time.sleep(0.5)
    assert not pwned.exists()
    assert Tmux(run.tmux_socket).has_session(run.tmux_session)
