"""The universal schema: what lab knows about any agent CLI's conversation.

Plain dataclasses, no Django: adapters map their native transcript into these on read, and
the generic layer (runs, auth_flows, seeding, templates) renders them without knowing which
CLI produced them.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from providers.errors import DialogNotAnswerable


class MessageKind(enum.StrEnum):
    USER_TEXT = "user_text"
    ASSISTANT_TEXT = "assistant_text"
    TOOL_USE = "tool_use"
    TOOL_RESULT = "tool_result"
    LIFECYCLE = "lifecycle"
    THINKING = "thinking"  # the model's reasoning: shown collapsed, never as its reply


class RunState(enum.StrEnum):
    """The whole state vocabulary. Adapters derive idle/working from the transcript; needs_input
    and question need a live signal channel; starting needs a ConnectingReporter (from spawn
    until the CLI's session has started); ended comes from the TUI's process being gone."""

    STARTING = "starting"
    IDLE = "idle"
    WORKING = "working"
    NEEDS_INPUT = "needs_input"
    QUESTION = "question"
    ENDED = "ended"


@dataclass(frozen=True, slots=True)
class Message:
    seq: int  # 0-based position in the current transcript epoch; restarts on a clear
    kind: MessageKind
    text: str = ""
    tool_name: str = ""
    tool_input: str = ""  # a compact one-line summary of the tool input
    timestamp: str = ""  # ISO 8601 as the transcript recorded it, "" when absent
    native_id: str = ""  # the provider's own id (entry uuid, tool_use_id, ...)
    is_error: bool = False  # a failed tool result, or a lifecycle warning
    # A longer text shown collapsed under the line (a compaction summary, an agent's report,
    # a plan's Markdown); "" when there is none.
    detail: str = ""
    # The provider's id of a side conversation this line opens (a background agent's own
    # transcript), readable with AgentProvider.side_transcript; "" when there is none.
    side: str = ""
    # A turn the API refused on a limit: "usage" (the account's plan limit) or "rate" (a 429
    # the CLI recorded without saying which limit); "" for every other line. `resets_at`: when
    # the CLI says the limit resets (epoch seconds), 0 when it did not say.
    limit: str = ""
    resets_at: int = 0
    # A file the operator attached to this message, as the CLI recorded its path (an image it
    # took as image input); "" when there is none.
    attachment: str = ""


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """A conversation the CLI keeps for a worktree, which a new run can resume."""

    session_id: str
    path: str  # its transcript
    first_prompt: str  # "" when it has none yet
    last_activity: float  # the transcript's mtime (epoch seconds)
    size: int  # bytes


@dataclass(frozen=True, slots=True)
class Attachment:
    """A file saved for the agent to read with the operator's next message."""

    path: str  # absolute, inside the run's worktree
    rel: str  # relative to the worktree, as a mention names it
    name: str  # the name the operator gave it (shown, never used as a path)
    media_type: str
    is_image: bool


class DialogKind(enum.StrEnum):
    QUESTION = "question"
    PLAN = "plan"
    APPROVAL = "approval"


@dataclass(frozen=True, slots=True)
class Option:
    """One choice of a dialog, saying what it means: the page decides order, emphasis, styling
    and fields from these flags alone, never from the option's position, label or `key`.
    `takes_text`: the option goes with the operator's text (feedback for a rejection), so the
    page shows a text field beside it. `key` is the adapter's own stable name for what the
    option does (how it is played); the generic layer never reads it."""

    label: str
    description: str = ""
    takes_text: bool = False
    key: str = ""
    # The safest way to go ahead: the page shows it first and as the primary button (Enter's
    # default), never the option that gives the agent the most room.
    preferred: bool = False
    # Answering with it refuses what was asked (the page styles it as a refusal).
    denies: bool = False
    # False: the CLI does not show this row now. It keeps its index (answers are positional);
    # the page leaves it out and the adapter refuses an answer naming it.
    offered: bool = True
    # With `takes_text`: the adapter refuses this option without text (the CLI would act on an
    # empty field differently), so the page asks for the text before sending. False: the text
    # is optional (the option does the same with or without it).
    needs_text: bool = False


@dataclass(frozen=True, slots=True)
class Question:
    prompt: str
    options: tuple[Option, ...]
    multi: bool = False
    header: str = ""
    free_text: bool = True  # whether a free-text ("Other") answer is offered


@dataclass(frozen=True, slots=True)
class Dialog:
    """A pending dialog the operator can answer from the browser.

    A single question keeps the flat shape (prompt/options/multi, questions=None); a form of
    two or more questions carries them in `questions` and the flat fields stay empty. A plan
    carries its Markdown in `body` and the adapter's stable semantic option labels.
    """

    tool_use_id: str
    kind: DialogKind
    prompt: str = ""
    options: tuple[Option, ...] = ()
    multi: bool = False
    header: str = ""
    free_text: bool = True
    questions: tuple[Question, ...] | None = None
    body: str = ""

    @property
    def offered(self) -> tuple[tuple[int, Option], ...]:
        """The options the CLI shows now, each with its index (an answer's encoding), the
        preferred one first: the order of a plan's or an approval's buttons."""
        shown = [(i, o) for i, o in enumerate(self.options) if o.offered]
        return tuple(sorted(shown, key=lambda pair: not pair[1].preferred))

    @property
    def has_preferred(self) -> bool:
        """Whether one offered option is the safest way on (the others are then secondary)."""
        return any(o.preferred and o.offered for o in self.options)

    @property
    def all_questions(self) -> tuple[Question, ...]:
        """Every question, the flat shape seen as a one-question form."""
        if self.questions is not None:
            return self.questions
        return (
            Question(
                prompt=self.prompt,
                options=self.options,
                multi=self.multi,
                header=self.header,
                free_text=self.free_text,
            ),
        )


@dataclass(frozen=True, slots=True)
class Answer:
    """One question's answer: option indexes (exactly one for single-select), free text, or,
    for multi-select, both."""

    choices: tuple[int, ...] = ()
    text: str = ""


class CommandRole(enum.StrEnum):
    CLEAR = "clear"


@dataclass(frozen=True, slots=True)
class CommandSpec:
    name: str  # without the leading slash
    description: str = ""
    argument_hint: str = ""
    source: str = "builtin"  # builtin | project | user | skill
    chat_safe: bool = True
    reason: str = ""  # why a row is not chat-safe
    role: CommandRole | None = None
    # Other names the CLI runs this command under, unlisted in its menu: a refused command must
    # be refused under each of them too.
    aliases: tuple[str, ...] = ()


def builtin_commands(
    rows: Sequence[tuple[str, str, str]], *, clear: str, aliases: Mapping[str, tuple[str, ...]]
) -> list[CommandSpec]:
    """A CLI's pinned builtins as catalog rows: `rows` are (name, description, why it is not
    chat-safe or ""); `clear` names the CLEAR row; `aliases` the other names of a command."""
    return [
        CommandSpec(
            name=name,
            description=description,
            source="builtin",
            chat_safe=not reason,
            reason=reason,
            role=CommandRole.CLEAR if name == clear else None,
            aliases=aliases.get(name, ()),
        )
        for name, description, reason in rows
    ]


class AuthFlowKind(enum.StrEnum):
    OAUTH_CODE = "oauth-code"
    OAUTH_REDIRECT = "oauth-redirect"
    API_KEY = "api-key"
    EXTERNAL = "external"


@dataclass(frozen=True, slots=True)
class AuthFlow:
    kind: AuthFlowKind
    instructions: str = ""
    # The environment variable an API key goes in (api-key: the one it uses; a login flow that
    # also takes a key names it too, so a page can offer both routes).
    credential_name: str = ""


@dataclass(frozen=True, slots=True)
class AuthStatus:
    logged_in: bool  # the agent has a credential to start with (a run may start)
    method: str = ""
    account: str = ""  # e.g. an email; "" when unknown
    detail: str = ""
    # False: a credential is configured, but nothing has shown yet that the service accepts it
    # (an API key in the agent's environment); the page says "configured", not "logged in".
    verified: bool = True
    # Where the credential comes from when lab's login and logout cannot change it (e.g. a key
    # in the agent's environment), said as a phrase: "" when the login manages it.
    external: str = ""


@dataclass(frozen=True, slots=True)
class LoginStart:
    url: str  # the primary URL to show the operator
    alternatives: tuple[tuple[str, str], ...] = ()  # (instructions, url) pairs


@dataclass(frozen=True, slots=True)
class SeedMeta:
    context_file: str  # relative to the worktree root
    skills_dir: str  # relative to the worktree root
    exclude_entries: tuple[str, ...] = ()  # lines for .git/info/exclude
    seeded_paths: tuple[str, ...] = ()  # glob patterns that must never reach a commit
    scrub_patterns: tuple[str, ...] = ()  # regexes of attribution lines to scrub


class ProjectServers(enum.StrEnum):
    """What to do with the MCP servers a repository declares for the agent (they run code)."""

    APPROVE = "approve"
    REJECT = "reject"


@dataclass(frozen=True, slots=True)
class WorkspaceChoices:
    """The operator's choices seed_workspace applies to one worktree.

    attribution: whether the agent adds its attribution lines (trailers, "generated with") to
    commits and PR bodies. Off also makes lab's commit guard scrub SeedMeta.scrub_patterns.
    project_servers: the repository's own MCP servers, approved or rejected up front so no
    start-up approval prompt holds the TUI.
    """

    attribution: bool = True
    project_servers: ProjectServers = ProjectServers.REJECT


@dataclass(frozen=True, slots=True)
class RepositorySetting:
    """One thing a repository's own files would make the agent (or git) do: a hook and its
    command, a key helper, an environment override, a permission allow rule, an MCP server, a
    shell policy, a git driver. Shown to the operator before the repository is trusted.

    source: the file it comes from, relative to the checkout (".claude/settings.json").
    kind: what it is, in a few words ("hook", "MCP server", "environment").
    detail: what exactly, as the file says it ("SessionStart: python3 x.py").
    redirects: it changes where the agent sends its requests or which credential it uses (a
    model endpoint, an API key, a key helper): the operator's key could leave the machine."""

    source: str
    kind: str
    detail: str
    redirects: bool = False


@dataclass(frozen=True, slots=True)
class SpawnOption:
    """A provider-declared choice on the new-run form, rendered generically."""

    name: str
    label: str
    choices: tuple[tuple[str, str], ...] = ()  # (value, label); empty: free text
    default: str = ""
    help_text: str = ""


@dataclass(frozen=True, slots=True)
class RunHandle:
    """What an adapter knows about a run: the generic layer builds it from its model."""

    run_id: int
    worktree: str
    tmux_socket: str
    tmux_session: str
    session_id: str = ""
    transcript_path: str = ""
    spool_dir: str = ""
    # Extra environment for the agent's process, set by the generic layer at spawn (the commit
    # guard's git config); every adapter must pass it through.
    env: tuple[tuple[str, str], ...] = ()
    # Whether the operator trusts the repository: only then may the repository's own agent
    # settings take effect (AgentProvider.spawn).
    trusted: bool = False
    # The operator's choices for this run (attribution, the repository's MCP servers).
    choices: WorkspaceChoices = WorkspaceChoices()


@dataclass(frozen=True, slots=True)
class SpawnResult:
    session_id: str
    transcript_path: str


@dataclass(frozen=True, slots=True)
class Cursor:
    """Where a read of one transcript stopped. `offset` is a byte offset at a line boundary;
    `inode` detects replacement; `provider_state` is the adapter's own immutable carry-over
    (state derivation inputs, dedupe keys), opaque to the generic layer."""

    path: str = ""
    offset: int = 0
    inode: int = 0
    next_seq: int = 0
    provider_state: object = None


@dataclass(frozen=True, slots=True)
class TranscriptRead:
    messages: list[Message]
    cursor: Cursor
    state: RunState  # idle or working, from the transcript alone
    dialog: Dialog | None = None  # a pending dialog the transcript shows
    # Work the CLI still runs in the background after the state is read (a background agent's
    # description each), from the transcript alone.
    background: tuple[str, ...] = ()
    # While working: when the current turn began (ISO 8601, as the transcript recorded it) and
    # the tool it waits on ("Bash ls -la"); "" when idle or unknown. A turn's text is written
    # only when its block is complete, so these are what is knowable meanwhile.
    since: str = ""
    running: str = ""
    # Prompts the CLI accepted while working and has not yet turned into a message (its own
    # queue), oldest first: the page shows them at once, marked queued.
    queued: tuple[str, ...] = ()
    reset: bool = False  # the file was truncated or replaced: the messages start over
    stats: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Quota:
    """One account limit as the CLI reported it: how much is used (percent) and when it resets
    (epoch seconds, 0 when not said)."""

    name: str  # "5-hour", "7-day"
    used_percent: float
    resets_at: int = 0


@dataclass(frozen=True, slots=True)
class Usage:
    """What the CLI last reported about a run's context and its account's quota. None in a
    field: the CLI did not report it (never a 0 standing for "unknown")."""

    context_tokens: int | None = None
    context_window: int | None = None
    context_percent: float | None = None
    turn_tokens: int | None = None  # the last request's tokens (input, cached and output)
    # The account's limits; None: not reported (an API key has none), () never means that.
    quotas: tuple[Quota, ...] | None = None
    at_ns: int = 0  # when the CLI reported it


@dataclass(frozen=True, slots=True)
class KeyChoice:
    """An approval answered by one key: the option's key, the key pressed for it, and the
    operator's message after a decline (sent as a reply once the decline is recorded)."""

    key: str
    tmux_key: str
    allows: bool
    text: str = ""


def key_choice(
    dialog: Dialog, answers: Sequence[Answer], *, keys: Mapping[str, str], deny: str, not_approval: str
) -> KeyChoice:
    """The one option an approval's answer names (`keys`: option key -> the key that plays it);
    an empty answer declines. DialogNotAnswerable, nothing sent, for anything else."""
    if dialog.kind != DialogKind.APPROVAL:
        raise DialogNotAnswerable(not_approval)
    if not answers:
        return KeyChoice(deny, keys[deny], False)
    if len(answers) != 1 or len(answers[0].choices) != 1:
        raise DialogNotAnswerable("An approval takes exactly one choice.")
    index = answers[0].choices[0]
    if not 0 <= index < len(dialog.options):
        raise DialogNotAnswerable("That option is not on this prompt.")
    key = dialog.options[index].key
    if key not in keys:
        raise DialogNotAnswerable("That option is not one lab can play.")
    return KeyChoice(key, keys[key], key != deny, answers[0].text.strip() if key == deny else "")
