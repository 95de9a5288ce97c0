"""Golden, adapter side: Claude Code's SeedMeta is exactly these literals, the same ones
seeding/tests/test_golden.py feeds the generic seeder. Change both or neither."""

from __future__ import annotations

import re

from providers.claude_code.provider import ClaudeCodeProvider
from providers.claude_code.seed import SEED_META
from providers.schema import SeedMeta


def test_the_declaration_is_pinned():
    pinned = SeedMeta(
        context_file="CLAUDE.md",
        skills_dir=".claude/skills",
        exclude_entries=("/CLAUDE.md", "/.claude/skills/", "/.claude/settings.local.json"),
        seeded_paths=("CLAUDE.md", ".claude/skills/**", ".claude/settings.local.json"),
        scrub_patterns=(r"^Co-Authored-By: Claude.*$", r"^🤖 Generated with \[Claude Code\].*$"),
    )
    assert pinned == SEED_META


def test_the_provider_declares_it():
    assert ClaudeCodeProvider().seed_meta() is SEED_META


def test_the_scrub_patterns_match_the_cli_attribution_lines():
    message = (
        "Fix the parser\n\n🤖 Generated with [Claude Code](https://claude.com/claude-code)\n\n"
        "Co-Authored-By: Claude <noreply@anthropic.com>\n"
    )
    for pattern in SEED_META.scrub_patterns:
        message = re.sub(pattern, "", message, flags=re.MULTILINE)
    assert message.strip() == "Fix the parser"
