"""Codex 0.171.0's command catalog: the builtins of its live `/` menu, marked chat-safe honestly.
No Django. Pinned in compat/codex/COMPAT-adapter.md §8.

A row is chat-safe only when sending its command line from the page can be verified and leaves
the TUI at its prompt. Everything else opens a picker or pager lab cannot see or answer, acts
on the process (exit, daemon), or leaves no trace in the rollout lab could verify a send by;
those rows say why. /clear is the CLEAR row: it starts a fresh thread without a question
(/new, in a git worktree, first asks where the new conversation should run).
"""

from __future__ import annotations

from pathlib import Path

from providers.schema import CommandSpec, builtin_commands

CLEAR = "clear"

_PICKER = "Opens a picker or screen in the terminal that lab cannot show."
_UNVERIFIED = "Prints into the terminal only: Codex records nothing lab could show or check."
_PROCESS = "Acts on Codex's process or session files, outside the chat."
_QUESTION = "Asks a question in the terminal first (where to run the new conversation)."

# (name, description as the menu shows it, reason when not chat-safe: "" means chat-safe)
BUILTINS: tuple[tuple[str, str, str], ...] = (
    ("agents", "open the agent command center", _PICKER),
    ("approve", "approve one retry of a recent auto-review denial", _PICKER),
    ("archive", "archive this session", _PROCESS),
    ("cd", "change the current working directory", _PROCESS),
    (CLEAR, "clear the terminal and start a new chat", ""),
    ("compact", "summarize conversation to prevent hitting the context limit", _UNVERIFIED),
    ("config", "configure Codex preferences", _PICKER),
    ("copy", "copy the last response or part of it", _PICKER),
    ("daemon", "Manage the local background server", _PROCESS),
    ("delete", "permanently delete this session", _PROCESS),
    ("diff", "show git diff (including untracked files)", _UNVERIFIED),
    ("exit", "exit Codex", _PROCESS),
    ("experimental", "toggle experimental features", _PICKER),
    ("export", "export the conversation as markdown", _PICKER),
    ("feedback", "send logs to maintainers or save a ZIP", _PICKER),
    ("fork", "fork the current chat", _PROCESS),
    ("goal", "set or view the goal for a long-running task", _PICKER),
    ("hooks", "view and manage lifecycle hooks", _PICKER),
    ("ide", "include current selection, open files, and other context from your IDE", _PICKER),
    ("import", "import setup, this project, and recent chats from Claude Code", _PICKER),
    ("init", "create an AGENTS.md file with instructions for Codex", _UNVERIFIED),
    ("keymap", "remap TUI shortcuts", _PICKER),
    ("logout", "log out of Codex", _PROCESS),
    ("mcp", "list MCP tools; /mcp verbose or /mcp login <name> [--environment <id>]", _UNVERIFIED),
    ("memories", "configure memory use and generation", _PICKER),
    ("mention", "mention a file", _PICKER),
    ("model", "choose what model and reasoning effort to use", _PICKER),
    ("new", "start a new chat during a conversation", _QUESTION),
    ("permissions", "choose what Codex is allowed to do", _PICKER),
    ("pets", "choose or hide the terminal pet", _PICKER),
    ("plan", "switch to Plan mode", _UNVERIFIED),
    ("plugins", "browse plugins", _PICKER),
    ("presets", "run or save reusable prompts and slash commands", _PICKER),
    ("ps", "list background terminals", _UNVERIFIED),
    ("pwd", "show the current working directory", _UNVERIFIED),
    ("raw", "toggle raw scrollback mode for copy-friendly terminal selection", _UNVERIFIED),
    ("rc", "manage remote control for the local background server", _PROCESS),
    ("recap", "summarize the current conversation now", _UNVERIFIED),
    ("rename", "rename the current thread", _PICKER),
    ("resume", "resume a saved chat", _PICKER),
    ("review", "review my current changes and find issues", _PICKER),
    ("side", "start a side conversation", _PICKER),
    ("skills", "use skills to improve how Codex performs specific tasks", _PICKER),
    ("status", "show current session configuration and token usage", _UNVERIFIED),
    ("statusline", "configure which items appear in the status line", _PICKER),
    ("stop", "stop all background terminals", _UNVERIFIED),
    ("subagents", "switch between this session's subagents", _PICKER),
    ("theme", "choose a syntax highlighting theme", _PICKER),
    ("title", "configure which items appear in the terminal title", _PICKER),
    ("tui", "choose the TUI mode for the next launch", _PICKER),
    ("vim", "toggle Vim mode for the composer", _UNVERIFIED),
    ("voice", "start or stop voice; use /voice settings to choose a voice", _PICKER),
    ("warnings", "view retained warnings and diagnostic details", _PICKER),
    ("worktree", "start or continue a conversation in a new worktree", _PICKER),
)


# §8: names 0.171.0 runs a builtin by that its menu does not list (seen live: /quit exits).
ALIASES = {"exit": ("quit",)}


def command_catalog(worktree: Path) -> list[CommandSpec]:
    """The builtins. Codex 0.171.0 offers no project command files in its `/` menu (skills are
    listed to the model, not as commands: §8), so the worktree adds nothing."""
    del worktree
    return builtin_commands(BUILTINS, clear=CLEAR, aliases=ALIASES)
