"""The captured fixtures of every CLI version (compat/claude_code/fixtures/<version>/
<event>__<variant>.jsonl) read as their reviewed `<name>.expected.json` says, whole and line by
line: a run started under an older pin stays readable after an upgrade."""

from __future__ import annotations

import tempfile
from pathlib import Path

import orjson
import pytest

from compat.claude_code.home import FIXTURES_ROOT, PINNED_VERSION, fixture_versions
from providers.claude_code import transcript
from providers.claude_code.dialogs import Intent, intent_for
from providers.claude_code.tests.regen_expected import (
    expected_path,
    fixture_id,
    fixture_paths,
    line_by_line,
    observed,
)
from providers.claude_code.transcript import read_transcript
from providers.schema import Answer, Cursor, Dialog, DialogKind, MessageKind, RunState

FIXTURES = fixture_paths()
VERSIONS = fixture_versions()


def _ids(paths: list[Path]) -> list[str]:
    return [fixture_id(p) for p in paths]


def test_every_reviewed_expectation_has_its_capture() -> None:
    # The tests below are parametrized over the captures on disk: a capture gone missing (or a
    # wrong directory) would take its tests with it, silently. Its expectation stays: fail.
    assert FIXTURES, f"no captured fixtures in {FIXTURES_ROOT}"
    captured = {fixture_id(p) for p in FIXTURES}
    orphans = sorted(
        f"{p.parent.name}/{p.name}"
        for p in FIXTURES_ROOT.glob("*/*.expected.json")
        if f"{p.parent.name}/{p.name.removesuffix('.expected.json')}" not in captured
    )
    assert orphans == [], f"expectations without their capture: {orphans}"


@pytest.mark.parametrize("fixture", FIXTURES, ids=_ids(FIXTURES))
def test_it_reads_the_fixture_as_expected(fixture: Path) -> None:
    expected = expected_path(fixture)
    if not expected.exists():
        pytest.fail(f"no {expected.name}: run regen_expected and review it")
    assert observed(fixture) == orjson.loads(expected.read_bytes())


@pytest.mark.parametrize("fixture", FIXTURES, ids=_ids(FIXTURES))
def test_reading_line_by_line_equals_one_read(fixture: Path, tmp_path: Path) -> None:
    whole = read_transcript(str(fixture), Cursor())
    growing = tmp_path / fixture.name
    growing.touch()
    cursor, messages = Cursor(), []
    with open(fixture, "rb") as src:
        for raw in src:
            with open(growing, "ab") as dst:
                dst.write(raw)
            result = read_transcript(str(growing), cursor)
            cursor = result.cursor
            messages += result.messages
    assert messages == whole.messages
    assert (result.state, result.dialog) == (whole.state, whole.dialog)
    assert (result.background, result.since, result.running) == (whole.background, whole.since, whole.running)


@pytest.mark.parametrize("fixture", FIXTURES, ids=_ids(FIXTURES))
def test_the_cheap_skip_only_skips_bookkeeping(fixture: Path) -> None:
    # Anything skipped unparsed really is bookkeeping, and the big entries are skipped.
    bookkeeping = {k.decode() for k in transcript._BOOKKEEPING}
    for raw in fixture.read_bytes().splitlines():
        entry = orjson.loads(raw)
        skipped = transcript._cheap_type(raw) in transcript._BOOKKEEPING
        if skipped:
            assert entry["type"] in bookkeeping, raw[:120]
        if entry.get("type") in bookkeeping and len(raw) > 4096:
            assert skipped, raw[:120]


def test_every_version_ever_pinned_keeps_every_scenario() -> None:
    # Runs started under 2.1.328 stay readable after the upgrade: its captures are kept, and
    # the pinned version has every scenario an older one has, so each reader test of an old
    # scenario runs on each version. A shape first captured under a later pin (the binary of
    # an older one is gone) is captured from that pin on.
    assert {"2.1.328", PINNED_VERSION} <= set(VERSIONS)
    scenarios = {v: {p.stem for p in FIXTURES if p.parent.name == v} for v in VERSIONS}
    missing = {v: sorted(names - scenarios[PINNED_VERSION]) for v, names in scenarios.items()}
    assert all(not names for names in missing.values()), missing


def _fixture(name: str, version: str) -> Path:
    # A missing capture fails: a skip here once hid about ten tests behind one absent file.
    path = next((p for p in FIXTURES if fixture_id(p) == f"{version}/{name}"), None)
    if path is None:
        pytest.fail(f"fixture {version}/{name} was not captured: every version needs every scenario")
    return path


def _prefix_through_tool_use(fixture: Path, tool_name: str, tmp_path: Path) -> Path:
    """The fixture up to and including the assistant entry that calls `tool_name`."""
    out = tmp_path / fixture.name
    kept: list[bytes] = []
    for raw in fixture.read_bytes().splitlines(keepends=True):
        kept.append(raw)
        entry = orjson.loads(raw)
        blocks = entry.get("message", {}).get("content") if entry.get("type") == "assistant" else None
        if any(b.get("type") == "tool_use" and b.get("name") == tool_name for b in blocks or ()):
            break
    out.write_bytes(b"".join(kept))
    return out


@pytest.mark.parametrize("version", VERSIONS)
def test_a_live_question_is_pending_until_answered(version: str, tmp_path: Path) -> None:
    fixture = _fixture("askuserquestion__single_option", version)
    asked = read_transcript(str(_prefix_through_tool_use(fixture, "AskUserQuestion", tmp_path)), Cursor())
    dialog = asked.dialog
    assert dialog is not None and dialog.questions is None
    assert dialog.prompt == "Which color do you prefer?"
    assert [o.label for o in dialog.options] == ["Red", "Green", "Blue"]
    assert asked.state == RunState.WORKING
    assert read_transcript(str(fixture), Cursor()).dialog is None


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize(("label", "warns"), [("Green", False), ("Red", True)])
def test_the_backstop_on_a_live_answer(label: str, warns: bool, version: str) -> None:
    fixture = _fixture("askuserquestion__single_option", version)
    whole = read_transcript(str(fixture), Cursor())
    tool_use_id = next(m.native_id for m in whole.messages if m.tool_name == "AskUserQuestion")
    intent = Intent(tool_use_id, DialogKind.QUESTION, answers=(("Which color do you prefer?", label),))
    result = read_transcript(str(fixture), Cursor(), {tool_use_id: intent})
    warnings = [m for m in result.messages if m.kind == MessageKind.LIFECYCLE and m.is_error]
    assert bool(warnings) == warns


PLAN_OUTCOMES = [
    ("exitplanmode__approve", 0, ""),
    ("exitplanmode__approve_manual", 1, ""),
    ("exitplanmode__approve_with_feedback_btab", 0, ""),
    ("exitplanmode__no_plan_file_approve", 1, ""),  # its "Yes" leaves default (manual) mode
    ("exitplanmode__no_plan_file_no", 3, ""),
    ("exitplanmode__reject", 3, ""),
    ("exitplanmode__reject_feedback", 2, "Please add a step 4 for tests"),
]


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize(("name", "choice", "feedback"), PLAN_OUTCOMES)
def test_the_plan_backstop_on_live_outcomes(name: str, choice: int, feedback: str, version: str) -> None:
    fixture = _fixture(name, version)
    whole = read_transcript(str(fixture), Cursor())
    tool_use_id = next(m.native_id for m in whole.messages if m.tool_name == "ExitPlanMode")

    def warnings_for(choice: int, text: str) -> list[str]:
        plan = Dialog(tool_use_id, DialogKind.PLAN)
        intent = intent_for(plan, [Answer(choices=(choice,), text=text)])
        result = read_transcript(str(fixture), Cursor(), {tool_use_id: intent})
        return [m.text for m in result.messages if m.kind == MessageKind.LIFECYCLE and m.is_error]

    assert warnings_for(choice, feedback) == []
    contrary = (3, "") if choice < 2 else (0, "")
    assert warnings_for(*contrary)
    if choice < 2:
        # The other approve row leaves another permission mode (the auto_mode attachment, or
        # its absence): a row mapping swapped between the two approvals warns too.
        (warning,) = warnings_for(1 - choice, "")
        assert "auto mode" in warning


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("name", ["command__project_cmd", "command__skill"])
def test_a_project_command_is_idle_until_its_expansion(name: str, version: str, tmp_path: Path) -> None:
    # compat §6: the echo alone keeps the run idle; the isMeta turnCompanion expansion starts it.
    fixture = _fixture(name, version)
    growing = tmp_path / fixture.name
    states: list[tuple[str, RunState]] = []
    for raw in fixture.read_bytes().splitlines(keepends=True):
        with open(growing, "ab") as f:
            f.write(raw)
        entry = orjson.loads(raw)
        if entry.get("type") == "user":
            step = "expansion" if entry.get("turnCompanion") else "echo"
            states.append((step, read_transcript(str(growing), Cursor()).state))
    assert states == [("echo", RunState.IDLE), ("expansion", RunState.WORKING)]


def test_a_background_agents_report_is_never_shown_as_a_queued_prompt() -> None:
    # compat §13: the CLI enqueues a finished agent's <task-notification> like a prompt sent
    # while working; the page's queued list is the operator's prompts only.
    fixture = next(p for p in FIXTURES if p.stem == "agent__background")
    lines = fixture.read_bytes().splitlines(keepends=True)
    enqueue = next(i for i, raw in enumerate(lines) if b'"operation": "enqueue"' in raw)
    partial = Path(tempfile.mkdtemp()) / fixture.name
    partial.write_bytes(b"".join(lines[: enqueue + 1]))
    read = read_transcript(str(partial), Cursor())
    assert read.stats.get("queue_enqueue") == 1  # the report was read, and is not offered as queued
    assert read.queued == ()


@pytest.mark.parametrize(
    ("name", "retries"),
    [("api_error__unauthorized_gave_up", 2), ("api_error__server_error_gave_up", 3)],
)
def test_a_retried_request_is_one_line_and_a_status_that_counts_the_retries(name: str, retries: int) -> None:
    # Captured with CLAUDE_CODE_MAX_RETRIES set to `retries`: one request, then that many
    # resends, then the error the CLI gave up with. The chat gets one line for the retrying
    # (a shown message never changes) and the error; the working status counts each retry
    # as the CLI does (retry n, never one past the last), and is gone once the CLI gave up.
    fixture = _fixture(name, PINNED_VERSION)
    statuses: list[str] = []
    for read in line_by_line(fixture):
        if read.running and (not statuses or statuses[-1] != read.running):
            statuses.append(read.running)
    counted = [s.partition(" (")[0] for s in statuses]
    assert counted == [f"the API request, retry {n}" for n in range(1, retries + 1)]
    assert "gives up after 10 by default; the terminal says why" in statuses[-1]
    whole = read_transcript(str(fixture), Cursor())
    errors = [m.text for m in whole.messages if m.kind == MessageKind.LIFECYCLE]
    assert len(errors) == 2 and errors[0] == transcript.RETRYING
    assert (whole.state, whole.running) == (RunState.IDLE, "")
