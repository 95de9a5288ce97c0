"""No gap, however large, makes a frame the page cannot take. A reconnecting
page (or one waking from sleep) is sent what it missed in bounded frames; one huge message is
capped with a way to load its full text. Driven through a real daphne (manage.py serve) with a
raw websocket client, as a browser tab."""

from __future__ import annotations

import re

import pytest

from live.frames import FRAME_MAX_BYTES
from providers.testing import fake_append
from tests.reliability.support import PASSWORD, WS, Lab
from tests.security.support import seqs

SETUP = """
from django.contrib.auth import get_user_model
from runs import services
User = get_user_model()
op = User.objects.create_superuser("operator", "op@example.invalid", None)
op.set_password(sys.argv[2]); op.save()
run = services.run_start(provider_id="fake", repository=sys.argv[1], branch="lab/big")
print(json.dumps({"pk": run.pk, "path": run.transcript_path}))
"""
# What daphne accepts in one message by default (websocket_max_message_size), and what a
# page should never be asked to take in one frame either.
ONE_MIB = 1024 * 1024
CURSOR_RE = re.compile(r'id="cursor"[^>]*data-seq="(-?\d+)"')


def _cursor_at(seq: int):
    return lambda frame: any(int(s) >= seq for s in CURSOR_RE.findall(frame))


def _catch_up(lab: Lab, run: dict, cookie: str, epoch: str, seq: int, upto: int) -> tuple[list[str], str]:
    ws = WS(lab.port, f"/ws/runs/{run['pk']}/", cookie=cookie, origin=lab.origin)
    try:
        ws.send_json({"type": "hello", "epoch": epoch, "seq": seq})
        frames = ws.until(_cursor_at(upto), timeout=60)
    finally:
        ws.close()
    epochs = re.findall(r'data-epoch="(\w+)"', "".join(frames))
    return frames, epochs[-1]


def test_a_gap_of_any_size_arrives_in_bounded_frames_and_a_huge_message_is_capped(lab, git_repo):
    run = lab.python(SETUP, str(git_repo), PASSWORD)
    lab.serve()
    cookie = lab.login()
    fake_append(run["path"], kind="assistant_text", text="before")
    frames, epoch = _catch_up(lab, run, cookie, "", -1, 0)
    assert seqs(frames) == [0]

    # Trigger one: twelve entries of ~100 KB while the page was away.
    for i in range(12):
        fake_append(run["path"], kind="assistant_text", text=f"entry {i} " + "x" * 100_000)
    frames, epoch = _catch_up(lab, run, cookie, epoch, 0, 12)
    assert seqs(frames) == list(range(1, 13))
    assert max(len(f.encode()) for f in frames) <= FRAME_MAX_BYTES < ONE_MIB

    # Trigger two: one 5 MB entry, then a reconnect after 5 MB more of new output.
    fake_append(run["path"], kind="tool_result", text="y" * 5_000_000)
    frames, epoch = _catch_up(lab, run, cookie, epoch, 12, 13)
    assert seqs(frames) == [13]
    assert max(len(f.encode()) for f in frames) <= FRAME_MAX_BYTES
    assert "full text" in "".join(frames)  # capped, with a way to load the rest
    for i in range(5):
        fake_append(run["path"], kind="assistant_text", text=f"more {i} " + "z" * 1_000_000)
    frames, _epoch = _catch_up(lab, run, cookie, epoch, 13, 18)
    assert seqs(frames) == [14, 15, 16, 17, 18]
    assert max(len(f.encode()) for f in frames) <= FRAME_MAX_BYTES

    # A page that has nothing (a fresh open) gets the whole tail the same way.
    frames, _epoch = _catch_up(lab, run, cookie, "", -1, 18)
    assert seqs(frames)[-1] == 18
    assert max(len(f.encode()) for f in frames) <= FRAME_MAX_BYTES


@pytest.fixture
def run(fake_provider, git_repo, db):
    from runs import services

    return services.run_start(provider_id="fake", repository=git_repo, branch="lab/full")


@pytest.mark.django_db
def test_a_capped_message_loads_its_full_text_on_request(authed_client, run):
    from urllib.parse import urljoin

    from django.urls import reverse

    from runs.rendering import MESSAGE_TEXT_MAX

    text = "start " + "w" * (3 * MESSAGE_TEXT_MAX) + " the end"
    fake_append(run.transcript_path, kind="tool_result", text=text)
    page = authed_client.get(f"/runs/{run.pk}/").content.decode()
    assert "the end" not in page and f"of {len(text)} characters" in page
    href = re.search(r'<a href="([^"]+)" hx-get="[^"]+" hx-target="closest li"', page).group(1)
    url = urljoin(f"/runs/{run.pk}/", href.replace("&amp;", "&"))
    assert url.startswith(reverse("runs:message_full", args=[run.pk]))
    whole = authed_client.get(url, headers={"HX-Request": "true"}).content.decode()
    assert whole.startswith('<li id="msg-') and "the end" in whole and "Load the full text" not in whole
    plain = authed_client.get(url)
    assert plain["Content-Type"].startswith("text/plain") and plain.content.decode() == text
    gone = authed_client.get(url.replace("epoch=", "epoch=other"))
    assert gone.status_code == 404 and "Reload the page" in gone.content.decode()
