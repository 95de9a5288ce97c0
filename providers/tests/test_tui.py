"""The TUI kit's own parts (providers/tui.py): the backstop's intents as every worker reads
them, the agent's environment, and the refusals' wording."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from providers import tui
from providers.testing import returns_within
from providers.tui import Asking, IntentStore, NewLines, interrupt_refusal, reply_refusal


def store() -> IntentStore:
    return IntentStore(encode=lambda v: {"v": v}, decode=lambda d: d["v"])


def test_an_intent_one_worker_records_is_read_by_another(tmp_path: Path):
    transcript = str(tmp_path / "t.jsonl")
    store().record(transcript, "call_1", "allow")
    assert store().read(transcript) == {"call_1": "allow"}  # a fresh store: another process
    assert store().read(str(tmp_path / "other.jsonl")) == {}


def test_an_unchanged_file_is_read_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    transcript = str(tmp_path / "t.jsonl")
    reader = store()
    reader.record(transcript, "call_1", "allow")
    reads = []
    real = tui.read_regular
    monkeypatch.setattr(tui, "read_regular", lambda *a: reads.append(a) or real(*a))
    for _ in range(5):
        assert reader.read(transcript) == {"call_1": "allow"}
    assert len(reads) <= 1
    store().record(transcript, "call_2", "deny")  # another worker answers: the next read sees it
    assert reader.read(transcript) == {"call_1": "allow", "call_2": "deny"}


def test_a_damaged_file_or_entry_arms_nothing_and_a_new_answer_replaces_it(tmp_path: Path):
    transcript = str(tmp_path / "t.jsonl")
    path = IntentStore.path_for(transcript)
    path.parent.mkdir(parents=True)
    path.write_text("not json")
    assert store().read(transcript) == {}
    path.write_text('{"call_1": {"v": "allow"}, "call_2": "no v"}')
    assert store().read(transcript) == {"call_1": "allow"}
    store().record(transcript, "call_3", "deny")
    assert store().read(transcript) == {"call_1": "allow", "call_3": "deny"}
    assert oct(path.stat().st_mode & 0o777) == "0o600"


def test_lab_s_agent_environment_overrides_the_adapters_defaults(settings):
    from providers.claude_code.provider import ClaudeCodeProvider
    from providers.codex.provider import CodexProvider

    settings.LAB_AGENT_ENV = {"DISABLE_AUTOUPDATER": "0", "EXTRA": "1"}
    env = ClaudeCodeProvider().agent_env()
    assert env["DISABLE_AUTOUPDATER"] == "0" and env["EXTRA"] == "1" and env["TERM"] == "xterm-256color"
    settings.LAB_AGENT_ENV = {"CODEX_HOME": "~/elsewhere"}
    assert CodexProvider().agent_env()["CODEX_HOME"] == str(Path("~/elsewhere").expanduser())


def test_the_refusals_say_where_the_prompt_is_answered():
    shown = Asking("permission", "allow or deny it")
    terminal = Asking("permission")
    assert reply_refusal("Agent", shown) == "Agent is asking permission: answer it above. Nothing was sent."
    assert reply_refusal("Agent", terminal) == (
        "Agent is asking permission: answer it in its terminal. Nothing was sent."
    )
    assert interrupt_refusal("Agent", shown) == (
        "Agent is asking permission: allow or deny it above. The interrupt was not sent: its Esc "
        "would have answered for you."
    )
    assert interrupt_refusal("Agent", terminal).startswith("Agent is asking permission in its terminal")


def test_new_lines_of_a_fifo_are_none_and_never_waited_on(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "t.jsonl")
    assert returns_within(lambda: NewLines(str(tmp_path / "t.jsonl"), 0).read()) == []


def test_new_lines_come_line_by_line_from_the_offset(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b'{"a":1}\n{"b":')
    new = NewLines(str(path), 0)
    assert new.read() == [b'{"a":1}']
    with open(path, "ab") as f:
        f.write(b"2}\n")
    assert new.read() == [b'{"b":2}']
