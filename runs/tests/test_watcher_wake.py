"""A watcher wake resolves its run once: one RunHandle for every provider call of the wake (and
of the next wakes, while the run's fields stay the same), a new one when the transcript moves."""

from __future__ import annotations

import pytest

from providers.testing import fake_append
from runs import models, services
from runs.models import Run
from runs.watcher import RunWatcher

pytestmark = pytest.mark.usefixtures("fresh_indexes")


@pytest.fixture
def run(fake_provider, git_repo, db):
    return services.run_start(provider_id="fake", repository=git_repo, branch="lab/wake")


@pytest.mark.django_db
def test_wakes_build_the_run_handle_once(run, monkeypatch):
    built = []
    real = models.RunHandle
    monkeypatch.setattr(models, "RunHandle", lambda **fields: built.append(fields) or real(**fields))
    watcher = RunWatcher(run.pk, has_pidfd=True)
    loaded = Run.objects.get(pk=run.pk)
    fake_append(loaded.transcript_path, kind="assistant_text", text="zero")
    assert watcher._step(loaded, inline=False) is not None  # the first read, as in its thread
    for text in ("one", "two"):
        fake_append(loaded.transcript_path, kind="assistant_text", text=text)
        snap = watcher.step_inline(loaded)
        assert snap is not None and snap.next_seq >= 2
    assert len(built) == 1
    loaded.transcript_path += ".next"  # a clear: the provider is told the new path
    assert loaded.handle().transcript_path.endswith(".next")
    assert len(built) == 2
