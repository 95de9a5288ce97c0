"""POST /runs/<id>/reply/ with files, and GET /runs/<id>/attachments/<name>: what is refused
(with its reason and limit, nothing saved or sent, the draft kept), what reaches the provider,
and the chat's thumbnail. Against the FakeProvider given the capability; the real adapters are
proven live in compat/*/tests/test_live_attachments.py and the browser test."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from PIL import Image

from providers.schema import Message, MessageKind
from runs import services
from runs.rendering import message_html
from seeding import attachments
from seeding.worktrees import uncommitted_changes


@pytest.fixture
def run(fake_provider, git_repo, db):
    return services.run_start(provider_id="fake", repository=git_repo, branch="lab/attach-1")


@pytest.fixture
def attached(fake_provider, monkeypatch):
    got: list[tuple[str, list]] = []

    def reply_with_attachments(self, handle, text, files, *, again=False):
        got.append((text, list(files)))

    monkeypatch.setattr(type(fake_provider), "reply_with_attachments", reply_with_attachments, raising=False)
    return got


def png() -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (2, 2), (0, 255, 0)).save(out, format="PNG")
    return out.getvalue()


def post(client, run, text, *files):
    return client.post(f"/runs/{run.pk}/reply/", {"text": text, "files": list(files)})


def test_picked_files_reach_the_provider_in_order_saved_out_of_git(
    authed_client, run, attached, fake_provider
):
    r = post(
        authed_client,
        run,
        "look",
        SimpleUploadedFile("shot 1.png", png(), "image/png"),
        SimpleUploadedFile("log.txt", b"boom\n", "text/plain"),
    )
    assert r.status_code == 200
    [(text, files)] = attached
    assert text == "look"
    assert [(f.name, f.is_image) for f in files] == [("shot 1.png", True), ("log.txt", False)]
    assert Path(files[0].path).name.endswith("-shot-1.png")
    assert Path(files[1].path).read_bytes() == b"boom\n"
    assert uncommitted_changes(Path(run.worktree)) == []
    assert [s for s in fake_provider.sent if s[0] == "reply"] == []


def test_an_image_alone_is_a_message(authed_client, run, attached):
    assert post(authed_client, run, "", SimpleUploadedFile("a.png", png(), "image/png")).status_code == 200
    assert attached[0][0] == "" and len(attached[0][1]) == 1


def test_a_wrong_type_is_refused_with_its_reason_and_nothing_is_sent(authed_client, run, attached):
    r = post(
        authed_client, run, "my draft", SimpleUploadedFile("a.pdf", b"%PDF-1.7\x00\x01", "application/pdf")
    )
    assert r.status_code == 422
    body = r.content.decode()
    assert "“a.pdf” is neither an image lab can attach nor UTF-8 text" in body
    assert "up to 5 MB" in body and "Nothing was sent." in body and "my draft" in body
    assert attached == []
    assert not (Path(run.worktree) / ".lab-attachments").exists()


def test_an_oversized_file_is_refused_before_it_is_read(authed_client, run, attached):
    big = SimpleUploadedFile("huge.png", b"\x89PNG" + b"\0" * attachments.MAX_IMAGE_BYTES, "image/png")
    r = post(authed_client, run, "draft", big)
    assert r.status_code == 413
    body = r.content.decode()
    assert "“huge.png” is too large: images (PNG, JPEG, GIF, WebP) up to 5 MB" in body and "draft" in body
    assert attached == []


def test_a_provider_without_the_capability_says_so(authed_client, run, fake_provider):
    r = post(authed_client, run, "x", SimpleUploadedFile("a.txt", b"x", "text/plain"))
    assert r.status_code == 422
    assert "Fake Agent takes no attachments from lab. Nothing was sent." in r.content.decode()
    assert [s for s in fake_provider.sent if s[0] == "reply"] == []


def test_no_text_and_no_file_is_still_refused(authed_client, run, attached):
    r = post(authed_client, run, "")
    assert r.status_code == 422 and "Write something first." in r.content.decode()


def test_the_chat_shows_an_attached_image_as_a_thumbnail(authed_client, run, attached):
    post(authed_client, run, "look", SimpleUploadedFile("a.png", png(), "image/png"))
    saved = attached[0][1][0]
    name = Path(saved.path).name
    html = message_html(
        Message(
            seq=1, kind=MessageKind.LIFECYCLE, text=f"Attached the image {saved.path}", attachment=saved.path
        ),
        "e",
    )
    assert f'<img src="attachments/{name}"' in html
    r = authed_client.get(f"/runs/{run.pk}/attachments/{name}")
    assert r.status_code == 200 and r["Content-Type"] == "image/png" and r.content == png()
    assert r["X-Content-Type-Options"] == "nosniff"
    # Only what lab saved, by its own names.
    assert authed_client.get(f"/runs/{run.pk}/attachments/..%2F..%2Fetc%2Fpasswd").status_code == 404
    assert authed_client.get(f"/runs/{run.pk}/attachments/deadbeef-none.png").status_code == 404
    # A path the CLI names elsewhere is no thumbnail.
    other = Message(
        seq=2, kind=MessageKind.LIFECYCLE, text="Attached the image /tmp/x.png", attachment="/tmp/x.png"
    )
    assert "<img" not in message_html(other, "e")
