"""The explicit provider registry: settings.LAB_PROVIDERS maps ids to dotted class paths.

No auto-discovery: a provider is enabled by naming it (docs/architecture.md; django-allauth's own
comment calls discovery "way too magical").
"""

from __future__ import annotations

import functools

from django.conf import settings
from django.utils.module_loading import import_string

from providers.base import AgentProvider
from providers.errors import UnknownProvider


def provider_ids() -> list[str]:
    return list(settings.LAB_PROVIDERS)


@functools.cache
def _load(provider_id: str, dotted: str) -> AgentProvider:
    provider = import_string(dotted)()
    if not isinstance(provider, AgentProvider):
        raise TypeError(f"{dotted} is not an AgentProvider")
    return provider


def get_provider(provider_id: str) -> AgentProvider:
    # One instance per process: adapters hold in-memory state (the backstop's intents, a
    # pending login) that must outlive a request.
    try:
        dotted = settings.LAB_PROVIDERS[provider_id]
    except KeyError:
        raise UnknownProvider(f"No provider {provider_id!r} is enabled.") from None
    return _load(provider_id, dotted)


def all_providers() -> list[AgentProvider]:
    return [get_provider(pid) for pid in provider_ids()]
