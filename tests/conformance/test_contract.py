"""The seam's obligations, once, for every provider (providers/base.py; docs/providers.md).

Parametrized over every id in providers/known.py plus the fakes, each through its driver
(compat/conformance.py; a provider's own is compat/<package>/driver.py). The live tests drive the
real CLI through the production adapter: claude-code against its scripted model, the fakes
directly. A provider passes this file before it is enabled.
"""

from __future__ import annotations

import random
import re
from pathlib import Path, PurePosixPath

import pytest
from django import forms
from django.utils.module_loading import import_string

from compat.conformance import PROBE_ENV
from providers.base import AgentProvider, ConnectingReporter, LiveSignals, SideTranscripts
from providers.errors import InvalidReply, ProviderError, ReplyNotDelivered, SessionGone
from providers.registry import _load
from providers.schema import (
    AuthFlow,
    AuthFlowKind,
    CommandRole,
    CommandSpec,
    Cursor,
    MessageKind,
    RunState,
    SeedMeta,
    TranscriptRead,
)
from providers.testing import command_lines_containing, spawned_environ
from providers.tmux import Tmux

COMMAND_SOURCES = {"builtin", "project", "user", "skill"}


# --- declarations --------------------------------------------------------------------------


def test_it_is_registered_under_its_own_id(provider_id, driver, settings):
    provider = driver.provider()
    assert isinstance(provider, AgentProvider)
    assert provider.id == provider_id  # the new-run form and the routes key on provider.id
    if provider_id in settings.LAB_KNOWN_PROVIDERS:
        assert type(provider) is import_string(settings.LAB_KNOWN_PROVIDERS[provider_id])
    name = provider.display_name()
    assert isinstance(name, str) and name and name == name.strip()


def command_problems(rows: list[CommandSpec]) -> list[str]:
    problems = []
    seen: set[str] = set()
    for row in rows:
        if not row.name or row.name.startswith("/") or any(c.isspace() for c in row.name):
            problems.append(f"{row.name!r}: a name has no leading slash and no whitespace")
        if row.name in seen:
            problems.append(f"{row.name!r}: names are unique")
        seen.add(row.name)
        if not row.chat_safe and not row.reason.strip():
            problems.append(f"{row.name!r}: a row that is not chat-safe says why (reason)")
        if row.source not in COMMAND_SOURCES:
            problems.append(f"{row.name!r}: source {row.source!r} is not one of {sorted(COMMAND_SOURCES)}")
        if row.role is not None and not isinstance(row.role, CommandRole):
            problems.append(f"{row.name!r}: role {row.role!r} is not a CommandRole")
    clears = [r.name for r in rows if r.role is CommandRole.CLEAR]
    if len(clears) > 1:
        problems.append(f"at most one CLEAR row, got {clears}")
    return problems


@pytest.mark.parametrize("populated", [False, True], ids=["bare-worktree", "with-custom-commands"])
def test_commands_rows_are_valid(driver, populated):
    provider = driver.provider()
    worktree = driver.worktree()
    if populated:
        driver.populate_worktree(worktree)
    rows = provider.commands(worktree)
    assert rows, "the catalog offers at least the CLI's builtins"
    assert all(isinstance(r, CommandSpec) for r in rows)
    assert command_problems(rows) == []
    clear_rows = [r for r in rows if r.role is CommandRole.CLEAR]
    if driver.clears:
        assert len(clear_rows) == 1 and clear_rows[0].chat_safe, "the New conversation button needs it"
    else:
        assert clear_rows == []


def test_auth_flow_descriptor_is_valid(driver):
    flow = driver.provider().auth_flow()
    assert isinstance(flow, AuthFlow)
    assert flow.kind in set(AuthFlowKind)
    assert isinstance(flow.instructions, str)
    if flow.kind is AuthFlowKind.API_KEY:
        assert flow.credential_name, "an api-key flow names the credential it would use"


def _relative(path: str) -> bool:
    p = PurePosixPath(path)
    return bool(path) and not p.is_absolute() and ".." not in p.parts and "\\" not in path


def test_seed_meta_descriptor_is_valid(driver):
    meta = driver.provider().seed_meta()
    assert isinstance(meta, SeedMeta)
    assert _relative(meta.context_file), meta.context_file
    assert _relative(meta.skills_dir), meta.skills_dir
    for entry in meta.exclude_entries:  # lines of .git/info/exclude
        assert isinstance(entry, str) and entry.strip() and "\n" not in entry, entry
        assert ".." not in PurePosixPath(entry.lstrip("/")).parts, entry
    for pattern in meta.seeded_paths:
        assert _relative(pattern), pattern
    for pattern in meta.scrub_patterns:
        re.compile(pattern, re.MULTILINE)


def test_spawn_options_render_in_the_generic_form(provider_id, driver, settings, git_repo):
    from runs.forms import NewRunForm

    provider = driver.provider()
    options = provider.spawn_options()
    names = [o.name for o in options]
    assert len(names) == len(set(names)), "option names are unique"
    settings.LAB_PROVIDERS = {provider_id: driver.provider_path()}
    settings.LAB_DEFAULT_PROVIDER = provider_id
    _load.cache_clear()
    try:
        form = NewRunForm()
        html = str(form)
        for option in options:
            assert re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", option.name), option.name
            field = form.fields[f"opt:{provider_id}:{option.name}"]
            assert field.label == option.label and option.label in html
            if option.choices:
                assert isinstance(field, forms.ChoiceField)
                assert option.default in {value for value, _ in option.choices}, "the default is a choice"
        bound = NewRunForm(
            {"provider": provider_id, "repository": str(git_repo), "branch": "lab/conformance"}
        )
        assert bound.is_valid(), bound.errors
        assert bound.spawn_options() == {o.name: o.default for o in options}
    finally:
        _load.cache_clear()


# --- reading -------------------------------------------------------------------------------


def _read_all(provider: AgentProvider, path: str, cursor: Cursor) -> tuple[list, TranscriptRead]:
    """Read until the cursor stops moving (a reader with a byte budget needs several calls)."""
    messages = []
    while True:
        read = provider.read_transcript(path, cursor)
        if read.reset:
            messages = []
        messages.extend(read.messages)
        if read.cursor.offset == cursor.offset and not read.messages:
            return messages, read
        cursor = read.cursor


def test_incremental_read_equals_whole_read(driver, tmp_path):
    provider = driver.provider()
    sources = driver.transcripts(tmp_path / "sources")
    assert sources, "a provider brings transcripts that exercise its reader"
    failures = []
    for source in sources:
        data = source.read_bytes()
        whole, whole_read = _read_all(provider, str(source), Cursor())
        assert [m.seq for m in whole] == list(range(len(whole))), f"{source.name}: seq is 0.. contiguous"
        rng = random.Random(source.name)  # a fixed split per file, different across files
        splits = {
            "by-line": [i + 1 for i, b in enumerate(data) if b == 0x0A],
            "random-bytes": sorted(rng.sample(range(1, len(data)), min(40, max(0, len(data) - 1)))),
        }
        for how, cuts in splits.items():
            grow = tmp_path / f"grow-{how}-{source.name}"
            grow.write_bytes(b"")
            cursor, got, read = Cursor(), [], whole_read
            for start, stop in zip([0, *cuts], [*cuts, len(data)], strict=True):
                with grow.open("ab") as f:
                    f.write(data[start:stop])
                messages, read = _read_all(provider, str(grow), cursor)
                got.extend(messages)
                cursor = read.cursor
            if got != whole:
                first = next((i for i, (a, b) in enumerate(zip(got, whole, strict=False)) if a != b), None)
                failures.append(
                    f"{source.name} [{how}]: {len(got)} vs {len(whole)} messages, first diff {first}"
                )
            elif (read.state, read.dialog) != (whole_read.state, whole_read.dialog):
                failures.append(f"{source.name} [{how}]: state/dialog {read.state} vs {whole_read.state}")
    assert failures == []


# --- input ---------------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["", "   \n\t", "\x1b\x07\x00\x9b"], ids=["empty", "blank", "only-controls"])
def test_an_unsendable_reply_raises_invalid_reply_before_sending(driver, dead_handle, text):
    # On a terminal that does not exist, anything that reached the terminal would raise
    # SessionGone instead: InvalidReply here proves the text was judged before sending.
    with pytest.raises(InvalidReply):
        driver.provider().reply(dead_handle, text)


def test_an_oversized_reply_raises_invalid_reply(driver, dead_handle, settings):
    with pytest.raises(InvalidReply):
        driver.provider().reply(dead_handle, "x" * (settings.LAB_REPLY_MAX_BYTES + 1))


def test_a_reply_to_a_gone_terminal_raises_session_gone(driver, dead_handle):
    with pytest.raises(SessionGone):
        driver.provider().reply(dead_handle, "anyone there?")


def test_optional_capabilities_when_offered_are_quiet_on_a_fresh_run(driver, dead_handle):
    # The generic layer calls these on every state read: on a run with nothing pending they
    # answer "nothing" cheaply and never raise.
    provider = driver.provider()
    if isinstance(provider, LiveSignals):
        assert provider.pending_dialog(dead_handle) is None
        assert provider.blocked_state(dead_handle) is None
        provider.sweep(dead_handle)
    if isinstance(provider, ConnectingReporter):
        assert isinstance(provider.connecting(dead_handle), bool)
    if isinstance(provider, SideTranscripts):
        assert provider.side_transcript(dead_handle, "a1b2") == ""
        assert provider.side_transcript(dead_handle, "../../etc/passwd") == ""


# --- live ----------------------------------------------------------------------------------


def _normalized(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.live
def test_spawn_adds_the_generic_layers_environment(live):
    """The commit guard reaches the agent only this way (RunHandle.env)."""
    pid = Tmux(live.handle.tmux_socket).pane_pid(live.handle.tmux_session)
    name, value = PROBE_ENV
    assert spawned_environ(pid).get(name) == value


@pytest.mark.live
def test_the_spawned_environment_is_on_no_command_line(live):
    """tmux keeps its first new-session's argv for the server's life, and every local user
    can read /proc/*/cmdline: the probe and every key or token the agent got stay off both."""
    pid = Tmux(live.handle.tmux_socket).pane_pid(live.handle.tmux_session)
    environ = spawned_environ(pid)
    secrets = [PROBE_ENV[1]] + [
        v for k, v in environ.items() if re.search(r"KEY|TOKEN|SECRET|PASSWORD", k) and len(v) >= 8
    ]
    assert environ.get(PROBE_ENV[0]) == PROBE_ENV[1]
    for secret in secrets:
        assert command_lines_containing(secret) == [], f"{secret[:12]}… is on a command line"


@pytest.mark.live
def test_a_reply_to_an_idle_terminal_is_delivered_as_the_operators_message(driver, live):
    # ReplyNotDelivered is for a CLI that drops text; a ready, idle terminal must take it.
    prompt = "deliver this\nacross two lines"
    driver.script_answer(live, "Delivered.")
    live.provider.reply(live.handle, prompt)
    live.wait(lambda r: r.answered("Delivered."), what="the reply recorded, answered, idle")
    assert _normalized(prompt) in [_normalized(t) for t in live.texts(MessageKind.USER_TEXT)]


@pytest.mark.live
def test_a_reply_while_working_is_queued_or_refused_as_declared(driver, live):
    # Best effort by contract (docs/architecture.md), so each driver says which its CLI does: queue it
    # (then it must be recorded and answered) or refuse it typed (never lost silently).
    driver.begin_slow_turn(live, seconds=4)
    live.wait(lambda r: r.state == RunState.WORKING, what="working")
    driver.script_answer(live, "Queued one handled.")
    if not driver.queues_while_working:
        with pytest.raises(ReplyNotDelivered) as refused:
            live.provider.reply(live.handle, "QUEUED follow-up")
        assert isinstance(refused.value, ProviderError) and str(refused.value)
        return
    live.provider.reply(live.handle, "QUEUED follow-up")
    live.wait(lambda r: r.answered("Queued one handled."), timeout=25, what="the queued prompt answered")
    assert "QUEUED follow-up" in live.texts(MessageKind.USER_TEXT)


@pytest.mark.live
def test_clear_gives_a_new_identity_and_seq_restarts(driver, live):
    assert driver.clears, "a provider that never clears declares clears = False in its driver"
    driver.script_answer(live, "Before the clear.")
    live.provider.reply(live.handle, "first conversation")
    live.wait(lambda r: r.answered("Before the clear."), what="the first turn")
    first = live.path

    (clear,) = [c for c in live.provider.commands(Path(live.handle.worktree)) if c.role is CommandRole.CLEAR]
    live.provider.reply(live.handle, f"/{clear.name}")  # a command is sent as its command line
    live.wait(lambda r: r.path != first and bool(r.messages), what="a new transcript identity")

    fresh = live.provider.read_transcript(live.path, Cursor())
    assert fresh.messages and fresh.messages[0].seq == 0
    assert [m.seq for m in fresh.messages] == list(range(len(fresh.messages)))
    live.wait(lambda r: r.state == RunState.IDLE, what="idle after the clear")  # a lone echo is idle

    driver.script_answer(live, "After the clear.")
    live.provider.reply(live.handle, "second conversation")
    live.wait(lambda r: r.answered("After the clear."), what="a turn in the new conversation")
    assert "first conversation" not in live.texts(MessageKind.USER_TEXT)
    assert live.provider.locate_transcript(live.handle) == live.path != first


@pytest.mark.live
def test_interrupt_returns_to_idle_and_is_harmless_at_idle(driver, live):
    driver.begin_slow_turn(live)
    live.wait(lambda r: r.state == RunState.WORKING, what="working")
    live.provider.interrupt(live.handle)
    live.wait(lambda r: r.state == RunState.IDLE, what="idle after the interrupt")
    assert live.alive(), "the interrupt recipe must not quit the CLI"

    # The hazard check: at idle the recipe neither quits nor opens another UI, so the next
    # reply still lands in the composer and gets its answer.
    live.provider.interrupt(live.handle)
    assert live.alive()
    driver.script_answer(live, "Still here.")
    live.provider.reply(live.handle, "are you still there")
    live.wait(lambda r: r.answered("Still here."), what="a reply after an idle interrupt")
