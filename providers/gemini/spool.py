"""Gemini's live channel: the run's spool of hook payloads, folded (compat/gemini/COMPAT.md §6).
No Django.

Facts (0.61.0, live):
  * SessionStart fires at launch ("startup") and after /clear ("clear") with the session's
    `transcript_path`: the newest one is the run's transcript.
  * BeforeTool fires before a call's confirmation; then Notification{notification_type:
    "ToolPermission"} when it is shown, with `details` (type, command, diff …). No payload
    carries a call id: a confirmation pairs with the newest BeforeTool not yet asked about.
  * An allowed call gets AfterTool; a declined one (Esc) gets no hook at all, only the session
    file's cancelled call and "Request cancelled." (fed in as `resolved`).
  * BeforeAgent (a prompt sent), AfterAgent (a turn's end) and SessionEnd close everything.

A dialog's id is `tool-<time_ns>`, the spool time of the BeforeTool it asks about.

An `ask_user` call is a question dialog from its BeforeTool (`tool_input` holds the questions),
drawn once its Notification ran; its AfterTool, or the session's "Request cancelled.", closes it.
An `exit_plan_mode` call is a plan dialog the same way, its text the plan file the call names
(read by the adapter: `read_plan`).

Besides the hook payloads the spool holds lab's own clear markers, `<time_ns>-clear.jsonl`:
the command the operator sent, and the new session it started. A session file starts with no
message, so the marker is the new conversation's identity (its first line, the command) until
the session records a prompt (§5).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import orjson

from providers.gemini.dialogs import ASK_TOOL, PLAN_TOOL, approval_dialog, plan_dialog, question_dialog
from providers.hookspool import spool_time_ns
from providers.schema import Dialog, DialogKind

CLOSING_EVENTS = frozenset({"BeforeAgent", "AfterAgent", "SessionStart", "SessionEnd"})
CLEAR_SUFFIX = "-clear.jsonl"
# §7: the tools whose dialog is a question or a plan, not a tool confirmation.
DIALOG_TOOLS = frozenset({"ask_user", "exit_plan_mode"})
# §7: confirmation types whose first row is "Allow once" and last row (Esc) the refusal.
APPROVAL_TYPES = frozenset({"exec", "edit", "mcp", "info", "sandbox_expansion"})
MARKER_MAX_BYTES = 64 * 1024


event_time_ns = spool_time_ns  # a spool entry's time, from its name


def dialog_time_ns(dialog_id: str) -> int:
    _, _, at = dialog_id.partition("tool-")
    return int(at) if at.isdigit() else 0


def current_transcript(events: Iterable[dict[str, Any]], valid: Callable[[str], bool]) -> str:
    """The newest SessionStart's transcript_path that `valid` accepts ("" when none)."""
    best, best_at = "", -1
    for event in events:
        if event.get("hook_event_name") != "SessionStart":
            continue
        path = event.get("transcript_path")
        at = event_time_ns(str(event.get("_spool_name", "")))
        if isinstance(path, str) and valid(path) and at >= best_at:
            best, best_at = path, at
    return best


def newest_marker(spool_dir: str) -> tuple[str, int]:
    """lab's newest clear marker in the spool and its time ("", 0 when none)."""
    try:
        names = [n for n in os.listdir(spool_dir) if n.endswith(CLEAR_SUFFIX)] if spool_dir else []
    except FileNotFoundError:
        names = []
    if not names:
        return "", 0
    name = max(names, key=event_time_ns)
    return os.path.join(spool_dir, name), event_time_ns(name)


def marker_line(command_line: str, session: str, stamp: str) -> bytes:
    """The marker's one line, as the reader shows it (a `lab_command` record, transcript.py)."""
    return orjson.dumps(
        {"type": "lab_command", "content": command_line, "session": session, "timestamp": stamp}
    )


def marker_session(data: bytes) -> str:
    """The session file a marker's line names ("" when unreadable)."""
    try:
        entry = orjson.loads(data.split(b"\n", 1)[0])
    except orjson.JSONDecodeError:
        return ""
    session = entry.get("session") if isinstance(entry, dict) else None
    return session if isinstance(session, str) else ""


@dataclass(frozen=True, slots=True)
class Pending:
    dialog: Dialog
    shown_ns: int  # when the Notification ran (0: not yet: the dialog is not drawn)
    seen_ns: int  # when its call began (BeforeTool)


@dataclass(frozen=True, slots=True)
class SpoolView:
    pending: Pending | None = None
    # A confirmation lab could not pair with a BeforeTool: a prompt lab cannot answer.
    blocked: bool = False
    unsettled_tool_ns: int = 0
    # A question or plan tool (its dialog id) the terminal shows: "Request cancelled." closes it.
    in_dialog: str = ""
    in_dialog_tool: str = ""  # its tool (ask_user, exit_plan_mode)

    @property
    def dialog(self) -> Dialog | None:
        return self.pending.dialog if self.pending else None


def fold(
    events: Iterable[dict[str, Any]],
    resolved: frozenset[str] = frozenset(),
    read_plan: Callable[[dict[str, Any]], str] | None = None,
) -> SpoolView:
    tools: dict[str, dict[str, Any]] = {}  # dialog id → BeforeTool, open ones, oldest first
    asked: set[str] = set()
    pending: Pending | None = None
    blocked = False
    in_dialog = ""  # the question or plan tool the terminal shows now
    in_dialog_tool = ""
    for event in events:
        kind = event.get("hook_event_name")
        at = event_time_ns(str(event.get("_spool_name", "")))
        if kind == "BeforeTool":
            tools[f"tool-{at}"] = {**event, "_at": at}
            if event.get("tool_name") in DIALOG_TOOLS:
                asked.add(f"tool-{at}")
                raw_input = event.get("tool_input")
                tool_input = raw_input if isinstance(raw_input, dict) else {}
                question = None
                if event.get("tool_name") == ASK_TOOL:
                    question = question_dialog(f"tool-{at}", tool_input)
                elif event.get("tool_name") == PLAN_TOOL and read_plan is not None:
                    plan = read_plan(event)
                    name = tool_input.get("plan_filename")
                    if plan.strip() and isinstance(name, str):
                        question = plan_dialog(f"tool-{at}", name, plan)
                if question is not None:
                    pending = Pending(question, 0, at)
                else:
                    # §7: a plan, or a question lab has no recipe for: the terminal's.
                    in_dialog, in_dialog_tool = f"tool-{at}", str(event.get("tool_name"))
        elif kind == "AfterTool":
            name = event.get("tool_name")
            done = next((i for i, t in tools.items() if t.get("tool_name") == name), None)
            if done is not None:
                tools.pop(done)
                if name in DIALOG_TOOLS:
                    in_dialog = ""
                if pending is not None and pending.dialog.tool_use_id == done:
                    pending = None
        elif kind == "Notification" and event.get("notification_type") == "ToolPermission":
            raw = event.get("details")
            details: dict[str, Any] = raw if isinstance(raw, dict) else {}
            if details.get("type") in DIALOG_TOOLS:
                # §7: its BeforeTool already holds the run; a question or plan is drawn now.
                if (
                    pending is not None
                    and pending.dialog.kind in (DialogKind.QUESTION, DialogKind.PLAN)
                    and not pending.shown_ns
                ):
                    pending = Pending(pending.dialog, at, pending.seen_ns)
                continue
            match = next((i for i in reversed(tools) if i not in asked), None)
            if match is None or details.get("type") not in APPROVAL_TYPES:
                blocked = True  # a confirmation lab cannot pair, or has no rows for
                continue
            asked.add(match)
            pending = Pending(
                approval_dialog(
                    match,
                    str(tools[match].get("tool_name", "")),
                    details if isinstance(details, dict) else {},
                ),
                at,
                int(tools[match]["_at"]),
            )
        elif kind in CLOSING_EVENTS:
            tools.clear()
            asked.clear()
            pending, blocked, in_dialog = None, False, ""
    if in_dialog and in_dialog in resolved:
        in_dialog = ""
    if pending is not None and pending.dialog.tool_use_id in resolved:
        pending = None
    unsettled = [t["_at"] for i, t in tools.items() if i not in asked and i not in resolved]
    return SpoolView(
        pending=pending,
        blocked=(blocked or bool(in_dialog)) and pending is None,
        unsettled_tool_ns=max(unsettled, default=0),
        in_dialog=in_dialog,
        in_dialog_tool=in_dialog_tool if in_dialog else "",
    )
