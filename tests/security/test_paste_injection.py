"""Case 5: text on its way into a TUI never acts as a key.

The attack runs in a REAL tmux pane running bash with bracketed paste on: a reply carrying the
bracketed-paste terminator `ESC [ 201 ~` followed by a command would end the paste early and run
the command. Sanitized (providers.sanitize) and pasted the way lab pastes (providers.tmux), it
stays text. A control run of the unsanitized bytes proves the pane would have run it."""

from __future__ import annotations

import subprocess
import time
import uuid
from pathlib import Path

import pytest

from providers import tmux as tmux_module
from providers.errors import InvalidReply, SessionGone
from providers.sanitize import sanitize_line, sanitize_text
from providers.tmux import Tmux

MAX = 64 * 1024
TERMINATOR = "\x1b[201~"


def _wait(predicate, timeout: float = 10.0, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


class Shell:
    """bash -i in lab's kind of tmux session, bracketed paste on, on a private socket."""

    def __init__(self, tmp: Path) -> None:
        self.dir = tmp
        self.tmux = Tmux(f"labsec-{uuid.uuid4().hex[:10]}")
        self.name = "lab-shell"
        rc = tmp / "bashrc"
        rc.write_text("bind 'set enable-bracketed-paste on'\nPS1='$ '\n")
        env = {"PATH": "/usr/bin:/bin", "TERM": "xterm-256color", "INPUTRC": "/dev/null", "HOME": str(tmp)}
        self.tmux.new_session(
            self.name, cwd=str(tmp), argv=["bash", "--noprofile", "--rcfile", str(rc), "-i"], env=env
        )
        self.sync()  # bash is up and has read its rc file

    def sync(self) -> None:
        """Run a marker command and wait for it: every byte sent before has been processed."""
        marker = self.dir / f"marker-{uuid.uuid4().hex}"
        self.tmux.paste(self.name, f"touch {marker}")
        self.tmux.send_keys(self.name, "Enter")
        _wait(marker.exists, what="the marker command")

    def screen(self) -> str:
        return self.tmux.capture(
            self.name
        )  # the test watches its own probe (docs/architecture.md, principle 2)

    def buffers(self) -> str:
        return self.tmux._run("list-buffers", check=False).stdout.decode()

    def close(self) -> None:
        self.tmux.kill_server()


@pytest.fixture
def shell(tmp_path):
    sh = Shell(tmp_path)
    yield sh
    sh.close()


def test_the_unsanitized_terminator_would_run_a_command(shell, tmp_path):
    # The control: this pane is vulnerable to the raw bytes, so the test below means something.
    pwned = tmp_path / f"pwned-{uuid.uuid4().hex}"
    shell.tmux.paste(shell.name, f"{TERMINATOR}touch {pwned}\n")
    _wait(pwned.exists, what="the injected command (control)")


@pytest.mark.parametrize(
    "payload",
    [
        "{t}touch {p}\n",
        "echo harmless {t}touch {p}\n",
        "{t}\x15touch {p}\r",  # C-u to clear the line, CR as the submit
        "\x1b\x1b[201~touch {p}\n",
        "\x9b201~touch {p}\n",  # the 8-bit CSI (C1) form
        "\x1b[200~\x1b[201~touch {p}\n",
        "{t}touch {p}\x0d\x0a",
    ],
)
def test_a_sanitized_terminator_and_command_never_runs(shell, tmp_path, payload):
    pwned = tmp_path / f"pwned-{uuid.uuid4().hex}"
    text = sanitize_text(payload.format(t=TERMINATOR, p=pwned), max_bytes=MAX)
    assert "\x1b" not in text and "\x9b" not in text
    shell.tmux.paste(shell.name, text)
    shell.tmux.send_keys(shell.name, "C-u")  # drop the pasted line unrun...
    shell.sync()  # ...then prove bash has consumed everything
    assert not pwned.exists()
    # Even submitted, the text runs as the literal word it became, not as `touch`.
    shell.tmux.paste(shell.name, text)
    shell.tmux.send_keys(shell.name, "Enter")
    shell.sync()
    assert not pwned.exists()
    assert shell.buffers() == ""


def test_an_embedded_newline_never_submits_early(shell, tmp_path):
    first, second = tmp_path / "f1", tmp_path / "f2"
    shell.tmux.paste(shell.name, sanitize_text(f"echo a > {first}\necho b > {second}", max_bytes=MAX))
    # bash has drawn the whole paste (both lines): had the newline submitted, f1 would exist now.
    _wait(lambda: f"echo b > {second}" in shell.screen(), what="the pasted text on screen")
    assert not first.exists() and not second.exists()
    shell.tmux.send_keys(shell.name, "Enter")  # lab's submit is its own, separate key
    _wait(second.exists, what="the submitted paste")
    assert first.read_text() == "a\n"


def test_key_names_arrive_as_literal_text(shell, tmp_path):
    out = tmp_path / "typed"
    # `cat > out` keeps reading: a C-c or Enter acting as a key would end or submit it.
    shell.tmux.paste(shell.name, f"cat > {out}")
    shell.tmux.send_keys(shell.name, "Enter")
    words = "C-c Enter Escape C-d M-x ^C \\n"
    shell.tmux.paste(shell.name, sanitize_text(words, max_bytes=MAX))
    shell.tmux.send_keys(shell.name, "Enter")
    _wait(lambda: out.exists() and out.read_text() == words + "\n", what="the literal words in the file")
    shell.tmux.send_keys(shell.name, "C-d")  # the test's own real key ends cat
    shell.sync()


@pytest.mark.parametrize("code", [*range(0x00, 0x20), 0x7F, *range(0x80, 0xA0)])
def test_every_c0_c1_and_esc_character_is_stripped_except_tab_and_newline(code):
    text = sanitize_text(f"a{chr(code)}b", max_bytes=MAX)
    if code in (0x09, 0x0A):
        assert text == f"a{chr(code)}b"
    elif code == 0x0D:
        assert text == "a\nb"  # a CR becomes a line break, never a bare submit
    else:
        assert text == "ab"


def test_crlf_keeps_its_line_breaks_and_only_them():
    assert sanitize_text("one\r\ntwo\rthree", max_bytes=MAX) == "one\ntwo\nthree"


@pytest.mark.parametrize(
    "text", ["yes\n", "yes\r", "a\r\nb", "\nyes", "x\ny", "a\u2028b", "a\u2029b", "yes\u2028"]
)
def test_single_line_answers_refuse_cr_and_lf(text):
    with pytest.raises(InvalidReply):
        sanitize_line(text, max_bytes=MAX)


def test_unicode_line_and_paragraph_separators_are_line_breaks():
    assert sanitize_text("one\u2028two\u2029three", max_bytes=MAX) == "one\ntwo\nthree"


def test_a_text_of_only_control_characters_says_so():
    with pytest.raises(InvalidReply, match="only control characters"):
        sanitize_text("\x00\x01\x1b", max_bytes=MAX)
    with pytest.raises(InvalidReply, match="empty"):
        sanitize_text("  ", max_bytes=MAX)


def test_single_line_answers_are_sanitized_too():
    assert sanitize_line(f"ok{TERMINATOR}go\x85", max_bytes=MAX) == "ok[201~go"
    with pytest.raises(InvalidReply):
        sanitize_line("\x1b\x1b", max_bytes=MAX)  # nothing left: empty


def test_oversized_text_is_refused_before_anything_is_sent():
    with pytest.raises(InvalidReply):
        sanitize_text("x" * (MAX + 1), max_bytes=MAX)


class _Recorder:
    """Wraps subprocess.run in providers.tmux: every tmux argv and its stdin."""

    def __init__(self) -> None:
        self.calls: list[tuple[list[str], bytes | None]] = []
        self.real = subprocess.run

    def __call__(self, argv, *args, **kwargs):
        self.calls.append((list(argv), kwargs.get("input")))
        return self.real(argv, *args, **kwargs)


def test_a_paste_loads_a_unique_buffer_from_stdin_and_deletes_it(shell, monkeypatch):
    recorder = _Recorder()
    monkeypatch.setattr(tmux_module.subprocess, "run", recorder)
    secret = "text-that-must-never-be-an-argument -t =other: ; C-c"
    shell.tmux.paste(shell.name, secret)
    shell.tmux.paste(shell.name, secret)
    monkeypatch.undo()
    loads = [argv for argv, _stdin in recorder.calls if "load-buffer" in argv]
    names = [argv[argv.index("-b") + 1] for argv in loads]
    assert len(names) == 2 and len(set(names)) == 2  # a fresh name per paste: never a shared buffer
    assert all(argv[-1] == "-" for argv in loads)  # from stdin
    assert all(secret not in " ".join(argv) for argv, _stdin in recorder.calls)  # never in argv
    assert [stdin for argv, stdin in recorder.calls if "load-buffer" in argv] == [secret.encode()] * 2
    deletes = [argv[argv.index("-b") + 1] for argv, _ in recorder.calls if "delete-buffer" in argv]
    assert deletes == names
    assert shell.buffers() == ""
    shell.tmux.send_keys(shell.name, "C-u")
    shell.sync()


def test_a_failed_paste_still_deletes_its_buffer(shell):
    with pytest.raises(SessionGone):
        shell.tmux.paste("lab-no-such-session", "hello")
    assert shell.buffers() == ""


@pytest.mark.django_db
def test_a_10_mb_reply_gets_413_and_no_tmux_call(authed_client, fake_provider, git_repo, monkeypatch):
    from runs import services

    run = services.run_start(provider_id="fake", repository=git_repo, branch="lab/huge")
    recorder = _Recorder()
    monkeypatch.setattr(tmux_module.subprocess, "run", recorder)
    response = authed_client.post(f"/runs/{run.pk}/reply/", {"text": "x" * (10 * 1024 * 1024)})
    assert response.status_code == 413
    assert "longer than" in response.content.decode()  # the operator is told why
    assert fake_provider.sent == []
    assert not [
        argv for argv, _ in recorder.calls if {"load-buffer", "paste-buffer", "send-keys"} & set(argv)
    ]


def test_the_claude_adapter_sends_text_only_by_paste_and_only_enter_as_a_key(monkeypatch, settings):
    from providers.claude_code.provider import ClaudeCodeProvider
    from providers.schema import RunHandle

    pasted: list[str] = []
    keys: list[tuple[str, ...]] = []
    monkeypatch.setattr(Tmux, "has_session", lambda self, name: True)
    monkeypatch.setattr(Tmux, "paste", lambda self, name, text: pasted.append(text))
    monkeypatch.setattr(Tmux, "send_keys", lambda self, name, *k: keys.append(k))
    provider = ClaudeCodeProvider()
    monkeypatch.setattr(provider, "wait_ready", lambda run, tmux: None)
    monkeypatch.setattr(provider, "_wait_recorded", lambda *a, **k: True)
    monkeypatch.setattr("providers.tui.time.sleep", lambda s: None)
    handle = RunHandle(
        run_id=1, worktree="/tmp", tmux_socket="labsec", tmux_session="lab-x", transcript_path=""
    )
    provider.reply(handle, f"C-c Enter{TERMINATOR}touch /tmp/x\nEscape")
    assert pasted == ["C-c Enter[201~touch /tmp/x\nEscape"]
    assert keys == [("Enter",)]
