"""Provider login, as the views and the websocket see it: keyword-only, one verb each.

Every provider is reached through the registry and the seam (providers.base); nothing here
knows a concrete provider. A status change is pushed to every open lab page as the re-rendered
auth card (provider.auth.changed).
"""

from __future__ import annotations

from dataclasses import dataclass

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.template.loader import render_to_string

from broadcast import groups
from providers.registry import all_providers, get_provider
from providers.schema import AuthFlow, AuthStatus, LoginStart

AUTH_CHANGED = "provider.auth.changed"


@dataclass(frozen=True, slots=True)
class AuthCard:
    """Everything the card template renders, for any flow kind."""

    id: str
    name: str
    flow: AuthFlow
    status: AuthStatus
    login: LoginStart | None = None  # a login waiting for the operator
    error: str = ""


def provider_card(
    *, provider_id: str, status: AuthStatus | None = None, login: LoginStart | None = None, error: str = ""
) -> AuthCard:
    provider = get_provider(provider_id)
    return AuthCard(
        id=provider.id,
        name=provider.display_name(),
        flow=provider.auth_flow(),
        status=status if status is not None else provider.auth_status(),
        login=login,
        error=error,
    )


def provider_cards() -> list[AuthCard]:
    return [provider_card(provider_id=p.id) for p in all_providers()]


def provider_login_start(*, provider_id: str) -> AuthCard:
    login = get_provider(provider_id).login_start()
    return provider_card(provider_id=provider_id, login=login)


def provider_login_code(*, provider_id: str, code: str) -> AuthCard:
    status = get_provider(provider_id).login_code(code)
    auth_changed(provider_id, status=status)
    return provider_card(provider_id=provider_id, status=status)


def provider_logout(*, provider_id: str) -> AuthCard:
    status = get_provider(provider_id).logout()
    auth_changed(provider_id, status=status)
    return provider_card(provider_id=provider_id, status=status)


def auth_changed(provider_id: str, *, status: AuthStatus | None = None) -> None:
    """Push the re-rendered card to every open lab page; it swaps in by id (hx-swap-oob).
    Runs pages call this too when a spawn finds the login gone."""
    card = provider_card(provider_id=provider_id, status=status)
    # Rendered without a request: the card is display-only plus hx-post buttons, whose CSRF
    # token comes from the page's hx-headers.
    html = render_to_string("auth_flows/card.html#card", {"card": card, "oob": True, "event": AUTH_CHANGED})
    layer = get_channel_layer()
    if layer is not None:
        async_to_sync(layer.group_send)(groups.LAB, {"type": groups.HTML_EVENT, "html": html})
