"""One RunView per page (runs/runview.py): a page load reads the run's transcript once and asks
its live channel once, and a dialog answer asks tmux once whether the agent lives. The watcher's
own view is tested in live/tests/test_watcher_view.py."""

from __future__ import annotations

import pytest

from providers.testing import fake_raise_dialog
from providers.tmux import Tmux
from runs import services, transcripts

pytestmark = pytest.mark.usefixtures("fresh_indexes")


@pytest.mark.django_db
def test_a_page_load_reads_the_transcript_once_and_asks_the_live_channel_once(
    authed_client, fake_provider, git_repo, monkeypatch
):
    run = services.run_start(provider_id="fake", repository=git_repo, branch="lab/view")
    fake_raise_dialog(run.transcript_path, {"tool_use_id": "toolu_p", "prompt": "Deploy now?"})
    reads: list = []
    asked: list = []
    advance, dialog = transcripts.TranscriptIndex.advance, type(fake_provider).pending_dialog
    monkeypatch.setattr(transcripts.TranscriptIndex, "advance", _counting(advance, reads))
    monkeypatch.setattr(type(fake_provider), "pending_dialog", _counting(dialog, asked))
    body = authed_client.get(f"/runs/{run.pk}/").content.decode()
    assert "Deploy now?" in body and 'data-state="question"' in body
    assert len(reads) == 1 and len(asked) == 1


def _counting(fn, calls: list):
    def counted(*args, **kwargs):
        calls.append(args)
        return fn(*args, **kwargs)

    return counted


@pytest.mark.django_db(transaction=True)
def test_a_dialog_answer_asks_tmux_once_whether_the_agent_lives(
    authed_client, fake_provider, git_repo, monkeypatch
):
    run = services.run_start(provider_id="fake", repository=git_repo, branch="lab/answer-view")
    fake_raise_dialog(
        run.transcript_path, {"tool_use_id": "toolu_a", "prompt": "Which?", "options": ["A", "B"]}
    )
    asked: list = []
    for name in ("pane_format", "has_session", "pane_pid"):
        monkeypatch.setattr(Tmux, name, _counting(getattr(Tmux, name), asked))
    r = authed_client.post(
        f"/runs/{run.pk}/answer/", {"tool_use_id": "toolu_a", "count": "1", "answers-0": "1"}
    )
    assert r.status_code == 200 and "Answer sent" in r.content.decode()
    assert len(asked) == 1
