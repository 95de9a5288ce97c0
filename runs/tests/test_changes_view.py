"""The run's changes page and its "load the rest" endpoint."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from runs import services
from seeding import changes

GIT = ["git", "-c", "user.name=lab-test", "-c", "user.email=lab-test@example.invalid"]


@pytest.fixture
def run(fake_provider, git_repo, db):
    return services.run_start(provider_id="fake", repository=git_repo, branch="lab/changes-1")


def test_it_records_the_base_commit_the_run_started_from(run, git_repo):
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=git_repo, capture_output=True, text=True).stdout
    assert run.base_commit == head.strip()


def test_the_page_shows_commits_and_highlighted_diffs(authed_client, run):
    wt = Path(run.worktree)
    (wt / "app.py").write_text("def hello():\n    return '<b>'\n")
    subprocess.run([*GIT, "add", "app.py"], cwd=wt, check=True)
    subprocess.run([*GIT, "commit", "-q", "-m", "Add app.py"], cwd=wt, check=True)
    (wt / "notes.md").write_text("# notes\n")

    body = authed_client.get(f"/runs/{run.pk}/changes/").content.decode()
    assert "Add app.py" in body
    assert 'data-path="app.py"' in body and 'data-path="notes.md"' in body
    assert '<span class="k">def</span>' in body  # Pygments, server-side
    assert "&#x27;&lt;b&gt;&#x27;" in body or "&lt;b&gt;" in body
    assert "<b>" not in body.split("<main>")[1]


def test_load_the_rest_returns_one_file_and_refuses_what_git_does_not_list(authed_client, run):
    wt = Path(run.worktree)
    (wt / "big.txt").write_text("".join(f"row {i}\n" for i in range(changes.PREVIEW_LINES + 50)))
    page = authed_client.get(f"/runs/{run.pk}/changes/").content.decode()
    assert "Load the rest" in page
    whole = authed_client.get(f"/runs/{run.pk}/changes/file/", {"section": "untracked", "path": "big.txt"})
    assert whole.status_code == 200 and f"row {changes.PREVIEW_LINES + 49}" in whole.content.decode()
    refused = authed_client.get(f"/runs/{run.pk}/changes/file/", {"section": "untracked", "path": "../x"})
    assert refused.status_code == 404


def test_a_file_loaded_to_its_cap_offers_no_more_and_says_the_cap(authed_client, run, monkeypatch):
    monkeypatch.setattr(changes, "FULL_LINES", changes.PREVIEW_LINES + 100)
    wt = Path(run.worktree)
    rows = changes.PREVIEW_LINES + 500
    (wt / "big.txt").write_text("".join(f"row {i}\n" for i in range(rows)))
    subprocess.run([*GIT, "add", "big.txt"], cwd=wt, check=True)
    page = authed_client.get(f"/runs/{run.pk}/changes/").content.decode()
    # One count in the summary and the note: the file's lines, without git's @@ header.
    assert f'<span class="plus">+{rows}</span>' in page
    assert f"of {rows} lines." in page
    assert "Load the rest" in page
    whole = authed_client.get(f"/runs/{run.pk}/changes/file/", {"section": "staged", "path": "big.txt"})
    body = whole.content.decode()
    assert "Load the rest" not in body
    assert f"lab shows at most {changes.PREVIEW_LINES + 100} lines of one file" in body


def test_a_removed_worktree_says_so(authed_client, run):
    shutil.rmtree(run.worktree)
    body = authed_client.get(f"/runs/{run.pk}/changes/").content.decode()
    assert "no longer exists" in body


def test_the_page_needs_a_login(client, run):
    response = client.get(f"/runs/{run.pk}/changes/")
    assert response.status_code == 302 and "/login/" in response["Location"]


def test_a_name_and_content_not_utf8_and_a_fifo_do_not_break_the_page(authed_client, run):
    wt = Path(run.worktree)
    (wt / "README.md").unlink()
    os.mkfifo(wt / "README.md")  # tracked, now a FIFO: git's own diff fails on it
    (wt / os.fsdecode(b"caf\xe9.txt")).write_bytes(b"\xff\xfe\n")
    subprocess.run([*GIT, "add", os.fsdecode(b"caf\xe9.txt")], cwd=wt, check=True)
    subprocess.run([*GIT, "commit", "-q", "-m", "An agent's commit"], cwd=wt, check=True)

    response = authed_client.get(f"/runs/{run.pk}/changes/")

    assert response.status_code == 200
    body = response.content.decode()
    assert "An agent&#x27;s commit" in body
    assert 'data-path="caf\ufffd.txt"' in body and "\ufffd\ufffd" in body
    assert "A FIFO: named, not opened or diffed." in body
    assert "disagree" not in body
    whole = authed_client.get(
        f"/runs/{run.pk}/changes/file/", {"section": "committed", "path": "caf\ufffd.txt"}
    )
    assert whole.status_code == 200 and "\ufffd\ufffd" in whole.content.decode()


def test_tabs_refreshing_together_share_one_read_until_the_worktree_changes(authed_client, run, monkeypatch):
    wt = Path(run.worktree)
    (wt / "notes.md").write_text("first\n")
    reads = []
    real = changes.worktree_changes
    monkeypatch.setattr(changes, "worktree_changes", lambda **kw: reads.append(1) or real(**kw))
    refresh = {"HTTP_HX_REQUEST": "true"}

    bodies = [authed_client.get(f"/runs/{run.pk}/changes/", **refresh).content.decode() for _ in range(4)]
    assert len(reads) == 1 and all("first" in b for b in bodies)

    # Same size, same git status line ("?? notes.md"): only the file itself says it changed.
    (wt / "notes.md").write_text("again\n")
    body = authed_client.get(f"/runs/{run.pk}/changes/", **refresh).content.decode()
    assert len(reads) == 2 and "again" in body


EVIL = "<b id=evil>x</b>"


def test_file_names_and_hunk_headers_from_the_worktree_reach_the_page_as_text(authed_client, run):
    """A file's name, a rename's source and a hunk header's function context are the agent's
    text: the page shows them, escaped, and no element of theirs appears."""
    wt = Path(run.worktree)
    (wt / "<b id=evil>x<").mkdir()
    (wt / EVIL).write_text("one\n")
    (wt / "<i id=old>.txt").write_text("same content, renamed\n" * 3)
    (wt / "code.py").write_text("def f(x='<u id=ctx>'):\n" + "".join(f"    a{i} = {i}\n" for i in range(8)))
    subprocess.run([*GIT, "add", "-A"], cwd=wt, check=True)
    subprocess.run([*GIT, "commit", "-q", "-m", "Odd names"], cwd=wt, check=True)
    subprocess.run([*GIT, "mv", "<i id=old>.txt", "<s id=new>.txt"], cwd=wt, check=True)
    (wt / "code.py").write_text(
        "def f(x='<u id=ctx>'):\n" + "".join(f"    a{i} = {i * (i != 6)}\n" for i in range(8))
    )

    response = authed_client.get(f"/runs/{run.pk}/changes/")

    main = response.content.decode().split("<main>")[1]
    for element in ("<b id=evil>", "<i id=old>", "<s id=new>", "<u id=ctx>"):
        assert element not in main, element
    assert "&lt;b id=evil&gt;x&lt;/b&gt;</code>" in main  # the committed file's name
    assert "&lt;i id=old&gt;.txt → &lt;s id=new&gt;.txt</code>" in main  # the staged rename
    assert "@@ def f(x=&#x27;&lt;u id=ctx&gt;&#x27;):" in main  # the hunk's function context
    # "Load the rest" of that file finds it by its real name.
    whole = authed_client.get(f"/runs/{run.pk}/changes/file/", {"section": "committed", "path": EVIL})
    assert whole.status_code == 200
    body = whole.content.decode()
    assert "<b id=evil>" not in body and "&lt;b id=evil&gt;x&lt;/b&gt;</code>" in body
