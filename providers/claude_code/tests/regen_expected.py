"""Write `<name>.expected.json` beside every captured fixture (every CLI version's), from the
current parser.

    .venv/bin/python -m providers.claude_code.tests.regen_expected [NAME | VERSION/NAME ...]

Read every regenerated file against its raw fixture before accepting it: the expectations pin
what the parser does, so they are only as right as the review.
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from compat.claude_code.home import fixture_paths
from providers.claude_code.transcript import read_transcript
from providers.schema import Cursor, Dialog, Message, TranscriptRead

__all__ = ["expected_path", "fixture_id", "fixture_paths", "line_by_line", "observed"]


def _message(message: Message) -> dict[str, Any]:
    return {
        "seq": message.seq,
        "kind": str(message.kind),
        "text": message.text,
        "tool_name": message.tool_name,
        "tool_input": message.tool_input,
        "timestamp": message.timestamp,
        "native_id": message.native_id,
        "is_error": message.is_error,
        **({"detail": message.detail} if message.detail else {}),
        **({"side": message.side} if message.side else {}),
        **({"limit": message.limit, "resets_at": message.resets_at} if message.limit else {}),
        **({"attachment": message.attachment} if message.attachment else {}),
    }


def _dialog(dialog: Dialog | None) -> dict[str, Any] | None:
    if dialog is None:
        return None
    return {
        "tool_use_id": dialog.tool_use_id,
        "kind": str(dialog.kind),
        "body": dialog.body,
        "questions": [
            {
                "prompt": q.prompt,
                "options": [[o.label, o.description] for o in q.options],
                "multi": q.multi,
                "header": q.header,
            }
            for q in dialog.all_questions
        ],
        "flat": dialog.questions is None,
    }


def observed(path: Path) -> dict[str, Any]:
    """What the parser makes of one fixture, in the expected-file shape."""
    result = read_transcript(str(path), Cursor())
    return {
        "messages": [_message(m) for m in result.messages],
        "state": str(result.state),
        "dialog": _dialog(result.dialog),
        "dialogs_seen": _dialogs_seen(path),
        **({"background_seen": seen} if (seen := _background_seen(path)) else {}),
    }


def _dialogs_seen(path: Path) -> list[dict[str, Any] | None]:
    """Every pending dialog a watcher reading line by line would have shown, in order."""
    seen: list[dict[str, Any] | None] = []
    for result in line_by_line(path):
        shown = _dialog(result.dialog)
        if shown is not None and (not seen or seen[-1] != shown):
            seen.append(shown)
    return seen


def _background_seen(path: Path) -> list[list[str]]:
    """Every distinct set of background work a watcher reading line by line would have shown
    (empty when the fixture never has any)."""
    seen: list[list[str]] = []
    for result in line_by_line(path):
        shown = list(result.background)
        if not seen or seen[-1] != shown:
            seen.append(shown)
    return seen if any(seen) else []


def line_by_line(path: Path) -> Iterator[TranscriptRead]:
    """The reader's result after each line of `path` is appended to a growing copy."""
    with tempfile.TemporaryDirectory() as tmp:
        growing = Path(tmp) / path.name
        growing.touch()
        cursor = Cursor()
        for raw in path.read_bytes().splitlines(keepends=True):
            with open(growing, "ab") as f:
                f.write(raw)
            result = read_transcript(str(growing), cursor)
            cursor = result.cursor
            yield result


def fixture_id(path: Path) -> str:
    """``<version>/<event>__<variant>``: the same scenario is captured once per CLI version."""
    return f"{path.parent.name}/{path.stem}"


def expected_path(path: Path) -> Path:
    return path.with_name(path.stem + ".expected.json")


def main(names: list[str]) -> None:
    for path in fixture_paths():
        if names and path.stem not in names and fixture_id(path) not in names:
            continue
        out = expected_path(path)
        out.write_bytes(orjson.dumps(observed(path), option=orjson.OPT_INDENT_2) + b"\n")
        print(f"wrote {out}")


if __name__ == "__main__":
    main(sys.argv[1:])
