"""Runs keep out of each other's way and out of the operator's own checkout; the new-run form
says what is wrong next to the field it is about."""

import os
import re
import subprocess
from pathlib import Path

import pytest

from providers.testing import returns_within
from runs import services
from runs.models import Run
from seeding import worktrees

pytestmark = pytest.mark.django_db


@pytest.fixture
def form_post(authed_client, fake_provider, git_repo):
    fake_provider.logged_in = True

    def post(**fields):
        data = {"provider": "fake", "repository": str(git_repo), **fields}
        return authed_client.post("/runs/new/", data)

    return post


def field_errors(body, name):
    """The error list rendered inside the <div class="field"> of the named input."""
    for block in re.findall(r'<div class="field">.*?</div>', body, re.S):
        if f'name="{name}"' in block:
            return " ".join(re.findall(r'<ul class="errorlist[^"]*"[^>]*>(.*?)</ul>', block, re.S))
    raise AssertionError(f"no field {name}")


def test_a_branch_checked_out_in_the_operators_checkout_is_refused(form_post, git_repo):
    response = form_post(branch="main")
    body = response.content.decode()
    assert response.status_code == 422
    assert "your main checkout" in field_errors(body, "branch")
    assert not Run.objects.exists()
    # Nothing was seeded or started in the operator's folder.
    status = subprocess.run(["git", "status", "--porcelain", "--ignored"], cwd=git_repo, capture_output=True)
    assert status.stdout == b""


def test_a_branch_a_live_run_works_on_is_refused(form_post, fake_provider, git_repo):
    first = services.run_start(provider_id="fake", repository=git_repo, branch="lab/shared")
    response = form_post(branch="lab/shared", name="second")
    assert response.status_code == 422
    errors = field_errors(response.content.decode(), "branch")
    assert "in use by the live run" in errors and repr(first.name) in errors.replace("&#x27;", "'")
    assert list(Run.objects.values_list("name", flat=True)) == [first.name]


def test_an_ended_runs_branch_continues_in_its_worktree(fake_provider, git_repo):
    first = services.run_start(provider_id="fake", repository=git_repo, branch="lab/again")
    services.run_end(run=first)
    second = services.run_start(provider_id="fake", repository=git_repo, branch="lab/again")
    assert second.worktree == first.worktree


def test_a_run_whose_tui_died_does_not_hold_its_branch(fake_provider, git_repo):
    from providers.tmux import Tmux

    first = services.run_start(provider_id="fake", repository=git_repo, branch="lab/dead")
    Tmux(first.tmux_socket).kill_session(first.tmux_session)
    second = services.run_start(provider_id="fake", repository=git_repo, branch="lab/dead")
    first.refresh_from_db()
    assert first.is_ended and second.worktree == first.worktree


def test_an_existing_branch_without_a_worktree_gets_one(fake_provider, git_repo):
    subprocess.run(["git", "branch", "kept"], cwd=git_repo, check=True)
    run = services.run_start(provider_id="fake", repository=git_repo, branch="kept")
    assert Path(run.worktree) != git_repo and worktrees.worktree_find(git_repo, "kept") == Path(run.worktree)


def test_a_start_ref_for_an_existing_branch_is_refused_next_to_it(form_post, git_repo):
    subprocess.run(["git", "branch", "kept"], cwd=git_repo, check=True)
    response = form_post(branch="kept", base_ref="HEAD")
    assert response.status_code == 422
    assert "applies only to a new branch" in field_errors(response.content.decode(), "base_ref")


def test_an_unknown_start_ref_is_reported_next_to_it(form_post):
    response = form_post(branch="lab/x", base_ref="nope")
    assert "not a commit" in field_errors(response.content.decode(), "base_ref")


def test_a_name_a_live_run_has_is_refused_next_to_it(form_post, fake_provider, git_repo):
    services.run_start(provider_id="fake", repository=git_repo, branch="lab/one", name="twin")
    response = form_post(branch="lab/two", name="twin")
    assert response.status_code == 422
    assert "already called" in field_errors(response.content.decode(), "name")


def test_default_names_are_made_unique(fake_provider, git_repo):
    a = services.run_start(provider_id="fake", repository=git_repo, branch="alice/fix")
    b = services.run_start(provider_id="fake", repository=git_repo, branch="bob/fix")
    assert (a.name, b.name) == ("fix", "fix-2")


def test_the_name_rule_is_shown_and_checked_before_submitting(authed_client, fake_provider, form_post):
    body = authed_client.get("/runs/new/").content.decode()
    assert "starting with a letter or digit" in body
    assert re.search(r'<input type="text" name="name"[^>]* pattern="[^"]+"', body)
    response = form_post(branch="lab/y", name="-bad name")
    assert "starting with a letter or digit" in field_errors(response.content.decode(), "name")


# --- removing a worktree ------------------------------------------------------------------------


@pytest.fixture
def shared(fake_provider, git_repo):
    """An ended run and a live one in the same worktree (started before lab refused that)."""
    old = services.run_start(provider_id="fake", repository=git_repo, branch="lab/both")
    services.run_end(run=old)
    live = services.run_start(provider_id="fake", repository=git_repo, branch="lab/both")
    assert live.worktree == old.worktree
    return old, live


def test_an_ended_run_never_offers_to_remove_a_live_runs_worktree(authed_client, shared):
    old, live = shared
    body = authed_client.get(f"/runs/{old.pk}/").content.decode()
    assert "Remove the worktree" not in body
    assert f'<a href="/runs/{live.pk}/">{live.name}</a>' in body
    response = authed_client.post(f"/runs/{old.pk}/remove-worktree/", {"confirm": "1"})
    assert response.status_code == 409 and "no live run uses it" in response.content.decode()
    assert Path(old.worktree).is_dir()
    live.refresh_from_db()
    assert not live.is_ended


def test_a_fifo_as_the_start_lock_is_a_clear_refusal_not_a_hang(fake_provider, git_repo, db):
    root = services.worktrees_root()
    root.mkdir(parents=True, exist_ok=True)
    os.mkfifo(root / ".lab-start.lock")
    start = lambda: services.run_start(provider_id="fake", repository=git_repo, branch="lab/fifo-lock")  # noqa: E731
    with pytest.raises(worktrees.WorktreeError, match=r"start lock .* must be a plain file"):
        returns_within(start)
    assert not Run.objects.exists()
