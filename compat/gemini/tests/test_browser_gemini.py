"""A Gemini CLI run end to end in Chromium: lab served by daphne, the real Gemini CLI 0.61.0 TUI
answering from the scripted Gemini API. Prompt → reply → approval answered on the page → a
question form answered on the page → New conversation. Reuses the browser suite's server and
login helpers (tests/browser/conftest.py)."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from compat.browser import chromium_page, expect_state, provider_lab, send
from compat.gemini.home import launcher_dir, prepare_home
from compat.gemini.scripted_model import Script, ScriptedModel, ask_user, question, shell, text, when
from tests.browser.conftest import LIVE_TIMEOUT_MS, _git_repo, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.live]


@pytest.fixture(scope="module")
def gemini_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path, ScriptedModel, Path]]:
    root = tmp_path_factory.mktemp("browser-gemini")
    repo = _git_repo(root / "repo")
    home = root / "agent-home"
    with ScriptedModel(Script()) as model:
        agent_env = prepare_home(home, model.url)
        with provider_lab(root, "gemini", home, agent_env, launcher_dir()) as url:
            yield url, repo, model, root


@pytest.fixture(scope="module")
def page(gemini_lab: tuple[str, Path, ScriptedModel, Path]) -> Iterator[Any]:
    with chromium_page(gemini_lab[0]) as p:
        yield p


def test_a_gemini_run_from_prompt_to_approval_to_question_to_new_conversation(
    page: Any, gemini_lab: Any
) -> None:
    _, repo, model, root = gemini_lab
    allowed = root / f"allowed-{uuid.uuid4().hex[:6]}.txt"
    asked = [
        question("Which color do you prefer?", "Color", ("Red", "Green", "Blue")),
        question("Which fruits?", "Fruit", ("Apple", "Pear", "Plum"), multi=True),
    ]
    model.script.add(
        when("GMB-PING", text("GMB-PONG from Gemini")),
        when("GMB-ALLOW", shell(f"echo yes > {allowed}", "Make a file"), text("allowed done")),
        when("GMBQ-FORM", ask_user(questions=asked), text("GMBQ answers received")),
        when("GMB-NEW", text("in the new conversation")),
    )

    page.goto("/runs/new/")
    expect(page.get_by_label("Provider")).to_have_value("gemini")
    page.get_by_label("Repository").fill(str(repo))
    page.get_by_label("Branch").fill("lab/browser-gemini")
    page.get_by_role("button", name="Start").click()
    expect(page).to_have_url(re.compile(r"/runs/\d+/$"), timeout=LIVE_TIMEOUT_MS)
    expect(page.locator(".run-head")).to_contain_text("Gemini CLI")

    # 1. A prompt and its reply, pushed to the page.
    send(page, "GMB-PING hello")
    expect(page.locator("#transcript .msg-user_text").last).to_have_text("GMB-PING hello")
    expect(page.locator("#transcript .msg-assistant_text").last).to_have_text("GMB-PONG from Gemini")
    expect_state(page, "idle")

    # 2. An approval, answered on the page by its label.
    send(page, "GMB-ALLOW please")
    form = page.locator("#dialog form.dialog-approval")
    expect(form).to_be_visible(timeout=LIVE_TIMEOUT_MS)
    expect(page.locator("#panel")).to_have_attribute("data-state", "needs_input")
    expect(page.locator("#panel .badge")).to_have_text("Gemini CLI needs input")
    expect(form.locator("pre.asked")).to_have_text(f"echo yes > {allowed}")
    screenshot(page, "gemini-approval")
    assert not allowed.exists()
    form.get_by_role("button", name="Allow once").click()
    expect(page.locator("#transcript .msg-assistant_text").last).to_have_text("allowed done")
    expect_state(page, "idle")
    assert allowed.read_text() == "yes\n"

    # 3. A question form (one choice, one multi-select with free text), answered on the page.
    send(page, "GMBQ-FORM ask me")
    form = page.locator("#dialog form.dialog-question")
    expect(form).to_be_visible(timeout=LIVE_TIMEOUT_MS)
    expect_state(page, "question")
    fieldsets = form.locator("fieldset")
    expect(fieldsets).to_have_count(2)
    expect(fieldsets.nth(0).locator("legend")).to_have_text(
        re.compile(r"Color\s+Which color do you prefer\?")
    )
    expect(fieldsets.nth(1).locator('input[type="checkbox"]')).to_have_count(3)
    screenshot(page, "gemini-question")
    fieldsets.nth(0).locator("label.option", has_text="Green").locator("input").check()
    fieldsets.nth(1).locator("label.option", has_text="Apple").locator("input").check()
    fieldsets.nth(1).locator("label.option", has_text="Plum").locator("input").check()
    fieldsets.nth(1).locator('input[name="answers-1-text"]').fill("Kiwi")
    form.get_by_role("button", name="Answer").click()
    expect(page.locator("#dialog-note")).to_contain_text("Answer sent.")
    expect(page.locator("#transcript .msg-assistant_text").last).to_have_text("GMBQ answers received")
    expect(page.locator("#transcript .msg-tool_result").last).to_contain_text("Fruit → Apple, Plum, Kiwi")
    expect(page.locator("#transcript")).not_to_contain_text("recorded a different answer")
    expect_state(page, "idle")
    assert model.wait_function_response("ask_user")["response"]["output"] == (
        '{"answers":{"0":"Green","1":"Apple, Plum, Kiwi"}}'
    )

    # 4. New conversation: the transcript restarts with the /clear line, the next prompt lands there.
    epoch = page.locator("#transcript").get_attribute("data-epoch")
    page.on("dialog", lambda d: d.accept())
    page.locator("form.new-conversation").get_by_role("button", name="New conversation").click()
    expect(page.locator("#transcript")).not_to_have_attribute("data-epoch", epoch or "")
    expect(page.locator("#transcript")).not_to_contain_text("GMB-PING")
    expect(page.locator("#transcript li[id^=msg-]").first).to_contain_text("/clear")
    send(page, "GMB-NEW message")
    expect(page.locator("#transcript .msg-assistant_text").last).to_have_text("in the new conversation")
    expect(page.locator("#transcript")).not_to_contain_text("GMB-PING")
    expect_state(page, "idle")
    screenshot(page, "gemini-new-conversation")
