"""Start lab as users run it: daphne on LAB_BIND, after making sure the operator can log in."""

from __future__ import annotations

import os
import sys

from django.conf import settings
from django.core.management.base import BaseCommand

from accounts.services import operator_bootstrap


class Command(BaseCommand):
    help = "Serve lab with daphne on LAB_BIND; on first start print a one-time login link."

    def handle(self, *args: object, **options: object) -> None:
        self.stdout.write(f"lab is starting on {settings.LAB_ORIGIN}/")
        bootstrap = operator_bootstrap()
        if bootstrap is not None:
            _user, token = bootstrap
            self.stdout.write(
                self.style.SUCCESS(
                    "\n  First start: log in once with this link (it works one time, for 24 hours):\n"
                    f"\n    {settings.LAB_ORIGIN}/account/once/{token}/\n"
                )
            )
        sys.stdout.flush()
        daphne = os.path.join(os.path.dirname(sys.executable), "daphne")
        argv = [daphne, "-b", settings.BIND_HOST, "-p", str(settings.BIND_PORT), "lab.asgi:application"]
        os.execv(daphne, argv)  # daphne becomes this process: signals and exit codes are its own
