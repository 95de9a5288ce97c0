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

import itertools
import json
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from compat import scripted
from compat.scripted import Rule, chunks, when, words

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
    "input_images",
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
    # The error body's type (the service's classification) and more fields of it, and headers.
    error_type: str = "server_error"
    error_fields: dict[str, Any] = field(default_factory=dict)
    error_headers: tuple[tuple[str, str], ...] = ()

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


def usage_limit(resets_in_s: int = 3600, used_percent: float = 100.0, *, headers: bool = True) -> Turn:
    """A ChatGPT plan's usage limit: a 429 whose body's error type is `usage_limit_reached`
    with `resets_at` (epoch seconds) and `resets_in_seconds`, and the `x-codex-primary-*` rate
    limit headers. The names are the ones the pinned binary reads (its strings); the reset is
    computed per request so a test can make it short. With the headers, 0.171.0 also opens its
    "Approaching rate limits: switch model?" picker (compat §16); `headers=False` leaves it shut."""

    def build(_body: dict[str, Any]) -> Turn:
        reset = int(time.time()) + resets_in_s
        return Turn(
            error=(429, "The usage limit has been reached"),
            error_type="usage_limit_reached",
            error_fields={"plan_type": "plus", "resets_at": reset, "resets_in_seconds": resets_in_s},
            error_headers=(
                ("x-codex-primary-used-percent", f"{used_percent:g}"),
                ("x-codex-primary-window-minutes", "300"),
                ("x-codex-primary-reset-at", str(reset)),
                ("x-codex-primary-reset-after-seconds", str(resets_in_s)),
            )
            if headers
            else (),
            label="error:429:usage_limit",
        )

    return dynamic(build, label="usage_limit")


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


def input_images(body: dict[str, Any]) -> list[str]:
    """The image URLs (data: URLs) of every input_image the request's user messages carry: what
    the model received as image content."""
    return [
        c.get("image_url", "")
        for item in _input_items(body)
        if item.get("role") == "user"
        for c in item.get("content") or []
        if isinstance(c, dict) and c.get("type") == "input_image"
    ]


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


class Script(scripted.Script[Turn]):
    """Ordered turns + prompt-matched rules + default text (:class:`compat.scripted.Script`).

    ``Script(text("a"), exec_command(...), when("TOKEN1", ...), default="ok")``: positional Turns
    (or lists of Turns) go to the ordered queue, Rules to the rule list.
    """

    prompt = staticmethod(last_human_text)
    continues = staticmethod(has_function_call_output)
    text_turn = staticmethod(text)


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
    return words(s) if slow else chunks(s, 3)


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


class _Handler(scripted.ScriptedHandler):
    _error_headers: tuple[tuple[str, str], ...] = ()

    def extra_headers(self) -> None:
        for name, value in self._error_headers:
            self.send_header(name, value)
        self._error_headers = ()

    def route(self, body: Any, entry: dict[str, Any]) -> None:
        path = urlsplit(self.path).path
        if self.command == "POST" and path.endswith("/responses") and isinstance(body, dict):
            self._responses(body, entry)
        else:
            entry["kind"] = "other"
            self._json({})

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
            self._error_headers = turn.error_headers
            error = {"type": turn.error_type, "message": message, **turn.error_fields}
            self._json({"error": error}, status=status)
            return
        items = _output_items(turn)
        entry["reply_items"] = items
        resp_id = "resp_" + uuid.uuid4().hex[:24]
        base = {"id": resp_id, "object": "response", "model": body.get("model", "gpt-scripted")}
        if not body.get("stream"):
            self._json({**base, "status": "completed", "output": items, "usage": _usage()})
            return
        seq = itertools.count()
        with self.streaming(entry) as w:

            def send(data: dict[str, Any]) -> None:
                w.write(_sse({**data, "sequence_number": next(seq)}))
                w.flush()

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
                        model.pause(turn.delay_s)
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


class ScriptedModel(scripted.ScriptedModel[Script]):
    """``ScriptedModel(script).start()`` -> ``.url`` (ends in ``/v1``: a provider's
    ``base_url``), ``.port``, ``.requests``, ``.stop()``."""

    handler = _Handler
    script_class = Script
    side_text = "Scripted task title"
    keep_headers = ("authorization", "session-id", "thread-id", "originator", "user-agent", "x-")
    url_path = "/v1"
    thread_name = "codex-scripted-model"
    log_prefix = "codex scripted_model: "

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
    return scripted.serve(
        argv,
        prog="python -m compat.codex.scripted_model",
        port=8788,
        scripts=SCRIPTS,
        model=ScriptedModel,
        banner=lambda script, url: f"codex scripted model ({script}) on {url} (a provider's base_url)",
    )


if __name__ == "__main__":
    raise SystemExit(main())
