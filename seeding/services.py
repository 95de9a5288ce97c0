"""Seeding a run's worktree: the generic seeder with the provider's SeedMeta, then the
provider's own grants. Reaches a provider only through the registry (no concrete adapter)."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings

from providers.registry import get_provider
from providers.schema import ProjectServers, WorkspaceChoices
from seeding import commit_guard
from seeding.seeder import SeedAction, SeedError, SeedOutcome, seed

# Under DATA_DIR unless settings name other paths; a missing default simply seeds nothing.
DEFAULT_CONTEXT_FILE = "seed/context.md"
DEFAULT_SKILLS_DIR = "seed/skills"


def _configured(name: str, default: str) -> tuple[Path, bool]:
    """(path, explicitly configured?) for a LAB_SEED_* setting."""
    value = getattr(settings, name, None)
    if value:
        return Path(value).expanduser(), True
    return Path(settings.DATA_DIR) / default, False


def context_text_from(path: Path | None = None) -> str | None:
    """The operator's context text: `path`, else LAB_SEED_CONTEXT_FILE, else the default file.
    A path someone chose must exist; the unconfigured default may be absent (None)."""
    chosen, explicit = (
        (path, True) if path is not None else _configured("LAB_SEED_CONTEXT_FILE", DEFAULT_CONTEXT_FILE)
    )
    if not chosen.is_file():
        if explicit:
            raise SeedError(f"The context file {chosen} does not exist or is not a file.")
        return None
    try:
        return chosen.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise SeedError(f"The context file {chosen} is not UTF-8 text.") from None


def skills_pool_from(path: Path | None = None) -> Path | None:
    chosen, explicit = (
        (path, True) if path is not None else _configured("LAB_SEED_SKILLS_DIR", DEFAULT_SKILLS_DIR)
    )
    if not chosen.is_dir():
        if explicit:
            raise SeedError(f"The skills directory {chosen} does not exist or is not a directory.")
        return None
    return chosen


def default_choices() -> WorkspaceChoices:
    """The operator's configured defaults (LAB_SEED_ATTRIBUTION, LAB_SEED_PROJECT_MCP)."""
    return WorkspaceChoices(
        attribution=settings.LAB_SEED_ATTRIBUTION,
        project_servers=ProjectServers(settings.LAB_SEED_PROJECT_MCP),
    )


def worktree_seed(
    *,
    provider_id: str,
    worktree: Path,
    dry_run: bool = False,
    context_file: Path | None = None,
    skills_dir: Path | None = None,
    choices: WorkspaceChoices | None = None,
) -> list[SeedAction]:
    """Seed `worktree` for `provider_id`. Raises UnknownProvider, SeedError (and its
    NotAWorktree / UnsafePath), or the provider's ProviderError from seed_workspace."""
    provider = get_provider(provider_id)
    actions = seed(
        Path(worktree),
        provider.seed_meta(),
        context_text=context_text_from(context_file),
        skills_pool=skills_pool_from(skills_dir),
        dry_run=dry_run,
    )
    if dry_run:
        return actions  # the provider's grants have no dry run in the seam; nothing is written
    written = provider.seed_workspace(Path(worktree), choices or default_choices())
    return actions + [
        SeedAction(p, SeedOutcome.WRITE, f"{provider.display_name()} grants and settings", True)
        for p in written
    ]


def agent_guard_env(*, provider_id: str, worktree: Path, choices: WorkspaceChoices) -> dict[str, str]:
    """The environment that puts lab's commit guard in front of every git the agent runs: the
    provider's seeded paths never committed, its attribution lines scrubbed when the operator
    turned attribution off (seeding/commit_guard.py)."""
    meta = get_provider(provider_id).seed_meta()
    hooks = commit_guard.install_hooks(Path(settings.DATA_DIR) / "git-hooks")
    try:
        return commit_guard.guard_env(
            worktree=Path(worktree),
            hooks_dir=hooks,
            seeded_paths=meta.seeded_paths,
            scrub_patterns=meta.scrub_patterns,
            scrub=not choices.attribution,
            base_env=settings.LAB_AGENT_ENV,
        )
    except commit_guard.GuardError as exc:
        raise SeedError(str(exc)) from None
