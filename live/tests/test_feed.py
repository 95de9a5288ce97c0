"""The runs feed (live/feed.py): what the operator is told when a run's state changes, what a
page gets when its socket asks for the feed, and the runs list it redraws."""

from __future__ import annotations

import asyncio
import json

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator

from lab.asgi import application
from live import feed
from providers.testing import fake_append, fake_raise_dialog
from runs import services
from tests.security.support import session_cookie, ws_headers


@pytest.fixture
def run(fake_provider, git_repo, db):
    return services.run_start(provider_id="fake", repository=git_repo, branch="lab/feed-1")


def test_a_long_turn_that_ends_is_finished_and_a_quick_one_is_not():
    assert feed.notification(1, "idle", "working", now=100.0) == ""
    assert feed.notification(1, "working", "idle", now=106.0) == "finished"
    assert feed.notification(1, "idle", "working", now=200.0) == ""
    assert feed.notification(1, "working", "idle", now=201.0) == ""


def test_a_question_and_a_permission_prompt_are_told_but_not_by_a_starting_watcher():
    assert feed.notification(2, "working", "question") == "question"
    assert feed.notification(2, "working", "needs_input") == "needs_input"
    assert feed.notification(2, "", "question") == ""  # lab (re)started: the count shows it


async def _frames_until(ws, predicate, timeout=10.0):
    seen = []
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        remaining = deadline - asyncio.get_running_loop().time()
        assert remaining > 0, f"timed out; got {seen!r}"
        frame = await ws.receive_from(timeout=remaining)
        seen.append(frame)
        if predicate(frame):
            return seen


def _feed(frame: str) -> dict | None:
    return json.loads(frame)["feed"] if frame.startswith('{"feed"') else None


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("path", ["/ws/lab/", "run"])
async def test_every_page_gets_the_snapshot_then_each_change_with_what_it_waits_for(run, operator, path):
    cookie = await sync_to_async(session_cookie)(operator)
    ws = WebsocketCommunicator(
        application, f"/ws/runs/{run.pk}/" if path == "run" else path, headers=ws_headers(cookie)
    )
    assert (await ws.connect())[0]
    await ws.send_json_to({"type": "feed"})
    seen = await _frames_until(ws, lambda f: bool((d := _feed(f)) and d["snapshot"]))
    snap = _feed(seen[-1])
    assert [(e["id"], e["name"], e["url"]) for e in snap["runs"]] == [(run.pk, run.name, f"/runs/{run.pk}/")]

    fake_append(run.transcript_path, kind="user_text", text="go")
    await _frames_until(ws, lambda f: bool((d := _feed(f)) and d["runs"][0]["state"] == "working"))
    fake_raise_dialog(run.transcript_path, {"tool_use_id": "toolu_feed", "prompt": "Which fruit?"})

    def asks(frame: str) -> bool:
        d = _feed(frame)
        return bool(d and d["runs"][0]["state"] == "question")

    seen = await _frames_until(ws, asks)
    entry = _feed(seen[-1])
    assert entry["runs"][0]["waiting"] == "Which fruit?"
    assert entry["notify"] == "question"
    await ws.disconnect()


@pytest.mark.django_db(transaction=True)
async def test_a_socket_that_does_not_ask_for_the_feed_gets_none(run, operator):
    cookie = await sync_to_async(session_cookie)(operator)
    silent = WebsocketCommunicator(application, "/ws/lab/", headers=ws_headers(cookie))
    asked = WebsocketCommunicator(application, "/ws/lab/", headers=ws_headers(cookie))
    assert (await silent.connect())[0] and (await asked.connect())[0]
    await asked.send_json_to({"type": "feed"})
    await _frames_until(asked, lambda f: bool((d := _feed(f)) and d["snapshot"]))
    fake_append(run.transcript_path, kind="user_text", text="go")  # working: told to the feed
    await _frames_until(asked, lambda f: bool((d := _feed(f)) and d["runs"][0]["state"] == "working"))
    # Nor any row: the runs list's one writer is its own view, asked again by the page's script.
    assert await silent.receive_nothing(timeout=0.3)
    await silent.disconnect()
    await asked.disconnect()


def test_the_runs_list_answers_htmx_with_the_list_alone(authed_client, run):
    body = authed_client.get("/", headers={"HX-Request": "true"}).content.decode()
    assert body.startswith('<section id="runs-list">') and f'id="run-row-{run.pk}"' in body
    assert "<title>" not in body and "hx-swap-oob" not in body


def test_a_turn_stopped_on_a_limit_is_told_however_short():
    assert feed.notification(7, "idle", "working", now=300.0) == ""
    assert feed.notification(7, "working", "idle", now=300.5, limited=True) == "limit"
    assert feed.notification(7, "", "idle", limited=True) == ""  # a watcher just started: nothing


@pytest.mark.django_db(transaction=True)
async def test_the_same_notice_goes_to_web_push_with_only_the_question_s_first_line(
    run, operator, settings, monkeypatch
):
    # What the feed hands the push sender (push/tests/ prove what the sender posts).
    from push import sender

    settings.LAB_PUSH = True
    queued = []
    monkeypatch.setattr(sender._sender, "submit", queued.append)
    cookie = await sync_to_async(session_cookie)(operator)
    ws = WebsocketCommunicator(application, "/ws/lab/", headers=ws_headers(cookie))
    assert (await ws.connect())[0]
    await ws.send_json_to({"type": "feed"})
    await _frames_until(ws, lambda f: bool((d := _feed(f)) and d["snapshot"]))
    fake_append(run.transcript_path, kind="user_text", text="go")
    await _frames_until(ws, lambda f: bool((d := _feed(f)) and d["runs"][0]["state"] == "working"))
    assert queued == []  # a turn that starts is no notice
    prompt = "Which fruit?\nThe secret plan is in notes.md"
    fake_raise_dialog(run.transcript_path, {"tool_use_id": "toolu_push", "prompt": prompt})
    await _frames_until(ws, lambda f: bool((d := _feed(f)) and d["notify"] == "question"))
    await ws.disconnect()

    [push] = queued
    assert (push.run_id, push.name, push.kind, push.url) == (run.pk, run.name, "question", f"/runs/{run.pk}/")
    assert push.text == "Which fruit?"
    assert push.tag == f"lab-run-{run.pk}-question"
