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
from live.watcher import ensure_watcher
from runs.management.commands.serve import reconcile_runs
from runs.models import Run

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
        with identity.acting_as_runner(name):
            watching = asyncio.ensure_future(keep_watching(name))
        try:
            await runner.serve()
        finally:
            beat.cancel()
            watching.cancel()


# How often the runner looks for live runs of its host that nothing watches yet (one started
# by another process, one that was live when the runner started).
WATCH_SCAN_S = 2.0


async def keep_watching(host: str) -> None:
    """Every live run of this host is watched here, whether or not a page is open: the feed
    (every page's count of waiting runs, the runs lists, Web Push) hears of its states only
    from its watcher, and no other machine can watch it."""
    while True:
        try:
            async for run_id in Run.objects.live().filter(host=host).values_list("pk", flat=True):
                ensure_watcher(run_id)
        except Exception as exc:  # noqa: BLE001 (the database away a moment: look again next time)
            log.warning("host %s: cannot list its live runs (%s)", host, exc)
        await asyncio.sleep(WATCH_SCAN_S)
