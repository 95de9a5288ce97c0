"""Review and ship from a run's Changes page: the diff comments go to the agent as one message;
commit, push, the pull request and merge back run lab's own git (seeding/ship.py).

Each answer is a note that replaces the one beside the form that asked, with git's own words
when it refused; an action that moved the worktree's changes tells the page to re-read them.
"""

from __future__ import annotations

import json
from pathlib import Path

from asgiref.sync import sync_to_async
from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_POST
from django_htmx.http import trigger_client_event

from providers import review
from providers.errors import ProviderError, outcome
from providers.registry import get_provider
from runs import services
from runs.models import Run
from runs.signals import poke
from runs.views import in_place
from seeding import commit_guard, ship

ASK_TO_COMMIT = (
    "Please commit your changes now: review `git status`, stage what belongs in the commit, and "
    "write a clear commit message."
)
# git here may take its whole bound (a push over the network): the views run it off the one
# thread sync views share.
# The page re-reads #changes when it hears this (static/lab/review.js).
MOVED = "lab-changes-moved"


def note(request: HttpRequest, message: str, *, ok: bool, status: int = 200, **extra: object) -> HttpResponse:
    context = {"message": message, "ok": ok, **extra}
    return in_place(render(request, "runs/ship.html#note", context, status=status), "innerHTML")


def refused(request: HttpRequest, exc: ship.ShipError) -> HttpResponse:
    return note(request, str(exc), ok=False, status=409)


def ship_context(run: Run) -> dict[str, object]:
    """What the Ship panel offers: the remotes to push to and the branch to merge into."""
    context: dict[str, object] = {"base_branch": run.base_branch}
    try:
        context["remotes"] = ship.remotes(Path(run.worktree))
    except ship.ShipError as exc:
        context["remotes"], context["remotes_error"] = [], str(exc)
    return context


async def _reply(request: HttpRequest, run: Run, text: str, sent: str) -> HttpResponse:
    """Through the chat's own path: the same refusals (a dialog pending, the keyboard held),
    the same delivery check; a turn in progress gets it queued by the CLI."""
    try:
        await sync_to_async(services.run_reply, thread_sensitive=False)(run=run, text=text)
    except ProviderError as exc:
        return note(request, str(exc), ok=False, status=outcome(exc).status)
    finally:
        poke(run.pk)
    return note(request, sent, ok=True)


@require_POST
async def run_review(request: HttpRequest, run_id: int) -> HttpResponse:
    """The review tray's comments, sent to the agent as one message."""
    run = await sync_to_async(get_object_or_404)(Run, pk=run_id)
    try:
        comments = review.parse(json.loads(request.POST.get("comments", "")))
    except (ValueError, review.InvalidReview) as exc:
        said = str(exc) if isinstance(exc, review.InvalidReview) else "The comments could not be read."
        return note(request, f"{said} Nothing was sent; your comments are kept.", ok=False, status=422)
    text = get_provider(run.provider_id).review_message(comments)
    if len(text.encode()) > settings.LAB_REPLY_MAX_BYTES:
        return note(
            request,
            f"These comments make a message longer than {settings.LAB_REPLY_MAX_BYTES} bytes: send "
            "fewer at once. Nothing was sent; your comments are kept.",
            ok=False,
            status=413,
        )
    n = len(comments)
    answer = await _reply(request, run, text, f"Sent {n} comment{'s' if n != 1 else ''} as one message.")
    if answer.status_code == 200:
        trigger_client_event(answer, "lab-review-sent")
    return answer


@require_POST
async def run_ask_commit(request: HttpRequest, run_id: int) -> HttpResponse:
    run = await sync_to_async(get_object_or_404)(Run, pk=run_id)
    return await _reply(
        request, run, ASK_TO_COMMIT, "Asked the agent to commit; its answer shows in the chat."
    )


@require_POST
async def run_commit(request: HttpRequest, run_id: int) -> HttpResponse:
    run = await sync_to_async(get_object_or_404)(Run, pk=run_id)
    return await sync_to_async(_commit, thread_sensitive=False)(request, run)


def _commit(request: HttpRequest, run: Run) -> HttpResponse:
    """The operator's commit: all changes, or the files ticked in the lists below, behind the
    guard the agent's commits have (seeded files refused, attribution per the run's choice)."""
    paths = request.POST.getlist("paths") if request.POST.get("scope") == "selected" else None
    meta = get_provider(run.provider_id).seed_meta()
    try:
        said = ship.commit(
            Path(run.worktree),
            message=request.POST.get("message", "").replace("\r\n", "\n"),
            paths=paths,
            hooks_dir=commit_guard.install_hooks(Path(settings.DATA_DIR) / "git-hooks"),
            seeded_paths=meta.seeded_paths,
            scrub_patterns=meta.scrub_patterns,
            scrub=not run.attribution,
        )
    except ship.ShipError as exc:
        return refused(request, exc)
    return trigger_client_event(note(request, said, ok=True), MOVED)


def _scrub(run: Run) -> tuple[str, ...]:
    """The attribution lines to leave out of what lab writes from the run's commits (a squash
    message, a pull request's body): the provider's, when the run turned attribution off."""
    return () if run.attribution else get_provider(run.provider_id).seed_meta().scrub_patterns


def _remote_url(run: Run, name: str) -> str:
    # The fetch URL names the forge (a push URL may be a mirror or a local path).
    found = {r.name: r.fetch_url for r in ship.remotes(Path(run.worktree))}
    if name not in found:
        raise ship.ShipError(f"No remote named {name!r}.")
    return found[name]


@require_POST
async def run_push(request: HttpRequest, run_id: int) -> HttpResponse:
    run = await sync_to_async(get_object_or_404)(Run, pk=run_id)
    return await sync_to_async(_push, thread_sensitive=False)(request, run)


def _push(request: HttpRequest, run: Run) -> HttpResponse:
    remote = request.POST.get("remote", "")
    try:
        said = ship.push(Path(run.worktree), remote=remote, branch=run.branch)
        url = _remote_url(run, remote)
    except ship.ShipError as exc:
        return refused(request, exc)
    return note(
        request,
        said,
        ok=True,
        run=run,
        remote=remote,
        pr_link=ship.pull_request_url(url, branch=run.branch, base=run.base_branch),
        forge_cli=ship.forge_cli(url),
    )


@require_POST
async def run_pull_request(request: HttpRequest, run_id: int) -> HttpResponse:
    run = await sync_to_async(get_object_or_404)(Run, pk=run_id)
    return await sync_to_async(_pull_request, thread_sensitive=False)(request, run)


def _pull_request(request: HttpRequest, run: Run) -> HttpResponse:
    try:
        url = _remote_url(run, request.POST.get("remote", ""))
        if not run.base_branch:
            raise ship.ShipError(
                "lab does not know the branch this run started from: open the pull request on the forge."
            )
        body = ship.commits_body(
            Path(run.repository), base=run.base_commit, branch=run.branch, scrub=_scrub(run)
        )
        link = ship.create_pull_request(
            url, branch=run.branch, base=run.base_branch, title=run.name, body=body
        )
    except ship.ShipError as exc:
        return refused(request, exc)
    return note(request, "Pull request created:", ok=True, created=link)


@require_POST
async def run_merge(request: HttpRequest, run_id: int) -> HttpResponse:
    run = await sync_to_async(get_object_or_404)(Run, pk=run_id)
    return await sync_to_async(_merge, thread_sensitive=False)(request, run)


def _merge(request: HttpRequest, run: Run) -> HttpResponse:
    """Merge back into the branch the run started from (or the one the operator names)."""
    into = request.POST.get("into", "").strip() or run.base_branch
    mode = request.POST.get("mode", "")
    try:
        if not into:
            raise ship.ShipError("Name the branch to merge into.")
        message = ""
        if mode == "squash":
            message = ship.squash_message(
                run.name, Path(run.repository), base=run.base_commit, branch=run.branch, scrub=_scrub(run)
            )
        merged = ship.merge_back(
            Path(run.repository),
            branch=run.branch,
            into=into,
            mode=mode,
            confirmed=request.POST.get("confirm") == "on",
            message=message,
        )
    except ship.ShipError as exc:
        return refused(request, exc)
    return trigger_client_event(note(request, merged.message, ok=True), MOVED)
