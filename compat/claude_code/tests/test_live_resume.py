"""Live: Claude Code's sessions in a worktree, listed and resumed through the production
adapter (COMPAT §1, resume): `claude --resume <id>` appends to the session's own transcript, so
a resumed run reads the whole earlier conversation, and the next prompt is answered in it. A
session started by hand in the worktree (not by lab) is listed and resumed the same way."""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path

import pytest

from compat.adapter import AdapterRun, spawned
from compat.claude_code.scripted_model import text, when
from providers.base import RESUME_OPTION
from providers.claude_code.provider import ClaudeCodeProvider
from providers.errors import SpawnFailed
from providers.schema import MessageKind, RunHandle
from providers.tmux import Tmux

pytestmark = pytest.mark.live


def handle(tmp_path: Path, worktree: Path, n: int) -> RunHandle:
    return RunHandle(
        run_id=n,
        worktree=str(worktree),
        tmux_socket=f"labtest-{uuid.uuid4().hex[:10]}",
        tmux_session="lab-live",
        spool_dir=str(tmp_path / f"run{n}" / "spool"),
    )


@pytest.fixture
def runs(adapter_settings, claude_home, tmp_path):
    started: list[RunHandle] = []

    def start(options: dict[str, str], n: int) -> AdapterRun:
        h = handle(tmp_path, claude_home.worktree, n)
        started.append(h)
        return spawned(ClaudeCodeProvider(), h, {"permission_mode": "default", **options})

    yield start
    for h in started:
        Tmux(h.tmux_socket).kill_server()


def test_a_session_from_one_run_is_listed_and_resumed_with_its_history(scripted_model, claude_home, runs):
    scripted_model.script.add(when("RESUME-A", text("first answer RESUME-A")))
    scripted_model.script.add(when("RESUME-B", text("second answer RESUME-B")))
    first = runs({}, 1)
    first.provider.reply(first.handle, "first prompt RESUME-A")
    first.wait(lambda r: r.answered("first answer RESUME-A"), what="the first answer")
    Tmux(first.handle.tmux_socket).kill_server()

    [listed] = first.provider.sessions(claude_home.worktree)
    assert listed.session_id == first.handle.session_id
    assert listed.first_prompt == "first prompt RESUME-A" and listed.size > 0

    second = runs({RESUME_OPTION: listed.session_id}, 2)
    assert second.handle.transcript_path == listed.path  # the same file: read through from its start
    second.wait(lambda r: "first answer RESUME-A" in r.texts(MessageKind.ASSISTANT_TEXT), what="the history")
    second.provider.reply(second.handle, "next prompt RESUME-B")
    second.wait(lambda r: r.answered("second answer RESUME-B"), what="the answer after resuming")
    assert second.texts(MessageKind.USER_TEXT) == ["first prompt RESUME-A", "next prompt RESUME-B"]
    # The model got the earlier conversation with the new prompt.
    [request] = [r for r in scripted_model.requests if "RESUME-B" in str(r.get("body"))][:1]
    assert "first answer RESUME-A" in str(request["body"]["messages"])


def wait_until(predicate, what: str, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := predicate():
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def test_a_session_started_by_hand_in_the_worktree_is_adopted(scripted_model, claude_home, runs, tmp_path):
    scripted_model.script.add(when("BYHAND-1", text("hand answer BYHAND-1")))
    scripted_model.script.add(when("BYHAND-2", text("adopted answer BYHAND-2")))
    provider = ClaudeCodeProvider()
    # The CLI started in a terminal, the operator's way: no lab flags, no hooks.
    tmux = Tmux(f"labtest-{uuid.uuid4().hex[:10]}")
    try:
        cwd = os.path.realpath(claude_home.worktree)
        tmux.new_session(
            "byhand", cwd=cwd, argv=[provider.binary()], env=provider.agent_env(), env_dir=str(tmp_path)
        )
        # The test's own probe: the pane shows the composer (production code never reads it).
        wait_until(lambda: "mode on" in tmux.capture("byhand"), "the composer")

        def pasted() -> bool:
            # Before its input is live the CLI drops a paste (COMPAT §6): paste until it shows.
            if "BYHAND-1" not in tmux.capture("byhand"):
                tmux.paste("byhand", "hello by hand BYHAND-1")
                time.sleep(2.0)
            return "BYHAND-1" in tmux.capture("byhand")

        wait_until(pasted, "the pasted prompt")
        tmux.send_keys("byhand", "Enter")
        listed = wait_until(
            lambda: [
                s
                for s in provider.sessions(claude_home.worktree)
                if "hand answer" in Path(s.path).read_text()
            ],
            "the answered session by hand",
        )[0]
        assert listed.first_prompt.startswith("hello by hand BYHAND-1")
    finally:
        tmux.kill_server()
    adopted = runs({RESUME_OPTION: listed.session_id}, 3)
    adopted.wait(lambda r: "hand answer BYHAND-1" in r.texts(MessageKind.ASSISTANT_TEXT), what="the history")
    adopted.provider.reply(adopted.handle, "go on BYHAND-2")
    adopted.wait(lambda r: r.answered("adopted answer BYHAND-2"), what="the answer")


def test_an_unknown_session_is_refused_before_anything_starts(claude_home, runs):
    with pytest.raises(SpawnFailed, match="session"):
        runs({RESUME_OPTION: str(uuid.uuid4())}, 4)
    with pytest.raises(SpawnFailed, match="session"):
        runs({RESUME_OPTION: "../../etc/passwd"}, 5)
