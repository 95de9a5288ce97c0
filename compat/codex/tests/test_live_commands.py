"""Live: the `/` menu's commands and descriptions, pinned (COMPAT.md §11)."""

from __future__ import annotations

import re
import time

import pytest

pytestmark = pytest.mark.live

# Every builtin the 0.171.0 menu lists, in its order, with its description (no project
# prompts or skills in the worktree).
CATALOG = {
    "/model": "choose what model and reasoning effort to use",
    "/presets": "run or save reusable prompts and slash commands",
    "/ide": "include current selection, open files, and other context from your IDE",
    "/permissions": "choose what Codex is allowed to do",
    "/keymap": "remap TUI shortcuts",
    "/vim": "toggle Vim mode for the composer",
    "/experimental": "toggle experimental features",
    "/approve": "approve one retry of a recent auto-review denial",
    "/memories": "configure memory use and generation",
    "/skills": "use skills to improve how Codex performs specific tasks",
    "/import": "import setup, this project, and recent chats from Claude Code",
    "/hooks": "view and manage lifecycle hooks",
    "/review": "review my current changes and find issues",
    "/rename": "rename the current thread",
    "/new": "start a new chat during a conversation",
    "/archive": "archive this session",
    "/delete": "permanently delete this session",
    "/resume": "resume a saved chat",
    "/fork": "fork the current chat",
    "/worktree": "start or continue a conversation in a new worktree",
    "/init": "create an AGENTS.md file with instructions for Codex",
    "/compact": "summarize conversation to prevent hitting the context limit",
    "/config": "configure Codex preferences",
    "/recap": "summarize the current conversation now",
    "/plan": "switch to Plan mode",
    "/voice": "start or stop voice; use /voice settings to choose a voice",
    "/goal": "set or view the goal for a long-running task",
    "/agents": "open the agent command center",
    "/side": "start a side conversation",
    "/copy": "copy the last response or part of it",
    "/export": "export the conversation as markdown",
    "/raw": "toggle raw scrollback mode for copy-friendly terminal selection",
    "/tui": "choose the TUI mode for the next launch",
    "/diff": "show git diff (including untracked files)",
    "/mention": "mention a file",
    "/status": "show current session configuration and token usage",
    "/daemon": "Manage the local background server",
    "/rc": "manage remote control for the local background server",
    "/warnings": "view retained warnings and diagnostic details",
    "/cd": "change the current working directory",
    "/pwd": "show the current working directory",
    "/title": "configure which items appear in the terminal title",
    "/statusline": "configure which items appear in the status line",
    "/theme": "choose a syntax highlighting theme",
    "/pets": "choose or hide the terminal pet",
    "/mcp": "list MCP tools; /mcp verbose or /mcp login <name> [--environment <id>]",
    "/plugins": "browse plugins",
    "/logout": "log out of Codex",
    "/exit": "exit Codex",
    "/feedback": "send logs to maintainers or save a ZIP",
    "/ps": "list background terminals",
    "/stop": "stop all background terminals",
    "/clear": "clear the terminal and start a new chat",
    "/subagents": "switch between this session's subagents",
}

ROW_RE = re.compile(r"^\s*›?\s*(/[a-z-]+)\s{2,}(\S.*?)\s*$", re.M)


def scan_menu(tui) -> dict[str, str]:
    """Open the `/` menu and scroll it to the end: the rows it showed, in order."""
    tui.send_literal("/")
    tui.wait_pane(r"/model\s+choose what model", settle=0.5)
    seen: dict[str, str] = {}
    last_new = 0
    for step in range(200):
        for name, desc in ROW_RE.findall(tui.pane()):
            if name not in seen:
                seen[name] = desc
                last_new = step
        if step - last_new > 8:  # the end: nothing new for a while
            break
        tui.send_keys("Down")
        tui.wait_pane(ROW_RE, settle=0.1)
    tui.send_keys("BSpace")  # the empty composer closes the menu
    tui.wait_pane(r"\? for shortcuts", settle=0.3)
    return seen


def test_slash_menu_lists_the_pinned_catalog(codex_tui):
    tui = codex_tui()
    # /voice joins the unfiltered menu only a moment after the footer is drawn (seen missing at
    # ~1 s, present at 3 s; typing "/vo" finds it at once): scan again until the menu is whole.
    deadline = time.monotonic() + 60
    seen = scan_menu(tui)
    while seen != CATALOG and set(CATALOG) - set(seen) == {"/voice"} and time.monotonic() < deadline:
        seen = scan_menu(tui)
    assert seen == CATALOG
    assert list(seen) == list(CATALOG), "the menu's order"
