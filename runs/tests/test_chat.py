"""The chat's generic layer against the FakeProvider: start, page, live socket, reply,
reconnect without gap or duplicate, ended. The real adapter has its own live tests."""

import asyncio
import re
from pathlib import Path

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
from django.contrib.sessions.backends.db import SessionStore

from lab.asgi import application
from providers.schema import WorkspaceChoices
from providers.testing import fake_append, spawned_environ
from providers.tmux import Tmux
from runs import services
from runs.models import Run


@pytest.fixture
def run(fake_provider, git_repo, db):
    return services.run_start(provider_id="fake", repository=git_repo, branch="lab/try-1")


def test_it_starts_a_run_on_a_new_worktree(run, git_repo):
    assert run.worktree and run.worktree != str(git_repo)
    assert run.branch == "lab/try-1"
    assert Tmux(run.tmux_socket).has_session(run.tmux_session)
    assert run.transcript_path.endswith(".jsonl")


def test_the_page_shows_the_transcript(authed_client, run):
    fake_append(run.transcript_path, kind="user_text", text="hello there")
    fake_append(run.transcript_path, kind="assistant_text", text="**bold** reply", state="idle")
    body = authed_client.get(f"/runs/{run.pk}/").content.decode()
    assert "hello there" in body
    assert "<strong>bold</strong> reply" in body
    assert 'class="badge state-idle"' in body
    assert run.attach_command.replace(">", "&gt;") in body or run.attach_command in body


def test_a_reply_reaches_the_provider_and_the_composer_clears(authed_client, run, fake_provider):
    response = authed_client.post(f"/runs/{run.pk}/reply/", {"text": "do the thing"})
    assert response.status_code == 200
    assert fake_provider.sent == [("reply", "do the thing")]
    assert "do the thing" not in response.content.decode()


def test_an_undelivered_reply_keeps_the_draft(authed_client, run, fake_provider):
    fake_provider.deliver = False
    response = authed_client.post(f"/runs/{run.pk}/reply/", {"text": "keep me"})
    assert response.status_code == 502
    assert "keep me" in response.content.decode()


def test_an_oversized_reply_gets_413_and_nothing_is_sent(authed_client, run, fake_provider, settings):
    response = authed_client.post(
        f"/runs/{run.pk}/reply/", {"text": "x" * (settings.LAB_REPLY_MAX_BYTES + 1)}
    )
    assert response.status_code == 413
    assert fake_provider.sent == []


def test_earlier_pages_load_on_scroll(authed_client, run):
    for i in range(150):
        fake_append(run.transcript_path, kind="assistant_text", text=f"m{i}")
    body = authed_client.get(f"/runs/{run.pk}/").content.decode()
    assert "m149" in body and "m10<" not in body
    before = re.search(r"before=(\d+)", body).group(1)
    earlier = authed_client.get(f"/runs/{run.pk}/messages/", {"before": before}).content.decode()
    assert f"m{int(before) - 1}<" in earlier and "m149" not in earlier


def _session_cookie(user):
    store = SessionStore()
    store[SESSION_KEY] = str(user.pk)
    store[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
    store[HASH_SESSION_KEY] = user.get_session_auth_hash()
    store.save()
    return f"sessionid={store.session_key}".encode()


async def _socket(run, cookie):
    ws = WebsocketCommunicator(
        application,
        f"/ws/runs/{run.pk}/",
        headers=[(b"origin", b"http://127.0.0.1:8000"), (b"host", b"127.0.0.1:8000"), (b"cookie", cookie)],
    )
    connected, _ = await ws.connect()
    assert connected
    return ws


async def _until(ws, predicate, timeout=10.0):
    """Collect frames until one satisfies predicate; return everything received."""
    seen = []
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        remaining = deadline - asyncio.get_running_loop().time()
        assert remaining > 0, f"timed out; got {seen!r}"
        frame = await ws.receive_from(timeout=remaining)
        seen.append(frame)
        if predicate(frame):
            return seen


def _seqs(frames):
    return [int(s) for f in frames for s in re.findall(r'<li id="msg-\w+-(\d+)"', f)]


@pytest.mark.django_db(transaction=True)
async def test_the_socket_pushes_new_messages_and_reconnects_without_gap_or_duplicate(run, operator):
    cookie = await sync_to_async(_session_cookie)(operator)
    fake_append(run.transcript_path, kind="assistant_text", text="first")
    ws = await _socket(run, cookie)
    await ws.send_json_to({"type": "hello", "epoch": "", "seq": -1})
    frames = await _until(ws, lambda f: "first" in f)
    epoch = re.search(r'data-epoch="(\w+)"', "".join(frames)).group(1)

    fake_append(run.transcript_path, kind="assistant_text", text="second")
    frames = await _until(ws, lambda f: "second" in f)
    assert _seqs(frames) == [1]
    await ws.disconnect()

    # While the page is away, three more messages land; the reconnect says it has seq 1.
    for text in ("third", "fourth", "fifth"):
        fake_append(run.transcript_path, kind="assistant_text", text=text)
    ws = await _socket(run, cookie)
    await ws.send_json_to({"type": "hello", "epoch": epoch, "seq": 1})
    frames = await _until(ws, lambda f: "fifth" in f)
    assert _seqs(frames) == [2, 3, 4]
    fake_append(run.transcript_path, kind="assistant_text", text="sixth")
    frames = await _until(ws, lambda f: "sixth" in f)
    assert _seqs(frames) == [5]
    await ws.disconnect()


@pytest.mark.django_db(transaction=True)
async def test_a_killed_session_shows_ended(run, operator):
    cookie = await sync_to_async(_session_cookie)(operator)
    ws = await _socket(run, cookie)
    await ws.send_json_to({"type": "hello", "epoch": "", "seq": -1})
    Tmux(run.tmux_socket).kill_session(run.tmux_session)
    await _until(ws, lambda f: 'data-state="ended"' in f)
    refreshed = await Run.objects.aget(pk=run.pk)
    assert refreshed.is_ended
    await ws.disconnect()


def test_the_runs_list_shows_each_runs_state(authed_client, run):
    fake_append(run.transcript_path, kind="user_text", text="go")
    body = authed_client.get("/").content.decode()
    assert f'id="run-state-{run.pk}" class="badge state-working"' in body


def test_the_new_run_form_renders_the_providers_declared_options(authed_client, fake_provider):
    body = authed_client.get("/runs/new/").content.decode()
    assert 'name="opt:fake:speed"' in body and "Fast" in body


def test_a_new_run_from_the_form(authed_client, fake_provider, git_repo):
    fake_provider.logged_in = True
    response = authed_client.post(
        "/runs/new/",
        {
            "provider": "fake",
            "repository": str(git_repo),
            "branch": "lab/from-form",
            "opt:fake:speed": "slow",
        },
    )
    run = Run.objects.get(branch="lab/from-form")
    assert response.status_code == 302 and response["Location"] == f"/runs/{run.pk}/"
    assert run.spawn_options == {"speed": "slow"}
    # An unticked attribution box is "off"; an absent MCP choice is the configured default.
    assert fake_provider.seeded_choices == WorkspaceChoices(attribution=False)
    assert (run.attribution, run.project_mcp) == (False, "reject")
    body = authed_client.get(f"/runs/{run.pk}/").content.decode()
    assert "and its attribution lines are removed" in body
    # Not trusted: the repository's settings (its MCP servers among them) are not loaded.
    assert "agent settings: not loaded (not trusted), its MCP servers not started" in body


def test_the_new_run_form_offers_the_seeding_choices_with_the_configured_defaults(
    authed_client, fake_provider, settings
):
    settings.LAB_SEED_ATTRIBUTION = True
    settings.LAB_SEED_PROJECT_MCP = "approve"
    body = authed_client.get("/runs/new/").content.decode()
    assert re.search(r'<input type="checkbox" name="attribution"[^>]* checked', body)
    assert re.search(r'<option value="approve" selected>', body)


def test_the_agent_runs_behind_the_commit_guard(run, settings):
    """The generic layer hands every spawn the guard's environment (seeding/commit_guard.py)."""
    pid = Tmux(run.tmux_socket).pane_pid(run.tmux_session)
    env = spawned_environ(pid)
    assert env["GIT_CONFIG_KEY_0"] == "core.hooksPath"
    assert env["GIT_CONFIG_VALUE_0"] == str(Path(settings.DATA_DIR) / "git-hooks")
    assert (Path(env["GIT_CONFIG_VALUE_0"]) / "pre-commit").exists()


def test_a_logged_out_provider_starts_nothing_and_offers_its_login(authed_client, fake_provider, git_repo):
    response = authed_client.post(
        "/runs/new/", {"provider": "fake", "repository": str(git_repo), "branch": "lab/x"}
    )
    assert response.status_code == 422
    body = response.content.decode()
    # The fake names no key variable: the login is its only route.
    assert "Fake Agent has no credential: log in below; then start the run." in body
    assert 'id="auth-card-fake"' in body
    assert not Run.objects.exists()


@pytest.mark.parametrize(
    ("repository", "branch", "error"),
    [
        ("relative/path", "lab/x", "absolute path"),
        ("/nonexistent/dir", "lab/x", "No such directory"),
        ("/tmp", "lab/x", "Not a git repository"),
        (None, "-evil", "may not start with"),
        (None, "a b", "Not a valid branch name"),
        (None, "x..y", "Not a valid branch name"),
    ],
)
def test_the_new_run_form_refuses_bad_input(
    authed_client, fake_provider, git_repo, repository, branch, error
):
    data = {"provider": "fake", "repository": repository or str(git_repo), "branch": branch}
    response = authed_client.post("/runs/new/", data)
    assert response.status_code == 422
    assert error in response.content.decode()
    assert not Run.objects.exists()


def test_removing_a_clean_worktree_keeps_the_branch(authed_client, run, git_repo):
    import subprocess

    services.run_end(run=run)
    worktree = run.worktree
    response = authed_client.post(f"/runs/{run.pk}/remove-worktree/")
    assert response.status_code == 200 and "was removed" in response.content.decode()
    assert not Path(worktree).exists()
    branches = subprocess.run(["git", "branch"], cwd=git_repo, capture_output=True, text=True).stdout
    assert "lab/try-1" in branches


def test_uncommitted_work_is_never_deleted_without_a_confirm(authed_client, run):
    services.run_end(run=run)
    (Path(run.worktree) / "work.txt").write_text("precious")
    response = authed_client.post(f"/runs/{run.pk}/remove-worktree/")
    assert response.status_code == 409
    body = response.content.decode()
    assert "uncommitted" in body and "work.txt" in body and 'name="confirm" value="1"' in body
    assert (Path(run.worktree) / "work.txt").exists()
    response = authed_client.post(f"/runs/{run.pk}/remove-worktree/", {"confirm": "1"})
    assert response.status_code == 200
    assert not (Path(run.worktree) / "work.txt").exists()
