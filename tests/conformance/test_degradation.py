"""The generic layer without each optional capability (docs/architecture.md, principle 4).

Each fake variant in providers/testing.py lacks exactly one protocol. Without LiveSignals the
chat is transcript-only: no live signal can make a run read `question` or `needs_input`. With
it, a blocked TUI reads `needs_input`, and the run page offers the tmux attach command.
"""

from __future__ import annotations

import html
from pathlib import Path

import pytest

from providers import registry
from providers.base import ConnectingReporter, LiveSignals
from providers.schema import RunState
from providers.testing import (
    FakeWithoutConnecting,
    FakeWithoutLiveSignals,
    FullFakeProvider,
    fake_append,
)
from providers.tmux import Tmux
from runs import services

VARIANTS = {
    "providers.testing.FullFakeProvider": (FullFakeProvider, {LiveSignals, ConnectingReporter}),
    "providers.testing.FakeWithoutLiveSignals": (FakeWithoutLiveSignals, {ConnectingReporter}),
    "providers.testing.FakeWithoutConnecting": (FakeWithoutConnecting, {LiveSignals}),
}


@pytest.mark.parametrize("dotted", VARIANTS)
def test_each_variant_lacks_exactly_its_capability(dotted):
    cls, capabilities = VARIANTS[dotted]
    provider = cls()
    for protocol in (LiveSignals, ConnectingReporter):
        assert isinstance(provider, protocol) == (protocol in capabilities), protocol.__name__


@pytest.fixture
def start_run(fake_provider, settings, git_repo, db):
    """Start a run on one variant, registered under its own id as a deployment would."""

    def start(dotted: str):
        cls = VARIANTS[dotted][0]
        settings.LAB_PROVIDERS = {cls.id: dotted}
        settings.LAB_DEFAULT_PROVIDER = cls.id
        registry._load.cache_clear()
        return services.run_start(provider_id=cls.id, repository=git_repo, branch=f"lab/{cls.id}")

    return start


def _blocked(run) -> None:
    Path(run.transcript_path + ".blocked").touch()  # FakeLiveSignals.blocked_state's flag


@pytest.mark.parametrize("dotted", VARIANTS)
def test_the_run_page_renders_with_every_variant(authed_client, start_run, dotted):
    run = start_run(dotted)
    fake_append(run.transcript_path, kind="assistant_text", text="hello from the variant", state="idle")
    response = authed_client.get(f"/runs/{run.pk}/")
    assert response.status_code == 200
    body = response.content.decode()
    assert "hello from the variant" in body and 'class="badge state-idle"' in body


def test_without_live_signals_a_blocked_tui_stays_transcript_only(authed_client, start_run):
    run = start_run("providers.testing.FakeWithoutLiveSignals")
    fake_append(run.transcript_path, kind="user_text", text="go")  # the transcript says working
    _blocked(run)  # what a live channel would report: nobody reads it
    assert services.run_state(run, RunState.WORKING) == RunState.WORKING
    assert services.run_state(run, RunState.IDLE) == RunState.IDLE
    assert services.pending_dialog(run) is None
    body = authed_client.get(f"/runs/{run.pk}/").content.decode()
    assert 'class="badge state-working"' in body
    assert "needs input" not in body and "state-needs_input" not in body
    assert 'class="interrupt"' in body  # the working composer still offers Interrupt


@pytest.mark.parametrize(
    ("dotted", "expected"),
    [
        ("providers.testing.FullFakeProvider", RunState.QUESTION),
        ("providers.testing.FakeWithoutLiveSignals", RunState.WORKING),
    ],
)
def test_only_a_live_channel_turns_a_pending_dialog_into_question(start_run, dotted, expected):
    # The live channel reports a dialog and a block; the transcript (its dialog passed as None
    # here) only says working. Without LiveSignals nothing but the transcript decides.
    run = start_run(dotted)
    fake_append(run.transcript_path, kind="user_text", text="go")
    Path(run.transcript_path + ".dialog").write_text('{"tool_use_id": "t1", "prompt": "Which?"}')
    _blocked(run)
    assert services.run_state(run, RunState.WORKING, None) == expected


def test_a_blocked_tui_shows_needs_input_with_the_attach_command(authed_client, start_run):
    run = start_run("providers.testing.FullFakeProvider")
    fake_append(run.transcript_path, kind="user_text", text="go")
    _blocked(run)
    assert services.run_state(run, RunState.WORKING) == RunState.NEEDS_INPUT
    body = authed_client.get(f"/runs/{run.pk}/").content.decode()
    assert 'class="badge state-needs_input">Fake Agent needs input<' in body
    hint = body.split('class="badge state-needs_input"', 1)[1].split("</p>", 1)[0]
    assert html.escape(run.attach_command) in hint or run.attach_command in hint
    assert f'data-copy="{html.escape(run.attach_command)}"' in hint


def test_an_ended_run_beats_a_blocked_signal(start_run):
    run = start_run("providers.testing.FullFakeProvider")
    _blocked(run)
    services.run_end(run=run)
    assert not Tmux(run.tmux_socket).has_session(run.tmux_session)
    assert services.run_state(run, RunState.WORKING) == RunState.ENDED
