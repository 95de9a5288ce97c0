"""seeding.services.worktree_seed: settings-driven sources, then the provider's grants."""

from __future__ import annotations

import json

import pytest

from providers.errors import UnknownProvider
from seeding.seeder import SeedError, SeedOutcome
from seeding.services import context_text_from, skills_pool_from, worktree_seed


@pytest.fixture
def agent_home(settings, tmp_path):
    settings.LAB_AGENT_HOME = str(tmp_path / "agent-home")
    settings.DATA_DIR = tmp_path / "data"
    return tmp_path / "agent-home"


def test_it_seeds_from_the_default_files_under_data_dir(agent_home, settings, linked, pool):
    seed_dir = settings.DATA_DIR / "seed"
    seed_dir.mkdir(parents=True)
    (seed_dir / "context.md").write_text("from the data dir\n")
    pool.rename(seed_dir / "skills")
    actions = worktree_seed(provider_id="claude-code", worktree=linked)
    assert (linked / "CLAUDE.md").read_text() == "from the data dir\n"
    assert (linked / ".claude/skills/review/SKILL.md").exists()
    assert actions[-1].path == agent_home / ".claude.json"
    assert str(linked) in json.loads((agent_home / ".claude.json").read_text())["projects"]


def test_settings_name_other_sources(agent_home, settings, linked, pool, tmp_path):
    (tmp_path / "ctx.md").write_text("configured\n")
    settings.LAB_SEED_CONTEXT_FILE = str(tmp_path / "ctx.md")
    settings.LAB_SEED_SKILLS_DIR = str(pool)
    worktree_seed(provider_id="claude-code", worktree=linked)
    assert (linked / "CLAUDE.md").read_text() == "configured\n"


def test_missing_defaults_seed_nothing_but_a_configured_missing_file_is_an_error(
    agent_home, settings, tmp_path
):
    assert context_text_from() is None
    assert skills_pool_from() is None
    settings.LAB_SEED_CONTEXT_FILE = str(tmp_path / "nope.md")
    with pytest.raises(SeedError, match="does not exist"):
        context_text_from()
    with pytest.raises(SeedError, match="does not exist"):
        skills_pool_from(tmp_path / "nope")


def test_a_dry_run_touches_neither_worktree_nor_agent_config(agent_home, linked, tmp_path):
    (tmp_path / "ctx.md").write_text("x\n")
    actions = worktree_seed(
        provider_id="claude-code", worktree=linked, dry_run=True, context_file=tmp_path / "ctx.md"
    )
    assert actions[0].outcome is SeedOutcome.WRITE and not actions[0].applied
    assert not (linked / "CLAUDE.md").exists()
    assert not (agent_home / ".claude.json").exists()


def test_an_unknown_provider_is_refused(agent_home, linked):
    with pytest.raises(UnknownProvider):
        worktree_seed(provider_id="nope", worktree=linked)
