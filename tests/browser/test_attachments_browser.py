"""Attachments in a real browser against the real Claude Code TUI: an image pasted into the
composer reaches the scripted model as image content and shows as a thumbnail on the message;
a text file picked with the file picker is read by the agent; a wrong-type or oversized file is
refused with its reason and limit, nothing reaches the model, and the draft and files stay."""

from __future__ import annotations

import base64
import io
from pathlib import Path
from typing import Any

import pytest
from PIL import Image
from playwright.sync_api import expect

from compat.claude_code.scripted_model import image_blocks, last_human_text, text, when
from tests.browser.conftest import LIVE_TIMEOUT_MS, LabServer, RunPage, start_run

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def attach_run(context: Any, lab_server: LabServer) -> RunPage:
    p = context.new_page()
    try:
        return start_run(p, lab_server.repo, "lab/browser-attach")
    finally:
        p.close()


def open_run(page: Any, run: RunPage) -> None:
    page.goto(run.url)
    page.wait_for_function("() => window.__ws && window.__ws.opens >= 1")
    expect(page.locator("#panel")).to_have_attribute("data-state", "idle", timeout=LIVE_TIMEOUT_MS)


def png(color: tuple[int, int, int]) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (6, 4), color).save(out, format="PNG")
    return out.getvalue()


def paste_file(page: Any, data: bytes, name: str, mime: str) -> None:
    """A paste whose clipboard holds a file (a screenshot copied to the clipboard)."""
    page.locator("#composer textarea").evaluate(
        """(box, [b64, name, mime]) => {
            const bytes = Uint8Array.from(atob(b64), c => c.charCodeAt(0));
            const transfer = new DataTransfer();
            transfer.items.add(new File([bytes], name, {type: mime}));
            const init = {clipboardData: transfer, bubbles: true, cancelable: true};
            box.dispatchEvent(new ClipboardEvent("paste", init));
        }""",
        [base64.b64encode(data).decode(), name, mime],
    )


def requests_with(lab_server: LabServer, token: str) -> list[dict[str, Any]]:
    return [r for r in lab_server.model.requests if token in last_human_text(r.get("body") or {})]


def test_a_pasted_image_reaches_the_model_and_shows_as_a_thumbnail(
    page: Any, lab_server: LabServer, attach_run: RunPage
) -> None:
    lab_server.model.script.add(when("PASTED-IMG", text("I see a red picture.")))
    open_run(page, attach_run)
    red = png((255, 0, 0))
    paste_file(page, red, "image.png", "image/png")
    expect(page.locator("#composer .attachment-chip")).to_have_count(1)
    box = page.locator("#composer textarea")
    box.fill("what is this PASTED-IMG")
    box.press("Enter")
    expect(page.locator("#transcript .msg-assistant_text").last).to_contain_text(
        "I see a red picture.", timeout=LIVE_TIMEOUT_MS
    )
    [request] = requests_with(lab_server, "PASTED-IMG")[:1]
    assert [base64.b64decode(b["source"]["data"]) for b in image_blocks(request["body"])] == [red]
    expect(page.locator("#transcript .msg-user_text").last).to_contain_text("what is this PASTED-IMG")
    thumb = page.locator("#transcript figure.attachment img").last
    expect(thumb).to_be_visible()
    page.wait_for_function("img => img.complete && img.naturalWidth === 6", arg=thumb.element_handle())
    expect(page.locator("#composer .attachment-chip")).to_have_count(0)  # sent: the composer is clear


def test_a_text_file_from_the_picker_is_read_by_the_agent(
    page: Any, lab_server: LabServer, attach_run: RunPage, tmp_path: Path
) -> None:
    lab_server.model.script.add(when("PICKED-TXT", text("The log says flamingo.")))
    open_run(page, attach_run)
    log = tmp_path / "server.log"
    log.write_text("ERROR the password is flamingo\n")
    page.locator('#composer input[type="file"]').set_input_files(str(log))
    expect(page.locator("#composer .attachment-chip")).to_contain_text("server.log")
    box = page.locator("#composer textarea")
    box.fill("what does it say PICKED-TXT")
    box.press("Enter")
    expect(page.locator("#transcript .msg-assistant_text").last).to_contain_text(
        "The log says flamingo.", timeout=LIVE_TIMEOUT_MS
    )
    [request] = requests_with(lab_server, "PICKED-TXT")[:1]
    assert "ERROR the password is flamingo" in str(request["body"]["messages"])
    expect(page.locator("#panel")).not_to_have_attribute("data-state", "needs_input")


@pytest.mark.parametrize(
    ("name", "data", "says"),
    [
        ("report.pdf", b"%PDF-1.7\n\x00\x01\x02", "is neither an image lab can attach nor UTF-8 text"),
        (
            "huge.png",
            b"\x89PNG\r\n\x1a\n" + b"\0" * (6 * 1024 * 1024),
            "is too large: images (PNG, JPEG, GIF, WebP) up to 5 MB",
        ),
    ],
)
def test_a_wrong_type_or_oversized_file_is_refused_and_nothing_is_sent(
    page: Any, lab_server: LabServer, attach_run: RunPage, tmp_path: Path, name: str, data: bytes, says: str
) -> None:
    open_run(page, attach_run)
    before = len(lab_server.model.requests)
    path = tmp_path / name
    path.write_bytes(data)
    page.locator('#composer input[type="file"]').set_input_files(str(path))
    box = page.locator("#composer textarea")
    box.fill("REFUSED-FILE draft")
    box.press("Enter")
    expect(page.locator("#composer .error")).to_contain_text(says, timeout=LIVE_TIMEOUT_MS)
    expect(page.locator("#composer .error")).to_contain_text("Nothing was sent.")
    expect(page.locator("#composer textarea")).to_have_value("REFUSED-FILE draft")
    expect(page.locator("#composer .attachment-chip")).to_contain_text(name)  # kept, to remove or fix
    assert requests_with(lab_server, "REFUSED-FILE") == []
    assert not lab_server.transcript_contains("REFUSED-FILE")
    assert len([r for r in lab_server.model.requests[before:] if image_blocks(r.get("body") or {})]) == 0


def test_a_file_dropped_on_the_composer_is_attached_and_can_be_removed(
    page: Any, lab_server: LabServer, attach_run: RunPage
) -> None:
    open_run(page, attach_run)
    page.locator("#composer").evaluate(
        """(form) => {
            const transfer = new DataTransfer();
            transfer.items.add(new File(["a dropped note\\n"], "note.md", {type: "text/markdown"}));
            const at = form.querySelector("textarea");
            const init = {dataTransfer: transfer, bubbles: true, cancelable: true};
            at.dispatchEvent(new DragEvent("dragover", init));
            at.dispatchEvent(new DragEvent("drop", init));
        }"""
    )
    chip = page.locator("#composer .attachment-chip")
    expect(chip).to_contain_text("note.md")
    assert page.locator('#composer input[type="file"]').evaluate("i => i.files.length") == 1
    chip.get_by_role("button", name="Remove note.md").click()
    expect(chip).to_have_count(0)
    assert page.locator('#composer input[type="file"]').evaluate("i => i.files.length") == 0
