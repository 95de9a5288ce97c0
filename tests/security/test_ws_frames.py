"""Frames a page never sends — text that is not JSON, a binary frame, a hello whose seq is
not a whole number — close the socket with a close code and one log line, never "Exception
inside application" and a traceback. A well-formed hello still works after all of them."""

from __future__ import annotations

import logging

import pytest
from asgiref.sync import sync_to_async

from live.consumers import CLOSE_INVALID_PAYLOAD, CLOSE_UNSUPPORTED_DATA
from runs import services
from tests.security.support import drain, session_cookie, ws_open


@pytest.fixture
def run(fake_provider, git_repo, db):
    return services.run_start(provider_id="fake", repository=git_repo, branch="lab/frames")


BAD_FRAMES = [
    ("hello???", {"text_data": "hello???"}, CLOSE_INVALID_PAYLOAD),
    ("seq 1e309", {"text_data": '{"type":"hello","seq":1e309}'}, CLOSE_INVALID_PAYLOAD),
    ("seq 1.5", {"text_data": '{"type":"hello","seq":1.5,"epoch":""}'}, CLOSE_INVALID_PAYLOAD),
    ("seq true", {"text_data": '{"type":"hello","seq":true,"epoch":""}'}, CLOSE_INVALID_PAYLOAD),
    ("seq a string", {"text_data": '{"type":"hello","seq":"3","epoch":""}'}, CLOSE_INVALID_PAYLOAD),
    ("epoch a list", {"text_data": '{"type":"hello","seq":1,"epoch":[]}'}, CLOSE_INVALID_PAYLOAD),
    ("a JSON list", {"text_data": "[1, 2]"}, CLOSE_INVALID_PAYLOAD),
    ("binary", {"bytes_data": b"\x00\x01hello"}, CLOSE_UNSUPPORTED_DATA),
]


# lab's page-wide socket reads no hello, so only the frames that are no JSON object at all
# apply to it; a run's socket gets them all.
CASES = [("run", *f) for f in BAD_FRAMES] + [
    ("lab", *f) for f in BAD_FRAMES if not f[1].get("text_data", "").startswith("{")
]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(("path", "what", "frame", "code"), CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES])
async def test_a_malformed_frame_closes_with_a_code_and_one_log_line(
    run, operator, caplog, path, what, frame, code
):
    cookie = await sync_to_async(session_cookie)(operator)
    ws = await ws_open(f"/ws/runs/{run.pk}/" if path == "run" else "/ws/lab/", cookie)
    with caplog.at_level(logging.INFO):
        await ws.send_to(**frame)
        out = await ws.receive_output(timeout=5)
    assert out == {"type": "websocket.close", "code": code}
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and warnings[0].exc_info is None, [r.getMessage() for r in warnings]
    assert "\n" not in warnings[0].getMessage()
    await ws.disconnect()


@pytest.mark.django_db(transaction=True)
async def test_a_well_formed_hello_still_catches_up(run, operator):
    cookie = await sync_to_async(session_cookie)(operator)
    ws = await ws_open(f"/ws/runs/{run.pk}/", cookie)
    await ws.send_json_to({"type": "hello", "epoch": "", "seq": -1})
    frames = await drain(ws)
    assert any('id="cursor"' in f for f in frames), frames
    await ws.disconnect()


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("path", ["/ws/nope/", "/ws/runs/x/", "/", "/ws/runs/1/extra/"])
async def test_a_socket_path_lab_does_not_serve_is_refused_with_4404_and_no_traceback(operator, caplog, path):
    from channels.testing import WebsocketCommunicator

    from lab.asgi import application
    from tests.security.support import ws_headers

    cookie = await sync_to_async(session_cookie)(operator)
    with caplog.at_level(logging.INFO):
        communicator = WebsocketCommunicator(application, path, headers=ws_headers(cookie))
        connected, code = await communicator.connect()
    assert (connected, code) == (False, 4404)
    assert not [r for r in caplog.records if r.exc_info]
