"""Live: files attached to a message through ClaudeCodeProvider.reply_with_attachments, the
production path (COMPAT §6, attachments): each image path pasted becomes the CLI's own image
input (`[Image #N]`), a text file is named with `@` and read by the CLI itself, with no
permission prompt; the reply returns only when the CLI's record holds every image."""

from __future__ import annotations

import base64
import io
import time

import pytest
from PIL import Image

from compat.claude_code.scripted_model import image_blocks, last_human_text, text, when
from providers.schema import MessageKind, RunState
from seeding.attachments import Upload, save

pytestmark = pytest.mark.live


def png(color: tuple[int, int, int]) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (3, 2), color).save(out, format="PNG")
    return out.getvalue()


def test_images_and_a_text_file_reach_the_model_in_order(scripted_model, live_run, claude_home):
    scripted_model.script.add(when("ATTACH-1", text("seen ATTACH-1")))
    red, green = png((255, 0, 0)), png((0, 255, 0))
    files = save(
        claude_home.worktree,
        [
            Upload("red shot.png", red),
            Upload("green.png", green),
            Upload("notes.txt", b"the word is pelican\n"),
        ],
    )
    live_run.provider.reply_with_attachments(live_run.handle, "what do you see ATTACH-1", files)

    live_run.wait(lambda r: r.answered("seen ATTACH-1"), what="the answer")
    [request] = [r for r in scripted_model.requests if "ATTACH-1" in last_human_text(r.get("body") or {})][:1]
    images = image_blocks(request["body"])
    assert [base64.b64decode(b["source"]["data"]) for b in images] == [red, green]
    assert "the word is pelican" in str(request["body"]["messages"])
    [prompt] = [m for m in live_run.messages if m.kind == MessageKind.USER_TEXT]
    assert prompt.text.startswith("[Image #1] [Image #2] @.lab-attachments/")
    assert prompt.text.endswith("notes.txt what do you see ATTACH-1")
    assert [m.attachment for m in live_run.messages if m.attachment] == [files[0].path, files[1].path]
    # No permission prompt came for reading the attached file.
    assert live_run.provider.pending_dialog(live_run.handle) is None
    assert live_run.provider.blocked_state(live_run.handle) is None
    assert live_run.state == RunState.IDLE


def test_an_image_alone_is_a_message(scripted_model, live_run, claude_home):
    [shot] = save(claude_home.worktree, [Upload("only.png", png((0, 0, 255)))])
    started = time.monotonic()
    live_run.provider.reply_with_attachments(live_run.handle, "", [shot])
    assert time.monotonic() - started < 30
    live_run.wait(
        lambda r: r.state == RunState.IDLE and bool(r.texts(MessageKind.ASSISTANT_TEXT)), what="a reply"
    )
    turns = [r for r in scripted_model.requests if image_blocks(r.get("body") or {})]
    assert turns, "the model never received the image"
    assert [m.attachment for m in live_run.messages if m.attachment] == [shot.path]
