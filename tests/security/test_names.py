"""Case 6: run, branch and worktree names with shell metacharacters, a leading '-', or tmux's
target separators ':' and '.' are refused (or only ever reach git/tmux as data); tmux targets
are exact, so a run `foo` never touches a session `foobar`."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from providers.errors import SessionGone
from providers.tmux import Tmux, check_name
from runs import services
from runs.models import Run
from seeding import worktrees

SHELLISH = ["a;touch /tmp/x", "$(touch x)", "`touch x`", "a|b", "a&b", "a>b", "a b", "a\nb", "a'b", 'a"b']
TMUX_SEPARATORS = ["-t", "-foo", ":x", ".x", "a:b", "a.b", "=a", "a=b", "#{pane_pid}", "%1", "@1", "!", "~"]


@pytest.mark.parametrize("name", [*SHELLISH, *TMUX_SEPARATORS, "", "x" * 65, "é", "a/b"])
def test_tmux_names_outside_the_safe_alphabet_are_refused(name):
    with pytest.raises(ValueError):
        check_name(name)


@pytest.mark.parametrize("name", [*SHELLISH, "-x", ":x", ".x", "", "..", "x" * 49, "a/b", "é"])
def test_run_names_outside_the_safe_alphabet_are_refused(name):
    assert not services.RUN_NAME_RE.match(name)


@pytest.mark.parametrize(
    "branch",
    [
        "-b",
        "--upload-pack=touch /tmp/x",
        "-",
        "HEAD",
        "a..b",
        "a:b",
        "a b",
        "a~1",
        "a^",
        "a?",
        "a*",
        "a[",
        "a\\b",
        "@{-1}",
        "a@{b",
        "a/",
        "a.lock",
        "/a",
        "a//b",
        "a\x1bb",
        "",
    ],
)
def test_branch_names_git_or_lab_would_misread_are_refused(branch):
    with pytest.raises(worktrees.InvalidName):
        worktrees.validate_branch(branch)


def test_a_nul_in_a_branch_name_is_refused():
    with pytest.raises(ValueError):  # never reaches git (and the form refuses NUL first)
        worktrees.validate_branch("a\x00b")


@pytest.mark.django_db
def test_shell_metacharacters_git_allows_reach_git_only_as_data(fake_provider, git_repo, tmp_path):
    pwned = tmp_path / "pwned"
    branch = f"lab/a;touch${{IFS}}{pwned}|$(touch${{IFS}}{pwned})&`id`"
    run = services.run_start(provider_id="fake", repository=git_repo, branch=branch, name="meta")
    assert run.branch == branch
    assert worktrees.branch_exists(git_repo, branch)
    assert not pwned.exists()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("branch", "--orphan"),
        ("branch", "lab/a;touch /tmp/pwned"),
        ("branch", "lab/$(id)"),
        ("name", "-rf"),
        ("name", ":0"),
        ("name", ".hidden"),
        ("name", "a;b"),
        ("name", "../escape"),
        ("base_ref", "--output=/tmp/pwned"),
        ("repository", "relative/path"),
    ],
)
def test_the_new_run_form_refuses_hostile_names_and_starts_nothing(
    authed_client, fake_provider, git_repo, tmp_path, field, value
):
    data = {"provider": "fake", "repository": str(git_repo), "branch": "lab/ok", "name": "", "base_ref": ""}
    data[field] = value
    response = authed_client.post("/runs/new/", data)
    assert response.status_code == 422, (field, value, response.status_code)
    assert Run.objects.count() == 0
    assert Tmux(fake_provider_socket()).list_sessions() == []
    assert not Path("/tmp/pwned").exists()
    assert not (git_repo.parent / "escape").exists()


def fake_provider_socket() -> str:
    from django.conf import settings

    return settings.LAB_TMUX_SOCKET


@pytest.mark.django_db
def test_a_run_s_tmux_session_is_lab_s_own_name_never_the_user_s(fake_provider, git_repo):
    run = services.run_start(provider_id="fake", repository=git_repo, branch="lab/x", name="foo")
    assert run.tmux_session != "foo" and run.tmux_session.startswith("lab-")
    check_name(run.tmux_session)


@pytest.fixture
def two_sessions(tmp_path):
    """`lab-foo` is the run's name prefix; only `lab-foobar` exists, running `cat > file`."""
    tmux = Tmux(f"labsec-{uuid.uuid4().hex[:10]}")
    out = tmp_path / "foobar.txt"
    tmux.new_session(
        "lab-foobar", cwd=str(tmp_path), argv=["/bin/sh", "-c", f"cat > {out}"], env={"PATH": "/usr/bin:/bin"}
    )
    yield tmux, out
    tmux.kill_server()


def test_targets_are_exact_a_prefix_never_matches(two_sessions):
    tmux, out = two_sessions
    assert not tmux.has_session("lab-foo")
    assert tmux.pane_pid("lab-foo") is None
    assert tmux.pane_format("lab-foo", "#{pane_pid}") is None
    with pytest.raises(SessionGone):
        tmux.paste("lab-foo", "meant for foo\n")
    with pytest.raises(SessionGone):
        tmux.send_keys("lab-foo", "Enter")
    tmux.kill_session("lab-foo")
    assert tmux.has_session("lab-foobar")
    # foobar's pane got nothing: its own paste is the first thing in the file.
    tmux.paste("lab-foobar", "foobar's own\n")
    tmux.send_keys("lab-foobar", "C-d")
    import time

    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not (out.exists() and out.read_text()):
        time.sleep(0.02)
    assert out.read_text() == "foobar's own\n"


def test_a_window_or_pane_suffix_in_a_name_cannot_reach_another_target(two_sessions):
    tmux, _out = two_sessions
    for name in ("lab-foobar:0", "lab-foobar.0", "lab-foobar:0.0", "=lab-foobar"):
        with pytest.raises(ValueError):
            tmux.has_session(name)
