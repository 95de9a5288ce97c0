"""Claude Code's live-test helpers over the shared ones (compat/adapter.py): its adapter
started in "ask before each action" mode, and reads of its transcript's tool results."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from compat import adapter
from compat.adapter import AdapterRun
from providers.claude_code import ClaudeCodeProvider


def spawn_adapter_run(
    tmp_path: Path, worktree: Path, options: dict[str, str] | None = None, *, trusted: bool = False
) -> AdapterRun:
    return adapter.spawn_adapter_run(
        ClaudeCodeProvider(), tmp_path, worktree, options or {"permission_mode": "default"}, trusted=trusted
    )


def recorded(run: AdapterRun, tool_use_id: str, timeout: float = 30.0) -> dict[str, Any]:
    """The transcript's user entry carrying the tool_result for `tool_use_id`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        path = run.provider.locate_transcript(run.handle)
        try:
            with open(path, "rb") as f:
                lines = f.read().splitlines()
        except FileNotFoundError:
            lines = []
        for raw in lines:
            if tool_use_id.encode() not in raw or b'"tool_result"' not in raw:
                continue
            entry = json.loads(raw)
            content = entry.get("message", {}).get("content")
            blocks = content if entry.get("type") == "user" and isinstance(content, list) else []
            if any(b.get("tool_use_id") == tool_use_id for b in blocks if isinstance(b, dict)):
                return entry
        time.sleep(0.1)
    raise AssertionError(f"no tool_result for {tool_use_id}:\n{run.pane()}")


def backstop_warnings(run: AdapterRun, tool_use_id: str) -> list[str]:
    run.refresh()
    return [m.text for m in run.messages if m.native_id == f"{tool_use_id}:backstop"]
