"""Resume: an ended run's worktree lists the CLI's conversations (the one a live run has is
marked, not offered), Resume starts a new run on one, and two live runs never resume the same
session, held by the database whichever worker starts them. Against the FakeProvider given the
capability; Claude Code's is proven live in compat/claude_code/tests/test_live_resume.py."""

from __future__ import annotations

import time

import pytest
from django.db import IntegrityError, transaction

from providers.schema import SessionInfo
from runs import services
from runs.models import Run
from tests.factories import RunFactory

SESSION = "0b5c3f7e-1111-4222-8333-944455556666"


@pytest.fixture
def ended(fake_provider, git_repo, db):
    run = services.run_start(provider_id="fake", repository=git_repo, branch="lab/resume-1")
    services.run_end(run=run)
    run.refresh_from_db()
    return run


@pytest.fixture
def listed(fake_provider, monkeypatch):
    def sessions(self, worktree):
        return [SessionInfo(SESSION, "/x.jsonl", "fix the login bug", time.time() - 120, 2048)]

    monkeypatch.setattr(type(fake_provider), "sessions", sessions, raising=False)


def test_two_live_runs_never_hold_one_resumed_session(db):
    RunFactory(resumes=SESSION)
    RunFactory(resumes=SESSION, ended_at="2026-01-01T00:00:00Z")  # an ended one does not count
    with pytest.raises(IntegrityError), transaction.atomic():
        RunFactory(resumes=SESSION)
    RunFactory(resumes="")
    RunFactory(resumes="")  # new sessions claim nothing


def test_an_ended_runs_worktree_lists_its_conversations_with_resume(authed_client, ended, listed):
    body = authed_client.get(f"/runs/{ended.pk}/sessions/").content.decode()
    assert "fix the login bug" in body and "2.0\xa0KB" in body and "2\xa0minutes ago" in body
    assert f'name="session" value="{SESSION}"' in body and ">Resume</button>" in body


def test_resume_starts_a_new_run_on_the_session(authed_client, ended, listed):
    r = authed_client.post(f"/runs/{ended.pk}/resume/", {"session": SESSION})
    assert r.status_code == 200
    new = Run.objects.live().get()
    assert r["HX-Redirect"] == new.get_absolute_url()
    assert new.resumes == SESSION and new.branch == ended.branch and new.worktree == ended.worktree
    # Listed again, the session says which live run has it and offers no second Resume.
    body = authed_client.get(f"/runs/{ended.pk}/sessions/").content.decode()
    assert "open in the live run" in body and new.name in body and ">Resume</button>" not in body


def test_a_second_resume_of_a_held_session_is_refused_saying_which_run(
    authed_client, ended, listed, git_repo, monkeypatch
):
    holder = services.run_start(provider_id="fake", repository=git_repo, branch="lab/other", resume=SESSION)
    r = authed_client.post(f"/runs/{ended.pk}/resume/", {"session": SESSION})
    assert r.status_code == 409
    assert f"Session {SESSION} is in use by the live run “{holder.name}”: end it first." in r.content.decode()
    # Two workers that both pass the check: the database refuses the second row.
    monkeypatch.setattr(services, "_refuse_taken", lambda provider_id, session_id: None)
    with pytest.raises(services.SessionTaken, match="being resumed by another live run"):
        services.run_resume(run=ended, session_id=SESSION)
    assert Run.objects.live().count() == 1
