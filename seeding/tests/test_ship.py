"""Commit, push, the pull request's link and merge back, with real git."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from seeding import commit_guard, ship
from seeding.tests.conftest import git

SCRUB = (r"^Co-Authored-By: Claude.*$",)


@pytest.fixture(autouse=True)
def identity(monkeypatch: pytest.MonkeyPatch) -> None:
    for who in ("AUTHOR", "COMMITTER"):
        monkeypatch.setenv(f"GIT_{who}_NAME", "Operator")
        monkeypatch.setenv(f"GIT_{who}_EMAIL", "op@example.invalid")


def hook(directory: Path, name: str, body: str = 'touch "$0.ran"\n') -> Path:
    """A repository hook that leaves a mark when it runs."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def do_commit(
    wt: Path, tmp_path: Path, message: str, paths: list[str] | None = None, scrub: bool = False
) -> str:
    return ship.commit(
        wt,
        message=message,
        paths=paths,
        hooks_dir=commit_guard.install_hooks(tmp_path / "lab-hooks"),
        seeded_paths=("CLAUDE.md",),
        scrub_patterns=SCRUB,
        scrub=scrub,
    )


def log(cwd: Path, rev: str = "HEAD", fmt: str = "%B") -> str:
    return git(cwd, "log", "-1", f"--format={fmt}", rev)


# --- commit -------------------------------------------------------------------------------------


def test_a_commit_of_all_changes_takes_new_edited_and_deleted_files(linked: Path, tmp_path: Path) -> None:
    (linked / "new.py").write_text("x = 1\n")
    (linked / "README.md").write_text("edited\n")
    do_commit(linked, tmp_path, "Ship it")
    assert log(linked).strip() == "Ship it"
    assert git(linked, "status", "--porcelain") == ""


def test_a_commit_of_selected_files_leaves_the_others(linked: Path, tmp_path: Path) -> None:
    (linked / "a.txt").write_text("a\n")
    (linked / "b.txt").write_text("b\n")
    do_commit(linked, tmp_path, "Only a", ["a.txt"])
    assert git(linked, "show", "--name-only", "--format=", "HEAD").split() == ["a.txt"]
    assert git(linked, "status", "--porcelain").strip() == "?? b.txt"


def test_the_guard_refuses_a_seeded_file_and_commits_nothing(linked: Path, tmp_path: Path) -> None:
    (linked / "CLAUDE.md").write_text("seeded\n")
    before = log(linked, fmt="%H")
    with pytest.raises(ship.ShipError, match="seeded into this worktree"):
        do_commit(linked, tmp_path, "With the seed", ["CLAUDE.md"])
    assert log(linked, fmt="%H") == before


def test_attribution_is_scrubbed_when_the_run_says_so(linked: Path, tmp_path: Path) -> None:
    (linked / "a.txt").write_text("a\n")
    do_commit(linked, tmp_path, "Work\n\nCo-Authored-By: Claude <x@y>\n", scrub=True)
    assert log(linked).strip() == "Work"


def test_the_repositorys_hooks_do_not_run_on_a_commit_from_lab(
    repo: Path, linked: Path, tmp_path: Path
) -> None:
    hooks = repo / ".git" / "hooks"
    for name in ("pre-commit", "commit-msg", "post-commit", "prepare-commit-msg"):
        hook(hooks, name)
    (linked / "a.txt").write_text("a\n")
    do_commit(linked, tmp_path, "Quiet")
    assert not list(hooks.glob("*.ran"))


def test_nothing_to_commit_shows_gits_own_words(linked: Path, tmp_path: Path) -> None:
    with pytest.raises(ship.ShipError, match="nothing to commit"):
        do_commit(linked, tmp_path, "Empty")


def test_an_empty_message_is_refused(linked: Path, tmp_path: Path) -> None:
    (linked / "a.txt").write_text("a\n")
    with pytest.raises(ship.ShipError, match="Write a commit message"):
        do_commit(linked, tmp_path, "  \n")


# --- push ---------------------------------------------------------------------------------------


@pytest.fixture
def bare(repo: Path, tmp_path: Path) -> Path:
    b = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(b))
    git(repo, "remote", "add", "origin", str(b))
    return b


def test_a_push_lands_in_the_remote_and_sets_the_upstream(linked: Path, bare: Path, tmp_path: Path) -> None:
    (linked / "a.txt").write_text("a\n")
    do_commit(linked, tmp_path, "To push")
    said = ship.push(linked, remote="origin", branch="run-1")
    assert "run-1 -> run-1" in said
    assert git(bare, "rev-parse", "refs/heads/run-1") == git(linked, "rev-parse", "HEAD")
    assert git(linked, "rev-parse", "--abbrev-ref", "run-1@{upstream}").strip() == "origin/run-1"


def test_a_push_runs_no_pre_push_hook_and_no_receive_pack_of_the_repositorys(
    repo: Path, linked: Path, bare: Path, tmp_path: Path
) -> None:
    hook(repo / ".git" / "hooks", "pre-push")
    planted = hook(tmp_path / "bin", "evil-receive-pack", 'touch "$0.ran"\nexit 1\n')
    git(repo, "config", "remote.origin.receivepack", str(planted))
    (linked / "a.txt").write_text("a\n")
    do_commit(linked, tmp_path, "To push")
    ship.push(linked, remote="origin", branch="run-1")
    assert not (repo / ".git" / "hooks" / "pre-push.ran").exists()
    assert not Path(f"{planted}.ran").exists()


def test_a_rejected_push_shows_gits_message(linked: Path, bare: Path, repo: Path, tmp_path: Path) -> None:
    (linked / "a.txt").write_text("a\n")
    do_commit(linked, tmp_path, "One")
    ship.push(linked, remote="origin", branch="run-1")
    git(linked, "reset", "-q", "--hard", "HEAD~1")
    (linked / "b.txt").write_text("b\n")
    do_commit(linked, tmp_path, "Diverged")
    with pytest.raises(ship.ShipError, match=r"(?s)git push failed.*rejected"):
        ship.push(linked, remote="origin", branch="run-1")


def test_no_remote_and_an_unknown_remote_are_said(linked: Path) -> None:
    with pytest.raises(ship.ShipError, match="no remote"):
        ship.push(linked, remote="origin", branch="run-1")


def test_only_the_remotes_own_protocol_is_allowed(linked: Path, repo: Path, tmp_path: Path) -> None:
    git(repo, "remote", "add", "helper", "ext::sh -c touch% /tmp/never")
    with pytest.raises(ship.ShipError, match="lab pushes over"):
        ship.push(linked, remote="helper", branch="run-1")


@pytest.mark.parametrize(
    ("url", "proto"),
    [
        ("git@github.com:o/r.git", "ssh"),
        ("ssh://git@host:22/o/r", "ssh"),
        ("https://github.com/o/r", "https"),
        ("/srv/git/r.git", "file"),
        ("file:///srv/r.git", "file"),
        ("ext::sh -c x", None),
    ],
)
def test_transport(url: str, proto: str | None) -> None:
    assert ship.transport(url) == proto


# --- pull request links -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "link"),
    [
        ("git@github.com:acme/app.git", "https://github.com/acme/app/compare/main...lab%2Ffix?expand=1"),
        ("https://github.com/acme/app", "https://github.com/acme/app/compare/main...lab%2Ffix?expand=1"),
        (
            "ssh://git@gitlab.com/group/sub/app.git",
            "https://gitlab.com/group/sub/app/-/merge_requests/new?merge_request%5Bsource_branch%5D=lab%2Ffix"
            "&merge_request%5Btarget_branch%5D=main",
        ),
        (
            "git@bitbucket.org:acme/app.git",
            "https://bitbucket.org/acme/app/pull-requests/new?source=lab%2Ffix&dest=main",
        ),
        ("https://codeberg.org/acme/app.git", "https://codeberg.org/acme/app/compare/main...lab%2Ffix"),
        (
            "git@forgejo.example.org:acme/app.git",
            "https://forgejo.example.org/acme/app/compare/main...lab%2Ffix",
        ),
        ("https://git.example.org/acme/app.git", None),
        ("/srv/git/app.git", None),
        ("https://github.com/acme", None),
    ],
)
def test_pull_request_link(url: str, link: str | None) -> None:
    assert ship.pull_request_url(url, branch="lab/fix", base="main") == link


def stub_cli(tmp_path: Path, name: str, logged_in: bool) -> Path:
    """A stand-in forge CLI on PATH that records its argv."""
    record = tmp_path / f"{name}.argv"
    body = (
        f'printf "%s\\n" "$@" >> {record}\n'
        f'if [ "$1" = auth ]; then exit {0 if logged_in else 1}; fi\n'
        'echo "https://github.com/acme/app/pull/7"\n'
    )
    hook(tmp_path / "stubbin", name, body)
    return record


def test_gh_is_used_only_when_installed_and_logged_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "stubbin"))
    assert ship.forge_cli("git@github.com:acme/app.git") is None  # not installed
    stub_cli(tmp_path, "gh", logged_in=False)
    assert ship.forge_cli("git@github.com:acme/app.git") is None
    stub_cli(tmp_path, "gh", logged_in=True)
    assert ship.forge_cli("git@github.com:acme/app.git") == "gh"
    assert ship.forge_cli("git@gitlab.com:acme/app.git") is None  # glab is not there


def test_create_pull_request_argv(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    record = stub_cli(tmp_path, "gh", logged_in=True)
    monkeypatch.setenv("PATH", str(tmp_path / "stubbin") + os.pathsep + os.environ["PATH"])
    link = ship.create_pull_request(
        "git@github.com:acme/app.git", branch="lab/fix", base="main", title="fix", body="- One"
    )
    assert link == "https://github.com/acme/app/pull/7"
    create = record.read_text().split("auth\nstatus\n--hostname\ngithub.com\n")[-1].splitlines()
    assert create == [
        "pr", "create", "--repo", "github.com/acme/app", "--head", "lab/fix", "--base", "main",
        "--title", "fix", "--body", "- One",
    ]  # fmt: skip


# --- merge back ---------------------------------------------------------------------------------


def work(linked: Path, tmp_path: Path, name: str = "a.txt", text: str = "a\n") -> None:
    (linked / name).write_text(text)
    do_commit(linked, tmp_path, f"Add {name}")


def test_fast_forward_into_a_branch_not_checked_out(repo: Path, linked: Path, tmp_path: Path) -> None:
    git(repo, "branch", "base")
    work(linked, tmp_path)
    done = ship.merge_back(repo, branch="run-1", into="base", mode="ff", confirmed=False)
    assert git(repo, "rev-parse", "base") == git(repo, "rev-parse", "run-1")
    assert "Fast-forwarded base" in done.message and "1 commit of run-1" in done.message


def test_fast_forward_of_the_main_checkout_needs_the_operators_word(
    repo: Path, linked: Path, tmp_path: Path
) -> None:
    work(linked, tmp_path)
    before = git(repo, "rev-parse", "main")
    with pytest.raises(ship.ShipError, match="confirm that lab may update"):
        ship.merge_back(repo, branch="run-1", into="main", mode="ff", confirmed=False)
    assert git(repo, "rev-parse", "main") == before
    done = ship.merge_back(repo, branch="run-1", into="main", mode="ff", confirmed=True)
    assert (repo / "a.txt").read_text() == "a\n"  # the checkout's files moved with the branch
    assert "main checkout" in done.message
    assert git(repo, "status", "--porcelain") == ""


def test_a_dirty_main_checkout_is_refused_with_its_files(repo: Path, linked: Path, tmp_path: Path) -> None:
    work(linked, tmp_path)
    (repo / "README.md").write_text("the operator's own edit\n")
    before = git(repo, "rev-parse", "main")
    with pytest.raises(ship.ShipError, match=r"(?s)uncommitted changes.*README\.md"):
        ship.merge_back(repo, branch="run-1", into="main", mode="squash", confirmed=True)
    assert git(repo, "rev-parse", "main") == before
    assert (repo / "README.md").read_text() == "the operator's own edit\n"


def test_squash_makes_one_commit_on_the_base(repo: Path, linked: Path, tmp_path: Path) -> None:
    work(linked, tmp_path, "a.txt")
    work(linked, tmp_path, "b.txt")
    git(repo, "commit", "-q", "--allow-empty", "-m", "main moved on")
    done = ship.merge_back(
        repo, branch="run-1", into="main", mode="squash", confirmed=True, message="Run one"
    )
    assert log(repo, fmt="%s%n%P").split("\n")[0] == "Run one"
    assert git(repo, "rev-list", "--count", "HEAD~1..HEAD").strip() == "1"
    assert sorted(git(repo, "show", "--name-only", "--format=", "HEAD").split()) == ["a.txt", "b.txt"]
    assert done.message.startswith("Squashed run-1 into main as ")


def test_fast_forward_is_refused_when_the_base_moved_on(repo: Path, linked: Path, tmp_path: Path) -> None:
    work(linked, tmp_path)
    git(repo, "commit", "-q", "--allow-empty", "-m", "main moved on")
    with pytest.raises(ship.ShipError, match="a fast-forward is not possible"):
        ship.merge_back(repo, branch="run-1", into="main", mode="ff", confirmed=True)


def test_a_conflicting_squash_is_refused_with_the_files(repo: Path, linked: Path, tmp_path: Path) -> None:
    work(linked, tmp_path, "README.md", "the agent's\n")
    (repo / "README.md").write_text("the operator's\n")
    git(repo, "commit", "-q", "-am", "operator")
    before = git(repo, "rev-parse", "main")
    with pytest.raises(ship.ShipError, match=r"(?s)would conflict in:\n  README\.md"):
        ship.merge_back(repo, branch="run-1", into="main", mode="squash", confirmed=True)
    assert git(repo, "rev-parse", "main") == before


def test_nothing_to_merge_is_said(repo: Path, linked: Path) -> None:
    with pytest.raises(ship.ShipError, match="Nothing to merge"):
        ship.merge_back(repo, branch="run-1", into="main", mode="ff", confirmed=True)


def test_a_branch_held_by_another_worktree_is_not_touched(repo: Path, linked: Path, tmp_path: Path) -> None:
    git(repo, "worktree", "add", "-q", "-b", "other", str(tmp_path / "other"))
    work(linked, tmp_path)
    with pytest.raises(ship.ShipError, match="checked out in the worktree"):
        ship.merge_back(repo, branch="run-1", into="other", mode="squash", confirmed=True)


def test_merge_runs_no_hook_of_the_repositorys(repo: Path, linked: Path, tmp_path: Path) -> None:
    hooks = repo / ".git" / "hooks"
    for name in ("post-merge", "reference-transaction", "post-checkout"):
        hook(hooks, name)
    work(linked, tmp_path)
    ship.merge_back(repo, branch="run-1", into="main", mode="ff", confirmed=True)
    assert not list(hooks.glob("*.ran"))


def test_a_push_runs_the_operators_ssh_command_never_the_repositorys(
    repo: Path, linked: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    operators = hook(tmp_path / "bin", "operator-ssh", 'touch "$0.ran"\nexit 1\n')
    planted = hook(tmp_path / "bin", "planted-ssh", 'touch "$0.ran"\nexit 1\n')
    (home / ".gitconfig").write_text(f"[core]\n\tsshCommand = {operators}\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.delenv("GIT_SSH_COMMAND", raising=False)
    monkeypatch.delenv("GIT_SSH", raising=False)
    git(repo, "remote", "add", "origin", "ssh://git@forge.invalid/acme/app.git")
    git(repo, "config", "core.sshCommand", str(planted))
    with pytest.raises(ship.ShipError, match="git push failed"):
        ship.push(linked, remote="origin", branch="run-1")
    assert Path(f"{operators}.ran").exists()
    assert not Path(f"{planted}.ran").exists()
