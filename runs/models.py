"""A run: one agent CLI in one tmux session on one git worktree.

Nothing about the conversation is stored here: the agent's own transcript file is the record
(read-through); the model keeps only where to find it.
"""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.db import models
from django.urls import reverse
from django.utils import timezone

from broadcast import groups
from hosts.identity import host_name
from providers.base import AgentProvider
from providers.registry import get_provider
from providers.schema import ProjectServers, RunHandle, WorkspaceChoices


class RunQuerySet(models.QuerySet["Run"]):
    def live(self) -> RunQuerySet:
        return self.filter(ended_at__isnull=True)


class Run(models.Model):
    name = models.CharField(max_length=64)
    # The machine whose runner owns the run's tmux session, worktree and transcript: only its
    # runner touches them (docs/architecture.md, "Several machines").
    host = models.CharField(max_length=40, default=host_name, db_index=True)
    provider_id = models.CharField("provider", max_length=64)
    repository = models.CharField(max_length=4096, help_text="The git repository the worktree belongs to.")
    worktree = models.CharField(max_length=4096, blank=True)
    branch = models.CharField(max_length=255, blank=True)
    tmux_socket = models.CharField(max_length=64, help_text="lab's own tmux server (tmux -L).")
    tmux_session = models.CharField(max_length=128, unique=True)
    session_id = models.CharField(max_length=64, blank=True, help_text="The CLI's own session id.")
    tmux_pane_pid = models.IntegerField(
        null=True,
        blank=True,
        help_text="The TUI's pid: a same-named session after a tmux restart is not this run.",
    )
    transcript_path = models.CharField(max_length=4096, blank=True)
    # The commit the worktree's HEAD was at when the run started: the run's changes view diffs
    # against it. Empty for runs started before lab recorded it.
    base_commit = models.CharField(max_length=64, blank=True)
    # The branch the run's branch started from: where merge back goes ("" when unknown).
    base_branch = models.CharField(max_length=255, blank=True)
    spawn_options = models.JSONField(default=dict, blank=True)
    # The operator's seeding choices the run started with (WorkspaceChoices): shown on the run
    # page, since the commit guard acts on the agent's commits on their behalf.
    attribution = models.BooleanField(default=True, help_text="The agent's attribution lines in commits.")
    project_mcp = models.CharField(
        "repository MCP servers", max_length=16, blank=True, help_text="approve or reject"
    )
    # Whether the run started with the repository's own agent settings loaded: only when the
    # operator trusts the repository (AgentProvider.spawn's obligation).
    repository_trusted = models.BooleanField(
        default=False, help_text="The repository's own agent settings were loaded (the operator trusts it)."
    )
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    # Who types into the run's terminal from the Terminal view, from which login (a hash of its
    # session key), until when. While it holds, the chat sends no keys: the two would race.
    keyboard_user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    keyboard_session = models.CharField(max_length=64, blank=True)
    keyboard_until = models.DateTimeField(null=True, blank=True)
    # Opt-in: when a turn stops on a usage limit, send "continue" once the limit resets
    # (runs/schedule.py). Off unless the operator asks, on the form or on the limit's message.
    continue_on_limit = models.BooleanField(
        default=False, help_text="Send a message when a usage limit resets."
    )
    # The CLI session this run resumed ("": a new one). Two live runs never resume one session:
    # the second row is refused by the database, whichever worker starts it.
    resumes = models.CharField(max_length=64, blank=True, help_text="The CLI session this run resumed.")

    objects = RunQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-pk"]
        constraints = [
            models.UniqueConstraint(
                fields=["provider_id", "resumes"],
                condition=models.Q(ended_at__isnull=True) & ~models.Q(resumes=""),
                name="one_live_run_per_resumed_session",
            )
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.provider_id})"

    def get_absolute_url(self) -> str:
        return reverse("runs:detail", args=[self.pk])

    @property
    def is_ended(self) -> bool:
        return self.ended_at is not None

    @property
    def attach_command(self) -> str:
        return f"tmux -L {self.tmux_socket} attach -t ={self.tmux_session}"

    def keyboard_holder(self) -> str:
        """The name of whoever holds the terminal's keyboard now ("": nobody)."""
        if self.keyboard_user_id is None or self.keyboard_until is None or self.is_ended:
            return ""
        if self.keyboard_until <= timezone.now():
            return ""
        user = self.keyboard_user
        return user.get_username() if user is not None else ""

    @property
    def group_name(self) -> str:
        return groups.run(self.pk)

    @property
    def spool_dir(self) -> Path:
        return Path(settings.LAB_RUNS_DIR) / str(self.pk) / "spool"

    @property
    def provider(self) -> AgentProvider:
        return get_provider(self.provider_id)

    def handle(self) -> RunHandle:
        """What the provider knows of this run. Built once per instance and reused while the
        fields it copies stay the same: a watcher wake makes several provider calls with it."""
        session = (self.tmux_socket, self.tmux_session, self.session_id)
        key = (
            self.pk,
            self.worktree,
            *session,
            self.transcript_path,
            self.repository_trusted,
            self.attribution,
            self.project_mcp,
        )
        cached = self.__dict__.get("_handle")
        if cached is not None and cached[0] == key:
            return cached[1]
        handle = RunHandle(
            run_id=self.pk,
            worktree=self.worktree,
            tmux_socket=self.tmux_socket,
            tmux_session=self.tmux_session,
            session_id=self.session_id,
            transcript_path=self.transcript_path,
            spool_dir=str(self.spool_dir),
            trusted=self.repository_trusted,
            choices=self.choices,
        )
        self.__dict__["_handle"] = (key, handle)
        return handle

    @property
    def choices(self) -> WorkspaceChoices:
        """The seeding choices the run started with (a run from before they were recorded has
        an empty project_mcp: the default)."""
        servers = ProjectServers(self.project_mcp) if self.project_mcp else ProjectServers.REJECT
        return WorkspaceChoices(attribution=self.attribution, project_servers=servers)


class DialogAnswer(models.Model):
    """The one answer lab plays to one dialog, claimed in the database so that it holds across
    every daphne worker: a unique row per (run, tool_use_id), and at most one row per run still
    `sending`. Two clicks in two tabs on two workers race on the insert; exactly one wins."""

    class State(models.TextChoices):
        SENDING = "sending"
        SENT = "sent"  # keys reached (or may have reached) the TUI: never send another

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="dialog_answers")
    tool_use_id = models.CharField(max_length=128)
    state = models.CharField(max_length=8, choices=State.choices, default=State.SENDING)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["run", "tool_use_id"], name="one_answer_per_dialog"),
            models.UniqueConstraint(
                fields=["run"], condition=models.Q(state="sending"), name="one_answer_in_flight_per_run"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.run_id}:{self.tool_use_id} ({self.state})"


class ScheduledMessage(models.Model):
    """A message lab sends to a run at a time: "continue" when a usage limit resets, or any
    message the operator scheduled. Stored, so a restart of lab neither loses nor repeats it;
    claimed with a conditional UPDATE (pending -> sending), so with several lab processes
    exactly one sends it."""

    class State(models.TextChoices):
        PENDING = "pending"
        SENDING = "sending"  # claimed by one process; never sent twice, even if it dies now
        SENT = "sent"
        CANCELLED = "cancelled"
        FAILED = "failed"  # lab did not send it, and says why (`note`)

    class Kind(models.TextChoices):
        MESSAGE = "message"  # the operator's own, at their time
        CONTINUE = "continue"  # at a usage limit's reset

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="scheduled")
    kind = models.CharField(max_length=8, choices=Kind.choices, default=Kind.MESSAGE)
    text = models.TextField()
    send_at = models.DateTimeField(db_index=True)
    state = models.CharField(max_length=9, choices=State.choices, default=State.PENDING, db_index=True)
    # The limit line it answers (Message.native_id), so one limit schedules one continue.
    limit_id = models.CharField(max_length=128, blank=True)
    note = models.CharField(max_length=500, blank=True)  # why it waits, failed or was moved
    created_at = models.DateTimeField(default=timezone.now)
    done_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["send_at", "pk"]

    def __str__(self) -> str:
        return f"{self.run_id}: {self.text[:30]!r} at {self.send_at} ({self.state})"
