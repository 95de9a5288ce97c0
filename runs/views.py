"""Run pages and endpoints: parse, call one service, render one partial.

Errors from the provider seam are typed (providers.errors) and become a message in the
composer with the operator's text kept, never a lost draft. Each error's status comes from the
one table (providers.errors.OUTCOMES): no view decides it on its own.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

from asgiref.sync import sync_to_async
from django.conf import settings
from django.contrib import messages
from django.core.exceptions import RequestDataTooBig
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse, QueryDict
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import HttpResponseClientRedirect, reswap

from auth_flows.services import auth_changed, provider_card
from hosts import identity
from providers.errors import ProviderError, outcome
from providers.registry import get_provider
from providers.schema import Answer, AuthFlowKind, AuthStatus, Dialog
from runs import commands, schedule, services
from runs.forms import TRUST, NewRunForm, ReplyForm
from runs.models import Run
from runs.rendering import message_html, rerender_html, whole_message_html
from runs.rows import account_quotas, host_lines, rows_of
from runs.runview import run_view
from runs.signals import poke
from runs.transcripts import PAGE, side_transcript, transcript_page, transcript_tail
from seeding import attachments, worktrees
from seeding.repository import RepositoryReview
from seeding.seeder import SeedError

_SIDE_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
# The composer's menu opens for a command word alone: "/rev", not "/review some args".
_COMMAND_WORD = re.compile(r"/(\S*)")


# `?rows=3,7`: the runs the feed says changed, at most a page of them.
_ROW_IDS = re.compile(r"[0-9]{1,18}(,[0-9]{1,18}){0,199}")
LIST_MAX = 200


@require_GET
def run_list(request: HttpRequest) -> HttpResponse:
    # The list's one writer: the page, and what static/lab/feed.js asks again when the feed says
    # a run changed: those rows alone (`?rows=`, each swapped in place), or the list alone when
    # one is not on the page yet. A state change costs one row, not the list.
    if "rows" in request.GET:
        asked = request.GET["rows"]
        if not _ROW_IDS.fullmatch(asked):
            return HttpResponse(
                f"rows= takes up to {LIST_MAX} run ids separated by commas, e.g. rows=3,7",
                status=400,
                content_type="text/plain; charset=utf-8",
            )
        runs = list(Run.objects.filter(pk__in={int(i) for i in asked.split(",")}))
        return render(request, "runs/list.html#rows", {"rows": rows_of(runs), "oob": True})
    rows = rows_of(list(Run.objects.all()[:LIST_MAX]))
    template = "runs/list.html#list" if request.htmx else "runs/list.html"  # type: ignore[attr-defined]
    hosts = host_lines()
    return render(request, template, {"rows": rows, "quotas": account_quotas(rows), "hosts": hosts})


@require_http_methods(["GET", "POST"])
def run_new(request: HttpRequest) -> HttpResponse:
    form = NewRunForm(request.POST or None)
    hosts = host_lines()
    if identity.role() == identity.WEB:
        # A web tier has no machine of its own to start on: the operator picks a host.
        return render(request, "runs/new.html", {"hosts": hosts, "pick_host": True})
    if request.method != "POST":
        return render(
            request, "runs/new.html", {"form": form, "hosts": hosts, "this_host": identity.host_name()}
        )
    review, status = None, 422
    if form.is_valid():
        provider_id = form.cleaned_data["provider"]
        review = form.review()
        auth = get_provider(provider_id).auth_status()
        if not auth.logged_in:
            return _log_in_first(request, form, provider_id, auth)
        if review is not None and review.needs_decision and not form.cleaned_data["trust"]:
            form.add_error("trust", "This repository holds settings for the agent (listed above): choose.")
        else:
            run, status = _start(form)
            if run is not None:
                if form.cleaned_data.get("continue_on_limit"):
                    schedule.set_continue(run=run, on=True)
                return redirect(run)
    return render(request, "runs/new.html", {"form": form, "review": review or _review(form)}, status=status)


@require_GET
def run_new_review(request: HttpRequest) -> HttpResponse:
    """The new-run form's account of what the repository holds, as the operator types its
    path (htmx): nothing while the path is not a git repository."""
    form = NewRunForm(request.GET)
    return render(request, "runs/new.html#review", {"review": _review(form), "form": form})


def _review(form: NewRunForm) -> RepositoryReview | None:
    """The review of a form's repository even when other fields are still wrong."""
    form.is_valid()
    try:
        return form.review()
    except (worktrees.WorktreeError, ProviderError):
        return None


def _log_in_first(request: HttpRequest, form: NewRunForm, provider_id: str, auth: AuthStatus) -> HttpResponse:
    """A TUI started logged out would only end at once: say why and offer the login right here
    (the card flips by provider.auth.changed when it is done)."""
    auth_card = provider_card(provider_id=provider_id, status=auth)
    auth_changed(provider_id, status=auth)
    key = auth_card.flow.credential_name
    if key and auth_card.flow.kind != AuthFlowKind.API_KEY:
        routes = (
            f"put an API key in the agent's environment (LAB_AGENT_ENV, as {key}) and restart lab, "
            "or log in to your account below"
        )
    elif key:
        routes = f"put an API key in the agent's environment (LAB_AGENT_ENV, as {key}) and restart lab"
    else:
        routes = "log in below"
    form.add_error(None, f"{auth_card.name} has no credential: {routes}; then start the run.")
    return render(request, "runs/new.html", {"form": form, "auth_card": auth_card}, status=422)


def _start(form: NewRunForm) -> tuple[Run | None, int]:
    """The started run, or None with the reason on the form and the page's status (a form's
    mistake is 422; a provider's error has its own, from the one table)."""
    data = form.cleaned_data
    try:
        run = services.run_start(
            provider_id=data["provider"],
            repository=data["repository"],
            branch=data["branch"],
            base_ref=data["base_ref"] or None,
            name=data["name"],
            options=form.spawn_options(),
            choices=form.choices(),
            trust=data["trust"] == TRUST,
        )
    except worktrees.WorktreeError as exc:
        # Next to the field it is about (the branch in use, the unknown ref, the name).
        form.add_error(exc.field if exc.field in form.fields else None, str(exc))
    except ProviderError as exc:
        form.add_error(None, str(exc))
        return None, outcome(exc).status
    except SeedError as exc:
        form.add_error(None, str(exc))
    else:
        return run, 200
    return None, 422


def _run_context(run: Run) -> dict[str, object]:
    # One view: the transcript read once, the live channel asked once (runs/runview.py).
    view = run_view(run, limit=PAGE)
    tail = view.tail
    return {
        **view.panel_context(),
        "epoch": tail.epoch,
        "transcript_messages": tail.messages,
        "has_earlier": tail.has_earlier,
        "last_seq": tail.next_seq - 1,
        "worktree_users": services.worktree_users(run) if run.is_ended else [],
        "form": ReplyForm(),
        "clear_command": _clear_command(run),
        "scheduled": schedule.listed(run),
    }


def _clear_command(run: Run) -> object:
    """The provider's CLEAR-role command binds "New conversation" (lab never names it)."""
    if run.is_ended or not run.worktree:
        return None
    try:
        return commands.clear_command(
            commands.run_commands(provider_id=run.provider_id, worktree=run.worktree)
        )
    except (OSError, ValueError):
        return None


@require_GET
def run_commands(request: HttpRequest, run_id: int) -> HttpResponse:
    """The chat-safe slash commands for the run's worktree, as JSON on request; else the
    composer's menu (the one renderer of it) for the text typed so far (`text`, the whole
    catalog without it), closed when that text is not a command word alone."""
    run = get_object_or_404(Run, pk=run_id)
    rows = commands.run_commands(provider_id=run.provider_id, worktree=run.worktree) if run.worktree else []
    if request.get_preferred_type(["text/html", "application/json"]) == "application/json":
        return JsonResponse(
            {
                "commands": [
                    {
                        "name": r.name,
                        "description": r.description,
                        "argument_hint": r.argument_hint,
                        "source": r.source,
                        "role": r.role.value if r.role else None,
                    }
                    for r in rows
                ]
            }
        )
    match = _COMMAND_WORD.fullmatch(request.GET.get("text", "/"))
    shown = commands.menu_rows(rows, match.group(1)) if match else []
    return render(request, "runs/detail.html#command_menu", {"run": run, "commands": shown})


@require_GET
def run_detail(request: HttpRequest, run_id: int) -> HttpResponse:
    run = get_object_or_404(Run, pk=run_id)
    if not run.is_ended and not services.run_alive(run):
        # The page opens on the truth (and the exit reason) without waiting for the watcher.
        services.run_mark_ended(run=run)
    side = request.GET.get("agent")
    if side is not None:
        return _side_page(request, run, side)
    return render(request, "runs/detail.html", _run_context(run))


@require_GET
def run_message_full(request: HttpRequest, run_id: int) -> HttpResponse:
    """One message's whole text, for a message the page shows capped (runs/rendering.py): the
    message element for htmx, the plain text for a link opened on its own."""
    run = get_object_or_404(Run, pk=run_id)
    try:
        seq = int(request.GET["seq"])
        epoch = request.GET["epoch"]
    except (KeyError, ValueError):
        return HttpResponse("epoch=<epoch>&seq=<seq> are required", status=400)
    page = transcript_page(run, before_seq=seq + 1, limit=1, epoch=epoch)
    message = page.messages[0] if page and page.messages and page.messages[0].seq == seq else None
    if message is None:
        return HttpResponse(
            "That message is not in the transcript as this page numbers it any more (it was cleared "
            "or replaced). Reload the page.",
            status=404,
            content_type="text/plain; charset=utf-8",
        )
    if request.htmx:  # type: ignore[attr-defined]
        return HttpResponse(whole_message_html(message, epoch))
    text = message.text if len(message.text) >= len(message.tool_input) else message.tool_input
    return HttpResponse(text, content_type="text/plain; charset=utf-8")


@require_GET
def run_messages(request: HttpRequest, run_id: int) -> HttpResponse:
    """An earlier page of the transcript, for scrolling up (the page opens on the last one)."""
    run = get_object_or_404(Run, pk=run_id)
    try:
        before = int(request.GET["before"])
    except (KeyError, ValueError):
        return HttpResponse("before=<seq> is required", status=400)
    page = transcript_page(run, before_seq=before, limit=PAGE, epoch=request.GET.get("epoch"))
    if page is None:
        # The page shows another numbering of this transcript (cleared, truncated, or the
        # provisional index of a big file replaced by the full one): re-render it whole.
        return HttpResponse(rerender_html(run, transcript_tail(run)))
    return render(
        request,
        "runs/detail.html#earlier",
        {
            "run": run,
            "transcript_messages": page.messages,
            "epoch": page.epoch,
            "has_earlier": page.has_earlier,
        },
    )


def _side_page(request: HttpRequest, run: Run, side: str) -> HttpResponse:
    """A side conversation of the run (a background agent's own transcript), read-only. It
    lives at the run's URL with ?agent=<id>, so the same relative link in a message works on
    the run's page and on another side page."""
    found = side_transcript(run, side) if _SIDE_ID.fullmatch(side) else None
    if found is None:
        raise Http404("No such side conversation in this run's current transcript.")
    return render(
        request,
        "runs/side.html",
        {
            "run": run,
            "side": side,
            "state": found.state,
            "truncated": found.truncated,
            "messages_html": [message_html(m, found.epoch) for m in found.messages],
        },
    )


def _composer(
    request: HttpRequest,
    run: Run,
    form: ReplyForm,
    *,
    error: str = "",
    status: int = 200,
    offer_again: bool = False,
) -> HttpResponse:
    return in_place(
        render(
            request,
            "runs/detail.html#composer",
            {"run": run, "form": form, "composer_error": error, "offer_again": offer_again},
            status=status,
        ),
        "outerHTML",
    )


def in_place(response: HttpResponse, swap: Literal["outerHTML", "innerHTML"]) -> HttpResponse:
    """The answer replaces the element that asked, whatever its status: a refusal says why there
    and keeps what was typed. The page swaps an error status only when it carries this header
    (htmx-config's responseHandling in templates/base.html, static/lab/connection.js)."""
    return reswap(response, swap)


async def _aget_run(run_id: int) -> Run:
    try:
        return await Run.objects.aget(pk=run_id)
    except Run.DoesNotExist:
        raise Http404("No such run.") from None


@require_POST
async def run_reply(request: HttpRequest, run_id: int) -> HttpResponse:
    # Async, and the delivery wait in its own thread: a reply waits for the transcript to
    # record it (seconds), which must not hold the one thread sync views share.
    run = await _aget_run(run_id)
    too_long = f"That is longer than {settings.LAB_REPLY_MAX_BYTES} bytes."
    # A body far over the limit is refused before it is parsed (Django would raise a 400 on
    # DATA_UPLOAD_MAX_MEMORY_SIZE): nothing is read into memory, nothing reaches the TUI. A
    # message with files may carry them on top of its text.
    size = int(request.META.get("CONTENT_LENGTH") or 0)
    budget = settings.LAB_REPLY_MAX_BYTES * 4 + 4096
    if size > budget + (MAX_UPLOAD_BYTES if request.content_type == "multipart/form-data" else 0):
        error = (
            too_long
            if size <= budget
            else f"That is too large to send: {attachments.limits_text()}. Nothing was sent."
        )
        return _composer(request, run, ReplyForm(), error=error, status=413)
    try:
        form = ReplyForm(request.POST, request.FILES)
    except RequestDataTooBig:  # a multipart body whose text alone is over Django's bound
        return _composer(request, run, ReplyForm(), error=too_long, status=413)
    if not form.is_valid():
        return _composer(request, run, form, error=form.error_text, status=422)
    text, again = form.cleaned_data["text"], form.cleaned_data["again"]
    if request.POST.get("source") == "new-conversation":
        # The button's outcome goes beside it: the operator's draft in the composer stays.
        return await _new_conversation(request, run, text)
    if len(text.encode()) > settings.LAB_REPLY_MAX_BYTES:
        return _composer(request, run, form, error=too_long, status=413)
    uploads: list[attachments.Upload] = []
    for upload in request.FILES.getlist("files"):
        # Read only what a file may be: a larger one is refused before its bytes are.
        if (upload.size or 0) > max(attachments.MAX_IMAGE_BYTES, attachments.MAX_TEXT_BYTES):
            error = f"“{upload.name}” is too large: {attachments.limits_text()}. Nothing was sent."
            return _composer(request, run, form, error=error, status=413)
        uploads.append(attachments.Upload(upload.name or "file", upload.read()))
    return await _send_reply(request, run, form, text=text, again=again, uploads=uploads)


# What a message's files may add to its body: every file at the largest size a file may have.
MAX_UPLOAD_BYTES = attachments.MAX_FILES * (
    max(attachments.MAX_IMAGE_BYTES, attachments.MAX_TEXT_BYTES) + 4096
)


@require_GET
def run_attachment(request: HttpRequest, run_id: int, name: str) -> HttpResponse:
    """A file the operator attached (the chat's thumbnail), from the run's worktree. The agent
    can rewrite it, so it is served as the type its name says, never sniffed, sandboxed."""
    run = get_object_or_404(Run, pk=run_id)
    found = attachments.open_saved(run.worktree, name)
    if found is None:
        raise Http404("No such attachment (the worktree may have been removed).")
    data, media = found
    response = HttpResponse(data, content_type=media)
    response["X-Content-Type-Options"] = "nosniff"
    response["Content-Security-Policy"] = "sandbox; default-src 'none'"
    response["Cache-Control"] = "private, max-age=3600"
    return response


async def _send_reply(
    request: HttpRequest,
    run: Run,
    form: ReplyForm,
    *,
    text: str,
    again: bool,
    uploads: list[attachments.Upload] | None = None,
) -> HttpResponse:
    """The service checks that the run is alive (marking it ended when its terminal is gone);
    each typed refusal keeps the draft in the composer."""
    try:
        await sync_to_async(services.run_reply, thread_sensitive=False)(
            run=run, text=text, again=again, uploads=uploads or []
        )
    except ProviderError as exc:
        # ReplyInFlight: nothing sent, the same text may still land; a second copy only on purpose.
        known = outcome(exc)
        return _composer(
            request, run, form, error=str(exc), status=known.status, offer_again=known.send_again
        )
    finally:
        poke(run.pk)
    return _composer(request, run, ReplyForm())


async def _new_conversation(request: HttpRequest, run: Run, text: str) -> HttpResponse:
    note, status = "", 200
    try:
        await sync_to_async(services.run_reply, thread_sensitive=False)(run=run, text=text)
    except ProviderError as exc:
        note, status = str(exc), outcome(exc).status
    finally:
        poke(run.pk)
    return in_place(
        render(request, "runs/detail.html#new_conversation_note", {"note": note}, status=status), "outerHTML"
    )


@require_POST
async def run_return_to_prompt(request: HttpRequest, run_id: int) -> HttpResponse:
    """Press the provider's way back to the prompt; the panel's note says what was verified."""
    run = await _aget_run(run_id)
    name = get_provider(run.provider_id).display_name()
    try:
        back = await sync_to_async(services.run_return_to_prompt, thread_sensitive=False)(run=run)
    except ProviderError as exc:
        return _prompt_note(request, str(exc), status=outcome(exc).status)
    finally:
        poke(run.pk)
    if back is None:
        note = f"lab cannot tell whether {name} shows its prompt: look at its Terminal view."
    elif back:
        note = f"{name} shows its prompt."
    else:
        note = (
            f"{name} still does not show its prompt: look at its Terminal view, where you can type into it."
        )
    return _prompt_note(request, note)


def _prompt_note(request: HttpRequest, note: str, *, status: int = 200) -> HttpResponse:
    return in_place(
        render(request, "runs/detail.html#prompt_note", {"prompt_note": note}, status=status), "innerHTML"
    )


@require_POST
async def run_interrupt(request: HttpRequest, run_id: int) -> HttpResponse:
    run = await _aget_run(run_id)
    if not run.is_ended and not await sync_to_async(services.run_alive, thread_sensitive=False)(run):
        await sync_to_async(services.run_mark_ended)(run=run)
    try:
        await sync_to_async(services.run_interrupt, thread_sensitive=False)(run=run)
    except ProviderError as exc:
        return HttpResponse(str(exc), status=outcome(exc).status)
    poke(run.pk)
    return HttpResponse(status=204)


@require_POST
def run_remove_worktree(request: HttpRequest, run_id: int) -> HttpResponse:
    run = get_object_or_404(Run, pk=run_id)
    confirm = request.POST.get("confirm") == "1"
    context: dict[str, object] = {"run": run, "worktree_users": services.worktree_users(run)}
    try:
        services.run_remove_worktree(run=run, confirm=confirm)
    except worktrees.UncommittedChanges as exc:
        changes = worktrees.uncommitted_changes(Path(run.worktree))
        context |= {"worktree_error": str(exc), "changes": changes[:50], "needs_confirm": True}
        return in_place(render(request, "runs/detail.html#worktree", context, status=409), "outerHTML")
    except worktrees.WorktreeError as exc:
        context["worktree_error"] = str(exc)
        return in_place(render(request, "runs/detail.html#worktree", context, status=409), "outerHTML")
    poke(run.pk)
    return in_place(render(request, "runs/detail.html#worktree", context | {"removed": True}), "outerHTML")


@require_GET
def run_sessions(request: HttpRequest, run_id: int) -> HttpResponse:
    """The CLI's conversations in an ended run's worktree, each with Resume."""
    run = get_object_or_404(Run, pk=run_id)
    sessions = services.run_sessions(run=run) if run.is_ended else None
    return render(request, "runs/detail.html#sessions", {"run": run, "sessions": sessions, "loaded": True})


@require_POST
def run_resume(request: HttpRequest, run_id: int) -> HttpResponse:
    run = get_object_or_404(Run, pk=run_id)
    session_id = request.POST.get("session", "")
    try:
        new = services.run_resume(run=run, session_id=session_id)
    except (worktrees.WorktreeError, ProviderError) as exc:
        context = {"run": run, "sessions": services.run_sessions(run=run), "loaded": True, "error": str(exc)}
        return in_place(render(request, "runs/detail.html#sessions", context, status=409), "outerHTML")
    messages.info(request, f"Run {new.name} resumed the conversation.")
    return HttpResponseClientRedirect(new.get_absolute_url())


@require_POST
def run_end(request: HttpRequest, run_id: int) -> HttpResponse:
    run = get_object_or_404(Run, pk=run_id)
    services.run_end(run=run)
    poke(run.pk)
    messages.info(request, f"Run {run.name} ended; its transcript stays readable.")
    if request.htmx:  # type: ignore[attr-defined]
        return HttpResponseClientRedirect(run.get_absolute_url())
    return redirect(run)


MAX_QUESTIONS = 4  # the universal schema's forms carry 1–4 questions


class MalformedAnswer(ValueError):
    pass


def parse_answers(post: QueryDict) -> list[Answer]:
    """Positional answers: for question i, `answers-i` holds the option index (a radio) or the
    repeated indexes (checkboxes), `answers-i-text` the free text."""
    try:
        count = int(post.get("count", ""))
    except ValueError:
        raise MalformedAnswer("The form is missing its question count.") from None
    if not 1 <= count <= MAX_QUESTIONS:
        raise MalformedAnswer("The form's question count is out of range.")
    answers = []
    for i in range(count):
        raw = post.getlist(f"answers-{i}")
        if any(not v.isdigit() or len(v) > 3 for v in raw):
            raise MalformedAnswer("An answer is not an option number.")
        answers.append(Answer(choices=tuple(int(v) for v in raw), text=post.get(f"answers-{i}-text", "")))
    return answers


def _answered_summary(dialog: Dialog | None, answers: list[Answer], declined: bool) -> str:
    if declined:
        return "You declined."
    if dialog is None:
        return ""
    parts = []
    for question, answer in zip(dialog.all_questions, answers, strict=False):
        labels = [question.options[i].label for i in answer.choices if 0 <= i < len(question.options)]
        if answer.text.strip():
            labels.append(f"“{answer.text.strip()}”")
        parts.append(", ".join(labels))
    return "You chose: " + " · ".join(p for p in parts if p) + "."


def _dialog_area(
    request: HttpRequest, run: Run, context: dict[str, object], status: int = 200
) -> HttpResponse:
    context = {"run": run, "provider_name": get_provider(run.provider_id).display_name(), **context}
    return in_place(render(request, "runs/dialog.html", context, status=status), "innerHTML")


@require_POST
async def run_answer(request: HttpRequest, run_id: int) -> HttpResponse:
    """Answer the pending dialog; the dialog area is re-rendered. The status is the error's
    (providers.errors.OUTCOMES): 409 stale or already answered, 422 an answer that does not
    fit (the dialog is offered again), 502 sent but not recorded."""
    run = await _aget_run(run_id)
    tool_use_id = request.POST.get("tool_use_id", "")
    declined = request.POST.get("decline") == "1"
    try:
        if not tool_use_id:
            raise MalformedAnswer("The form names no dialog.")
        answers = [] if declined else parse_answers(request.POST)
    except MalformedAnswer as exc:
        return await _answer_unfit(request, run, tool_use_id, str(exc))
    return await _answer(request, run, tool_use_id, answers, declined=declined)


async def _answer(
    request: HttpRequest, run: Run, tool_use_id: str, answers: list[Answer], *, declined: bool
) -> HttpResponse:
    try:
        # In its own thread: the recipe's pacing and the recorded-check take seconds. The
        # service reads the pending dialog (after its claim) and checks the run is alive, once.
        dialog = await sync_to_async(services.dialog_answer, thread_sensitive=False)(
            run=run, tool_use_id=tool_use_id, answers=answers, decline=declined
        )
    except ProviderError as exc:
        known = outcome(exc)
        if known.fix_input:
            return await _answer_unfit(request, run, tool_use_id, str(exc), known.status)
        return _dialog_area(request, run, {"dialog": None, "dialog_error": str(exc)}, known.status)
    finally:
        poke(run.pk)
    return _dialog_area(request, run, {"answered": _answered_summary(dialog, answers, declined)})


async def _answer_unfit(
    request: HttpRequest, run: Run, tool_use_id: str, error: str, status: int = 422
) -> HttpResponse:
    """Nothing sent: the dialog the form answered, still pending, is offered again (any
    pending one when the form named none)."""
    pending = await sync_to_async(services.pending_dialog, thread_sensitive=False)(run)
    current = pending if pending is not None and tool_use_id in ("", pending.tool_use_id) else None
    return _dialog_area(request, run, {"dialog": current, "dialog_error": error}, status)
