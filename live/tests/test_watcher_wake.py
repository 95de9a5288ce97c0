"""A watcher wake resolves its run once: one RunHandle for every provider call of the wake (and
of the next wakes, while the run's fields stay the same), a new one when the transcript moves.
And a wake that only an append to the transcript caused leaves the live channel alone; a run
nobody watches renders nothing."""

from __future__ import annotations

import asyncio
import os

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator

from lab.asgi import application
from live import watcher as watcher_module
from live.tests.test_feed import _feed, _frames_until
from live.watcher import RunWatcher
from providers.testing import fake_append, fake_raise_dialog
from runs import models, rendering, services, transcripts
from runs.models import Run
from tests.security.support import session_cookie, ws_headers

pytestmark = pytest.mark.usefixtures("fresh_indexes")


@pytest.fixture
def run(fake_provider, git_repo, db):
    return services.run_start(provider_id="fake", repository=git_repo, branch="lab/wake")


@pytest.mark.django_db
def test_wakes_build_the_run_handle_once(run, monkeypatch):
    built = []
    real = models.RunHandle
    monkeypatch.setattr(models, "RunHandle", lambda **fields: built.append(fields) or real(**fields))
    watcher = RunWatcher(run.pk, has_pidfd=True)
    loaded = Run.objects.get(pk=run.pk)
    fake_append(loaded.transcript_path, kind="assistant_text", text="zero")
    assert watcher._step(loaded, inline=False) is not None  # the first read, as in its thread
    for text in ("one", "two"):
        fake_append(loaded.transcript_path, kind="assistant_text", text=text)
        snap = watcher.step_inline(loaded)
        assert snap is not None and snap.next_seq >= 2
    assert len(built) == 1
    loaded.transcript_path += ".next"  # a clear: the provider is told the new path
    assert loaded.handle().transcript_path.endswith(".next")
    assert len(built) == 2


@pytest.mark.django_db
def test_a_wake_only_the_transcript_caused_asks_the_live_channel_only_while_it_says_something(
    run, fake_provider, monkeypatch
):
    asked = []
    for name in ("sweep", "locate_transcript", "pending_dialog", "blocked_state"):
        real = getattr(fake_provider, name)
        monkeypatch.setattr(fake_provider, name, lambda h, _n=name, _r=real: asked.append(_n) or _r(h))
    watcher = RunWatcher(run.pk, has_pidfd=True)
    loaded = Run.objects.get(pk=run.pk)
    fake_append(loaded.transcript_path, kind="assistant_text", text="zero")
    assert watcher._step(loaded, inline=False) is not None
    assert {"sweep", "locate_transcript", "pending_dialog", "blocked_state"} <= set(asked)
    asked.clear()
    fake_append(loaded.transcript_path, kind="assistant_text", text="one")
    snap = watcher.step_inline(loaded, full=False)
    assert snap is not None and snap.state == "idle" and asked == []
    # A live signal appears (the fake's flag file beside the transcript): a full wake sees it,
    # and while it is up an append-only wake asks again (an append may close it).
    flag = loaded.transcript_path + ".blocked"
    open(flag, "w").close()
    assert watcher._step(loaded, inline=False).state == "needs_input"
    asked.clear()
    fake_append(loaded.transcript_path, kind="assistant_text", text="two")
    assert watcher._step(loaded, inline=False, full=False).state == "needs_input"
    assert "blocked_state" in asked and "sweep" not in asked and "locate_transcript" not in asked
    os.unlink(flag)
    assert watcher._step(loaded, inline=False, full=False).state == "idle"


@pytest.mark.django_db(transaction=True)
async def test_only_an_event_on_the_transcript_itself_leaves_the_live_channel_unchecked(run, tmp_path):
    watcher = RunWatcher(run.pk)
    path = await sync_to_async(lambda: Run.objects.get(pk=run.pk).transcript_path)()
    directory, spool = os.path.dirname(path), tmp_path / "spool"
    spool.mkdir()
    watcher.transcript_file = os.path.split(path)
    task = asyncio.create_task(watcher.watch((directory, str(spool))))

    async def woken_by(change) -> bool:
        await asyncio.wait_for(watcher.wake.wait(), 5)  # the watch is set up (or the last event)
        await asyncio.sleep(0.05)
        watcher.wake.clear()
        watcher.live_dirty = False
        change()
        await asyncio.wait_for(watcher.wake.wait(), 5)
        return watcher.live_dirty

    try:
        watcher.wake.set()
        assert not await woken_by(lambda: fake_append(path, kind="assistant_text", text="x"))
        assert await woken_by(lambda: (spool / "1-2.json").write_text("{}"))
        assert await woken_by(lambda: fake_append(path + ".blocked", kind="flag"))
        assert not await woken_by(lambda: fake_append(path, kind="assistant_text", text="y"))
    finally:
        task.cancel()


async def test_a_page_that_changed_a_run_makes_its_watcher_look_again(monkeypatch):
    """runs/ never imports live/: its pages send runs.signals.poke, which the live app connects
    to the run's watcher here (live/apps.py)."""
    from live import watcher as watchers
    from runs.signals import poke

    watcher = RunWatcher(4242, live_dirty=False)
    monkeypatch.setitem(watchers._watchers, 4242, watcher)
    monkeypatch.setattr(watchers, "_loop", asyncio.get_running_loop())
    poke(4242)
    await asyncio.wait_for(watcher.wake.wait(), 5)
    assert watcher.stale and watcher.live_dirty


@pytest.mark.django_db(transaction=True)
async def test_a_run_nobody_watches_costs_no_rendering_and_its_first_page_gets_the_panel(
    run, operator, monkeypatch
):
    rendered: list[str] = []
    real_render, real_message = watcher_module.render, rendering.compiled_message_html
    monkeypatch.setattr(
        watcher_module, "render", lambda name, ctx: rendered.append(name) or real_render(name, ctx)
    )
    monkeypatch.setattr(
        rendering, "compiled_message_html", lambda *a: rendered.append("message") or real_message(*a)
    )
    cookie = await sync_to_async(session_cookie)(operator)
    # The runs list open (its socket runs every live run's watcher), no page on the run.
    lister = WebsocketCommunicator(application, "/ws/lab/", headers=ws_headers(cookie))
    assert (await lister.connect())[0]
    await lister.send_json_to({"type": "feed"})
    await _frames_until(lister, lambda f: bool((d := _feed(f)) and d["snapshot"]))
    fake_append(run.transcript_path, kind="user_text", text="go")
    await _frames_until(lister, lambda f: bool((d := _feed(f)) and d["runs"][0]["state"] == "working"))
    fake_append(run.transcript_path, kind="assistant_text", text="a line nobody reads")
    fake_raise_dialog(run.transcript_path, {"tool_use_id": "toolu_w", "prompt": "Deploy now?"})
    await _frames_until(lister, lambda f: bool((d := _feed(f)) and d["runs"][0]["state"] == "question"))
    assert rendered == []  # the feed told every state; no panel and no message was rendered
    page = WebsocketCommunicator(application, f"/ws/runs/{run.pk}/", headers=ws_headers(cookie))
    assert (await page.connect())[0]
    await page.send_json_to({"type": "hello", "epoch": "", "seq": -1})
    frames = await _frames_until(page, lambda f: 'id="panel"' in f and 'data-state="question"' in f)
    assert "Deploy now?" in frames[-1]
    await page.disconnect()
    await lister.disconnect()


@pytest.mark.django_db(transaction=True)
async def test_more_live_runs_than_the_index_bound_each_keep_their_index(
    fake_provider, git_repo, monkeypatch
):
    """Each wake answers from the index its watcher holds, however many runs are live: with
    more live runs than MAX_INDEXES, each wake evicted the next run's index and every wake read
    its transcript again from the start, in a thread."""
    monkeypatch.setattr(transcripts, "MAX_INDEXES", 1)
    monkeypatch.setattr(transcripts, "_pinned", {})
    start = sync_to_async(services.run_start)
    runs = [await start(provider_id="fake", repository=git_repo, branch=f"lab/many-{i}") for i in range(3)]
    watchers = [RunWatcher(run.pk, has_pidfd=True) for run in runs]
    for watcher, run in zip(watchers, runs, strict=True):
        fake_append(run.transcript_path, kind="assistant_text", text="first")
        await watcher.wake_once(None, run, full=False)  # the first read (in a thread)
    for n in range(3):  # the runs' lines come in turn
        for watcher, run in zip(watchers, runs, strict=True):
            fake_append(run.transcript_path, kind="assistant_text", text=f"line {n}")
            snap = watcher.step_inline(run, full=False)
            assert snap is not None and snap.next_seq == n + 2  # on the loop, from its own index
    for watcher in watchers:  # the watchers end: the bound holds again
        watcher.hold("")
    assert len(transcripts._indexes) == 1
