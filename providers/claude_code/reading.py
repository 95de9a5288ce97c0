"""Reading Claude Code's transcripts: where the current one is (the clear/epoch rule), a
background agent's own, the mapping into lab's messages, and the backstop's recorded intents
(compat §1, §5, §13). The second floor of ClaudeCodeProvider."""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Hashable
from pathlib import Path

from providers.bounded import put_bounded
from providers.claude_code import transcript
from providers.claude_code.dialogs import Intent
from providers.claude_code.process import Process
from providers.claude_code.tool_results import ToolResults
from providers.hookspool import spool_events, spool_signature
from providers.safefile import UnsafeFile, read_head
from providers.schema import Cursor, RunHandle, TranscriptRead

_AGENT_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")  # compat §13: agentId in the launch result
UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
# One pass of read_transcript: a first read of a big transcript goes in passes of this much, so
# its peak stays small (the index calls again until the cursor stops; appends fit in one).
READ_BUDGET = 512 * 1024
# The backstop's intents (docs/architecture.md, "Dialog answering"): in memory, per tool_use_id, bounded.
MAX_INTENTS = 100
MAX_FIRST_SEEN = 1000  # dialogs whose tool_use a transcript read showed (the settle anchor)
MAX_LOCATED = 256  # located transcripts, one per run
NEW_LINES_CHUNK = 64 * 1024 * 1024  # NewLines' bytes per call, bounded: callers poll, the rest comes next


class Reading(Process):
    def __init__(self) -> None:
        super().__init__()
        # One instance per process (providers.registry): this state outlives a request.
        self._reading_guard = threading.Lock()
        self._intents: dict[str, Intent] = {}
        self._first_seen: dict[str, int] = {}  # tool_use_id → time_ns
        self._located: dict[str, tuple[Hashable, str]] = {}
        self.tool_results = ToolResults()

    def locate_transcript(self, run: RunHandle) -> str:
        """compat §5: /clear writes a new <uuid>.jsonl and SessionStart(source=clear) names it.
        The newest SessionStart in the spool wins; the spawn-time path otherwise."""
        if not run.spool_dir:
            return run.transcript_path
        # Called on every watcher wake and socket catch-up: re-read the spool only when it
        # changed (one stat + listdir otherwise).
        key = (spool_signature(run.spool_dir), run.transcript_path)
        with self._reading_guard:
            cached = self._located.get(run.spool_dir)
        if cached is not None and cached[0] == key:
            return cached[1]
        located = run.transcript_path
        root = self.transcript_root().resolve()
        for event in reversed(spool_events(run.spool_dir)):
            if event.get("hook_event_name") != "SessionStart":
                continue
            path = event.get("transcript_path")
            if isinstance(path, str) and self._is_transcript_path(path, root):
                located = path
                break
        with self._reading_guard:
            put_bounded(self._located, run.spool_dir, (key, located), MAX_LOCATED)
        return located

    @staticmethod
    def _is_transcript_path(path: str, root: Path) -> bool:
        p = Path(path)
        if ".." in p.parts or p.suffix != ".jsonl" or not UUID_RE.match(p.stem):
            return False
        if p.parent.parent != root:
            return False
        # The project dir must really be under the root: a symlinked one could lead out of it
        # (O_NOFOLLOW guards only the last component).
        return os.path.realpath(p.parent) == str(root / p.parent.name)

    def side_transcript(self, run: RunHandle, side: str) -> str:
        """compat §13: a background agent writes <session dir>/<session id>/subagents/
        agent-<agentId>.jsonl beside the session's own transcript."""
        located = self.locate_transcript(run)
        if not located or not _AGENT_ID.fullmatch(side):
            return ""
        session = Path(located).with_suffix("")
        path = session / "subagents" / f"agent-{side}.jsonl"
        # Resolved whole: a symlink anywhere below the session's project dir (a symlinked
        # subagents folder) would lead the read outside the transcript tree.
        expected = Path(os.path.realpath(session.parent)) / session.name / "subagents" / path.name
        if os.path.realpath(path) != str(expected):
            return ""
        return str(path) if path.is_file() else ""

    def read_transcript(self, path: str, cursor: Cursor) -> TranscriptRead:
        with self._reading_guard:
            intents = dict(self._intents)
        # One READ_BUDGET pass per call: bounded memory, and the caller's index gets a checkpoint
        # per pass of a huge file (it calls again until the cursor stops moving).
        read = transcript.read_transcript(path, cursor, intents, max_bytes=READ_BUDGET, max_passes=1)
        if read.dialog is not None:
            with self._reading_guard:
                if read.dialog.tool_use_id not in self._first_seen:
                    # The settle anchor when the transcript shows the picker before the spool
                    # does (an answer settles from the spool's signs or from its own start
                    # when no read saw it).
                    put_bounded(self._first_seen, read.dialog.tool_use_id, time.time_ns(), MAX_FIRST_SEEN)
        return read

    def first_seen_ns(self, tool_use_id: str) -> int | None:
        """When a transcript read first showed this dialog's tool_use (None: none did)."""
        with self._reading_guard:
            return self._first_seen.get(tool_use_id)

    def intents(self) -> dict[str, Intent]:
        """A copy of the backstop's recorded intents (tests, diagnostics)."""
        with self._reading_guard:
            return dict(self._intents)

    def _record_intent(self, intent: Intent) -> None:
        with self._reading_guard:
            # The oldest is evicted beyond MAX_INTENTS: its check stays silent.
            put_bounded(self._intents, intent.tool_use_id, intent, MAX_INTENTS)


class NewLines:
    """The complete lines appended to a transcript since `offset`, call by call, at most
    NEW_LINES_CHUNK bytes a call; a partial last line waits for its newline. A missing file has
    none yet, and neither has anything but a regular file."""

    def __init__(self, path: str, offset: int) -> None:
        self.path, self.offset, self.pending = path, offset, b""

    def read(self) -> list[bytes]:
        try:
            chunk = read_head(self.path, NEW_LINES_CHUNK, offset=self.offset)
        except FileNotFoundError:
            return []
        except UnsafeFile:
            return []  # the transcript reader says what is wrong with the file
        self.offset += len(chunk)
        *lines, self.pending = (self.pending + chunk).split(b"\n")
        return lines


def transcript_size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except FileNotFoundError:
        return 0
