"""Claude Code's side of the live-TUI harness: its readiness footer, its argv and where it
writes transcripts, plus predicates over its transcript lines (compat/live.py is the shared part).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from compat.claude_code.home import claude_binary, project_dir_name
from compat.live import LiveTUI


class ClaudeTUI(LiveTUI):
    """The real ``claude`` TUI: started with ``--session-id`` so its transcript path is known."""

    # Footer text that means the composer is up (auto/plan/accept-edits modes show the first,
    # manual mode shows "⏸ manual mode on · ? for shortcuts").
    ready_re = re.compile(r"shift\+tab to cycle|\? for shortcuts")

    def __init__(
        self,
        env: dict[str, str],
        cwd: Path,
        *,
        session_id: str | None = None,
        width: int = 120,
        height: int = 45,
        binary: Path | None = None,
    ) -> None:
        super().__init__(
            env, cwd, binary=binary or claude_binary(), session_id=session_id, width=width, height=height
        )

    def start(self, *extra: str, session_id_arg: bool = True) -> ClaudeTUI:
        super().start(*(["--session-id", self.session_id] if session_id_arg else []), *extra)
        return self

    @property
    def project_dir(self) -> Path:
        return self.home / ".claude" / "projects" / project_dir_name(self.cwd)

    @property
    def transcript_path(self) -> Path:
        return self.project_dir / f"{self.session_id}.jsonl"

    def transcripts(self) -> list[Path]:
        """All transcript files of this cwd, oldest first (mtime)."""
        if not self.project_dir.is_dir():
            return []
        return sorted(self.project_dir.glob("*.jsonl"), key=lambda p: p.stat().st_mtime)


# -- predicates over parsed transcript lines


def assistant_texts(lines: Iterable[dict[str, Any]]) -> list[str]:
    out = []
    for e in lines:
        if e.get("type") == "assistant":
            for b in e.get("message", {}).get("content", []) or []:
                if isinstance(b, dict) and b.get("type") == "text":
                    out.append(b.get("text", ""))
    return out


def has_assistant_text(needle: str) -> Callable[[list[dict[str, Any]]], bool]:
    return lambda lines: any(needle in t for t in assistant_texts(lines))


def tool_uses(lines: Iterable[dict[str, Any]], name: str | None = None) -> list[dict[str, Any]]:
    out = []
    for e in lines:
        if e.get("type") == "assistant":
            for b in e.get("message", {}).get("content", []) or []:
                if (
                    isinstance(b, dict)
                    and b.get("type") == "tool_use"
                    and (name is None or b.get("name") == name)
                ):
                    out.append(b)
    return out


def tool_results(lines: Iterable[dict[str, Any]]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(entry, tool_result block) pairs."""
    out = []
    for e in lines:
        if e.get("type") == "user":
            c = e.get("message", {}).get("content")
            if isinstance(c, list):
                for b in c:
                    if isinstance(b, dict) and b.get("type") == "tool_result":
                        out.append((e, b))
    return out


def user_texts(lines: Iterable[dict[str, Any]]) -> list[str]:
    out = []
    for e in lines:
        if e.get("type") == "user":
            c = e.get("message", {}).get("content")
            if isinstance(c, str):
                out.append(c)
            elif isinstance(c, list):
                out += [b.get("text", "") for b in c if isinstance(b, dict) and b.get("type") == "text"]
    return out


def turn_ended(lines: list[dict[str, Any]]) -> bool:
    return any(e.get("type") == "system" and e.get("subtype") == "turn_duration" for e in lines)


def count_turn_durations(lines: list[dict[str, Any]]) -> int:
    return sum(1 for e in lines if e.get("type") == "system" and e.get("subtype") == "turn_duration")
