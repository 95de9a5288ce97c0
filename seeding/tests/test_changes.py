"""The changes view's reading of a worktree (seeding/changes.py) against real git repositories:
each kind of change lands in its section, and odd file names are data."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from seeding import changes

GIT = ["git", "-c", "user.name=lab-test", "-c", "user.email=lab-test@example.invalid"]


def sh(cwd: Path, *args: str) -> str:
    return subprocess.run([*GIT, *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def repo(tmp_path: Path) -> tuple[Path, str]:
    """A repository with one commit; returns (path, base commit)."""
    path = tmp_path / "repo"
    path.mkdir()
    sh(path, "init", "-q", "-b", "main")
    (path / "keep.py").write_text("def keep():\n    return 1\n")
    (path / "old name.txt").write_text("".join(f"line {i}\n" for i in range(20)))
    sh(path, "add", ".")
    sh(path, "commit", "-q", "-m", "base")
    return path, sh(path, "rev-parse", "HEAD").strip()


def by_path(files: list[changes.FileChange]) -> dict[str, changes.FileChange]:
    return {f.path: f for f in files}


def test_each_kind_of_change_lands_in_its_section(repo):
    path, base = repo
    (path / "keep.py").write_text("def keep():\n    return 2\n")
    (path / "new.py").write_text("x = 1\n")
    sh(path, "add", "new.py", "keep.py")
    sh(path, "commit", "-q", "-m", "Edit keep and add new", "-m", "Why: a body line.")
    (path / "staged.txt").write_text("staged\n")
    sh(path, "add", "staged.txt")
    (path / "keep.py").write_text("def keep():\n    return 3\n")
    (path / "loose.txt").write_text("untracked\n")

    found = changes.worktree_changes(worktree=path, base=base)

    [commit] = found.commits
    assert (commit.subject, commit.body) == ("Edit keep and add new", "Why: a body line.")
    committed = by_path(found.sections["committed"])
    assert committed["new.py"].status == "added"
    assert committed["keep.py"].status == "modified"
    assert [(line.kind, line.text) for line in committed["keep.py"].lines if line.kind != "hunk"] == [
        ("ctx", "def keep():"),
        ("del", "    return 1"),
        ("add", "    return 2"),
    ]
    assert [f.path for f in found.sections["staged"]] == ["staged.txt"]
    unstaged = by_path(found.sections["unstaged"])
    assert ("add", "    return 3") in [(line.kind, line.text) for line in unstaged["keep.py"].lines]
    [loose] = found.sections["untracked"]
    assert (loose.path, loose.status, loose.lines[0].text) == ("loose.txt", "untracked", "untracked")


def test_a_rename_names_both_paths_and_a_binary_file_is_named_not_dumped(repo):
    path, base = repo
    sh(path, "mv", "old name.txt", "new name.txt")
    (path / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0binary")
    sh(path, "add", "image.png")
    sh(path, "commit", "-q", "-m", "rename and add an image")
    (path / "blob.bin").write_bytes(b"\0" * 100)

    found = changes.worktree_changes(worktree=path, base=base)

    committed = by_path(found.sections["committed"])
    renamed = committed["new name.txt"]
    assert (renamed.status, renamed.old_path, renamed.lines) == ("renamed", "old name.txt", ())
    image = committed["image.png"]
    assert image.binary and image.lines == ()
    [blob] = found.sections["untracked"]
    assert blob.binary and blob.lines == ()


@pytest.mark.parametrize(
    "name",
    ["with space.txt", "semi;colon $(touch pwned) `x`.txt", "quote'\"s.txt", "new\nline.txt", "-dash.txt"],
)
def test_names_with_spaces_and_shell_metacharacters_are_data(repo, name):
    path, base = repo
    (path / name).write_text("content\n")
    sh(path, "add", "--", name)
    sh(path, "commit", "-q", "-m", "odd name")
    (path / name).write_text("content\nmore\n")
    (path / f"untracked {name}").write_text("u\n")

    found = changes.worktree_changes(worktree=path, base=base)

    assert [f.path for f in found.sections["committed"]] == [name]
    assert [f.path for f in found.sections["unstaged"]] == [name]
    assert [f.path for f in found.sections["untracked"]] == [f"untracked {name}"]
    whole = changes.one_file(worktree=path, base=base, section="unstaged", path=name)
    assert ("add", "more") in [(line.kind, line.text) for line in whole.lines]
    assert not (path / "pwned").exists()


def test_a_huge_file_is_truncated_and_loads_whole_on_request(repo):
    path, base = repo
    (path / "big.txt").write_text("".join(f"row {i}\n" for i in range(5000)))
    sh(path, "add", "big.txt")
    sh(path, "commit", "-q", "-m", "big")

    [big] = changes.worktree_changes(worktree=path, base=base).sections["committed"]
    assert big.truncated and len(big.lines) == changes.PREVIEW_LINES
    # The note's "of N lines" counts the file's lines, as the summary's +N does (not the @@).
    assert big.additions == big.total_lines == 5000
    assert big.shown_lines == changes.PREVIEW_LINES - 1
    whole = changes.one_file(worktree=path, base=base, section="committed", path="big.txt")
    assert not whole.truncated and len(whole.lines) == 5001 and whole.shown_lines == 5000


def test_load_the_rest_serves_only_a_path_git_lists(repo):
    path, base = repo
    (path / "a.txt").write_text("a\n")
    for section, asked in [
        ("untracked", "../repo/keep.py"),
        ("untracked", "/etc/passwd"),
        ("committed", "keep.py"),
    ]:
        with pytest.raises(changes.ChangesError):
            changes.one_file(worktree=path, base=base, section=section, path=asked)
    with pytest.raises(changes.ChangesError):
        changes.one_file(worktree=path, base=base, section="HEAD --output=/tmp/x", path="a.txt")


def test_an_untracked_symlink_out_of_the_worktree_is_named_not_read(repo, tmp_path):
    path, base = repo
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP SECRET\n")
    os.symlink(secret, path / "link.txt")
    [link] = changes.worktree_changes(worktree=path, base=base).sections["untracked"]
    assert link.path == "link.txt" and link.lines == ()


def test_a_removed_worktree_shows_the_branchs_commits_from_the_repository(repo, tmp_path):
    path, base = repo
    wt = tmp_path / "wt"
    sh(path, "worktree", "add", "-q", "-b", "lab/gone", str(wt))
    (wt / "done.txt").write_text("done\n")
    sh(wt, "add", "done.txt")
    sh(wt, "commit", "-q", "-m", "Finish the work")
    sh(path, "worktree", "remove", str(wt))

    found = changes.worktree_changes(worktree=wt, base=base, repository=path, branch="lab/gone")
    assert [c.subject for c in found.commits] == ["Finish the work"]
    assert [f.path for f in found.sections["committed"]] == ["done.txt"]
    assert "staged" not in found.sections
    assert any("no longer exists" in note for note in found.notes)

    gone = changes.worktree_changes(worktree=wt, base=base, repository=path, branch="lab/never")
    assert gone.sections == {} and any("gone from the repository" in n for n in gone.notes)


def test_a_folder_left_where_a_removed_worktree_was_still_shows_the_branch(repo, tmp_path):
    # A folder at the removed worktree's path, inside another repository (lab's data dir can
    # be): git run there answered for the enclosing repository ("Invalid revision range").
    path, base = repo
    outer = tmp_path / "outer"
    outer.mkdir()
    sh(outer, "init", "-q")
    sh(outer, "commit", "-q", "--allow-empty", "-m", "outer")
    wt = outer / "worktrees" / "wt"
    sh(path, "worktree", "add", "-q", "-b", "lab/left", str(wt))
    (wt / "done.txt").write_text("done\n")
    sh(wt, "add", "done.txt")
    sh(wt, "commit", "-q", "-m", "Finish the work")
    sh(path, "worktree", "remove", str(wt))
    (wt / ".claude").mkdir(parents=True)

    found = changes.worktree_changes(worktree=wt, base=base, repository=path, branch="lab/left")
    assert [c.subject for c in found.commits] == ["Finish the work"]
    assert [f.path for f in found.sections["committed"]] == ["done.txt"]
    assert any("no longer exists" in note for note in found.notes)
    with pytest.raises(changes.ChangesError, match="no longer exists"):
        changes.one_file(worktree=wt, base=base, section="committed", path="done.txt")


def test_a_removed_worktree_whose_base_is_not_in_the_repository_says_so(repo, tmp_path):
    path, _base = repo
    wt = tmp_path / "wt"
    sh(path, "worktree", "add", "-q", "-b", "lab/other", str(wt))
    sh(path, "worktree", "remove", str(wt))
    found = changes.worktree_changes(worktree=wt, base="1" * 40, repository=path, branch="lab/other")
    assert found.commits == [] and "committed" not in found.sections
    assert any("is not in the repository" in note for note in found.notes)


def test_reading_a_hostile_worktree_runs_none_of_its_programs(tmp_path):
    # fsmonitor, hooks, a clean filter and a diff driver with textconv, from the repository's config.
    from seeding.worktrees import worktree_create
    from tests.factories import hostile_repository

    repo, marks = hostile_repository(tmp_path)
    base = sh(repo, "rev-parse", "HEAD").strip()
    wt = worktree_create(repository=repo, branch="lab/run-1", path=tmp_path / "wt")
    sh(wt, "-c", "core.hooksPath=/dev/null", "-c", "filter.mark.clean=cat", "rm", "-q", "b.txt")
    sh(wt, "-c", "core.hooksPath=/dev/null", "commit", "-q", "-m", "Drop b")
    (wt / "a.txt").write_text("ALPHA\n")  # same size: git must read it to know
    (wt / "c.txt").write_text("charlie\n")
    for mark in marks.iterdir():  # what making the worktree by hand left
        mark.unlink()

    found = changes.worktree_changes(worktree=wt, base=base)
    whole = changes.one_file(worktree=wt, base=base, section="unstaged", path="a.txt")
    committed = changes.one_file(worktree=wt, base=base, section="committed", path="b.txt")

    assert [c.subject for c in found.commits] == ["Drop b"]
    assert ("add", "ALPHA") in [(line.kind, line.text) for line in whole.lines]
    assert committed.status == "deleted"
    assert sorted(os.listdir(marks)) == []


def test_names_and_content_that_are_not_utf8_show_replacement_characters(repo):
    path, base = repo
    name = os.fsdecode(b"caf\xe9.txt")
    (path / name).write_bytes(b"ok\n\xff\xfe bad\n")
    sh(path, "add", ".")
    sh(path, "commit", "-q", "-m", "Latin-1 \xe9")
    (path / os.fsdecode(b"loose\xff.txt")).write_bytes(b"\xc3\x28\n")

    found = changes.worktree_changes(worktree=path, base=base)

    [committed] = found.sections["committed"]
    assert committed.shown_path == "caf\ufffd.txt"
    assert ("add", "\ufffd\ufffd bad") in [(line.kind, line.text) for line in committed.lines]
    [loose] = found.sections["untracked"]
    assert (loose.shown_path, loose.lines[0].text) == ("loose\ufffd.txt", "\ufffd(")
    # "Load the rest" asks by the name as shown; it names one file, so git gets its real bytes.
    whole = changes.one_file(worktree=path, base=base, section="committed", path="caf\ufffd.txt")
    assert whole.path == name and whole.lines


@pytest.mark.parametrize("kind", ["fifo", "symlink"])
def test_a_tracked_file_replaced_by_a_special_file_is_named_and_hides_nothing(repo, tmp_path, kind):
    path, base = repo
    (path / "work.py").write_text("x = 1\n")
    sh(path, "add", "work.py")
    sh(path, "commit", "-q", "-m", "The agent's commit")
    (path / "keep.py").unlink()
    if kind == "fifo":
        os.mkfifo(path / "keep.py")
    else:
        os.symlink("/etc/passwd", path / "keep.py")
    (path / "old name.txt").write_text("changed\n")

    found = changes.worktree_changes(worktree=path, base=base)

    assert [c.subject for c in found.commits] == ["The agent's commit"]
    assert [f.path for f in found.sections["committed"]] == ["work.py"]
    unstaged = by_path(found.sections["unstaged"])
    expected = "a FIFO" if kind == "fifo" else "a symbolic link"
    assert (unstaged["keep.py"].special, unstaged["keep.py"].lines) == (expected, ())
    assert ("add", "changed") in [(line.kind, line.text) for line in unstaged["old name.txt"].lines]


def test_an_untracked_fifo_is_named_never_opened(repo):
    # Opening a FIFO blocks until a writer comes: the reader must not even try.
    path, _base = repo
    os.mkfifo(path / "pipe")
    assert changes.read_untracked(path, "pipe", limit=10, cap=100).special == "a FIFO"


def test_a_page_holds_and_reads_a_bounded_amount_and_says_what_it_cut(repo, monkeypatch):
    path, base = repo
    for i in range(6):
        (path / f"gen{i}.txt").write_text("".join(f"row {n}\n" for n in range(300)))
    sh(path, "add", ".")
    sh(path, "commit", "-q", "-m", "generated")
    for i in range(6):
        (path / f"loose{i}.txt").write_text("".join(f"row {n}\n" for n in range(300)))
    monkeypatch.setattr(changes, "PAGE_LINES", 1000)
    monkeypatch.setattr(changes, "PAGE_READ_BYTES", 10_000)
    budget = changes.Budget
    monkeypatch.setattr(changes, "Budget", lambda lines=1000, read=10_000: budget(lines=lines, read=read))

    found = changes.worktree_changes(worktree=path, base=base)

    files = [f for section in found.sections.values() for f in section]
    assert sum(len(f.lines) for f in files) <= 1000
    assert len(files) == 12  # every file is still listed
    cut = [f for f in files if f.cut]
    assert cut and all("at most" in f.cut for f in cut)
    whole = changes.one_file(worktree=path, base=base, section="committed", path="gen5.txt")
    assert len(whole.lines) == 301 and not whole.cut
