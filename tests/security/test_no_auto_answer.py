"""Case 10: lab never answers a trust or permission dialog for the operator.

Statically: every function that can reach a keystroke (tmux paste/send-keys, a recipe, a reply,
an answer, an interrupt) is on an operator's request path — a view that takes the request, the
one service it calls, the adapter method that service calls. Nothing that reads a signal (the
hook spool, the transcript, the watcher, the socket) reaches one. Lab cannot even *see* a trust
dialog: no production code reads the pane. Live: a Bash permission prompt in manual mode leaves
the run needs_input, offers the approval on the page, and the command stays unrun until a click."""

from __future__ import annotations

import ast
import importlib
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PRODUCTION = ["lab", "accounts", "runs", "auth_flows", "seeding", "providers"]
SINKS = {
    "send_keys",
    "paste",
    "_play",
    "answer_dialog",
    "dialog_answer",
    "run_reply",
    "run_interrupt",
    "run_return_to_prompt",
    "return_to_prompt",
    "reply",
    "interrupt",
}
# The generic core's part of the operator's request path: the services the views call, the TUI
# kit's protocols, and the test double. Each adapter names its own in
# compat/<package>/security.py (the manifest below).
GENERIC_KEY_SENDERS = {
    "providers/tui.py:TuiAdapter.reply",
    "providers/tui.py:TuiAdapter._deliver",
    "providers/tui.py:PastesAttachments.reply_with_attachments",
    "providers/tui.py:TuiAdapter.interrupt",
    "providers/tui.py:TuiAdapter.answer_dialog",
    "providers/testing.py:FakeProvider.reply",
    "providers/testing.py:FakeProvider.interrupt",
    "providers/testing.py:FakeProvider.answer_dialog",
    "runs/services.py:run_reply",
    "runs/services.py:run_interrupt",
    "runs/services.py:run_return_to_prompt",
    "runs/services.py:dialog_answer",
    # The operator's own message sent later: one they scheduled, or the "continue" they opted
    # into for a limit's reset. Only through run_reply, whose refusals keep it from answering
    # a dialog (runs/tests/test_schedule.py: it waits while a question or a permission is asked).
    "runs/schedule.py:send_one",
    "runs/schedule.py:tick",
    "runs/schedule.py:_loop",
}
# The TUI kit's signal readers (providers/tui.py), which every adapter standing on it uses.
GENERIC_SIGNAL_READERS = [
    "providers/tui.py:TuiAdapter.pending_dialog",
    "providers/tui.py:TuiAdapter.blocked_state",
    "providers/tui.py:TuiAdapter.spool_view",
    "providers/tui.py:TuiAdapter.sweep",
    "providers/tui.py:TuiAdapter.read_transcript",
    "providers/tui.py:TuiAdapter.locate_transcript",
]
GENERIC_SIGNAL_MODULES = [
    "providers/hookspool.py",
    "providers/hook_writer.py",
    "live/watcher.py",
    "runs/selectors.py",
    "live/consumers.py",
    "runs/transcripts.py",
    "live/frames.py",
]


@dataclass(frozen=True)
class Manifest:
    """One adapter's compat/<package>/security.py."""

    package: str
    key_senders: frozenset[str]
    signal_modules: tuple[str, ...]
    signal_readers: tuple[str, ...]
    pure_modules: frozenset[str]


def manifests(known: dict[str, str] | None = None) -> list[Manifest]:
    """Every registered provider's security manifest. An adapter without one fails here, by
    name: the guard cannot tell its request path from its signal readers without it."""
    from providers.known import KNOWN_PROVIDERS, package

    known = KNOWN_PROVIDERS if known is None else known
    out = []
    for provider_id in sorted(known):
        name = package(provider_id, known)
        try:
            module = importlib.import_module(f"compat.{name}.security")
        except ModuleNotFoundError as exc:
            raise AssertionError(
                f"{provider_id}: compat/{name}/security.py is missing; the no-auto-answer guard needs "
                "its KEY_SENDERS, SIGNAL_MODULES, SIGNAL_READERS and PURE_MODULES (docs/providers.md)"
            ) from exc
        out.append(
            Manifest(
                package=name,
                key_senders=frozenset(module.KEY_SENDERS),
                signal_modules=tuple(module.SIGNAL_MODULES),
                signal_readers=tuple(module.SIGNAL_READERS),
                pure_modules=frozenset(module.PURE_MODULES),
            )
        )
    return out


def allowed() -> set[str]:
    """The operator's request path, and nothing else, may reach a key."""
    return GENERIC_KEY_SENDERS.union(*(m.key_senders for m in manifests()))


def signal_modules() -> list[str]:
    return GENERIC_SIGNAL_MODULES + [path for m in manifests() for path in m.signal_modules]


def pure_modules() -> set[str]:
    return set().union(*(m.pure_modules for m in manifests()))


def _production_files() -> list[Path]:
    out = []
    for top in PRODUCTION:
        for path in sorted((REPO / top).rglob("*.py")):
            rel = path.relative_to(REPO).as_posix()
            if "/tests/" in rel or "/migrations/" in rel:
                continue
            out.append(path)
    return out


def _called_names(node: ast.AST) -> set[str]:
    names = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call):
            func = sub.func
            if isinstance(func, ast.Attribute):
                names.add(func.attr)
            elif isinstance(func, ast.Name):
                names.add(func.id)
            # sync_to_async(services.run_reply)(...) and the like: the wrapped callable counts
            for arg in sub.args:
                if isinstance(arg, ast.Attribute):
                    names.add(arg.attr)
                elif isinstance(arg, ast.Name):
                    names.add(arg.id)
    return names


def _functions() -> dict[str, tuple[ast.FunctionDef | ast.AsyncFunctionDef, set[str]]]:
    out = {}
    for path in _production_files():
        rel = path.relative_to(REPO).as_posix()
        tree = ast.parse(path.read_text())
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                out[f"{rel}:{node.name}"] = (node, _called_names(node))
            elif isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                        out[f"{rel}:{node.name}.{item.name}"] = (item, _called_names(item))
    return out


def _reaching_a_key() -> set[str]:
    """Every function that calls a sink, or (by name, over-approximating) one that does."""
    functions = _functions()
    reach: set[str] = set()
    names = set(SINKS)
    while True:
        new = {q for q, (_node, called) in functions.items() if called & names} - reach
        if not new:
            return reach
        reach |= new
        names |= {q.rsplit(":", 1)[1].rsplit(".", 1)[-1] for q in new}


def test_the_data_only_modules_cannot_send_anything():
    # Recipes are data: `recipes.paste(text)` builds an Op; only the adapter's player sends one.
    pure = pure_modules()
    assert pure, "the Claude Code adapter's recipes, at least"
    for rel in sorted(pure):
        tree = ast.parse((REPO / rel).read_text())
        imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
        imported |= {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        imported |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        assert not {"Tmux", "providers.tmux", "subprocess"} & imported, rel


def test_every_registered_adapter_has_a_security_manifest_that_names_real_code():
    functions = _functions()
    for m in manifests():
        for qualname in sorted(m.key_senders | set(m.signal_readers)):
            assert qualname in functions, (
                f"compat/{m.package}/security.py names {qualname}, which does not exist"
            )
        for rel in sorted(set(m.signal_modules) | m.pure_modules):
            assert (REPO / rel).is_file(), f"compat/{m.package}/security.py names {rel}, which does not exist"
            assert rel.startswith(f"providers/{m.package}/"), f"{rel}: not in providers/{m.package}/"
        for qualname in m.key_senders:
            assert qualname.startswith(f"providers/{m.package}/"), (
                f"{qualname}: not in providers/{m.package}/"
            )


def test_an_adapter_without_a_manifest_fails_loudly():
    known = {"newcli": "providers.newcli_without_manifest.NewCliProvider"}
    missing = re.escape("compat/newcli_without_manifest/security.py is missing")
    with pytest.raises(AssertionError, match=missing):
        manifests(known)


def _is_request_handler(qualname: str, functions: dict[str, tuple[ast.AST, set[str]]]) -> bool:
    node, _ = functions[qualname]
    assert isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    # A view module's function whose first argument is the operator's request: the run pages'
    # views and the Changes page's review and ship views (runs/ship_views.py).
    return (
        qualname.split(":")[0] in ("runs/views.py", "runs/ship_views.py")
        and bool(node.args.args)
        and node.args.args[0].arg == "request"
    )


def test_only_the_operators_request_path_reaches_a_keystroke():
    reach = _reaching_a_key()
    senders, pure, functions = allowed(), pure_modules(), _functions()
    stray = sorted(
        q
        for q in reach
        if q not in senders and not _is_request_handler(q, functions) and q.split(":")[0] not in pure
    )
    assert stray == [], f"these can send keys without an operator's request: {stray}"
    assert {"runs/services.py:run_reply", "runs/services.py:dialog_answer"} <= reach  # the walk works


def test_nothing_that_reads_a_signal_reaches_a_keystroke():
    reach = _reaching_a_key()
    for module in signal_modules():
        assert not [q for q in reach if q.startswith(f"{module}:")], module
    functions = _functions()
    for reader in GENERIC_SIGNAL_READERS + [r for m in manifests() for r in m.signal_readers]:
        assert reader in functions and reader not in reach, reader


def test_the_consumers_call_nothing_that_sends_a_key():
    source = ast.unparse(ast.parse(Path(REPO / "live/consumers.py").read_text()))
    assert not (_called_names(ast.parse(source)) & SINKS)


# Frames a page never sends: each names something that would reach the terminal if the
# consumer acted on it.
NOT_A_HELLO = [
    {"type": "reply", "text": "rm -rf ~"},
    {"type": "answer", "tool_use_id": "toolu_1", "answers": [0]},
    {"type": "interrupt"},
    {"type": "dialog_answer", "answers": [["0"]]},
    {"type": "send_keys", "keys": ["Enter"]},
    {"text": "no type at all"},
]  # a frame that is no JSON object closes the socket instead (tests/security/test_ws_frames.py)


@pytest.mark.django_db(transaction=True)
async def test_the_socket_accepts_only_a_hello_and_a_hello_only_reads(fake_provider, git_repo, operator):
    from asgiref.sync import sync_to_async

    from providers.testing import fake_append
    from runs import services
    from tests.security.support import drain, frames_until, session_cookie, ws_open

    run = await sync_to_async(services.run_start)(
        provider_id="fake", repository=git_repo, branch="lab/socket-hello"
    )
    fake_append(run.transcript_path, kind="assistant_text", text="Shall I go on?")
    size = Path(run.transcript_path).stat().st_size
    ws = await ws_open(f"/ws/runs/{run.pk}/", await sync_to_async(session_cookie)(operator))
    try:
        for frame in NOT_A_HELLO:
            await ws.send_json_to(frame)
        assert await drain(ws) == []  # ignored: no answer, no error, no close
        await ws.send_json_to({"type": "hello", "epoch": "", "seq": -1})
        frames = await frames_until(ws, lambda f: '<div id="cursor"' in f)
        assert "Shall I go on?" in "".join(frames)  # the hello was answered: the socket still lives
        for frame in NOT_A_HELLO:  # after the hello, too
            await ws.send_json_to(frame)
        assert not [f for f in await drain(ws) if 'id="msg-' in f]
    finally:
        await ws.disconnect()
    assert fake_provider.sent == []  # nothing reached the terminal
    assert Path(run.transcript_path).stat().st_size == size  # and nothing was recorded


def test_no_production_code_reads_the_pane():
    # Never scrape (docs/architecture.md, principle 2): without reading the screen lab cannot
    # recognize a trust dialog, let alone answer it; the worktree is trusted only by the seeded config.
    for path in _production_files():
        rel = path.relative_to(REPO).as_posix()
        if rel == "providers/tmux.py":
            continue
        called = _called_names(ast.parse(path.read_text()))
        assert "capture" not in called or rel == "providers/claude_code/browser_capture.py", rel
        assert "capture-pane" not in path.read_text(), rel


def test_a_permission_request_is_offered_to_the_operator_not_answered():
    from providers.claude_code.spool import fold
    from providers.schema import DialogKind

    def event(n: int, name: str, **fields: object) -> dict[str, object]:
        return {"hook_event_name": name, "_spool_name": f"{n:020d}-1.json", **fields}

    events = [
        event(1, "PreToolUse", tool_name="Bash", tool_use_id="toolu_b", tool_input={"command": "rm -rf /"}),
        event(2, "PermissionRequest", tool_name="Bash", tool_input={"command": "rm -rf /"}),
        event(
            3, "Notification", notification_type="permission_prompt", message="Claude needs your permission"
        ),
    ]
    view = fold(events)
    # A dialog the page offers (only an operator's POST answers it: the static tests above);
    # without a PreToolUse to pair with, needs_input and the attach command instead.
    assert view.dialog is not None and view.dialog.kind == DialogKind.APPROVAL
    assert view.dialog.body == "rm -rf /"
    bare = fold([events[1], events[2]])
    assert bare.dialog is None and bare.blocked and bare.blocked_tool == "Bash"


@pytest.mark.django_db
def test_a_blocked_run_shows_needs_input_and_the_attach_command(authed_client, fake_provider, git_repo):
    from pathlib import Path as P

    from runs import services

    run = services.run_start(provider_id="fake", repository=git_repo, branch="lab/blocked")
    P(run.transcript_path + ".blocked").touch()
    body = authed_client.get(f"/runs/{run.pk}/").content.decode()
    assert 'data-state="needs_input"' in body
    assert run.attach_command.replace(">", "&gt;") in body or run.attach_command in body
    assert '<form class="dialog' not in body
    assert fake_provider.sent == []
