"""The socket's fast path (runs/frames.catch_up_from_memory) and the watcher's inline read
(TranscriptIndex.advance_small) must answer exactly what the slow paths answer, and must decline
— never guess — whenever the in-memory index cannot: a truncated, replaced or unread file, a
busy index, an index behind what a watcher (in another worker) announced, a gap older than the
tail. And the in-memory channel layer still expires what channels' own would."""

from __future__ import annotations

import os

import pytest

from lab.layers import InMemoryChannelLayer
from live import frames
from live.frames import MAX_FROM_MEMORY, catch_up_from_memory, catch_up_html
from providers.testing import fake_append
from runs import services
from runs.transcripts import TAIL, indexed, transcript_index

pytestmark = pytest.mark.usefixtures("fresh_indexes")


@pytest.fixture
def run(fake_provider, git_repo, db):
    return services.run_start(provider_id="fake", repository=git_repo, branch="lab/mem")


def _append(run, *texts: str) -> None:
    for text in texts:
        fake_append(run.transcript_path, kind="assistant_text", text=text)


def _read(run):
    index = transcript_index(run, run.transcript_path)
    index.advance()
    return index


@pytest.mark.django_db
def test_the_fast_path_answers_what_the_slow_path_answers(run):
    _append(run, "zero", "one")
    index = _read(run)
    epoch, seen = index.epoch, index.cursor.next_seq - 1
    _append(run, "two", "three", "four")
    index.advance()
    fast = catch_up_from_memory(
        run.transcript_path, epoch, seen, announced_epoch=epoch, announced_next_seq=index.cursor.next_seq
    )
    assert fast is not None
    frames, last = fast
    html = "".join(frames)
    assert (html, epoch, last) == catch_up_html(run, epoch, seen)
    assert last == index.cursor.next_seq - 1 and "three" in html
    # Up to date: nothing to send, and the same answer as the slow path.
    assert catch_up_from_memory(
        run.transcript_path, epoch, last, announced_epoch=epoch, announced_next_seq=last + 1
    ) == ([], last)
    assert catch_up_html(run, epoch, last) == ("", epoch, last)


@pytest.mark.django_db
def test_the_fast_path_declines_what_memory_cannot_answer(run):
    _append(run, "zero", "one")
    index = _read(run)
    epoch, next_seq = index.epoch, index.cursor.next_seq
    path = run.transcript_path

    def fast(seq, *, page_epoch=epoch, announced_epoch=epoch, announced=next_seq, at=path):
        return catch_up_from_memory(
            at, page_epoch, seq, announced_epoch=announced_epoch, announced_next_seq=announced
        )

    assert fast(0) is not None
    assert fast(0, announced=next_seq + 1) is None  # a watcher elsewhere read further: read too
    assert fast(0, page_epoch="other") is None  # the page shows another transcript identity
    assert fast(0, announced_epoch="other") is None
    assert fast(0, at=path + ".nope") is None  # no index of that file in this process
    with index.lock:  # busy: never wait for it on the event loop
        assert fast(-1) is None
    _append(run, *(f"m{i}" for i in range(MAX_FROM_MEMORY + 1)))
    index.advance()
    assert fast(next_seq - 1, announced=index.cursor.next_seq) is None  # too big for the loop


@pytest.mark.django_db
def test_sockets_at_the_same_place_share_one_rendering(run, monkeypatch):
    _append(run, "zero")
    index = _read(run)
    epoch, seen = index.epoch, index.cursor.next_seq - 1
    _append(run, "one", "two")
    index.advance()
    rendered = []
    real = frames.append_frames
    monkeypatch.setattr(frames, "append_frames", lambda *a: rendered.append(a) or real(*a))
    answers = [
        catch_up_from_memory(
            run.transcript_path, epoch, seen, announced_epoch=epoch, announced_next_seq=index.cursor.next_seq
        )
        for _socket in range(3)
    ]
    assert len(rendered) == 1
    assert answers[0] is not None and answers[0] == answers[1] == answers[2]
    assert "two" in "".join(answers[0][0])


@pytest.mark.django_db
def test_a_gap_older_than_the_tail_is_read_not_guessed(run):
    _append(run, *(f"m{i}" for i in range(TAIL + 5)))
    index = _read(run)
    assert index.gap_in_memory(index.epoch, 0, index.cursor.next_seq) is None  # seq 1 left the tail
    first_in_tail = index.tail[0].seq
    assert first_in_tail > 1
    got = index.gap_in_memory(index.epoch, first_in_tail + 5, index.cursor.next_seq)
    assert [m.seq for m in got] == list(range(first_in_tail + 6, index.cursor.next_seq))
    got = index.gap_in_memory(index.epoch, index.cursor.next_seq - 3, index.cursor.next_seq)
    assert [m.text for m in got] == [f"m{TAIL + 3}", f"m{TAIL + 4}"]


@pytest.mark.django_db
def test_the_inline_read_takes_small_appends_only(run):
    _append(run, "zero")
    index = indexed(run.transcript_path)
    assert index is None  # nothing creates an index on the fast path
    index = _read(run)
    _append(run, "one")
    assert index.advance_small(64 * 1024)
    assert [m.text for m in index.tail] == ["zero", "one"]
    offset = index.cursor.offset
    _append(run, "x" * 5000)
    assert not index.advance_small(1024)  # more than the budget: left to advance() in a thread
    assert index.cursor.offset == offset
    index.advance()
    assert index.tail[-1].text == "x" * 5000
    with index.lock:
        assert not index.advance_small(64 * 1024)
        assert index.recent(-1, 10, blocking=False) == []  # the loop never waits for the lock
    assert [m.text for m in index.recent(0, 10, blocking=False)] == ["one", "x" * 5000]


@pytest.mark.django_db
@pytest.mark.parametrize("how", ["truncate", "replace"])
def test_the_inline_read_leaves_truncation_and_replacement_to_the_full_read(run, how):
    _append(run, "zero", "one", "two")
    index = _read(run)
    before = (index.cursor, index.epoch, list(index.tail))
    if how == "truncate":
        with open(run.transcript_path, "r+b") as f:
            f.truncate(0)
    else:
        tmp = run.transcript_path + ".new"
        for i in range(5):  # bigger than what was read: only its identity tells it apart
            fake_append(tmp, kind="assistant_text", text=f"new file, line {i}")
        os.replace(tmp, run.transcript_path)
    assert not index.advance_small(64 * 1024)
    assert (index.cursor, index.epoch, list(index.tail)) == before  # untouched
    assert index.advance()  # the full read starts over in a new epoch
    assert index.epoch != before[1]


async def test_the_in_memory_layer_still_expires_messages_and_memberships(monkeypatch):
    clock = [1000.0]
    monkeypatch.setattr("lab.layers.time.monotonic", lambda: clock[0])
    layer = InMemoryChannelLayer(expiry=-1)  # every message is already expired when sent
    first = await layer.new_channel()
    await layer.group_add("g", first)
    await layer.send(first, {"type": "x"})
    await layer.group_send("g", {"type": "x"})  # sweeps: the expired channel leaves the group
    assert first not in layer.groups.get("g", {})
    second = await layer.new_channel()
    await layer.group_add("g", second)
    await layer.send(second, {"type": "x"})
    await layer.group_send("g", {"type": "x"})  # within the second: no sweep yet
    assert second in layer.groups["g"]
    clock[0] += 1.5
    await layer.group_send("g", {"type": "x"})
    assert second not in layer.groups.get("g", {})


async def test_the_in_memory_layer_still_gives_each_receiver_its_own_message():
    layer = InMemoryChannelLayer()
    a, b = await layer.new_channel(), await layer.new_channel()
    flat = {"type": "run.update", "panel": "<div>", "next_seq": 3}
    nested = {"type": "x", "items": ["one"]}
    for channel in (a, b):
        await layer.send(channel, flat)
        await layer.send(channel, nested)
    flat["panel"] = "changed"
    nested["items"].append("two")
    got = await layer.receive(a)
    got["next_seq"] = 99
    assert await layer.receive(b) == {"type": "run.update", "panel": "<div>", "next_seq": 3}
    assert (await layer.receive(a))["items"] == ["one"] == (await layer.receive(b))["items"]
