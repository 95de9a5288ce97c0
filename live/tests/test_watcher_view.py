"""One RunView per wake (runs/runview.py), as the watcher builds it: a wake that changes what a
run shows resolves the provider once and looks at the hook spool once, and the panel, the runs
list's row and the feed entry all show what it derived. And a socket's slow catch-up reads the
transcript its notification named without locating it again.

The wake runs on Claude Code's adapter with a spool its hook command's shape, so the spool's
listings are the adapter's real ones; the counts are of the generic layer's calls."""

from __future__ import annotations

import asyncio
import json
import os
import time
import uuid
from pathlib import Path

import pytest
from channels.layers import InMemoryChannelLayer

from broadcast import groups
from live.watcher import RunWatcher
from providers import registry
from providers.schema import RunState
from providers.testing import fake_append
from runs import services
from runs.models import Run
from tests.factories import RunFactory

pytestmark = pytest.mark.usefixtures("fresh_indexes")

QUESTIONS = [
    {
        "question": "Which colour?",
        "header": "Colour",
        "options": [{"label": "Red", "description": "r"}, {"label": "Green", "description": "g"}],
        "multiSelect": False,
    }
]


def hook(run: Run, payload: dict[str, object]) -> None:
    """A hook payload as the adapter's hook command writes it: `<time_ns:020d>-<pid>.json`,
    renamed into place."""
    spool = run.spool_dir
    name = f"{time.time_ns():020d}-{os.getpid()}.json"
    common = {"session_id": run.session_id, "transcript_path": run.transcript_path, "cwd": run.worktree}
    (spool / f".{name}.tmp").write_text(json.dumps({**common, **payload}))
    os.rename(spool / f".{name}.tmp", spool / name)


@pytest.fixture
def claude_run(db, tmp_path, settings):
    """A live Claude Code run: a transcript holding one prompt, a spool holding SessionStart."""
    settings.LAB_RUNS_DIR = tmp_path / "runs"
    settings.LAB_AGENT_HOME = str(tmp_path / "home")
    settings.LAB_PROVIDERS = {"claude-code": "providers.claude_code.ClaudeCodeProvider"}
    load = registry._load  # the cached loader (a test may wrap the module's name)
    load.cache_clear()
    session = str(uuid.uuid4())
    path = tmp_path / "projects" / "-wt" / f"{session}.jsonl"
    path.parent.mkdir(parents=True)
    prompt = {"type": "user", "uuid": str(uuid.uuid4()), "timestamp": "2026-12-02T10:17:09.479Z",
              "sessionId": session, "message": {"role": "user", "content": "ask me"},
              "origin": {"kind": "human"}, "promptSource": "typed"}  # fmt: skip
    path.write_text(json.dumps(prompt) + "\n")
    run = RunFactory(
        provider_id="claude-code",
        transcript_path=str(path),
        session_id=session,
        worktree=str(tmp_path / "wt"),
    )
    run.spool_dir.mkdir(parents=True)
    hook(run, {"hook_event_name": "SessionStart", "source": "startup"})
    yield run
    load.cache_clear()


@pytest.fixture
def counted(monkeypatch):
    """How often, from here on, the registry is asked for a provider and each directory is
    listed."""
    counts = {"provider": 0}
    listed: dict[str, int] = {}
    real_load, real_listdir = registry._load, os.listdir

    def load(*args):
        counts["provider"] += 1
        return real_load(*args)

    def listdir(path="."):
        listed[os.fspath(path)] = listed.get(os.fspath(path), 0) + 1
        return real_listdir(path)

    monkeypatch.setattr(registry, "_load", load)
    monkeypatch.setattr(os, "listdir", listdir)
    return counts, listed


def wake(watcher: RunWatcher, run: Run, layer) -> str:
    """One wake as the watcher's loop runs it."""

    async def one() -> str:
        return (await watcher.wake_once(layer, run)).state

    return asyncio.run(one())


@pytest.mark.django_db(transaction=True)
def test_a_wake_that_opens_a_question_resolves_the_provider_and_lists_the_spool_once(claude_run, counted):
    counts, listed = counted
    layer = InMemoryChannelLayer()
    run = Run.objects.get(pk=claude_run.pk)
    watcher = RunWatcher(run.pk, has_pidfd=True)
    assert wake(watcher, run, layer) == RunState.WORKING
    hook(run, {"hook_event_name": "PreToolUse", "tool_name": "AskUserQuestion", "tool_use_id": "toolu_q",
               "tool_input": {"questions": QUESTIONS}})  # fmt: skip
    hook(run, {"hook_event_name": "PermissionRequest", "tool_name": "AskUserQuestion",
               "tool_input": {"questions": QUESTIONS}})  # fmt: skip
    counts["provider"] = 0
    listed.clear()

    async def heard() -> str:
        feed = await layer.new_channel()
        await layer.group_add(groups.FEED, feed)
        snap = await watcher.wake_once(layer, run)
        assert snap.state == RunState.QUESTION and "Which colour?" in snap.panel_html
        return (await layer.receive(feed))["text"]

    entry = json.loads(asyncio.run(heard()))["feed"]["runs"][0]
    assert counts["provider"] == 1
    assert listed == {str(run.spool_dir): 1}  # the transcript's folder is not listed at all
    assert entry["state"] == "question" and entry["waiting"] == "Which colour?"


def _counting(fn, calls: list):
    def counted(*args, **kwargs):
        calls.append(args)
        return fn(*args, **kwargs)

    return counted


@pytest.mark.django_db
def test_the_slow_catch_up_reads_the_announced_transcript_without_locating_it(
    fake_provider, git_repo, monkeypatch
):
    from live.frames import catch_up_frames

    run = services.run_start(provider_id="fake", repository=git_repo, branch="lab/catch-up")
    fake_append(run.transcript_path, kind="assistant_text", text="first")
    located: list = []
    monkeypatch.setattr(
        type(fake_provider), "locate_transcript", _counting(type(fake_provider).locate_transcript, located)
    )
    frames, _epoch, last = catch_up_frames(run, "", -1, path=run.transcript_path)
    assert last == 0 and "first" in "".join(frames) and located == []
    assert Path(run.transcript_path).exists()
