"""Capture the adapter's own rollout fixtures (providers/codex/tests/data/) from live runs
through the production adapter, paths replaced by placeholders, with the answers lab played
(`<name>.intents.json`) where it played any. Not collected by the suite; run
it explicitly, then regen_expected, review the diff and commit:

    .venv/bin/python -m pytest -q providers/codex/tests/capture_data.py
    .venv/bin/python -m providers.codex.tests.regen_expected
"""

import json
import time
from pathlib import Path

import pytest

from compat.codex.adapter_harness import CodexAdapterRig
from compat.codex.scripted_model import exec_command, slow_text, text, when
from providers.schema import Answer, RunState

OUT = Path(__file__).with_name("data")
pytestmark = pytest.mark.live


def save(rig, run, name):
    data = Path(run.path).read_text()
    for real, placeholder in (
        (rig.codex_home, "<CODEX_HOME>"),
        (rig.worktree, "<WORKTREE>"),
        (rig.home, "<HOME>"),
        (rig.tmp_path, "<TMP>"),
    ):
        data = data.replace(str(real), placeholder)
    (OUT / f"{name}.jsonl").write_text(data)
    # The answers lab played, as the provider read the rollout with them (regen_expected too).
    intents = {k: v for k, v in run.provider.intents(run.path).items() if k in data}
    if intents:
        (OUT / f"{name}.intents.json").write_text(json.dumps(intents, indent=2) + "\n")


def pending(run):
    for _ in range(400):
        d = run.provider.pending_dialog(run.handle)
        if d:
            return d
        time.sleep(0.05)
    raise AssertionError("no dialog")


def test_capture(tmp_path, settings):
    rig = CodexAdapterRig(tmp_path, settings)
    try:
        rig.model.script.add(
            when("CAP-TEXT", text("Hello from the scripted model.\n\nA second paragraph with `code`.")),
            when("CAP-TOOL", exec_command("echo tool-output && ls"), text("The listing is above.")),
            when("CAP-FAIL", exec_command("false"), text("That failed.")),
            when("CAP-ALLOW", exec_command(f"touch {tmp_path}/ok.txt", escalated=True), text("Approved.")),
            when("CAP-DENY", exec_command(f"touch {tmp_path}/no.txt", escalated=True)),
            when("CAP-SLOW", slow_text(60, 0.3)),
            when("CAP-STEER", text("Steered.")),
        )
        run = rig.start()
        p = run.provider
        p.reply(run.handle, "CAP-TEXT say hi\nwith two lines")
        run.wait(
            lambda r: r.answered("Hello from the scripted model.\n\nA second paragraph with `code`."),
            what="t",
        )
        p.reply(run.handle, "CAP-TOOL list")
        run.wait(lambda r: r.answered("The listing is above."), what="tool")
        p.reply(run.handle, "CAP-FAIL fail")
        run.wait(lambda r: r.answered("That failed."), what="fail")
        save(rig, run, "turns__text_and_tool_calls")
        p.reply(run.handle, "/clear")
        p.reply(run.handle, "CAP-ALLOW go")
        d = pending(run)
        p.answer_dialog(run.handle, d, [Answer(choices=(0,))])
        run.wait(lambda r: r.answered("Approved."), what="allow")
        p.reply(run.handle, "CAP-DENY go")
        d = pending(run)
        p.answer_dialog(run.handle, d, [Answer(choices=(2,))])
        run.wait(
            lambda r: r.state == RunState.IDLE and any("interrupted" in m.text for m in r.messages),
            what="deny",
        )
        save(rig, run, "approval__allow_and_deny")
        p.reply(run.handle, "/clear")
        p.reply(run.handle, "CAP-SLOW go")
        rig.model.wait_streaming(min_deltas=2)
        p.reply(run.handle, "CAP-STEER now")
        run.wait(lambda r: r.answered("Steered."), what="steer")
        p.reply(run.handle, "CAP-SLOW again")
        rig.model.wait_streaming(min_deltas=2)
        time.sleep(1.0)
        run.wait(lambda r: r.state == RunState.WORKING, what="working")
        p.interrupt(run.handle)
        run.wait(lambda r: r.state == RunState.IDLE, what="idle")
        save(rig, run, "interrupt__steer_then_esc")
    finally:
        rig.close()
