"""Builders for Claude Code 2.1.328 transcript entries (compat §1, §2, §5, §6, §11 shapes)."""

from __future__ import annotations

import itertools
from typing import Any

import orjson

_ids = itertools.count(1)

TS = "2026-12-02T10:17:09.479Z"
DECLINE_TEXT = (
    "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it "
    "was a file edit, the new_string was NOT written to the file). STOP what you are doing and "
    "wait for the user to tell you how to proceed."
)


def _uuid() -> str:
    return f"00000000-0000-4000-8000-{next(_ids):012d}"


def line(entry: dict[str, Any]) -> bytes:
    return orjson.dumps(entry) + b"\n"


def _base(kind: str, **extra: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {"parentUuid": None, "isSidechain": False, "type": kind}
    entry.update(extra)
    entry.setdefault("uuid", _uuid())
    entry.setdefault("timestamp", TS)
    entry.update({"cwd": "<WORKTREE>", "sessionId": "s", "version": "2.1.328"})
    return entry


def user(content: Any, **extra: Any) -> dict[str, Any]:
    return _base("user", message={"role": "user", "content": content}, **extra)


def prompt(text: str, **extra: Any) -> dict[str, Any]:
    extra.setdefault("promptSource", "typed")
    return user(text, origin={"kind": "human"}, **extra)


def meta(text: str, **extra: Any) -> dict[str, Any]:
    return user(text, isMeta=True, **extra)


def caveat() -> dict[str, Any]:
    return meta(
        "<local-command-caveat>The command below was run directly in Claude Code, not sent to "
        "you as a request.</local-command-caveat>"
    )


def command_echo(name: str, args: str = "") -> dict[str, Any]:
    return user(
        f"<command-name>/{name}</command-name>\n            <command-message>{name}"
        f"</command-message>\n            <command-args>{args}</command-args>"
    )


def project_command_echo(name: str, args: str) -> dict[str, Any]:
    # compat §6: the project command's echo leads with command-message.
    return user(
        f"<command-message>{name}</command-message>\n<command-name>/{name}</command-name>\n"
        f"<command-args>{args}</command-args>"
    )


def stdout(text: str) -> dict[str, Any]:
    return user(f"<local-command-stdout>{text}</local-command-stdout>")


def system(subtype: str, **extra: Any) -> dict[str, Any]:
    return _base("system", subtype=subtype, isMeta=False, **extra)


def turn_duration() -> dict[str, Any]:
    return system("turn_duration", durationMs=257, messageCount=13)


def interrupted(for_tool: bool = False) -> dict[str, Any]:
    text = "[Request interrupted by user for tool use]" if for_tool else "[Request interrupted by user]"
    return user([{"type": "text", "text": text}], interruptedMessageId="msg_x")


def assistant(
    block: dict[str, Any],
    *,
    message_id: str = "msg_1",
    index: int = 0,
    stop_reason: str | None = "end_turn",
    **extra: Any,
) -> dict[str, Any]:
    message = {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": "claude-opus-5-5",
        "content": [block],
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }
    # compat §1: the message object comes before the top-level "type".
    entry: dict[str, Any] = {"parentUuid": "p", "isSidechain": False, "message": message}
    entry["apiBlockIndex"] = index
    entry["type"] = "assistant"
    entry["uuid"] = extra.pop("uuid", _uuid())
    entry["timestamp"] = TS
    entry.update(extra)
    return entry


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def tool_use(tool_use_id: str, name: str, tool_input: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": tool_use_id, "name": name, "input": tool_input}


def tool_result(
    tool_use_id: str,
    content: Any,
    *,
    is_error: bool = False,
    tool_use_result: Any = None,
    **extra: Any,
) -> dict[str, Any]:
    block = {"type": "tool_result", "content": content, "is_error": is_error, "tool_use_id": tool_use_id}
    return user([block], toolUseResult=tool_use_result, **extra)


def question(prompt: str, labels: list[str], *, multi: bool = False, header: str = "") -> dict[str, Any]:
    return {
        "question": prompt,
        "header": header,
        "options": [{"label": label, "description": f"The {label}"} for label in labels],
        "multiSelect": multi,
    }


def ask(tool_use_id: str, *questions: dict[str, Any], index: int = 1) -> dict[str, Any]:
    return assistant(
        tool_use(tool_use_id, "AskUserQuestion", {"questions": list(questions)}),
        message_id=f"msg_{tool_use_id}",
        index=index,
        stop_reason="tool_use",
    )


def plan(tool_use_id: str, body: str = "# Plan\n\n1. do it") -> dict[str, Any]:
    return assistant(
        tool_use(
            tool_use_id,
            "ExitPlanMode",
            {"plan": body, "planFilePath": "<HOME>/.claude/plans/p.md"},
        ),
        message_id=f"msg_{tool_use_id}",
        stop_reason="tool_use",
    )


def answered(tool_use_id: str, questions: list[dict[str, Any]], answers: dict[str, str]) -> dict[str, Any]:
    pairs = ", ".join(f'"{q}"="{a}"' for q, a in answers.items())
    return tool_result(
        tool_use_id,
        f"Your questions have been answered: {pairs}. You can now continue with these answers in mind.",
        tool_use_result={"questions": questions, "answers": answers, "annotations": {}},
    )


def declined(tool_use_id: str) -> dict[str, Any]:
    return tool_result(
        tool_use_id,
        DECLINE_TEXT,
        is_error=True,
        tool_use_result="User rejected tool use",
        toolDenialKind="user-rejected",
    )


def bookkeeping(kind: str) -> dict[str, Any]:
    shapes: dict[str, dict[str, Any]] = {
        "mode": {"type": "mode", "mode": "normal"},
        "permission-mode": {"type": "permission-mode", "permissionMode": "auto"},
        "atis-latch": {"type": "atis-latch", "atis": ""},
        "last-prompt": {"type": "last-prompt", "lastPrompt": "hello", "leafUuid": "x"},
        "tools-used": {"type": "tools-used", "tools": ["AskUserQuestion"]},
        "cost-state": {"type": "cost-state", "totalCostUSD": 0, "modelUsage": {}},
        "api-request-shape": {"type": "api-request-shape", "shape": {"messages": [{"role": "user"}]}},
        "file-history-snapshot": {"type": "file-history-snapshot", "messageId": "m", "snapshot": {}},
    }
    if kind == "attachment":
        return {
            "parentUuid": "p",
            "isSidechain": False,
            "attachment": {"type": "prompt_snapshot", "systemPrompt": ["You are…"]},
            "type": "attachment",
            "uuid": _uuid(),
            "timestamp": TS,
        }
    return shapes[kind]
