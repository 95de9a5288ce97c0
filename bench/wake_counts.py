# ruff: noqa: E501  (benchmark literals read better unwrapped)
"""How many times one state-changing wake, one page load and one dialog answer derive the same
things: the provider resolved, the pending dialog derived, the hook spool listed, the
transcript's tail read, tmux asked whether the TUI lives.

  python -m bench.wake_counts            the table
  python -m bench.wake_counts --json     one BENCH-RESULT line

Under `BENCH_CALLGRIND=1 valgrind --tool=callgrind --instr-atstart=no` with `--instructions`,
nothing is counted and only the measured wake and page load run with instrumentation on.

The wake and the page load are a Claude Code run (its adapter, a transcript where the adapter
expects it, a spool written by its real hook command, a tmux pane holding `sleep` so the run
counts as live): a PreToolUse(AskUserQuestion) + PermissionRequest land in the spool, and the
watcher's wake derives the question and tells the feed. The answer is the FakeProvider's (its
keys go nowhere), so its count is the generic layer's own; an adapter that asks tmux again
inside answer_dialog adds its own on top.

Counts come from cProfile (every call of a function, however it was imported) and, for the
spool, from wrapping os.listdir for the spool's own path.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import gc
import json
import os
import pstats
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from bench.append_cost import callgrind
from bench.common import django_setup, emit, kill_tmux_server, lab_env, make_live_run, tmpdir

# (what is counted, the function's file name ending, its name)
COUNTED = (
    ("provider resolved", "providers/registry.py", "get_provider"),
    ("pending dialog derived (adapter)", "", "pending_dialog"),
    ("spool_signature", "providers/hookspool.py", "spool_signature"),
    ("spool_events", "providers/hookspool.py", "spool_events"),
    ("transcript_tail", "transcripts.py", "transcript_tail"),
    ("tmux asked: alive", "providers/tmux.py", "pane_format"),
    ("tmux asked: session", "providers/tmux.py", "has_session"),
    ("tmux asked: pane pid", "providers/tmux.py", "pane_pid"),
)


INSTRUCTIONS = "--instructions" in sys.argv


@contextlib.contextmanager
def counting(spool_dir: str) -> Iterator[dict[str, int]]:
    """The counts of COUNTED and of the spool's listings, inside the block."""
    counts: dict[str, int] = {}
    if INSTRUCTIONS:  # callgrind counts the block's instructions instead (no profiler in them)
        # A full collection first: one falling inside a block moved its count by 5% between
        # trees whose code there was the same.
        gc.collect()
        callgrind(True)
        try:
            yield counts
        finally:
            callgrind(False)
            # One dump per measured block (callgrind.out.<pid>.1, .2, …): its "totals:" line.
            subprocess.run(["callgrind_control", "-d", str(os.getpid())], check=True, capture_output=True)
        return
    real_listdir = os.listdir
    listed = [0]

    def listdir(path: str | os.PathLike[str] = ".") -> list[str]:
        if os.fspath(path) == spool_dir:
            listed[0] += 1
        return real_listdir(path)

    os.listdir = listdir  # type: ignore[assignment]
    profile = cProfile.Profile()
    profile.enable()
    try:
        yield counts
    finally:
        profile.disable()
        os.listdir = real_listdir
    stats = pstats.Stats(profile).stats  # type: ignore[attr-defined]
    for label, file_end, name in COUNTED:
        counts[label] = sum(
            row[1]
            for (file, _line, fn), row in stats.items()
            if fn == name and (file.endswith(file_end) if file_end else "/providers/" in file)
        )
    counts["spool listed (os.listdir)"] = listed[0]


def write_hook(spool: Path, payload: dict[str, object]) -> None:
    """As the hook command writes one (`<time_ns:020d>-<pid>.json`, renamed into place)."""
    name = f"{time.time_ns():020d}-{os.getpid()}.json"
    (spool / f".{name}.tmp").write_text(json.dumps(payload))
    os.rename(spool / f".{name}.tmp", spool / name)


def wake(run_id: int) -> tuple[dict[str, int], str]:
    """One state-changing wake of the watcher (a question lands in the spool), as lead() runs
    it: the step (inline first, then in a thread), then publish, which tells the feed."""
    from channels.layers import get_channel_layer

    from runs.models import Run

    try:
        from live.watcher import RunWatcher
    except ImportError:  # a tree from before the live app, measured for the "before" figures
        from runs.watcher import RunWatcher  # type: ignore[no-redef]

    run = Run.objects.get(pk=run_id)
    watcher = RunWatcher(run_id, has_pidfd=True)
    layer = get_channel_layer()

    async def one() -> str:
        if hasattr(watcher, "wake_once"):  # one look at the spool per wake
            return (await watcher.wake_once(layer, run)).state
        snap = watcher.step_inline(run, full=True) or await asyncio.to_thread(watcher.step, run, full=True)
        await watcher.publish(layer, run, snap)
        return snap.state

    first = asyncio.run(one())  # the first wake: indexes built, caches warm
    assert first == "working", first  # its transcript holds one prompt
    session = run.session_id
    common = {"session_id": session, "transcript_path": run.transcript_path, "cwd": run.worktree}
    questions = [{"question": "Which?", "header": "Pick", "options": [{"label": "A", "description": "a"}, {"label": "B", "description": "b"}], "multiSelect": False}]  # fmt: skip
    spool = Path(run.spool_dir)
    write_hook(spool, {**common, "hook_event_name": "UserPromptSubmit", "prompt": "ask me"})
    write_hook(spool, {**common, "hook_event_name": "PreToolUse", "tool_name": "AskUserQuestion", "tool_use_id": "toolu_q", "tool_input": {"questions": questions}})  # fmt: skip
    write_hook(spool, {**common, "hook_event_name": "PermissionRequest", "tool_name": "AskUserQuestion", "tool_input": {"questions": questions}})  # fmt: skip
    with counting(str(spool)) as counts:
        state = asyncio.run(one())
    return counts, state


def page_load(run_id: int) -> dict[str, int]:
    from django.contrib.auth import get_user_model
    from django.test import Client

    from runs.models import Run

    run = Run.objects.get(pk=run_id)
    client = Client(HTTP_HOST="127.0.0.1")
    client.force_login(get_user_model().objects.get_or_create(username="bench-counts")[0])
    assert client.get(f"/runs/{run_id}/").status_code == 200  # warm
    with counting(str(run.spool_dir)) as counts:
        response = client.get(f"/runs/{run_id}/")
    assert response.status_code == 200 and "Which?" in response.content.decode(), (
        "the page shows the question"
    )
    return counts


def answer(tmp: Path) -> dict[str, int]:
    """A dialog answer on the FakeProvider: the generic layer's own asks."""
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.test import Client

    from providers import registry
    from providers.testing import FAKE_ROOT_ENV, fake_raise_dialog
    from runs import services

    os.environ[FAKE_ROOT_ENV] = str(tmp / "fake")
    settings.LAB_PROVIDERS = {**settings.LAB_PROVIDERS, "fake": "providers.testing.FullFakeProvider"}
    registry._load.cache_clear()
    repo = tmp / "repo"
    repo.mkdir()
    git = ["git", "-c", "user.name=b", "-c", "user.email=b@example.invalid"]
    subprocess.run([*git, "init", "-q", "-b", "main"], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "i"], cwd=repo, check=True)
    run = services.run_start(provider_id="fake", repository=repo, branch="lab/counts")
    fake_raise_dialog(
        run.transcript_path, {"tool_use_id": "toolu_1", "prompt": "Which?", "options": ["A", "B"]}
    )
    client = Client(HTTP_HOST="127.0.0.1")
    client.force_login(get_user_model().objects.get_or_create(username="bench-counts")[0])
    with counting(str(run.spool_dir)) as counts:
        response = client.post(
            f"/runs/{run.pk}/answer/", {"tool_use_id": "toolu_1", "count": "1", "answers-0": "1"}
        )
    assert response.status_code == 200, response.content
    return counts


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--instructions", action="store_true", help="count nothing (under callgrind)")
    args = ap.parse_args()
    with tmpdir("lab-bench-counts-") as tmp:
        env = lab_env(tmp, LAB_PROVIDERS_ENABLED="claude-code")
        django_setup()
        run_id, _path = make_live_run(0, tmp)
        try:
            measured: dict[str, object] = {}
            w, state = wake(run_id)
            measured["wake"] = {**w, "state": state}
            measured["page load"] = page_load(run_id)
            measured["dialog answer"] = answer(tmp)
        finally:
            kill_tmux_server(env["LAB_TMUX_SOCKET"])
    if args.json:
        emit({"wake_counts": measured})
        return
    show: Callable[[str], None] = lambda s: print(s, file=sys.stdout)  # noqa: E731
    for part, counts in measured.items():
        assert isinstance(counts, dict)
        show(f"{part}: " + ", ".join(f"{k} {v}" for k, v in counts.items()))


if __name__ == "__main__":
    main()
