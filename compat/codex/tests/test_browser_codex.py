"""A Codex run end to end in Chromium: lab served by daphne, the real Codex 0.171.0 TUI answering
from the scripted Responses API model. Prompt → reply → approval answered on the page → New
conversation. Reuses the browser suite's server and login helpers (tests/browser/conftest.py)."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from compat.browser import chromium_page, expect_state, provider_lab, send
from compat.codex.home import launcher_dir, prepare_home
from compat.codex.scripted_model import Script, ScriptedModel, exec_command, text, when
from tests.browser.conftest import LIVE_TIMEOUT_MS, _git_repo, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.live]


@pytest.fixture(scope="module")
def codex_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path, ScriptedModel, Path]]:
    root = tmp_path_factory.mktemp("browser-codex")
    repo = _git_repo(root / "repo")
    home = root / "agent-home"
    with ScriptedModel(Script()) as model:
        agent_env = prepare_home(home, repo, model.url)
        with provider_lab(root, "codex", home, agent_env, launcher_dir()) as url:
            yield url, repo, model, root


@pytest.fixture(scope="module")
def page(codex_lab: tuple[str, Path, ScriptedModel, Path]) -> Iterator[Any]:
    with chromium_page(codex_lab[0]) as p:
        yield p


def test_a_codex_run_from_prompt_to_approval_to_new_conversation(page: Any, codex_lab: Any) -> None:
    _, repo, model, root = codex_lab
    allowed = root / f"allowed-{uuid.uuid4().hex[:6]}.txt"
    model.script.add(
        when("CXB-PING", text("CXB-PONG from Codex")),
        when("CXB-ALLOW", exec_command(f"touch {allowed}", escalated=True, justification="Make a file"),
             text("allowed done")),
        when("CXB-NEW", text("in the new conversation")),
    )  # fmt: skip

    page.goto("/runs/new/")
    expect(page.get_by_label("Provider")).to_have_value("codex")
    page.get_by_label("Repository").fill(str(repo))
    page.get_by_label("Branch").fill("lab/browser-codex")
    page.get_by_role("button", name="Start").click()
    expect(page).to_have_url(re.compile(r"/runs/\d+/$"), timeout=LIVE_TIMEOUT_MS)
    expect(page.locator(".run-head")).to_contain_text("Codex")

    # 1. A prompt and its reply, pushed to the page.
    send(page, "CXB-PING hello")
    expect(page.locator("#transcript .msg-user_text").last).to_have_text("CXB-PING hello")
    expect(page.locator("#transcript .msg-assistant_text").last).to_have_text("CXB-PONG from Codex")
    expect_state(page, "idle")

    # 2. An approval, answered on the page.
    send(page, "CXB-ALLOW please")
    form = page.locator("#dialog form.dialog-approval")
    expect(form).to_be_visible(timeout=LIVE_TIMEOUT_MS)
    expect(page.locator("#panel")).to_have_attribute("data-state", "needs_input")
    expect(page.locator("#panel .badge")).to_have_text("Codex needs input")
    expect(form.locator(".prompt")).to_contain_text("Make a file")
    expect(form.locator("pre.asked")).to_have_text(f"touch {allowed}")
    screenshot(page, "codex-approval")
    assert not allowed.exists()
    form.get_by_role("button", name="Yes, proceed").click()
    expect(page.locator("#transcript .msg-assistant_text").last).to_have_text("allowed done")
    expect_state(page, "idle")
    assert allowed.exists()

    # 3. New conversation: the transcript restarts with the /clear line, the next prompt lands there.
    epoch = page.locator("#transcript").get_attribute("data-epoch")
    page.on("dialog", lambda d: d.accept())
    page.locator("form.new-conversation").get_by_role("button", name="New conversation").click()
    expect(page.locator("#transcript")).not_to_have_attribute("data-epoch", epoch or "")
    expect(page.locator("#transcript")).not_to_contain_text("CXB-PING")
    expect(page.locator("#transcript li[id^=msg-]").first).to_contain_text("/clear")
    send(page, "CXB-NEW message")
    expect(page.locator("#transcript .msg-assistant_text").last).to_have_text("in the new conversation")
    expect(page.locator("#transcript")).not_to_contain_text("CXB-PING")
    expect_state(page, "idle")
    screenshot(page, "codex-new-conversation")


def test_an_image_pasted_into_the_composer_reaches_codex_as_its_image_input(
    page: Any, codex_lab: Any
) -> None:
    """The composer's paste (an image on the clipboard) becomes Codex's own image input: the
    request carries it as an input_image, and the chat shows it as a thumbnail."""
    import base64
    import io

    from PIL import Image

    from compat.codex.scripted_model import input_images

    _, repo, model, _ = codex_lab
    model.script.add(when("CXB-IMG", text("a blue picture")))
    out = io.BytesIO()
    Image.new("RGB", (5, 3), (0, 0, 255)).save(out, format="PNG")
    blue = out.getvalue()
    page.goto("/runs/new/")
    page.get_by_label("Repository").fill(str(repo))
    page.get_by_label("Branch").fill("lab/browser-codex-image")
    page.get_by_role("button", name="Start").click()
    expect(page).to_have_url(re.compile(r"/runs/\d+/$"), timeout=LIVE_TIMEOUT_MS)
    expect_state(page, "idle")
    page.locator("#composer textarea").evaluate(
        """(box, b64) => {
            const bytes = Uint8Array.from(atob(b64), c => c.charCodeAt(0));
            const transfer = new DataTransfer();
            transfer.items.add(new File([bytes], "image.png", {type: "image/png"}));
            const init = {clipboardData: transfer, bubbles: true, cancelable: true};
            box.dispatchEvent(new ClipboardEvent("paste", init));
        }""",
        base64.b64encode(blue).decode(),
    )
    expect(page.locator("#composer .attachment-chip")).to_have_count(1)
    send(page, "what is it CXB-IMG")
    expect(page.locator("#transcript .msg-assistant_text").last).to_have_text("a blue picture")
    request = next(r for r in model.turn_requests() if "CXB-IMG" in str(r["body"].get("input")))
    assert [base64.b64decode(u.split(",", 1)[1]) for u in input_images(request["body"])] == [blue]
    thumb = page.locator("#transcript figure.attachment img").last
    expect(thumb).to_be_visible()
    page.wait_for_function("img => img.complete && img.naturalWidth === 5", arg=thumb.element_handle())
