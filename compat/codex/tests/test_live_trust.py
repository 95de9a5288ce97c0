"""Live: what Codex shows and writes when a trust is missing, so lab seeds exactly that
(COMPAT.md §4, §13). Each screen is drawn only after the composer's footer was already on
screen: the footer alone does not prove the TUI is ready."""

from __future__ import annotations

import time
import tomllib

import pytest

from compat.codex.conftest import make_git_worktree
from compat.codex.home import HOOK_EVENTS, hooks_trust_toml, prepare_home
from compat.codex.live import CodexTUI, HookSpool, events
from compat.codex.scripted_model import text, when

pytestmark = pytest.mark.live


def footer_then(tui: CodexTUI, screen: str, timeout: float = 30.0) -> list[str]:
    """The order in which the footer and ``screen`` first appeared."""
    order: list[str] = []
    deadline = time.monotonic() + timeout
    while screen not in order and time.monotonic() < deadline:
        pane = tui.pane()
        if "? for shortcuts" in pane and "footer" not in order:
            order.append("footer")
        if screen in pane:
            order.append(screen)
        time.sleep(0.05)
    return order


@pytest.fixture
def bare(tmp_path, codex_model):
    """A worktree, a spool of every hook, and a started TUI on a home built by the test."""
    wt = make_git_worktree(tmp_path / "wt")
    spool = HookSpool(tmp_path / "spool", HOOK_EVENTS)
    tuis: list[CodexTUI] = []

    def start(**trust: bool) -> CodexTUI:
        env = prepare_home(tmp_path / "home", wt, codex_model.url, hooks=spool.hooks(), **trust)
        tui = CodexTUI(env, wt).start()
        tuis.append(tui)
        return tui

    yield start, wt, spool
    for tui in tuis:
        tui.kill()


def test_unseeded_hook_trust_is_reviewed_and_codex_writes_the_seeded_format(bare, codex_model):
    start, _wt, spool = bare
    tui = start(trust_hooks=False)
    assert footer_then(tui, "Hooks need review") == ["footer", "Hooks need review"]
    tui.wait_pane(r"2\. Trust all and continue", settle=0.5)
    tui.send_keys("2")
    tui.wait_pane(r"› 2\. Trust all and continue", settle=0.3)
    tui.send_keys("Enter")
    tui.wait_pane(r"\? for shortcuts", settle=0.5)
    written = tomllib.loads((tui.codex_home / "config.toml").read_text())["hooks"]["state"]
    seeded = tomllib.loads(hooks_trust_toml(tui.codex_home / "hooks.json", spool.hooks()))["hooks"]["state"]
    assert written == seeded
    codex_model.script.add(when("TRUST-1", text("trusted reply")))
    tui.prompt("now TRUST-1")
    assert spool.wait("SessionStart"), "trusted hooks run"


def test_unseeded_folder_trust_asks_and_codex_writes_the_seeded_entry(bare):
    start, wt, _spool = bare
    tui = start(trust_worktree=False)
    assert footer_then(tui, "Trust this folder?") == ["footer", "Trust this folder?"]
    tui.wait_pane(r"› 1\. Trust and continue", settle=0.5)
    tui.send_keys("Enter")
    tui.wait_pane(r"\? for shortcuts", settle=0.5)
    doc = tomllib.loads((tui.codex_home / "config.toml").read_text())
    assert doc["projects"][str(wt)] == {"trust_level": "trusted"}


def test_seeded_home_takes_the_first_prompt_with_no_screen_in_between(codex_tui, codex_home, codex_model):
    codex_model.script.add(when("SEEDED-1", text("seeded reply")))
    tui = codex_tui()
    tui.prompt("first SEEDED-1")
    [rollout] = tui.wait_rollouts(1)
    tui.wait_for(rollout, lambda ls: events(ls, "task_complete"))
    assert codex_home.spool.wait("SessionStart")
    assert "Hooks need review" not in tui.pane() and "Trust this folder?" not in tui.pane()
