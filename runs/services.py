"""Writes on runs: start, reply, interrupt, answer, end. Keyword-only, one verb each.

Every call reaches the agent only through the provider seam; the result of a reply or an
answer comes back through the transcript (read-through), never echoed locally.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import fcntl
import json
import os
import re
import secrets
import time
from collections.abc import Iterator, Mapping, Sequence
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from hosts import identity
from providers.base import (
    RESUME_OPTION,
    AgentProvider,
    LiveSignals,
    PromptReturner,
    ResumesSessions,
    TakesAttachments,
)
from providers.errors import (
    DialogNotAnswerable,
    InvalidReply,
    PromptPending,
    ReplyRefused,
    SessionGone,
    StaleDialog,
)
from providers.registry import get_provider
from providers.safefile import read_regular, write_private
from providers.schema import Answer, Dialog, DialogKind, RunHandle, RunState, SessionInfo, WorkspaceChoices
from providers.tmux import Tmux
from providers.tui import Asking, interrupt_refusal, reply_refusal
from runs import commands
from runs.models import DialogAnswer, Run
from runs.selectors import DIALOG_STATES as DIALOG_STATES
from runs.selectors import pending_dialog as pending_dialog
from runs.selectors import run_alive as run_alive
from runs.selectors import run_state as run_state
from runs.transcripts import transcript_tail
from seeding import attachments, ship, worktrees
from seeding.services import agent_guard_env, default_choices, worktree_seed

RUN_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,47}$")


class RunEnded(SessionGone):
    pass


def run_handle(run: Run) -> RunHandle:
    return run.handle()


def spool_dir(run: Run) -> Path:
    return run.spool_dir


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
    trust: bool = False,
    resume: str = "",
) -> Run:
    """Make (or reuse) the branch's worktree, seed it, and start the agent's TUI in it behind
    the commit guard. `choices` default to the operator's configured ones. `resume`: the CLI
    session to start on (ResumesSessions), claimed by the run's row (SessionTaken).

    The repository's own agent settings load only if the CLI's record trusts the repository;
    `trust` is the operator's decision to trust it now (recorded there, so it lasts)."""
    provider = get_provider(provider_id)  # an unknown provider fails before anything is made
    choices = choices or default_choices()
    repository = Path(repository).resolve()
    worktrees.validate_branch(branch)
    checkout = worktrees.main_worktree(repository)
    if trust:
        provider.trust_repository(checkout)
    trusted = provider.repository_trusted(checkout)
    with _starting():
        name = _run_name(name, branch)
        new_branch = not worktrees.branch_exists(repository, branch)
        started_from = ship.start_branch(repository, base_ref) if new_branch else ""
        worktree = _run_worktree(repository, branch, name, base_ref)
        if seed:
            worktree_seed(provider_id=provider_id, worktree=worktree, choices=choices)
        guard = agent_guard_env(provider_id=provider_id, worktree=worktree, choices=choices)
        if resume:
            _refuse_taken(provider_id, resume)
            options = {**(options or {}), RESUME_OPTION: resume}
        # The row claims the name and the worktree; the spawn follows at once (a page that
        # finds a live run without its session would take it for ended).
        try:
            run = _create_run(
                name=name,
                provider_id=provider_id,
                repository=str(repository),
                worktree=str(worktree),
                branch=branch,
                host=identity.host_name(),
                tmux_socket=settings.LAB_TMUX_SOCKET,
                tmux_session=f"lab-{secrets.token_hex(4)}",  # lab's own name: never a user-supplied target
                spawn_options=dict(options or {}),
                base_commit=worktrees.head_commit(worktree),
                base_branch=started_from,
                attribution=choices.attribution,
                project_mcp=choices.project_servers.value,
                repository_trusted=trusted,
                resumes=resume,
            )
        except IntegrityError:
            if resume:
                raise SessionTaken(f"Session {resume} is being resumed by another live run.") from None
            raise
    try:
        return _run_spawn(run, provider_id=provider_id, guard=guard)
    except Exception:
        run.ended_at = timezone.now()
        run.save(update_fields=["ended_at"])
        raise


class SessionTaken(worktrees.WorktreeError):
    """A session a live run already has: two runs never drive one conversation."""


def _create_run(**fields: object) -> Run:
    # Its own transaction: the constraint's refusal must not poison an outer one.
    with transaction.atomic():
        return Run.objects.create(**fields)


def _refuse_taken(provider_id: str, session_id: str) -> None:
    for other in Run.objects.live().filter(provider_id=provider_id):
        if session_id in (other.session_id, other.resumes) and _in_use(other):
            raise SessionTaken(
                f"Session {session_id} is in use by the live run “{other.name}”: end it first."
            )


@dataclasses.dataclass(frozen=True)
class ResumableSession:
    info: SessionInfo
    live_run: Run | None  # the live run that has it


def run_sessions(*, run: Run) -> list[ResumableSession] | None:
    """The CLI's sessions in the run's worktree (this run's, earlier runs', and one started by
    hand there), newest first, each with the live run that has it; None when the provider
    cannot resume or the worktree is gone."""
    provider = get_provider(run.provider_id)
    # Looked up on the provider itself (isinstance with a runtime protocol caches a class's answer).
    sessions = getattr(provider, ResumesSessions.sessions.__name__, None)
    if not callable(sessions) or not run.worktree or not Path(run.worktree).is_dir():
        return None
    live = list(Run.objects.live().filter(provider_id=run.provider_id))
    out = []
    for info in sessions(Path(run.worktree)):
        holder = next((r for r in live if info.session_id in (r.session_id, r.resumes)), None)
        out.append(ResumableSession(info, holder))
    return out


def run_resume(*, run: Run, session_id: str) -> Run:
    """A new run on the branch of `run` (an ended one), starting its CLI on `session_id`."""
    return run_start(
        provider_id=run.provider_id,
        repository=Path(run.repository),
        branch=run.branch,
        options={k: v for k, v in run.spawn_options.items() if k != RESUME_OPTION},
        resume=session_id,
    )


# Seeding and spawning take seconds; a run row older than this with no pane was never started.
SPAWN_GRACE = datetime.timedelta(minutes=2)
RUN_NAME_RULE = "letters, digits, '.', '_' and '-', starting with a letter or digit, at most 48"


class InvalidRunName(worktrees.WorktreeError, ValueError):
    field = "name"


@contextlib.contextmanager
def _starting() -> Iterator[None]:
    """One run start at a time on this machine, from the collision checks to the Run row that
    claims the name and the worktree: two starts for one branch never share a folder."""
    root = worktrees_root()
    root.mkdir(parents=True, exist_ok=True)
    # Non-blocking and no symlink: a FIFO planted here would hang every run start.
    flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(root / ".lab-start.lock", flags, 0o600)
    except OSError as exc:
        raise worktrees.WorktreeError(
            f"lab cannot open its start lock {root / '.lab-start.lock'} ({exc.strerror}); "
            "it must be a plain file: remove it and start again."
        ) from None
    with os.fdopen(fd, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _in_use(run: Run) -> bool:
    """A live run holds its worktree and name; one whose TUI is gone is marked ended now. A run
    still spawning (no pane pid yet, for SPAWN_GRACE) holds them too."""
    spawning = run.tmux_pane_pid is None and timezone.now() - run.created_at < SPAWN_GRACE
    if spawning or run_alive(run):
        return True
    run_mark_ended(run=run)
    return False


def _run_name(name: str, branch: str) -> str:
    """The operator's name, refused when a live run has it; else the branch's last part, made
    unique among the live runs (-2, -3, …)."""
    live = Run.objects.live()
    if name:
        if not RUN_NAME_RE.match(name):
            raise InvalidRunName(f"A run name is {RUN_NAME_RULE}.")
        if any(_in_use(r) for r in live.filter(name=name)):
            raise InvalidRunName(f"A live run is already called {name!r}: choose another name.")
        return name
    base = re.sub(r"[^A-Za-z0-9._-]", "-", branch.rsplit("/", 1)[-1]).lstrip("._-")[:44] or "run"
    taken = {r.name for r in live.filter(name__startswith=base) if _in_use(r)}
    candidate, n = base, 1
    while candidate in taken:
        n += 1
        candidate = f"{base}-{n}"
    return candidate


def _run_worktree(repository: Path, branch: str, name: str, base_ref: str | None) -> Path:
    """The branch's worktree: a new one lab makes, or an existing linked worktree of the
    branch that no live run uses. Never the operator's main checkout, never a folder another
    live run works in."""
    path = worktrees_root() / f"{name}-{secrets.token_hex(3)}"
    found = worktrees.worktree_find(repository, branch)
    if found is None:
        if worktrees.branch_exists(repository, branch):
            if base_ref:
                raise worktrees.UnknownRef(
                    f"Branch {branch!r} already exists: a start ref applies only to a new branch.",
                    field="base_ref",
                )
            return worktrees.worktree_checkout(repository=repository, branch=branch, path=path)
        return worktrees.worktree_create(repository=repository, branch=branch, path=path, base_ref=base_ref)
    if found == worktrees.main_worktree(repository):
        raise worktrees.BranchInUse(
            f"Branch {branch!r} is checked out in your main checkout ({found}). lab never runs an "
            "agent or seeds files there: choose a new branch name."
        )
    for other in Run.objects.live().filter(worktree=str(found), host=identity.host_name()):
        if _in_use(other):
            raise worktrees.BranchInUse(
                f"Branch {branch!r} is in use by the live run {other.name!r} (in {found}). End that "
                "run first, or choose a new branch name."
            )
    if base_ref:
        raise worktrees.UnknownRef(
            f"Branch {branch!r} already exists: a start ref applies only to a new branch.", field="base_ref"
        )
    return found


def _run_spawn(run: Run, *, provider_id: str, guard: Mapping[str, str]) -> Run:
    provider = get_provider(provider_id)
    handle = dataclasses.replace(run_handle(run), env=tuple(guard.items()))
    result = provider.spawn(handle, run.spawn_options)
    run.session_id = result.session_id
    run.transcript_path = result.transcript_path
    run.tmux_pane_pid = Tmux(run.tmux_socket).pane_pid(run.tmux_session)
    run.save(update_fields=["session_id", "transcript_path", "tmux_pane_pid"])
    return run


class KeyboardHeld(ReplyRefused):
    """Someone types into the run's terminal from the Terminal view: the chat's keys would
    race theirs."""


def _refuse_if_keyboard_held(run: Run) -> None:
    holder = run.keyboard_holder()
    if holder:
        name = get_provider(run.provider_id).display_name()
        raise KeyboardHeld(
            f"{holder} holds the keyboard of {name}'s terminal (the Terminal view): the chat sends "
            "nothing while it is held, so the two never type at once. Nothing was sent."
        )


def _require_live(run: Run) -> RunHandle:
    if run.is_ended:
        raise RunEnded("This run has ended.")
    if not run_alive(run):
        run_mark_ended(run=run)
        raise RunEnded("This run's terminal session is gone; the run has ended.")
    return run_handle(run)


def run_reply(
    *, run: Run, text: str, again: bool = False, uploads: Sequence[attachments.Upload] = ()
) -> None:
    """Send the operator's message, unless it would act on the TUI in a way they did not ask
    for: answer a prompt on screen (PromptPending) or open a screen lab cannot drive
    (ReplyRefused). `again`: the operator chose to send a second copy of an unconfirmed one.
    `uploads` go with it, each checked before anything is saved or sent (InvalidReply says
    which and the limit), then saved in the worktree where the agent reads them."""
    handle = _require_live(run)
    _refuse_if_keyboard_held(run)
    provider = get_provider(run.provider_id)
    # The capability is looked up on the provider itself: isinstance with a runtime protocol
    # caches a class's first answer.
    send_files = getattr(provider, TakesAttachments.reply_with_attachments.__name__, None)
    if uploads and not callable(send_files):
        raise InvalidReply(f"{provider.display_name()} takes no attachments from lab. Nothing was sent.")
    try:
        attachments.check_all(list(uploads))
    except attachments.AttachmentRefused as exc:
        raise InvalidReply(f"{exc} Nothing was sent.") from None
    refusal = commands.command_refusal(provider_id=run.provider_id, worktree=run.worktree, text=text.strip())
    if refusal:
        raise ReplyRefused(refusal)
    # Read from the live channel's files and the transcript, which every worker shares; the
    # provider checks again right before its first key.
    _refuse_if_asking(run, handle, provider)
    if not uploads:
        provider.reply(handle, text, again=again)
        return
    assert send_files is not None  # checked above, before anything was saved
    try:
        saved = attachments.save(Path(run.worktree), list(uploads))
    except attachments.AttachmentRefused as exc:
        raise InvalidReply(f"{exc} Nothing was sent.") from None
    send_files(handle, text, saved, again=again)


def _refuse_if_asking(run: Run, handle: RunHandle, provider: AgentProvider) -> None:
    """Keys sent now would answer what the agent asks: refuse, saying what it asks."""
    asking = _asking(pending_dialog(run))
    if asking is None and isinstance(provider, LiveSignals) and provider.blocked_state(handle) is not None:
        asking = Asking("permission")  # a prompt lab offers no dialog for: only the terminal answers
    if asking is not None:
        raise PromptPending(reply_refusal(provider.display_name(), asking))


def _asking(dialog: Dialog | None) -> Asking | None:
    """What a pending dialog asks, in the words every refusal uses."""
    if dialog is None:
        return None
    if dialog.kind == DialogKind.APPROVAL:
        return Asking("permission", "allow or deny it")
    return Asking("a question", "answer or decline it")


def run_return_to_prompt(*, run: Run) -> bool | None:
    """Bring the TUI back to its prompt from a screen lab does not drive. True: verified back;
    False: keys sent, not back; None: the provider cannot tell or has no way. Refused (nothing
    sent) while the run asks something or works: keys would answer or interrupt it."""
    handle = _require_live(run)
    _refuse_if_keyboard_held(run)
    provider = get_provider(run.provider_id)
    if not isinstance(provider, PromptReturner):
        return None
    _refuse_if_asking(run, handle, provider)
    name = provider.display_name()
    if transcript_tail(run, limit=1).state == RunState.WORKING:
        raise ReplyRefused(f"{name} is working: use Interrupt to stop the turn. Nothing was sent.")
    return provider.return_to_prompt(handle)


def run_interrupt(*, run: Run) -> None:
    """Stop the turn, unless the agent is asking something: an interrupt's key would answer it
    (Claude Code's and Codex's Esc denies the tool, declines the question), an answer nobody
    chose, and an answer already on its way would then land in the composer as a prompt. The
    provider checks again under the lock its answers take (providers/base.py)."""
    handle = _require_live(run)
    _refuse_if_keyboard_held(run)
    provider = get_provider(run.provider_id)
    asking = _asking(pending_dialog(run))
    if asking is not None:
        raise PromptPending(interrupt_refusal(provider.display_name(), asking, key="key"))
    provider.interrupt(handle)


def dialog_answer(*, run: Run, tool_use_id: str, answers: Sequence[Answer], decline: bool = False) -> Dialog:
    """Generic guards: one answer at a time per run, one answer ever per dialog, for the dialog
    pending *now* (re-read after the claim), so a stale or second submit is refused and
    nothing is sent. The claim is a database row, so it holds across lab's workers.

    `decline` declines the dialog; it reaches the provider as an empty answers sequence.
    Returns the dialog answered, as read after the claim."""
    handle = _require_live(run)
    _refuse_if_keyboard_held(run)
    provider = get_provider(run.provider_id)
    claim = _claim_answer(run, tool_use_id)
    sent = False
    try:
        dialog = pending_dialog(run)
        if dialog is None or dialog.tool_use_id != tool_use_id:
            raise StaleDialog("This dialog is no longer waiting for an answer.")
        if decline:
            answers = ()
        else:
            check_answers(dialog, answers)
        try:
            provider.answer_dialog(handle, dialog, answers)
        except (DialogNotAnswerable, SessionGone):
            raise  # refused before anything was sent: the operator may correct and resubmit
        except Exception:
            sent = True  # keys may have reached the TUI: never offer the dialog a second sequence
            raise
        sent = True
    finally:
        if sent:
            DialogAnswer.objects.filter(pk=claim.pk).update(state=DialogAnswer.State.SENT)
        else:
            DialogAnswer.objects.filter(pk=claim.pk).delete()
    return dialog


# A claim still `sending` after this long belongs to a worker that died mid-answer (an answer
# is bounded well below it, compat §7): it counts as sent, since some keys may have landed.
STALE_CLAIM_S = 120


def _claim_answer(run: Run, tool_use_id: str) -> DialogAnswer:
    """Insert the claim or raise StaleDialog. The unique constraints decide between racing
    workers; nothing in process memory does."""
    cutoff = timezone.now() - timedelta(seconds=STALE_CLAIM_S)
    stale = DialogAnswer.objects.filter(run=run, state=DialogAnswer.State.SENDING, created_at__lt=cutoff)
    stale.update(state=DialogAnswer.State.SENT)
    try:
        with transaction.atomic():
            return DialogAnswer.objects.create(run=run, tool_use_id=tool_use_id)
    except IntegrityError:
        pass
    same = (
        DialogAnswer.objects.filter(run=run, tool_use_id=tool_use_id).values_list("state", flat=True).first()
    )
    if same == DialogAnswer.State.SENT:
        raise StaleDialog("This dialog has already been answered.")
    if same is None:  # the run's one in-flight claim is for another dialog
        raise StaleDialog("Another answer for this run is being sent; try again when it has landed.")
    raise StaleDialog("Another answer to this dialog is being sent.")


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


@dataclasses.dataclass(frozen=True, slots=True)
class RunExit:
    """How the agent's process ended, when lab saw it go: its exit status and the last lines
    its terminal showed (the CLI's own words on why, e.g. a failed start)."""

    status: int | None
    output: str


EXIT_STATUS_WAIT_S = 1.0


EXIT_FILE_MAX_BYTES = 1024 * 1024  # a pane's last lines and a status: far less in practice


def exit_file(run: Run) -> Path:
    return Path(settings.LAB_RUNS_DIR) / str(run.pk) / "exit.json"


def run_exit(run: Run) -> RunExit | None:
    """The recorded exit of an ended run; None when lab did not see the process exit (the
    operator ended it, or the session vanished with its tmux server)."""
    try:
        # The run's folder holds the spool the agent writes into: a regular file, bounded.
        data = json.loads(read_regular(exit_file(run), EXIT_FILE_MAX_BYTES))
    except (OSError, ValueError):
        return None
    status = data.get("status")
    return RunExit(status=status if isinstance(status, int) else None, output=str(data.get("output", "")))


def _record_exit(run: Run) -> None:
    """If the run's program has exited and tmux kept its pane, keep the pane's last lines and
    exit status for the run page, then close the session (it has nothing more to show)."""
    tmux = Tmux(run.tmux_socket)
    dead = tmux.pane_exit(run.tmux_session)
    # tmux marks the pane dead when its terminal closes and learns the status when it reaps the
    # process, a moment later.
    deadline = time.monotonic() + EXIT_STATUS_WAIT_S
    while dead is not None and dead[1] is None and time.monotonic() < deadline:
        time.sleep(0.02)
        dead = tmux.pane_exit(run.tmux_session)
    if dead is None or (run.tmux_pane_pid is not None and dead[0] != run.tmux_pane_pid):
        return
    path = exit_file(run)
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        record = json.dumps({"status": dead[1], "output": tmux.final_output(run.tmux_session)})
        # 0600 whatever the umask (the pane's last lines may show a secret); never through a link.
        write_private(path, record.encode())
    tmux.kill_session(run.tmux_session, pane_pid=dead[0])


def run_mark_ended(*, run: Run) -> None:
    _record_exit(run)
    with transaction.atomic():
        updated = Run.objects.filter(pk=run.pk, ended_at__isnull=True).update(ended_at=timezone.now())
    if updated:
        run.refresh_from_db(fields=["ended_at"])


def worktree_users(run: Run) -> list[Run]:
    """The other live runs working in this run's worktree (runs from before lab refused a
    shared branch, or an operator's manual start)."""
    if not run.worktree:
        return []
    others = Run.objects.live().filter(worktree=run.worktree, host=run.host).exclude(pk=run.pk)
    return [other for other in others if _in_use(other)]


def run_remove_worktree(*, run: Run, confirm: bool = False) -> None:
    """End the run if needed and remove its worktree; its branch and commits stay. Uncommitted
    work raises worktrees.UncommittedChanges unless the operator confirmed deleting it."""
    if not run.worktree:
        raise worktrees.WorktreeError("This run's worktree was already removed.")
    if sharing := worktree_users(run):
        raise worktrees.BranchInUse(
            f"The live run {sharing[0].name!r} works in this worktree: lab removes it only when "
            "no live run uses it."
        )
    if not run.is_ended:
        run_end(run=run)
    worktrees.worktree_remove(repository=Path(run.repository), path=Path(run.worktree), force=confirm)
    Run.objects.filter(pk=run.pk).update(worktree="")
    run.worktree = ""


def run_end(*, run: Run) -> None:
    """Kill the run's own TUI — the identity run_alive checks, never whatever session has
    since taken its name — and mark the run ended."""
    Tmux(run.tmux_socket).kill_session(run.tmux_session, pane_pid=run.tmux_pane_pid)
    run_mark_ended(run=run)
