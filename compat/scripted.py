"""What every provider's scripted model server shares: the script and the recording HTTP server.

Stdlib only (no Django). A provider's ``compat/<package>/scripted_model.py`` brings what its API
speaks (its ``Turn``, how a request names the newest human prompt, the wire format of a reply)
and builds on these:

* :class:`Script`: an ordered queue of turns consumed by *conversation* requests, rules
  (:func:`when`) matched against the newest human prompt (first added first), each rule's later
  turns answering the follow-up requests that carry the output of the call before, and the
  default text (or ``reply(body)``) when nothing is scripted;
* :class:`ScriptedModel`: a threaded loopback HTTP server that records every request (method,
  path, parsed JSON body, the headers a test may assert, classification) in memory, optionally
  as JSONL, and lets a test wait on them; :class:`ScriptedHandler`, its request handler, with
  the plumbing of a JSON reply and of an SSE stream the client may hang up on;
* :func:`serve`: the standalone command line (``manage.py scripted_model``).
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import itertools
import json
import re
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, BinaryIO, Protocol, Self

__all__ = ["Rule", "Script", "ScriptedHandler", "ScriptedModel", "chunks", "serve", "when", "words"]


class _Turn(Protocol):
    label: str

    def resolve(self, body: dict[str, Any]) -> Any: ...


# --------------------------------------------------------------------------------------------
# Rules


@dataclass
class Rule[TurnT: _Turn]:
    pattern: str | re.Pattern[str]
    turns: list[TurnT]
    once: bool = False
    used: int = 0

    def matches(self, prompt: str) -> bool:
        if self.once and self.used:
            return False
        if isinstance(self.pattern, re.Pattern):
            return bool(self.pattern.search(prompt))
        return self.pattern in prompt


def when[TurnT: _Turn](
    pattern: str | re.Pattern[str], *turns: TurnT | list[TurnT], once: bool = False
) -> Rule[TurnT]:
    flat: list[TurnT] = []
    for t in turns:
        flat.extend(t if isinstance(t, list) else [t])
    return Rule(pattern=pattern, turns=flat, once=once)


# --------------------------------------------------------------------------------------------
# Script


class Script[TurnT: _Turn]:
    """Ordered turns + prompt-matched rules + default text. Thread-safe.

    Positional Turns (or lists of Turns) go to the ordered queue, Rules to the rule list.
    ``reply`` (callable) overrides the default text per request (the demos echo).

    A provider's subclass says how to read its API's requests: :meth:`prompt` (the newest human
    prompt, "" when there is none), :meth:`continues` (the request carries the output of the
    model's last tool call) and :meth:`text_turn` (a plain text turn); :meth:`answer_first` may answer a
    request before the script is consulted.
    """

    def __init__(
        self,
        *items: TurnT | Rule[TurnT] | list[TurnT],
        default: str = "ok",
        reply: Callable[[dict[str, Any]], TurnT] | None = None,
    ) -> None:
        self._lock = threading.Lock()
        self.queue: collections.deque[TurnT] = collections.deque()
        self.rules: list[Rule[TurnT]] = []
        self.continuation: collections.deque[TurnT] = collections.deque()
        self.default = default
        self.reply = reply
        for item in items:
            self.add(item)

    def add(self, *items: TurnT | Rule[TurnT] | list[TurnT]) -> Self:
        with self._lock:
            for item in items:
                if isinstance(item, Rule):
                    self.rules.append(item)
                elif isinstance(item, list):
                    self.queue.extend(item)
                else:
                    self.queue.append(item)
        return self

    def prompt(self, body: dict[str, Any]) -> str:
        raise NotImplementedError

    def continues(self, body: dict[str, Any]) -> bool:
        raise NotImplementedError

    def text_turn(self, s: str) -> TurnT:
        raise NotImplementedError

    def answer_first(self, body: dict[str, Any]) -> TurnT | None:
        return None

    def next_turn(self, body: dict[str, Any]) -> TurnT:
        turn = self.answer_first(body)
        if turn is not None:
            return turn
        prompt = self.prompt(body)
        continues = self.continues(body)
        with self._lock:
            if prompt:
                # a new human prompt (possibly merged after a declined tool call's output)
                for rule in self.rules:
                    if rule.matches(prompt):
                        rule.used += 1
                        self.continuation = collections.deque(rule.turns[1:])
                        return rule.turns[0] if rule.turns else self.text_turn(self.default)
                if not continues:
                    self.continuation.clear()
            if self.continuation and continues:
                return self.continuation.popleft()
            if self.queue:
                return self.queue.popleft()
        if self.reply is not None:
            return self.reply(body)
        return self.text_turn(self.default)


# --------------------------------------------------------------------------------------------
# Streaming helpers


def words(s: str) -> list[str]:
    """``s`` split after each run of white space (at least one piece)."""
    return re.findall(r"\S+\s*|\s+", s) or [s]


def chunks(s: str, n: int) -> list[str]:
    """Split s into about n pieces on word boundaries (at least 1)."""
    ws = words(s)
    size = max(1, -(-len(ws) // n))
    return ["".join(ws[i : i + size]) for i in range(0, len(ws), size)]


# --------------------------------------------------------------------------------------------
# HTTP server


class ScriptedHandler(BaseHTTPRequestHandler):
    """Reads the JSON body, records the request, and hands it to :meth:`route`."""

    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        model = self.server.model
        if model.verbose:
            sys.stderr.write(model.log_prefix + (format % args) + "\n")

    def _read_body(self) -> Any:
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        try:
            return json.loads(raw) if raw else None
        except ValueError:
            return None

    def extra_headers(self) -> None:
        """Headers the API sends on every reply (after the others, before the blank line)."""

    def _json(self, obj: Any, status: int = 200) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.extra_headers()
        self.end_headers()
        self.wfile.write(data)

    def _handle(self) -> None:
        body = self._read_body()
        model = self.server.model
        entry = model._log(self.command, self.path, body, dict(self.headers))
        try:
            self.route(body, entry)
        finally:
            model._write_log(entry)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle

    def route(self, body: Any, entry: dict[str, Any]) -> None:
        """Answer the request and set ``entry["kind"]`` (``turn`` for a conversation turn)."""
        raise NotImplementedError

    @contextlib.contextmanager
    def streaming(self, entry: dict[str, Any]) -> Iterator[BinaryIO]:
        """Send an SSE response's head and yield the stream. ``entry`` says whether the body
        went out whole (``completed``) or the client hung up first (``client_disconnected``,
        and an ``event`` entry that a test may wait on)."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.extra_headers()
        self.end_headers()
        self.close_connection = True
        try:
            yield self.wfile
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            entry["client_disconnected"] = True
            self.server.model._note_event("client_disconnected", entry["n"])
        else:
            entry["completed"] = True


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    model: ScriptedModel[Any]


class ScriptedModel[ScriptT: Script[Any]]:
    """``Model(script).start()`` -> ``.url``, ``.port``, ``.requests``, ``.stop()``.

    A provider's subclass names its ``handler`` and ``script_class``, the headers worth
    recording (``keep_headers``, lower-case prefixes), the path its CLI's base URL ends in
    (``url_path``) and the names it shows in thread and log lines."""

    handler: type[ScriptedHandler]
    # A fresh one serves when no script is given.
    script_class: type[ScriptT]
    # What a side request (not a turn of the conversation) is answered.
    side_text = ""
    keep_headers: tuple[str, ...] = ()
    url_path = ""
    thread_name = "scripted-model"
    log_prefix = "scripted_model: "

    def __init__(
        self,
        script: ScriptT | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        log_path: str | None = None,
        side_text: str | None = None,
        verbose: bool = False,
    ) -> None:
        self.script = script if script is not None else self.script_class()
        self.host, self._port = host, port
        self.log_path = log_path
        if side_text is not None:
            self.side_text = side_text
        self.verbose = verbose
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._requests: list[dict[str, Any]] = []
        self._counter = itertools.count(1)
        self._stopping = threading.Event()
        self._httpd: _Server | None = None

    # -- lifecycle
    def start(self) -> Self:
        httpd = _Server((self.host, self._port), self.handler)
        httpd.model = self
        self._httpd = httpd
        threading.Thread(target=httpd.serve_forever, name=self.thread_name, daemon=True).start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._httpd is not None, "not started"
        return self._httpd.server_address[1]

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}{self.url_path}"

    def pause(self, delay_s: float) -> None:
        """Wait between two slow deltas; a stopping server ends the stream as a hang-up would."""
        if delay_s and self._stopping.wait(delay_s):
            raise ConnectionAbortedError("server stopping")

    # -- log
    def _log(self, method: str, path: str, body: Any, headers: dict[str, str]) -> dict[str, Any]:
        entry = {
            "n": next(self._counter),
            "ts": time.time(),
            "method": method,
            "path": path,
            "body": body,
            "headers": {k.lower(): v for k, v in headers.items() if k.lower().startswith(self.keep_headers)},
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
        """Wait until some turn response has streamed ``min_deltas`` deltas (and is not done)."""
        return self.wait_for_request(
            lambda r: r.get("kind") == "turn" and r.get("deltas_sent", 0) >= min_deltas, timeout
        )


def serve(
    argv: list[str] | None,
    *,
    prog: str,
    port: int,
    scripts: dict[str, Callable[[], Script[Any]]],
    model: Callable[..., ScriptedModel[Any]],
    banner: Callable[[str, str], str],
) -> int:
    """The standalone server: ``prog [--host H] [--port N] [--script NAME] [--log FILE] [-v]``;
    ``banner(script name, url)`` is the line it prints once it listens."""
    p = argparse.ArgumentParser(prog=prog)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=port)
    p.add_argument("--script", default="demo", choices=sorted(scripts))
    p.add_argument("--log", default=None, help="append every request as JSONL to this file")
    p.add_argument("-v", "--verbose", action="store_true")
    a = p.parse_args(argv)
    m = model(scripts[a.script](), host=a.host, port=a.port, log_path=a.log, verbose=a.verbose).start()
    print(banner(a.script, m.url), flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        m.stop()
    return 0
