"""The Codex scripted model on its own (no TUI): Responses API wire format, classification,
rules and continuation, slow streams, request log."""

from __future__ import annotations

import http.client
import json
import socket
import time
from typing import Any

import pytest

from compat.codex.scripted_model import (
    TITLE_ASK,
    Script,
    ScriptedModel,
    demo_script,
    exec_command,
    last_human_text,
    request_user_input,
    slow_text,
    text,
    when,
)

TOOLS = [{"type": "function", "name": "exec_command"}, {"type": "function", "name": "request_user_input"}]
ENV = {
    "type": "message",
    "role": "user",
    "content": [{"type": "input_text", "text": "<environment_context>x"}],
}


def user(s: str) -> dict:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": s}]}


def body(*items: Any, stream: bool = True, tools: list | None = TOOLS) -> dict:
    return {"model": "gpt-scripted", "input": [ENV, *items], "tools": tools or [], "stream": stream}


def post(m: ScriptedModel, payload: dict, path: str = "/v1/responses") -> tuple[int, str, str]:
    c = http.client.HTTPConnection("127.0.0.1", m.port, timeout=10)
    c.request(
        "POST", path, json.dumps(payload), {"Content-Type": "application/json", "Authorization": "Bearer k"}
    )
    r = c.getresponse()
    data = r.read().decode()
    c.close()
    return r.status, r.getheader("Content-Type") or "", data


def sse(data: str) -> list[dict]:
    events = []
    name = None
    for line in data.splitlines():
        if line.startswith("event: "):
            name = line[7:]
        elif line.startswith("data: "):
            e = json.loads(line[6:])
            assert e["type"] == name, "every data line is named by its event line"
            events.append(e)
    return events


@pytest.fixture
def model():
    m = ScriptedModel(Script()).start()
    yield m
    m.stop()


def test_text_reply_streams_the_responses_event_sequence(model):
    model.script.add(when("T1", text("hello there friend")))
    status, ctype, data = post(model, body(user("say T1")))
    assert status == 200 and ctype == "text/event-stream"
    ev = sse(data)
    types = [e["type"] for e in ev]
    assert types[0] == "response.created" and types[-1] == "response.completed"
    assert types[1:4] == [
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
    ]
    assert types[-4:-1] == [
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
    ]
    assert (
        "".join(e["delta"] for e in ev if e["type"] == "response.output_text.delta") == "hello there friend"
    )
    done = next(e for e in ev if e["type"] == "response.output_item.done")["item"]
    assert done["role"] == "assistant" and done["content"][0]["text"] == "hello there friend"
    usage = ev[-1]["response"]["usage"]
    assert usage["input_tokens"] + usage["output_tokens"] == usage["total_tokens"]
    assert [e["sequence_number"] for e in ev] == list(range(len(ev)))


def test_escalated_exec_command_then_continuation_on_its_output(model):
    model.script.add(
        when("RUN1", exec_command("touch x", escalated=True, justification="why"), text("after"))
    )
    ev = sse(post(model, body(user("please RUN1")))[2])
    call = next(e for e in ev if e["type"] == "response.output_item.done")["item"]
    assert call["type"] == "function_call" and call["name"] == "exec_command"
    args = json.loads(call["arguments"])
    assert args == {"cmd": "touch x", "sandbox_permissions": "require_escalated", "justification": "why"}
    deltas = "".join(e["delta"] for e in ev if e["type"] == "response.function_call_arguments.delta")
    assert deltas == call["arguments"]
    follow = body(
        user("please RUN1"),
        call,
        {"type": "function_call_output", "call_id": call["call_id"], "output": "ok"},
    )
    ev2 = sse(post(model, follow)[2])
    assert ev2[-2]["item"]["content"][0]["text"] == "after"
    assert model.wait_function_output(call["call_id"])["output"] == "ok"


def test_plain_exec_command_has_no_escalation():
    turn = exec_command("ls")
    assert turn.items[-1]["arguments"] == {"cmd": "ls"}


def test_title_request_is_a_side_request_and_never_eats_the_queue(model):
    model.script.add(text("first"), text("second"))
    title = {
        "model": "m",
        "input": [user(f"{TITLE_ASK} for this.\n\nUser prompt:\nhi")],
        "tools": [],
        "stream": True,
    }
    ev = sse(post(model, title)[2])
    assert ev[-2]["item"]["content"][0]["text"] == model.side_text
    assert sse(post(model, body(user("hi")))[2])[-2]["item"]["content"][0]["text"] == "first"
    assert [r["kind"] for r in model.requests] == ["side", "turn"]


def test_rules_match_the_newest_human_prompt_not_synthetic_messages(model):
    model.script.add(when("environment_context", text("wrong")), when("TOK2", text("right")))
    aborted = user("<turn_aborted>\nThe user interrupted TOK2")
    assert last_human_text(body(user("first TOK2"), aborted)) == "first TOK2"
    ev = sse(post(model, body(user("hello")))[2])
    assert ev[-2]["item"]["content"][0]["text"] == "ok", "the default; synthetic text never matches"
    ev = sse(post(model, body(user("now TOK2")))[2])
    assert ev[-2]["item"]["content"][0]["text"] == "right"


def test_queue_then_default_then_reply_callable():
    s = Script(text("q1"), default="dflt")
    assert s.next_turn(body(user("a"))).items[0]["text"] == "q1"
    assert s.next_turn(body(user("b"))).items[0]["text"] == "dflt"
    s2 = Script(reply=lambda b: text("echo " + last_human_text(b)))
    assert s2.next_turn(body(user("zz"))).items[0]["text"] == "echo zz"


def test_request_user_input_arguments():
    turn = request_user_input("Q?", "H", ["A", ("B", "bee")])
    args = turn.items[-1]["arguments"]
    assert args["questions"][0]["options"] == [
        {"label": "A", "description": "The a option"},
        {"label": "B", "description": "bee"},
    ]


def test_slow_stream_sends_one_delta_per_word_and_stops_when_the_client_hangs_up(model):
    model.script.add(when("SLOW3", slow_text(50, 0.2)))
    s = socket.create_connection(("127.0.0.1", model.port))
    payload = json.dumps(body(user("SLOW3"))).encode()
    s.sendall(
        b"POST /v1/responses HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        + f"Content-Length: {len(payload)}\r\n\r\n".encode()
        + payload
    )
    entry = model.wait_streaming(min_deltas=3, timeout=10)
    s.close()
    model.wait_for_request(lambda r: r.get("event") == "client_disconnected", timeout=10)
    assert not entry.get("completed") and entry["deltas_sent"] < 50


def test_non_streaming_request_gets_one_response_object(model):
    model.script.add(when("NS", text("plain")))
    status, ctype, data = post(model, body(user("NS"), stream=False))
    obj = json.loads(data)
    assert status == 200 and ctype == "application/json"
    assert obj["status"] == "completed" and obj["output"][0]["content"][0]["text"] == "plain"


def test_other_paths_answer_empty_and_are_logged(model):
    status, _, data = post(model, {}, path="/v1/models")
    assert status == 200 and json.loads(data) == {}
    assert model.requests[-1]["kind"] == "other"


def test_every_request_is_logged_with_headers_and_to_a_file(tmp_path):
    log = tmp_path / "req.jsonl"
    with ScriptedModel(Script(), log_path=str(log)) as m:
        post(m, body(user("x")))
        deadline = time.monotonic() + 5
        while not log.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
    entry = json.loads(log.read_text().splitlines()[0])
    assert entry["kind"] == "turn" and entry["headers"]["authorization"] == "Bearer k"
    assert entry["body"]["input"][-1]["content"][0]["text"] == "x"


def test_url_is_a_provider_base_url(model):
    assert model.url == f"http://127.0.0.1:{model.port}/v1"


def test_demo_script_echoes():
    s = demo_script()
    assert s.next_turn(body(user("hi there"))).items[0]["text"] == "You said: hi there"
