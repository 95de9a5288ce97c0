"""A first read of a big transcript opens on its end (a provisional index numbered from a line
boundary near the end, in an epoch naming that offset) while the whole file is indexed in the
background; the full index then takes its place and the pages in the provisional numbering are
re-rendered in the full one. Nothing is stored but cursors."""

from __future__ import annotations

import threading

import pytest

from live.frames import catch_up_html
from providers.testing import fake_append
from runs import services, transcripts
from runs.transcripts import (
    indexed,
    transcript_index,
    transcript_page,
    transcript_tail,
    wait_full_index,
)

WINDOW = 4096


@pytest.fixture(autouse=True)
def _small_window(monkeypatch, fresh_indexes):
    monkeypatch.setattr(transcripts, "COLD_TAIL_BYTES", WINDOW)


@pytest.fixture
def run(fake_provider, git_repo, db):
    return services.run_start(provider_id="fake", repository=git_repo, branch="lab/cold")


@pytest.fixture
def held_background(monkeypatch):
    """The background indexer waits for the test's go."""
    go = threading.Event()
    real = transcripts._index_fully

    def held(*args):
        go.wait(30)
        real(*args)

    monkeypatch.setattr(transcripts, "_index_fully", held)
    yield go
    go.set()


def _fill(run, count: int) -> None:
    for i in range(count):
        fake_append(run.transcript_path, kind="assistant_text", text=f"message {i:04d}")


@pytest.mark.django_db
def test_a_big_file_opens_on_its_end_then_the_full_index_takes_over(run, held_background):
    _fill(run, 400)  # about 19 KB: more than twice the window
    tail = transcript_tail(run)
    provisional = indexed(run.transcript_path)
    assert provisional is not None and provisional.head_unread
    assert tail.has_earlier and tail.head_unread
    assert tail.messages[-1].text == "message 0399"
    assert tail.next_seq < 400  # numbered from the window's start, not from the file's
    assert tail.epoch != transcripts.epoch_of(run.transcript_path)
    # An earlier page inside the window is served in the provisional numbering …
    page = transcript_page(run, before_seq=tail.messages[0].seq, limit=10, epoch=tail.epoch)
    assert page is not None and page.epoch == tail.epoch and page.has_earlier
    assert [m.text for m in page.messages] == [
        f"message {400 - tail.next_seq + m.seq:04d}" for m in page.messages
    ]

    held_background.set()
    wait_full_index(run.transcript_path)
    full = indexed(run.transcript_path)
    assert full is not provisional and not full.head_unread
    assert full.cursor.next_seq == 400 and full.epoch == transcripts.epoch_of(run.transcript_path)
    # … and a page in the old numbering is told to re-render, by the loader and by the socket.
    assert transcript_page(run, before_seq=5, limit=10, epoch=tail.epoch) is None
    html, epoch, last = catch_up_html(run, tail.epoch, tail.next_seq - 1)
    assert epoch == full.epoch and last == 399
    assert 'id="transcript"' in html and f'data-epoch="{full.epoch}"' in html


@pytest.mark.django_db
def test_asking_for_what_lies_before_the_window_waits_for_the_full_index(run, held_background):
    _fill(run, 400)
    tail = transcript_tail(run)
    threading.Timer(0.2, held_background.set).start()
    assert transcript_page(run, before_seq=0, limit=10, epoch=tail.epoch) is None  # waited, re-render
    full = indexed(run.transcript_path)
    assert not full.head_unread
    page = transcript_page(run, before_seq=10, limit=10, epoch=full.epoch)
    assert [m.text for m in page.messages] == [f"message {i:04d}" for i in range(10)]
    assert not page.has_earlier


@pytest.mark.django_db
def test_the_loader_re_renders_a_page_in_an_old_numbering(authed_client, run, held_background):
    _fill(run, 400)
    tail = transcript_tail(run)
    held_background.set()
    wait_full_index(run.transcript_path)
    body = authed_client.get(
        f"/runs/{run.pk}/messages/", {"before": tail.messages[0].seq, "epoch": tail.epoch}
    ).content.decode()
    full = indexed(run.transcript_path)
    assert 'hx-swap-oob="true"' in body and f'data-epoch="{full.epoch}"' in body
    assert "message 0399" in body


@pytest.mark.django_db
def test_a_small_file_is_read_whole(run):
    _fill(run, 20)
    tail = transcript_tail(run)
    assert not tail.head_unread and tail.next_seq == 20
    assert tail.epoch == transcripts.epoch_of(run.transcript_path)
    assert not transcripts._full


@pytest.mark.django_db
def test_appends_during_the_background_read_reach_both_indexes(run, held_background):
    _fill(run, 400)
    provisional = transcript_index(run, run.transcript_path)
    provisional.advance()
    fake_append(run.transcript_path, kind="assistant_text", text="appended meanwhile")
    provisional.advance()
    assert provisional.tail[-1].text == "appended meanwhile"
    held_background.set()
    wait_full_index(run.transcript_path)
    full = indexed(run.transcript_path)
    assert full.tail[-1].text == "appended meanwhile" and full.cursor.next_seq == 401
