"""Start lab as users run it: daphne on LAB_BIND, after making sure the operator can log in,
that a non-loopback bind has a strong password behind it, and that the runs the database calls
live still have their tmux sessions (a restart reattaches those and ends the others)."""

from __future__ import annotations

import ipaddress
import logging
import os
import sys

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.services import operator_bootstrap
from accounts.signals import password_is_strong
from hosts import identity
from providers.tmux import Tmux, TmuxError
from runs import services
from runs.models import Run

log = logging.getLogger("lab.serve")


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def remote_bind_refusal() -> str:
    """Why a non-loopback bind must not start ("" when it may): whoever reaches lab can run
    code through the agent, so every account that can log in needs a strong password."""
    users = get_user_model().objects.filter(is_active=True)
    loginable = [u for u in users if u.has_usable_password()]
    weak = sorted(u.get_username() for u in loginable if not password_is_strong(u))
    if weak:
        return (
            f"LAB_BIND={settings.LAB_BIND} is not loopback and these accounts have a password lab has not "
            f"seen pass its validators: {', '.join(weak)}. Set a strong one (`manage.py changepassword "
            "NAME` or the Choose-a-password page on a loopback start), then restart."
        )
    if not any(u.is_superuser for u in loginable):
        return (
            f"LAB_BIND={settings.LAB_BIND} is not loopback and no operator has a password yet. Start on "
            "loopback first (`make run`), log in with the one-time link and choose a password."
        )
    return ""


def reconcile_runs() -> tuple[list[int], list[str]]:
    """Before serving: every live run whose tmux session is gone is marked ended (its watcher
    reattaches the others on the first page that asks). Sessions on lab's socket that no live
    run owns are left alone and reported, never adopted. Returns (ended run ids, foreign)."""
    ended: list[int] = []
    owned: set[str] = set()
    for run in Run.objects.live().filter(host=identity.host_name()):  # another host's: its runner's
        try:
            alive = services.run_alive(run)  # the same pane, not just a session of that name
        except (TmuxError, ValueError, OSError) as exc:
            log.warning("run %s: cannot ask tmux about %s (%s); left as it is", run.pk, run.tmux_session, exc)
            owned.add(run.tmux_session)
            continue
        if alive:
            owned.add(run.tmux_session)
        else:
            services.run_mark_ended(run=run)
            ended.append(run.pk)
    try:
        sessions = Tmux(settings.LAB_TMUX_SOCKET).list_sessions()
    except (TmuxError, OSError):
        sessions = []
    foreign = sorted(set(sessions) - owned)
    for name in foreign:
        log.warning("tmux session %r on lab's socket belongs to no live run: left alone", name)
    return ended, foreign


class Command(BaseCommand):
    help = "Serve lab with daphne on LAB_BIND; on first start print a one-time login link."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--no-exec", action="store_true", help="Do the start-up checks, do not serve.")

    def handle(self, *args: object, **options: object) -> None:
        if not is_loopback(settings.BIND_HOST) and (why := remote_bind_refusal()):
            raise CommandError(why)
        self.stdout.write(f"lab is starting on {settings.LAB_ORIGIN}/")
        # A web tier owns no tmux server: each runner reconciles its own host's runs.
        ended, foreign = reconcile_runs() if identity.role() != identity.WEB else ([], [])
        if ended:
            self.stdout.write(f"  {len(ended)} run(s) lost their tmux session while lab was down: ended.")
        if foreign:
            self.stdout.write(
                f"  tmux sessions on lab's socket that no run owns (left alone): {', '.join(foreign)}"
            )
        bootstrap = operator_bootstrap()
        if bootstrap is not None:
            user, token = bootstrap
            self.stdout.write(
                self.style.SUCCESS(
                    "\n  First start: log in once with this link (it works one time, for 24 hours):\n"
                    f"\n    {settings.LAB_ORIGIN}/account/once/{token}/\n"
                    f"\n  Your username is {user.get_username()!r}; you choose its password next.\n"
                )
            )
        sys.stdout.flush()
        if options.get("no_exec"):
            return
        daphne = os.path.join(os.path.dirname(sys.executable), "daphne")
        argv = [daphne, "-b", settings.BIND_HOST, "-p", str(settings.BIND_PORT), "lab.asgi:application"]
        os.environ["LAB_SERVE"] = "1"  # lab/asgi.py starts the scheduled messages' loop
        os.execv(daphne, argv)  # daphne becomes this process: signals and exit codes are its own
