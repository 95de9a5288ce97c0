"""A run that never gets past starting (a first-run screen lab does not answer holds the CLI
before its session starts) must not leave the operator without a way in."""

from __future__ import annotations

from django.template.loader import render_to_string

from providers.schema import RunState
from tests.factories import RunFactory


def test_the_starting_panel_offers_the_terminal() -> None:
    run = RunFactory.build(pk=3)
    html = render_to_string(
        "runs/detail.html#panel",
        {"run": run, "state": RunState.STARTING, "dialog": None, "provider_name": "Agent", "oob": True},
    )
    assert "Agent is starting" in html
    assert run.attach_command in html
