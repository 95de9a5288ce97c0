from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser


class Command(BaseCommand):
    help = "Run the project's scripted model server (compat/) standalone, for demos and by-hand tests."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--port", type=int, default=8787)
        parser.add_argument("--script", default="demo")

    def handle(self, *args: Any, **options: Any) -> None:
        from compat.claude_code.scripted_model import main

        main(["--port", str(options["port"]), "--script", options["script"]])
