from __future__ import annotations

import importlib
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from providers.known import KNOWN_PROVIDERS, package


class Command(BaseCommand):
    help = (
        "Run a provider's scripted model server (compat/<package>/scripted_model.py) standalone, "
        "for demos and by-hand tests."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--port", type=int, default=8787)
        parser.add_argument("--script", default="demo")
        parser.add_argument("--provider", default=None, help="a provider id (default: the default provider)")

    def handle(self, *args: Any, **options: Any) -> None:
        provider_id = options["provider"] or settings.LAB_DEFAULT_PROVIDER
        if provider_id not in KNOWN_PROVIDERS:
            raise CommandError(f"no provider {provider_id!r} in providers/known.py")
        module = importlib.import_module(f"compat.{package(provider_id)}.scripted_model")
        module.main(["--port", str(options["port"]), "--script", options["script"]])
