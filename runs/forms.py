from __future__ import annotations

from pathlib import Path
from typing import Any

from django import forms
from django.conf import settings
from django.urls import reverse

from providers.registry import all_providers, get_provider
from providers.schema import ProjectServers, WorkspaceChoices
from runs.services import RUN_NAME_RE, RUN_NAME_RULE
from seeding import worktrees
from seeding.repository import RepositoryReview, repository_review
from seeding.services import default_choices

TRUST = "trust"
WITHOUT = "without"


class NewRunForm(forms.Form):
    provider = forms.ChoiceField(choices=())
    repository = forms.CharField(max_length=4096, help_text="Path to a git repository on this machine.")
    branch = forms.CharField(
        max_length=200, help_text="A new branch for the run's worktree, or an existing one."
    )
    base_ref = forms.CharField(
        max_length=200, required=False, help_text="Start from this ref (default: HEAD)."
    )
    name = forms.CharField(
        max_length=48,
        required=False,
        help_text="Letters, digits, '.', '_' and '-', starting with a letter or digit (at most 48). "
        "Empty: the branch's last part, made unique among the live runs.",
        # The browser checks the rule before submitting; the server checks it again.
        widget=forms.TextInput(
            attrs={
                "pattern": "[A-Za-z0-9][A-Za-z0-9._\\-]{0,47}",
                "title": "Letters, digits, '.', '_' and '-', starting with a letter or digit",
            }
        ),
    )
    attribution = forms.BooleanField(
        required=False,
        label="Attribution in commits",
        help_text="Let the agent add its attribution lines to commits and pull requests. "
        "Off: it is told not to, and lab removes any it adds to a commit anyway.",
    )
    project_mcp = forms.ChoiceField(
        choices=[
            (ProjectServers.REJECT.value, "Reject them: they never start, and nothing asks"),
            (ProjectServers.APPROVE.value, "Approve them: they start with the agent"),
        ],
        required=False,  # absent: the configured default
        label="Project MCP servers",
        help_text="Servers the repository declares for the agent run code on this machine.",
    )
    continue_on_limit = forms.BooleanField(
        required=False,
        label="Continue when a usage limit resets",
        help_text="When a turn stops on a usage limit, send “continue” once the limit resets "
        "(once, only if the run is idle). You can change it on the run's page.",
    )

    trust = forms.ChoiceField(
        choices=[
            (TRUST, "Trust this repository: its settings load in this run and in every later one"),
            (WITHOUT, "Start without them: the repository's agent settings are not loaded"),
        ],
        required=False,  # asked only when the repository holds settings and is not trusted yet
        widget=forms.RadioSelect,
        label="The repository's own settings",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        defaults = default_choices()
        self.fields["attribution"].initial = defaults.attribution
        self.fields["project_mcp"].initial = defaults.project_servers.value
        providers = all_providers()
        provider_field = self.fields["provider"]
        assert isinstance(provider_field, forms.ChoiceField)
        provider_field.choices = [(p.id, p.display_name()) for p in providers]
        self.fields["provider"].initial = settings.LAB_DEFAULT_PROVIDER
        # What the repository holds is shown as its path is typed (runs/new.html#review).
        for name in ("repository", "provider"):
            self.fields[name].widget.attrs.update(
                {
                    "hx-get": reverse("runs:new_review"),
                    "hx-trigger": "change, keyup changed delay:600ms",
                    "hx-target": "#repository-review",
                    "hx-swap": "outerHTML",
                    "hx-include": "[name=repository],[name=provider]",
                    # One review in flight, the newest asked for next: a slower answer for an
                    # older path (the provider picked before the path was typed) must not land
                    # over a newer one. Queued, not replaced: an aborted request is logged as an
                    # error in the page's console (htmx:sendAbort), under load every time the
                    # provider and the path change one after the other.
                    "hx-sync": "closest form:queue last",
                }
            )
        # The providers' declared spawn options, rendered generically: prefixed by provider id.
        for provider in providers:
            for option in provider.spawn_options():
                field: forms.Field
                if option.choices:
                    field = forms.ChoiceField(choices=option.choices, initial=option.default, required=False)
                else:
                    field = forms.CharField(initial=option.default, required=False, max_length=200)
                field.label = option.label
                field.help_text = option.help_text
                field.widget.attrs["data-provider"] = provider.id
                self.fields[f"opt:{provider.id}:{option.name}"] = field

    def clean_repository(self) -> Path:
        path = Path(self.cleaned_data["repository"]).expanduser()
        if not path.is_absolute():
            raise forms.ValidationError("Give an absolute path.")
        if not path.is_dir():
            raise forms.ValidationError("No such directory.")
        if not worktrees.is_git_repository(path):
            raise forms.ValidationError("Not a git repository.")
        return path

    def review(self) -> RepositoryReview | None:
        """What the chosen repository holds for the chosen provider; None until both are valid."""
        data = getattr(self, "cleaned_data", {})
        if "repository" not in data or "provider" not in data:
            return None
        return repository_review(provider_id=data["provider"], repository=data["repository"])

    def clean_branch(self) -> str:
        try:
            return worktrees.validate_branch(self.cleaned_data["branch"].strip())
        except worktrees.InvalidName as exc:
            raise forms.ValidationError(str(exc)) from None

    def clean_name(self) -> str:
        name = self.cleaned_data["name"].strip()
        if name and not RUN_NAME_RE.match(name):
            raise forms.ValidationError(f"A run name is {RUN_NAME_RULE}.")
        return name

    def choices(self) -> WorkspaceChoices:
        servers = self.cleaned_data["project_mcp"] or default_choices().project_servers
        return WorkspaceChoices(
            attribution=self.cleaned_data["attribution"], project_servers=ProjectServers(servers)
        )

    def spawn_options(self) -> dict[str, str]:
        provider_id = self.cleaned_data["provider"]
        prefix = f"opt:{provider_id}:"
        declared = {o.name: o.default for o in get_provider(provider_id).spawn_options()}
        out = dict(declared)
        for key, value in self.cleaned_data.items():
            if key.startswith(prefix) and value not in (None, ""):
                out[key.removeprefix(prefix)] = str(value)
        return out

    def provider_fields(self) -> list[tuple[str, list[forms.BoundField]]]:
        groups: dict[str, list[forms.BoundField]] = {}
        for name in self.fields:
            if name.startswith("opt:"):
                groups.setdefault(name.split(":")[1], []).append(self[name])
        return list(groups.items())


class ReplyForm(forms.Form):
    text = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}),
        strip=False,
        max_length=None,
        required=False,  # a message may be attachments alone: clean() asks for one or the other
        # Each says what was wrong: a text of NUL characters is not an empty one.
        error_messages={
            "required": "Write something first.",
            "null_characters_not_allowed": "That text contains a NUL character (U+0000), which cannot "
            "be sent to a terminal. Remove it and send again.",
        },
    )

    # The operator chose to send a second copy of a message the agent has not recorded yet.
    again = forms.BooleanField(required=False)

    def clean(self) -> dict[str, object]:
        data = super().clean() or {}
        if not data.get("text") and "text" not in self.errors and not self.files.getlist("files"):
            self.add_error("text", self.fields["text"].error_messages["required"])
        return data

    @property
    def error_text(self) -> str:
        """The first error, as the composer shows it."""
        return next((str(e) for errors in self.errors.values() for e in errors), "")
