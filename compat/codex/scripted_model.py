"""A scripted, offline stand-in for the OpenAI Responses API, as the Codex CLI uses it.

Stdlib only (no Django): tests and demos start it on loopback and point the real ``codex``
binary at it through a custom ``[model_providers.<id>]`` entry (``wire_api = "responses"``,
see :mod:`compat.codex.home`).

* ``POST /v1/responses`` (``stream: true`` -> SSE, else one JSON response object).
* Anything else -> ``200 {}`` (harmless), logged.

Every request is logged (method, path, parsed JSON body, headers, classification) in memory and
optionally appended to a JSONL file, so a test can assert what the CLI sent (for example the
``function_call_output`` that follows an approval).

Replies come from a :class:`Script`:

* an ordered queue of turns consumed by *conversation* requests; side requests (the TUI's
  thread-title generation on a thread's first turn) get a short text and never consume it;
* rules (:func:`when`) matched by substring against the newest human prompt, first added first;
  a rule may carry several turns: the first answers the prompt, the rest answer the follow-up
  requests that carry the ``function_call_output`` of the call before;
* when nothing is scripted, the default text (``"ok"``) or ``reply(body)``.

Turn kinds: :func:`text`, :func:`exec_command` (plain, or escalated with a justification, which
makes Codex ask for approval under ``approval_policy = "on-request"``), :func:`function_call`
(any tool, e.g. ``request_user_input``), :func:`slow_text` (one delta per word with a delay; it
stops when the client hangs up, as it does on Esc), :func:`dynamic` (built from the request).

CLI: ``python -m compat.codex.scripted_model --port 8788 --script demo`` (the demo echoes).
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
    "TITLE_ASK",
    "Rule",
    "Script",
    "ScriptedModel",
    "Turn",
    "demo_script",
    "dynamic",
    "exec_command",
    "function_call",
    "function_call_outputs",
    "is_conversation_request",
    "is_title_request",
    "last_human_text",
    "request_user_input",
    "slow_text",
    "text",
    "when",
]

# The TUI asks for a thread title on a thread's first turn with this instruction (0.171.0); the
# request runs beside the real turn and must not eat the script.
TITLE_ASK = "Generate a concise, single-line task title"

# User messages Codex writes itself; they are never what the human typed.
SYNTHETIC_PREFIXES = ("<environment_context>", "<turn_aborted>", "<user_instructions>", "# AGENTS.md")


# --------------------------------------------------------------------------------------------
# Turns and rules


@dataclass
class Turn:
    """One scripted model response.

    ``items`` are output items: ``{"type": "message", "text": ...}`` or
    ``{"type": "function_call", "name": ..., "arguments": {...}}`` (ids are generated).
    ``delay_s`` > 0 streams text word by word with that delay between deltas.
    ``build`` (dynamic turns) is called with the request body and returns the real Turn.
    """

    items: list[dict[str, Any]] = field(default_factory=list)
    delay_s: float = 0.0
    build: Callable[[dict[str, Any]], Turn] | None = None
    label: str = ""
    # An HTTP error instead of a response: (status, message).
    error: tuple[int, str] | None = None

    def resolve(self, body: dict[str, Any]) -> Turn:
        if self.build is not None:
            return self.build(body).resolve(body)
        return self


def text(s: str) -> Turn:
    return Turn(items=[{"type": "message", "text": s}], label=f"text:{s[:30]}")


def function_call(name: str, arguments: dict[str, Any], text: str | None = None) -> Turn:
    """A call of any tool Codex offers (``exec_command``, ``request_user_input``, ...)."""
    items: list[dict[str, Any]] = []
    if text:
        items.append({"type": "message", "text": text})
    items.append({"type": "function_call", "name": name, "arguments": arguments})
    return Turn(items=items, label=f"function_call:{name}")


def exec_command(
    cmd: str, *, escalated: bool = False, justification: str = "", text: str | None = None
) -> Turn:
    """Codex's shell tool. ``escalated`` asks to run outside the sandbox
    (``sandbox_permissions: "require_escalated"``): under ``approval_policy = "on-request"`` that
    is what makes the TUI show "Would you like to run the following command?". A plain call
    inside ``workspace-write`` runs without asking."""
    args: dict[str, Any] = {"cmd": cmd}
    if escalated:
        args["sandbox_permissions"] = "require_escalated"
        args["justification"] = justification or "The scripted model needs to run this outside the sandbox"
    turn = function_call("exec_command", args, text=text)
    turn.label = "exec_command:escalated" if escalated else "exec_command"
    return turn


def request_user_input(
    question: str = "Which color do you prefer?",
    header: str = "Color",
    options: Iterable[str | tuple[str, str]] = ("Red", "Green", "Blue"),
    question_id: str = "color",
) -> Turn:
    """Codex's question tool: one question with options (label, description)."""
    opts = []
    for o in options:
        label, desc = (o, f"The {o.lower()} option") if isinstance(o, str) else o
        opts.append({"label": label, "description": desc})
    args = {"questions": [{"id": question_id, "header": header, "question": question, "options": opts}]}
    turn = function_call("request_user_input", args)
    turn.label = "request_user_input"
    return turn


def slow_text(words: int | Iterable[str] = 12, delay_s: float = 1.0) -> Turn:
    """Stream ``words`` (a count -> ``word0 word1 ...``, or an iterable) one delta per word."""
    if isinstance(words, int):
        words = [f"word{i}" for i in range(words)]
    return Turn(
        items=[{"type": "message", "text": "".join(f"{w} " for w in words)}],
        delay_s=delay_s,
        label="slow_text",
    )


def dynamic(fn: Callable[[dict[str, Any]], Turn], label: str = "dynamic") -> Turn:
    """A turn built when the request arrives (``fn(request_body) -> Turn``)."""
    return Turn(build=fn, label=label)


def api_error(status: int = 500, message: str = "scripted failure") -> Turn:
    return Turn(error=(status, message), label=f"error:{status}")


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
# Request reading


def _input_items(body: dict[str, Any]) -> list[dict[str, Any]]:
    items = body.get("input")
    if isinstance(items, str):
        return [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": items}]}]
    return [i for i in items or [] if isinstance(i, dict)]


def _message_text(item: dict[str, Any]) -> str:
    content = item.get("content")
    if isinstance(content, str):
        return content
    return "\n".join(
        c.get("text", "")
        for c in content or []
        if isinstance(c, dict) and c.get("type") in ("input_text", "output_text", "text")
    )


def _is_human(item: dict[str, Any]) -> bool:
    if item.get("type", "message") != "message" or item.get("role") != "user":
        return False
    return not _message_text(item).lstrip().startswith(SYNTHETIC_PREFIXES)


def last_human_text(body: dict[str, Any]) -> str:
    """The newest human prompt, or "" when the request continues a turn (its newest item is a
    tool output, not a fresh user message)."""
    for item in reversed(_input_items(body)):
        if item.get("type") in ("function_call_output", "custom_tool_call_output"):
            return ""
        if _is_human(item):
            return _message_text(item).strip()
    return ""


def function_call_outputs(body: dict[str, Any]) -> list[dict[str, Any]]:
    """Every ``function_call_output`` item the request carries, oldest first."""
    return [i for i in _input_items(body) if i.get("type") == "function_call_output"]


def has_function_call_output(body: dict[str, Any]) -> bool:
    items = _input_items(body)
    return bool(items) and items[-1].get("type") in ("function_call_output", "custom_tool_call_output")


def is_title_request(body: dict[str, Any]) -> bool:
    blob = str(body.get("instructions") or "") + "".join(_message_text(i) for i in _input_items(body))
    return TITLE_ASK in blob


def is_conversation_request(body: dict[str, Any]) -> bool:
    """A real turn of the thread (vs. the title side request): it offers the shell tool."""
    if is_title_request(body):
        return False
    names = {t.get("name") for t in body.get("tools") or [] if isinstance(t, dict)}
    return "exec_command" in names or not body.get("tools")


# --------------------------------------------------------------------------------------------
# Script


class Script:
    """Ordered turns + prompt-matched rules + default text. Thread-safe.

    ``Script(text("a"), exec_command(...), when("TOKEN1", ...), default="ok")``: positional Turns
    (or lists of Turns) go to the ordered queue, Rules to the rule list.
    """

    def __init__(
        self,
        *items: Turn | Rule | list[Turn],
        default: str = "ok",
        reply: Callable[[dict[str, Any]], Turn] | None = None,
    ) -> None:
        self._lock = threading.Lock()
        self.queue: collections.deque[Turn] = collections.deque()
        self.rules: list[Rule] = []
        self.continuation: collections.deque[Turn] = collections.deque()
        self.default = default
        self.reply = reply
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
        prompt = last_human_text(body)
        with self._lock:
            if prompt:
                for rule in self.rules:
                    if rule.matches(prompt):
                        rule.used += 1
                        self.continuation = collections.deque(rule.turns[1:])
                        return rule.turns[0] if rule.turns else text(self.default)
                self.continuation.clear()
            elif self.continuation and has_function_call_output(body):
                return self.continuation.popleft()
            if self.queue:
                return self.queue.popleft()
        if self.reply is not None:
            return self.reply(body)
        return text(self.default)


def demo_script() -> Script:
    def echo(body: dict[str, Any]) -> Turn:
        said = last_human_text(body)
        if not said and has_function_call_output(body):
            return text("Done.")
        return text(f"You said: {said}")

    return Script(
        when("RUN", exec_command("echo hello from the sandbox", escalated=True)),
        when("ASK", request_user_input()),
        when("SLOW", slow_text(20, 1.0)),
        reply=echo,
    )


SCRIPTS: dict[str, Callable[[], Script]] = {"demo": demo_script, "ok": Script}


# --------------------------------------------------------------------------------------------
# HTTP server


def _sse(data: dict[str, Any]) -> bytes:
    return f"event: {data['type']}\ndata: {json.dumps(data)}\n\n".encode()


def _pieces(s: str, slow: bool) -> list[str]:
    """One piece per word when slow, else about three pieces (at least one)."""
    words = re.findall(r"\S+\s*|\s+", s) or [s]
    if slow:
        return words
    size = max(1, -(-len(words) // 3))
    return ["".join(words[i : i + size]) for i in range(0, len(words), size)]


def _usage() -> dict[str, Any]:
    return {
        "input_tokens": 100,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 10,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 110,
    }


def _output_items(turn: Turn) -> list[dict[str, Any]]:
    """The turn's items in Responses API shape, with fresh ids."""
    out: list[dict[str, Any]] = []
    for it in turn.items:
        if it["type"] == "message":
            out.append(
                {
                    "type": "message",
                    "id": "msg_" + uuid.uuid4().hex[:24],
                    "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": it["text"], "annotations": []}],
                }
            )
        else:
            out.append(
                {
                    "type": "function_call",
                    "id": "fc_" + uuid.uuid4().hex[:24],
                    "call_id": "call_" + uuid.uuid4().hex[:24],
                    "name": it["name"],
                    "arguments": json.dumps(it["arguments"]),
                    "status": "completed",
                }
            )
    return out


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        if self.server.model.verbose:
            sys.stderr.write("codex scripted_model: " + (format % args) + "\n")

    def _read_body(self) -> Any:
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        try:
            return json.loads(raw) if raw else None
        except ValueError:
            return None

    def _json(self, obj: Any, status: int = 200) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _handle(self) -> None:
        body = self._read_body()
        model = self.server.model
        entry = model._log(self.command, self.path, body, dict(self.headers))
        try:
            path = urlsplit(self.path).path
            if self.command == "POST" and path.endswith("/responses") and isinstance(body, dict):
                self._responses(body, entry)
            else:
                entry["kind"] = "other"
                self._json({})
        finally:
            model._write_log(entry)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle

    def _responses(self, body: dict[str, Any], entry: dict[str, Any]) -> None:
        model = self.server.model
        if is_conversation_request(body):
            entry["kind"] = "turn"
            turn = model.script.next_turn(body).resolve(body)
        else:
            entry["kind"] = "side"
            turn = text(model.side_text)
        entry["reply"] = turn.label
        if turn.error is not None:
            status, message = turn.error
            entry["error_status"] = status
            self._json({"error": {"type": "server_error", "message": message}}, status=status)
            return
        items = _output_items(turn)
        entry["reply_items"] = items
        resp_id = "resp_" + uuid.uuid4().hex[:24]
        base = {"id": resp_id, "object": "response", "model": body.get("model", "gpt-scripted")}
        if not body.get("stream"):
            self._json({**base, "status": "completed", "output": items, "usage": _usage()})
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        w = self.wfile
        seq = itertools.count()

        def send(data: dict[str, Any]) -> None:
            w.write(_sse({**data, "sequence_number": next(seq)}))
            w.flush()

        try:
            send({"type": "response.created", "response": {**base, "status": "in_progress", "output": []}})
            for idx, item in enumerate(items):
                if item["type"] == "message":
                    full = item["content"][0]["text"]
                    send(
                        {
                            "type": "response.output_item.added",
                            "output_index": idx,
                            "item": {**item, "status": "in_progress", "content": []},
                        }
                    )
                    part = {"type": "output_text", "text": "", "annotations": []}
                    ids = {"item_id": item["id"], "output_index": idx, "content_index": 0}
                    send({"type": "response.content_part.added", **ids, "part": part})
                    for piece in _pieces(full, slow=turn.delay_s > 0):
                        if turn.delay_s and model._stopping.wait(turn.delay_s):
                            raise ConnectionAbortedError("server stopping")
                        send({"type": "response.output_text.delta", **ids, "delta": piece})
                        model._bump(entry, "deltas_sent")
                    send({"type": "response.output_text.done", **ids, "text": full})
                    send({"type": "response.content_part.done", **ids, "part": {**part, "text": full}})
                else:
                    send(
                        {
                            "type": "response.output_item.added",
                            "output_index": idx,
                            "item": {**item, "status": "in_progress", "arguments": ""},
                        }
                    )
                    ids = {"item_id": item["id"], "output_index": idx}
                    args = item["arguments"]
                    half = len(args) // 2
                    for piece in (args[:half], args[half:]):
                        if piece:
                            send({"type": "response.function_call_arguments.delta", **ids, "delta": piece})
                    send({"type": "response.function_call_arguments.done", **ids, "arguments": args})
                send({"type": "response.output_item.done", "output_index": idx, "item": item})
            send(
                {
                    "type": "response.completed",
                    "response": {**base, "status": "completed", "output": items, "usage": _usage()},
                }
            )
            entry["completed"] = True
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            entry["client_disconnected"] = True
            model._note_event("client_disconnected", entry["n"])


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    model: ScriptedModel


class ScriptedModel:
    """``ScriptedModel(script).start()`` -> ``.url`` (ends in ``/v1``: a provider's
    ``base_url``), ``.port``, ``.requests``, ``.stop()``."""

    def __init__(
        self,
        script: Script | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        log_path: str | None = None,
        side_text: str = "Scripted task title",
        verbose: bool = False,
    ) -> None:
        self.script = script if script is not None else Script()
        self.host, self._port = host, port
        self.log_path = log_path
        self.side_text = side_text
        self.verbose = verbose
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._requests: list[dict[str, Any]] = []
        self._counter = itertools.count(1)
        self._stopping = threading.Event()
        self._httpd: _Server | None = None

    def start(self) -> ScriptedModel:
        httpd = _Server((self.host, self._port), _Handler)
        httpd.model = self
        self._httpd = httpd
        threading.Thread(target=httpd.serve_forever, name="codex-scripted-model", daemon=True).start()
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
        return f"http://{self.host}:{self.port}/v1"

    # -- log
    def _log(self, method: str, path: str, body: Any, headers: dict[str, str]) -> dict[str, Any]:
        keep = ("authorization", "session-id", "thread-id", "originator", "user-agent", "x-")
        entry = {
            "n": next(self._counter),
            "ts": time.time(),
            "method": method,
            "path": path,
            "body": body,
            "headers": {k.lower(): v for k, v in headers.items() if k.lower().startswith(keep)},
            "kind": "?",
        }
        with self._cond:
            self._requests.append(entry)
            self._cond.notify_all()
        return entry

    def _write_log(self, entry: dict[str, Any]) -> None:
        if self.log_path:
            with self._lock, open(self.log_path, "a") as f:
                f.write(json.dumps(entry) + "\n")

    def _bump(self, entry: dict[str, Any], key: str) -> None:
        with self._cond:
            entry[key] = entry.get(key, 0) + 1
            self._cond.notify_all()

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

    def wait_streaming(self, min_deltas: int = 3, timeout: float = 30.0) -> dict[str, Any]:
        """Wait until some turn response has streamed ``min_deltas`` text deltas."""
        return self.wait_for_request(
            lambda r: r.get("kind") == "turn" and r.get("deltas_sent", 0) >= min_deltas, timeout
        )

    def wait_function_output(self, call_id: str | None = None, timeout: float = 30.0) -> dict[str, Any]:
        """The first ``function_call_output`` the CLI sent back (for ``call_id`` if given)."""

        def pred(r: dict[str, Any]) -> bool:
            body = r.get("body") if r.get("kind") == "turn" else None
            return isinstance(body, dict) and any(
                call_id is None or o.get("call_id") == call_id for o in function_call_outputs(body)
            )

        req = self.wait_for_request(pred, timeout)
        outs = function_call_outputs(req["body"])
        return next(o for o in outs if call_id is None or o.get("call_id") == call_id)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m compat.codex.scripted_model")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8788)
    p.add_argument("--script", default="demo", choices=sorted(SCRIPTS))
    p.add_argument("--log", default=None, help="append every request as JSONL to this file")
    p.add_argument("-v", "--verbose", action="store_true")
    a = p.parse_args(argv)
    m = ScriptedModel(
        SCRIPTS[a.script](), host=a.host, port=a.port, log_path=a.log, verbose=a.verbose
    ).start()
    print(f"codex scripted model ({a.script}) on {m.url} (a provider's base_url)", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        m.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
