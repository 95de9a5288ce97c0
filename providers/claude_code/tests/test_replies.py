"""Reply receipts and the send policy, on transcript lines as 2.1.328 writes them (compat §6).
The live proofs are in compat/claude_code/tests/test_live_replies.py."""

from __future__ import annotations

import orjson
import pytest

from providers.claude_code.provider import ClaudeCodeProvider
from providers.claude_code.transcript import records_prompt
from providers.errors import ReplyRefused
from providers.outbox import Outbox, normalize, reply_lock


def user(content: str, **extra: object) -> bytes:
    return orjson.dumps({"type": "user", "message": {"role": "user", "content": content}, **extra})


def system(subtype: str, content: str) -> bytes:
    return orjson.dumps({"type": "system", "subtype": subtype, "content": content, "level": "info"})


def receipt(line: bytes, sent: str) -> bool:
    return records_prompt(line, normalize(sent))


def test_the_cli_records_nfc_so_combining_characters_match():
    assert receipt(user("caf\u00e9 n\u00e4ive"), "cafe\u0301 na\u0308ive")


def test_invisible_characters_the_cli_drops_do_not_break_the_receipt():
    sent = "first \u202eevil\u202c line\u200b\nsecond \u200dline"
    assert receipt(user("first evil line\nsecond \u200dline"), sent)
    assert not receipt(user("first evil line\nsecond line"), "something else")


def test_an_unknown_command_is_received_by_its_informational_entry():
    line = system("informational", "Unknown command: /nosuchcommand-xyz")
    assert receipt(line, "/nosuchcommand-xyz")
    assert not receipt(line, "/nosuchcommand")
    assert not receipt(line, "nosuchcommand-xyz")


def test_bash_mode_is_received_by_its_bash_input_wrapper():
    assert receipt(user("<bash-input>echo hi > bang.txt</bash-input>"), "!echo hi > bang.txt")
    assert not receipt(user("<bash-input>echo hi</bash-input>"), "echo hi")


def test_a_message_merged_after_leftover_composer_text_is_received():
    assert receipt(user("left over\nfrom beforethe next message"), "the next message")
    assert not receipt(user("the next message and more"), "the next message")


def test_a_queued_enqueue_and_a_command_echo_are_receipts():
    enqueue = orjson.dumps({"type": "queue-operation", "operation": "enqueue", "content": "later"})
    assert receipt(enqueue, "later")
    echo = user("<command-name>/clear</command-name>\n<command-args></command-args>")
    assert receipt(echo, "/clear")


def test_meta_entries_are_never_receipts():
    assert not receipt(user("hello", isMeta=True), "hello")


@pytest.mark.parametrize("text", ["!rm -rf x", "!", "!\nsecond line"])
def test_a_leading_bang_is_refused_before_sending(settings, text):
    with pytest.raises(ReplyRefused, match="shell command"):
        ClaudeCodeProvider().prepare_reply(text)


def test_text_with_a_bang_elsewhere_is_sent_and_invisible_characters_are_stripped(settings):
    provider = ClaudeCodeProvider()
    assert provider.prepare_reply(" !not a command") == " !not a command"
    assert provider.prepare_reply("wow! \u202eok\u202c\u200b \u200d") == "wow! ok \u200d"


def test_the_outbox_keeps_each_unconfirmed_text_until_it_is_removed(tmp_path):
    outbox = Outbox(str(tmp_path))
    assert outbox.find("x") is None
    outbox.add({"want": "x", "offset": 3})
    outbox.add({"want": "y", "offset": 9})  # a later, different text does not confirm "x"
    assert outbox.find("x") == {"want": "x", "offset": 3}
    outbox.remove("y")
    assert outbox.find("y") is None and outbox.find("x") is not None
    outbox.remove("x")
    assert not (tmp_path / ".outbox").exists()


def test_a_queued_prompt_is_reported_until_the_cli_dequeues_it(tmp_path):
    from pathlib import Path

    from providers.claude_code.transcript import read_transcript
    from providers.schema import Cursor

    fixture = Path(__file__).resolve().parents[3] / "compat/claude_code/fixtures/2.1.328"
    lines = (fixture / "reply__queued_while_working.jsonl").read_bytes().splitlines(keepends=True)
    cut = next(i for i, line in enumerate(lines) if b'"dequeue"' in line)
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"".join(lines[:cut]))
    read = read_transcript(str(path), Cursor(path=str(path)))
    assert read.queued == ("queued follow-up msg",)
    path.write_bytes(b"".join(lines))
    again = read_transcript(str(path), read.cursor)
    assert again.queued == ()
    assert [m.text for m in again.messages if m.kind == "user_text"] == ["queued follow-up msg"]


def test_one_reply_at_a_time_per_run_across_workers(tmp_path):
    # Two workers are two processes with their own provider; the lock is a file lock in the run's
    # spool dir, so a second holder is refused even through another open file.
    from providers.errors import ReplyInFlight
    from providers.schema import RunHandle

    handle = RunHandle(run_id=1, worktree="/wt", tmux_socket="s", tmux_session="x", spool_dir=str(tmp_path))
    with reply_lock(handle), pytest.raises(ReplyInFlight, match="being sent"), reply_lock(handle):
        pass
    with reply_lock(handle):  # released
        pass


class _Terminal:
    """tmux as the reply sees it: the session is there, its input is live; keys are recorded."""

    sent: list[str] = []

    def __init__(self, socket: str) -> None:
        pass

    def has_session(self, session: str) -> bool:
        return True

    def pane_format(self, session: str, fmt: str) -> str:
        return "1 1"  # mouse tracking on: the fullscreen composer is live (compat §6)

    def paste(self, session: str, text: str) -> None:
        self.sent.append(f"paste:{text}")

    def send_keys(self, session: str, *keys: str) -> None:
        self.sent.extend(keys)


def test_a_permission_prompt_drawn_during_the_tool_settle_wait_refuses_the_reply(
    settings, tmp_path, monkeypatch
):
    """compat §6 (prompts take keys): a Bash tool began just before the reply, so the reply waits
    for it to settle; its permission prompt opens during that wait. The paste would land in the
    prompt: the reply is refused before any key, not caught only before the Enter."""
    import json
    import time
    import types

    from providers import tui
    from providers.claude_code.tests.test_spool import BASH, permission, prompt, session_start
    from providers.errors import PromptPending
    from providers.schema import RunHandle

    spool = tmp_path / "spool"
    spool.mkdir()

    def hook(event: dict[str, object]) -> None:
        (spool / f"{time.time_ns():020d}-4242.json").write_text(json.dumps(event))

    for event in (session_start(), prompt("BASH1"), BASH):  # the tool began now: unsettled
        hook(event)
    drawn = []

    def sleep(seconds: float) -> None:
        if not drawn:  # the first poll of the settle wait: the CLI draws the prompt now
            hook(permission("Bash"))
            drawn.append(True)
        time.sleep(seconds)

    clock = types.SimpleNamespace(sleep=sleep, time=time.time, time_ns=time.time_ns, monotonic=time.monotonic)
    monkeypatch.setattr(tui, "time", clock)
    monkeypatch.setattr(tui, "Tmux", _Terminal)
    monkeypatch.setattr(_Terminal, "sent", [])
    transcript = tmp_path / "t.jsonl"
    transcript.touch()
    run = RunHandle(
        run_id=1,
        worktree=str(tmp_path),
        tmux_socket="s",
        tmux_session="x",
        transcript_path=str(transcript),
        spool_dir=str(spool),
    )
    with pytest.raises(PromptPending, match=r"asking permission: answer it above\. Nothing was sent"):
        ClaudeCodeProvider().reply(run, "a reply for later")
    assert drawn and _Terminal.sent == []
