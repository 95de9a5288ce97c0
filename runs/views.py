from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from runs.models import Run


@require_GET
def run_list(request: HttpRequest) -> HttpResponse:
    runs = Run.objects.all()[:200]
    return render(request, "runs/list.html", {"runs": runs})
