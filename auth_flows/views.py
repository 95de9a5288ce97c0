from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from providers.registry import all_providers


@require_GET
def provider_list(request: HttpRequest) -> HttpResponse:
    providers = [{"id": p.id, "name": p.display_name(), "flow": p.auth_flow()} for p in all_providers()]
    return render(request, "auth_flows/providers.html", {"providers": providers})
