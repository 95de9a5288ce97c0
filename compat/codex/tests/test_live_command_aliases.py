"""Live: a command lab refuses is refused under every name Codex 0.171.0 runs it by
(COMPAT-adapter §8): its alias /quit, and the beginning of a name (a paste of /qu with Enter
right behind it ended Codex, and /e opened /experimental; with Enter pressed once the menu
was drawn, /qu was "Unrecognized": the completion depends on timing lab does not control).
The reply goes through lab's service, as the page's composer sends it; the control pastes
/quit into the pane and watches Codex quit."""

from __future__ import annotations

import time
import uuid

import pytest

from compat.codex.adapter_harness import CodexAdapterRig
from providers.errors import ReplyRefused
from providers.tmux import Tmux
from runs import services

pytestmark = [pytest.mark.live, pytest.mark.django_db]


@pytest.fixture
def rig(tmp_path, settings):
    r = CodexAdapterRig(tmp_path, settings)
    settings.DATA_DIR = tmp_path / "data"
    settings.LAB_RUNS_DIR = tmp_path / "data" / "runs"
    settings.LAB_TMUX_SOCKET = f"labalias-{uuid.uuid4().hex[:8]}"
    r.sockets.append(settings.LAB_TMUX_SOCKET)
    yield r
    r.close()


def _wait(predicate, *, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


def test_quit_and_the_beginning_of_a_refused_command_are_refused_and_the_run_stays(rig):
    run = services.run_start(provider_id="codex", repository=rig.worktree, branch="lab/quit")
    tmux = Tmux(run.tmux_socket)
    _wait(lambda: "? for shortcuts" in tmux.capture(run.tmux_session), timeout=60, what="the composer")
    for typed, said in (
        ("/quit", "/quit is /exit by another name, and is not available from the chat"),
        ("/qu", "/qu is not sent from the chat: Codex may complete it to a command it begins"),
        ("/e", "/e is not sent from the chat: Codex may complete it to a command it begins"),
    ):
        with pytest.raises(ReplyRefused) as refused:
            services.run_reply(run=run, text=typed)
        assert str(refused.value).startswith(said), str(refused.value)
    assert services.run_alive(run)
    # The control: /quit pasted into the pane as lab pastes text ends Codex, so lab's refusal
    # is what kept it alive.
    tmux.paste(run.tmux_session, "/quit")
    _wait(lambda: "exit Codex" in tmux.capture(run.tmux_session), timeout=10, what="the menu showing /quit")
    tmux.send_keys(run.tmux_session, "Enter")
    _wait(lambda: not services.run_alive(run), timeout=30, what="/quit to end Codex")
