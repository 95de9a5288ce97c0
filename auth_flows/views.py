"""Per-provider login routes: parse, call one service, render the auth card (or JSON).

Login is required everywhere (LoginRequiredMiddleware, and @login_required says so here);
CSRF is enforced on every POST: htmx sends the token from the page's hx-headers.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.debug import sensitive_post_parameters
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import reswap, retarget
from django_htmx.middleware import HtmxDetails

from auth_flows import services
from auth_flows.forms import CodeForm
from auth_flows.services import AuthCard
from hosts import identity
from hosts.selectors import hosts_listed
from providers.errors import ProviderError, UnknownProvider, outcome
from providers.registry import get_provider

CARD = "auth_flows/card.html#card"
CODE_FORM = "auth_flows/card.html#code_form"


class HtmxHttpRequest(HttpRequest):
    htmx: HtmxDetails


@require_GET
@login_required
def provider_list(request: HtmxHttpRequest) -> HttpResponse:
    hosts = hosts_listed()
    if identity.role() == identity.WEB and not _wants_json(request):
        # A web tier has no agents of its own: each host's logins are on its own page.
        return render(request, "auth_flows/providers.html", {"hosts": hosts, "pick_host": True})
    cards = services.provider_cards()
    if _wants_json(request):
        return JsonResponse([card_json(card) for card in cards], safe=False)
    context = {"cards": cards, "hosts": hosts, "this_host": identity.host_name()}
    return render(request, "auth_flows/providers.html", context)


@require_GET
@login_required
def auth_status(request: HtmxHttpRequest, provider_id: str) -> HttpResponse:
    try:
        card = services.provider_card(provider_id=provider_id)
    except ProviderError as exc:
        return _error(request, provider_id, exc)
    return _card(request, card, card_json(card))


@require_POST
@login_required
def login_start(request: HtmxHttpRequest, provider_id: str) -> HttpResponse:
    try:
        card = services.provider_login_start(provider_id=provider_id)
    except ProviderError as exc:
        return _error(request, provider_id, exc)
    assert card.login is not None
    alternatives = [{"instructions": text, "url": url} for text, url in card.login.alternatives]
    return _card(request, card, {"url": card.login.url, "alternatives": alternatives})


@sensitive_post_parameters("code")
@require_POST
@login_required
def login_code(request: HtmxHttpRequest, provider_id: str) -> HttpResponse:
    try:
        provider = get_provider(provider_id)
    except UnknownProvider as exc:
        return _error(request, provider_id, exc)
    form = CodeForm(request.POST)
    if not form.is_valid():
        message = " ".join(
            str(e) for e in form.errors.get("code", ["Paste the code the sign-in page showed you."])
        )
        if _wants_json(request):
            return JsonResponse({"error": "invalid_code", "message": message}, status=400)
        # The login is still waiting: only the code form is re-rendered, with the message.
        context = {"card": {"id": provider.id, "name": provider.display_name()}, "code_error": message}
        return reswap(render(request, CODE_FORM, context, status=400), "outerHTML")
    try:
        card = services.provider_login_code(provider_id=provider_id, code=form.cleaned_data["code"])
    except ProviderError as exc:
        return _error(request, provider_id, exc)
    return _whole_card(request, _card(request, card, card_json(card)), card.id)


@require_POST
@login_required
def logout(request: HtmxHttpRequest, provider_id: str) -> HttpResponse:
    try:
        card = services.provider_logout(provider_id=provider_id)
    except ProviderError as exc:
        return _error(request, provider_id, exc)
    return _card(request, card, card_json(card))


def card_json(card: AuthCard) -> dict[str, Any]:
    return {
        "id": card.id,
        "display_name": card.name,
        "flow": {"kind": str(card.flow.kind), "instructions": card.flow.instructions},
        "status": {
            "logged_in": card.status.logged_in,
            "account": card.status.account,
            "method": card.status.method,
        },
    }


def _wants_json(request: HttpRequest) -> bool:
    return request.get_preferred_type(["text/html", "application/json"]) == "application/json"


def _card(
    request: HtmxHttpRequest, card: AuthCard, payload: dict[str, Any], status: int = 200
) -> HttpResponse:
    if _wants_json(request):
        return JsonResponse(payload, status=status)
    return render(request, CARD, {"card": card}, status=status)


def _whole_card(request: HtmxHttpRequest, response: HttpResponse, provider_id: str) -> HttpResponse:
    # The code form targets itself (so a malformed paste keeps the login on screen); any
    # outcome from the provider replaces the whole card instead.
    if request.htmx:
        retarget(response, f"#auth-card-{provider_id}")
        reswap(response, "outerHTML")
    return response


def _error(request: HtmxHttpRequest, provider_id: str, exc: ProviderError) -> HttpResponse:
    # The status and kind every view gives this error (providers.errors.OUTCOMES); the message
    # is the error's own text.
    status, kind = outcome(exc).status, outcome(exc).kind
    message = str(exc) or "The provider reported an error."
    if _wants_json(request):
        return JsonResponse({"error": kind, "message": message}, status=status)
    if isinstance(exc, UnknownProvider):
        return HttpResponse(message, status=status, content_type="text/plain; charset=utf-8")
    card = services.provider_card(provider_id=provider_id, error=message)
    return _whole_card(request, render(request, CARD, {"card": card}, status=status), provider_id)
