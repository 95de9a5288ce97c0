"""Live: what a worktree can give Codex — AGENTS.md as context, skills in `.codex/skills` or
`.agents/skills` — and that custom prompts add no `/` command (COMPAT.md §11, §13)."""

from __future__ import annotations

import json

import pytest

from compat.codex.live import events, payloads
from compat.codex.scripted_model import text, when

pytestmark = pytest.mark.live


def skill(folder, name):
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(
        f"---\nname: {name}\ndescription: the {name} skill\n---\nDo the {name} thing.\n"
    )


def test_agents_md_is_sent_as_a_synthetic_user_message(codex_tui, codex_home, codex_model):
    (codex_home.worktree / "AGENTS.md").write_text("# Rules\nAGENTS-TOKEN-1 keep it short\n")
    codex_model.script.add(when("SEED-1", text("seeded")))
    tui = codex_tui()
    tui.prompt("hello SEED-1")
    [rollout] = tui.wait_rollouts(1)
    lines = tui.wait_for(rollout, lambda ls: events(ls, "task_complete") and ls)
    first = next(p for p in payloads(lines, "response_item", "message") if p["role"] == "user")
    parts = [c["text"] for c in first["content"]]
    assert parts[0] == (
        f"# AGENTS.md instructions for {codex_home.worktree}\n\n<INSTRUCTIONS>\n"
        "# Rules\nAGENTS-TOKEN-1 keep it short\n\n</INSTRUCTIONS>"
    )
    assert parts[1].startswith("<environment_context>")
    assert "AGENTS-TOKEN-1" in json.dumps(codex_model.turn_requests()[0]["body"]["input"])


def test_worktree_skills_are_offered_by_dollar_not_slash(codex_tui, codex_home, codex_model):
    skill(codex_home.worktree / ".codex" / "skills" / "wt-codex-skill", "wt-codex-skill")
    skill(codex_home.worktree / ".agents" / "skills" / "wt-agents-skill", "wt-agents-skill")
    prompts = codex_home.codex_home / "prompts"
    prompts.mkdir()
    (prompts / "myprompt.md").write_text("---\ndescription: my prompt\n---\nSay hi\n")
    tui = codex_tui()
    tui.send_literal("$wt-")
    tui.wait_pane(r"wt-agents-skill\s+\[Skill\] the wt-agents-skill skill", settle=0.3)
    tui.wait_pane(r"wt-codex-skill\s+\[Skill\] the wt-codex-skill skill")
    tui.send_keys("C-u")
    tui.wait_pane(r"\? for shortcuts", settle=0.3)
    tui.send_literal("/wt")
    tui.wait_pane(r"no matches", settle=0.3)
    tui.send_keys("C-u")
    tui.wait_pane(r"\? for shortcuts", settle=0.3)
    tui.send_literal("/pro")
    tui.wait_pane(r"› /pro", settle=0.5)
    assert "myprompt" not in tui.pane(), "custom prompts add no / command in 0.171.0"
    tui.send_keys("C-u")
    codex_model.script.add(when("SEED-2", text("skills listed")))
    tui.wait_pane(r"\? for shortcuts", settle=0.3)
    tui.prompt("hello SEED-2")
    codex_model.wait_for_request(lambda r: r.get("kind") == "turn", timeout=60)
    blob = json.dumps(codex_model.turn_requests()[0]["body"]["input"])
    assert "- wt-codex-skill: the wt-codex-skill skill" in blob
    assert "- wt-agents-skill: the wt-agents-skill skill" in blob
