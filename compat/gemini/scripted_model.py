"""A scripted, offline stand-in for the Gemini API as Gemini CLI uses it.

Stdlib only (no Django). Tests point the real ``gemini`` at it with ``GOOGLE_GEMINI_BASE_URL``
(plain http is accepted for loopback only) and an API key (compat.gemini.home).

* ``POST /v1beta/models/<model>:streamGenerateContent?alt=sse``: a conversation turn, SSE
  lines ``data: {"candidates": [...], "usageMetadata": {...}}``;
* ``POST /v1beta/models/<model>:generateContent`` with a JSON response type (the model
  router's classifier when the model is "Auto", the next-speaker check): a side request, answered
  with a small JSON object that never consumes the script;
* ``:countTokens``: a token count; anything else: ``200 {}``, logged.

Turn kinds: :func:`text`, :func:`function_call` (any tool: ``run_shell_command``,
``replace``/``write_file``, ``ask_user``, ``exit_plan_mode``), :func:`shell`, :func:`slow_text`
(one SSE line per word with a delay; it stops when the client hangs up, as on Esc),
:func:`api_error` (an HTTP error the CLI may retry), :func:`dynamic`.

CLI: ``python -m compat.gemini.scripted_model --port 8789 --script demo``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from compat import scripted
from compat.scripted import Rule, chunks, when, words

__all__ = [
    "Rule",
    "Script",
    "ScriptedModel",
    "Turn",
    "api_error",
    "ask_user",
    "demo_script",
    "dynamic",
    "exit_plan_mode",
    "function_call",
    "function_responses",
    "last_human_text",
    "question",
    "shell",
    "slow_text",
    "text",
    "when",
    "write_plan",
]

# Text the CLI itself puts in a user turn (never what the operator typed).
SYNTHETIC_PREFIXES = ("<session_context>", "<state_snapshot>", "This is the Gemini CLI")


@dataclass
class Turn:
    """One scripted response: ``parts`` in the API's shape (``{"text": …}`` or
    ``{"functionCall": {"name", "args"}}``); ``delay_s`` > 0 streams text one word per event."""

    parts: list[dict[str, Any]] = field(default_factory=list)
    delay_s: float = 0.0
    build: Callable[[dict[str, Any]], Turn] | None = None
    label: str = ""
    error: tuple[int, str] | None = None

    def resolve(self, body: dict[str, Any]) -> Turn:
        if self.build is not None:
            return self.build(body).resolve(body)
        return self


def text(s: str) -> Turn:
    return Turn(parts=[{"text": s}], label=f"text:{s[:30]}")


def function_call(name: str, args: dict[str, Any], text: str | None = None) -> Turn:
    parts: list[dict[str, Any]] = [{"text": text}] if text else []
    parts.append({"functionCall": {"name": name, "args": args}})
    return Turn(parts=parts, label=f"function_call:{name}")


def shell(command: str, description: str = "Run a command the script asked for") -> Turn:
    """The shell tool (``run_shell_command``): asks for approval in the default mode."""
    return function_call("run_shell_command", {"command": command, "description": description})


def question(
    question: str = "Which color do you prefer?",
    header: str = "Color",
    options: tuple[str, ...] = ("Red", "Green", "Blue"),
    *,
    kind: str = "choice",
    multi: bool = False,
) -> dict[str, Any]:
    """One question of the ask_user tool: a choice (options, multi-select), "text" or "yesno"."""
    q: dict[str, Any] = {"question": question, "header": header, "type": kind}
    if kind == "choice":
        q["options"] = [{"label": o, "description": f"The {o.lower()} option"} for o in options]
        if multi:
            q["multiSelect"] = True
    return q


def ask_user(
    question_text: str = "Which color do you prefer?",
    header: str = "Color",
    options: tuple[str, ...] = ("Red", "Green", "Blue"),
    *,
    questions: list[dict[str, Any]] | None = None,
) -> Turn:
    """The question tool: one choice question with labelled options, or `questions`."""
    asked = questions if questions is not None else [question(question_text, header, options)]
    return function_call("ask_user", {"questions": asked})


def exit_plan_mode(plan_filename: str) -> Turn:
    return function_call("exit_plan_mode", {"plan_filename": plan_filename})


# In plan mode the CLI tells the model where plans go: "... in the plans directory: <dir>/".
PLANS_DIR = re.compile(r"plans directory: (/[^\s`'\"]+?/plans)/")


def write_plan(plan_filename: str, content: str) -> Turn:
    """Plan mode's write_file of a plan into the session's plans folder, read from the request
    (the folder is named by the session's id, which the script cannot know in advance)."""

    def build(body: dict[str, Any]) -> Turn:
        found = PLANS_DIR.search(json.dumps(body))
        folder = found.group(1) if found else "/no-plans-directory-in-the-request"
        return function_call("write_file", {"file_path": f"{folder}/{plan_filename}", "content": content})

    return dynamic(build, label=f"write_plan:{plan_filename}")


def slow_text(words: int = 12, delay_s: float = 1.0) -> Turn:
    return Turn(
        parts=[{"text": "".join(f"word{i} " for i in range(words))}], delay_s=delay_s, label="slow_text"
    )


def dynamic(fn: Callable[[dict[str, Any]], Turn], label: str = "dynamic") -> Turn:
    return Turn(build=fn, label=label)


def api_error(status: int = 500, message: str = "scripted failure") -> Turn:
    return Turn(error=(status, message), label=f"error:{status}")


# --------------------------------------------------------------------------------------------
# Request reading


def _contents(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for c in body.get("contents") or [] if isinstance(c, dict)]


def function_responses(body: dict[str, Any]) -> list[dict[str, Any]]:
    """Every ``functionResponse`` the request carries, oldest first."""
    return [
        p["functionResponse"]
        for c in _contents(body)
        for p in c.get("parts") or []
        if isinstance(p, dict) and isinstance(p.get("functionResponse"), dict)
    ]


def continues(body: dict[str, Any]) -> bool:
    """The newest user turn carries a tool's result (the model's call is answered)."""
    contents = _contents(body)
    if not contents:
        return False
    return any(isinstance(p, dict) and "functionResponse" in p for p in contents[-1].get("parts") or [])


def last_human_text(body: dict[str, Any]) -> str:
    """The newest human prompt, or "" when the request continues a turn."""
    contents = _contents(body)
    if not contents or continues(body):
        return ""
    last = contents[-1]
    if last.get("role") != "user":
        return ""
    # The first prompt of a session shares its turn with the CLI's <session_context> part.
    said = [
        p["text"].strip()
        for p in last.get("parts") or []
        if isinstance(p, dict)
        and isinstance(p.get("text"), str)
        and not p["text"].lstrip().startswith(SYNTHETIC_PREFIXES)
    ]
    return said[-1] if said else ""


def is_json_request(body: dict[str, Any]) -> bool:
    config = body.get("generationConfig") or body.get("generation_config") or {}
    return isinstance(config, dict) and config.get("responseMimeType") == "application/json"


def side_json(body: dict[str, Any]) -> dict[str, Any]:
    """A JSON-mode side request's answer: the router's pick, the next-speaker check's verdict."""
    config = body.get("generationConfig") or {}
    schema = json.dumps(config.get("responseJsonSchema") or config.get("responseSchema") or {})
    if "next_speaker" in schema:
        return {"reasoning": "The model's turn is complete.", "next_speaker": "user"}
    return {"reasoning": "Simple request.", "model_choice": "flash"}


class Script(scripted.Script[Turn]):
    prompt = staticmethod(last_human_text)
    continues = staticmethod(continues)
    text_turn = staticmethod(text)


def demo_script() -> Script:
    def echo(body: dict[str, Any]) -> Turn:
        said = last_human_text(body)
        if not said and continues(body):
            return text("Done.")
        return text(f"You said: {said}")

    return Script(
        when("RUN", shell("echo hello from gemini")),
        when("WRITE", shell("echo gem-tool > gout.txt")),
        when("ASK", ask_user()),
        when("SLOW", slow_text(20, 1.0)),
        reply=echo,
    )


SCRIPTS: dict[str, Callable[[], Script]] = {"demo": demo_script, "ok": Script}


# --------------------------------------------------------------------------------------------
# HTTP server


def _usage() -> dict[str, Any]:
    return {"promptTokenCount": 100, "candidatesTokenCount": 10, "totalTokenCount": 110}


def _chunk(parts: list[dict[str, Any]], finish: bool) -> bytes:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finish:
        candidate["finishReason"] = "STOP"
    data = {"candidates": [candidate], "usageMetadata": _usage(), "modelVersion": "gemini-2.5-flash"}
    return f"data: {json.dumps(data)}\r\n\r\n".encode()


class _Handler(scripted.ScriptedHandler):
    def route(self, body: Any, entry: dict[str, Any]) -> None:
        path = urlsplit(self.path).path
        if self.command != "POST" or not isinstance(body, dict):
            entry["kind"] = "other"
            self._json({})
        elif path.endswith(":streamGenerateContent") and not is_json_request(body):
            self._stream(body, entry)
        elif path.endswith((":generateContent", ":streamGenerateContent")):
            entry["kind"] = "side"
            answer = json.dumps(side_json(body)) if is_json_request(body) else self.server.model.side_text
            reply = {
                "candidates": [
                    {"content": {"role": "model", "parts": [{"text": answer}]}, "finishReason": "STOP"}
                ],
                "usageMetadata": _usage(),
            }
            if path.endswith(":streamGenerateContent"):
                with self.streaming(entry) as w:
                    w.write(f"data: {json.dumps(reply)}\r\n\r\n".encode())
            else:
                self._json(reply)
        elif path.endswith(":countTokens"):
            entry["kind"] = "other"
            self._json({"totalTokens": 100})
        else:
            entry["kind"] = "other"
            self._json({})

    def _stream(self, body: dict[str, Any], entry: dict[str, Any]) -> None:
        model = self.server.model
        entry["kind"] = "turn"
        turn = model.script.next_turn(body).resolve(body)
        entry["reply"] = turn.label
        if turn.error is not None:
            status, message = turn.error
            entry["error_status"] = status
            self._json({"error": {"code": status, "message": message, "status": "INTERNAL"}}, status=status)
            return
        with self.streaming(entry) as w:
            events: list[list[dict[str, Any]]] = []
            for part in turn.parts:
                if "text" in part:
                    pieces = words(part["text"]) if turn.delay_s > 0 else chunks(part["text"], 3)
                    events += [[{"text": p}] for p in pieces]
                else:
                    events.append([part])
            for i, parts in enumerate(events):
                model.pause(turn.delay_s if "text" in parts[0] else 0)
                w.write(_chunk(parts, finish=i == len(events) - 1))
                w.flush()
                model._bump(entry, "deltas_sent")
            if not events:
                w.write(_chunk([{"text": ""}], finish=True))


class ScriptedModel(scripted.ScriptedModel[Script]):
    """``ScriptedModel(script).start()`` -> ``.url`` (GOOGLE_GEMINI_BASE_URL), ``.requests``."""

    handler = _Handler
    script_class = Script
    side_text = "ok"
    keep_headers = ("x-goog-api-key", "user-agent", "x-goog-api-client")
    thread_name = "gemini-scripted-model"
    log_prefix = "gemini scripted_model: "

    def wait_function_response(self, name: str | None = None, timeout: float = 30.0) -> dict[str, Any]:
        """The first ``functionResponse`` the CLI sent back (for tool ``name`` if given)."""

        def pred(r: dict[str, Any]) -> bool:
            body = r.get("body") if r.get("kind") == "turn" else None
            return isinstance(body, dict) and any(
                name is None or f.get("name") == name for f in function_responses(body)
            )

        req = self.wait_for_request(pred, timeout)
        return next(f for f in function_responses(req["body"]) if name is None or f.get("name") == name)


def main(argv: list[str] | None = None) -> int:
    return scripted.serve(
        argv,
        prog="python -m compat.gemini.scripted_model",
        port=8789,
        scripts=SCRIPTS,
        model=ScriptedModel,
        banner=lambda script, url: f"gemini scripted model ({script}) on {url} (GOOGLE_GEMINI_BASE_URL)",
    )


if __name__ == "__main__":
    raise SystemExit(main())
