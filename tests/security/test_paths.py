"""Case 7: paths. The transcript reader opens with O_NOFOLLOW and checks what it opened (a
symlink, a FIFO, a directory or a device is refused, a FIFO without blocking); the Claude Code
adapter only follows a SessionStart transcript_path that is `<root>/<project>/<uuid>.jsonl`;
session ids are UUIDs; and a run page whose transcript is hostile shows nothing of the target."""

from __future__ import annotations

import os
import re
import time
import uuid
from pathlib import Path

import orjson
import pytest

from providers.claude_code.provider import UUID_RE, ClaudeCodeProvider
from providers.errors import TranscriptUnreadable
from providers.jsonl import read_lines
from providers.schema import RunHandle

SECRET = b'{"type": "user", "message": {"role": "user", "content": "SECRET-FILE-CONTENT"}}\n'


@pytest.fixture
def secret(tmp_path) -> Path:
    p = tmp_path / "elsewhere" / "secret.jsonl"
    p.parent.mkdir()
    p.write_bytes(SECRET)
    return p


def test_a_symlinked_transcript_is_refused(tmp_path, secret):
    link = tmp_path / f"{uuid.uuid4()}.jsonl"
    link.symlink_to(secret)
    with pytest.raises(TranscriptUnreadable):
        read_lines(str(link))


def test_a_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / f"{uuid.uuid4()}.jsonl"
    os.mkfifo(fifo)
    started = time.monotonic()
    with pytest.raises(TranscriptUnreadable):
        read_lines(str(fifo))
    assert time.monotonic() - started < 1


@pytest.mark.parametrize("target", ["directory", "/dev/null", "/dev/zero"])
def test_anything_but_a_regular_file_is_refused(tmp_path, target):
    path = tmp_path if target == "directory" else Path(target)
    with pytest.raises(TranscriptUnreadable):
        read_lines(str(path))


def test_a_symlink_swapped_in_after_a_read_is_refused(tmp_path, secret):
    # The TOCTOU case: the file lab read is replaced by a link between two reads.
    path = tmp_path / f"{uuid.uuid4()}.jsonl"
    path.write_bytes(b'{"a": 1}\n')
    first = read_lines(str(path))
    path.unlink()
    path.symlink_to(secret)
    with pytest.raises(TranscriptUnreadable):
        read_lines(str(path), first.offset, first.inode)


# --- the adapter's locate_transcript ---------------------------------------------------------


@pytest.fixture
def adapter(tmp_path, settings):
    settings.LAB_AGENT_HOME = str(tmp_path / "home")
    provider = ClaudeCodeProvider()
    root = provider.transcript_root()
    (root / "-work-wt").mkdir(parents=True)
    spool = tmp_path / "spool"
    spool.mkdir()
    spawn_path = str(root / "-work-wt" / f"{uuid.uuid4()}.jsonl")
    handle = RunHandle(
        run_id=1, worktree="/work/wt", tmux_socket="labsec", tmux_session="lab-x",
        session_id=str(uuid.uuid4()), transcript_path=spawn_path, spool_dir=str(spool),
    )  # fmt: skip
    return provider, handle, root


def _session_start(handle: RunHandle, path: str, n: int = 1) -> None:
    name = f"{time.time_ns() + n:020d}-{os.getpid()}.json"
    payload = {"hook_event_name": "SessionStart", "source": "clear", "transcript_path": path}
    Path(handle.spool_dir, name).write_bytes(orjson.dumps(payload))


def test_a_session_start_path_under_the_root_with_a_uuid_stem_is_followed(adapter):
    provider, handle, root = adapter
    good = str(root / "-work-wt" / f"{uuid.uuid4()}.jsonl")
    _session_start(handle, good)
    assert provider.locate_transcript(handle) == good


@pytest.mark.parametrize(
    "hostile",
    [
        "/etc/passwd",
        "{elsewhere}/{uuid}.jsonl",
        "{root}/../{uuid}.jsonl",
        "{root}/-work-wt/../../{uuid}.jsonl",
        "{root}/-work-wt/../-other/{uuid}.jsonl",
        "{root}/{uuid}.jsonl",  # no project dir
        "{root}/-work-wt/sub/{uuid}.jsonl",  # nested deeper
        "{root}/-work-wt/not-a-uuid.jsonl",
        "{root}/-work-wt/{uuid}.json",
        "{root}/-work-wt/{uuid}.jsonl.bak",
        "{root}/-work-wt/{UUID}.jsonl",  # upper case is not what the CLI writes
        "-work-wt/{uuid}.jsonl",  # relative
        "",
    ],
)
def test_a_session_start_path_outside_the_root_or_not_a_uuid_is_ignored(adapter, tmp_path, hostile):
    provider, handle, root = adapter
    u = str(uuid.uuid4())
    path = hostile.format(root=root, elsewhere=tmp_path / "elsewhere", uuid=u, UUID=u.upper())
    _session_start(handle, path)
    assert provider.locate_transcript(handle) == handle.transcript_path


def test_a_non_string_or_missing_path_is_ignored(adapter):
    provider, handle, _root = adapter
    for n, value in enumerate([None, 42, ["/etc/passwd"], {"p": 1}]):
        name = f"{time.time_ns() + n:020d}-{os.getpid()}.json"
        payload = {"hook_event_name": "SessionStart", "transcript_path": value}
        Path(handle.spool_dir, name).write_bytes(orjson.dumps(payload))
    assert provider.locate_transcript(handle) == handle.transcript_path


def test_a_symlinked_project_dir_cannot_lead_outside_the_root(adapter, tmp_path):
    provider, handle, root = adapter
    u = str(uuid.uuid4())
    (tmp_path / "elsewhere").mkdir(exist_ok=True)
    (tmp_path / "elsewhere" / f"{u}.jsonl").write_bytes(SECRET)
    (root / "-evil").symlink_to(tmp_path / "elsewhere")
    _session_start(handle, str(root / "-evil" / f"{u}.jsonl"))
    assert provider.locate_transcript(handle) == handle.transcript_path


def test_spawned_session_ids_are_uuids(adapter, monkeypatch):
    provider, handle, _root = adapter
    from providers.tmux import Tmux

    monkeypatch.setattr(Tmux, "new_session", lambda self, *a, **k: 1)
    result = provider.spawn(handle, {"permission_mode": "default"})
    assert UUID_RE.match(result.session_id)
    assert Path(result.transcript_path).stem == result.session_id
    assert Path(result.transcript_path).parent.parent == provider.transcript_root()


@pytest.mark.parametrize(
    "bad", ["../../etc/passwd", "x", "00000000-0000-0000-0000-00000000000", "a" * 36, "{u}/..", " {u}", "{U}"]
)
def test_the_uuid_pattern_accepts_only_uuids(bad):
    u = str(uuid.uuid4())
    assert not UUID_RE.match(bad.format(u=u, U=u.upper()))


# --- through the run page --------------------------------------------------------------------


def _hostile_run(fake_provider, git_repo, secret, kind):
    from runs import services
    from runs.models import Run

    run = services.run_start(provider_id="fake", repository=git_repo, branch=f"lab/path-{kind}")
    path = Path(run.transcript_path)
    path.unlink()
    if kind == "symlink":
        fake_secret = secret.with_name("fake-secret.jsonl")
        fake_secret.write_text('{"kind": "assistant_text", "text": "SECRET-FILE-CONTENT"}\n')
        path.symlink_to(fake_secret)
    elif kind == "fifo":
        os.mkfifo(path)
    else:
        path.mkdir()
    Run.objects.filter(pk=run.pk).update(transcript_path=str(path))
    return run


@pytest.mark.django_db
@pytest.mark.parametrize("kind", ["symlink", "fifo", "directory"])
def test_a_run_page_never_shows_a_hostile_transcripts_target_and_says_why(
    authed_client, fake_provider, git_repo, secret, kind
):
    run = _hostile_run(fake_provider, git_repo, secret, kind)
    response = authed_client.get(f"/runs/{run.pk}/")
    assert response.status_code == 200  # refused, not a 500: the page still renders
    body = response.content.decode()
    assert "SECRET-FILE-CONTENT" not in body
    # What lab refused, on the page as an error line: never a silently empty chat.
    errors = re.findall(r'<li id="msg-[^"]*" class="msg msg-lifecycle msg-error".*?</li>', body, re.S)
    assert len(errors) == 1, body
    assert run.transcript_path in errors[0]
    assert re.search(r"Refusing to follow a symlink|not a regular file|Cannot open", errors[0]), errors[0]


@pytest.mark.django_db(transaction=True)  # the page is fetched from a thread (the deadline)
@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
def test_a_hostile_spool_entry_never_stalls_a_run_page(authed_client, settings, tmp_path, kind):
    """The agent sees its spool's path on its own command line: a FIFO (or a symlink to
    /dev/zero) named like a hook payload blocked the read for good, and the server with it."""
    from django.utils import timezone

    from providers.testing import returns_within
    from tests.factories import RunFactory

    settings.LAB_RUNS_DIR = tmp_path / "runs"
    settings.LAB_AGENT_HOME = str(tmp_path / "home")
    project = tmp_path / "home" / ".claude" / "projects" / "-repo"
    project.mkdir(parents=True)
    transcript = project / f"{uuid.uuid4()}.jsonl"
    transcript.write_bytes(b"")
    run = RunFactory(provider_id="claude-code", transcript_path=str(transcript), ended_at=timezone.now())
    run.spool_dir.mkdir(parents=True)
    planted = run.spool_dir / "00000000000000000001-1.json"
    if kind == "fifo":
        os.mkfifo(planted)
    else:
        planted.symlink_to("/dev/zero")
    response = returns_within(lambda: authed_client.get(f"/runs/{run.pk}/"), 10)
    assert response.status_code == 200
