"""Register the hosts whose runners may join, and see how each was last heard from."""

from __future__ import annotations

import re

from django.core.management.base import BaseCommand, CommandError, CommandParser

from hosts.models import HOST_NAME_RE, Host, credential_hash, new_credential


class Command(BaseCommand):
    help = "Hosts: add NAME (prints its runner's credential once), rotate NAME, remove NAME, list."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("action", choices=["add", "rotate", "remove", "list"])
        parser.add_argument("name", nargs="?", default="")

    def handle(self, *args: object, action: str, name: str, **options: object) -> None:
        if action == "list":
            for host in Host.objects.all():
                state = "up" if host.up else host.silence_text()
                self.stdout.write(f"{host.name}\t{state}\tload {host.load if host.load is not None else '?'}")
            return
        if not re.fullmatch(HOST_NAME_RE, name):
            raise CommandError("A host name is lowercase letters, digits and '-', at most 40, e.g. build-2.")
        if action == "remove":
            deleted, _ = Host.objects.filter(name=name).delete()
            if not deleted:
                raise CommandError(f"No host {name!r}.")
            self.stdout.write(f"Host {name} removed: its runner can no longer join.")
            return
        exists = Host.objects.filter(name=name).exists()
        if action == "add" and exists:
            raise CommandError(f"Host {name!r} exists: `host rotate {name}` gives it a new credential.")
        if action == "rotate" and not exists:
            raise CommandError(f"No host {name!r}: `host add {name}` registers it.")
        token = new_credential()
        Host.objects.update_or_create(name=name, defaults={"credential": credential_hash(token)})
        self.stdout.write(f"LAB_HOST={name}\nLAB_RUNNER_TOKEN={token}")
