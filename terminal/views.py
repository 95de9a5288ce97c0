"""The Terminal view: a run's tmux pane, live, in the browser (xterm.js over the terminal socket,
terminal/consumers.py), read-only until the operator takes the keyboard."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.utils.csp import CSP
from django.views.decorators.csp import csp_override
from django.views.decorators.http import require_GET, require_POST

from providers.registry import get_provider
from runs import services
from runs.models import Run
from terminal import keyboard

# xterm.js draws with <style> elements it creates itself (its theme, its cell size), which
# carry no nonce: this page alone lets inline styles through. Scripts stay nonce-only, and the
# pane's bytes reach the page as terminal data, never as markup.
TERMINAL_CSP: dict[str, Any] = {**settings.SECURE_CSP, "style-src": [CSP.SELF, CSP.UNSAFE_INLINE]}


# The keys a phone's keyboard lacks, as the bytes a terminal sends for them (hex on the page).
_KEYS = (
    ("Esc", "\x1b"),
    ("Tab", "\t"),
    ("↑", "\x1b[A"),
    ("↓", "\x1b[B"),
    ("←", "\x1b[D"),
    ("→", "\x1b[C"),
    ("Enter", "\r"),
    ("Ctrl-C", "\x03"),
)
KEYBAR = tuple((label, keys.encode().hex()) for label, keys in _KEYS)


def _context(request: HttpRequest, run: Run, **extra: object) -> dict[str, object]:
    return {
        "keybar": KEYBAR,
        "run": run,
        "provider_name": get_provider(run.provider_id).display_name(),
        "holder": run.keyboard_holder(),
        "mine": keyboard.holds(run, request.session.session_key or ""),
        **extra,
    }


@require_GET
@csp_override(TERMINAL_CSP)
def terminal_view(request: HttpRequest, run_id: int) -> HttpResponse:
    run = get_object_or_404(Run, pk=run_id)
    if not run.is_ended and not services.run_alive(run):
        services.run_mark_ended(run=run)
    context = _context(request, run)
    if run.is_ended:
        context["exit"] = services.run_exit(run)
    return render(request, "terminal/terminal.html", context)


@require_POST
def terminal_keyboard(request: HttpRequest, run_id: int) -> HttpResponse:
    """Take the keyboard (`action=take`, `force` to take it from someone else) or give it back."""
    run = get_object_or_404(Run, pk=run_id)
    key = request.session.session_key or ""
    action = request.POST.get("action", "")
    if action == "give":
        keyboard.give_back(run, key)
        return render(request, "terminal/terminal.html#keyboard", _context(request, run))
    if action != "take":
        return HttpResponse("action must be take or give", status=400)
    if run.is_ended or not services.run_alive(run):
        context = _context(request, run, error="The run has ended: its terminal takes no keys.")
        return render(request, "terminal/terminal.html#keyboard", context, status=409)
    try:
        keyboard.take(run, request.user, key, force=request.POST.get("force") == "1")
    except keyboard.KeyboardTaken as exc:
        context = _context(request, run, taken_by=str(exc))
        return render(request, "terminal/terminal.html#keyboard", context, status=409)
    return render(request, "terminal/terminal.html#keyboard", _context(request, run))
