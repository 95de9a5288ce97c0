"""Gemini CLI 0.61.0's command catalog: the builtins of its live `/` popup, marked chat-safe
honestly. No Django. Pinned in compat/gemini/COMPAT.md §8.

A row is chat-safe only when sending its command line from the page can be verified and leaves
the TUI at its prompt. /clear (and its alias /new) is the CLEAR row: it starts a new session at
once, and its SessionStart hook is the receipt. The others open a picker or panel lab cannot see
or answer, act on the process or the machine, or print into the terminal only (the session file
records nothing lab could verify a send by); those rows say why.
"""

from __future__ import annotations

from pathlib import Path

from providers.schema import CommandSpec, builtin_commands

CLEAR = "clear"

_PICKER = "Opens a picker or panel in the terminal that lab cannot show."
_UNVERIFIED = "Prints into the terminal only: Gemini records nothing lab could show or check."
_PROCESS = "Acts on Gemini's process, its settings or the machine, outside the chat."
_UNKNOWN = "lab has not verified what it does in the terminal."

# (name, description, reason when not chat-safe: "" means chat-safe). /permissions is listed
# only where folder trust is on, as lab runs it (§8).
BUILTINS: tuple[tuple[str, str, str], ...] = (
    (CLEAR, "Clear the screen and start a new conversation", ""),
    ("compress", "Compress the context by replacing it with a summary", _UNVERIFIED),
    ("directory", "Manage workspace directories", _PICKER),
    ("footer", "Configure which items appear in the footer", _PICKER),
    ("quit", "Exit the CLI", _PROCESS),
    ("stats", "Check session stats", _UNVERIFIED),
    ("tasks", "Show background tasks", _UNVERIFIED),
    ("about", "Show version info", _UNVERIFIED),
    ("agents", "Manage agents", _PICKER),
    ("auth", "Change the auth method", _PICKER),
    ("bug", "Submit a bug report", _PROCESS),
    ("bug-memory", "Report a memory problem", _PROCESS),
    ("chat", "Manage conversation checkpoints", _PICKER),
    ("commands", "Manage custom commands", _UNVERIFIED),
    ("copy", "Copy the last result to the clipboard", _UNVERIFIED),
    ("docs", "Open the full Gemini CLI documentation in a browser", _PROCESS),
    ("export-session", "Export the session", _PROCESS),
    ("editor", "Set the external editor preference", _PICKER),
    ("extensions", "Manage extensions", _PICKER),
    ("help", "For help on Gemini CLI", _UNVERIFIED),
    ("shortcuts", "Toggle the shortcuts panel", _UNVERIFIED),
    ("hooks", "Manage hooks", _PICKER),
    ("rewind", "Jump back to an earlier message", _PICKER),
    ("ide", "Manage IDE integration", _PICKER),
    ("init", "Analyze the project and create a tailored GEMINI.md file", _UNVERIFIED),
    ("mcp", "Manage configured MCP servers", _UNVERIFIED),
    ("memory", "Commands for interacting with memory", _PICKER),
    ("model", "Choose the model", _PICKER),
    ("oncall", "Oncall related commands", _UNKNOWN),
    ("permissions", "Manage folder trust and other permissions", _PICKER),
    ("plan", "Switch to plan mode", _UNVERIFIED),
    ("policies", "Manage policies", _UNVERIFIED),
    ("privacy", "Display the privacy notice", _PICKER),
    ("resume", "Browse and resume saved conversations", _PICKER),
    ("theme", "Change the theme", _PICKER),
    ("tools", "List the available tools", _UNVERIFIED),
    ("skills", "List and manage agent skills", _UNVERIFIED),
    ("settings", "View and edit Gemini CLI settings", _PICKER),
    ("gemma", "Manage the local Gemma model", _PROCESS),
    ("vim", "Toggle vim mode on and off", _PROCESS),
    ("setup-github", "Set up GitHub Actions", _PROCESS),
    ("terminal-setup", "Configure terminal keybindings", _PROCESS),
)

# §8: other names the CLI runs a builtin by (a refused command is refused under each).
ALIASES: dict[str, tuple[str, ...]] = {
    CLEAR: ("new",),
    "quit": ("exit",),
    "compress": ("compact", "summarize"),
}


def command_catalog(worktree: Path) -> list[CommandSpec]:
    """The pinned builtins. Custom commands (`.gemini/commands/*.toml`) are not listed: what
    they send is a prompt lab has not verified a receipt for."""
    return builtin_commands(BUILTINS, clear=CLEAR, aliases=ALIASES)
