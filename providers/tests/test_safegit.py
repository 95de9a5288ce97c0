"""lab's own git (providers/safegit.py): a hostile repository's config runs no program, and a git
that does not finish is killed with everything it started."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from providers import safegit
from tests.factories import hostile_repository


def test_status_diff_and_add_run_none_of_the_repositorys_programs(tmp_path):
    repo, marks = hostile_repository(tmp_path)
    (repo / "a.txt").write_text("ALPHA\n")  # same size: git must read it through the filter

    status = safegit.run("status", "--porcelain", cwd=repo)
    diff = safegit.run("diff", *safegit.DIFF_SAFETY, cwd=repo)
    add = safegit.run("add", "a.txt", cwd=repo)

    assert status.returncode == diff.returncode == add.returncode == 0, (status, diff, add)
    assert b"+ALPHA" in diff.stdout
    assert sorted(os.listdir(marks)) == []


def test_the_operators_own_filters_are_left_alone(tmp_path, monkeypatch):
    # A driver from global config (git-lfs, say) is the operator's program, not the repository's.
    repo, _marks = hostile_repository(tmp_path)
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text('[filter "lfs"]\n\tclean = git-lfs clean -- %f\n')
    monkeypatch.setenv("HOME", str(home))
    assert safegit.repository_filters(str(repo)) == ["mark"]


def test_operator_config_is_the_operators_never_the_repositorys(tmp_path, monkeypatch):
    repo, _marks = hostile_repository(tmp_path)
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text("[core]\n\tsshCommand = operator-ssh\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    safegit.run("config", "core.sshCommand", "planted-ssh", cwd=repo)
    assert ("core.sshcommand", "operator-ssh") in safegit.operator_config(repo)
    assert all(value != "planted-ssh" for _key, value in safegit.operator_config(repo))


def test_a_callers_settings_win_over_the_safe_ones_for_that_call_only(tmp_path):
    repo, _marks = hostile_repository(tmp_path)
    allowed = safegit.run("config", "protocol.allow", cwd=repo, config=[("protocol.allow", "always")])
    assert allowed.stdout.strip() == b"always"
    assert safegit.run("config", "protocol.allow", cwd=repo).stdout.strip() == b"never"
    env = safegit.run("var", "GIT_EDITOR", cwd=repo, env={"GIT_EDITOR": "lab-editor"})
    assert env.stdout.strip() == b"lab-editor"


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_a_git_past_its_bound_is_killed_with_what_it_started(tmp_path, monkeypatch):
    # A stand-in git on PATH that starts a child and never finishes (as a hung filter would).
    fake = tmp_path / "bin"
    fake.mkdir()
    pidfile = tmp_path / "child.pid"
    (fake / "git").write_text(
        '#!/bin/sh\ncase " $* " in *" config "*) exit 0 ;; esac\n'
        f"sleep 300 &\necho $! > {pidfile}\nsleep 300\n"
    )
    (fake / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}:{os.environ['PATH']}")

    started = time.monotonic()
    with pytest.raises(safegit.GitTimeout, match="did not finish within 1 s"):
        safegit.run("status", cwd=tmp_path, timeout=1.0)
    assert time.monotonic() - started < 5
    child = int(pidfile.read_text())
    deadline = time.monotonic() + 5
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child)


def test_a_capped_read_stops_git_and_says_so(tmp_path):
    repo, _marks = hostile_repository(tmp_path)
    for i in range(200):
        (repo / f"untracked-{i:03}.txt").write_text("x\n")
    done = safegit.run("ls-files", "--others", "-z", cwd=repo, max_stdout=100)
    assert done.truncated and len(done.stdout) == 100


def test_paths_keep_every_byte_and_show_replacement_characters():
    raw = b"caf\xe9.txt"
    assert os.fsencode(safegit.path(raw)) == raw
    assert safegit.shown(safegit.path(raw)) == "caf\ufffd.txt"
    assert safegit.text(raw) == "caf\ufffd.txt"


def test_lines_are_held_to_their_limit_however_long_gits_line_is(tmp_path):
    repo, _marks = hostile_repository(tmp_path)
    (repo / "a.txt").write_text("x" * 300_000 + "\nshort\n")
    with safegit.stream("diff", *safegit.DIFF_SAFETY, cwd=repo) as out:
        pieces = []
        while (piece := out.read(b"\n", 1000)) is not None:
            pieces.append(piece)
        assert out.finish() == 0
    longest = max(pieces, key=lambda p: len(p[0]))
    assert len(longest[0]) == 1000 and longest[1] is True
    assert (b"+short", False) in pieces
    assert Path(repo).is_dir()
