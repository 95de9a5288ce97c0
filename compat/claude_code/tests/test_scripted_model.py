"""The scripted model server on its own (no TUI): wire format, classification, scripts."""

from __future__ import annotations

import http.client
import json
import socket
import time
from typing import Any

import pytest

from compat.claude_code.scripted_model import (
    Script,
    ScriptedModel,
    ask_user_question,
    demo_script,
    plan_turns,
    slow_text,
    text,
    tool_use,
    when,
)

TOOLS = [{"name": "Bash", "input_schema": {}}, {"name": "AskUserQuestion", "input_schema": {}}]


def body(prompt: Any, *, stream: bool = True, tools: list | None = TOOLS, **kw: Any) -> dict:
    content = prompt if isinstance(prompt, (str, list)) else str(prompt)
    b = {
        "model": "claude-opus-5-5",
        "max_tokens": 128000,
        "stream": stream,
        "messages": [{"role": "user", "content": content}],
        **kw,
    }
    if tools is not None:
        b["tools"] = tools
    return b


def post(m: ScriptedModel, path: str, payload: dict) -> tuple[int, str, str]:
    c = http.client.HTTPConnection("127.0.0.1", m.port, timeout=10)
    c.request("POST", path, json.dumps(payload), {"Content-Type": "application/json"})
    r = c.getresponse()
    data = r.read().decode()
    c.close()
    return r.status, r.getheader("Content-Type") or "", data


def sse_events(data: str) -> list[dict]:
    return [json.loads(line[6:]) for line in data.splitlines() if line.startswith("data: ")]


def reply_of(events: list[dict]) -> list[dict]:
    """Reassemble content blocks from SSE events."""
    blocks: list[dict] = []
    partial: dict[int, str] = {}
    for e in events:
        if e["type"] == "content_block_start":
            blocks.append(dict(e["content_block"]))
        elif e["type"] == "content_block_delta":
            d = e["delta"]
            if d["type"] == "text_delta":
                blocks[e["index"]]["text"] += d["text"]
            else:
                partial[e["index"]] = partial.get(e["index"], "") + d["partial_json"]
        elif e["type"] == "content_block_stop" and e["index"] in partial:
            blocks[e["index"]]["input"] = json.loads(partial[e["index"]])
    return blocks


@pytest.fixture
def model():
    m = ScriptedModel(Script()).start()
    yield m
    m.stop()


def test_stream_text_event_sequence(model):
    model.script.add(text("Hello there, friend."))
    status, ctype, data = post(model, "/v1/messages?beta=true", body("hi"))
    assert status == 200 and ctype.startswith("text/event-stream")
    ev = sse_events(data)
    types = [e["type"] for e in ev]
    assert types[0] == "message_start" and types[-2:] == ["message_delta", "message_stop"]
    assert ev[-2]["delta"]["stop_reason"] == "end_turn"
    assert reply_of(ev) == [{"type": "text", "text": "Hello there, friend."}]


def test_stream_tool_use_with_text(model):
    model.script.add(tool_use("Bash", {"command": "ls"}, text="Running."))
    _, _, data = post(model, "/v1/messages", body("hi"))
    ev = sse_events(data)
    blocks = reply_of(ev)
    assert blocks[0] == {"type": "text", "text": "Running."}
    assert blocks[1]["name"] == "Bash" and blocks[1]["input"] == {"command": "ls"}
    assert blocks[1]["id"].startswith("toolu_")
    assert ev[-2]["delta"]["stop_reason"] == "tool_use"


def test_non_streaming_and_count_tokens_and_other(model):
    model.script.add(text("plain"))
    _, _, data = post(model, "/v1/messages", body("hi", stream=False))
    msg = json.loads(data)
    assert msg["content"] == [{"type": "text", "text": "plain"}] and msg["stop_reason"] == "end_turn"
    _, _, data = post(model, "/v1/messages/count_tokens", body("hi"))
    assert json.loads(data)["input_tokens"] > 0
    _, _, data = post(model, "/api/whatever", {"x": 1})
    assert json.loads(data) == {}
    assert [r["kind"] for r in model.requests] == ["turn", "count_tokens", "other"]


def test_side_requests_do_not_consume_the_script(model):
    model.script.add(text("the real reply"))
    schema = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
    side = body(
        "<conversation>x</conversation>",
        tools=None,
        output_config={"format": {"type": "json_schema", "schema": schema}},
    )
    _, _, data = post(model, "/v1/messages", side)
    assert json.loads(reply_of(sse_events(data))[0]["text"]) == {"name": "scripted-name"}
    _, _, data = post(model, "/v1/messages", body("hi"))
    assert reply_of(sse_events(data))[0]["text"] == "the real reply"
    _, _, data = post(model, "/v1/messages", body("again"))
    assert reply_of(sse_events(data))[0]["text"] == "ok"  # default when empty
    assert [r["kind"] for r in model.requests] == ["side", "turn", "turn"]


def test_rules_match_last_prompt_and_continue_after_tool_result(model):
    model.script.add(
        when("ASK1", ask_user_question(), text("Thanks for answering.")),
        when("HELLO", text("hi back")),
    )
    _, _, data = post(
        model, "/v1/messages", body("<system-reminder>ASK1 HELLO</system-reminder>HELLO please")
    )
    assert reply_of(sse_events(data))[0]["text"] == "hi back"
    _, _, data = post(model, "/v1/messages", body("ASK1 now"))
    assert reply_of(sse_events(data))[1]["name"] == "AskUserQuestion"
    tr = [{"type": "tool_result", "tool_use_id": "toolu_x", "content": "answered"}]
    _, _, data = post(model, "/v1/messages", body(tr))
    assert reply_of(sse_events(data))[0]["text"] == "Thanks for answering."


def test_plan_turns_sequence_and_plan_path(model):
    model.script.add(when("PLAN", plan_turns("# Plan\n1. x\n")))
    sysprompt = "Plan mode: create your plan at /h/.claude/plans/some-slug.md using the Write tool"
    b = body("PLAN it", system=[{"type": "text", "text": sysprompt}])
    names = []
    for i in range(4):
        if i:
            b = body(
                [{"type": "tool_result", "tool_use_id": "t", "content": "ok"}],
                system=[{"type": "text", "text": sysprompt}],
            )
        blocks = reply_of(sse_events(post(model, "/v1/messages", b)[2]))
        names.append(next((x.get("name") for x in blocks if x["type"] == "tool_use"), "text"))
        if names[-1] == "Write":
            assert blocks[-1]["input"]["file_path"] == "/h/.claude/plans/some-slug.md"
    assert names == ["ToolSearch", "Write", "ExitPlanMode", "text"]


def test_slow_text_stops_when_client_disconnects(model):
    model.script.add(slow_text(50, 0.05))
    s = socket.create_connection(("127.0.0.1", model.port))
    payload = json.dumps(body("slow")).encode()
    s.sendall(
        b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        + f"Content-Length: {len(payload)}\r\n\r\n".encode()
        + payload
    )
    model.wait_streaming(3, timeout=10)
    s.close()
    model.wait_for_request(lambda r: r.get("event") == "client_disconnected", timeout=10)
    turn = model.turn_requests()[0]
    assert not turn.get("completed") and turn["deltas_sent"] < 50


def test_demo_echoes():
    m = ScriptedModel(demo_script()).start()
    try:
        _, _, data = post(m, "/v1/messages", body("how are you"))
        assert reply_of(sse_events(data))[0]["text"] == "You said: how are you"
    finally:
        m.stop()


def test_jsonl_log(tmp_path):
    log = tmp_path / "req.jsonl"
    m = ScriptedModel(Script(), log_path=str(log)).start()
    try:
        post(m, "/v1/messages", body("hi"))
        deadline = time.monotonic() + 5
        while not log.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        entry = json.loads(log.read_text().splitlines()[0])
        assert entry["kind"] == "turn" and entry["body"]["messages"][0]["content"] == "hi"
    finally:
        m.stop()
