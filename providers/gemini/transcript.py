"""Gemini CLI 0.61.0 session JSONL → lab's universal Messages and idle/working state.

No Django. Read-through like the other adapters (providers.jsonl): every call reads only what
was appended since the cursor and carries what later lines need in `GeminiState`, so reading a
file in any number of increments gives exactly the messages of one whole read.

Facts (compat/gemini/COMPAT.md §2, §3):
  * Line 1 is the session's metadata (`sessionId`, `kind`); then message records
    `{"id", "timestamp", "type": user|gemini|info|error|warning, "content", …}`.
  * A record may be written again under the same `id` with more fields: a gemini record first
    without `toolCalls`, then (once every call finished) with them and their results. lab shows
    what a record adds, once: its text at first sight, each call when its result is recorded.
  * `{"$set": {…}}` patches the session; with `messages` it replaces the whole list (at start, and
    after a cancel). A message lab showed stays shown: the chat keeps what the TUI showed.
  * After "Request cancelled." the CLI appends the earlier history again under new ids (the
    gemini records then hold API parts, not a string) before its `$set messages`: a replay,
    never shown twice.
  * `{"$rewindTo": id}` drops that message and everything after it from the CLI's history.
  * An `ask_user` call's output is `{"answers": {"<question index>": "<answer>"}}`;
    `exit_plan_mode`'s begins "Plan approved. Switching to …" or "Plan rejected. …". A call's id
    is the CLI's own, which no hook carries: lab's intent for it (dialogs.QuestionIntent) is the
    one recorded for the same questions (plan file) whose BeforeTool ran while the call did
    (from its record's time to its result's), the newest if two did (§7).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Unpack

import orjson

from providers.gemini.dialogs import ASK_TOOL, PLAN_TOOL, QuestionIntent, question_dialog, result_mismatch
from providers.jsonl import Limits, LineReader, read_in_passes
from providers.keywindow import EMPTY, KeyWindow, OpenWindow
from providers.outbox import normalize
from providers.schema import Cursor, Message, MessageKind, RunState, TranscriptRead

RECENT_IDS = 256
RESULT_MAX_CHARS = 4000
INPUT_MAX_CHARS = 200
# compat §2: text the CLI puts in a user turn itself.
SYNTHETIC_USER_PREFIXES = ("<session_context>", "<state_snapshot>")
CANCELLED = "Request cancelled."
# compat §2: how far after the cancel a replayed record may be stamped (the replay is written
# at once, within a millisecond live; a prompt of the operator comes seconds later).
REPLAY_WINDOW_MS = 100
# compat §2: a call's status once it is over.
DONE_STATUSES = frozenset({"success", "error", "cancelled"})
# compat §7: how long before its record's time an ask_user call's BeforeTool may run (the record
# is written when the stream ends, the call was scheduled as its part arrived).
PAIR_SLACK_MS = 1000
# compat §2: the shell's result wraps what it printed.
_UNTRUSTED = ("<untrusted_context>\n", "\n</untrusted_context>")


@dataclass(frozen=True, slots=True)
class GeminiState:
    """What a later read needs from an earlier one (immutable: it lives in Cursor)."""

    state: RunState = RunState.IDLE
    since: str = ""
    running: str = ""
    shown: KeyWindow = EMPTY  # record ids whose text was shown, and call ids whose result was
    replaying: bool = False
    replay_from_ms: int = 0
    corrupt: int = 0
    skip_from: int | None = None


@dataclass
class _Reader(LineReader):
    seq: int
    state: RunState
    since: str
    running: str
    shown: OpenWindow
    replaying: bool
    replay_from_ms: int
    corrupt: int
    intents: Mapping[str, object]
    messages: list[Message] = field(default_factory=list)
    stats: dict[str, int] = field(default_factory=dict)

    @classmethod
    def start(cls, st: GeminiState, seq: int, intents: Mapping[str, object]) -> _Reader:
        return cls(
            seq=seq,
            state=st.state,
            since=st.since,
            running=st.running,
            shown=st.shown.open(RECENT_IDS),
            replaying=st.replaying,
            replay_from_ms=st.replay_from_ms,
            corrupt=st.corrupt,
            intents=intents,
        )

    def freeze(self, skip_from: int | None) -> GeminiState:
        return GeminiState(
            state=self.state,
            since=self.since,
            running=self.running,
            shown=self.shown.freeze(),
            replaying=self.replaying,
            replay_from_ms=self.replay_from_ms,
            corrupt=self.corrupt,
            skip_from=skip_from,
        )

    def settle(self, state: RunState, stamp: str = "") -> None:
        if state == RunState.WORKING and self.state != RunState.WORKING:
            self.since = stamp
        self.state = state
        if state == RunState.IDLE:
            self.since = self.running = ""

    def entry(self, e: dict[str, Any]) -> None:
        if "$set" in e:
            patch = e["$set"]
            if not isinstance(patch, dict):
                raise TypeError("$set is not an object")
            if "messages" in patch:
                # compat §2: the CLI's history replaced; what lab showed stays, a replay ends.
                self.count("snapshot")
                self.replaying = False
            return
        if "$rewindTo" in e:
            self.emit(
                MessageKind.LIFECYCLE,
                "Rewound: the conversation goes on from an earlier message; the messages after it "
                "are no longer in Gemini's history.",
                native_id=f"rewind-{_str(e.get('$rewindTo'))}",
            )
            self.settle(RunState.IDLE)
            return
        kind = e.get("type")
        record_id = _str(e.get("id"))
        if kind == "lab_command":
            # lab's clear marker (spool.py): the command the operator sent, the new
            # conversation's first line until its session records a prompt. No state change.
            self.emit(MessageKind.USER_TEXT, _str(e.get("content")), timestamp=_str(e.get("timestamp")))
            return
        if not record_id:
            self.count("metadata")  # the session's first line
            return
        stamp = _str(e.get("timestamp"))
        if self.replaying and _ms(stamp) - self.replay_from_ms > REPLAY_WINDOW_MS:
            # compat §2: the replay is written at once, stamped with the cancel's time; a later
            # record is the conversation going on (no snapshot ended the replay).
            self.replaying = False
        if self.replaying:
            self.count("replayed")
            return
        if kind == "user":
            self.user(e, record_id, stamp)
        elif kind == "gemini":
            self.gemini(e, record_id, stamp)
        elif kind in ("info", "error", "warning"):
            if record_id in self.shown:
                return
            self.shown.add(record_id)
            text = _content_text(e.get("content"))
            self.emit(
                MessageKind.LIFECYCLE, text, timestamp=stamp, native_id=record_id, is_error=kind == "error"
            )
            if kind == "error" or text == CANCELLED:
                self.settle(RunState.IDLE)
            if text == CANCELLED:
                self.replaying, self.replay_from_ms = True, _ms(stamp)

    def user(self, e: dict[str, Any], record_id: str, stamp: str) -> None:
        content = e.get("content")
        if isinstance(content, list) and any(
            isinstance(p, dict) and "functionResponse" in p for p in content
        ):
            # compat §2: the calls' results, also in the gemini record's toolCalls (read there).
            self.settle(RunState.WORKING, stamp)
            return
        text = user_text(content)
        if record_id in self.shown or not text.strip():
            self.count("synthetic")
            return
        self.shown.add(record_id)
        self.emit(MessageKind.USER_TEXT, text, timestamp=stamp, native_id=record_id)
        self.settle(RunState.WORKING, stamp)

    def gemini(self, e: dict[str, Any], record_id: str, stamp: str) -> None:
        if record_id not in self.shown:
            self.shown.add(record_id)
            for thought in e.get("thoughts") or []:
                if isinstance(thought, dict):
                    said = ": ".join(
                        s for s in (_str(thought.get("subject")), _str(thought.get("description"))) if s
                    )
                    self.emit(MessageKind.THINKING, said, timestamp=stamp, native_id=f"{record_id}-thought")
            text = _content_text(e.get("content"))
            if text:
                self.emit(MessageKind.ASSISTANT_TEXT, text, timestamp=stamp, native_id=record_id)
        calls = e.get("toolCalls")
        if calls is None:
            # compat §3: a reply with no text is the model's calls, written before they run.
            self.settle(RunState.WORKING if not _content_text(e.get("content")) else RunState.IDLE, stamp)
            return
        if not isinstance(calls, list):
            raise TypeError("toolCalls is not a list")
        cancelled = False
        for call in calls:
            if isinstance(call, dict):
                cancelled |= self.tool_call(call, stamp)
        # compat §3: calls that finished send their results back: the turn goes on.
        self.settle(RunState.IDLE if cancelled else RunState.WORKING, stamp)

    def tool_call(self, call: dict[str, Any], stamp: str) -> bool:
        call_id = _str(call.get("id"))
        status = _str(call.get("status"))
        if not call_id or call_id in self.shown or status not in DONE_STATUSES:
            return status == "cancelled"
        self.shown.add(call_id)
        name = _str(call.get("name"))
        args = call.get("args")
        asked = question_dialog("", args) if name == ASK_TOOL and isinstance(args, dict) else None
        self.emit(
            MessageKind.TOOL_USE,
            "",
            tool_name=name,
            # compat §7: a question call as its questions, its result as the TUI drew it.
            tool_input=_one_line(" · ".join(q.prompt for q in asked.all_questions))
            if asked is not None
            else summarize_call(args),
            timestamp=_str(call.get("timestamp")) or stamp,
            native_id=call_id,
        )
        output = shown = result_text(call.get("result"))
        if asked is not None and status == "success" and _str(call.get("resultDisplay")):
            shown = _str(call.get("resultDisplay"))
        if status == "cancelled":
            shown = "Cancelled before it ran (declined at its approval prompt, or interrupted)."
        self.emit(
            MessageKind.TOOL_RESULT,
            _truncate(shown, RESULT_MAX_CHARS),
            tool_name=name,
            timestamp=stamp,
            native_id=call_id,
            is_error=status != "success",
        )
        if name in (ASK_TOOL, PLAN_TOOL):
            self.question_backstop(call, status, output, stamp)
        intent = self.intents.get(call_id)
        if isinstance(intent, str) and (intent == "allow") != (status == "success"):
            wanted = "approved" if intent == "allow" else "declined"
            self.emit(
                MessageKind.LIFECYCLE,
                f"lab {wanted} this call, but Gemini recorded otherwise",
                timestamp=stamp,
                native_id=f"backstop-{call_id}",
                is_error=True,
            )
        return status == "cancelled"

    def question_backstop(self, call: dict[str, Any], status: str, output: str, stamp: str) -> None:
        """The backstop (docs/architecture.md, "Dialog answering"): a warning when the call lab
        answered recorded something else."""
        intent = question_intent(self.intents, call, stamp)
        if intent is None:
            return
        what = "plan" if intent.kind == "plan" else "question"
        if status == "cancelled":
            problem = f"Gemini CLI recorded the {what} as cancelled although lab answered it."
        else:
            problem = result_mismatch(intent, output)
        if problem:
            self.emit(
                MessageKind.LIFECYCLE,
                problem,
                timestamp=_str(call.get("timestamp")) or stamp,
                native_id=f"backstop-{_str(call.get('id'))}",
                is_error=True,
            )


def question_intent(intents: Mapping[str, object], call: dict[str, Any], stamp: str) -> QuestionIntent | None:
    """lab's intent for an ask_user (exit_plan_mode) call (module docstring): same questions
    (plan file), its BeforeTool between the call's record and its result."""
    args = call.get("args")
    if not isinstance(args, dict):
        return None
    kind = "plan" if call.get("name") == PLAN_TOOL else "question"
    if kind == "plan":
        asked: tuple[str, ...] = (_str(args.get("plan_filename")),)
    elif (dialog := question_dialog("", args)) is not None:
        asked = tuple(q.prompt for q in dialog.all_questions)
    else:
        return None
    start = _ms(stamp) - PAIR_SLACK_MS
    end = _ms(_str(call.get("timestamp")) or stamp)
    found = [
        i
        for i in intents.values()
        if isinstance(i, QuestionIntent)
        and i.kind == kind
        and i.questions == asked
        and start <= i.at_ns // 1_000_000 <= end
    ]
    return max(found, key=lambda i: i.at_ns, default=None)


def user_text(content: object) -> str:
    """The operator's text of a user record: its text parts, without the CLI's own."""
    if isinstance(content, str):
        return "" if content.lstrip().startswith(SYNTHETIC_USER_PREFIXES) else content
    if not isinstance(content, list):
        return ""
    parts = [
        p["text"]
        for p in content
        if isinstance(p, dict)
        and isinstance(p.get("text"), str)
        and not p["text"].lstrip().startswith(SYNTHETIC_USER_PREFIXES)
    ]
    return "".join(parts)


def result_text(result: object) -> str:
    """A call's result as shown: the functionResponse's output (the shell's without its
    wrapper), or its error."""
    texts = []
    for part in result if isinstance(result, list) else []:
        response = part.get("functionResponse", {}).get("response") if isinstance(part, dict) else None
        if isinstance(response, dict):
            value = response.get("output", response.get("error", ""))
            texts.append(value if isinstance(value, str) else orjson.dumps(value).decode())
    text = "\n".join(texts)
    head, tail = _UNTRUSTED
    if text.startswith(head) and text.endswith(tail):
        text = text[len(head) : -len(tail)]
    return text


def summarize_call(args: object) -> str:
    """One line for a call's input: the command, the file, the query, else compact JSON."""
    if isinstance(args, dict):
        for key in ("command", "file_path", "path", "pattern", "query", "plan_filename"):
            value = args.get(key)
            if isinstance(value, str) and value:
                return _one_line(value)
        return _one_line(orjson.dumps(args).decode())
    return _one_line(_str(args))


def read_transcript(
    path: str, cursor: Cursor, intents: Mapping[str, object] | None = None, **limits: Unpack[Limits]
) -> TranscriptRead:
    """Messages appended to `path` since `cursor`, and the state after them. `intents` (call id
    → "allow" | "deny"; dialog id → QuestionIntent) arms the backstop. A corrupt line never
    raises."""
    armed = intents or {}
    passes = read_in_passes(
        path, cursor, GeminiState, lambda st, seq: _Reader.start(st, seq, armed), **limits
    )
    return passes.transcript_read(running=passes.reader.running)


def has_prompt(data: bytes) -> bool:
    """Whether session lines record a prompt of the operator's (a user record of text)."""
    return any(
        line.startswith(b'{"id":')
        and b'"type":"user"' in line
        and user_text(_loads(line).get("content")).strip()
        for line in data.splitlines()
    )


def _loads(line: bytes) -> dict[str, Any]:
    try:
        entry = orjson.loads(line)
    except orjson.JSONDecodeError:
        return {}
    return entry if isinstance(entry, dict) else {}


def records_prompt(line: bytes, want: str) -> bool:
    """Whether a session line records `want` (normalized) as the operator's message (§4)."""
    if b'"type":"user"' not in line:
        return False
    try:
        entry = orjson.loads(line)
    except orjson.JSONDecodeError:
        return False
    if not isinstance(entry, dict) or entry.get("type") != "user":
        return False
    return normalize(user_text(entry.get("content"))) == want


def _content_text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(_str(p.get("text")) for p in content if isinstance(p, dict))
    return ""


def _ms(stamp: str) -> int:
    """An ISO timestamp in ms since the epoch (0 when it is not one)."""
    try:
        return int(datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() * 1000)
    except ValueError:
        return 0


def _str(value: object) -> str:
    return value if isinstance(value, str) else ""


def _truncate(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _one_line(text: str, limit: int = INPUT_MAX_CHARS) -> str:
    return _truncate(" ".join(text.split()), limit)
