"""A runner's heartbeat: its host's row says when it was last heard from, and its load."""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time

from asgiref.sync import sync_to_async
from django.db import close_old_connections
from django.utils import timezone

from hosts.models import HEARTBEAT_S, Host

log = logging.getLogger("lab.runner")


def beat(name: str) -> None:
    close_old_connections()  # a connection PostgreSQL dropped while the host was away
    Host.objects.filter(name=name).update(
        last_seen=timezone.now(), load=os.getloadavg()[0], cpus=os.cpu_count() or None
    )


async def beating(name: str) -> None:
    while True:
        try:
            await sync_to_async(beat, thread_sensitive=False)(name)
        except Exception as exc:  # noqa: BLE001 (the database away a moment: the host reads silent)
            log.warning("host %s: heartbeat not written (%s)", name, exc)
        await asyncio.sleep(HEARTBEAT_S)


def start_thread(name: str) -> threading.Thread:
    """The beat of the process that is web tier and runner at once (lab/asgi.py), when it
    shares its database with other hosts: its row is made on the first beat."""
    Host.objects.get_or_create(name=name)

    def loop() -> None:
        while True:
            try:
                beat(name)
            except Exception as exc:  # noqa: BLE001 (as above)
                log.warning("host %s: heartbeat not written (%s)", name, exc)
            time.sleep(HEARTBEAT_S)

    thread = threading.Thread(target=loop, name="lab-heartbeat", daemon=True)
    thread.start()
    return thread
