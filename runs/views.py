"""Run pages and endpoints: parse, call one service, render one partial.

Errors from the provider seam are typed (providers.errors) and become a message in the
composer with the operator's text kept, never a lost draft.
"""

from __future__ import annotations

from asgiref.sync import sync_to_async
from django.conf import settings
from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import HttpResponseClientRedirect

from providers.errors import ProviderError, ReplyNotDelivered, SessionGone
from providers.registry import get_provider
from runs import services, worktrees
from runs.forms import NewRunForm, ReplyForm
from runs.models import Run
from runs.transcripts import PAGE, transcript_page, transcript_tail
from runs.watcher import poke


@require_GET
def run_list(request: HttpRequest) -> HttpResponse:
    runs = list(Run.objects.all()[:200])
    return render(request, "runs/list.html", {"runs": runs})


@require_http_methods(["GET", "POST"])
def run_new(request: HttpRequest) -> HttpResponse:
    form = NewRunForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            run = services.run_start(
                provider_id=form.cleaned_data["provider"],
                repository=form.cleaned_data["repository"],
                branch=form.cleaned_data["branch"],
                base_ref=form.cleaned_data["base_ref"] or None,
                name=form.cleaned_data["name"],
                options=form.spawn_options(),
            )
        except (worktrees.WorktreeError, ProviderError) as exc:
            form.add_error(None, str(exc))
        else:
            return redirect(run)
    status = 422 if request.method == "POST" else 200
    return render(request, "runs/new.html", {"form": form}, status=status)


def _run_context(run: Run) -> dict[str, object]:
    tail = transcript_tail(run)
    provider = get_provider(run.provider_id)
    state = services.run_state(run, tail.state, tail.dialog)
    return {
        "run": run,
        "epoch": tail.epoch,
        "messages": tail.messages,
        "has_earlier": tail.has_earlier,
        "last_seq": tail.next_seq - 1,
        "state": state,
        "dialog": tail.dialog if state == "question" else None,
        "provider_name": provider.display_name(),
        "form": ReplyForm(),
    }


@require_GET
def run_detail(request: HttpRequest, run_id: int) -> HttpResponse:
    run = get_object_or_404(Run, pk=run_id)
    return render(request, "runs/detail.html", _run_context(run))


@require_GET
def run_messages(request: HttpRequest, run_id: int) -> HttpResponse:
    """An earlier page of the transcript, for scrolling up (the page opens on the last one)."""
    run = get_object_or_404(Run, pk=run_id)
    try:
        before = int(request.GET["before"])
    except (KeyError, ValueError):
        return HttpResponse("before=<seq> is required", status=400)
    page = transcript_page(run, before_seq=before, limit=PAGE)
    tail = transcript_tail(run, limit=1)
    return render(
        request,
        "runs/detail.html#earlier",
        {"run": run, "messages": page, "epoch": tail.epoch, "has_earlier": bool(page) and page[0].seq > 0},
    )


def _composer(request: HttpRequest, run: Run, form: ReplyForm, *, error: str = "", status: int = 200) -> HttpResponse:
    return render(
        request, "runs/detail.html#composer", {"run": run, "form": form, "composer_error": error}, status=status
    )


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
    form = ReplyForm(request.POST)
    if not form.is_valid():
        return _composer(request, run, form, error="Write something first.", status=422)
    text = form.cleaned_data["text"]
    if len(text.encode()) > settings.LAB_REPLY_MAX_BYTES:
        return _composer(
            request, run, form, error=f"That is longer than {settings.LAB_REPLY_MAX_BYTES} bytes.", status=413
        )
    try:
        await sync_to_async(services.run_reply, thread_sensitive=False)(run=run, text=text)
    except ReplyNotDelivered as exc:
        return _composer(request, run, form, error=str(exc), status=502)
    except SessionGone as exc:
        return _composer(request, run, form, error=str(exc), status=409)
    except ProviderError as exc:
        return _composer(request, run, form, error=str(exc), status=422)
    finally:
        poke(run.pk)
    return _composer(request, run, ReplyForm())


@require_POST
async def run_interrupt(request: HttpRequest, run_id: int) -> HttpResponse:
    run = await _aget_run(run_id)
    try:
        await sync_to_async(services.run_interrupt, thread_sensitive=False)(run=run)
    except ProviderError as exc:
        return HttpResponse(str(exc), status=409)
    poke(run.pk)
    return HttpResponse(status=204)


@require_POST
def run_end(request: HttpRequest, run_id: int) -> HttpResponse:
    run = get_object_or_404(Run, pk=run_id)
    services.run_end(run=run)
    poke(run.pk)
    messages.info(request, f"Run {run.name} ended; its transcript stays readable.")
    if request.htmx:  # type: ignore[attr-defined]
        return HttpResponseClientRedirect(run.get_absolute_url())
    return redirect(run)
