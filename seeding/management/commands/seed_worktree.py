from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from providers.errors import ProviderError
from providers.schema import ProjectServers, WorkspaceChoices
from seeding.seeder import SeedAction, SeedError, SeedOutcome
from seeding.services import default_choices, worktree_seed


def describe(action: SeedAction, *, dry_run: bool) -> str:
    if action.outcome is SeedOutcome.WRITE:
        verb = "would write" if dry_run else "wrote"
    else:
        verb = "unchanged" if action.outcome is SeedOutcome.UNCHANGED else "skipped"
    reason = f"  ({action.reason})" if action.reason else ""
    return f"{verb:<11} {action.path}{reason}"


class Command(BaseCommand):
    help = "Seed a git worktree for an agent: context file, skills, git exclude entries, the CLI's grants."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", type=Path, help="the root of a git worktree")
        parser.add_argument("--provider", default=getattr(settings, "LAB_DEFAULT_PROVIDER", "") or None)
        parser.add_argument(
            "--context-file", type=Path, help="the context text (default: LAB_SEED_CONTEXT_FILE)"
        )
        parser.add_argument("--skills", type=Path, help="the skills pool (default: LAB_SEED_SKILLS_DIR)")
        parser.add_argument(
            "--attribution",
            action=argparse.BooleanOptionalAction,
            default=None,
            help="the agent's attribution lines in commits and PRs (default: LAB_SEED_ATTRIBUTION)",
        )
        parser.add_argument(
            "--project-mcp",
            choices=[p.value for p in ProjectServers],
            help="approve or reject the repository's own MCP servers (default: LAB_SEED_PROJECT_MCP)",
        )
        parser.add_argument(
            "--dry-run", action="store_true", help="print what would be written; write nothing"
        )

    @staticmethod
    def choices(options: dict[str, Any]) -> WorkspaceChoices:
        defaults = default_choices()
        attribution = options["attribution"]
        return WorkspaceChoices(
            attribution=defaults.attribution if attribution is None else attribution,
            project_servers=ProjectServers(options["project_mcp"] or defaults.project_servers),
        )

    def handle(self, *args: Any, **options: Any) -> None:
        path: Path = options["path"]
        dry_run: bool = options["dry_run"]
        if not options["provider"]:
            raise CommandError("Name a provider with --provider (no provider is enabled by default).")
        if not path.is_dir():
            raise CommandError(f"{path} is not a directory.")
        try:
            actions = worktree_seed(
                provider_id=options["provider"],
                worktree=path,
                dry_run=dry_run,
                context_file=options["context_file"],
                skills_dir=options["skills"],
                choices=self.choices(options),
            )
        except (SeedError, ProviderError) as exc:
            raise CommandError(str(exc)) from None
        for action in actions:
            self.stdout.write(describe(action, dry_run=dry_run))
        written = sum(a.outcome is SeedOutcome.WRITE for a in actions)
        verb = "would be written" if dry_run else "written"
        self.stdout.write(f"{written} file(s) {verb}, {len(actions) - written} unchanged or skipped.")
        if dry_run:
            self.stdout.write("Dry run: the provider's own grants (seed_workspace) were not applied.")
