"""The generic seeder's rules: path safety, never clobbering, idempotence, the shared exclude."""

from __future__ import annotations

import os

import pytest

from providers.schema import SeedMeta
from providers.testing import returns_within
from seeding.seeder import NotAWorktree, SeedError, SeedOutcome, UnsafePath, seed
from seeding.tests.conftest import git, status, tree

META = SeedMeta(context_file="AGENT.md", skills_dir="agent/skills", exclude_entries=("/AGENT.md", "/agent/"))


def outcomes(actions):
    return {a.path.name: a.outcome for a in actions}


@pytest.mark.parametrize(
    "bad", ["/etc/passwd", "../escape.md", "a/../../b.md", ".git/hooks/pre-commit", "", "."]
)
def test_it_refuses_unsafe_context_paths(linked, bad):
    meta = SeedMeta(context_file=bad, skills_dir="s")
    with pytest.raises(UnsafePath):
        seed(linked, meta, context_text="x", skills_pool=None)


@pytest.mark.parametrize("bad", ["/tmp", "..", ".git/hooks", "x/../.."])
def test_it_refuses_unsafe_skills_dirs(linked, pool, bad):
    with pytest.raises(UnsafePath):
        seed(linked, SeedMeta(context_file="C.md", skills_dir=bad), context_text="x", skills_pool=pool)
    assert not (linked / "C.md").exists()  # planned first: nothing was written


@pytest.mark.parametrize("inside", [False, True])
def test_it_never_follows_a_symlinked_directory(linked, pool, tmp_path, inside):
    target = linked / "real" if inside else tmp_path / "outside"
    target.mkdir()
    (linked / "agent").symlink_to(target)
    with pytest.raises(UnsafePath, match="agent is a symlink"):
        seed(linked, META, context_text="ctx", skills_pool=pool)
    assert list(target.iterdir()) == []
    assert not (linked / "AGENT.md").exists()


def test_it_never_writes_through_a_symlinked_file(linked, tmp_path):
    outside = tmp_path / "victim.txt"
    outside.write_text("precious\n")
    (linked / "AGENT.md").symlink_to(outside)
    with pytest.raises(UnsafePath, match="not a regular file"):
        seed(linked, META, context_text="ctx", skills_pool=None)
    assert outside.read_text() == "precious\n"


def test_it_never_edits_a_tracked_context_file(linked):
    (linked / "AGENT.md").write_text("the repository's own\n")
    git(linked, "add", "AGENT.md")
    git(linked, "commit", "-q", "-m", "own agent file")
    actions = seed(linked, META, context_text="operator's\n", skills_pool=None)
    assert outcomes(actions)["AGENT.md"] is SeedOutcome.SKIP
    assert "tracked" in actions[0].reason
    assert (linked / "AGENT.md").read_text() == "the repository's own\n"
    assert status(linked) == ""


def test_it_never_clobbers_a_file_it_did_not_write(linked):
    (linked / "AGENT.md").write_text("someone's notes\n")
    actions = seed(linked, META, context_text="operator's\n", skills_pool=None)
    assert outcomes(actions)["AGENT.md"] is SeedOutcome.SKIP
    assert (linked / "AGENT.md").read_text() == "someone's notes\n"


def test_it_updates_its_own_earlier_seed(linked):
    seed(linked, META, context_text="v1\n", skills_pool=None)
    actions = seed(linked, META, context_text="v2\n", skills_pool=None)
    assert outcomes(actions)["AGENT.md"] is SeedOutcome.WRITE
    assert (linked / "AGENT.md").read_text() == "v2\n"


def test_it_keeps_edits_made_to_its_seed(linked):
    seed(linked, META, context_text="v1\n", skills_pool=None)
    (linked / "AGENT.md").write_text("v1\nplus what the agent learned\n")
    actions = seed(linked, META, context_text="v2\n", skills_pool=None)
    assert outcomes(actions)["AGENT.md"] is SeedOutcome.SKIP
    assert (linked / "AGENT.md").read_text() == "v1\nplus what the agent learned\n"


def test_a_dry_run_writes_nothing(repo, linked, pool):
    before = tree(linked), (repo / ".git/info/exclude").read_bytes()
    actions = seed(linked, META, context_text="ctx\n", skills_pool=pool, dry_run=True)
    assert [a.outcome for a in actions][:3] == [SeedOutcome.WRITE] * 3
    assert not any(a.applied for a in actions)
    assert (tree(linked), (repo / ".git/info/exclude").read_bytes()) == before


def test_the_records_are_per_worktree(repo, linked, tmp_path):
    from seeding.worktrees import worktree_create

    other = worktree_create(repository=repo, branch="run-2", path=tmp_path / "wt2")
    seed(linked, META, context_text="one\n", skills_pool=None)
    (other / "AGENT.md").write_text("one\n-- edited\n")
    # lab wrote "one\n" in `linked`, not in `other`: the record must not leak across worktrees.
    assert outcomes(seed(other, META, context_text="two\n", skills_pool=None))["AGENT.md"] is SeedOutcome.SKIP


@pytest.mark.parametrize("where", ["plain", "subdir", "missing"])
def test_it_refuses_what_is_not_a_worktree_root(linked, tmp_path, where):
    path = {"plain": tmp_path / "plain", "subdir": linked / "sub", "missing": tmp_path / "nope"}[where]
    if where != "missing":
        path.mkdir()
    with pytest.raises(NotAWorktree):
        seed(path, META, context_text="x", skills_pool=None)


def test_it_seeds_a_main_checkout_too(repo):
    seed(repo, META, context_text="ctx\n", skills_pool=None)
    assert (repo / "AGENT.md").read_text() == "ctx\n"
    assert status(repo) == ""


def test_pool_symlinks_are_skipped_not_copied(linked, pool, tmp_path):
    (tmp_path / "secret").write_text("s\n")
    (pool / "review" / "link.md").symlink_to(tmp_path / "secret")
    (pool / "linked-dir").symlink_to(tmp_path)
    actions = seed(linked, META, context_text=None, skills_pool=pool)
    skipped = {a.path.name for a in actions if a.outcome is SeedOutcome.SKIP}
    assert skipped == {"link.md", "linked-dir"}
    assert not (linked / "agent/skills/review/link.md").exists()
    assert not (linked / "agent/skills/linked-dir").exists()


def test_a_pool_kept_in_git_copies_no_git_dir(linked, pool):
    git(pool, "init", "-q")
    seed(linked, META, context_text=None, skills_pool=pool)
    assert not (linked / "agent/skills/.git").exists()
    assert (linked / "agent/skills/review/SKILL.md").exists()


def test_it_refuses_a_pool_that_is_not_a_directory(linked, tmp_path):
    with pytest.raises(SeedError, match="not a directory"):
        seed(linked, META, context_text=None, skills_pool=tmp_path / "nope")


def test_exclude_without_a_trailing_newline_or_file(repo, linked):
    exclude = repo / ".git/info/exclude"
    exclude.write_text("*.log")
    seed(linked, META, context_text=None, skills_pool=None)
    assert (
        exclude.read_text()
        == "*.log\n# lab: files seeded into worktrees; never committed\n/AGENT.md\n/agent/\n"
    )
    exclude.unlink()
    seed(linked, META, context_text=None, skills_pool=None)
    assert exclude.read_text() == "# lab: files seeded into worktrees; never committed\n/AGENT.md\n/agent/\n"


def test_exclude_appends_only_what_is_missing(repo, linked):
    exclude = repo / ".git/info/exclude"
    exclude.write_text("/AGENT.md\n")
    seed(linked, META, context_text=None, skills_pool=None)
    assert exclude.read_text() == "/AGENT.md\n# lab: files seeded into worktrees; never committed\n/agent/\n"


def test_it_refuses_an_exclude_entry_that_would_inject_lines(linked):
    with pytest.raises(SeedError):
        seed(
            linked,
            SeedMeta("A.md", "s", exclude_entries=("/A.md\n!/secret",)),
            context_text=None,
            skills_pool=None,
        )


def test_seeding_nothing_still_writes_the_excludes(linked):
    actions = seed(linked, META, context_text=None, skills_pool=None)
    assert [a.outcome for a in actions] == [SeedOutcome.WRITE]
    assert status(linked) == ""


def test_a_fifo_as_the_exclude_file_is_refused_at_once(repo, linked):
    exclude = repo / ".git/info/exclude"
    exclude.unlink(missing_ok=True)
    os.mkfifo(exclude)
    with pytest.raises(SeedError, match="is a FIFO"):
        returns_within(lambda: seed(linked, META, context_text=None, skills_pool=None))
