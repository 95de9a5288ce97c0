"""Claude Code's live channel as the provider offers it (compat §8): the hook spool folded into
what the CLI is asking or blocked on now, reconciled with the transcript's tool_results by the
provider's own scan, whether the session has started yet, and the spool's sweep. The third
floor of ClaudeCodeProvider (LiveSignals, ConnectingReporter)."""

from __future__ import annotations

import contextlib
import os
import threading
import time

from providers.bounded import put_bounded
from providers.claude_code.livesignals import SpoolView, event_time_ns, fold, sweepable
from providers.claude_code.reading import Reading
from providers.hookspool import SpoolSignature, spool_events, spool_signature
from providers.schema import Dialog, DialogKind, RunHandle, RunState

MAX_VIEWS = 256  # cached spool views, one per run
# compat §6 (readiness, classic renderer): no mode flag marks its input live; it is live within
# this long after SessionStart (the composer drew 0.4-0.5 s after it, live runs).
CLASSIC_READY_S = 1.5
POLL_S = 0.05


class Signals(Reading):
    def __init__(self) -> None:
        super().__init__()
        self._signals_guard = threading.Lock()
        # spool dir → (its signature, the tool_use_ids the transcript showed answered, the view)
        self._views: dict[str, tuple[SpoolSignature, frozenset[str], SpoolView]] = {}
        self._started: dict[str, None] = {}  # spool dirs with a SessionStart

    def spool_view(self, run: RunHandle) -> SpoolView:
        """The spool folded, with what it leaves open checked against the transcript's
        tool_results (a decline gets no closing hook). Cached on the spool's signature and
        those answered ids: the watcher calls this on every wake, and an unchanged spool costs
        one stat + listdir, plus the new bytes of the transcript while a tool is open."""
        if not run.spool_dir:
            return SpoolView()
        # The stat + listdir and the transcript scan outside the guard: a thread holding the
        # provider-wide lock across syscalls made every other run's watcher queue behind it
        # (and behind the GIL it must take back); py-spy showed watcher threads waiting here
        # at 50 busy runs.
        signature = spool_signature(run.spool_dir)
        with self._signals_guard:
            cached = self._views.get(run.spool_dir)
        if cached is None or cached[0] != signature:
            cached = (signature, frozenset(), fold(spool_events(run.spool_dir), rules_load=run.trusted))
        view = cached[2]
        open_ids = view.open_ids | cached[1]
        answered = self.tool_results.among(self.locate_transcript(run), open_ids) if open_ids else frozenset()
        if answered != cached[1]:
            cached = (
                signature,
                answered,
                fold(spool_events(run.spool_dir), answered, rules_load=run.trusted),
            )
        with self._signals_guard:
            put_bounded(self._views, run.spool_dir, cached, MAX_VIEWS)
        return cached[2]

    def pending_dialog(self, run: RunHandle) -> Dialog | None:
        return self.spool_view(run).dialog

    def blocked_state(self, run: RunHandle) -> RunState | None:
        # compat §8: a permission prompt lab has no dialog for (no PermissionRequest paired with
        # a PreToolUse): needs_input and the attach command. With one, pending_dialog offers
        # the approval; either way only the operator answers it.
        return RunState.NEEDS_INPUT if self.spool_view(run).blocked else None

    def sweep(self, run: RunHandle) -> None:
        view = self.spool_view(run)
        for name in sweepable(view, time.time_ns()):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(os.path.join(run.spool_dir, name))

    def connecting(self, run: RunHandle) -> bool:
        """compat §6 (readiness): starting until the SessionStart hook has run. (The input goes
        live about a second later; a reply waits for that itself.) Remembered once seen, so a
        started run costs no spool read."""
        if not run.spool_dir:
            return False
        with self._signals_guard:
            if run.spool_dir in self._started:
                return False
        if not session_start_ns(run):
            return True
        with self._signals_guard:
            put_bounded(self._started, run.spool_dir, None, MAX_VIEWS)
        return False

    def _asking(self, run: RunHandle) -> str:
        """What the CLI is asking now, from the live channel ("" when nothing): a picker, a
        permission prompt (compat §8: PermissionRequest as it is shown, or its reminder). A
        denial is closed by its tool_result only (compat §7 "Approvals"), which spool_view has
        already checked."""
        view = self.spool_view(run)
        if view.dialog is not None and view.dialog.kind != DialogKind.APPROVAL:
            return "a question"
        if view.dialog is not None or view.blocked or view.permission_open:
            return "permission"
        return ""


def session_start_ns(run: RunHandle) -> int:
    """When the newest SessionStart hook ran (0: not yet); without a spool, now (no signal)."""
    if not run.spool_dir:
        return time.time_ns() - int(CLASSIC_READY_S * 1e9)
    starts = [e for e in spool_events(run.spool_dir) if e.get("hook_event_name") == "SessionStart"]
    return event_time_ns(starts[-1]) if starts else 0
