"""POST /runs/<id>/reply/: what the page says and what reaches the provider, against the
FakeProvider (the real adapter's behaviour is proven in compat/claude_code/tests/test_live_replies.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from providers.errors import ReplyInFlight
from providers.testing import fake_raise_dialog
from runs import services

DIALOG = {"tool_use_id": "toolu_1", "prompt": "Which color?", "options": ["Red", "Green"]}


@pytest.fixture
def run(fake_provider, git_repo, db):
    return services.run_start(provider_id="fake", repository=git_repo, branch="lab/reply-1")


def replies_sent(fake_provider):
    return [s for s in fake_provider.sent if s[0] == "reply"]


def test_it_refuses_a_reply_while_a_question_is_pending(authed_client, run, fake_provider):
    fake_raise_dialog(run.transcript_path, DIALOG)
    r = authed_client.post(f"/runs/{run.pk}/reply/", {"text": "No! Do not do that."})
    assert r.status_code == 409
    body = r.content.decode()
    assert "Fake Agent is asking a question: answer it above. Nothing was sent." in body
    assert "No! Do not do that." in body  # the draft is kept
    assert replies_sent(fake_provider) == []


def test_it_refuses_a_reply_and_new_conversation_while_permission_is_asked(authed_client, run, fake_provider):
    Path(run.transcript_path + ".blocked").touch()
    r = authed_client.post(f"/runs/{run.pk}/reply/", {"text": "go ahead"})
    assert r.status_code == 409 and "Fake Agent is asking permission" in r.content.decode()
    # The New conversation button: its note, beside it (the composer and its draft stay).
    r = authed_client.post(f"/runs/{run.pk}/reply/", {"text": "/new", "source": "new-conversation"})
    assert r.status_code == 409
    body = r.content.decode()
    assert body.startswith('<span id="new-conversation-note" class="error" role="alert">')
    assert "Fake Agent is asking permission" in body and "composer" not in body
    assert replies_sent(fake_provider) == []


def test_new_conversation_from_its_button_leaves_the_composer_alone(authed_client, run, fake_provider):
    r = authed_client.post(f"/runs/{run.pk}/reply/", {"text": "/new", "source": "new-conversation"})
    assert r.status_code == 200 and r.content.decode() == '<span id="new-conversation-note"></span>'
    assert replies_sent(fake_provider) == [("reply", "/new")]


def test_it_refuses_a_command_the_catalog_marks_not_chat_safe_with_its_reason(
    authed_client, run, fake_provider
):
    r = authed_client.post(f"/runs/{run.pk}/reply/", {"text": "/settings now"})
    assert r.status_code == 409
    assert "/settings is not available from the chat: it opens a UI." in r.content.decode()
    assert replies_sent(fake_provider) == []


def test_it_refuses_a_refused_command_under_its_alias_naming_the_command(authed_client, run, fake_provider):
    # /quit is Claude Code's /exit: an alias the menu does not list runs the same command.
    r = authed_client.post(f"/runs/{run.pk}/reply/", {"text": "/prefs"})
    assert r.status_code == 409
    assert (
        "/prefs is /settings by another name, and is not available from the chat: it opens a UI."
        in r.content.decode()
    )
    assert replies_sent(fake_provider) == []


def test_the_beginning_of_a_refused_command_is_refused_too(authed_client, run, fake_provider):
    # The CLIs complete a command from its first letters on Enter (/qu ran /quit live).
    for typed in ("/se", "/pre"):
        r = authed_client.post(f"/runs/{run.pk}/reply/", {"text": typed})
        assert r.status_code == 409
        assert (
            f"{typed} is not sent from the chat: Fake Agent may complete it to a command it begins, "
            "such as /settings, which is not available from the chat: it opens a UI." in r.content.decode()
        )
    # A beginning only of commands the chat may send goes.
    assert authed_client.post(f"/runs/{run.pk}/reply/", {"text": "/ech"}).status_code == 200
    assert [t for _, t in replies_sent(fake_provider)] == ["/ech"]


def test_chat_safe_and_unknown_commands_and_paths_are_sent(authed_client, run, fake_provider):
    for text in ("/echo hi", "/nosuch", "/tmp/x is a path"):
        assert authed_client.post(f"/runs/{run.pk}/reply/", {"text": text}).status_code == 200
    assert [t for _, t in replies_sent(fake_provider)] == ["/echo hi", "/nosuch", "/tmp/x is a path"]


def test_a_resend_that_may_duplicate_offers_a_deliberate_second_copy(
    authed_client, run, fake_provider, monkeypatch
):
    calls = []

    def reply(handle, text, *, again=False):
        calls.append((text, again))
        if not again:
            raise ReplyInFlight("The same message was sent 3 s ago and has not been recorded yet.")

    monkeypatch.setattr(fake_provider, "reply", reply)
    r = authed_client.post(f"/runs/{run.pk}/reply/", {"text": "same"})
    assert r.status_code == 409
    body = r.content.decode()
    assert "has not been recorded yet" in body and 'name="again"' in body and "same" in body
    r = authed_client.post(f"/runs/{run.pk}/reply/", {"text": "same", "again": "on"})
    assert r.status_code == 200
    assert calls == [("same", False), ("same", True)]


def test_a_run_whose_cli_has_not_started_shows_starting(authed_client, run, fake_provider, monkeypatch):
    monkeypatch.setattr(type(fake_provider), "connecting", lambda self, handle: True, raising=False)
    body = authed_client.get(f"/runs/{run.pk}/").content.decode()
    assert 'class="badge state-starting"' in body and "Fake Agent is starting" in body
    monkeypatch.setattr(type(fake_provider), "connecting", lambda self, handle: False, raising=False)
    body = authed_client.get(f"/runs/{run.pk}/").content.decode()
    assert 'class="badge state-idle"' in body and "is starting" not in body


def test_return_to_the_prompt_says_what_was_verified(authed_client, run, fake_provider, monkeypatch):
    url = f"/runs/{run.pk}/return-to-prompt/"
    r = authed_client.post(url)
    assert r.status_code == 200
    assert "lab cannot tell whether Fake Agent shows its prompt" in r.content.decode()
    cls = type(fake_provider)
    monkeypatch.setattr(cls, "at_prompt", lambda self, handle: False, raising=False)
    for back, says in ((True, "Fake Agent shows its prompt."), (False, "still does not show its prompt")):
        monkeypatch.setattr(cls, "return_to_prompt", lambda self, handle, back=back: back, raising=False)
        assert says in authed_client.post(url).content.decode()


def test_return_to_the_prompt_sends_nothing_while_the_run_asks(
    authed_client, run, fake_provider, monkeypatch
):
    cls = type(fake_provider)
    pressed = []
    monkeypatch.setattr(cls, "at_prompt", lambda self, handle: False, raising=False)
    monkeypatch.setattr(cls, "return_to_prompt", lambda self, handle: pressed.append(1), raising=False)
    fake_raise_dialog(run.transcript_path, DIALOG)
    r = authed_client.post(f"/runs/{run.pk}/return-to-prompt/")
    assert r.status_code == 409 and "asking a question" in r.content.decode()
    assert pressed == []


def test_the_idle_panel_offers_the_way_back(authed_client, run):
    body = authed_client.get(f"/runs/{run.pk}/").content.decode()
    assert f'hx-post="/runs/{run.pk}/return-to-prompt/"' in body and "Return to the prompt" in body
