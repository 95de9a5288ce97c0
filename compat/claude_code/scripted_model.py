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

import itertools
import json
import re
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from compat import scripted
from compat.scripted import Rule, chunks, when

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
    "image_blocks",
    "is_compaction_request",
    "is_conversation_request",
    "is_notification_request",
    "last_human_text",
    "plan_turns",
    "slow_text",
    "text",
    "thinking",
    "tool_use",
    "usage_limit",
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
    # Response headers sent with the error (a usage limit's reset time, say).
    error_headers: tuple[tuple[str, str], ...] = ()
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


def usage_limit(resets_in_s: int = 3600, claim: str = "five_hour") -> Turn:
    """A subscription's usage limit: a 429 `rate_limit_error` with the unified rate-limit
    headers, as the service sends them when a plan limit refuses a request. The header names
    are the ones the pinned CLI reads (strings of its binary: anthropic-ratelimit-unified-status,
    -reset, -representative-claim, -5h-reset); the reset is epoch seconds, computed per request
    so a test can make it short."""

    def build(_body: dict[str, Any]) -> Turn:
        reset = str(int(time.time()) + resets_in_s)
        headers = (
            ("anthropic-ratelimit-unified-status", "rejected"),
            ("anthropic-ratelimit-unified-reset", reset),
            ("anthropic-ratelimit-unified-representative-claim", claim),
            ("anthropic-ratelimit-unified-5h-status", "rejected"),
            ("anthropic-ratelimit-unified-5h-reset", reset),
            ("retry-after", str(resets_in_s)),
        )
        error = (429, "rate_limit_error", "This request would exceed your account's rate limit.")
        return Turn(error=error, error_headers=headers, label="error:429")

    return dynamic(build, label="usage_limit")


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


def image_blocks(body: dict[str, Any]) -> list[dict[str, Any]]:
    """Every image content block of the request's user messages: what the model received as
    image content (`source.media_type`, `source.data` base64)."""
    return [
        block
        for msg in body.get("messages") or []
        if msg.get("role") == "user" and isinstance(msg.get("content"), list)
        for block in msg["content"]
        if isinstance(block, dict) and block.get("type") == "image"
    ]


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


class Script(scripted.Script[Turn]):
    """Ordered turns + prompt-matched rules + default text (:class:`compat.scripted.Script`).

    ``Script(text("a"), tool_use(...), when("ASK1", ...), default="ok")``: positional Turns
    (or lists of Turns) go to the ordered queue, Rules to the rule list.
    ``reply`` (callable) overrides the default text per request (the demo echoes).
    """

    def __init__(
        self,
        *items: Turn | Rule[Turn] | list[Turn],
        default: str = "ok",
        reply: Callable[[dict[str, Any]], Turn] | None = None,
        agents: dict[str, list[Turn]] | None = None,
        on_notification: Turn | None = None,
    ) -> None:
        super().__init__(*items, default=default, reply=reply)
        # A subagent's requests (its first user message holds the marker) take its own turns,
        # one per tool_result it has so far, so they never touch the main conversation's queue.
        self.agents = dict(agents or {})
        self.on_notification = on_notification

    prompt = staticmethod(last_human_text)
    continues = staticmethod(has_tool_result)
    text_turn = staticmethod(text)

    def answer_first(self, body: dict[str, Any]) -> Turn | None:
        marker = agent_marker(body, self.agents)
        if marker is not None:
            turns = self.agents[marker]
            return turns[min(tool_result_count(body), len(turns) - 1)]
        if self.on_notification is not None and is_notification_request(body):
            return self.on_notification
        return None


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


class _Handler(scripted.ScriptedHandler):
    _error_headers: tuple[tuple[str, str], ...] = ()

    def extra_headers(self) -> None:
        self.send_header("request-id", "req_" + uuid.uuid4().hex[:24])
        for name, value in self._error_headers:
            self.send_header(name, value)
        self._error_headers = ()

    def route(self, body: Any, entry: dict[str, Any]) -> None:
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
            self._error_headers = turn.error_headers
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
        with self.streaming(entry) as w:
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
                    pieces = re.findall(r"\S+\s*", b["text"]) if turn.delay_s else chunks(b["text"], 3)
                    deltas = [{"type": "text_delta", "text": p} for p in pieces]
                elif b["type"] == "thinking":
                    start = {"type": "thinking", "thinking": "", "signature": ""}
                    deltas = [{"type": "thinking_delta", "thinking": p} for p in chunks(b["thinking"], 3)]
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
                    model.pause(turn.delay_s)
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


class ScriptedModel(scripted.ScriptedModel[Script]):
    """``ScriptedModel(script).start()`` -> ``.url``, ``.port``, ``.requests``, ``.stop()``."""

    handler = _Handler
    script_class = Script
    side_text = "Scripted side reply"
    keep_headers = ("anthropic", "user-agent", "x-")

    def __init__(
        self,
        script: Script | None = None,
        *,
        compact_summary: str = "The user greeted the assistant and it answered.",
        **options: Any,
    ) -> None:
        super().__init__(script, **options)
        self.compact_summary = compact_summary


def main(argv: list[str] | None = None) -> int:
    return scripted.serve(
        argv,
        prog="python -m compat.claude_code.scripted_model",
        port=8787,
        scripts=SCRIPTS,
        model=ScriptedModel,
        banner=lambda script, url: f"scripted model ({script}) on {url}  — ANTHROPIC_BASE_URL={url}",
    )


if __name__ == "__main__":
    raise SystemExit(main())
