"""Reads on runs: the state a page shows, the dialog the agent waits on, whether its TUI lives.

Writes are in runs/services.py. Each read here asks the provider through the run's one
RunHandle (`Run.handle()`, built once per Run instance), so a watcher wake that makes several
reads resolves the run once.
"""

from __future__ import annotations

from dataclasses import dataclass

from hosts import identity
from providers.base import AgentProvider, ConnectingReporter, LiveSignals
from providers.schema import Dialog, DialogKind, RunHandle, RunState
from providers.tmux import Tmux
from runs.models import Run
from runs.transcripts import transcript_tail

# The states in which the page may offer a dialog: a question, or a permission prompt lab
# can answer (needs_input with a pending approval; a bare needs_input has none).
DIALOG_STATES = frozenset({RunState.QUESTION, RunState.NEEDS_INPUT})


def run_state(run: Run, transcript_state: RunState, transcript_dialog: Dialog | None = None) -> RunState:
    """The state vocabulary: ended beats everything, then starting, then a live signal
    (question, needs_input) beats the transcript's idle/working. A pending approval (a
    tool-permission prompt) is needs_input with a dialog the page offers; pending_dialog
    returns it."""
    if run.is_ended:
        return RunState.ENDED
    return state_from(live_state(run), transcript_state, transcript_dialog)


@dataclass(frozen=True)
class LiveView:
    """What the live channel says of a run not ended, each signal asked at most once: whether
    it is still connecting, the dialog it shows, what it is blocked on."""

    connecting: bool = False
    dialog: Dialog | None = None
    blocked: RunState | None = None

    @property
    def state(self) -> RunState | None:
        """starting, question or needs_input; None when it says nothing (then the transcript's
        state stands)."""
        if self.connecting:
            return RunState.STARTING
        if self.dialog is not None:
            # A permission prompt blocks the agent on the operator: needs_input, answerable.
            return RunState.NEEDS_INPUT if self.dialog.kind == DialogKind.APPROVAL else RunState.QUESTION
        return self.blocked


def live_view(provider: AgentProvider, handle: RunHandle) -> LiveView:
    """Ask the live channel, in the order its answers take precedence, and no further than the
    first that says something (a connecting run shows no dialog yet)."""
    if isinstance(provider, ConnectingReporter) and provider.connecting(handle):
        return LiveView(connecting=True)
    if isinstance(provider, LiveSignals):
        pending = provider.pending_dialog(handle)
        if pending is not None:
            return LiveView(dialog=pending)
        return LiveView(blocked=provider.blocked_state(handle))
    return LiveView()


def live_state(run: Run) -> RunState | None:
    """What the live channel says of a run not ended (starting, question, needs_input), or
    None when it says nothing (then the transcript's state stands)."""
    return live_view(run.provider, run.handle()).state


def state_from(
    live: RunState | None, transcript_state: RunState, transcript_dialog: Dialog | None
) -> RunState:
    """run_state of a run not ended, given its live_state."""
    if live is not None:
        return live
    if transcript_dialog is not None:
        return RunState.QUESTION
    return transcript_state


def pending_dialog(run: Run) -> Dialog | None:
    """The dialog the agent waits on now: the live channel first (it often knows before the
    transcript has the tool_use), the transcript otherwise. The transcript is advanced first,
    so a provider that reconciles its live channel with tool_results it read (a declined
    picker gets no closing hook) answers from both. The provider is resolved once."""
    provider = run.provider
    transcript_dialog = transcript_tail(run, limit=1, provider=provider).dialog
    if isinstance(provider, LiveSignals):
        dialog = provider.pending_dialog(run.handle())
        if dialog is not None:
            return dialog
    return transcript_dialog


def offered_dialog(state: RunState, live: LiveView | None, transcript_dialog: Dialog | None) -> Dialog | None:
    """The dialog a page offers in this state: the live channel's (it often knows of a picker
    before its tool_use is in the transcript), the transcript's otherwise; none outside the
    dialog states."""
    if state not in DIALOG_STATES:
        return None
    if live is not None and live.dialog is not None:
        return live.dialog
    return transcript_dialog


def run_alive(run: Run) -> bool:
    """The run's own TUI is still there. A session of the same name on a restarted tmux server
    is not it: the pane's pid must be the one recorded at spawn. A pane kept after its program
    exited (remain-on-exit, for the exit reason) is not alive either."""
    if run.is_ended:
        return False
    if not identity.serves(run.host):
        # Another host's tmux server: only its runner can tell, and a run is never ended from
        # a machine that cannot see it.
        return True
    value = Tmux(run.tmux_socket).pane_format(run.tmux_session, "#{pane_pid} #{pane_dead}")
    if value is None:
        return False
    pid, _, dead = value.partition(" ")
    if dead == "1" or not pid.isdigit():
        return False
    return run.tmux_pane_pid is None or int(pid) == run.tmux_pane_pid
