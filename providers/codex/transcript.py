"""Codex CLI 0.171.0 rollout JSONL → lab's universal Messages and idle/working state.

No Django. Read-through like the reference adapter: every call reads only the bytes appended
since the cursor (providers.jsonl) and carries what later lines need in `CodexState`, so
reading a file in any number of increments yields exactly the messages of one whole read.

Facts (compat/codex/COMPAT-adapter.md §2, §3):
  * A line is `{"timestamp", "ordinal", "type", "payload"}`. The conversation is in the
    `response_item` lines (message / reasoning / function_call / function_call_output /
    custom_tool_call / custom_tool_call_output); `event_msg item_completed` repeats it and is
    not read (one source, no duplicates).
  * Turn boundaries are `event_msg` `task_started` (WORKING), `task_complete` and
    `turn_aborted` (IDLE). No rollout line marks a pending approval: that is the hooks' job.
  * Synthetic user messages (the per-turn `<environment_context>`, `<turn_aborted>`, the
    AGENTS.md instructions) and `developer` messages are the CLI's own, never the operator's.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Unpack

import orjson

from providers.jsonl import Limits, LineReader, read_in_passes
from providers.keywindow import EMPTY, KeyWindow, OpenWindow
from providers.outbox import normalize
from providers.schema import Cursor, Message, MessageKind, Quota, RunState, TranscriptRead, Usage

RECENT_TOOLS = 64  # call_id → tool name, to name the result that follows
RESULT_MAX_CHARS = 4000
INPUT_MAX_CHARS = 200

# compat §2: user-role messages the CLI writes itself. Matched at the start of the text.
SYNTHETIC_USER_PREFIXES = (
    "<environment_context>",
    "<turn_aborted>",
    "<user_instructions>",
    "<skill>",
    "# AGENTS.md instructions for ",
)
# compat §2: the conversation's own line types; everything else is bookkeeping.
_CONVERSATION = frozenset({b"response_item", b"event_msg", b"compacted", b"lab_command"})
# compat §2: exec_command's output ends its header with this line; the code before it.
# compat §2 (images): a pasted image path is sent as input_text `<image name=[Image #N]
# path="…">`, the input_image, then `</image>`, before the prompt's text "[Image #N] …".
_IMAGE_OPEN = re.compile(r'^<image name=\[Image #\d+\] path="(.*)">$', re.S)
_IMAGE_CLOSE = "</image>"
_PLACEHOLDERS = re.compile(r"^(?:\[Image #\d+\]\s*)+")
_THREAD_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_EXIT_CODE = re.compile(r"^Process exited with code (-?\d+)$", re.M)
_OUTPUT_MARKER = "\nOutput:\n"
# compat §7: the last line of the output of a call the operator declined, and just as well of
# one interrupted while it ran: the rollout holds nothing else that tells the two apart.
ABORTED_OUTPUT = "aborted by user"
DECLINED_TEXT = "Declined: you did not allow this command, so Codex did not run it."
ABORTED_TEXT = (
    "Stopped before it finished: declined at its approval prompt, or interrupted while it ran "
    "(Codex recorded “aborted by user”)."
)


@dataclass(frozen=True, slots=True)
class CodexState:
    """What a later read needs from an earlier one (immutable: it lives in Cursor)."""

    state: RunState = RunState.IDLE
    since: str = ""
    running: tuple[tuple[str, str], ...] = ()  # (call_id, "exec_command ls") oldest first
    tool_names: KeyWindow = EMPTY  # the last RECENT_TOOLS call_ids, valued by name
    corrupt: int = 0
    skip_from: int | None = None
    reset_at: int = 0  # compat §16: when the full account window last reported resets, 0 unknown


@dataclass
class _Reader(LineReader):
    seq: int
    state: RunState
    since: str
    running: dict[str, str]
    tool_names: OpenWindow
    corrupt: int
    intents: Mapping[str, str]
    reset_at: int = 0
    messages: list[Message] = field(default_factory=list)
    stats: dict[str, int] = field(default_factory=dict)

    @classmethod
    def start(cls, st: CodexState, seq: int, intents: Mapping[str, str]) -> _Reader:
        return cls(
            seq=seq,
            state=st.state,
            since=st.since,
            running=dict(st.running),
            tool_names=st.tool_names.open(RECENT_TOOLS, valued=True),
            corrupt=st.corrupt,
            intents=intents,
            reset_at=st.reset_at,
        )

    def freeze(self, skip_from: int | None) -> CodexState:
        return CodexState(
            state=self.state,
            since=self.since,
            running=tuple(self.running.items()),
            tool_names=self.tool_names.freeze(),
            corrupt=self.corrupt,
            skip_from=skip_from,
            reset_at=self.reset_at,
        )

    def settle(self, state: RunState, stamp: str = "") -> None:
        if state == RunState.WORKING and self.state != RunState.WORKING:
            self.since = stamp
        self.state = state
        if state == RunState.IDLE:
            self.running.clear()
            self.since = ""

    # -- lines ----------------------------------------------------------------------------

    def skip(self, raw: bytes) -> bool:
        self.count("lines")
        cheap = _cheap_type(raw)
        if cheap is not None and cheap not in _CONVERSATION:
            self.count("bookkeeping")  # session_meta (~20 KB of instructions), turn_context …
            return True
        return False

    def entry(self, e: dict[str, Any]) -> None:
        kind = e.get("type")
        payload = e.get("payload")
        stamp = _str(e.get("timestamp"))
        if not isinstance(payload, dict):
            if kind in ("response_item", "event_msg"):
                raise TypeError("payload is not an object")
            return
        if kind == "response_item":
            self.response_item(payload, stamp)
        elif kind == "event_msg":
            self.event(payload, stamp)
        elif kind == "lab_command":
            # lab's clear marker (spool.py): the command the operator sent, the new
            # conversation's first line until its rollout exists. It does not move the state.
            self.emit(MessageKind.USER_TEXT, _str(payload.get("text")), timestamp=stamp)
        elif kind == "compacted":
            # compat §2: /compact replaces the history with a summary.
            self.emit(
                MessageKind.LIFECYCLE,
                "Conversation compacted",
                timestamp=stamp,
                detail=_str(payload.get("message")),
            )

    def event(self, p: dict[str, Any], stamp: str) -> None:
        kind = p.get("type")
        if kind == "task_started":
            self.settle(RunState.WORKING, stamp)
        elif kind == "token_count":
            self.reset_at = full_window_reset(p.get("rate_limits"))
        elif kind == "task_complete":
            if "error" in p and p["error"] is not None:
                # compat §2: a turn Codex gave up on (its retries spent) records no error event,
                # only the error on its task_complete.
                limit = turn_limit(p["error"])
                self.emit(
                    MessageKind.LIFECYCLE,
                    turn_error_text(p["error"]),
                    timestamp=stamp,
                    native_id=f"failed-{_str(p.get('turn_id'))}",
                    is_error=True,
                    limit=limit,
                    resets_at=self.reset_at if limit else 0,
                )
            self.settle(RunState.IDLE)
        elif kind == "turn_aborted":
            reason = _str(p.get("reason")) or "interrupted"
            self.emit(
                MessageKind.LIFECYCLE, f"Turn {reason}", timestamp=stamp, native_id=_str(p.get("turn_id"))
            )
            self.settle(RunState.IDLE)
        elif kind in ("error", "stream_error"):
            # compat §2: an API error (given up on), or a retry as it happens.
            self.emit(
                MessageKind.LIFECYCLE, _str(p.get("message")) or "API error", timestamp=stamp, is_error=True
            )

    def response_item(self, p: dict[str, Any], stamp: str) -> None:
        kind = p.get("type")
        if kind == "message":
            self.message(p, stamp)
        elif kind == "reasoning":
            summary = p.get("summary") or []
            text = "\n\n".join(_str(s.get("text")) for s in summary if isinstance(s, dict))
            self.emit(MessageKind.THINKING, text, timestamp=stamp, native_id=_str(p.get("id")))
        elif kind in ("function_call", "custom_tool_call", "local_shell_call"):
            self.tool_use(p, stamp)
        elif kind in ("function_call_output", "custom_tool_call_output"):
            self.tool_result(p, stamp)

    def message(self, p: dict[str, Any], stamp: str) -> None:
        role = p.get("role")
        content = p.get("content") or []
        if not isinstance(content, list):
            raise TypeError("content is not a list")
        if role == "user":
            text, images = user_parts(content)
            if (not text.strip() and not images) or is_synthetic(text):
                self.count("synthetic")
                return
            native = _str(p.get("id"))
            self.emit(MessageKind.USER_TEXT, text or "[image]", timestamp=stamp, native_id=native)
            for path in images:
                self.emit(
                    MessageKind.LIFECYCLE,
                    f"Attached the image {path}",
                    timestamp=stamp,
                    native_id=f"{native}:image",
                    attachment=path,
                )
            self.settle(RunState.WORKING, stamp)
        elif role == "assistant":
            text = "".join(_str(c.get("text")) for c in content if c.get("type") == "output_text")
            if text:
                self.emit(MessageKind.ASSISTANT_TEXT, text, timestamp=stamp, native_id=_str(p.get("id")))
        # developer / system: instructions, never shown

    def tool_use(self, p: dict[str, Any], stamp: str) -> None:
        name = _str(p.get("name")) or _str(p.get("type"))
        call_id = _str(p.get("call_id"))
        summary = summarize_call(name, p.get("arguments", p.get("input", p.get("action"))))
        self.tool_names.add(call_id, name)
        self.emit(
            MessageKind.TOOL_USE, "", tool_name=name, tool_input=summary, timestamp=stamp, native_id=call_id
        )
        if call_id:
            self.running[call_id] = f"{name} {summary}".strip()

    def tool_result(self, p: dict[str, Any], stamp: str) -> None:
        call_id = _str(p.get("call_id"))
        output = _output_text(p.get("output"))
        code = _EXIT_CODE.search(output)
        # compat §2: exec_command's output is a header (chunk id, wall time, exit code, token
        # count) then "Output:" and what the command printed; the page shows what it printed.
        _, marker, printed = output.partition(_OUTPUT_MARKER)
        shown = printed if marker else output
        declined = output.rstrip().endswith(ABORTED_OUTPUT)
        is_error = declined or (code is not None and code.group(1) != "0")
        intent = self.intents.get(call_id)
        if declined:
            # The output is only its wall time and "aborted by user"; lab's own answer, when it
            # played one, says which stop it was.
            shown = DECLINED_TEXT if intent == "deny" else ABORTED_TEXT
        self.running.pop(call_id, None)
        name = self.tool_names.get(call_id)
        self.emit(
            MessageKind.TOOL_RESULT,
            _truncate(shown, RESULT_MAX_CHARS),
            tool_name=name,
            timestamp=stamp,
            native_id=call_id,
            is_error=is_error,
        )
        if intent is not None and (intent == "allow") == declined:
            # The backstop (docs/architecture.md, "Dialog answering"): lab played one answer and
            # the rollout recorded the other.
            wanted = "approved" if intent == "allow" else "declined"
            self.emit(
                MessageKind.LIFECYCLE,
                f"lab {wanted} this command, but Codex recorded otherwise",
                timestamp=stamp,
                native_id=f"backstop-{call_id}",
                is_error=True,
            )


def turn_limit(error: object) -> str:
    """compat §16: "usage" for a plan's usage limit (`codex_error_info: usage_limit_exceeded`),
    "rate" for a 429 Codex gave up on after its retries, "" for any other failed turn."""
    if not isinstance(error, dict):
        return ""
    info = error.get("codex_error_info")
    if info == "usage_limit_exceeded":
        return "usage"
    retried = info.get("response_too_many_failed_attempts") if isinstance(info, dict) else None
    if isinstance(retried, dict) and retried.get("http_status_code") == 429:
        return "rate"
    return ""


# compat §16: a rate-limit window's length in minutes, as the page names it.
WINDOW_NAMES = {300: "5-hour", 10080: "7-day"}


def _windows(limits: object) -> list[Quota]:
    if not isinstance(limits, dict):
        return []
    found = []
    for key in ("primary", "secondary"):
        w = limits.get(key)
        used = w.get("used_percent") if isinstance(w, dict) else None
        if not isinstance(w, dict) or not isinstance(used, int | float) or isinstance(used, bool):
            continue
        minutes = w.get("window_minutes")
        name = WINDOW_NAMES.get(minutes, f"{minutes}-minute") if isinstance(minutes, int) else key
        resets = w.get("resets_at")
        at = int(resets) if isinstance(resets, int | float) and not isinstance(resets, bool) else 0
        found.append(Quota(name=name, used_percent=float(used), resets_at=at))
    return found


def full_window_reset(limits: object) -> int:
    """When the account window the rollout last reported full resets (the latest of them), 0
    when none is full or none said when."""
    return max((q.resets_at for q in _windows(limits) if q.used_percent >= 100), default=0)


def last_usage(tail: bytes, at_ns: int = 0) -> Usage | None:
    """compat §16: the last `token_count` event of a rollout's tail: the last request's tokens
    against the model's window, and the account's windows (null with an API key: not
    reported). None when the tail holds none."""
    for raw in reversed(tail.splitlines()):
        if b'"token_count"' not in raw:
            continue
        try:
            entry = orjson.loads(raw)
        except orjson.JSONDecodeError:
            continue
        payload = entry.get("payload") if isinstance(entry, dict) else None
        if not isinstance(payload, dict) or payload.get("type") != "token_count":
            continue
        info = payload.get("info")
        last = info.get("last_token_usage") if isinstance(info, dict) else None
        total = last.get("total_tokens") if isinstance(last, dict) else None
        window = info.get("model_context_window") if isinstance(info, dict) else None
        tokens = total if isinstance(total, int) and not isinstance(total, bool) else None
        size = window if isinstance(window, int) and not isinstance(window, bool) and window > 0 else None
        percent = round(100 * tokens / size, 1) if tokens is not None and size else None
        quotas = tuple(_windows(payload.get("rate_limits"))) or None
        return Usage(
            context_tokens=tokens,
            context_window=size,
            context_percent=percent,
            turn_tokens=tokens,
            quotas=quotas,
            at_ns=at_ns,
        )
    return None


def turn_error_text(error: object) -> str:
    """The line for a turn that ended in an error: Codex's message, and what it classified the
    failure as (the HTTP status it gave up on after its retries, or its own category)."""
    if isinstance(error, str):
        return f"The turn failed: {error}" if error.strip() else "The turn failed; Codex recorded no cause."
    if not isinstance(error, dict):
        return "The turn failed; Codex recorded no cause."
    message = _str(error.get("message")).strip()
    info = error.get("codex_error_info")
    head = "The turn failed"
    retried = info.get("response_too_many_failed_attempts") if isinstance(info, dict) else None
    if isinstance(retried, dict):
        status = retried.get("http_status_code")
        head += " after Codex's retries" + (
            f" (last HTTP status {status})" if isinstance(status, int) else ""
        )
    elif isinstance(info, str) and info:
        head += f" ({info.replace('_', ' ')})"
    return f"{head}: {message}" if message else f"{head}; Codex recorded no message."


def user_parts(content: list[Any]) -> tuple[str, list[str]]:
    """A user message's text and the paths of the images it carries (compat §2, images)."""
    texts: list[str] = []
    images: list[str] = []
    for c in content:
        if not isinstance(c, dict) or c.get("type") != "input_text":
            continue
        text = _str(c.get("text"))
        if found := _IMAGE_OPEN.fullmatch(text):
            images.append(found.group(1))
        elif text != _IMAGE_CLOSE:
            texts.append(text)
    return "".join(texts), images


def records_images(line: bytes) -> list[str]:
    """The image paths a rollout line records as the operator's image input."""
    if b"<image name=" not in line or b'"response_item"' not in line:
        return []
    content = _user_content(line)
    return user_parts(content)[1] if content is not None else []


def session_meta(head: bytes) -> tuple[str, str] | None:
    """A rollout's thread id and cwd from its first line (session_meta), or None."""
    first = head.split(b"\n", 1)[0]
    try:
        entry = orjson.loads(first)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(entry, dict) or entry.get("type") != "session_meta":
        return None
    payload = entry.get("payload")
    thread, cwd = (payload.get("id"), payload.get("cwd")) if isinstance(payload, dict) else (None, None)
    if not isinstance(thread, str) or not _THREAD_ID.fullmatch(thread) or not isinstance(cwd, str):
        return None  # an id is an argv word of `codex resume`: never one that reads as a flag
    return thread, cwd


def is_synthetic(text: str) -> bool:
    head = text.lstrip()
    return head.startswith(SYNTHETIC_USER_PREFIXES)


def summarize_call(name: str, arguments: object) -> str:
    """A one-line summary of a call's input: exec_command's `cmd`, else the compact JSON."""
    args: object = arguments
    if isinstance(arguments, str):
        try:
            args = orjson.loads(arguments)
        except orjson.JSONDecodeError:
            args = arguments
    if isinstance(args, dict):
        for key in ("cmd", "command", "path", "query"):
            value = args.get(key)
            if isinstance(value, list):
                value = " ".join(str(v) for v in value)
            if isinstance(value, str) and value:
                return _one_line(value)
        return _one_line(orjson.dumps(args).decode())
    return _one_line(_str(args))


def read_transcript(
    path: str, cursor: Cursor, intents: Mapping[str, str] | None = None, **limits: Unpack[Limits]
) -> TranscriptRead:
    """Messages appended to `path` since `cursor`, and the state after them.

    `intents` (call_id → "allow" | "deny") arms the approval backstop. Raises
    TranscriptUnreadable for a symlink or non-regular file; a corrupt line never raises.
    """
    armed = intents or {}
    passes = read_in_passes(path, cursor, CodexState, lambda st, seq: _Reader.start(st, seq, armed), **limits)
    return passes.transcript_read(running=next(reversed(passes.reader.running.values()), ""))


_HEAD_BYTES = 512


def _cheap_type(raw: bytes) -> bytes | None:
    """The line's top-level "type" without a JSON parse, when it sits before the payload (the
    CLI writes timestamp, ordinal, type, payload in that order); None when unsure."""
    head = raw[:_HEAD_BYTES]
    at = head.find(b'"payload"')
    at_type = head.find(b'"type":"')
    if at_type < 0 or (0 <= at < at_type):
        return None
    start = at_type + len(b'"type":"')
    end = head.find(b'"', start)
    return head[start:end] if end > 0 else None


def _str(value: object) -> str:
    return value if isinstance(value, str) else ""


def _output_text(output: object) -> str:
    if isinstance(output, str):
        return output
    if isinstance(output, dict):  # {"content": "...", "success": bool} in some shapes
        return _str(output.get("content")) or orjson.dumps(output).decode()
    if isinstance(output, list):
        return "".join(_str(c.get("text")) for c in output if isinstance(c, dict))
    return ""


def _truncate(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _one_line(text: str, limit: int = INPUT_MAX_CHARS) -> str:
    return _truncate(" ".join(text.split()), limit)


def _user_content(line: bytes) -> list[Any] | None:
    try:
        entry = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    payload = entry.get("payload") if isinstance(entry, dict) else None
    if not isinstance(payload, dict) or payload.get("type") != "message" or payload.get("role") != "user":
        return None
    content = payload.get("content")
    return content if isinstance(content, list) else None


def records_prompt(line: bytes, want: str) -> bool:
    """Whether a rollout line records `want` (normalized) as the operator's message (§2); a
    message with images has their placeholders before its text."""
    if b'"response_item"' not in line or b'"user"' not in line:
        return False
    content = _user_content(line)
    if content is None:
        return False
    text, images = user_parts(content)
    got = normalize(text)
    return got == want or (bool(images) and normalize(_PLACEHOLDERS.sub("", got)) == want)
