"""Codex's live channel: the run's spool of hook payloads, folded (compat/codex/COMPAT-adapter.md
§6). No Django.

Facts (0.171.0, live):
  * SessionStart fires at a thread's first submit (the rollout is written lazily then), with
    `transcript_path` and `source` "startup" (launch, /new) or "clear" (/clear).
  * PermissionRequest fires before the approval prompt is drawn, with the tool's name and input
    but no tool_use_id: it pairs with the newest PreToolUse of that tool without a PostToolUse.
  * An approved call gets PostToolUse (when it finished) then Stop at the turn's end; a declined
    one (Esc) aborts the turn and gets no hook at all: only the rollout's function_call_output
    ("aborted by user") and turn_aborted close it (fed in as `resolved`).

The hook payloads (`<time_ns>-<pid>.json`) are read by providers/hookspool.py, as every adapter's
are. Besides them, the spool holds lab's own markers:
`<time_ns>-clear.jsonl`, written when lab sent the clear command and the CLI confirmed it. The
marker is the new conversation's identity until its rollout exists (§5).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import orjson

from providers.codex.dialogs import approval_dialog
from providers.hookspool import spool_time_ns
from providers.schema import Dialog

CLEAR_SUFFIX = "-clear.jsonl"
CLOSING_EVENTS = frozenset({"Stop", "SessionStart", "UserPromptSubmit"})


event_time_ns = spool_time_ns  # a spool entry's time, from its name


@dataclass(frozen=True, slots=True)
class Identity:
    """Where the run's current conversation is: a rollout a SessionStart named, or lab's clear
    marker when the new thread has not written its rollout yet."""

    path: str
    at_ns: int


def current_identity(spool_dir: str, events: Iterable[dict[str, Any]], *, valid: Any) -> Identity | None:
    """The newest of the SessionStart paths (`valid(path)` checks each) and lab's clear markers."""
    best: Identity | None = None
    for event in events:
        if event.get("hook_event_name") != "SessionStart":
            continue
        path = event.get("transcript_path")
        if isinstance(path, str) and valid(path):
            at = event_time_ns(str(event.get("_spool_name", "")))
            if best is None or at >= best.at_ns:
                best = Identity(path, at)
    try:
        markers = [n for n in os.listdir(spool_dir) if n.endswith(CLEAR_SUFFIX)] if spool_dir else []
    except FileNotFoundError:
        markers = []
    for name in markers:
        at = event_time_ns(name)
        if best is None or at > best.at_ns:
            best = Identity(os.path.join(spool_dir, name), at)
    return best


def write_clear_marker(spool_dir: str, command_line: str, time_ns: int, stamp: str) -> str:
    """The new conversation's first line: the command the operator sent, as the reader shows
    it (a `lab_command` line, transcript.py)."""
    name = f"{time_ns:020d}{CLEAR_SUFFIX}"
    path = os.path.join(spool_dir, name)
    tmp = os.path.join(spool_dir, f".{name}.tmp")
    line = orjson.dumps({"timestamp": stamp, "type": "lab_command", "payload": {"text": command_line}})
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, line + b"\n")
    finally:
        os.close(fd)
    os.rename(tmp, path)
    return path


@dataclass(frozen=True, slots=True)
class Pending:
    """An approval the CLI shows now: its PermissionRequest, paired with its PreToolUse."""

    dialog: Dialog
    shown_ns: int  # when the PermissionRequest ran (the prompt is drawn just after)
    seen_ns: int = 0  # when its tool began (PreToolUse): an Esc sent since then stopped it


@dataclass(frozen=True, slots=True)
class SpoolView:
    pending: Pending | None = None
    # A PermissionRequest lab could not pair with a PreToolUse: a prompt lab cannot answer.
    blocked: bool = False
    # When the newest tool began (PreToolUse) that neither finished nor asked yet (0: none).
    unsettled_tool_ns: int = 0
    posted: frozenset[str] = frozenset()  # tool_use_ids with a PostToolUse

    @property
    def dialog(self) -> Dialog | None:
        return self.pending.dialog if self.pending else None


def fold(events: Iterable[dict[str, Any]], resolved: frozenset[str] = frozenset()) -> SpoolView:
    pres: dict[str, dict[str, Any]] = {}  # tool_use_id → PreToolUse, open ones only
    posted: set[str] = set()
    pending: Pending | None = None
    blocked = False
    asked: set[str] = set()
    for event in events:
        kind = event.get("hook_event_name")
        at = event_time_ns(str(event.get("_spool_name", "")))
        if kind == "PreToolUse":
            tool_use_id = event.get("tool_use_id")
            if isinstance(tool_use_id, str) and tool_use_id:
                pres[tool_use_id] = {**event, "_at": at}
        elif kind == "PostToolUse":
            tool_use_id = str(event.get("tool_use_id", ""))
            posted.add(tool_use_id)
            pres.pop(tool_use_id, None)
            if pending is not None and pending.dialog.tool_use_id == tool_use_id:
                pending = None
        elif kind == "PermissionRequest":
            tool = event.get("tool_name")
            match = next(
                (i for i, p in reversed(pres.items()) if p.get("tool_name") == tool and i not in asked),
                None,
            )
            if match is None:
                blocked = True
                continue
            asked.add(match)
            raw_input = event.get("tool_input")
            tool_input: dict[str, Any] = raw_input if isinstance(raw_input, dict) else {}
            seen = pres[match].get("_at")
            pending = Pending(
                approval_dialog(match, str(tool), tool_input), at, seen if isinstance(seen, int) else at
            )
        elif kind in CLOSING_EVENTS:
            pres.clear()
            pending, blocked = None, False
    if pending is not None and pending.dialog.tool_use_id in resolved:
        pending = None
    unsettled = [p["_at"] for i, p in pres.items() if i not in asked and i not in resolved]
    return SpoolView(
        pending=pending,
        blocked=blocked and pending is None,
        unsettled_tool_ns=max(unsettled, default=0),
        posted=frozenset(posted),
    )
