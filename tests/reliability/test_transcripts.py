"""Case 13: broken transcripts through the run page and the socket (the watcher path). A
half-written last line is held until complete; a corrupt line mid-file is skipped and shown as a
lifecycle warning; truncation and rotation under the reader start a new epoch without
duplicates; a 50 MB single line is skipped with bounded memory. The readers' own unit tests
(providers/tests/test_jsonl.py, providers/claude_code/tests/test_transcript.py) cover the bytes."""

from __future__ import annotations

import json
import os
import re
import tracemalloc
import uuid

import pytest
from asgiref.sync import sync_to_async

from providers.claude_code.tests import entries as E
from providers.testing import fake_append
from runs import services
from runs.transcripts import wait_full_index
from tests.factories import RunFactory
from tests.security.support import MSG_RE, drain, frames_until, seqs, session_cookie, ws_open

pytestmark = pytest.mark.usefixtures("fresh_indexes")


@pytest.fixture
def run(fake_provider, git_repo, db):
    return services.run_start(provider_id="fake", repository=git_repo, branch="lab/tr")


def _page_seqs(client, run) -> list[tuple[str, int]]:
    body = client.get(f"/runs/{run.pk}/").content.decode()
    return [(e, int(s)) for e, s in MSG_RE.findall(body)]


def _texts(client, run) -> list[str]:
    body = client.get(f"/runs/{run.pk}/").content.decode()
    return re.findall(r'<div class="md"><p>([^<]*)</p>', body)


@pytest.mark.django_db
def test_a_half_written_last_line_is_held_until_complete(authed_client, run):
    fake_append(run.transcript_path, kind="assistant_text", text="whole")
    line = json.dumps({"kind": "assistant_text", "text": "half then whole"}).encode() + b"\n"
    with open(run.transcript_path, "ab") as f:
        f.write(line[:20])
    assert _texts(authed_client, run) == ["whole"]
    with open(run.transcript_path, "ab") as f:
        f.write(line[20:])
    assert _texts(authed_client, run) == ["whole", "half then whole"]
    assert [s for _e, s in _page_seqs(authed_client, run)] == [0, 1]


@pytest.mark.django_db(transaction=True)
async def test_the_socket_pushes_a_split_line_once_when_it_completes(run, operator):
    cookie = await sync_to_async(session_cookie)(operator)
    ws = await ws_open(f"/ws/runs/{run.pk}/", cookie)
    await ws.send_json_to({"type": "hello", "epoch": "", "seq": -1})
    await drain(ws)
    line = json.dumps({"kind": "assistant_text", "text": "split-line"}).encode() + b"\n"
    with open(run.transcript_path, "ab") as f:
        f.write(line[:15])
        f.flush()
    assert "split-line" not in "".join(await drain(ws, 0.5))
    with open(run.transcript_path, "ab") as f:
        f.write(line[15:])
    frames = await frames_until(ws, lambda f: "split-line" in f)
    frames += await drain(ws)
    assert seqs(frames) == [0]
    await ws.disconnect()


@pytest.fixture
def claude_run(db, tmp_path, settings):
    settings.LAB_RUNS_DIR = tmp_path / "runs"
    path = tmp_path / "projects" / "-wt" / f"{uuid.uuid4()}.jsonl"
    path.parent.mkdir(parents=True)
    path.touch()
    run = RunFactory(provider_id="claude-code", transcript_path=str(path), session_id=path.stem)
    return run, path


def _claude_lines(*entries) -> bytes:
    return b"".join(E.line(e) for e in entries)


@pytest.mark.django_db
def test_a_corrupt_line_mid_file_is_skipped_and_shown_as_a_warning(authed_client, claude_run):
    run, path = claude_run
    path.write_bytes(
        _claude_lines(E.prompt("first prompt"), E.assistant(E.text("first answer")))
        + b'{"type": "assistant", "message": {"content": [ \x00 broken\n'
        + _claude_lines(E.prompt("second prompt"), E.assistant(E.text("second answer"), message_id="m2"))
    )
    body = authed_client.get(f"/runs/{run.pk}/").content.decode()
    assert "first answer" in body and "second answer" in body
    assert "skipped an unreadable transcript line" in body
    assert "msg-error" in body
    # Seen once: a reload does not repeat the warning or the messages.
    body = authed_client.get(f"/runs/{run.pk}/").content.decode()
    assert body.count("skipped an unreadable transcript line") == 1
    assert body.count("second answer") == 1


@pytest.mark.django_db
def test_a_50_mb_single_line_is_skipped_with_bounded_memory(authed_client, claude_run):
    run, path = claude_run
    with open(path, "wb") as f:
        f.write(_claude_lines(E.prompt("before the giant")))
        f.write(b'{"type": "user", "message": {"role": "user", "content": "')
        chunk = b"x" * (1024 * 1024)
        for _ in range(50):
            f.write(chunk)
        f.write(b'"}}\n')
        f.write(_claude_lines(E.assistant(E.text("after the giant"))))
    assert path.stat().st_size > 50 * 1024 * 1024
    tracemalloc.start()
    try:
        # A big file opens on its end first (runs/transcripts.py: COLD_TAIL_BYTES) while the
        # whole of it is indexed in the background; both reads skip the giant line.
        first = authed_client.get(f"/runs/{run.pk}/").content.decode()
        wait_full_index(str(path))
        body = authed_client.get(f"/runs/{run.pk}/").content.decode()
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert "after the giant" in first
    assert "before the giant" in body and "after the giant" in body
    assert "skipped an oversized transcript line" in body
    assert peak < 24 * 1024 * 1024, f"peak {peak / 2**20:.1f} MiB while skipping a 50 MiB line"


@pytest.mark.django_db
@pytest.mark.parametrize("how", ["truncate", "rotate"])
def test_truncation_or_rotation_under_the_page_starts_over_without_duplicates(authed_client, run, how):
    for i in range(5):
        fake_append(run.transcript_path, kind="assistant_text", text=f"old {i}")
    before = _page_seqs(authed_client, run)
    assert [s for _e, s in before] == [0, 1, 2, 3, 4]
    if how == "truncate":
        open(run.transcript_path, "wb").close()
        fake_append(run.transcript_path, kind="assistant_text", text="new 0")
    else:
        tmp = run.transcript_path + ".new"
        fake_append(tmp, kind="assistant_text", text="new 0")
        os.replace(tmp, run.transcript_path)
    fake_append(run.transcript_path, kind="assistant_text", text="new 1")
    after = _page_seqs(authed_client, run)
    assert [s for _e, s in after] == [0, 1]
    assert after[0][0] != before[0][0]  # a new epoch: a page holding the old one re-renders
    assert _texts(authed_client, run) == ["new 0", "new 1"]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("how", ["truncate", "rotate"])
async def test_the_socket_replaces_the_transcript_on_truncation_or_rotation(run, operator, how):
    cookie = await sync_to_async(session_cookie)(operator)
    for i in range(3):
        fake_append(run.transcript_path, kind="assistant_text", text=f"old {i}")
    ws = await ws_open(f"/ws/runs/{run.pk}/", cookie)
    await ws.send_json_to({"type": "hello", "epoch": "", "seq": -1})
    await frames_until(ws, lambda f: "old 2" in f)
    await drain(ws)

    def shrink():
        if how == "truncate":
            with open(run.transcript_path, "wb") as f:
                f.write(json.dumps({"kind": "assistant_text", "text": "fresh 0"}).encode() + b"\n")
        else:
            tmp = run.transcript_path + ".new"
            fake_append(tmp, kind="assistant_text", text="fresh 0")
            os.replace(tmp, run.transcript_path)

    await sync_to_async(shrink)()
    frames = await frames_until(ws, lambda f: "fresh 0" in f)
    fake_append(run.transcript_path, kind="assistant_text", text="fresh 1")
    frames += await frames_until(ws, lambda f: "fresh 1" in f)
    frames += await drain(ws)
    joined = "".join(frames)
    assert "old 0" not in joined  # the old epoch is not replayed
    assert 'id="transcript"' in joined and 'hx-swap-oob="true"' in joined  # the list is replaced
    new = [s for f in frames for e, s in MSG_RE.findall(f)]
    assert sorted(set(new)) == ["0", "1"] and len(new) == len(set(new)), new
    await ws.disconnect()
