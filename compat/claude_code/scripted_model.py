"""A scripted, offline stand-in for the Anthropic Messages API, as Claude Code uses it.

Stdlib only (no Django): tests and demos start it on loopback and point the real ``claude``
binary at it with ``ANTHROPIC_BASE_URL``.

* ``POST /v1/messages`` (``stream: true`` -> SSE, else one JSON message).
* ``POST /v1/messages/count_tokens`` -> ``{"input_tokens": N}``.
* Anything else -> ``200 {}`` (harmless), logged.

Every request is logged (method, path, parsed JSON body, classification) in memory, and
optionally appended to a JSONL file.

Replies come from a :class:`Script`:

* an ordered queue of turns consumed by *conversation* requests (side requests such as
  title generation / quota probes are answered with a trivial text and never consume it);
* rules (:func:`when`) matched against the text of the newest human prompt, so a test can send
  prompts in any order; a rule may carry several turns (e.g. ``tool_use`` then ``text``): the
  first answers the prompt, the rest answer the follow-up (tool_result) requests;
* when nothing is scripted, the default text (``"ok"``).

Turn kinds: :func:`text`, :func:`tool_use` (optionally preceded by text), :func:`slow_text`
(deltas with delays, stops when the client disconnects), :func:`dynamic` (built from the
request), and :func:`plan_turns` for ExitPlanMode (ToolSearch -> Write plan file -> ExitPlanMode).

CLI: ``python -m compat.claude_code.scripted_model --port 8787 --script demo`` (the demo script echoes).
"""

from __future__ import annotations

import argparse
import collections
import itertools
import json
import re
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

__all__ = [
    "Rule",
    "Script",
    "ScriptedModel",
    "Turn",
    "api_error",
    "ask_user_question",
    "context_full",
    "demo_script",
    "dynamic",
    "errors_then",
    "has_tool_result",
    "is_compaction_request",
    "is_conversation_request",
    "is_notification_request",
    "last_human_text",
    "plan_turns",
    "slow_text",
    "text",
    "thinking",
    "tool_use",
    "when",
    "write_plan",
]

# --------------------------------------------------------------------------------------------
# Turns and rules


@dataclass
class Turn:
    """One scripted assistant reply.

    ``blocks`` is a list of content blocks: ``{"type": "text", "text": ...}`` or
    ``{"type": "tool_use", "name": ..., "input": {...}}`` (ids are generated).
    ``delay_s`` > 0 streams text word by word with that delay between deltas.
    ``build`` (dynamic turns) is called with the request body and returns the real Turn.
    """

    blocks: list[dict[str, Any]] = field(default_factory=list)
    delay_s: float = 0.0
    build: Callable[[dict[str, Any]], Turn] | None = None
    label: str = ""
    # An HTTP error instead of a message: (status, error type, message), e.g. 529 overloaded.
    error: tuple[int, str, str] | None = None
    # The usage the reply reports: a big input_tokens makes the CLI think its context is full.
    input_tokens: int = 100

    def resolve(self, body: dict[str, Any]) -> Turn:
        if self.build is not None:
            return self.build(body).resolve(body)
        return self

    @property
    def stop_reason(self) -> str:
        return "tool_use" if any(b["type"] == "tool_use" for b in self.blocks) else "end_turn"


def text(s: str) -> Turn:
    return Turn(blocks=[{"type": "text", "text": s}], label=f"text:{s[:30]}")


def tool_use(name: str, input: dict[str, Any], text: str | None = None) -> Turn:
    blocks: list[dict[str, Any]] = []
    if text:
        blocks.append({"type": "text", "text": text})
    blocks.append({"type": "tool_use", "name": name, "input": input})
    return Turn(blocks=blocks, label=f"tool_use:{name}")


def thinking(thought: str, reply: str, signature: str = "c2NyaXB0ZWQtc2lnbmF0dXJl") -> Turn:
    """A thinking block (streamed as thinking_delta + signature_delta) followed by a text reply."""
    return Turn(
        blocks=[
            {"type": "thinking", "thinking": thought, "signature": signature},
            {"type": "text", "text": reply},
        ],
        label="thinking",
    )


def api_error(status: int = 529, kind: str = "overloaded_error", message: str = "Overloaded") -> Turn:
    """The API refuses the request with an HTTP error (the CLI retries 5xx/529 on its own)."""
    return Turn(error=(status, kind, message), label=f"error:{status}")


def context_full(reply: str, input_tokens: int = 995_000) -> Turn:
    """A reply whose usage says the context is nearly full: the CLI compacts automatically
    before the next request (2.1.328, claude-opus-5-5: a 1M window; 190,000 did not trigger it)."""
    return Turn(blocks=[{"type": "text", "text": reply}], input_tokens=input_tokens, label="context_full")


def errors_then(count: int, error: Turn, then: Turn) -> Turn:
    """`error` for the first `count` requests that reach this turn, then `then` (retries resend
    the same request, so a rule matches each of them again)."""
    seen = itertools.count()
    return dynamic(lambda _body: error if next(seen) < count else then, label=f"errors_then:{count}")


def slow_text(words: int | Iterable[str] = 12, delay_s: float = 1.0) -> Turn:
    """Stream ``words`` (a count -> ``word0 word1 ...``, or an iterable) one delta per word."""
    if isinstance(words, int):
        words = [f"word{i}" for i in range(words)]
    return Turn(
        blocks=[{"type": "text", "text": "".join(f"{w} " for w in words)}],
        delay_s=delay_s,
        label="slow_text",
    )


def dynamic(fn: Callable[[dict[str, Any]], Turn], label: str = "dynamic") -> Turn:
    """A turn built when the request arrives (``fn(request_body) -> Turn``)."""
    return Turn(build=fn, label=label)


def ask_user_question(
    question: str = "Which color do you prefer?",
    header: str = "Color",
    options: Iterable[str | tuple[str, str]] = ("Red", "Green", "Blue"),
    multi_select: bool = False,
    text: str | None = "Calling AskUserQuestion.",
    questions: list[dict[str, Any]] | None = None,
) -> Turn:
    """An AskUserQuestion tool_use; ``questions`` (raw) overrides the single-question shortcut."""
    if questions is None:
        opts = []
        for o in options:
            label, desc = (o, f"The {o.lower()} option") if isinstance(o, str) else o
            opts.append({"label": label, "description": desc})
        questions = [{"question": question, "header": header, "options": opts, "multiSelect": multi_select}]
    return tool_use("AskUserQuestion", {"questions": questions}, text=text)


_PLAN_PATH_RE = re.compile(r"(/[^\s\"'`]*?/\.claude/plans/[A-Za-z0-9_.-]+\.md)")


def find_plan_path(body: dict[str, Any]) -> str | None:
    """The plan file path the CLI announces in plan mode (system prompt or a reminder)."""
    blob = json.dumps(body.get("system", "")) + json.dumps(body.get("messages", []))
    m = _PLAN_PATH_RE.findall(blob.replace("\\n", "\n"))
    return m[-1] if m else None


def write_plan(plan_text: str) -> Turn:
    """Write the plan file at the path the CLI announced (falls back to ~/.claude/plans/plan.md)."""

    def build(body: dict[str, Any]) -> Turn:
        path = find_plan_path(body) or "/tmp/lab-plan.md"
        return tool_use("Write", {"file_path": path, "content": plan_text}, text="Writing the plan.")

    return dynamic(build, label="write_plan")


def plan_turns(plan_text: str, *, write_file: bool = True, after: str = "Plan approved; done.") -> list[Turn]:
    """ExitPlanMode is deferred: ToolSearch ``select:ExitPlanMode`` first, then ExitPlanMode.

    With ``write_file`` the plan is written to the announced plan file first (the CLI reads
    the plan text from that file and injects ``plan``/``planFilePath`` into the tool input).
    ``after`` answers the request that carries the approval/rejection tool_result.
    """
    turns = [tool_use("ToolSearch", {"query": "select:ExitPlanMode", "max_results": 1})]
    if write_file:
        turns.append(write_plan(plan_text))
    turns.append(tool_use("ExitPlanMode", {}, text="Here is my plan."))
    if after:
        turns.append(text(after))
    return turns


@dataclass
class Rule:
    pattern: str | re.Pattern[str]
    turns: list[Turn]
    once: bool = False
    used: int = 0

    def matches(self, prompt: str) -> bool:
        if self.once and self.used:
            return False
        if isinstance(self.pattern, re.Pattern):
            return bool(self.pattern.search(prompt))
        return self.pattern in prompt


def when(pattern: str | re.Pattern[str], *turns: Turn | list[Turn], once: bool = False) -> Rule:
    flat: list[Turn] = []
    for t in turns:
        flat.extend(t if isinstance(t, list) else [t])
    return Rule(pattern=pattern, turns=flat, once=once)


# --------------------------------------------------------------------------------------------
# Request classification

COMPACTION_ASK = "an <analysis> block followed by a <summary> block"
_REMINDER_RE = re.compile(r"<system-reminder>.*?</system-reminder>", re.S)


def _user_texts(msg: dict[str, Any]) -> list[str]:
    content = msg.get("content")
    if isinstance(content, str):
        return [content]
    out = []
    for block in content or []:
        if isinstance(block, dict) and block.get("type") == "text":
            out.append(block.get("text", ""))
    return out


def last_user_message(body: dict[str, Any]) -> dict[str, Any] | None:
    for msg in reversed(body.get("messages") or []):
        if msg.get("role") == "user":
            return msg
    return None


def last_human_text(body: dict[str, Any]) -> str:
    """Text of the newest user message, minus system reminders ("" if it is only tool_results)."""
    msg = last_user_message(body)
    if msg is None:
        return ""
    parts = [_REMINDER_RE.sub("", t).strip() for t in _user_texts(msg)]
    return "\n".join(p for p in parts if p)


def has_tool_result(body: dict[str, Any]) -> bool:
    msg = last_user_message(body)
    content = (msg or {}).get("content")
    return isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") == "tool_result" for b in content
    )


def _raw_texts(msg: dict[str, Any] | None) -> str:
    return "\n".join(_user_texts(msg)) if msg else ""


def is_compaction_request(body: dict[str, Any]) -> bool:
    """/compact (or auto-compaction) asks for a summary in the last user message (2.1.328)."""
    return COMPACTION_ASK in _raw_texts(last_user_message(body))


def is_notification_request(body: dict[str, Any]) -> bool:
    """A background agent finished: the CLI sends its <task-notification> (inside a
    system-reminder, so rules on the human text never see it)."""
    return "<task-notification>" in _raw_texts(last_user_message(body))


def agent_marker(body: dict[str, Any], markers: Iterable[str]) -> str | None:
    """The marker a subagent's request carries in its first user message (its task prompt)."""
    messages = body.get("messages") or []
    first = _raw_texts(messages[0]) if messages else ""
    return next((m for m in markers if m in first), None)


def tool_result_count(body: dict[str, Any]) -> int:
    return sum(
        1
        for msg in body.get("messages") or []
        if msg.get("role") == "user" and isinstance(msg.get("content"), list)
        for b in msg["content"]
        if isinstance(b, dict) and b.get("type") == "tool_result"
    )


def is_conversation_request(body: dict[str, Any]) -> bool:
    """A real main-loop turn (vs. a side request: title, quota probe, summaries...).

    Empirically (2.1.328) main-loop requests offer the tool list (Bash, AskUserQuestion, ...);
    side requests offer no tools (or few) and use a small ``max_tokens``.
    """
    tools = body.get("tools") or []
    names = {t.get("name") for t in tools if isinstance(t, dict)}
    return bool(names & {"Bash", "AskUserQuestion", "ToolSearch", "Read", "Write"})


# --------------------------------------------------------------------------------------------
# Script


class Script:
    """Ordered turns + prompt-matched rules + default text. Thread-safe.

    ``Script(text("a"), tool_use(...), when("ASK1", ...), default="ok")``: positional Turns
    (or lists of Turns) go to the ordered queue, Rules to the rule list.
    ``reply`` (callable) overrides the default text per request (the demo echoes).
    """

    def __init__(
        self,
        *items: Turn | Rule | list[Turn],
        default: str = "ok",
        reply: Callable[[dict[str, Any]], Turn] | None = None,
        agents: dict[str, list[Turn]] | None = None,
        on_notification: Turn | None = None,
    ) -> None:
        self._lock = threading.Lock()
        self.queue: collections.deque[Turn] = collections.deque()
        self.rules: list[Rule] = []
        self.continuation: collections.deque[Turn] = collections.deque()
        self.default = default
        self.reply = reply
        # A subagent's requests (its first user message holds the marker) take its own turns,
        # one per tool_result it has so far, so they never touch the main conversation's queue.
        self.agents = dict(agents or {})
        self.on_notification = on_notification
        for item in items:
            self.add(item)

    def add(self, *items: Turn | Rule | list[Turn]) -> Script:
        with self._lock:
            for item in items:
                if isinstance(item, Rule):
                    self.rules.append(item)
                elif isinstance(item, list):
                    self.queue.extend(item)
                else:
                    self.queue.append(item)
        return self

    def next_turn(self, body: dict[str, Any]) -> Turn:
        marker = agent_marker(body, self.agents)
        if marker is not None:
            turns = self.agents[marker]
            return turns[min(tool_result_count(body), len(turns) - 1)]
        if self.on_notification is not None and is_notification_request(body):
            return self.on_notification
        prompt = last_human_text(body)
        with self._lock:
            if prompt:
                # a new human prompt (possibly merged after a declined tool_result)
                for rule in self.rules:
                    if rule.matches(prompt):
                        rule.used += 1
                        self.continuation = collections.deque(rule.turns[1:])
                        return rule.turns[0] if rule.turns else text(self.default)
                if not has_tool_result(body):
                    self.continuation.clear()
            if self.continuation and has_tool_result(body):
                return self.continuation.popleft()
            if self.queue:
                return self.queue.popleft()
        if self.reply is not None:
            return self.reply(body)
        return text(self.default)


def demo_script() -> Script:
    def echo(body: dict[str, Any]) -> Turn:
        said = last_human_text(body)
        if not said and has_tool_result(body):
            return text("Thanks, noted.")
        return text(f"You said: {said}")

    return Script(
        when("ASK", ask_user_question()),
        when("PLAN", plan_turns("# Plan\n\n1. Say hello\n2. Say goodbye\n")),
        when("SLOW", slow_text(20, 1.0)),
        reply=echo,
    )


SCRIPTS: dict[str, Callable[[], Script]] = {"demo": demo_script, "ok": Script}


# --------------------------------------------------------------------------------------------
# HTTP server


def _sse(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


def _chunks(s: str, n: int) -> list[str]:
    """Split s into about n pieces on word boundaries (at least 1)."""
    words = re.findall(r"\S+\s*|\s+", s) or [s]
    size = max(1, -(-len(words) // n))
    return ["".join(words[i : i + size]) for i in range(0, len(words), size)]


def _fill_schema(schema: dict[str, Any]) -> Any:
    """A minimal value satisfying a (simple) JSON schema."""
    t = schema.get("type")
    if "enum" in schema:
        return schema["enum"][0]
    if t == "object":
        props = schema.get("properties", {})
        return {k: _fill_schema(v) for k, v in props.items()}
    if t == "array":
        return []
    if t in ("integer", "number"):
        return 0
    if t == "boolean":
        return False
    return "scripted-name"


def _side_reply(body: dict[str, Any], default: str) -> str:
    """Side requests asking for structured output (e.g. the session-name generator) get JSON."""
    fmt = (body.get("output_config") or {}).get("format") or {}
    if fmt.get("type") == "json_schema" and isinstance(fmt.get("schema"), dict):
        return json.dumps(_fill_schema(fmt["schema"]))
    return default


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        if self.server.model.verbose:
            sys.stderr.write("scripted_model: " + (format % args) + "\n")

    # -- plumbing
    def _read_body(self) -> tuple[bytes, Any]:
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        try:
            return raw, json.loads(raw) if raw else None
        except ValueError:
            return raw, None

    def _json(self, obj: Any, status: int = 200) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("request-id", "req_" + uuid.uuid4().hex[:24])
        self.end_headers()
        self.wfile.write(data)

    def _handle(self) -> None:
        _raw, body = self._read_body()
        entry = self.server.model._log(self.command, self.path, body, dict(self.headers))
        try:
            self._route(body, entry)
        finally:
            self.server.model._write_log(entry)

    def _route(self, body: Any, entry: dict[str, Any]) -> None:
        path = urlsplit(self.path).path
        if self.command == "POST" and path.endswith("/v1/messages/count_tokens"):
            entry["kind"] = "count_tokens"
            self._json({"input_tokens": 42})
            return
        if self.command == "POST" and path.endswith("/v1/messages") and isinstance(body, dict):
            self._messages(body, entry)
            return
        entry["kind"] = "other"
        self._json({})

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle

    def do_HEAD(self) -> None:
        self.server.model._write_log(self.server.model._log("HEAD", self.path, None, dict(self.headers)))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    # -- /v1/messages
    def _messages(self, body: dict[str, Any], entry: dict[str, Any]) -> None:
        model = self.server.model
        if is_compaction_request(body):
            entry["kind"] = "compaction"
            turn = text(
                f"<analysis>Scripted analysis.</analysis>\n<summary>{model.compact_summary}</summary>"
            )
        elif is_conversation_request(body):
            entry["kind"] = "turn"
            turn = model.script.next_turn(body).resolve(body)
        else:
            entry["kind"] = "side"
            turn = text(_side_reply(body, model.side_text))
        entry["reply"] = turn.label
        if turn.error is not None:
            status, kind, message = turn.error
            entry["error_status"] = status
            self._json({"type": "error", "error": {"type": kind, "message": message}}, status=status)
            return
        msg_id = "msg_" + uuid.uuid4().hex[:24]
        blocks = []
        for b in turn.blocks:
            b = dict(b)
            if b["type"] == "tool_use":
                b["id"] = "toolu_" + uuid.uuid4().hex[:24]
            blocks.append(b)
        entry["reply_blocks"] = blocks
        usage = {
            "input_tokens": turn.input_tokens,
            "output_tokens": 10,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
        }
        if not body.get("stream"):
            self._json(
                {
                    "id": msg_id,
                    "type": "message",
                    "role": "assistant",
                    "model": body.get("model", "claude-scripted"),
                    "content": blocks,
                    "stop_reason": turn.stop_reason,
                    "stop_sequence": None,
                    "usage": usage,
                }
            )
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.send_header("request-id", "req_" + uuid.uuid4().hex[:24])
        self.end_headers()
        self.close_connection = True
        w = self.wfile
        try:
            w.write(
                _sse(
                    "message_start",
                    {
                        "type": "message_start",
                        "message": {
                            "id": msg_id,
                            "type": "message",
                            "role": "assistant",
                            "model": body.get("model", "claude-scripted"),
                            "content": [],
                            "stop_reason": None,
                            "stop_sequence": None,
                            "usage": {**usage, "output_tokens": 1},
                        },
                    },
                )
            )
            w.flush()
            for i, b in enumerate(blocks):
                if b["type"] == "text":
                    start = {"type": "text", "text": ""}
                    pieces = re.findall(r"\S+\s*", b["text"]) if turn.delay_s else _chunks(b["text"], 3)
                    deltas = [{"type": "text_delta", "text": p} for p in pieces]
                elif b["type"] == "thinking":
                    start = {"type": "thinking", "thinking": "", "signature": ""}
                    deltas = [{"type": "thinking_delta", "thinking": p} for p in _chunks(b["thinking"], 3)]
                    deltas.append({"type": "signature_delta", "signature": b["signature"]})
                else:
                    start = {"type": "tool_use", "id": b["id"], "name": b["name"], "input": {}}
                    js = json.dumps(b["input"])
                    half = len(js) // 2
                    deltas = [
                        {"type": "input_json_delta", "partial_json": p} for p in (js[:half], js[half:]) if p
                    ] or [{"type": "input_json_delta", "partial_json": ""}]
                w.write(
                    _sse(
                        "content_block_start",
                        {"type": "content_block_start", "index": i, "content_block": start},
                    )
                )
                for d in deltas:
                    if turn.delay_s and model._stopping.wait(turn.delay_s):
                        raise ConnectionAbortedError("server stopping")
                    w.write(
                        _sse(
                            "content_block_delta",
                            {"type": "content_block_delta", "index": i, "delta": d},
                        )
                    )
                    w.flush()
                    model._bump(entry, "deltas_sent")
                w.write(_sse("content_block_stop", {"type": "content_block_stop", "index": i}))
            w.write(
                _sse(
                    "message_delta",
                    {
                        "type": "message_delta",
                        "delta": {"stop_reason": turn.stop_reason, "stop_sequence": None},
                        "usage": {"output_tokens": 10},
                    },
                )
            )
            w.write(_sse("message_stop", {"type": "message_stop"}))
            w.flush()
            entry["completed"] = True
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            entry["client_disconnected"] = True
            model._note_event("client_disconnected", entry["n"])


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    model: ScriptedModel


class ScriptedModel:
    """``ScriptedModel(script).start()`` -> ``.url``, ``.port``, ``.requests``, ``.stop()``."""

    def __init__(
        self,
        script: Script | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        log_path: str | None = None,
        side_text: str = "Scripted side reply",
        compact_summary: str = "The user greeted the assistant and it answered.",
        verbose: bool = False,
    ) -> None:
        self.script = script if script is not None else Script()
        self.host, self._port = host, port
        self.log_path = log_path
        self.side_text = side_text
        self.compact_summary = compact_summary
        self.verbose = verbose
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._requests: list[dict[str, Any]] = []
        self._counter = itertools.count(1)
        self._stopping = threading.Event()
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle
    def start(self) -> ScriptedModel:
        httpd = _Server((self.host, self._port), _Handler)
        httpd.model = self
        self._httpd = httpd
        self._thread = threading.Thread(target=httpd.serve_forever, name="scripted-model", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> ScriptedModel:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._httpd is not None, "not started"
        return self._httpd.server_address[1]

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    # -- log
    def _log(self, method: str, path: str, body: Any, headers: dict[str, str]) -> dict[str, Any]:
        entry = {
            "n": next(self._counter),
            "ts": time.time(),
            "method": method,
            "path": path,
            "body": body,
            "headers": {
                k.lower(): v
                for k, v in headers.items()
                if k.lower().startswith(("anthropic", "user-agent", "x-"))
            },
            "kind": "?",
        }
        with self._cond:
            self._requests.append(entry)
            self._cond.notify_all()
        return entry

    def _write_log(self, entry: dict[str, Any]) -> None:
        """Append the finished entry (with its kind/reply) to the JSONL log, if any."""
        if self.log_path:
            with self._lock, open(self.log_path, "a") as f:
                f.write(json.dumps(entry) + "\n")

    def _bump(self, entry: dict[str, Any], key: str) -> None:
        with self._cond:
            entry[key] = entry.get(key, 0) + 1
            self._cond.notify_all()

    def wait_streaming(self, min_deltas: int = 3, timeout: float = 30.0) -> dict[str, Any]:
        """Wait until some turn response has streamed ``min_deltas`` deltas (and is not done)."""
        return self.wait_for_request(
            lambda r: r.get("kind") == "turn" and r.get("deltas_sent", 0) >= min_deltas, timeout
        )

    def _note_event(self, name: str, n: int) -> None:
        with self._cond:
            self._requests.append(
                {"n": next(self._counter), "ts": time.time(), "event": name, "of": n, "kind": "event"}
            )
            self._cond.notify_all()

    @property
    def requests(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self._requests)

    def turn_requests(self) -> list[dict[str, Any]]:
        return [r for r in self.requests if r.get("kind") == "turn"]

    def wait_for_request(
        self, pred: Callable[[dict[str, Any]], bool], timeout: float = 30.0
    ) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for r in self._requests:
                    if pred(r):
                        return r
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError("no matching request")
                self._cond.wait(left)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m compat.claude_code.scripted_model")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8787)
    p.add_argument("--script", default="demo", choices=sorted(SCRIPTS))
    p.add_argument("--log", default=None, help="append every request as JSONL to this file")
    p.add_argument("-v", "--verbose", action="store_true")
    a = p.parse_args(argv)
    m = ScriptedModel(
        SCRIPTS[a.script](), host=a.host, port=a.port, log_path=a.log, verbose=a.verbose
    ).start()
    print(f"scripted model ({a.script}) on {m.url}  — ANTHROPIC_BASE_URL={m.url}", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        m.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
