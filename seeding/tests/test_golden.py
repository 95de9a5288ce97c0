"""Golden, seeder side: these literal SeedMeta values produce exactly this tree and these
bytes. providers/claude_code/tests/test_seedmeta.py pins the adapter to the same literals, so
a drifting declaration fails a test instead of silently reshaping worktrees."""

from __future__ import annotations

import os

from providers.schema import SeedMeta
from seeding.seeder import SeedOutcome, seed
from seeding.tests.conftest import status, tree

META = SeedMeta(
    context_file="CLAUDE.md",
    skills_dir=".claude/skills",
    exclude_entries=("/CLAUDE.md", "/.claude/skills/", "/.claude/settings.local.json"),
    seeded_paths=("CLAUDE.md", ".claude/skills/**", ".claude/settings.local.json"),
    scrub_patterns=(r"^Co-Authored-By: Claude.*$", r"^🤖 Generated with \[Claude Code\].*$"),
)
CONTEXT = "# Operator context\n\nSmall commits. Run the tests.\n"


def test_it_produces_exactly_this_tree(repo, linked, pool):
    seed(linked, META, context_text=CONTEXT, skills_pool=pool)
    umask = os.umask(0)
    os.umask(umask)
    assert tree(linked) == {
        ".claude/skills/review/SKILL.md": (
            b"---\nname: review\ndescription: Review a diff.\n---\n\nRead the diff.\n",
            0o644,
        ),
        ".claude/skills/review/scripts/check.sh": (b"#!/bin/sh\necho ok\n", 0o755),
        "CLAUDE.md": (b"# Operator context\n\nSmall commits. Run the tests.\n", 0o644),
        "README.md": (b"hi\n", 0o666 & ~umask),
    }
    # A linked worktree's exclude is the common dir's: shared with the main checkout.
    assert (repo / ".git" / "info" / "exclude").read_bytes() == (
        b"# existing\n# lab: files seeded into worktrees; never committed\n/CLAUDE.md\n/.claude/skills/\n"
        b"/.claude/settings.local.json\n"
    )
    assert status(linked) == ""


def test_it_reports_exactly_these_actions(repo, linked, pool):
    actions = seed(linked, META, context_text=CONTEXT, skills_pool=pool)
    assert [(a.path, a.outcome, a.applied) for a in actions] == [
        (linked / "CLAUDE.md", SeedOutcome.WRITE, True),
        (linked / ".claude/skills/review/SKILL.md", SeedOutcome.WRITE, True),
        (linked / ".claude/skills/review/scripts/check.sh", SeedOutcome.WRITE, True),
        ((repo / ".git/info/exclude").resolve(), SeedOutcome.WRITE, True),
        ((repo / ".git/worktrees/wt/lab-seed.json").resolve(), SeedOutcome.WRITE, True),
    ]


def test_a_second_run_changes_nothing(repo, linked, pool):
    seed(linked, META, context_text=CONTEXT, skills_pool=pool)
    before = tree(linked), (repo / ".git" / "info" / "exclude").read_bytes()
    again = seed(linked, META, context_text=CONTEXT, skills_pool=pool)
    assert {a.outcome for a in again} == {SeedOutcome.UNCHANGED}
    assert not any(a.applied for a in again)
    assert (tree(linked), (repo / ".git" / "info" / "exclude").read_bytes()) == before
