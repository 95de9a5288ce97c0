"""Writes on runs: start, reply, interrupt, answer, end. Keyword-only, one verb each.

Every call reaches the agent only through the provider seam; the result of a reply or an
answer comes back through the transcript (read-through), never echoed locally.
"""

from __future__ import annotations

import dataclasses
import re
import secrets
import threading
from collections import deque
from collections.abc import Mapping, Sequence
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from providers.base import ConnectingReporter, LiveSignals, PromptReturner
from providers.errors import DialogNotAnswerable, PromptPending, ReplyRefused, SessionGone, StaleDialog
from providers.registry import get_provider
from providers.schema import Answer, Dialog, RunHandle, RunState, WorkspaceChoices
from providers.tmux import Tmux
from runs import commands, worktrees
from runs.models import Run
from seeding.services import agent_guard_env, default_choices, worktree_seed

RUN_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,47}$")


class RunEnded(SessionGone):
    pass


def run_handle(run: Run) -> RunHandle:
    return RunHandle(
        run_id=run.pk,
        worktree=run.worktree,
        tmux_socket=run.tmux_socket,
        tmux_session=run.tmux_session,
        session_id=run.session_id,
        transcript_path=run.transcript_path,
        spool_dir=str(spool_dir(run)),
    )


def spool_dir(run: Run) -> Path:
    return Path(settings.LAB_RUNS_DIR) / str(run.pk) / "spool"


def worktrees_root() -> Path:
    return Path(settings.DATA_DIR) / "worktrees"


def run_start(
    *,
    provider_id: str,
    repository: Path,
    branch: str,
    name: str = "",
    base_ref: str | None = None,
    options: Mapping[str, str] | None = None,
    seed: bool = True,
    choices: WorkspaceChoices | None = None,
) -> Run:
    """Make (or reuse) the branch's worktree, seed it, and start the agent's TUI in it behind
    the commit guard. `choices` default to the operator's configured ones."""
    provider = get_provider(provider_id)
    choices = choices or default_choices()
    repository = Path(repository).resolve()
    worktrees.validate_branch(branch)
    name = name or branch.rsplit("/", 1)[-1]
    if not RUN_NAME_RE.match(name):
        raise worktrees.InvalidName(
            "A run name is letters, digits, '.', '_' and '-', starting with a letter or digit."
        )
    worktree = worktrees.worktree_find(repository, branch)
    if worktree is None:
        worktree = worktrees.worktree_create(
            repository=repository,
            branch=branch,
            path=worktrees_root() / f"{name}-{secrets.token_hex(3)}",
            base_ref=base_ref,
        )
    if seed:
        worktree_seed(provider_id=provider_id, worktree=worktree, choices=choices)
    guard = agent_guard_env(provider_id=provider_id, worktree=worktree, choices=choices)
    run = Run.objects.create(
        name=name,
        provider_id=provider_id,
        repository=str(repository),
        worktree=str(worktree),
        branch=branch,
        tmux_socket=settings.LAB_TMUX_SOCKET,
        tmux_session=f"lab-{secrets.token_hex(4)}",  # lab's own name: never a user-supplied target
        spawn_options=dict(options or {}),
        attribution=choices.attribution,
        project_mcp=choices.project_servers.value,
    )
    try:
        handle = dataclasses.replace(run_handle(run), env=tuple(guard.items()))
        result = provider.spawn(handle, run.spawn_options)
    except Exception:
        run.ended_at = timezone.now()
        run.save(update_fields=["ended_at"])
        raise
    run.session_id = result.session_id
    run.transcript_path = result.transcript_path
    run.tmux_pane_pid = Tmux(run.tmux_socket).pane_pid(run.tmux_session)
    run.save(update_fields=["session_id", "transcript_path", "tmux_pane_pid"])
    return run


def _require_live(run: Run) -> RunHandle:
    if run.is_ended:
        raise RunEnded("This run has ended.")
    if not run_alive(run):
        run_mark_ended(run=run)
        raise RunEnded("This run's terminal session is gone; the run has ended.")
    return run_handle(run)


def run_reply(*, run: Run, text: str, again: bool = False) -> None:
    """Send the operator's message, unless it would act on the TUI in a way they did not ask
    for: answer a prompt on screen (PromptPending) or open a screen lab cannot drive
    (ReplyRefused). `again`: the operator chose to send a second copy of an unconfirmed one."""
    handle = _require_live(run)
    provider = get_provider(run.provider_id)
    refusal = commands.command_refusal(provider_id=run.provider_id, worktree=run.worktree, text=text.strip())
    if refusal:
        raise ReplyRefused(refusal)
    # Read from the live channel's files and the transcript, which every worker shares; the
    # provider checks again right before its first key.
    name = provider.display_name()
    if pending_dialog(run) is not None:
        raise PromptPending(f"{name} is asking a question: answer it above. Nothing was sent.")
    if isinstance(provider, LiveSignals) and provider.blocked_state(handle) is not None:
        raise PromptPending(f"{name} is asking permission: answer it first (see above). Nothing was sent.")
    provider.reply(handle, text, again=again)


def run_return_to_prompt(*, run: Run) -> bool | None:
    """Bring the TUI back to its prompt from a screen lab does not drive. True: verified back;
    False: keys sent, not back; None: the provider cannot tell or has no way. Refused (nothing
    sent) while the run asks something or works: keys would answer or interrupt it."""
    handle = _require_live(run)
    provider = get_provider(run.provider_id)
    if not isinstance(provider, PromptReturner):
        return None
    name = provider.display_name()
    if pending_dialog(run) is not None:
        raise PromptPending(f"{name} is asking a question: answer it above. Nothing was sent.")
    if isinstance(provider, LiveSignals) and provider.blocked_state(handle) is not None:
        raise PromptPending(f"{name} is asking permission: answer it first (see above). Nothing was sent.")
    from runs.transcripts import transcript_tail  # as pending_dialog: transcripts imports services

    if transcript_tail(run, limit=1).state == RunState.WORKING:
        raise ReplyRefused(f"{name} is working: use Interrupt to stop the turn. Nothing was sent.")
    return provider.return_to_prompt(handle)


def run_interrupt(*, run: Run) -> None:
    get_provider(run.provider_id).interrupt(_require_live(run))


_locks: dict[int, threading.Lock] = {}
_locks_guard = threading.Lock()


def _run_lock(run_id: int) -> threading.Lock:
    with _locks_guard:
        return _locks.setdefault(run_id, threading.Lock())


def pending_dialog(run: Run) -> Dialog | None:
    """The dialog the agent waits on now: the live channel first (it often knows before the
    transcript has the tool_use), the transcript otherwise. The transcript is advanced first,
    so a provider that reconciles its live channel with tool_results it read (a declined
    picker gets no closing hook) answers from both."""
    from runs.transcripts import transcript_tail

    provider = get_provider(run.provider_id)
    tail = transcript_tail(run, limit=1)
    if isinstance(provider, LiveSignals):
        dialog = provider.pending_dialog(run_handle(run))
        if dialog is not None:
            return dialog
    return tail.dialog


def dialog_answer(*, run: Run, tool_use_id: str, answers: Sequence[Answer], decline: bool = False) -> None:
    """Generic guards: one answer at a time per run, for the dialog pending *now* (re-read
    under the lock), so a stale or second submit is refused and nothing is sent.

    `decline` declines the dialog; it reaches the provider as an empty answers sequence."""
    handle = _require_live(run)
    provider = get_provider(run.provider_id)
    lock = _run_lock(run.pk)
    if not lock.acquire(blocking=False):
        raise StaleDialog("Another answer to this dialog is being sent.")
    try:
        if (run.pk, tool_use_id) in _answered:
            raise StaleDialog("This dialog has already been answered.")
        dialog = pending_dialog(run)
        if dialog is None or dialog.tool_use_id != tool_use_id:
            raise StaleDialog("This dialog is no longer waiting for an answer.")
        if decline:
            answers = ()
        else:
            check_answers(dialog, answers)
        try:
            provider.answer_dialog(handle, dialog, answers)
        except DialogNotAnswerable:
            raise  # refused before anything was sent: the operator may correct and resubmit
        except SessionGone:
            raise
        except Exception:
            # Keys may have reached the TUI: never offer the same dialog a second sequence.
            _remember_answered(run.pk, tool_use_id)
            raise
        _remember_answered(run.pk, tool_use_id)
    finally:
        lock.release()


def check_answers(dialog: Dialog, answers: Sequence[Answer]) -> None:
    """The shape every provider can rely on: one answer per question, option indexes in range,
    one choice for a single-select question. Text rules are the provider's (sanitizing)."""
    questions = dialog.all_questions
    if len(answers) != len(questions):
        raise DialogNotAnswerable("Answer every question.")
    for question, answer in zip(questions, answers, strict=True):
        if any(not 0 <= i < len(question.options) for i in answer.choices):
            raise DialogNotAnswerable(f"“{question.prompt or 'The dialog'}”: that option does not exist.")
        if not question.multi and len(answer.choices) > 1:
            raise DialogNotAnswerable(f"“{question.prompt or 'The dialog'}”: choose one option.")
        if not answer.choices and not answer.text.strip():
            raise DialogNotAnswerable(f"“{question.prompt or 'The dialog'}”: choose an option.")


# Answers already sent, so a second submit for the same dialog is refused even before the
# transcript records the first (bounded, oldest forgotten: by then the dialog is long gone).
_answered: set[tuple[int, str]] = set()
_answered_order: deque[tuple[int, str]] = deque()
MAX_ANSWERED = 10_000


def _remember_answered(run_id: int, tool_use_id: str) -> None:
    key = (run_id, tool_use_id)
    if key in _answered:
        return
    _answered.add(key)
    _answered_order.append(key)
    while len(_answered_order) > MAX_ANSWERED:
        _answered.discard(_answered_order.popleft())


def run_alive(run: Run) -> bool:
    """The run's own TUI is still there. A session of the same name on a restarted tmux server
    is not it: the pane's pid must be the one recorded at spawn."""
    if run.is_ended:
        return False
    pid = Tmux(run.tmux_socket).pane_pid(run.tmux_session)
    return pid is not None and (run.tmux_pane_pid is None or pid == run.tmux_pane_pid)


def run_mark_ended(*, run: Run) -> None:
    with transaction.atomic():
        updated = Run.objects.filter(pk=run.pk, ended_at__isnull=True).update(ended_at=timezone.now())
    if updated:
        run.refresh_from_db(fields=["ended_at"])


def run_remove_worktree(*, run: Run, confirm: bool = False) -> None:
    """End the run if needed and remove its worktree; its branch and commits stay. Uncommitted
    work raises worktrees.UncommittedChanges unless the operator confirmed deleting it."""
    if not run.worktree:
        raise worktrees.WorktreeError("This run's worktree was already removed.")
    if not run.is_ended:
        run_end(run=run)
    worktrees.worktree_remove(repository=Path(run.repository), path=Path(run.worktree), force=confirm)
    Run.objects.filter(pk=run.pk).update(worktree="")
    run.worktree = ""


def run_end(*, run: Run) -> None:
    Tmux(run.tmux_socket).kill_session(run.tmux_session)
    run_mark_ended(run=run)


def run_state(run: Run, transcript_state: RunState, transcript_dialog: Dialog | None = None) -> RunState:
    """The state vocabulary: ended beats everything, then starting, then a live signal
    (question, needs_input) beats the transcript's idle/working."""
    if run.is_ended:
        return RunState.ENDED
    provider = get_provider(run.provider_id)
    handle = run_handle(run)
    if isinstance(provider, ConnectingReporter) and provider.connecting(handle):
        return RunState.STARTING
    if isinstance(provider, LiveSignals):
        if provider.pending_dialog(handle) is not None:
            return RunState.QUESTION
        blocked = provider.blocked_state(handle)
        if blocked is not None:
            return blocked
    if transcript_dialog is not None:
        return RunState.QUESTION
    return transcript_state
