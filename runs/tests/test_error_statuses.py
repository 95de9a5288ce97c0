"""One error, one status: every view that catches a ProviderError answers it with the status of
the one table (providers.errors.OUTCOMES), keeps what the operator typed, and offers "send
again" exactly where the table says so."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from django.test import Client

from auth_flows import services as auth_services
from providers import errors
from providers.errors import OUTCOMES, ProviderError, outcome
from runs import services
from runs.models import Run

DRAFT = "keep this draft"


def every_error() -> Iterator[type[ProviderError]]:
    seen: set[type[ProviderError]] = set()
    stack = [ProviderError]
    while stack:
        cls = stack.pop()
        if cls not in seen:
            seen.add(cls)
            yield cls
            stack.extend(cls.__subclasses__())


ERRORS = sorted({cls for cls in every_error() if cls.__module__ == errors.__name__}, key=lambda c: c.__name__)


def test_every_error_type_has_its_own_row() -> None:
    # A new error type must be given its status on purpose, not inherit one by accident.
    assert set(ERRORS) == set(OUTCOMES)
    for cls in ERRORS:
        assert outcome(cls("x")) is OUTCOMES[cls]


def test_an_adapters_own_subclass_answers_as_the_seam_type_it_refines() -> None:
    class Overloaded(errors.ReplyRefused):
        pass

    assert outcome(Overloaded("busy")) is OUTCOMES[errors.ReplyRefused]


# Each view that catches a ProviderError: (what to make raise, how to ask).
def raising(monkeypatch: pytest.MonkeyPatch, target: object, name: str, exc: Exception) -> None:
    def fail(*args: object, **kwargs: object) -> None:
        raise exc

    monkeypatch.setattr(target, name, fail)


VIEWS: dict[str, tuple[object, str, Callable[[Client, Run], object]]] = {
    "reply": (services, "run_reply", lambda c, r: c.post(f"/runs/{r.pk}/reply/", {"text": DRAFT})),
    "new conversation": (
        services,
        "run_reply",
        lambda c, r: c.post(f"/runs/{r.pk}/reply/", {"text": "/new", "source": "new-conversation"}),
    ),
    "return to prompt": (
        services,
        "run_return_to_prompt",
        lambda c, r: c.post(f"/runs/{r.pk}/return-to-prompt/"),
    ),
    # Its button swaps nothing (hx-swap="none"): a refusal is reported by the page's banner.
    "interrupt": (services, "run_interrupt", lambda c, r: c.post(f"/runs/{r.pk}/interrupt/")),
    "answer": (
        services,
        "dialog_answer",
        lambda c, r: c.post(
            f"/runs/{r.pk}/answer/", {"tool_use_id": "toolu_1", "count": "1", "answers-0": "0"}
        ),
    ),
    "login start": (
        auth_services,
        "provider_login_start",
        lambda c, r: c.post("/providers/fake/auth/login/start"),
    ),
    "log out": (auth_services, "provider_logout", lambda c, r: c.post("/providers/fake/auth/logout")),
}


@pytest.fixture
def run(fake_provider, git_repo, db):
    return services.run_start(provider_id="fake", repository=git_repo, branch="lab/errors-1")


@pytest.mark.parametrize("error", ERRORS, ids=lambda c: c.__name__)
def test_every_view_answers_an_error_with_its_one_status(authed_client, run, monkeypatch, error):
    monkeypatch.setattr(services, "run_alive", lambda run: True)
    answered = {}
    for view, (target, name, ask) in VIEWS.items():
        with monkeypatch.context() as m:
            raising(m, target, name, error(f"refused by {view}"))
            answered[view] = ask(authed_client, run).status_code  # type: ignore[attr-defined]
    assert answered == dict.fromkeys(VIEWS, OUTCOMES[error].status)


@pytest.mark.parametrize("error", ERRORS, ids=lambda c: c.__name__)
def test_the_composer_keeps_the_draft_and_offers_send_again_as_the_table_says(
    authed_client, run, monkeypatch, error
):
    raising(monkeypatch, services, "run_reply", error("not now"))
    body = authed_client.post(f"/runs/{run.pk}/reply/", {"text": DRAFT}).content.decode()
    assert "not now" in body and f">{DRAFT}</textarea>" in body
    assert ("Send a second copy anyway" in body) == OUTCOMES[error].send_again


def swapped_error_statuses() -> re.Pattern[str]:
    """The error statuses the page swaps in place (base.html's htmx-config)."""
    html = (Path(__file__).resolve().parents[2] / "templates" / "base.html").read_text()
    config = json.loads(re.search(r"<meta name=\"htmx-config\" content='([^']*)'>", html).group(1))  # type: ignore[union-attr]
    swapped = [
        h for h in config["responseHandling"] if h["swap"] and not h.get("error") and h["code"] != "[23].."
    ]
    assert len(swapped) == 1
    return re.compile(swapped[0]["code"])


def test_the_page_swaps_every_status_lab_answers_a_refusal_with_and_no_other() -> None:
    swapped = swapped_error_statuses()
    # 413 and 422: the composer's own refusals (too long, empty); 404 is a plain-text answer.
    refusals = {o.status for o in OUTCOMES.values()} - {404} | {413, 422}
    assert {s for s in range(400, 600) if swapped.search(str(s))} == refusals


@pytest.mark.parametrize("error", ERRORS, ids=lambda c: c.__name__)
def test_an_error_answered_in_place_says_how_to_swap_it(authed_client, run, monkeypatch, error):
    # Without HX-Reswap the page takes an error status for someone else's page (a proxy's) and
    # reports it instead of swapping (static/lab/connection.js).
    monkeypatch.setattr(services, "run_alive", lambda run: True)
    for view, (target, name, ask) in VIEWS.items():
        with monkeypatch.context() as m:
            raising(m, target, name, error("refused"))
            authed_client.defaults["HTTP_HX_REQUEST"] = "true"
            response = ask(authed_client, run)
        reported = view == "interrupt" or (
            error is errors.UnknownProvider and view in ("login start", "log out")
        )
        assert ("HX-Reswap" in response.headers) is not reported, view  # type: ignore[attr-defined]
