"""POST /runs/<id>/answer/ and the generic guards, against the FakeProvider (the real adapter's
answers are proven in compat/claude_code/tests/test_live_dialogs.py)."""

from __future__ import annotations

import re
import threading
import time
from datetime import timedelta

import pytest
from django.utils import timezone

from providers.errors import DialogNotAnswerable, StaleDialog
from providers.schema import Answer
from providers.testing import fake_raise_dialog
from runs import services
from runs.models import DialogAnswer

DIALOG = {"tool_use_id": "toolu_1", "prompt": "Which color?", "options": ["Red", "Green", "Blue"]}


@pytest.fixture
def run(fake_provider, git_repo, transactional_db):
    return services.run_start(provider_id="fake", repository=git_repo, branch="lab/answer-1")


@pytest.fixture
def asking(run):
    fake_raise_dialog(run.transcript_path, DIALOG)
    return run


def answers_sent(fake_provider):
    return [s for s in fake_provider.sent if s[0] == "answer"]


def test_the_page_renders_the_dialog_as_an_htmx_form(authed_client, asking):
    body = authed_client.get(f"/runs/{asking.pk}/").content.decode()
    assert f'hx-post="/runs/{asking.pk}/answer/"' in body
    assert 'type="radio" name="answers-0" value="1"' in body
    assert 'name="answers-0-text"' in body and 'name="tool_use_id" value="toolu_1"' in body
    assert "Fake Agent asks" in body and "Claude" not in body


def test_an_answer_reaches_the_provider_once_and_the_form_is_a_note(authed_client, asking, fake_provider):
    data = {"tool_use_id": "toolu_1", "count": "1", "answers-0": "1"}
    r = authed_client.post(f"/runs/{asking.pk}/answer/", data)
    assert r.status_code == 200
    body = r.content.decode()
    assert "Answer sent" in body and "Green" in body and "<form" not in body
    assert answers_sent(fake_provider) == [("answer", ("toolu_1", (Answer(choices=(1,)),)))]


def test_a_second_answer_is_409_and_nothing_is_sent(authed_client, asking, fake_provider):
    data = {"tool_use_id": "toolu_1", "count": "1", "answers-0": "0"}
    assert authed_client.post(f"/runs/{asking.pk}/answer/", data).status_code == 200
    fake_raise_dialog(asking.transcript_path, DIALOG)  # even if the dialog still looked pending
    r = authed_client.post(f"/runs/{asking.pk}/answer/", data)
    assert r.status_code == 409 and "already been answered" in r.content.decode()
    assert len(answers_sent(fake_provider)) == 1


def test_a_stale_tool_use_id_is_409(authed_client, asking, fake_provider):
    data = {"tool_use_id": "toolu_old", "count": "1", "answers-0": "0"}
    r = authed_client.post(f"/runs/{asking.pk}/answer/", data)
    assert r.status_code == 409 and "no longer waiting" in r.content.decode()
    assert answers_sent(fake_provider) == []


@pytest.mark.parametrize(
    "data",
    [
        {"count": "1", "answers-0": "0"},  # no tool_use_id
        {"tool_use_id": "toolu_1", "answers-0": "0"},  # no count
        {"tool_use_id": "toolu_1", "count": "9", "answers-0": "0"},
        {"tool_use_id": "toolu_1", "count": "1", "answers-0": "x"},
        {"tool_use_id": "toolu_1", "count": "1", "answers-0": "7"},  # out of range
        {"tool_use_id": "toolu_1", "count": "1", "answers-0": ["0", "1"]},  # two for a single-select
        {"tool_use_id": "toolu_1", "count": "1"},  # nothing chosen
        {"tool_use_id": "toolu_1", "count": "2", "answers-0": "0", "answers-1": "0"},  # wrong count
    ],
)
def test_a_malformed_answer_is_422_and_nothing_is_sent(authed_client, asking, fake_provider, data):
    r = authed_client.post(f"/runs/{asking.pk}/answer/", data)
    assert r.status_code == 422, r.content
    assert 'role="alert"' in r.content.decode()
    assert answers_sent(fake_provider) == []


def test_a_refused_answer_can_be_corrected(authed_client, asking, fake_provider):
    bad = {"tool_use_id": "toolu_1", "count": "1", "answers-0": "7"}
    assert authed_client.post(f"/runs/{asking.pk}/answer/", bad).status_code == 422
    good = {"tool_use_id": "toolu_1", "count": "1", "answers-0": "2"}
    assert authed_client.post(f"/runs/{asking.pk}/answer/", good).status_code == 200


def test_twenty_concurrent_submits_send_exactly_one_keystroke_sequence(asking, fake_provider, monkeypatch):
    real = type(fake_provider).answer_dialog
    in_flight = threading.Event()

    def slow_answer(self, run, dialog, answers):
        in_flight.set()
        time.sleep(0.3)  # a real recipe takes seconds: the others arrive meanwhile
        return real(self, run, dialog, answers)

    monkeypatch.setattr(type(fake_provider), "answer_dialog", slow_answer)
    start = threading.Barrier(20)
    outcomes: list[str] = []
    guard = threading.Lock()

    def submit(i: int) -> None:
        start.wait()
        try:
            services.dialog_answer(run=asking, tool_use_id="toolu_1", answers=[Answer(choices=(i % 3,))])
            result = "ok"
        except StaleDialog:
            result = "stale"
        except DialogNotAnswerable as exc:  # pragma: no cover - would be a bug
            result = f"refused: {exc}"
        with guard:
            outcomes.append(result)

    threads = [threading.Thread(target=submit, args=(i,)) for i in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert sorted(outcomes) == ["ok"] + ["stale"] * 19
    assert len(answers_sent(fake_provider)) == 1
    # And afterwards a late one is refused too (the answered set, not only the lock).
    with pytest.raises(StaleDialog):
        services.dialog_answer(run=asking, tool_use_id="toolu_1", answers=[Answer(choices=(0,))])


def test_without_live_signals_the_transcript_dialog_is_used(settings, asking, fake_provider):
    from providers import registry

    settings.LAB_PROVIDERS = {"fake": "providers.testing.FakeWithoutLiveSignals"}
    registry._load.cache_clear()
    dialog = services.pending_dialog(asking)
    assert dialog is not None and dialog.tool_use_id == "toolu_1"
    from providers.schema import RunState

    assert services.run_state(asking, RunState.WORKING, dialog) == RunState.QUESTION


def test_decline_goes_through_as_an_empty_answer_list(authed_client, asking, fake_provider, monkeypatch):
    seen = []
    record = lambda _s, _r, _d, answers: seen.append(answers)  # noqa: E731
    monkeypatch.setattr(type(fake_provider), "answer_dialog", record)
    r = authed_client.post(f"/runs/{asking.pk}/answer/", {"tool_use_id": "toolu_1", "decline": "1"})
    assert r.status_code == 200 and "declined" in r.content.decode()
    assert seen == [()]


def test_a_plan_renders_markdown_above_four_buttons_and_a_feedback_field(authed_client, run):
    from providers.schema import Dialog, DialogKind, Option

    # Any provider's stable plan labels: the generic form renders whatever it is given.
    # The option that takes the operator's text gets the feedback field beside it.
    PLAN_OPTIONS = tuple(Option(label=f"Choice {i}", takes_text=i == 2) for i in range(4))

    body = "# Plan\n\n1. **x**"
    dialog = Dialog(tool_use_id="toolu_p", kind=DialogKind.PLAN, options=PLAN_OPTIONS, body=body)
    from django.template.loader import render_to_string

    html = render_to_string("runs/dialog.html", {"run": run, "dialog": dialog, "provider_name": "Fake Agent"})
    assert "<strong>x</strong>" in html
    assert html.count('name="answers-0" value=') == 4
    assert 'name="answers-0-text"' in html and "Feedback for “Choice 2”" in html
    assert re.search(r'value="2" class="[^"]*\bneeds-feedback\b', html)
    assert "Fake Agent has a plan" in html
    for option in PLAN_OPTIONS:
        assert option.label in html


def test_a_claim_held_by_another_worker_refuses_the_answer(asking, fake_provider):
    # Another daphne worker is sending an answer: its claim is a row, not this process's memory.
    DialogAnswer.objects.create(run=asking, tool_use_id="toolu_1")
    with pytest.raises(StaleDialog, match="being sent"):
        services.dialog_answer(run=asking, tool_use_id="toolu_1", answers=[Answer(choices=(0,))])
    assert answers_sent(fake_provider) == []


def test_an_answer_sent_by_another_worker_is_already_answered(asking, fake_provider):
    DialogAnswer.objects.create(run=asking, tool_use_id="toolu_1", state=DialogAnswer.State.SENT)
    with pytest.raises(StaleDialog, match="already been answered"):
        services.dialog_answer(run=asking, tool_use_id="toolu_1", answers=[Answer(choices=(0,))])
    assert answers_sent(fake_provider) == []


def test_a_claim_abandoned_by_a_dead_worker_counts_as_sent(asking, fake_provider):
    old = timezone.now() - timedelta(seconds=services.STALE_CLAIM_S + 1)
    DialogAnswer.objects.create(run=asking, tool_use_id="toolu_1", created_at=old)
    with pytest.raises(StaleDialog, match="already been answered"):
        services.dialog_answer(run=asking, tool_use_id="toolu_1", answers=[Answer(choices=(0,))])
    assert answers_sent(fake_provider) == []


def test_a_refused_answer_releases_its_claim(asking, fake_provider):
    with pytest.raises(DialogNotAnswerable):
        services.dialog_answer(run=asking, tool_use_id="toolu_1", answers=[Answer(choices=(9,))])
    assert not DialogAnswer.objects.filter(run=asking).exists()
    services.dialog_answer(run=asking, tool_use_id="toolu_1", answers=[Answer(choices=(1,))])
    assert DialogAnswer.objects.get(run=asking).state == DialogAnswer.State.SENT


APPROVAL = {
    "tool_use_id": "toolu_a",
    "kind": "approval",
    "header": "Shell",
    "prompt": "Run a shell command: tidy up",
    "body": "rm -rf build/",
    "free_text": False,
    "options": ["Allow once", {"label": "Deny with a reason", "takes_text": True}, "Deny"],
}


def test_an_approval_is_needs_input_with_its_dialog_on_the_page(authed_client, run, fake_provider):
    fake_raise_dialog(run.transcript_path, APPROVAL)
    body = authed_client.get(f"/runs/{run.pk}/").content.decode()
    assert 'data-state="needs_input"' in body and "Fake Agent needs input" in body
    assert '<form class="dialog dialog-approval"' in body and '<pre class="asked">rm -rf build/</pre>' in body
    assert "Fake Agent asks permission to run a shell command: tidy up" in body
    assert body.count('name="answers-0" value=') == 3 and "Feedback for “Deny with a reason”" in body
    assert "that lab does not answer for you" not in body  # this one it offers to the operator
    assert answers_sent(fake_provider) == []  # offered, never answered without a click


def test_an_approval_is_answered_with_the_option_and_its_text(authed_client, run, fake_provider):
    fake_raise_dialog(run.transcript_path, APPROVAL)
    data = {"tool_use_id": "toolu_a", "count": "1", "answers-0": "1", "answers-0-text": "keep build/"}
    r = authed_client.post(f"/runs/{run.pk}/answer/", data)
    assert r.status_code == 200 and "Deny with a reason" in r.content.decode()
    assert answers_sent(fake_provider) == [
        ("answer", ("toolu_a", (Answer(choices=(1,), text="keep build/"),)))
    ]


def test_one_answer_at_a_time_per_run_even_for_another_dialog(asking, fake_provider):
    DialogAnswer.objects.create(run=asking, tool_use_id="toolu_other")  # in flight elsewhere
    with pytest.raises(StaleDialog, match="Another answer for this run"):
        services.dialog_answer(run=asking, tool_use_id="toolu_1", answers=[Answer(choices=(0,))])
    assert answers_sent(fake_provider) == []


ASKS_PERMISSION = {
    "tool_use_id": "toolu_2",
    "kind": "approval",
    "prompt": "Run a shell command",
    "options": ["Allow once", {"label": "Deny, and tell the agent", "takes_text": True}, "Deny"],
}


def test_an_interrupt_while_a_dialog_is_pending_is_409_and_sends_nothing(authed_client, run, fake_provider):
    """An interrupt's key would answer the prompt for the operator, and an answer racing it would
    then be typed as a new prompt: refused, saying what to do instead."""
    fake_raise_dialog(run.transcript_path, ASKS_PERMISSION)
    r = authed_client.post(f"/runs/{run.pk}/interrupt/")
    assert r.status_code == 409
    assert r.content.decode() == (
        "Fake Agent is asking permission: allow or deny it above. The interrupt was not sent: "
        "its key would have answered for you."
    )
    fake_raise_dialog(run.transcript_path, DIALOG)
    r = authed_client.post(f"/runs/{run.pk}/interrupt/")
    assert r.status_code == 409 and "asking a question: answer or decline it above" in r.content.decode()
    assert fake_provider.sent == []
    # The dialog is still the operator's to answer.
    data = {"tool_use_id": "toolu_1", "count": "1", "answers-0": "2"}
    assert authed_client.post(f"/runs/{run.pk}/answer/", data).status_code == 200
    assert authed_client.post(f"/runs/{run.pk}/interrupt/").status_code == 204
    assert [s[0] for s in fake_provider.sent] == ["answer", "interrupt"]


def test_an_answer_whose_keys_may_have_left_is_never_sent_again(
    authed_client, asking, fake_provider, monkeypatch
):
    """The provider raised after its keys went (typed, then nothing recorded): the claim stays, so
    a second click, even with the dialog still showing, sends no second key sequence."""
    from providers.errors import ReplyNotDelivered

    def sent_then_unrecorded(self, run, dialog, answers):
        self.sent.append(("answer", (dialog.tool_use_id, tuple(answers))))
        raise ReplyNotDelivered("The answer was sent but the agent has not recorded it.")

    monkeypatch.setattr(type(fake_provider), "answer_dialog", sent_then_unrecorded)
    data = {"tool_use_id": "toolu_1", "count": "1", "answers-0": "1"}
    r = authed_client.post(f"/runs/{asking.pk}/answer/", data)
    assert r.status_code == 502 and "has not recorded it" in r.content.decode()
    assert services.pending_dialog(asking) is not None  # the agent still shows it
    r = authed_client.post(f"/runs/{asking.pk}/answer/", data)
    assert r.status_code == 409 and "already been answered" in r.content.decode()
    assert len(answers_sent(fake_provider)) == 1


def test_the_dialog_is_read_after_the_claim_so_a_replaced_one_gets_no_stale_answer(
    asking, fake_provider, monkeypatch
):
    """The agent replaced the dialog while this answer waited for its claim (another worker's
    row, a slow database): the answer was for the old one, so nothing is sent."""
    real_claim = services._claim_answer

    def slow_claim(run, tool_use_id):
        fake_raise_dialog(
            run.transcript_path, {**DIALOG, "tool_use_id": "toolu_next", "prompt": "Which size?"}
        )
        return real_claim(run, tool_use_id)

    monkeypatch.setattr(services, "_claim_answer", slow_claim)
    with pytest.raises(StaleDialog, match="no longer waiting"):
        services.dialog_answer(run=asking, tool_use_id="toolu_1", answers=[Answer(choices=(0,))])
    assert answers_sent(fake_provider) == []
    assert not DialogAnswer.objects.filter(run=asking).exists()  # refused unsent: claim released
