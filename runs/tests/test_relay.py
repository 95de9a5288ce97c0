"""A run of another host is served by that host's runner, relayed over the channel layer:
its page, its reply, its socket; a silent host is said to be silent; a message meant for
another host, or not signed by this lab, is refused. Here the runner for host "b" is a task in
the test's own process (it acts as host b in its tasks' context), on the in-memory layer; the
deployment test (tests/deploy/) runs real runners on their own machines."""

from __future__ import annotations

import asyncio
import datetime
import json
import re

import pytest
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from channels.testing import HttpCommunicator, WebsocketCommunicator
from django.utils import timezone

from hosts import heartbeat, identity, protocol
from hosts.models import Host, credential_hash
from hosts.runner import Runner
from lab.asgi import application
from providers.testing import fake_append
from runs import services
from runs.models import Run
from tests.security.support import HOST, ORIGIN, session_cookie, ws_headers

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("fresh_indexes")]

CSRF = "x" * 32


@pytest.fixture
def run_on_b(fake_provider, git_repo):
    Host.objects.create(name="b", credential=credential_hash("t" * 40), last_seen=timezone.now())
    with identity.acting_as_runner("b"):
        return services.run_start(provider_id="fake", repository=git_repo, branch="lab/on-b")


@pytest.fixture
async def runner_b():
    runner = Runner("b", application)
    with identity.acting_as_runner("b"):
        beat = asyncio.ensure_future(heartbeat.beating("b"))
    serving = asyncio.ensure_future(runner.serve())
    yield runner
    serving.cancel()
    beat.cancel()
    for task in list(runner.tasks):
        task.cancel()
    await asyncio.gather(serving, beat, *runner.tasks, return_exceptions=True)


def http_headers(cookie: bytes, *, post: bool = False) -> list[tuple[bytes, bytes]]:
    headers = [(b"host", HOST.encode()), (b"cookie", cookie + b"; csrftoken=" + CSRF.encode())]
    if post:
        headers += [
            (b"origin", ORIGIN.encode()),
            (b"x-csrftoken", CSRF.encode()),
            (b"content-type", b"application/x-www-form-urlencoded"),
        ]
    return headers


async def http(method: str, path: str, cookie: bytes, body: bytes = b"") -> dict:
    talk = HttpCommunicator(
        application, method, path, body=body, headers=http_headers(cookie, post=method == "POST")
    )
    return await talk.get_response(timeout=30)


def header(response: dict, name: str) -> str:
    for k, v in response["headers"]:
        if k.decode().lower() == name:
            return v.decode()
    return ""


async def test_a_run_of_another_host_is_served_by_its_runner_page_reply_and_socket(
    run_on_b, runner_b, operator
):
    cookie = await sync_to_async(session_cookie)(operator)
    page = await http("GET", f"/runs/{run_on_b.pk}/", cookie)
    assert page["status"] == 200 and header(page, "x-lab-host") == "b"
    assert run_on_b.name in page["body"].decode()

    sent = await http("POST", f"/runs/{run_on_b.pk}/reply/", cookie, body=b"text=hello+from+the+web+tier")
    assert sent["status"] in (200, 204), sent["body"][:300]
    with open(run_on_b.transcript_path) as f:
        lines = [json.loads(x) for x in f.read().splitlines() if x.strip()]
    assert any(line.get("text") == "hello from the web tier" for line in lines)

    socket = WebsocketCommunicator(application, f"/ws/runs/{run_on_b.pk}/", headers=ws_headers(cookie))
    assert (await socket.connect(timeout=10))[0]
    await socket.send_json_to({"type": "hello", "epoch": "", "seq": -1})
    fake_append(run_on_b.transcript_path, kind="assistant_text", text="RELAYED-LINE from host b")
    seen = ""
    async with asyncio.timeout(20):
        while "RELAYED-LINE" not in seen:
            seen += await socket.receive_from(timeout=20)
    await socket.disconnect()


async def test_a_silent_host_is_said_to_be_silent_and_its_runs_stay_listed(run_on_b, operator):
    # No runner for b, and its last beat a minute ago.
    await sync_to_async(Host.objects.filter(name="b").update)(
        last_seen=timezone.now() - datetime.timedelta(seconds=61)
    )
    cookie = await sync_to_async(session_cookie)(operator)
    page = await http("GET", f"/runs/{run_on_b.pk}/", cookie)
    assert page["status"] == 503
    assert re.search(r"Host b has not answered for 6\d s", page["body"].decode())
    listed = (await http("GET", "/", cookie))["body"].decode()
    assert f'id="run-row-{run_on_b.pk}"' in listed and "state-unreachable" in listed
    assert "host b has not answered for" in listed
    assert not await sync_to_async(lambda: Run.objects.get(pk=run_on_b.pk).is_ended)()
    socket = WebsocketCommunicator(application, f"/ws/runs/{run_on_b.pk}/", headers=ws_headers(cookie))
    connected, _ = await socket.connect(timeout=10)
    assert connected
    said = await socket.receive_output(timeout=10)
    assert said["type"] == "websocket.send" and "host b has not answered for" in said["text"]
    assert 'id="host-silence"' in said["text"]
    closed = await socket.receive_output(timeout=10)
    assert closed["type"] == "websocket.close" and closed["code"] == 4503
    assert "host b has not answered" in closed["reason"]


async def test_the_runs_list_shows_another_hosts_run_with_the_state_its_runner_reads(
    run_on_b, runner_b, operator
):
    cookie = await sync_to_async(session_cookie)(operator)
    listed = (await http("GET", "/", cookie))["body"].decode()
    row = listed.split(f'id="run-row-{run_on_b.pk}"', 1)[1].split("</tr>", 1)[0]
    assert "state-idle" in row and "unreachable" not in row
    assert 'id="host-b"' in listed


async def relayed(host_channel: str, message: dict, *, signed: bool = True) -> dict:
    layer = get_channel_layer()
    reply = await layer.new_channel()
    message = {**message, "reply": reply}
    await layer.send(host_channel, protocol.sign(message) if signed else message)
    return await asyncio.wait_for(layer.receive(reply), 20)


async def test_a_runner_refuses_a_message_for_another_host_unsigned_or_for_another_hosts_run(
    run_on_b, runner_b, operator, settings
):
    cookie = await sync_to_async(session_cookie)(operator)
    scope = {
        "method": "GET",
        "path": f"/runs/{run_on_b.pk}/",
        "query_string": "",
        "headers": [["host", HOST], ["cookie", cookie.decode()]],
    }
    ok = await relayed(
        protocol.channel("b"),
        ({"type": protocol.HTTP, "host": "b", "id": "1", "scope": scope, "body": b""}),
    )
    assert ok["status"] == 200  # the same message, properly addressed and signed, is served

    other = await relayed(
        protocol.channel("b"),
        ({"type": protocol.HTTP, "host": "a", "id": "2", "scope": scope, "body": b""}),
    )
    assert other["status"] == 421 and b"is for host 'a'" in other["body"]

    forged = {
        "type": protocol.HTTP,
        "host": "b",
        "id": "3",
        "scope": scope,
        "body": b"",
        "ts": 0.0,
        "sig": "0" * 64,
    }
    unsigned = await relayed(protocol.channel("b"), forged, signed=False)
    assert unsigned["status"] == 421 and b"signature" in unsigned["body"]

    # A run of host "local" sent to b's runner, signed and addressed to b: b never serves it.
    with identity.acting_as_runner("local"):
        mine = await sync_to_async(services.run_start)(
            provider_id="fake", repository=run_on_b.repository, branch="lab/local"
        )
    scope_local = {**scope, "path": f"/runs/{mine.pk}/"}
    wrong = await relayed(
        protocol.channel("b"),
        ({"type": protocol.HTTP, "host": "b", "id": "4", "scope": scope_local, "body": b""}),
    )
    assert wrong["status"] == 421 and b"lives on host local" in wrong["body"]


async def test_a_request_that_outlasts_its_bound_on_a_host_that_still_beats_says_so(
    run_on_b, operator, monkeypatch
):
    """No runner consumes b's channel, but b beats: the request's own bound runs out. The page
    says lab cannot tell whether it was done, not that the host is away."""
    from runs import relay

    monkeypatch.setattr(relay, "GET_TIMEOUT_S", 1.5)
    with identity.acting_as_runner("b"):
        beat = asyncio.ensure_future(heartbeat.beating("b"))
    try:
        cookie = await sync_to_async(session_cookie)(operator)
        page = await http("GET", f"/runs/{run_on_b.pk}/", cookie)
    finally:
        beat.cancel()
    body = page["body"].decode()
    assert page["status"] == 503
    assert "has not answered this request for 2 s" in body and "cannot tell whether it was done" in body
    assert "shown as unreachable" not in body
