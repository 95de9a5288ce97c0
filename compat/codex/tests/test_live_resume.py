"""Live: Codex's threads in a worktree, listed and resumed through the production adapter
(COMPAT.md §1, resume): `codex resume <id>` appends to the thread's own rollout (its
SessionStart, source "resume", comes only at the first submit), so the resumed run reads the
whole earlier conversation from spawn on and the next prompt is answered in it."""

from __future__ import annotations

import uuid

import pytest

from compat.codex.adapter_harness import CodexAdapterRig
from compat.codex.scripted_model import text, when
from providers.base import RESUME_OPTION
from providers.errors import SpawnFailed
from providers.schema import MessageKind
from providers.tmux import Tmux

pytestmark = pytest.mark.live


@pytest.fixture
def rig(tmp_path, settings):
    r = CodexAdapterRig(tmp_path, settings)
    yield r
    r.close()


def test_a_thread_from_one_run_is_listed_and_resumed_with_its_history(rig):
    rig.model.script.add(when("CRESUME-1", text("first answer CRESUME-1")))
    rig.model.script.add(when("CRESUME-2", text("second answer CRESUME-2")))
    first = rig.start()
    first.provider.reply(first.handle, "first prompt CRESUME-1")
    first.wait(lambda r: r.answered("first answer CRESUME-1"), what="the first answer")
    rollout = first.provider.locate_transcript(first.handle)
    Tmux(first.handle.tmux_socket).kill_server()

    [listed] = first.provider.sessions(rig.worktree)
    assert listed.path == rollout and listed.first_prompt == "first prompt CRESUME-1"

    second = rig.start(options={RESUME_OPTION: listed.session_id}, n=2)
    # From spawn on, before any hook: the earlier conversation.
    second.wait(lambda r: "first answer CRESUME-1" in r.texts(MessageKind.ASSISTANT_TEXT), what="the history")
    second.provider.reply(second.handle, "next prompt CRESUME-2")
    second.wait(lambda r: r.answered("second answer CRESUME-2"), what="the answer after resuming")
    assert second.texts(MessageKind.USER_TEXT) == ["first prompt CRESUME-1", "next prompt CRESUME-2"]
    assert second.provider.locate_transcript(second.handle) == rollout  # the same file, after its hook
    request = next(r for r in rig.model.turn_requests() if "CRESUME-2" in str(r["body"].get("input")))
    assert "first answer CRESUME-1" in str(request["body"]["input"])


def test_an_unknown_thread_is_refused_before_anything_starts(rig):
    with pytest.raises(SpawnFailed, match="session"):
        rig.start(options={RESUME_OPTION: str(uuid.uuid4())})
