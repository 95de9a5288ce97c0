"""Live: a command lab refuses is refused under every name the real CLI runs it by (compat §10).

/quit is /exit in Claude Code's own command table, though the menu lists only /exit. The reply
goes through lab's service, the path the page's composer takes; the control types the same line
into the pane and watches the CLI quit, so the refusal is proven to matter.
"""

from __future__ import annotations

import time
import uuid

import pytest

from providers.errors import ReplyRefused
from providers.tmux import Tmux
from runs import services

pytestmark = pytest.mark.live


@pytest.fixture
def live_settings(settings, claude_home, tmp_path):
    env = {k: v for k, v in claude_home.env.items() if k not in ("HOME", "PATH", "TERM", "LANG")}
    settings.LAB_AGENT_HOME = str(claude_home.home)
    settings.LAB_AGENT_ENV = env
    settings.LAB_TMUX_SOCKET = f"labalias-{uuid.uuid4().hex[:10]}"
    settings.DATA_DIR = tmp_path / "data"
    settings.LAB_RUNS_DIR = tmp_path / "data" / "runs"
    yield settings
    Tmux(settings.LAB_TMUX_SOCKET).kill_server()


def _wait(predicate, *, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


@pytest.mark.django_db
def test_quit_as_a_reply_is_refused_and_the_run_stays_alive(live_settings, claude_home, scripted_model):
    run = services.run_start(provider_id="claude-code", repository=claude_home.worktree, branch="lab/quit")
    tmux = Tmux(run.tmux_socket)
    _wait(lambda: "❯" in tmux.capture(run.tmux_session), timeout=60, what="the prompt")
    with pytest.raises(ReplyRefused) as refused:
        services.run_reply(run=run, text="/quit")
    assert str(refused.value) == (
        "/quit is /exit by another name, and is not available from the chat: "
        "it quits the CLI and so ends the run."
    )
    # compat §10: the beginning of a name, pasted with Enter behind it, ran /quit and /exit.
    for typed in ("/qu", "/ex"):
        with pytest.raises(ReplyRefused) as refused:
            services.run_reply(run=run, text=typed)
        assert str(refused.value).startswith(
            f"{typed} is not sent from the chat: Claude Code may complete it to a command it begins"
        )
    assert services.run_alive(run)  # nothing was sent
    # The control: the same line typed into the pane ends the CLI, so lab's refusal is what
    # kept the run alive.
    tmux.send_keys(run.tmux_session, "/quit")
    time.sleep(0.5)
    tmux.send_keys(run.tmux_session, "Enter")
    _wait(lambda: not services.run_alive(run), timeout=30, what="/quit to end the CLI")
