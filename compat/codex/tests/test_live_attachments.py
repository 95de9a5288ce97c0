"""Live: files attached to a message through CodexProvider.reply_with_attachments, the
production path (COMPAT.md §2, images): each pasted image path becomes Codex's own image input
(`[Image #N]`, an input_image beside `<image name=… path=…>`), a text file is named in the
prompt and the agent reads it with its shell, inside its sandbox, without asking."""

from __future__ import annotations

import base64
import io

import pytest
from PIL import Image

from compat.codex.adapter_harness import CodexAdapterRig
from compat.codex.scripted_model import exec_command, input_images, text, when
from providers.schema import MessageKind, RunState
from seeding.attachments import Upload, save

pytestmark = pytest.mark.live


@pytest.fixture
def rig(tmp_path, settings):
    r = CodexAdapterRig(tmp_path, settings)
    yield r
    r.close()


def png(color: tuple[int, int, int]) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (3, 2), color).save(out, format="PNG")
    return out.getvalue()


def test_images_and_a_text_file_reach_the_model_as_codex_image_input(rig):
    red, green = png((255, 0, 0)), png((0, 255, 0))
    files = save(
        rig.worktree, [Upload("red.png", red), Upload("green.png", green), Upload("notes.txt", b"pelican\n")]
    )
    rig.model.script.add(when("ATTACH-2", exec_command(f"cat {files[2].rel}"), text("read ATTACH-2")))
    run = rig.start()
    run.provider.reply_with_attachments(run.handle, "what is in them ATTACH-2", files)

    run.wait(lambda r: r.answered("read ATTACH-2"), what="the answer")
    [first] = [r for r in rig.model.turn_requests() if input_images(r["body"])][:1]
    got = [base64.b64decode(url.split(",", 1)[1]) for url in input_images(first["body"])]
    assert got == [red, green]
    # The agent ran its read of the file, and its output came back to the model.
    outputs = [r for r in rig.model.turn_requests() if "pelican" in str(r["body"].get("input"))]
    assert outputs, "the agent never read the attached file"
    [prompt] = [m for m in run.messages if m.kind == MessageKind.USER_TEXT]
    assert prompt.text.endswith(f"{files[2].rel} what is in them ATTACH-2")
    assert [m.attachment for m in run.messages if m.attachment] == [files[0].path, files[1].path]
    assert run.provider.pending_dialog(run.handle) is None
    assert run.state == RunState.IDLE
