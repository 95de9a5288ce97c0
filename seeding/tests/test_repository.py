"""What a repository's git setup would run, as the new-run form lists it."""

from __future__ import annotations

import os
import subprocess
import threading

from seeding.repository import git_settings


def _git(repo, *args):
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


def test_a_plain_repository_runs_nothing(git_repo):
    assert git_settings(git_repo) == []


def test_programs_in_the_config_hooks_and_attributes_are_listed(git_repo, tmp_path):
    _git(git_repo, "config", "core.fsmonitor", "/tmp/evil-monitor")
    _git(git_repo, "config", "filter.lfsx.clean", "sh -c 'touch /tmp/x'")
    _git(git_repo, "config", "diff.pic.textconv", "exiftool")
    (git_repo / ".gitattributes").write_text("*.bin filter=lfsx\n*.png diff=pic\n*.py diff=python\n")
    hook = git_repo / ".git" / "hooks" / "post-checkout"
    hook.write_text("#!/bin/sh\ntouch /tmp/ran\n")
    hook.chmod(0o755)
    rows = {(s.source, s.kind, s.detail) for s in git_settings(git_repo)}
    assert (".git/config", "git program", "core.fsmonitor = /tmp/evil-monitor") in rows
    assert (".git/config", "git program", "filter.lfsx.clean = sh -c 'touch /tmp/x'") in rows
    assert (".git/config", "git program", "diff.pic.textconv = exiftool") in rows
    assert (".git/hooks", "git hook", "post-checkout") in rows
    assert (".gitattributes", "git driver", "*.bin filter=lfsx") in rows
    assert (".gitattributes", "git driver", "*.png diff=pic") in rows
    # A built-in diff driver runs no program of the repository's.
    assert not any("diff=python" in detail for _, _, detail in rows)


def test_fsmonitor_off_and_sample_hooks_are_not_listed(git_repo):
    _git(git_repo, "config", "core.fsmonitor", "false")
    assert git_settings(git_repo) == []  # git init's hooks are all *.sample


def test_a_fifo_for_gitattributes_never_hangs_the_form(git_repo):
    _git(git_repo, "config", "filter.x.clean", "cat")
    os.mkfifo(git_repo / ".gitattributes")
    result: list[object] = []
    reader = threading.Thread(target=lambda: result.append(git_settings(git_repo)), daemon=True)
    reader.start()
    reader.join(timeout=10)
    assert result, "reading a FIFO .gitattributes blocked"
    assert any(s.detail == "not a regular file" for s in result[0])  # type: ignore[attr-defined]


def test_hooks_in_a_configured_hooks_path_are_listed(git_repo):
    # lab's own git runs with hooks off: the repository's hooks folder is read from its config.
    _git(git_repo, "config", "core.hooksPath", "githooks")
    (git_repo / "githooks").mkdir()
    hook = git_repo / "githooks" / "pre-commit"
    hook.write_text("#!/bin/sh\n")
    hook.chmod(0o755)
    rows = {(s.kind, s.detail) for s in git_settings(git_repo)}
    assert ("git program", "core.hookspath = githooks") in rows and ("git hook", "pre-commit") in rows


def test_every_kind_of_program_key_is_listed(git_repo):
    # Each names a program git runs (or a file of config that may): none may go unlisted.
    keys = {
        "core.hooksPath": "/tmp/their-hooks",
        "core.sshCommand": "ssh -o ProxyCommand=evil",
        "core.pager": "evil-pager",
        "credential.helper": "!evil",
        "credential.https://example.com.helper": "evil2",
        "include.path": "../common.cfg",
        "includeIf.gitdir:/tmp/.path": "/tmp/their.cfg",
        "gpg.ssh.program": "evil-sign",
        "merge.ours.driver": "evil-merge %A",
    }
    for key, value in keys.items():
        _git(git_repo, "config", key, value)
    _git(git_repo, "config", "user.name", "not a program")
    listed = {s.detail for s in git_settings(git_repo)}
    assert listed == {f"{key.lower()} = {value}" for key, value in keys.items()}


def test_a_hook_that_is_a_link_is_listed_and_a_linked_gitattributes_is_not_read(git_repo, tmp_path):
    os.symlink("/bin/true", git_repo / ".git" / "hooks" / "pre-push")
    _git(git_repo, "config", "filter.x.clean", "cat")
    elsewhere = tmp_path / "their-attributes"
    elsewhere.write_text("* filter=x\n")
    os.symlink(elsewhere, git_repo / ".gitattributes")
    rows = {(s.source, s.kind, s.detail) for s in git_settings(git_repo)}
    assert (".git/hooks", "git hook", "pre-push") in rows
    assert (".gitattributes", "git driver", "* filter=x") not in rows
    assert any(source == ".gitattributes" and "could not be read" in detail for source, _, detail in rows)
