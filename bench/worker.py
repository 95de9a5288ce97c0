"""daphne for lab, like `manage.py serve`, with optional measured patches (BENCH_PATCH=a,b).

Patches are fixes a benchmark report proposes, applied by monkeypatching so their effect can
be measured without editing app code. The ones measured so far have landed in lab (one inotify
fd per process, no `tmux has-session` while a pidfd watches the pane, the redis socket timeout
in lab/settings.py); redis_timeout stays for tests that still ask for it and is a no-op now.
"""

from __future__ import annotations

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _patch_redis_timeout() -> None:
    """lab/settings.py's CHANNEL_LAYERS with socket_timeout above channels_redis' 5 s BZPOPMIN:
    redis-py 8's default socket_timeout is also 5 s, so an idle consumer's blocking pop times
    out on the client first and the socket dies ("Timeout reading from ...")."""
    from django.conf import settings

    layer = settings.CHANNEL_LAYERS["default"]
    if layer["BACKEND"].startswith("channels_redis"):
        layer["CONFIG"]["hosts"] = [{"address": settings.REDIS_URL, "socket_timeout": 30}]


PATCHES = {
    "redis_timeout": _patch_redis_timeout,
}


def main() -> None:
    sys.path.insert(0, ROOT)
    os.chdir(ROOT)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lab.settings")
    import django

    django.setup()
    for name in filter(None, os.environ.get("BENCH_PATCH", "").split(",")):
        PATCHES[name]()
    from daphne.cli import CommandLineInterface
    from django.conf import settings

    CommandLineInterface().run(
        ["-b", settings.BIND_HOST, "-p", str(settings.BIND_PORT), "lab.asgi:application"]
    )


if __name__ == "__main__":
    main()
