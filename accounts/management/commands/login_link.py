from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.services import OPERATOR_USERNAME, login_link_issue


class Command(BaseCommand):
    help = "Print a one-time login link for an operator account (for a forgotten password)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--username", default=OPERATOR_USERNAME)

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            token = login_link_issue(username=options["username"])
        except get_user_model().DoesNotExist:
            raise CommandError(
                f"No active user {options['username']!r}; start lab once with make run."
            ) from None
        self.stdout.write(f"{settings.LAB_ORIGIN}/account/once/{token}/")
