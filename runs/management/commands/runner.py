"""Run this host's runner: the process that owns the host's tmux server, worktrees, agent homes
and transcript watchers, and serves what the web tier relays for its runs over the shared
channel layer (docs/architecture.md, "Several machines"). It listens on no port."""

from __future__ import annotations

import asyncio
import logging
import sys

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.utils.module_loading import import_string

from hosts import heartbeat, identity
from hosts.join import JoinRefused, join
from hosts.runner import Runner
from runs.management.commands.serve import reconcile_runs

log = logging.getLogger("lab.runner")


class Command(BaseCommand):
    help = "Serve this host's runs for the web tier (LAB_HOST, LAB_RUNNER_TOKEN, REDIS_URL)."

    def handle(self, *args: object, **options: object) -> None:
        if not settings.REDIS_URL:
            raise CommandError("A runner reaches the web tier through Redis: set REDIS_URL.")
        if settings.DATABASES["default"]["ENGINE"] != "django.db.backends.postgresql":
            raise CommandError("Hosts share one database: set DATABASE_URL to the PostgreSQL server.")
        identity.become_runner()
        name = identity.host_name()
        try:
            join(name, settings.LAB_RUNNER_TOKEN)
        except JoinRefused as exc:
            raise CommandError(str(exc)) from None
        ended, foreign = reconcile_runs()
        self.stdout.write(
            f"lab runner for host {name}: {len(ended)} run(s) found ended, {len(foreign)} foreign"
        )
        sys.stdout.flush()
        from runs import schedule

        schedule.start()  # this host's scheduled messages (the loop sends only to its runs)
        app = import_string(settings.ASGI_APPLICATION)
        asyncio.run(self.serve(name, app))

    async def serve(self, name: str, app: object) -> None:
        runner = Runner(name, app)  # type: ignore[arg-type]
        beat = asyncio.ensure_future(heartbeat.beating(name))
        try:
            await runner.serve()
        finally:
            beat.cancel()
