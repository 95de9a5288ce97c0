"""One RunView per wake: what a run shows now, derived once and handed to everything that shows
it (the state panel, the runs list's row and the feed, the run page).

The provider is resolved once, the transcript located and read once, the live channel asked
once; the state and the dialog the page offers follow from those without asking again. The
watcher builds one per wake from the index it has just advanced (`from_read`); a page or a runs
list builds one per run it shows (`run_view`). docs/architecture.md, "One view per wake".
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from providers.base import AgentProvider, UsageReporter
from providers.hookspool import one_look
from providers.schema import Dialog, RunHandle, RunState, Usage
from runs import services
from runs.limits import Limit, current_limit, limit_text, usage_summary
from runs.models import Run
from runs.selectors import LiveView, live_view, offered_dialog, state_from
from runs.transcripts import PAGE, Tail, transcript_tail

EMPTY = Tail(path="", epoch="", messages=[], state=RunState.IDLE, dialog=None, next_seq=0)


@dataclass(frozen=True)
class RunView:
    run: Run
    provider: AgentProvider
    handle: RunHandle
    tail: Tail  # what the transcript says now (its messages only when the caller asked for some)
    live: LiveView | None  # None: not asked (an ended run, or a watcher that knew it quiet)
    state: RunState
    dialog: Dialog | None  # the dialog the page offers, in a dialog state only

    @property
    def path(self) -> str:
        return self.tail.path

    @cached_property
    def limit(self) -> Limit | None:
        """The limit the run stopped on (its transcript's last line), if it did."""
        if self.run.is_ended or self.state != RunState.IDLE or self.tail.last is None:
            return None
        return current_limit([self.tail.last])

    @cached_property
    def usage(self) -> Usage | None:
        """What the CLI last reported about the context and the quota (None: nothing yet, or a
        CLI that reports none)."""
        if self.run.is_ended or not isinstance(self.provider, UsageReporter):
            return None
        try:
            return self.provider.usage(self.handle)
        except (OSError, ValueError):
            return None

    @property
    def provider_name(self) -> str:
        return self.provider.display_name()  # the only name lab shows for the agent

    def panel_context(self) -> dict[str, object]:
        """What the state panel (runs/detail.html#panel) shows: the same keys on the page and
        in the watcher's pushed panel, so the two never disagree."""
        run, tail = self.run, self.tail
        return {
            "run": run,
            "state": self.state,
            "dialog": self.dialog,
            "exit": services.run_exit(run) if run.is_ended else None,
            "background": tail.background if not run.is_ended else (),
            "since": tail.since,
            "running": tail.running,
            "queued": tail.queued,
            "provider_name": self.provider_name,
            "limit": self.limit,
            "limit_text": limit_text(self.limit) if self.limit is not None else "",
            # Every live run says what its CLI reported, "not reported" included.
            "usage": usage_summary(self.usage) if not run.is_ended else None,
        }


def from_read(
    run: Run, provider: AgentProvider, handle: RunHandle, tail: Tail, live: LiveView | None
) -> RunView:
    """The view of what a caller has just read: the transcript (its index advanced) and the
    live channel (None when it was not asked)."""
    if run.is_ended:
        state = RunState.ENDED
    else:
        state = state_from(live.state if live is not None else None, tail.state, tail.dialog)
    return RunView(
        run=run,
        provider=provider,
        handle=handle,
        tail=tail,
        live=live,
        state=state,
        dialog=offered_dialog(state, live, tail.dialog),
    )


def run_view(
    run: Run, *, limit: int = PAGE, read: bool = True, provider: AgentProvider | None = None
) -> RunView:
    """A run's view for a page: its transcript's tail (`limit` messages) read once, then the
    live channel asked once (after the read: a provider that reconciles its live channel with
    the tool_results it read answers from both). `read=False`: an ended run's row, which shows
    nothing of the transcript. `provider`: the run's, when the caller has resolved it."""
    provider = provider or run.provider
    handle = run.handle()
    with one_look():  # locating the transcript and the live signals list the spool once
        tail = transcript_tail(run, limit, provider=provider) if read else EMPTY
        live = live_view(provider, handle) if not run.is_ended else None
    return from_read(run, provider, handle, tail, live)
