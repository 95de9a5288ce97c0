"""Re-capture the rollout fixtures in compat/codex/fixtures/<version>/ from live runs.

    .venv/bin/python -m compat.codex.capture_fixtures                       # every scenario
    .venv/bin/python -m compat.codex.capture_fixtures prompt__text_reply    # one
    .venv/bin/python -m compat.codex.capture_fixtures --out /tmp/fx

Each scenario starts the real TUI (fresh HOME + CODEX_HOME + worktree + scripted model), drives
it by the same key recipes the live tests use (the harness may watch its own pane), and saves
every rollout the session wrote, oldest first, with <HOME>, <CODEX_HOME> and <WORKTREE>
placeholders. Long instruction text (session_meta.base_instructions ~20 KB, developer messages,
world_state) is cut to 1500 characters with a "[truncated N chars]" mark: it is the CLI's own
prompt, never something lab reads.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from compat.codex.home import HOOK_EVENTS, fixtures_dir, installed_version, prepare_home
from compat.codex.live import CodexTUI, HookSpool, events, read_jsonl
from compat.codex.scripted_model import (
    Script,
    ScriptedModel,
    api_error,
    exec_command,
    slow_text,
    text,
    usage_limit,
    when,
)
from compat.live import make_worktree

LIMIT = 1500


def _trunc(v: Any) -> Any:
    if isinstance(v, str):
        return v if len(v) <= LIMIT else v[:LIMIT] + f"…[truncated {len(v) - LIMIT} chars]"
    if isinstance(v, list):
        return [_trunc(x) for x in v]
    if isinstance(v, dict):
        return {k: _trunc(x) for k, x in v.items()}
    return v


def _is_bulky(entry: dict[str, Any]) -> bool:
    p = entry.get("payload") or {}
    return entry.get("type") in ("session_meta", "world_state") or (
        entry.get("type") == "response_item" and p.get("type") == "message" and p.get("role") == "developer"
    )


def sanitize(raw: str, home: Path, codex_home: Path, wt: Path) -> str:
    for real, mark in sorted(
        [(str(codex_home), "<CODEX_HOME>"), (str(home), "<HOME>"), (str(wt), "<WORKTREE>")],
        key=lambda x: -len(x[0]),
    ):
        raw = raw.replace(real, mark)
    return raw


def save(name: str, rollout: Path, home: Path, codex_home: Path, wt: Path, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    lines = []
    for e in read_jsonl(rollout):
        if _is_bulky(e):
            e = _trunc(e)
        lines.append(sanitize(json.dumps(e, ensure_ascii=False), home, codex_home, wt))
    (out / f"{name}.jsonl").write_text("\n".join(lines) + "\n")
    print(f"saved {name}: {len(lines)} lines")


# Scenarios whose home differs: a failing model is retried at most once, so Codex gives up in
# under a second (its default is about 30 requests over 25 s for a 500).
HOME_OPTIONS: dict[str, dict[str, Any]] = {"turn__failed_after_retries": {"max_retries": 1}}


class Session:
    def __init__(self, name: str) -> None:
        self.base = Path(tempfile.mkdtemp(prefix=f"lab-codex-{name}-"))
        self.wt = make_worktree(self.base / "wt")
        self.model = ScriptedModel(Script(), log_path=str(self.base / "requests.jsonl")).start()
        self.spool = HookSpool(self.base / "spool", HOOK_EVENTS)
        self.home = self.base / "home"
        self.env = prepare_home(
            self.home, self.wt, self.model.url, hooks=self.spool.hooks(), **HOME_OPTIONS.get(name, {})
        )
        self.codex_home = Path(self.env["CODEX_HOME"])
        self.tui = CodexTUI(self.env, self.wt).start()
        self.tui.wait_ready()

    def close(self) -> None:
        self.tui.kill()
        self.model.stop()

    def turn(self, prompt: str) -> Path:
        """Submit ``prompt`` and wait for its turn to complete; the rollout it went to (the Stop
        hook names it)."""
        done = len(self.spool.entries("Stop"))
        self.tui.prompt(prompt)
        stop = self.spool.wait("Stop", done + 1)[-1]["payload"]
        rollout = Path(stop["transcript_path"])
        # The Stop hook runs before task_complete reaches the rollout.
        self.tui.wait_for(
            rollout, lambda ls: any(e["turn_id"] == stop["turn_id"] for e in events(ls, "task_complete"))
        )
        return rollout


def prompt__text_reply(s: Session) -> dict[str, Path]:
    s.model.script.add(when("FX-TEXT", text("Hello from the scripted model.")))
    return {"prompt__text_reply": s.turn("say hello FX-TEXT")}


def tool__exec_command(s: Session) -> dict[str, Path]:
    s.model.script.add(when("FX-TOOL", exec_command("echo fixture-tool"), text("The command printed it.")))
    return {"tool__exec_command": s.turn("run a command FX-TOOL")}


def _escalated(s: Session, token: str) -> None:
    s.model.script.add(
        when(
            token,
            exec_command("touch ../escalated", escalated=True, justification="Write outside"),
            text("Done."),
        )
    )
    s.tui.prompt(f"please {token}")
    s.tui.wait_pane(r"Would you like to run the following command\?", timeout=60, settle=0.5)


def approval__approved(s: Session) -> dict[str, Path]:
    _escalated(s, "FX-APPROVE")
    s.tui.send_keys("y")
    rollout = s.tui.rollouts()[-1]
    s.tui.wait_for(rollout, lambda ls: events(ls, "task_complete"))
    return {"approval__approved": rollout}


def approval__esc(s: Session) -> dict[str, Path]:
    _escalated(s, "FX-DENY")
    s.tui.send_keys("Escape")
    rollout = s.tui.rollouts()[-1]
    s.tui.wait_for(rollout, lambda ls: events(ls, "turn_aborted"))
    return {"approval__esc": rollout}


def interrupt__esc_streaming(s: Session) -> dict[str, Path]:
    s.model.script.add(
        when("FX-SLOW", slow_text(60, 0.5)), when("FX-AFTER", text("Back after the interrupt."))
    )
    s.tui.prompt("stream slowly FX-SLOW")
    s.model.wait_streaming(min_deltas=3, timeout=60)
    s.tui.wait_pane(r"word2")
    s.tui.send_keys("Escape")
    rollout = s.tui.wait_rollouts(1)[-1]
    s.tui.wait_for(rollout, lambda ls: events(ls, "turn_aborted"))
    s.tui.wait_pane(r"\? for shortcuts", settle=0.3)
    assert s.turn("and now FX-AFTER") == rollout
    return {"interrupt__esc_streaming": rollout}


def turn__failed_after_retries(s: Session) -> dict[str, Path]:
    """A model that answers 429, then one that answers 500, until Codex gives up: each turn ends
    in a task_complete with an error (and no error event)."""
    s.model.script.add(
        when("FX-429", api_error(429, "scripted rate limit")),
        when("FX-500", api_error(500, "scripted server error")),
    )
    for n, token in enumerate(("FX-429", "FX-500"), start=1):
        s.tui.prompt(f"please {token}")
        rollout = s.tui.wait_rollouts(1)[-1]
        s.tui.wait_for(rollout, lambda ls, n=n: len(events(ls, "task_complete")) >= n, timeout=120)
        s.tui.wait_pane(r"\? for shortcuts", settle=0.3)
    return {"turn__failed_after_retries": rollout}


def turn__usage_limit(s: Session) -> dict[str, Path]:
    """A plan's usage limit: a 429 `usage_limit_reached` with its reset, not retried."""
    s.model.script.add(when("FX-LIMIT", usage_limit(resets_in_s=3600, headers=False)))
    s.tui.prompt("please FX-LIMIT")
    rollout = s.tui.wait_rollouts(1)[-1]
    s.tui.wait_for(rollout, lambda ls: len(events(ls, "task_complete")) >= 1, timeout=120)
    s.tui.wait_pane(r"\? for shortcuts", settle=0.3)
    return {"turn__usage_limit": rollout}


def interrupt__esc_running_command(s: Session) -> dict[str, Path]:
    """Esc while a command runs (no approval asked): its output, to tell it from a decline."""
    s.model.script.add(when("FX-RUNNING", exec_command("sleep 20"), text("Slept.")))
    s.tui.prompt("run a long command FX-RUNNING")
    rollout = s.tui.wait_rollouts(1)[-1]
    s.tui.wait_for(rollout, lambda ls: any(p.get("name") == "exec_command" for p in _calls(ls)))
    time.sleep(2.0)  # the command runs (it yields only after 10 s)
    s.tui.send_keys("Escape")
    s.tui.wait_for(rollout, lambda ls: events(ls, "turn_aborted"))
    return {"interrupt__esc_running_command": rollout}


def _calls(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        e["payload"]
        for e in lines
        if e.get("type") == "response_item" and e.get("payload", {}).get("type") == "function_call"
    ]


def clear(s: Session) -> dict[str, Path]:
    s.model.script.add(when("FX-OLD", text("Before the clear.")), when("FX-NEW", text("After the clear.")))
    old = s.turn("first thread FX-OLD")
    s.tui.wait_pane(r"\? for shortcuts", settle=0.3)
    s.tui.send_literal("/clear")
    s.tui.wait_pane(r"/clear\s+clear the terminal", settle=0.3)
    s.tui.send_keys("Enter")
    s.tui.wait_pane(r"Ask Codex to do anything", settle=0.5)
    new = s.turn("second thread FX-NEW")
    assert new != old
    return {"clear__old_file": old, "clear__new_file": new}


SCENARIOS: dict[str, Callable[[Session], dict[str, Path]]] = {
    "prompt__text_reply": prompt__text_reply,
    "tool__exec_command": tool__exec_command,
    "approval__approved": approval__approved,
    "approval__esc": approval__esc,
    "interrupt__esc_streaming": interrupt__esc_streaming,
    "clear": clear,
    "interrupt__esc_running_command": interrupt__esc_running_command,
    "turn__failed_after_retries": turn__failed_after_retries,
    "turn__usage_limit": turn__usage_limit,
}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m compat.codex.capture_fixtures")
    p.add_argument("scenarios", nargs="*", help=f"any of {', '.join(SCENARIOS)} (default: all)")
    p.add_argument("--out", default=None, help="default: compat/codex/fixtures/<installed version>/")
    a = p.parse_args(argv)
    out = Path(a.out) if a.out else fixtures_dir(installed_version())
    unknown = set(a.scenarios) - set(SCENARIOS)
    if unknown:
        p.error(f"unknown scenarios: {', '.join(sorted(unknown))}")
    for name in a.scenarios or list(SCENARIOS):
        s = Session(name)
        try:
            for fixture, rollout in SCENARIOS[name](s).items():
                save(fixture, rollout, s.home, s.codex_home, s.wt, out)
        finally:
            s.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
