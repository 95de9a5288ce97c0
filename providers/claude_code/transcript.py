"""Claude Code 2.1.328 transcript JSONL → lab's universal Messages, state and pending dialog.

No Django. Read-through: every call reads only the bytes appended since the cursor
(providers.jsonl) and carries what later lines need in `ClaudeState`, so reading a file in any
number of increments yields exactly the messages of one whole read.

State rules (idle/working only; compat §1 "Turn end"):
  WORKING  a human prompt (typed, pasted or queued); a project command/skill expansion (the
           isMeta entry with turnCompanion, compat §6); an assistant block whose stop_reason is
           tool_use or null (streaming, aborted); a tool_result (the agent continues).
  IDLE     system/turn_duration; an assistant block with any other stop_reason (end_turn …);
           an interruption line ("[Request interrupted by user…]", which is also how a decline
           or rejection ends a turn: there is no turn_duration then); an empty transcript.
  Command echoes and their stdout never move the state: a fresh transcript holding only the
  /clear echo is IDLE, and a local command typed while idle keeps it idle.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Unpack

import orjson

from providers.bounded import put_bounded
from providers.claude_code.dialogs import (
    ASK_TOOL,
    NO_PLAN_OPTIONS,
    PLAN_OPTIONS,
    PLAN_TOOL,
    Intent,
    PlanDecision,
)
from providers.jsonl import Limits, LineReader, LinesRead, read_in_passes
from providers.keywindow import EMPTY, KeyWindow, OpenWindow
from providers.outbox import normalize
from providers.schema import (
    Cursor,
    Dialog,
    DialogKind,
    Message,
    MessageKind,
    Option,
    Question,
    RunState,
    TranscriptRead,
)

# compat §1: entry types that carry no conversation. Skipped from their top-level "type" (or,
# for attachments, their top-level "attachment" key) without a JSON parse: they are most of the
# file's bytes (api-request-shape ≈ 30 KB, prompt_snapshot ≈ 50 KB per turn).
_BOOKKEEPING = frozenset(
    {
        b"api-request-shape",
        b"api-request-blob",
        b"file-history-snapshot",
        b"file-history-delta",
        b"cost-state",
        b"mode",
        b"permission-mode",
        b"atis-latch",
        b"tools-used",
        b"last-prompt",
        b"attachment",
        b"summary",
    }
)
_HEAD_BYTES = 1024  # the top-level keys before the first nested value sit well inside this

RECENT_KEYS = 256  # dedupe window: a re-written block lands right after its first copy
RECENT_TOOLS = 64  # tool_use_id → name, to name the result that follows
MAX_PENDING = 16
MAX_QUEUED = 32
MAX_AGENTS = 32
RESULT_MAX_CHARS = 4000
INPUT_MAX_CHARS = 200

# compat §13: CLAUDE_CODE_MAX_RETRIES unset. The run's settings may change it, so lab names it
# as the default, never as this run's limit.
DEFAULT_MAX_RETRIES = 10
RETRYING = (
    "The API request failed; Claude Code is retrying it. Its transcript records neither the "
    "error nor when it tries next: the run's terminal shows both."
)

INTERRUPTED_PREFIX = "[Request interrupted by user"  # compat §1, §11
USER_REJECTED = "User rejected tool use"  # compat §2, §5: toolUseResult of a decline

_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])")
_COMMAND_NAME = re.compile(r"<command-name>(.*?)</command-name>", re.S)
_COMMAND_ARGS = re.compile(r"<command-args>(.*?)</command-args>", re.S)
_STDOUT = re.compile(r"<local-command-stdout>(.*?)(?:</local-command-stdout>|\Z)", re.S)
_STDERR = re.compile(r"<local-command-stderr>(.*?)(?:</local-command-stderr>|\Z)", re.S)
_OUTPUTS = (
    ("<local-command-stdout>", _STDOUT, False),
    ("<local-command-stderr>", _STDERR, True),
)
# compat §1: a bracketed multi-line paste is stored inside this wrapper.
_PASTED = re.compile(r'<pasted_content id="([^"]*)">\n?(.*?)\n?</pasted_content id="\1">', re.S)
# compat §13: a background agent's end arrives as a user turn wrapped in this.
_NOTIFICATION = "<task-notification>"
_NOTIFICATION_FIELD = re.compile(r"<(task-id|tool-use-id|status|summary|result)>(.*?)</\1>", re.S)
_AGENT_ID = re.compile(r"^agentId: ([A-Za-z0-9_-]+)", re.M)
_ASYNC_LAUNCH = "Async agent launched"
AGENT_TOOLS = frozenset({"Agent", "Task"})
# compat §13: the compaction summary entry wraps the model's summary in fixed framing.
_SUMMARY_LEAD = "The summary below covers the earlier portion of the conversation."
_SUMMARY_TAIL = "\n\nIf you need specific details from before compaction"
_TUI_SUMMARY_HINT = " (ctrl+o to see full summary)"
# compat §13: bash mode typed in the terminal ("!cmd") records the command, then its output.
_BASH_INPUT = re.compile(r"<bash-input>(.*?)(?:</bash-input>|\Z)", re.S)
_BASH_STDOUT = re.compile(r"<bash-stdout>(.*?)(?:</bash-stdout>|\Z)", re.S)
_BASH_STDERR = re.compile(r"<bash-stderr>(.*?)(?:</bash-stderr>|\Z)", re.S)
# compat §13: a pasted image path adds an isMeta row naming the file the image came from.
_IMAGE_SOURCE = re.compile(r"^\[Image: source: (.+)\]$", re.M)
_IMAGE_REF = "[Image #"
# compat §13: the attachment entries that carry something the operator sees in the TUI (a
# mentioned file read, a hook's message or failure); every other attachment is context for
# the model and stays skipped unparsed.
_SHOWN_ATTACHMENTS = frozenset(
    {b"file", b"hook_system_message", b"hook_non_blocking_error", b"hook_blocking_error"}
)
_ATTACHMENT_TYPE = re.compile(rb'\s*"type":\s*"([a-z_]{1,40})"')
_HOOK_FAILED_LEAD = "Failed with non-blocking status code: "
_REMINDER = re.compile(r"<system-reminder>.*?</system-reminder>\n?", re.S)
_ANALYSIS = re.compile(r"<analysis>.*?</analysis>\s*", re.S)
_SUMMARY_TAG = re.compile(r"</?summary>")


@dataclass(frozen=True, slots=True)
class PendingTool:
    tool_use_id: str
    tool_name: str
    dialog: Dialog


@dataclass(frozen=True, slots=True)
class Agent:
    """A background agent launched by an Agent tool_use and not yet reported finished."""

    tool_use_id: str
    description: str
    agent_id: str = ""


@dataclass(frozen=True, slots=True)
class ClaudeState:
    """Cursor.provider_state: what the next read needs from the lines already read."""

    state: RunState = RunState.IDLE
    pending: tuple[PendingTool, ...] = ()  # dialog tool_uses without a tool_result yet
    recent: KeyWindow = EMPTY  # dedupe keys of the last RECENT_KEYS entries/blocks
    tool_names: KeyWindow = EMPTY  # the last RECENT_TOOLS tool_use ids, valued by name
    queued: tuple[str, ...] = ()  # prompts enqueued while working, not yet dequeued
    corrupt: int = 0  # unreadable lines skipped, over the whole epoch
    oversized: int = 0
    skip_from: int | None = None  # providers.jsonl: inside an oversized line
    # compat §13: background agents: launched (by tool_use id, with the description) and not
    # yet notified finished; the Agent tool_uses still waiting for their launch result.
    agents: tuple[Agent, ...] = ()
    agent_calls: tuple[Agent, ...] = ()
    last_request: str = ""  # compat §13: the requestDigest of the newest api-request entry
    attempt: int = 1  # how often that same request was sent
    since: str = ""  # when the current turn began (the timestamp of what started it)
    running: tuple[tuple[str, str], ...] = ()  # (tool_use_id, "Name summary") without a result
    # None until the first conversation entry: True for a subagent's own file (every entry
    # isSidechain), whose entries are then the conversation rather than skipped.
    sidechain: bool | None = None
    mode_check: tuple[str, str] = ("", "")  # a plan lab approved: (tool_use_id, the mode it expects)


@dataclass(slots=True)
class _Reader(LineReader):
    """The mutable working copy of ClaudeState for one read_transcript call."""

    intents: Mapping[str, Intent] | None
    seq: int
    state: RunState
    pending: dict[str, PendingTool]
    recent: OpenWindow
    tool_names: OpenWindow
    queued: deque[str]
    corrupt: int
    oversized: int
    agents: dict[str, Agent]
    agent_calls: dict[str, Agent]
    last_request: str
    attempt: int
    sidechain: bool | None
    since: str
    running: dict[str, str]
    mode_check: tuple[str, str] = ("", "")
    messages: list[Message] = field(default_factory=list)
    stats: dict[str, int] = field(default_factory=dict)
    lines: int = 0
    bookkeeping: int = 0

    @classmethod
    def start(cls, st: ClaudeState, seq: int, intents: Mapping[str, Intent] | None) -> _Reader:
        return cls(
            intents=intents,
            seq=seq,
            state=st.state,
            pending={p.tool_use_id: p for p in st.pending},
            recent=st.recent.open(RECENT_KEYS),
            tool_names=st.tool_names.open(RECENT_TOOLS, valued=True),
            queued=deque(st.queued, maxlen=MAX_QUEUED),
            corrupt=st.corrupt,
            oversized=st.oversized,
            agents={a.tool_use_id: a for a in st.agents},
            agent_calls={a.tool_use_id: a for a in st.agent_calls},
            last_request=st.last_request,
            attempt=st.attempt,
            sidechain=st.sidechain,
            since=st.since,
            running=dict(st.running),
            mode_check=st.mode_check,
        )

    def freeze(self, skip_from: int | None) -> ClaudeState:
        return ClaudeState(
            state=self.state,
            pending=tuple(self.pending.values()),
            recent=self.recent.freeze(),
            tool_names=self.tool_names.freeze(),
            queued=tuple(self.queued),
            corrupt=self.corrupt,
            oversized=self.oversized,
            skip_from=skip_from,
            agents=tuple(self.agents.values()),
            agent_calls=tuple(self.agent_calls.values()),
            last_request=self.last_request,
            attempt=self.attempt,
            sidechain=self.sidechain,
            since=self.since,
            running=tuple(self.running.items()),
            mode_check=self.mode_check,
        )

    def dialog(self) -> Dialog | None:
        if not self.pending:
            return None
        return next(reversed(self.pending.values())).dialog

    # -- emitting -------------------------------------------------------------------------

    def seen(self, key: str) -> bool:
        """True if `key` was already read; else remember it (bounded window)."""
        return self.recent.seen(key)

    def settle(self, state: RunState, stamp: str = "") -> None:
        if state == RunState.WORKING and self.state != RunState.WORKING:
            self.since = stamp
        self.state = state
        if state == RunState.IDLE:
            # A turn that ended leaves no picker open (a decline writes its tool_result first).
            self.pending.clear()
            self.running.clear()
            self.since = ""
            self.last_request, self.attempt = "", 1

    # -- lines ----------------------------------------------------------------------------

    def feed(self, read: LinesRead) -> None:
        self.lines += len(read.lines) + len(read.skipped)
        LineReader.feed(self, read)

    def oversized_line(self, start: int, size: int) -> None:
        self.oversized += 1
        LineReader.oversized_line(self, start, size)

    def skip(self, raw: bytes) -> bool:
        cheap = _cheap_type(raw)
        if cheap == b"attachment" and (self.mode_check[0] or _attachment_type(raw) in _SHOWN_ATTACHMENTS):
            cheap = None
        if cheap in _BOOKKEEPING:
            self.bookkeeping += 1
            return True
        return False

    def entry(self, e: dict[str, Any]) -> None:
        kind = e.get("type")
        if kind in ("user", "assistant") and self.sidechain is None:
            # compat §13: a subagent's own file holds only isSidechain entries.
            self.sidechain = e.get("isSidechain") is True
        if e.get("isSidechain") is True and not self.sidechain:
            return  # a subagent's conversation inside the run's own file: not the run's
        if self.mode_check[0]:
            self.check_mode(e)
        if kind == "api-request":
            self.api_request(e)
        elif kind == "attachment":
            self.attachment(e)
        elif kind == "user":
            self.user(e)
        elif kind == "assistant":
            self.assistant(e)
        elif kind == "system":
            self.system(e)
        elif kind == "queue-operation":
            self.queue_operation(e)

    def check_mode(self, e: dict[str, Any]) -> None:
        """compat §7 (plan rows): right after an approved plan's tool_result, the CLI writes a
        `plan_mode_exit` attachment, then an `auto_mode` one only when it entered auto mode;
        the next conversation entry ends the window. A mode other than lab's click is a
        backstop warning."""
        tool_use_id, expected = self.mode_check
        kind = e.get("type")
        attachment = e.get("attachment") if kind == "attachment" else None
        if isinstance(attachment, dict):
            if attachment.get("type") != "auto_mode":
                return
            self.mode_check = ("", "")
            if expected != "auto":
                self.emit(
                    MessageKind.LIFECYCLE,
                    "lab approved the plan to ask before each action, but Claude Code switched to auto mode.",
                    timestamp=_str(e.get("timestamp")),
                    native_id=f"{tool_use_id}:backstop",
                    is_error=True,
                )
            return
        if kind not in ("user", "assistant", "system"):
            return
        self.mode_check = ("", "")
        if expected == "auto":
            self.emit(
                MessageKind.LIFECYCLE,
                "lab approved the plan into auto mode, but Claude Code did not switch to auto mode.",
                timestamp=_str(e.get("timestamp")),
                native_id=f"{tool_use_id}:backstop",
                is_error=True,
            )

    # -- user -----------------------------------------------------------------------------

    def user(self, e: dict[str, Any]) -> None:
        uuid = _str(e.get("uuid"))
        if uuid and self.seen(f"u:{uuid}"):
            return
        if e.get("isMeta") is True:
            # compat §6: a project command or skill expands into an isMeta prompt marked
            # turnCompanion; the model is called, so the turn starts here. Other isMeta
            # entries (the caveat, /context's markdown) are not human text.
            if e.get("turnCompanion") is True:
                self.settle(RunState.WORKING, _str(e.get("timestamp")))
            self.image_sources(e, uuid)
            return
        message = e.get("message")
        if e.get("isCompactSummary") is True:
            content = message.get("content") if isinstance(message, dict) else None
            self.emit(
                MessageKind.LIFECYCLE,
                "Summary of the conversation before it was compacted",
                timestamp=_str(e.get("timestamp")),
                native_id=uuid,
                detail=_compact_summary(content),
            )
            return
        content = message.get("content") if isinstance(message, dict) else None
        stamp = _str(e.get("timestamp"))
        if isinstance(content, str):
            self.user_text(content, stamp, uuid)
            return
        if not isinstance(content, list):
            return
        # compat §13: a prompt with pasted images says "[Image #1]" in its text; the image
        # blocks beside it are those, not another message.
        texts = [_str(b.get("text")) for b in content if isinstance(b, dict) and b.get("type") == "text"]
        referenced = any(_IMAGE_REF in t for t in texts)
        for block in content:
            if not isinstance(block, dict):
                continue
            block_type = block.get("type")
            if block_type == "tool_result":
                self.tool_result(block, e, stamp)
            elif block_type == "text":
                self.user_text(_str(block.get("text")), stamp, uuid)
            elif block_type == "image" and not referenced:
                self.emit(MessageKind.USER_TEXT, "[image]", timestamp=stamp, native_id=uuid)

    def user_text(self, text: str, stamp: str, uuid: str) -> None:
        if text.lstrip().startswith(_NOTIFICATION):
            self.notification(text, stamp, uuid)
            return
        if text.startswith(INTERRUPTED_PREFIX):
            self.emit(MessageKind.LIFECYCLE, text.strip("[]"), timestamp=stamp, native_id=uuid)
            self.settle(RunState.IDLE)
            return
        if "<" in text and (self.bash_mode(text, stamp, uuid) or self.local_command(text, stamp, uuid)):
            return
        text = _unwrap_paste(text).strip("\n")
        if not text.strip():
            return
        self.emit(MessageKind.USER_TEXT, text, timestamp=stamp, native_id=uuid)
        self.pending.clear()  # no picker is open while the composer takes a prompt
        self.settle(RunState.WORKING, stamp)

    def notification(self, text: str, stamp: str, uuid: str) -> None:
        """compat §13: a background agent stopped; the CLI starts the model's next turn with it."""
        fields = {m.group(1): m.group(2).strip() for m in _NOTIFICATION_FIELD.finditer(text)}
        agent = self.agents.pop(fields.get("tool-use-id", ""), None)
        agent_id = fields.get("task-id", "") or (agent.agent_id if agent else "")
        summary = fields.get("summary", "")
        if not summary:
            summary = f"Agent “{agent.description}” stopped" if agent else "A background task stopped"
        status = fields.get("status", "")
        result = fields.get("result", "")
        line = summary if not result else f"{summary}: {_one_line(result)}"
        self.emit(
            MessageKind.LIFECYCLE,
            line,
            timestamp=stamp,
            native_id=uuid,
            is_error=status not in ("", "completed"),
            detail=result,
            side=agent_id,
        )
        self.pending.clear()
        self.settle(RunState.WORKING, stamp)  # the agent's turn, not the operator's: the model answers

    def image_sources(self, e: dict[str, Any], uuid: str) -> None:
        """compat §13: the isMeta row a pasted image path adds, "[Image: source: <path>]"."""
        message = e.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        text = content if isinstance(content, str) else _result_text(content)
        for found in _IMAGE_SOURCE.finditer(text):
            self.emit(
                MessageKind.LIFECYCLE,
                f"Attached the image {found.group(1).strip()}",
                timestamp=_str(e.get("timestamp")),
                native_id=uuid,
                attachment=found.group(1).strip(),
            )

    def bash_mode(self, text: str, stamp: str, uuid: str) -> bool:
        """compat §13: a command typed in the terminal's bash mode and its output. True if
        `text` was one. The operator typed it, so it is their message, shown as the TUI does."""
        lead = text.lstrip()
        if lead.startswith("<bash-input>"):
            found = _BASH_INPUT.search(text)
            command = found.group(1).strip() if found else ""
            self.emit(MessageKind.USER_TEXT, f"! {command}", timestamp=stamp, native_id=uuid)
            self.pending.clear()
            self.settle(RunState.WORKING, stamp)  # the command runs, then the model is called
            return True
        if not lead.startswith(("<bash-stdout>", "<bash-stderr>")):
            return False
        out, err = (
            _ANSI.sub("", found.group(1)).strip("\n") if (found := pattern.search(text)) else ""
            for pattern in (_BASH_STDOUT, _BASH_STDERR)
        )
        output = "\n".join(part for part in (out, err) if part.strip()) or "(no output)"
        self.emit(
            MessageKind.TOOL_RESULT,
            _truncate(output, RESULT_MAX_CHARS),
            tool_name="Bash",
            timestamp=stamp,
            native_id=uuid,
            is_error=bool(err.strip()),
        )
        return True

    def local_command(self, text: str, stamp: str, uuid: str) -> bool:
        """A command echo, its output or its caveat (compat §6). True if `text` was one."""
        lead = text.lstrip()
        if lead.startswith("<local-command-caveat>"):
            return True
        if lead.startswith("<command-") and "<command-name>" in text:
            name_match = _COMMAND_NAME.search(text)
            args_match = _COMMAND_ARGS.search(text)
            name = name_match.group(1).strip() if name_match else ""
            if name and not name.startswith("/"):
                name = "/" + name
            args = args_match.group(1).strip() if args_match else ""
            line = f"{name} {args}".strip()
            if line:
                self.emit(MessageKind.USER_TEXT, line, timestamp=stamp, native_id=uuid)
            return True
        for tag, pattern, is_error in _OUTPUTS:
            if lead.startswith(tag):
                found = pattern.search(text)
                output = _ANSI.sub("", found.group(1)).strip() if found else ""
                # compat §13: /compact's stdout points at a TUI key; the summary is shown here.
                output = output.removesuffix(_TUI_SUMMARY_HINT)
                if output:
                    self.emit(
                        MessageKind.LIFECYCLE,
                        output,
                        timestamp=stamp,
                        native_id=uuid,
                        is_error=is_error,
                    )
                return True
        return False

    def tool_result(self, block: dict[str, Any], e: dict[str, Any], stamp: str) -> None:
        tool_use_id = _str(block.get("tool_use_id"))
        is_error = block.get("is_error") is True
        result = _result_text(block.get("content"))
        side = ""
        call = self.agent_calls.pop(tool_use_id, None)
        if call is not None and not is_error and _ASYNC_LAUNCH in result:
            # compat §13: the Agent tool returns at once; the agent works in the background.
            found = _AGENT_ID.search(result)
            side = found.group(1) if found else ""
            put_bounded(self.agents, tool_use_id, Agent(tool_use_id, call.description, side), MAX_AGENTS)
            result = f"Agent “{call.description}” is working in the background"
        self.emit(
            MessageKind.TOOL_RESULT,
            _truncate(result, RESULT_MAX_CHARS),
            tool_name=self.tool_name(tool_use_id),
            timestamp=stamp,
            native_id=tool_use_id,
            is_error=is_error,
            side=side,
        )
        self.running.pop(tool_use_id, None)
        self.settle(RunState.WORKING, stamp)
        pending = self.pending.pop(tool_use_id, None)
        intent = self.intents.get(tool_use_id) if self.intents and tool_use_id else None
        problem = ""
        if intent is not None and intent.kind == DialogKind.APPROVAL:
            problem = _approval_backstop(intent, block, e)
        elif pending is not None and intent is not None:
            problem = _backstop(intent, pending.dialog.kind, e, is_error)
            if not problem and intent.plan_mode and not is_error and isinstance(e.get("toolUseResult"), dict):
                self.mode_check = (tool_use_id, intent.plan_mode)
        if problem:
            backstop_id = f"{tool_use_id}:backstop"
            self.emit(MessageKind.LIFECYCLE, problem, timestamp=stamp, native_id=backstop_id, is_error=True)

    def tool_name(self, tool_use_id: str) -> str:
        return self.tool_names.get(tool_use_id)

    # -- assistant ------------------------------------------------------------------------

    def assistant(self, e: dict[str, Any]) -> None:
        message = e.get("message")
        if not isinstance(message, dict):
            return
        content = message.get("content")
        stop = message.get("stop_reason")
        message_id = _str(message.get("id")) or _str(e.get("uuid"))
        # compat §1: one entry per content block, numbered by apiBlockIndex.
        first = e.get("apiBlockIndex")
        first = first if isinstance(first, int) and not isinstance(first, bool) else 0
        stamp = _str(e.get("timestamp"))
        is_error = e.get("isApiErrorMessage") is True
        self.last_request, self.attempt = "", 1  # a response came: the next request is new
        for position, block in enumerate(content if isinstance(content, list) else ()):
            if not isinstance(block, dict):
                continue
            if message_id and self.seen(f"a:{message_id}:{first + position}"):
                continue
            block_type = block.get("type")
            if block_type == "text":
                text = _str(block.get("text"))
                if text.strip():
                    # An isAbortedMidStream entry still shows what had streamed (compat §1);
                    # an API error the CLI gave up on is its own synthetic entry (compat §13).
                    limit, resets_at = api_limit(e) if is_error else ("", 0)
                    self.emit(
                        MessageKind.LIFECYCLE if is_error else MessageKind.ASSISTANT_TEXT,
                        text,
                        timestamp=stamp,
                        native_id=_str(e.get("uuid")),
                        is_error=is_error,
                        limit=limit,
                        resets_at=resets_at,
                    )
            elif block_type in ("thinking", "redacted_thinking"):
                # compat §13: its own entry, signed; redacted thinking carries no readable text.
                thought = _str(block.get("thinking")) if block_type == "thinking" else ""
                self.emit(MessageKind.THINKING, thought, timestamp=stamp, native_id=_str(e.get("uuid")))
            elif block_type == "tool_use":
                self.tool_use(block, stamp)
        self.settle(RunState.WORKING if stop in ("tool_use", None) else RunState.IDLE, stamp)

    def tool_use(self, block: dict[str, Any], stamp: str) -> None:
        tool_use_id = _str(block.get("id"))
        name = _str(block.get("name"))
        tool_input = block.get("input")
        tool_input = tool_input if isinstance(tool_input, dict) else {}
        self.emit(
            MessageKind.TOOL_USE,
            "",
            tool_name=name,
            tool_input=summarize_input(name, tool_input),
            timestamp=stamp,
            native_id=tool_use_id,
            # compat §5: the CLI injects the plan's Markdown into ExitPlanMode's recorded input.
            detail=_str(tool_input.get("plan")) if name == PLAN_TOOL else "",
        )
        if not tool_use_id:
            return
        self.tool_names.add(tool_use_id, name)
        running = f"{name} {summarize_input(name, tool_input)}".strip()
        put_bounded(self.running, tool_use_id, running, RECENT_TOOLS)
        if name in AGENT_TOOLS:
            call = Agent(tool_use_id, _str(tool_input.get("description")))
            put_bounded(self.agent_calls, tool_use_id, call, MAX_AGENTS)
        dialog = dialog_for(tool_use_id, name, tool_input)
        if dialog is not None:
            put_bounded(self.pending, tool_use_id, PendingTool(tool_use_id, name, dialog), MAX_PENDING)

    # -- attachments ----------------------------------------------------------------------

    def attachment(self, e: dict[str, Any]) -> None:
        """compat §13: a file an @-mention made the CLI read, and what hooks said."""
        attachment = e.get("attachment")
        if not isinstance(attachment, dict):
            return
        uuid = _str(e.get("uuid"))
        if uuid and self.seen(f"u:{uuid}"):
            return
        kind = attachment.get("type")
        stamp = _str(e.get("timestamp"))
        if kind == "file":
            path = _str(attachment.get("displayPath")) or _str(attachment.get("filename"))
            if path:
                self.emit(MessageKind.LIFECYCLE, f"Read {path}", timestamp=stamp, native_id=uuid)
            return
        if kind not in ("hook_system_message", "hook_non_blocking_error", "hook_blocking_error"):
            return
        # hookName is "<event>:<tool>" for tool hooks, "<event>" for the others.
        event, _, tool = _str(attachment.get("hookName")).partition(":")
        event = _str(attachment.get("hookEvent")) or event or "A"
        label = f"{event} hook" + (f" ({tool})" if tool else "")
        if kind == "hook_system_message":
            said = _ANSI.sub("", _str(attachment.get("content"))).strip()
            if said:
                self.emit(MessageKind.LIFECYCLE, f"{label}: {said}", timestamp=stamp, native_id=uuid)
            return
        code = attachment.get("exitCode")
        status = f" (exit status {code})" if isinstance(code, int) and not isinstance(code, bool) else ""
        said = _ANSI.sub("", _str(attachment.get("stderr")) or _str(attachment.get("content"))).strip()
        said = said.removeprefix(_HOOK_FAILED_LEAD)
        blocked = " and blocked it" if kind == "hook_blocking_error" else ""
        line = f"{label} failed{status}{blocked}" + (f": {_one_line(said)}" if said else "")
        detail = said if _one_line(said) != said else ""  # a long or multi-line stderr in full
        self.emit(MessageKind.LIFECYCLE, line, timestamp=stamp, native_id=uuid, is_error=True, detail=detail)

    # -- system and queue -----------------------------------------------------------------

    def system(self, e: dict[str, Any]) -> None:
        uuid = _str(e.get("uuid"))
        if uuid and self.seen(f"u:{uuid}"):
            return
        subtype = e.get("subtype")
        content = e.get("content")
        stamp = _str(e.get("timestamp"))
        if subtype == "turn_duration":
            self.settle(RunState.IDLE)
            if e.get("pendingBackgroundAgentCount") == 0:
                self.agents.clear()  # compat §13: none left running, whatever was missed
        elif subtype == "compact_boundary":
            # compat §13: /compact or automatic compaction; the file goes on, the state with it.
            metadata = e.get("compactMetadata")
            trigger = metadata.get("trigger") if isinstance(metadata, dict) else None
            how = {"manual": " (/compact)", "auto": " (automatically, the context was full)"}
            self.emit(
                MessageKind.LIFECYCLE,
                "Conversation compacted" + how.get(_str(trigger), ""),
                timestamp=stamp,
                native_id=uuid,
            )
        elif subtype == "local_command":
            # compat §6: /context writes its echo and its stdout as system entries.
            if isinstance(content, str) and "<" in content:
                self.local_command(content, stamp, uuid)
        elif subtype == "informational" and isinstance(content, str):
            text = _ANSI.sub("", content).strip()
            if text:
                level = e.get("level")
                self.emit(
                    MessageKind.LIFECYCLE,
                    text,
                    timestamp=stamp,
                    native_id=uuid,
                    is_error=level in ("warning", "error"),
                )
        # stop_hook_summary and subtypes 2.1.328 was not seen writing carry no message.

    def api_request(self, e: dict[str, Any]) -> None:
        """compat §13: every attempt at a model request writes one of these; a retry repeats
        the previous one's requestDigest before any response was recorded."""
        digest = _str(e.get("requestDigest"))
        if not digest:
            return
        if digest != self.last_request:
            self.last_request, self.attempt = digest, 1
            return
        self.attempt += 1
        self.count("api_retry")
        # One chat line per failing request, at its first retry: a message never changes once
        # shown (the page appends by seq), so the count goes to the working status instead
        # (retry_status), which the page re-renders as it changes.
        if self.attempt == 2:
            self.emit(
                MessageKind.LIFECYCLE,
                RETRYING,
                timestamp=_str(e.get("timestamp")),
                native_id=_str(e.get("id")),
                is_error=True,
            )

    def retry_status(self) -> str:
        """What the working status says while a request is being retried ("" if none is)."""
        if self.attempt < 2 or not self.last_request:
            return ""
        return (
            f"the API request, retry {self.attempt - 1} "
            f"(Claude Code gives up after {DEFAULT_MAX_RETRIES} by default; the terminal says why)"
        )

    def queue_operation(self, e: dict[str, Any]) -> None:
        # compat §1: a prompt sent while working is enqueued, later dequeued and then written
        # as a user entry (which is the message); the queue itself only tells delivery.
        operation = e.get("operation")
        if operation == "enqueue":
            self.queued.append(_unwrap_paste(_str(e.get("content"))).strip("\n"))
            self.count("queue_enqueue")
        elif operation == "dequeue":
            if self.queued:
                self.queued.popleft()
            self.count("queue_dequeue")


def read_transcript(
    path: str, cursor: Cursor, intents: Mapping[str, Intent] | None = None, **limits: Unpack[Limits]
) -> TranscriptRead:
    """Messages appended to `path` since `cursor`, and the state and dialog after them.

    `max_passes` stops after that many byte-budget passes (the cursor says where): a caller
    that indexes a huge file gets a checkpoint per pass instead of one at the end.

    `intents` (tool_use_id → Intent) arms the answer backstop. Raises TranscriptUnreadable for
    a symlink or non-regular file; a corrupt or oversized line never raises.
    """
    passes = read_in_passes(
        path, cursor, ClaudeState, lambda st, seq: _Reader.start(st, seq, intents), **limits
    )
    reader = passes.reader
    reader.stats["lines"] = reader.lines
    reader.stats["bookkeeping"] = reader.bookkeeping
    reader.stats["bytes"] = passes.offset - passes.start_offset
    reader.stats["queued"] = len(reader.queued)
    return passes.transcript_read(
        running=reader.retry_status() or next(reversed(reader.running.values()), ""),
        dialog=reader.dialog(),
        background=tuple(a.description or "an agent" for a in reader.agents.values()),
        # compat §1: enqueued, not yet dequeued. The queue also carries a finished background
        # agent's report (compat §13), which is the CLI's own turn, not the operator's prompt.
        queued=tuple(q for q in reader.queued if not q.lstrip().startswith(_NOTIFICATION)),
    )


# -- cheap skip -----------------------------------------------------------------------------


def _cheap_type(raw: bytes) -> bytes | None:
    """The entry's top-level "type" from its first bytes, or b"attachment"; None if unsure.

    Only keys before the first nested `{`/`[` are looked at: in valid JSON a `"type":` found
    there is a top-level key (an escaped quote inside a string cannot match). A line that does
    not end in `}` is left to the parser, so a truncated line is reported, not skipped.
    Works on offsets, not slices: bookkeeping lines run to 50 KB.
    """
    if raw[-1:] != b"}" and not raw.rstrip().endswith(b"}"):
        return None
    limit = min(len(raw), _HEAD_BYTES)
    nest = raw.find(b"{", 1, limit)
    if nest < 0:
        nest = limit
    bracket = raw.find(b"[", 1, nest)
    if bracket >= 0:
        nest = bracket
    at = raw.find(b'"type":', 0, nest)
    if at > 0:
        if raw[at - 1] == 0x5C:  # a backslash: the quote is escaped, this is string content
            return None
        value = raw[at + 7 : at + 7 + 64].lstrip()
        if value[:1] != b'"':
            return None
        close = value.find(b'"', 1)
        if close < 0 or b"\\" in value[1:close]:
            return None
        return value[1:close]
    at = raw.find(b'"attachment":', 0, nest)
    if at >= 0 and nest < limit and raw[nest] == 0x7B and not raw[at + 13 : nest].strip():
        return b"attachment"  # compat §1: attachment entries lead with this key
    return None


# -- shapes -----------------------------------------------------------------------------------


def _attachment_type(raw: bytes) -> bytes | None:
    """The nested attachment's "type" of a line _cheap_type called an attachment (its object
    follows the key at once: compat §1), or None."""
    at = raw.find(b'"attachment":', 0, _HEAD_BYTES)
    brace = raw.find(b"{", at + 13, at + 32) if at >= 0 else -1
    if brace < 0:
        return None
    found = _ATTACHMENT_TYPE.match(raw, brace + 1, brace + 80)
    return found.group(1) if found else None


def api_limit(e: dict[str, Any]) -> tuple[str, int]:
    """compat §16: an API error entry the CLI wrote for a turn a limit refused, as (Message.limit,
    Message.resets_at). A plan's usage limit is `apiError: usage_limit_reached` with the reset in
    `apiErrorParams.rate_limit_info.resetsAt` (epoch seconds); any other 429 is `error:
    rate_limit` with no reset recorded (an API key's rate limit: captured live)."""
    if e.get("apiError") == "usage_limit_reached":
        params = e.get("apiErrorParams")
        info = params.get("rate_limit_info") if isinstance(params, dict) else None
        resets = info.get("resetsAt") if isinstance(info, dict) else None
        at = int(resets) if isinstance(resets, int | float) and not isinstance(resets, bool) else 0
        return "usage", max(at, 0)
    if e.get("error") == "rate_limit" or e.get("apiErrorStatus") == 429:
        return "rate", 0
    return "", 0


def _str(value: object) -> str:
    return value if isinstance(value, str) else ""


def _compact_summary(content: object) -> str:
    """The model's summary out of the compaction entry's framing (compat §13)."""
    text = content if isinstance(content, str) else _result_text(content)
    lead = text.find(_SUMMARY_LEAD)
    if lead >= 0:
        text = text[lead + len(_SUMMARY_LEAD) :]
    tail = text.find(_SUMMARY_TAIL)
    if tail >= 0:
        text = text[:tail]
    text = _SUMMARY_TAG.sub("", _ANALYSIS.sub("", _REMINDER.sub("", text)))
    return text.strip()


def _unwrap_paste(text: str) -> str:
    if "<pasted_content" not in text:
        return text
    return _PASTED.sub(lambda m: m.group(2), text)


def _truncate(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text) - limit} more characters)"


def _one_line(text: str, limit: int = INPUT_MAX_CHARS) -> str:
    return _truncate(" ".join(text.split()), limit)


def _result_text(content: object) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts: list[str] = []
    for block in content:
        if not isinstance(block, dict):
            continue
        block_type = block.get("type")
        if block_type == "text":
            parts.append(_str(block.get("text")))
        elif block_type == "image":
            parts.append("[image]")
        elif block_type == "tool_reference":
            # compat §5: ToolSearch answers with the loaded tool's name.
            parts.append(f"[loaded {_str(block.get('tool_name'))}]")
    return "\n".join(p for p in parts if p)


_PATH_TOOLS = frozenset({"Read", "Edit", "Write", "MultiEdit", "NotebookEdit"})


def summarize_input(name: str, tool_input: Mapping[str, Any]) -> str:
    """A compact one-line summary of a tool's input, for the transcript row."""
    if not tool_input:
        return ""  # e.g. ExitPlanMode without a plan file records `{}`
    if name == "Bash" and isinstance(tool_input.get("command"), str):
        return _one_line(tool_input["command"])
    if name in _PATH_TOOLS:
        for key in ("file_path", "notebook_path", "path"):
            if isinstance(tool_input.get(key), str):
                return _one_line(tool_input[key])
    if name == ASK_TOOL:
        questions = tool_input.get("questions")
        if isinstance(questions, list):
            texts = [_str(q.get("question")) for q in questions if isinstance(q, dict)]
            return _one_line(" · ".join(t for t in texts if t))
    if name == PLAN_TOOL and isinstance(tool_input.get("planFilePath"), str):
        return _one_line(tool_input["planFilePath"])
    for key in ("pattern", "url", "query", "description", "skill"):
        if isinstance(tool_input.get(key), str):
            return _one_line(tool_input[key])
    try:
        compact = orjson.dumps(tool_input).decode()
    except TypeError:
        compact = str(tool_input)
    return _one_line(compact)


def dialog_for(tool_use_id: str, name: str, tool_input: Mapping[str, Any]) -> Dialog | None:
    """The pending dialog a dialog tool_use opens, or None for other tools and bad inputs."""
    if name == PLAN_TOOL:
        # compat §5: the CLI injects the plan's Markdown into the recorded input.
        return Dialog(
            tool_use_id=tool_use_id,
            kind=DialogKind.PLAN,
            options=PLAN_OPTIONS if _str(tool_input.get("plan")).strip() else NO_PLAN_OPTIONS,
            free_text=False,  # feedback rides on "Reject with feedback", not an Other row
            body=_str(tool_input.get("plan")),
        )
    if name != ASK_TOOL:
        return None
    raw_questions = tool_input.get("questions")
    if not isinstance(raw_questions, list):
        return None
    questions = tuple(_question(q) for q in raw_questions if isinstance(q, dict))
    if not questions:
        return None
    if len(questions) == 1:
        only = questions[0]
        return Dialog(
            tool_use_id=tool_use_id,
            kind=DialogKind.QUESTION,
            prompt=only.prompt,
            options=only.options,
            multi=only.multi,
            header=only.header,
            free_text=only.free_text,
        )
    return Dialog(tool_use_id=tool_use_id, kind=DialogKind.QUESTION, questions=questions)


def _question(raw: Mapping[str, Any]) -> Question:
    options = raw.get("options")
    return Question(
        prompt=_str(raw.get("question")),
        options=tuple(
            Option(label=_str(o.get("label")), description=_str(o.get("description")))
            for o in (options if isinstance(options, list) else ())
            if isinstance(o, dict)
        ),
        multi=raw.get("multiSelect") is True,
        header=_str(raw.get("header")),
        free_text=True,  # compat §2: the picker always adds "Type something."
    )


# -- backstop ---------------------------------------------------------------------------------


def result_mismatch(intent: Intent, e: Mapping[str, Any]) -> str:
    """What differs between `intent` and the tool_result for it in the user entry `e` ("" if
    nothing, or if `e` holds none): the backstop's check, for an answer verifying itself."""
    message = e.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    for block in content if isinstance(content, list) else ():
        if isinstance(block, dict) and block.get("type") == "tool_result":
            if block.get("tool_use_id") != intent.tool_use_id:
                continue
            entry = dict(e)
            if intent.kind == DialogKind.APPROVAL:
                return _approval_backstop(intent, block, entry)
            return _backstop(intent, intent.kind, entry, block.get("is_error") is True)
    return ""


def _backstop(intent: Intent, kind: DialogKind, e: dict[str, Any], is_error: bool) -> str:
    """What differs between the answer lab sent and what the CLI recorded; "" if nothing."""
    recorded = e.get("toolUseResult")
    declined = isinstance(recorded, str) and recorded.strip() == USER_REJECTED
    if kind == DialogKind.PLAN or intent.kind == DialogKind.PLAN:
        return _plan_backstop(intent, recorded, e, is_error, declined)
    if declined:
        return "Claude Code recorded a decline although lab answered the question."
    if is_error or not isinstance(recorded, dict):
        return "Claude Code recorded no answers although lab answered the question."
    answers = recorded.get("answers")
    answers = answers if isinstance(answers, dict) else {}
    problems: list[str] = []
    for question, expected in intent.answers:
        got = answers.get(question)
        if not isinstance(got, str):
            problems.append(f"“{question}”: no answer recorded")
        elif isinstance(expected, frozenset):
            # compat §4: labels are recorded in toggle order, joined by ", ".
            got_set = frozenset(s.strip() for s in got.split(", ") if s.strip())
            if got_set != expected:
                problems.append(f"“{question}”: lab sent {_labels(expected)}, recorded “{got}”")
        elif got.strip() != expected:
            problems.append(f"“{question}”: lab sent “{expected}”, recorded “{got}”")
    if not problems:
        return ""
    return "Claude Code recorded a different answer than lab sent: " + "; ".join(problems)


def _plan_backstop(
    intent: Intent, recorded: object, e: dict[str, Any], is_error: bool, declined: bool
) -> str:
    approved = isinstance(recorded, dict) and not is_error  # compat §5: {plan, filePath, …}
    if intent.plan_decision == PlanDecision.APPROVE:
        return "" if approved else "lab approved the plan but Claude Code recorded a rejection."
    if approved:
        return "lab rejected the plan but Claude Code recorded an approval."
    if not intent.feedback:
        return ""
    if declined:
        return "lab sent feedback on the plan but Claude Code recorded a rejection without it."
    feedback = _str(e.get("userFeedback")).strip()
    if feedback != intent.feedback:
        return f"Claude Code recorded plan feedback “{feedback}”, lab sent “{intent.feedback}”."
    return ""


# compat §7 "Approvals": a denied tool's result (Esc, or "No" + feedback) opens with this
# sentence; with feedback it ends "…the user said:\n<feedback>". An allowed tool's result is
# the tool's own output, an error or not (a failing command is still an allowed one).
REJECTED_TOOL = "The user doesn't want to proceed with this tool use."
FEEDBACK_MARK = "the user said:\n"


def _approval_backstop(intent: Intent, block: dict[str, Any], e: dict[str, Any]) -> str:
    content = _result_text(block.get("content"))
    recorded = e.get("toolUseResult")
    rejected = content.startswith(REJECTED_TOOL) or (
        isinstance(recorded, str) and recorded.strip() == USER_REJECTED
    )
    if intent.plan_decision == PlanDecision.APPROVE:
        return "lab allowed the tool but Claude Code recorded a rejection." if rejected else ""
    if not rejected:
        return "lab denied the tool but Claude Code ran it."
    if intent.feedback:
        _, mark, said = content.partition(FEEDBACK_MARK)
        if not mark:
            return "lab sent feedback with the denial but Claude Code recorded a rejection without it."
        if said.strip() != intent.feedback:
            return f"Claude Code recorded the feedback “{said.strip()}”, lab sent “{intent.feedback}”."
    return ""


def _labels(labels: frozenset[str]) -> str:
    return "“" + ", ".join(sorted(labels)) + "”"


# compat §6 (mode prefixes): the prefix that switches the composer to bash mode.
SHELL_PREFIX = "!"


def project_dir_name(cwd: str) -> str:
    # compat §1: every non-alphanumeric character of the cwd becomes '-'.
    return "".join(ch if ch.isascii() and ch.isalnum() else "-" for ch in cwd)


_RECEIPT_PASTED = re.compile(r'<pasted_content id="[^"]*">(.*?)</pasted_content id="[^"]*">', re.S)


def records_prompt(line: bytes, want: str) -> bool:
    """Whether a transcript line records `want` (normalized) as the operator's input: compat §6
    (receipts). A line ending with it counts too: text a killed lab left in the composer is
    submitted with the next message, which did land."""
    try:
        entry = orjson.loads(line)
    except orjson.JSONDecodeError:
        return False
    if not isinstance(entry, dict):
        return False
    kind = entry.get("type")
    if kind == "queue-operation" and entry.get("operation") == "enqueue":
        content = entry.get("content")
    elif kind == "user" and not entry.get("isMeta"):
        content = (entry.get("message") or {}).get("content")
    elif kind == "system" and entry.get("subtype") == "local_command":
        content = entry.get("content")  # compat §2: /context echoes as a system entry
    elif kind == "system" and entry.get("subtype") == "informational":
        # compat §6: an unknown slash command is consumed with "Unknown command: /name".
        content = entry.get("content")
        if isinstance(content, str) and content.startswith(_RECEIPT_UNKNOWN):
            return want.startswith("/") and want.split(" ", 1)[0] == content[len(_RECEIPT_UNKNOWN) :].strip()
        return False
    else:
        return False
    if isinstance(content, list) and kind == "user":
        # compat §6 (attachments): a prompt with pasted images is a text block beside them.
        content = "".join(
            _str(b.get("text")) for b in content if isinstance(b, dict) and b.get("type") == "text"
        )
    if not isinstance(content, str):
        return False
    if command := _RECEIPT_COMMAND_NAME.search(content):
        args = _RECEIPT_COMMAND_ARGS.search(content)
        return normalize(f"{command.group(1)} {args.group(1) if args else ''}") == want
    if bash := _RECEIPT_BASH_INPUT.fullmatch(content):
        return normalize(SHELL_PREFIX + bash.group(1)) == want  # compat §6: bash mode
    got = normalize(_RECEIPT_PASTED.sub(lambda m: m.group(1), content))
    return got == want or (bool(want) and got.endswith(want))


def first_prompt(path: str, max_bytes: int) -> str:
    """The first prompt the operator typed within a transcript's first `max_bytes` ("" if none
    there): what the sessions list shows to tell a conversation."""
    read = read_transcript(path, Cursor(), max_bytes=max_bytes, max_passes=1)
    return next((m.text for m in read.messages if m.kind == MessageKind.USER_TEXT), "")[:200]


def records_images(line: bytes) -> list[str]:
    """compat §13: the paths a pasted-image row names ("[Image: source: <path>]", isMeta),
    written right after the prompt that carries the images."""
    if b"[Image: source: " not in line:
        return []
    try:
        entry = orjson.loads(line)
    except orjson.JSONDecodeError:
        return []
    if not isinstance(entry, dict) or entry.get("type") != "user" or entry.get("isMeta") is not True:
        return []
    content = (entry.get("message") or {}).get("content")
    text = content if isinstance(content, str) else _result_text(content)
    return [m.group(1).strip() for m in _IMAGE_SOURCE.finditer(text)]


_RECEIPT_UNKNOWN = "Unknown command: "
_RECEIPT_BASH_INPUT = re.compile(r"<bash-input>(.*)</bash-input>", re.S)
_RECEIPT_COMMAND_NAME = re.compile(r"<command-name>([^<]*)</command-name>")
_RECEIPT_COMMAND_ARGS = re.compile(r"<command-args>([^<]*)</command-args>")
