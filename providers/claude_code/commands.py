"""The slash-command catalog Claude Code 2.1.328 offers in a worktree (compat §10).

Builtins and bundled skills are pinned tables: lab never scrapes the TUI's menu (docs/architecture.md,
principle 2); compat/claude_code/tests/test_live_commands.py re-walks the real autocomplete and proves the
tables equal it. Custom commands and skills are read from disk the way the CLI reads them:
the same directories, names, precedence and description fallbacks (each rule cites compat §10).

No Django here: the catalog is pure file reading, so it tests without a database.
"""

from __future__ import annotations

import logging
import math
import re
from dataclasses import dataclass
from pathlib import Path

from providers.safefile import read_head
from providers.schema import CommandRole, CommandSpec

log = logging.getLogger(__name__)


# --- the pinned tables -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Pinned:
    name: str
    description: str
    argument_hint: str = ""
    chat_safe: bool = True
    why: str = ""  # the reason beside the verdict, kept for safe rows too (COMPAT-commands.md)
    role: CommandRole | None = None
    # compat §10: a few TUI descriptions carry runtime state ("currently Opus 5.5"). lab pins the
    # state-free text and the live test matches the TUI's text against this pattern instead.
    tui_pattern: str = ""
    # The names the CLI's own command table gives it besides its own (unlisted in the menu);
    # compat/claude_code/drift.py reads them from the binary and the live drift test compares.
    aliases: tuple[str, ...] = ()

    def spec(self, taken: frozenset[str] = frozenset()) -> CommandSpec:
        return CommandSpec(
            name=self.name,
            description=self.description,
            argument_hint=self.argument_hint,
            source="builtin",
            chat_safe=self.chat_safe,
            reason="" if self.chat_safe else self.why,
            role=self.role,
            # compat §10: a custom command of an alias's name runs instead of the builtin.
            aliases=tuple(a for a in self.aliases if a not in taken),
        )


def _ui(
    name: str,
    description: str,
    hint: str = "",
    *,
    why: str,
    tui_pattern: str = "",
    aliases: tuple[str, ...] = (),
) -> Pinned:
    return Pinned(name, description, hint, chat_safe=False, why=why, tui_pattern=tui_pattern, aliases=aliases)


def _ok(name: str, description: str, hint: str = "", *, why: str, aliases: tuple[str, ...] = ()) -> Pinned:
    return Pinned(name, description, hint, chat_safe=True, why=why, aliases=aliases)


# compat §10 (table 1): the builtins, alphabetical, as the TUI lists them before anything else.
# chat_safe is False when the command opens a picker, dialog, editor or terminal-only view lab
# cannot see or answer, or when it fights lab's management of the session.
BUILTINS: tuple[Pinned, ...] = (
    _ui("add-dir", "Add a working directory", "<path>", why="without a path it opens a path dialog"),
    _ui("auto-mode-setup", "Teach auto mode about your environment", why="opens a setup wizard"),
    _ui(
        "autocompact",
        "Set how full the context gets before auto-summarizing",
        "[auto|<tokens>]",
        why="opens a slider dialog",
    ),
    _ui(
        "background",
        "Send this session to the background and free the terminal",
        "[prompt]",
        aliases=("bg",),
        why="takes the session out of lab's tmux pane",
    ),
    _ui(
        "branch",
        "Create a branch of the current conversation at this point",
        "[name]",
        why="moves the TUI onto a branched conversation lab did not start",
    ),
    _ui(
        "btw",
        "Ask a side question without interrupting Claude",
        "[question]",
        why="the side answer is drawn over the TUI, never written to the transcript",
    ),
    _ui(
        "bug",
        "Report a bug or share your session",
        "[report]",
        aliases=("share",),
        why="opens the feedback dialog",
    ),
    _ui(
        "cd",
        "Move this session to a new working directory",
        "<path>",
        why="moves the session off the run's worktree",
    ),
    Pinned(
        "clear",
        "Start a new session with empty context; loops carry over, and the old one stays in /resume",
        "[name]",
        chat_safe=True,
        aliases=("reset", "new"),
        why="starts a new transcript, which lab follows by its effect (compat §6)",
        role=CommandRole.CLEAR,
    ),
    _ui(
        "color",
        "Set the prompt bar color for this session",
        "[red|blue|green|yellow|purple|orange|pink|cyan|default]",
        why="only recolours the terminal's prompt bar",
    ),
    _ok(
        "compact",
        "Free up context by summarizing the conversation so far",
        "<optional custom summarization instructions>",
        why="summarises in the transcript, no dialog",
    ),
    _ui("config", "Open settings", aliases=("settings",), why="opens the Settings dialog"),
    _ok(
        "context",
        "Show what fills the context",
        "[all]",
        why="writes its report to the transcript (compat §6)",
    ),
    _ui(
        "copy",
        "Copy the last response to clipboard (/copy 2 for the one before)",
        why="copies to the lab host's terminal clipboard, not the browser's",
    ),
    _ui("diff", "Toggle the diff panel showing uncommitted changes", why="toggles a terminal side panel"),
    _ui(
        "effort",
        "Set the model's effort level",
        "[low|medium|high|xhigh|max|auto|ultracode [on|off]]",
        why="without a level it opens a slider dialog",
    ),
    _ui("exit", "Exit the CLI", aliases=("quit",), why="quits the CLI and so ends the run"),
    _ui("export", "Export this session to a file or clipboard", "[filename]", why="opens an export picker"),
    _ui(
        "fast",
        "Toggle fast mode",
        "[on|off]",
        why="opens the fast-mode dialog",
        tui_pattern=r"Toggle fast mode \(.+\)",
    ),
    _ui(
        "feedback", "Send feedback to Anthropic or report a bug", "[report]", why="opens the feedback dialog"
    ),
    _ui(
        "focus",
        "Toggle focus view: just your prompt, summary, and response",
        why="only changes the terminal's view",
    ),
    _ui(
        "fork",
        "Copy this conversation into a new background session and keep working here",
        "[prompt]",
        why="starts a background session lab does not manage",
    ),
    _ui(
        "goal",
        "Set a goal Claude checks before stopping",
        "[<condition> | clear]",
        why="without a condition it opens the Goal dialog",
    ),
    _ui("help", "Show help and available commands", "[command]", why="opens the help dialog"),
    _ui("hooks", "View hook configurations for tool events", why="opens the hooks browser"),
    _ui(
        "ide",
        "Manage IDE integrations and show status",
        "[open]",
        why="waits in the terminal on an IDE-extension install",
    ),
    _ui("keybindings", "Open your keyboard shortcuts file", why="opens $EDITOR in the pane"),
    _ok(
        "list-agents",
        "List subagents, teammates, and other Claude sessions you can message",
        aliases=("peers",),
        why="writes its listing to the transcript",
    ),
    _ui("login", "Switch Anthropic accounts", why="opens the login dialog; lab signs in from its auth card"),
    _ui("logout", "Sign out from your Anthropic account", why="signs out and quits the CLI"),
    _ui(
        "mcp",
        "Manage MCP servers",
        "[reconnect (<server>|all)|enable|disable [<server>|all]]",
        why="opens the MCP manager once servers are configured",
    ),
    _ui("memory", "Edit CLAUDE.md files and memory settings", why="opens the memory dialog and editor"),
    _ui(
        "mobile",
        "Show QR code to download the Claude mobile app",
        aliases=("ios", "android"),
        why="draws a QR code in the terminal",
    ),
    _ui(
        "model",
        "Switch model",
        "[model]",
        why="without a model it opens the model picker",
        tui_pattern=r"Switch model \(currently .+\)",
    ),
    _ok(
        "output-style",
        "List output styles or switch to one",
        "[style]",
        why="lists the styles in the transcript; with a style it switches",
    ),
    _ui(
        "permissions",
        "Manage allow and deny tool permission rules",
        aliases=("allowed-tools",),
        why="opens the permission-rules dialog",
    ),
    _ok(
        "plan",
        "Turn on plan mode or view the plan",
        "[open|<description>]",
        why="turns plan mode on and says so in the transcript",
    ),
    _ui(
        "plugin",
        "Manage Claude Code plugins",
        aliases=("plugins", "marketplace"),
        why="opens the plugin manager",
    ),
    _ui("powerup", "Learn Claude Code features in short lessons", why="opens the lessons menu"),
    _ui("radio", "Listen to Claude FM lo-fi radio", why="opens a browser on the lab host"),
    _ok("recap", "Generate a one-line session recap now", why="writes the recap to the transcript"),
    _ok("release-notes", "View release notes", why="writes the changelog link to the transcript"),
    _ok(
        "reload-plugins",
        "Activate pending plugin changes in the current session",
        "[--force]",
        why="reports in the transcript",
    ),
    _ok(
        "reload-skills",
        "Pick up skills added or changed on disk during this session",
        why="reports in the transcript",
    ),
    _ok(
        "rename",
        "Rename the current conversation",
        "[name]",
        aliases=("name",),
        why="reports in the transcript",
    ),
    _ui(
        "resume",
        "Resume a previous session",
        "[session ID or search term]",
        aliases=("continue",),
        why="opens the session picker and would swap the run's transcript",
    ),
    _ui(
        "rewind",
        "Restore earlier code, conversation, or both",
        aliases=("checkpoint", "undo"),
        why="opens the rewind dialog",
    ),
    _ui(
        "sandbox",
        "Show the sandbox status and configure it",
        'exclude "command pattern"',
        why="opens the sandbox dialog",
        # The TUI's whole description is a status line: icon, state, "(⏎ to configure)".
        tui_pattern=r". sandbox (disabled|enabled).* \(⏎ to configure\)",
    ),
    _ui("scroll-speed", "Adjust mouse wheel scroll speed", why="opens a slider dialog"),
    _ui("skills", "List available skills", why="opens the skills dialog"),
    _ui(
        "status",
        "Show version, account, model, MCP servers, and setup warnings",
        why="opens the Status dialog and writes nothing (compat §6)",
    ),
    _ui(
        "stickers",
        "Check Claude Code sticker availability",
        why="a terminal promotion that sends the operator to a browser on the lab host",
    ),
    _ok(
        "subtask",
        "Send a subagent off with your full context; its result comes back here",
        "<task>",
        why="the subagent's result comes back into the transcript",
    ),
    _ui(
        "tasks",
        "View and manage this session's background work",
        aliases=("bashes",),
        why="opens the tasks dialog",
    ),
    _ui("terminal-setup", "Set up Shift+Enter for newlines", why="edits the host terminal's configuration"),
    _ui("theme", "Change the theme", why="opens the theme picker"),
    _ui(
        "tui",
        "Set the terminal UI renderer (classic | fullscreen)",
        "[classic|fullscreen]",
        why="switches the renderer of the pane lab runs",
    ),
    _ui(
        "usage",
        "Show session cost, plan usage, and activity stats",
        aliases=("cost", "stats"),
        why="opens the Usage dialog and writes nothing (compat §6)",
    ),
    _ui("workflows", "Browse running and completed workflows", why="opens the workflows browser"),
)

# compat §10 (table 2): the bundled skills and workflows, listed after the custom commands.
# They expand into a prompt for the model, so the chat sees them like any prompt.
_PROMPT = "expands into a prompt; the model's turn lands in the transcript"
BUNDLED: tuple[Pinned, ...] = (
    _ok("batch", "Plan a large change; background agents each open a PR", "<instruction>", why=_PROMPT),
    _ok("claude-api", "Build and debug apps that use the Claude API", why=_PROMPT),
    _ok(
        "code-review",
        "Review the current diff or a PR for bugs",
        "[low|medium|high|xhigh|max] [--fix] [--comment] [<pr#>|<branch>|<path>] [--max-findings <n>|all]",
        why=_PROMPT,
    ),
    _ok("dataviz", "Chart and dashboard design guidance", why=_PROMPT),
    _ok("debug", "Turn on debug logging and investigate problems", "[issue description]", why=_PROMPT),
    _ok(
        "deep-research",
        "[dynamic workflow] Deep research harness — fan-out web searches, fetch sources, adversarially "
        "verify claims, synthesize a cited report.",
        why=_PROMPT,
    ),
    _ok(
        "doctor",
        "Health-check your setup and fix issues: installation, unused extensions, duplicated or bloated "
        "memory files, slow hooks, updates, permissions",
        "[prompt-audit [<path>]]",
        why=_PROMPT,
    ),
    _ok("fewer-permission-prompts", "Pre-approve safe read-only commands based on your usage", why=_PROMPT),
    _ok("init", "Initialize a new CLAUDE.md file with codebase documentation", why=_PROMPT),
    _ok("insights", "Generate a report analyzing your Claude Code sessions", why=_PROMPT),
    _ok(
        "loop",
        "Repeat a prompt or command on an interval (e.g. /loop 5m /foo)",
        "[interval] [prompt]",
        why=_PROMPT,
    ),
    _ok("plugin-authoring", "Write a mod: a live pane, view or behaviour change in Claude Code", why=_PROMPT),
    _ok("run", "Launch this project’s app to see your change working", why=_PROMPT),
    _ok("run-skill-generator", "Create a skill that knows how to run this project’s app", why=_PROMPT),
    _ok(
        "security-review",
        "Complete a security review of the pending changes on the current branch",
        why=_PROMPT,
    ),
    _ok("simplify", "Clean up the changed code without changing behavior", "[<target>]", why=_PROMPT),
    _ok("statusline", "Set up the status line", why=_PROMPT),
    _ok("team-onboarding", "Help teammates ramp on Claude Code with a guide from your usage", why=_PROMPT),
    _ok("update-config", "Change settings: hooks, permissions, environment variables", why=_PROMPT),
    _ok("verify", "Try your change and report if it works", why=_PROMPT),
    _ok("workflow-authoring", "Load the reference for writing Workflow tool scripts", why=_PROMPT),
)

# compat §10: /reset and /new are unlisted aliases of /clear. A custom command named "clear"
# shadows /clear, but /reset still runs the builtin clear, so the CLEAR role moves there.
CLEAR_ALIASES: tuple[str, ...] = next(p.aliases for p in BUILTINS if p.role is CommandRole.CLEAR)

# compat §10: description fallbacks when the frontmatter gives none and the body is empty.
COMMAND_FALLBACK = "Custom command"
SKILL_FALLBACK = "Skill"
# compat §10: a body line used as a description is cut to 97 characters plus "...".
BODY_DESCRIPTION_MAX = 100
# Descriptions come from the frontmatter or the first body line; a command file bigger than
# this is read only this far (the CLI reads it all, but lab never needs the tail).
READ_LIMIT = 256 * 1024


# --- a tiny YAML subset for frontmatter ---------------------------------------------------------


class FrontmatterError(ValueError):
    pass


# compat §10: the CLI's own fence: the block ends at the first "---" after the opening line,
# even mid-line, and a file with no second "---" has no frontmatter at all.
_FENCE = re.compile(r"^---\s*\n([\s\S]*?)---\s*\n?")
_KEY = re.compile(
    r"^(?P<key>\"(?:[^\"\\]|\\.)*\"|'(?:[^']|'')*'|[^\s#:'\"\[\]{},&*!|>%@`-][^:]*?|-[^\s:][^:]*?)"
    r"\s*:(?:[ \t]+(?P<value>.*))?$"
)
_BLOCK_HEADER = re.compile(r"^[|>][+-]?[1-9]?[+-]?\s*(#.*)?$")
_INT = re.compile(r"^[-+]?[0-9]+$")
_FLOAT = re.compile(r"^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$")
# compat §10: the CLI's retry after a YAML error double-quotes a plain value that holds one of
# these characters (or ": "), then parses again.
_RETRY_SPECIAL = re.compile(r"[{}\[\]*&#!|>%@`]|: ")
_RETRY_LINE = re.compile(r"^([a-zA-Z_-]+):\s+(\S.*)$")

type Value = bool | int | float | str | list[Value] | dict[str, Value] | None


def split_frontmatter(text: str) -> tuple[str | None, str]:
    """(frontmatter block or None, body)."""
    text = text.removeprefix("\ufeff")
    if text.find("---", 3) < 0:
        return None, text
    m = _FENCE.match(text)
    if m is None:
        return None, text
    return m.group(1), text[m.end() :]


def parse_frontmatter(block: str) -> dict[str, Value]:
    """The mapping the CLI would read; {} when it would fail to parse (a malformed file)."""
    try:
        return _parse_mapping(_lines(block))
    except FrontmatterError:
        pass
    try:
        return _parse_mapping(_lines(_requote(block)))
    except FrontmatterError as exc:
        log.info("frontmatter does not parse (%s); the CLI would ignore it too", exc)
        return {}


def _requote(block: str) -> str:
    out = []
    for line in block.split("\n"):
        m = _RETRY_LINE.match(line)
        if m:
            key, value = m.groups()
            quoted = value[0] == value[-1] and value[0] in "\"'" and len(value) > 1
            if not quoted and not _is_flow_list(value) and _RETRY_SPECIAL.search(value):
                escaped = value.replace("\\", "\\\\").replace('"', '\\"')
                line = f'{key}: "{escaped}"'
        out.append(line)
    return "\n".join(out)


def _is_flow_list(value: str) -> bool:
    if not (value.startswith("[") and value.endswith("]")):
        return False
    try:
        return isinstance(_flow(value), list)
    except FrontmatterError:
        return False


def _lines(block: str) -> list[tuple[int, str]]:
    """(indent, text) per line; a leading tab counts as two spaces, as the CLI's retry does."""
    out = []
    for raw in block.split("\n"):
        raw = raw.removesuffix("\r")
        stripped = raw.lstrip(" \t")
        lead = raw[: len(raw) - len(stripped)]
        out.append((len(lead.replace("\t", "  ")), stripped.rstrip() if stripped.strip() else ""))
    return out


def _skippable(text: str) -> bool:
    return not text or text.startswith("#")


def _parse_mapping(lines: list[tuple[int, str]]) -> dict[str, Value]:
    result: dict[str, Value] = {}
    base: int | None = None
    i = 0
    while i < len(lines):
        indent, text = lines[i]
        if _skippable(text) or text in ("---", "..."):
            i += 1
            continue
        if base is None:
            base = indent
        if indent != base:
            raise FrontmatterError(f"bad indentation: {text!r}")
        m = _KEY.match(text)
        if m is None:
            raise FrontmatterError(f"not a key: value line: {text!r}")
        key = _unquote_key(m.group("key"))
        value_text = (m.group("value") or "").strip()
        # The lines that belong to this key: more indented, blank, or (YAML allows it) a "- "
        # sequence at the key's own indent.
        j = i + 1
        while j < len(lines):
            ind, t = lines[j]
            sequence_item = t == "-" or t.startswith("- ")
            if t and ind <= base and not (ind == base and sequence_item and not value_text):
                break
            j += 1
        result[key] = _value(value_text, lines[i + 1 : j])  # a duplicate key: the last one wins
        i = j
    return result


def _unquote_key(key: str) -> str:
    if len(key) > 1 and key[0] == key[-1] and key[0] in "\"'":
        return _scalar_quoted(key)
    return key


def _value(text: str, rest: list[tuple[int, str]]) -> Value:
    body = [(ind, t) for ind, t in rest]
    content = [(ind, t) for ind, t in body if not _skippable(t)]
    if text.startswith("#"):
        text = ""
    if not text:
        if not content:
            return None
        if content[0][1] == "-" or content[0][1].startswith("- "):
            return _sequence(content)
        return _parse_mapping(content)
    if _BLOCK_HEADER.match(text):
        return _block_scalar(text, body)
    if text[0] in "\"'":
        return _quoted_multiline(text, body)
    if text[0] in "[{":
        if content:
            raise FrontmatterError("a multi-line flow collection")
        return _flow(_strip_comment(text))
    if text[0] in "&*!%@`" or text.startswith("- ") or text.startswith("? "):
        raise FrontmatterError(f"unsupported value: {text!r}")
    return _plain(text, body)


def _strip_comment(text: str) -> str:
    # YAML: a "#" starts a comment only after whitespace.
    return re.split(r"[ \t]#", text, maxsplit=1)[0].rstrip()


def _plain(text: str, rest: list[tuple[int, str]]) -> Value:
    parts = [_strip_comment(text)]
    for _, t in rest:
        if t.startswith("#"):
            break
        parts.append(_strip_comment(t) if t else "")
    while parts and not parts[-1]:
        parts.pop()
    for part in parts:
        if ": " in part or part.endswith(":"):
            raise FrontmatterError(f"a ': ' inside a plain value: {part!r}")
    joined = ""
    for part in parts:  # YAML folding: one line break is a space, a blank line a newline
        if not part:
            joined += "\n"
        elif joined and not joined.endswith("\n"):
            joined += " " + part
        else:
            joined += part
    return _resolve(joined) if len(parts) == 1 else joined


def _resolve(text: str) -> Value:
    # YAML 1.2 core schema, which is what the CLI's parser applies to a plain scalar.
    if text in ("", "~", "null", "Null", "NULL"):
        return None
    if text in ("true", "True", "TRUE"):
        return True
    if text in ("false", "False", "FALSE"):
        return False
    if _INT.match(text):
        return int(text)
    if _FLOAT.match(text):
        return float(text)
    if text in (".inf", "+.inf", ".Inf", "+.Inf", ".INF", "+.INF"):
        return math.inf
    return text


def _quoted_multiline(text: str, rest: list[tuple[int, str]]) -> Value:
    quote = text[0]
    joined = text
    for _, t in rest:
        if _closes(joined, quote):
            break
        joined += " " + t if t else "\n"
    if not _closes(joined, quote):
        raise FrontmatterError("an unterminated quoted value")
    end = _closing_index(joined, quote)
    tail = joined[end + 1 :].strip()
    if tail and not tail.startswith("#"):
        raise FrontmatterError(f"text after a quoted value: {tail!r}")
    return _scalar_quoted(joined[: end + 1])


def _closing_index(text: str, quote: str) -> int:
    i = 1
    while i < len(text):
        c = text[i]
        if quote == '"' and c == "\\":
            i += 2
            continue
        if c == quote:
            if quote == "'" and i + 1 < len(text) and text[i + 1] == "'":
                i += 2
                continue
            return i
        i += 1
    return -1


def _closes(text: str, quote: str) -> bool:
    return _closing_index(text, quote) > 0


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", '"': '"', "\\": "\\", "/": "/", " ": " ", "e": "\x1b"}


def _scalar_quoted(text: str) -> str:
    inner = text[1:-1]
    if text[0] == "'":
        return inner.replace("''", "'")
    out = []
    i = 0
    while i < len(inner):
        c = inner[i]
        if c == "\\" and i + 1 < len(inner):
            n = inner[i + 1]
            if n in "xuU":
                width = {"x": 2, "u": 4, "U": 8}[n]
                digits = inner[i + 2 : i + 2 + width]
                try:
                    out.append(chr(int(digits, 16)))
                except ValueError:
                    raise FrontmatterError(f"a bad escape: \\{n}{digits}") from None
                i += 2 + width
                continue
            if n not in _ESCAPES:
                raise FrontmatterError(f"a bad escape: \\{n}")
            out.append(_ESCAPES[n])
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


def _block_scalar(header: str, rest: list[tuple[int, str]]) -> str:
    literal = header[0] == "|"
    chomp = "-" if "-" in header else "+" if "+" in header else ""
    content = [(ind, t) for ind, t in rest]
    indents = [ind for ind, t in content if t]
    if not indents:
        return ""
    cut = min(indents)
    lines = [(" " * (ind - cut) + t) if t else "" for ind, t in content]
    while lines and not lines[-1]:
        lines.pop()
    if literal:
        text = "\n".join(lines)
    else:
        text = ""
        for line in lines:
            if not line:
                text += "\n"
            elif text and not text.endswith("\n"):
                text += " " + line
            else:
                text += line
    return text if chomp == "-" else text + "\n"


def _sequence(content: list[tuple[int, str]]) -> list[Value]:
    base = content[0][0]
    items: list[Value] = []
    i = 0
    while i < len(content):
        ind, t = content[i]
        if ind != base or not (t == "-" or t.startswith("- ")):
            raise FrontmatterError(f"bad sequence item: {t!r}")
        j = i + 1
        while j < len(content) and content[j][0] > base:
            j += 1
        first = t[1:].strip()
        nested = content[i + 1 : j]
        if first and _KEY.match(first) and not first.startswith(("'", '"')):
            items.append(_parse_mapping([(base + 2, first), *nested]))
        else:
            items.append(_value(first, nested))
        i = j
    return items


def _flow(text: str) -> Value:
    value, end = _flow_at(text, 0)
    if text[end:].strip():
        raise FrontmatterError(f"text after a flow collection: {text[end:]!r}")
    return value


def _flow_at(text: str, i: int) -> tuple[Value, int]:
    opener = text[i]
    closer = "]" if opener == "[" else "}"
    items: list[Value] = []
    mapping: dict[str, Value] = {}
    i += 1
    while True:
        while i < len(text) and text[i] in " \t":
            i += 1
        if i >= len(text):
            raise FrontmatterError("an unclosed flow collection")
        if text[i] == closer:
            return (items if opener == "[" else mapping), i + 1
        if text[i] in "[{":
            item, i = _flow_at(text, i)
        elif text[i] in "\"'":
            end = _closing_index(text[i:], text[i])
            if end < 0:
                raise FrontmatterError("an unterminated quoted flow item")
            item, i = _scalar_quoted(text[i : i + end + 1]), i + end + 1
        else:
            m = re.compile(r"[^,\[\]{}]*").match(text, i)
            assert m is not None  # the pattern matches the empty string
            raw = m.group(0).strip()
            i = m.end()
            item = _resolve(raw)
        while i < len(text) and text[i] in " \t":
            i += 1
        if opener == "{":
            if not isinstance(item, str) or ":" not in item:
                raise FrontmatterError("a flow mapping item without a key")
            k, _, v = item.partition(":")
            mapping[k.strip()] = _resolve(v.strip())
        else:
            items.append(item)
        if i < len(text) and text[i] == ",":
            i += 1
        elif i < len(text) and text[i] != closer:
            raise FrontmatterError(f"unexpected {text[i]!r} in a flow collection")


# --- what the CLI makes of a file ---------------------------------------------------------------


def js_string(value: Value) -> str:
    """String(value) as the CLI's JavaScript writes it (compat §10: argument-hint: [a] -> "a")."""
    if value is None:
        return ""
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, float):
        if value.is_integer():
            return str(int(value))
        return "Infinity" if value == math.inf else repr(value)
    if isinstance(value, list):
        return ",".join(js_string(v) for v in value)
    if isinstance(value, dict):
        return "[object Object]"
    return str(value)


def frontmatter_description(value: Value) -> str | None:
    # compat §10: a string is trimmed ("" counts as none), a number or boolean is stringified,
    # anything else is ignored.
    if value is None:
        return None
    if isinstance(value, str):
        return value.strip() or None
    if isinstance(value, bool | int | float):
        return js_string(value)
    return None


def body_description(body: str, fallback: str) -> str:
    # compat §10: the first non-blank line, a markdown heading's text, cut to 97 + "...".
    for line in body.split("\n"):
        text = line.strip()
        if text:
            m = re.match(r"^#+\s+(\S.*)$", text)
            text = m.group(1) if m else text
            if len(text) > BODY_DESCRIPTION_MAX:
                return text[: BODY_DESCRIPTION_MAX - 3] + "..."
            return text
    return fallback


def user_invocable(frontmatter: dict[str, Value]) -> bool:
    # compat §10: absent -> offered; present, only 1/true/yes/on (any case) keeps it offered.
    if "user-invocable" not in frontmatter:
        return True
    value = frontmatter["user-invocable"]
    if isinstance(value, bool):
        return value
    if isinstance(value, str | int | float):
        return js_string(value).strip().lower() in ("1", "true", "yes", "on")
    return False


@dataclass(frozen=True, slots=True)
class Custom:
    name: str  # what the operator types (and lab sends)
    label: str  # what the TUI's menu shows and sorts by (a skill's frontmatter name)
    description: str
    argument_hint: str
    source: str  # "project" | "user"
    path: Path


def read_entry(path: Path, *, name: str, source: str, skill: bool) -> Custom | None:
    """One command or skill file as the CLI reads it; None when the CLI hides it."""
    try:
        # Followed like the CLI follows it, but only to a regular file: a FIFO in the repository's
        # commands would hang the page.
        text = read_head(path, READ_LIMIT, follow=True).decode("utf-8", errors="replace")
    except OSError as exc:
        log.warning("cannot read %s: %s", path, exc)
        return None
    block, body = split_frontmatter(text)
    frontmatter = parse_frontmatter(block) if block is not None else {}
    if not user_invocable(frontmatter):
        return None
    fallback = SKILL_FALLBACK if skill else COMMAND_FALLBACK
    description = frontmatter_description(frontmatter.get("description")) or body_description(body, fallback)
    hint = frontmatter.get("argument-hint")
    label = name
    if skill and frontmatter.get("name") is not None:
        # compat §10: a skill's menu row shows its frontmatter name, but typing that name runs
        # nothing: the directory name is the command.
        label = js_string(frontmatter["name"])
    return Custom(
        name=name,
        label=label,
        description=description,
        argument_hint="" if hint is None else js_string(hint),
        source=source,
        path=path,
    )


def skills_in(root: Path, *, source: str) -> list[Custom]:
    """<root>/<name>/SKILL.md, one level deep (compat §10: nested skill folders are not read)."""
    if not root.is_dir():
        return []
    found = []
    for child in sorted(root.iterdir()):
        skill_file = child / "SKILL.md"
        if child.is_dir() and skill_file.is_file():
            entry = read_entry(skill_file, name=child.name, source=source, skill=True)
            if entry is not None:
                found.append(entry)
    return found


def commands_in(root: Path, *, source: str) -> list[Custom]:
    """<root>/**/*.md, named by path with ":" between folders (compat §10: frontend/lint.md is
    /frontend:lint). A folder holding a SKILL.md is one command named after the folder, and its
    other .md files are not read."""
    if not root.is_dir():
        return []
    found = []
    for folder, dirnames, filenames in root.walk():
        dirnames.sort()
        rel = folder.relative_to(root).parts
        skill_md = sorted(f for f in filenames if f.lower() == "skill.md")
        if skill_md and rel:
            entry = read_entry(folder / skill_md[0], name=":".join(rel), source=source, skill=False)
            if entry is not None:
                found.append(entry)
            continue
        for filename in sorted(filenames):
            if not filename.endswith(".md") or filename.lower() == "skill.md":
                continue
            name = ":".join([*rel, filename.removesuffix(".md")])
            entry = read_entry(folder / filename, name=name, source=source, skill=False)
            if entry is not None:
                found.append(entry)
    return found


def custom_entries(worktree: Path, *, home: Path) -> list[Custom]:
    """The custom commands and skills the CLI offers, one per name, in the TUI's menu order."""
    user_dir, project_dir = home / ".claude", worktree / ".claude"
    # compat §10: the first of these to define a name wins: user skills, project skills, user
    # commands, project commands.
    candidates = [
        *skills_in(user_dir / "skills", source="user"),
        *skills_in(project_dir / "skills", source="project"),
        *commands_in(user_dir / "commands", source="user"),
        *commands_in(project_dir / "commands", source="project"),
    ]
    winners: dict[str, Custom] = {}
    for entry in candidates:
        # compat §10: the menu lists "/Sub Dir:x", but the CLI cuts the typed name at the first
        # space ("Unknown command: /Sub"), so such a row could never run.
        if not any(ch.isspace() for ch in entry.name):
            winners.setdefault(entry.name, entry)
    # compat §10: the menu lists the user's rows, then the project's, each sorted by label.
    return sorted(
        winners.values(),
        key=lambda e: (e.source != "user", e.label.casefold(), e.label),
    )


def command_catalog(worktree: Path, *, home: Path) -> list[CommandSpec]:
    """Every command 2.1.328 offers in ``worktree``, in the TUI's order, names unique.

    compat §10: a custom command named like a builtin runs instead of it, so the builtin row is
    dropped and the custom row stands (the TUI lists both but only the custom one runs).
    """
    custom = custom_entries(Path(worktree), home=Path(home))
    taken = {entry.name for entry in custom}
    shadowed = frozenset(taken)
    rows = [pinned.spec(shadowed) for pinned in BUILTINS if pinned.name not in taken]
    rows += [
        CommandSpec(
            name=entry.name,
            description=entry.description,
            argument_hint=entry.argument_hint,
            source=entry.source,
            chat_safe=True,  # a custom command or skill expands into a prompt for the model
        )
        for entry in custom
    ]
    rows += [pinned.spec(shadowed) for pinned in BUNDLED if pinned.name not in taken]
    if "clear" in taken:
        rows += _clear_alias(taken)
    return rows


def _clear_alias(taken: set[str]) -> list[CommandSpec]:
    clear = next(p for p in BUILTINS if p.role is CommandRole.CLEAR)
    for alias in CLEAR_ALIASES:
        if alias not in taken:
            return [
                CommandSpec(
                    name=alias,
                    description=clear.description,
                    argument_hint=clear.argument_hint,
                    source="builtin",
                    role=CommandRole.CLEAR,
                    aliases=tuple(a for a in CLEAR_ALIASES if a != alias and a not in taken),
                )
            ]
    return []  # every clear spelling is shadowed: no CLEAR row rather than a wrong one
