"""Re-capture the session fixtures in compat/gemini/fixtures/<version>/ from live runs.

    DJANGO_SETTINGS_MODULE=lab.settings .venv/bin/python -m compat.gemini.capture_fixtures

Each scenario starts the real TUI through lab's production adapter (a fresh private home,
worktree and scripted model: compat.gemini.adapter_harness), drives it, and copies the session
files it wrote, oldest first, with the home and worktree paths replaced by <HOME> and
<WORKTREE>, and the long <session_context> text trimmed.
"""

from __future__ import annotations

import argparse
import re
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from compat.gemini.home import fixtures_dir, installed_version
from compat.gemini.scripted_model import ask_user, question, shell, slow_text, text, when
from providers.schema import Answer, MessageKind, RunState

CONTEXT = re.compile(r"<session_context>.*?</session_context>", re.S)


def _scrub(raw: str, home: Path, wt: Path) -> str:
    out = []
    for line in raw.splitlines():
        entry = orjson.loads(line)
        text_ = orjson.dumps(entry).decode()
        text_ = CONTEXT.sub("<session_context>[trimmed]</session_context>", text_.replace("\\n", "\n"))
        text_ = text_.replace("\n", "\\n")
        for real, mark in (
            (str(home.resolve()), "<HOME>"),
            (str(home), "<HOME>"),
            (str(wt.resolve()), "<WORKTREE>"),
            (str(wt), "<WORKTREE>"),
        ):
            text_ = text_.replace(real, mark)
        out.append(text_)
    return "\n".join(out) + "\n"


def _wait(run: Any, pred: Callable[[Any], bool], what: str, timeout: float = 40) -> None:
    run.wait(pred, timeout=timeout, what=what)


def prompt__text_reply(rig: Any, run: Any) -> None:
    rig.model.script.add(text("Hello from the scripted model."))
    run.provider.reply(run.handle, "CAP-TEXT say hello")
    _wait(run, lambda r: r.answered("Hello from the scripted model."), "the reply")


def tool__shell_read_only(rig: Any, run: Any) -> None:
    rig.model.script.add(when("CAP-TOOL", shell("echo fixture-tool"), text("The command ran.")))
    run.provider.reply(run.handle, "CAP-TOOL run echo")
    _wait(run, lambda r: r.answered("The command ran."), "the turn")


def _approval(rig: Any, run: Any, choice: int, after: str) -> None:
    rig.model.script.add(when("CAP-APPROVE", shell("echo fixture > approved.txt"), text(after)))
    run.provider.reply(run.handle, "CAP-APPROVE write a file")
    deadline = time.monotonic() + 30
    while (dialog := run.provider.pending_dialog(run.handle)) is None:
        if time.monotonic() > deadline:
            raise TimeoutError(f"no approval dialog; pane:\n{run.pane()}")
        time.sleep(0.1)
    run.provider.answer_dialog(run.handle, dialog, [Answer(choices=[choice])])


def approval__allowed(rig: Any, run: Any) -> None:
    _approval(rig, run, 0, "The file is written.")
    _wait(run, lambda r: r.answered("The file is written."), "the turn")


def approval__esc(rig: Any, run: Any) -> None:
    _approval(rig, run, 1, "unused")
    _wait(
        run,
        lambda r: "Request cancelled." in r.texts(MessageKind.LIFECYCLE) and r.state == RunState.IDLE,
        "cancel",
    )
    time.sleep(1.0)  # the snapshot after the cancel


def question__form_answered(rig: Any, run: Any) -> None:
    asked = [
        question("Which color?", "Color", ("Red", "Green")),
        question("Which fruits?", "Fruit", ("Apple", "Pear", "Plum"), multi=True),
        question("Your name?", "Name", kind="text"),
    ]
    rig.model.script.add(when("CAP-ASK", ask_user(questions=asked), text("Form received.")))
    run.provider.reply(run.handle, "CAP-ASK ask me")
    deadline = time.monotonic() + 30
    while (dialog := run.provider.pending_dialog(run.handle)) is None:
        if time.monotonic() > deadline:
            raise TimeoutError(f"no question dialog; pane:\n{run.pane()}")
        time.sleep(0.1)
    answers = [Answer(choices=(1,)), Answer(choices=(0, 2), text="Kiwi"), Answer(text="Ada")]
    run.provider.answer_dialog(run.handle, dialog, answers)
    _wait(run, lambda r: r.answered("Form received."), "the turn")


def interrupt__esc_streaming(rig: Any, run: Any) -> None:
    rig.model.script.add(when("CAP-SLOW", slow_text(40, 0.5)))
    run.provider.reply(run.handle, "CAP-SLOW stream please")
    rig.model.wait_streaming(min_deltas=2, timeout=20)
    run.provider.interrupt(run.handle)
    _wait(run, lambda r: "Request cancelled." in r.texts(MessageKind.LIFECYCLE), "cancel")
    time.sleep(1.0)


def clear__two_sessions(rig: Any, run: Any) -> None:
    rig.model.script.add(text("Before the clear."), text("After the clear."))
    run.provider.reply(run.handle, "CAP-BEFORE first conversation")
    _wait(run, lambda r: r.answered("Before the clear."), "first reply")
    run.provider.reply(run.handle, "/clear")
    run.provider.reply(run.handle, "CAP-AFTER second conversation")
    _wait(run, lambda r: r.answered("After the clear."), "second reply")


SCENARIOS: dict[str, Callable[[Any, Any], None]] = {
    f.__name__: f
    for f in (
        prompt__text_reply,
        tool__shell_read_only,
        approval__allowed,
        approval__esc,
        question__form_answered,
        interrupt__esc_streaming,
        clear__two_sessions,
    )
}


def capture(name: str, out: Path) -> list[Path]:
    from django.conf import settings

    from compat.gemini.adapter_harness import GeminiAdapterRig

    with tempfile.TemporaryDirectory(prefix="gemcap-") as tmp:
        rig = GeminiAdapterRig(Path(tmp), settings)
        try:
            run = rig.start()
            SCENARIOS[name](rig, run)
            time.sleep(0.5)
            sessions = sorted(
                (rig.home / ".gemini" / "tmp").glob("*/chats/session-*.jsonl"),
                key=lambda p: p.stat().st_mtime,
            )
            written = []
            for i, path in enumerate(sessions):
                suffix = "" if len(sessions) == 1 else f"_{i + 1}"
                dest = out / f"{name}{suffix}.jsonl"
                dest.write_text(_scrub(path.read_text(), rig.home, rig.worktree))
                written.append(dest)
            return written
        finally:
            rig.close()


def main(argv: list[str] | None = None) -> int:
    import django

    django.setup()
    p = argparse.ArgumentParser(prog="python -m compat.gemini.capture_fixtures")
    p.add_argument("names", nargs="*", default=list(SCENARIOS))
    p.add_argument("--out", default=None)
    a = p.parse_args(argv)
    out = Path(a.out) if a.out else fixtures_dir(installed_version())
    out.mkdir(parents=True, exist_ok=True)
    for name in a.names:
        for path in capture(name, out):
            print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
