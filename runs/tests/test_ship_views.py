"""Review and ship from the Changes page: diff comments sent as one message through the reply
path, commit, push, pull request link and merge back, with real git (the generic layer here;
tests/browser/test_ship_browser.py drives the real CLI)."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
from pathlib import Path

import pytest

from providers.schema import Dialog, DialogKind
from runs import services
from runs.changes_views import numbered
from seeding import changes

GIT = ["git", "-c", "user.name=lab-test", "-c", "user.email=lab-test@example.invalid"]


@pytest.fixture(autouse=True)
def identity(monkeypatch: pytest.MonkeyPatch) -> None:
    for who in ("AUTHOR", "COMMITTER"):
        monkeypatch.setenv(f"GIT_{who}_NAME", "Operator")
        monkeypatch.setenv(f"GIT_{who}_EMAIL", "op@example.invalid")


@pytest.fixture
def run(fake_provider, git_repo, db):
    return services.run_start(provider_id="fake", repository=git_repo, branch="lab/ship-1")


def git(cwd: Path, *args: str) -> str:
    return subprocess.run([*GIT, *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


COMMENTS = [
    {
        "path": "app.py",
        "start": 2,
        "end": 3,
        "old": False,
        "code": ["+a = 1", "+b = 2"],
        "text": "Rename these",
    },
    {
        "path": "README.md",
        "start": 1,
        "end": 1,
        "old": True,
        "code": ["-# test repo"],
        "text": "Keep the title",
    },
]


def replies(fake_provider) -> list[str]:
    return [str(text) for kind, text in fake_provider.sent if kind == "reply"]


def test_it_records_the_branch_the_run_started_from(run):
    assert run.base_branch == "main"


def test_two_comments_go_as_one_message_with_both_places(authed_client, run, fake_provider):
    r = authed_client.post(f"/runs/{run.pk}/changes/review/", {"comments": json.dumps(COMMENTS)})
    assert r.status_code == 200, r.content
    assert "Sent 2 comments as one message." in r.content.decode()
    assert "lab-review-sent" in r.headers["HX-Trigger"]
    [message] = replies(fake_provider)
    assert "`app.py:2-3`\n```diff\n+a = 1\n+b = 2\n```\nRename these" in message
    assert "`README.md:1 (removed lines; old file)`" in message and "Keep the title" in message


def test_comments_are_refused_while_the_agent_asks_and_nothing_is_sent(
    authed_client, run, fake_provider, monkeypatch
):
    asking = Dialog(kind=DialogKind.QUESTION, tool_use_id="t1", questions=())
    monkeypatch.setattr(services, "pending_dialog", lambda _run: asking)
    r = authed_client.post(f"/runs/{run.pk}/changes/review/", {"comments": json.dumps(COMMENTS)})
    assert r.status_code == 409
    assert "asking a question" in r.content.decode()
    assert "HX-Trigger" not in r.headers  # the tray keeps its comments
    assert replies(fake_provider) == []


def test_an_empty_comment_is_refused_and_nothing_is_sent(authed_client, run, fake_provider):
    bad = [dict(COMMENTS[0], text="  ")]
    r = authed_client.post(f"/runs/{run.pk}/changes/review/", {"comments": json.dumps(bad)})
    assert r.status_code == 422
    assert "is empty" in r.content.decode() and "your comments are kept" in r.content.decode()
    assert replies(fake_provider) == []


def test_a_code_fence_inside_the_code_cannot_close_the_quote(authed_client, run, fake_provider):
    fenced = [dict(COMMENTS[0], code=["+```", "+x"])]
    authed_client.post(f"/runs/{run.pk}/changes/review/", {"comments": json.dumps(fenced)})
    [message] = replies(fake_provider)
    assert "````diff\n+```\n+x\n````" in message


def test_the_diff_rows_carry_old_and_new_line_numbers(run):
    wt = Path(run.worktree)
    (wt / "README.md").write_text("# test repo\nsecond\n")
    [change] = [f for f in changes.worktree_changes(worktree=wt, base=run.base_commit).sections["unstaged"]]
    nums = [n for n, line in zip(numbered(change), change.lines, strict=True) if line.kind in ("add", "ctx")]
    assert nums == [(1, 1), (0, 2)]


def test_the_page_offers_line_picks_commit_push_and_merge(authed_client, run):
    (Path(run.worktree) / "app.py").write_text("x = 1\n")
    body = authed_client.get(f"/runs/{run.pk}/changes/").content.decode()
    assert 'class="line-pick"' in body and 'data-new="1"' in body
    assert 'form="commit-form" name="paths" value="app.py"' in body
    assert "This repository has no remote" in body
    assert 'id="merge-into" name="into" value="main"' in body


def test_commit_from_the_page_commits_the_selected_files(authed_client, run):
    wt = Path(run.worktree)
    (wt / "a.txt").write_text("a\n")
    (wt / "b.txt").write_text("b\n")
    r = authed_client.post(
        f"/runs/{run.pk}/changes/commit/", {"message": "Add a", "scope": "selected", "paths": ["a.txt"]}
    )
    assert r.status_code == 200, r.content
    assert "lab-changes-moved" in r.headers["HX-Trigger"]
    assert git(wt, "log", "-1", "--format=%s").strip() == "Add a"
    assert git(wt, "status", "--porcelain").strip() == "?? b.txt"


def test_a_refused_commit_says_gits_words(authed_client, run):
    r = authed_client.post(f"/runs/{run.pk}/changes/commit/", {"message": "Nothing", "scope": "all"})
    assert r.status_code == 409
    assert "nothing to commit" in r.content.decode()
    assert r.headers["HX-Reswap"] == "innerHTML"


def test_ask_the_agent_to_commit_goes_through_the_chat(authed_client, run, fake_provider):
    r = authed_client.post(f"/runs/{run.pk}/changes/ask-commit/")
    assert r.status_code == 200
    assert replies(fake_provider) == [services_ask()]


def services_ask() -> str:
    from runs.ship_views import ASK_TO_COMMIT

    return ASK_TO_COMMIT


def test_push_lands_in_the_bare_remote_and_offers_the_pr_link(authed_client, run, git_repo, tmp_path):
    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    git(git_repo, "remote", "add", "origin", str(bare))
    wt = Path(run.worktree)
    (wt / "a.txt").write_text("a\n")
    authed_client.post(f"/runs/{run.pk}/changes/commit/", {"message": "Add a", "scope": "all"})
    r = authed_client.post(f"/runs/{run.pk}/changes/push/", {"remote": "origin"})
    assert r.status_code == 200, r.content
    assert git(bare, "rev-parse", "refs/heads/lab/ship-1") == git(wt, "rev-parse", "HEAD")
    assert "does not recognise this remote" in r.content.decode()  # a local path: no link
    git(git_repo, "remote", "set-url", "--push", "origin", "git@github.com:acme/app.git")
    page = authed_client.get(f"/runs/{run.pk}/changes/").content.decode()
    assert "origin (git@github.com:acme/app.git)" in page


def test_merge_back_refuses_a_dirty_main_checkout(authed_client, run, git_repo):
    wt = Path(run.worktree)
    (wt / "a.txt").write_text("a\n")
    authed_client.post(f"/runs/{run.pk}/changes/commit/", {"message": "Add a", "scope": "all"})
    (git_repo / "README.md").write_text("operator's edit\n")
    r = authed_client.post(f"/runs/{run.pk}/changes/merge/", {"into": "main", "mode": "ff", "confirm": "on"})
    assert r.status_code == 409
    assert "uncommitted changes" in r.content.decode() and "README.md" in r.content.decode()
    (git_repo / "README.md").write_text("# test repo\n")
    r = authed_client.post(f"/runs/{run.pk}/changes/merge/", {"into": "main", "mode": "ff", "confirm": "on"})
    assert r.status_code == 200, r.content
    assert (git_repo / "a.txt").read_text() == "a\n"


def test_create_pull_request_with_a_logged_in_gh(authed_client, run, git_repo, tmp_path, monkeypatch):
    """gh is not on this machine: a stand-in on PATH says it is logged in and records its argv."""
    stubs = tmp_path / "stubbin"
    stubs.mkdir()
    record = tmp_path / "gh.argv"
    gh = stubs / "gh"
    gh.write_text(
        f'#!/bin/sh\nprintf "%s\\n" "$@" >> {record}\n[ "$1" = auth ] && exit 0\n'
        'echo "https://github.com/acme/app/pull/9"\n'
    )
    gh.chmod(0o755)
    monkeypatch.setenv("PATH", f"{stubs}:{os.environ['PATH']}")
    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    git(git_repo, "remote", "add", "origin", "git@github.com:acme/app.git")
    git(git_repo, "remote", "set-url", "--push", "origin", str(bare))
    (Path(run.worktree) / "a.txt").write_text("a\n")
    authed_client.post(f"/runs/{run.pk}/changes/commit/", {"message": "Add a", "scope": "all"})
    pushed = authed_client.post(f"/runs/{run.pk}/changes/push/", {"remote": "origin"}).content.decode()
    assert "https://github.com/acme/app/compare/main...lab%2Fship-1?expand=1" in pushed
    assert "Create pull request" in pushed
    r = authed_client.post(f"/runs/{run.pk}/changes/pull-request/", {"remote": "origin"})
    assert r.status_code == 200, r.content
    assert 'href="https://github.com/acme/app/pull/9"' in r.content.decode()
    argv = record.read_text().splitlines()
    create = argv[argv.index("pr") :]
    assert create == [
        "pr", "create", "--repo", "github.com/acme/app", "--head", "lab/ship-1", "--base", "main",
        "--title", "ship-1", "--body", "- Add a",
    ]  # fmt: skip


def test_a_squash_is_titled_with_the_run_and_lists_its_commits(authed_client, run, git_repo):
    git(git_repo, "branch", "other")
    (Path(run.worktree) / "a.txt").write_text("a\n")
    authed_client.post(f"/runs/{run.pk}/changes/commit/", {"message": "Add a", "scope": "all"})
    r = authed_client.post(f"/runs/{run.pk}/changes/merge/", {"into": "other", "mode": "squash"})
    assert r.status_code == 200, r.content
    assert "Squashed lab/ship-1 into other as " in r.content.decode()
    assert git(git_repo, "log", "-1", "--format=%B", "other").strip() == "ship-1\n\n- Add a"


def test_a_commit_and_a_squash_scrub_attribution_when_the_run_turned_it_off(
    authed_client, run, git_repo, fake_provider, monkeypatch
):
    meta = dataclasses.replace(fake_provider.seed_meta(), scrub_patterns=(r"^Co-Authored-By: Agent.*$",))
    monkeypatch.setattr(type(fake_provider), "seed_meta", lambda _self: meta)
    run.attribution = False
    run.save(update_fields=["attribution"])
    git(git_repo, "branch", "other")
    (Path(run.worktree) / "a.txt").write_text("a\n")
    message = "Add a\n\nCo-Authored-By: Agent <agent@example.invalid>"
    authed_client.post(f"/runs/{run.pk}/changes/commit/", {"message": message, "scope": "all"})
    assert git(Path(run.worktree), "log", "-1", "--format=%B").strip() == "Add a"
    git(Path(run.worktree), "commit", "-q", "--allow-empty", "-m", "Empty\n\nCo-Authored-By: Agent <a@b>")
    authed_client.post(f"/runs/{run.pk}/changes/merge/", {"into": "other", "mode": "squash"})
    assert "Co-Authored-By" not in git(git_repo, "log", "-1", "--format=%B", "other")
