# ruff: noqa: E501  (benchmark tables and fixture-shaped literals read better unwrapped)
"""Shared parts of the benchmarks: an isolated lab environment, Claude Code 2.1.328-shaped
transcript lines, a daphne subprocess, a minimal RFC 6455 client, and percentile helpers.

Every benchmark runs in its own process (bench/__main__.py starts them), because lab's settings
are read once at import time and each benchmark wants its own data dir / database / socket.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import random
import re
import resource
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

from compat.claude_code.home import fixtures_dir

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = fixtures_dir()  # the pinned version's captures
PY = sys.executable

# ----------------------------------------------------------------------------------------
# environment


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def lab_env(tmp: Path, port: int | None = None, **extra: str) -> dict[str, str]:
    """The environment a lab process of this benchmark runs with (set in os.environ too)."""
    port = port or free_port()
    env = {
        "DJANGO_SETTINGS_MODULE": "lab.settings",
        "LAB_DATA_DIR": str(tmp / "data"),
        "LAB_BIND": f"127.0.0.1:{port}",
        "LAB_TMUX_SOCKET": f"labbench-{os.getpid()}",
        "LAB_AGENT_HOME": str(tmp / "agent-home"),
        "LAB_PROVIDERS_ENABLED": "claude-code",
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    env.update(extra)
    os.environ.update(env)
    return env


def django_setup(migrate: bool = True) -> None:
    import django

    sys.path.insert(0, str(ROOT))
    django.setup()
    if migrate:
        from django.core.management import call_command

        call_command("migrate", "--noinput", verbosity=0)


def make_operator_cookie() -> str:
    """An operator user and a logged-in session created in the DB; returns the Cookie value."""
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY, get_user_model
    from django.contrib.sessions.backends.db import SessionStore

    user, _ = get_user_model().objects.get_or_create(
        username="bench-operator", defaults={"is_staff": True, "is_superuser": True}
    )
    store = SessionStore()
    store[SESSION_KEY] = str(user.pk)
    store[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
    store[HASH_SESSION_KEY] = user.get_session_auth_hash()
    store.save()
    return f"sessionid={store.session_key}"


def make_live_run(i: int, tmp: Path, *, sleeper: bool = True) -> tuple[int, Path]:
    """A claude-code run with a transcript where the adapter expects it and (optionally) a tmux
    session holding a dummy `sleep`, so the run counts as live. Returns (run id, path)."""
    from django.conf import settings

    from providers.claude_code.transcript import project_dir_name
    from runs import services
    from runs.models import Run

    worktree = tmp / "worktrees" / f"wt-{i}"
    worktree.mkdir(parents=True, exist_ok=True)
    session_id = str(uuid.uuid4())
    path = Path(settings.LAB_AGENT_HOME) / ".claude" / "projects" / project_dir_name(str(worktree))
    path.mkdir(parents=True, exist_ok=True)
    path = path / f"{session_id}.jsonl"
    path.write_bytes(user_line("start the bench", session_id) + b"\n")
    name = f"bench-{os.getpid()}-{i}"
    run = Run.objects.create(
        name=f"bench-{i}",
        provider_id="claude-code",
        repository=str(worktree),
        worktree=str(worktree),
        branch=f"lab/bench-{i}",
        tmux_socket=settings.LAB_TMUX_SOCKET,
        tmux_session=name,
        session_id=session_id,
        transcript_path=str(path),
    )
    spool = services.spool_dir(run)
    spool.mkdir(parents=True, exist_ok=True)  # provider.spawn makes it
    # The CLI's SessionStart, through lab's real hook command: without it the run would stay
    # "starting" and every wake would re-read the spool looking for it (compat §6).
    hook = subprocess.run(
        [sys.executable, "-S", str(ROOT / "providers" / "hook_writer.py"), str(spool)],
        input=json.dumps({
            "hook_event_name": "SessionStart", "source": "startup", "session_id": session_id,
            "transcript_path": str(path), "cwd": str(worktree),
        }).encode(),
        check=True,
    )  # fmt: skip
    assert hook.returncode == 0
    if sleeper:
        tmux(settings.LAB_TMUX_SOCKET, "new-session", "-d", "-s", name, "sleep", "100000")
    return run.pk, path


def tmux(socket_name: str, *args: str) -> None:
    subprocess.run(["tmux", "-L", socket_name, "-f", "/dev/null", *args], check=True, capture_output=True)


def kill_tmux_server(socket_name: str) -> None:
    subprocess.run(["tmux", "-L", socket_name, "kill-server"], capture_output=True, check=False)


class Daphne:
    """lab as users run it: `manage.py serve` (daphne) in a subprocess, or a given argv."""

    def __init__(self, env: dict[str, str], argv: list[str] | None = None, log: Path | None = None) -> None:
        self.env = {**os.environ, **env}
        self.port = int(env["LAB_BIND"].rsplit(":", 1)[1])
        self.argv = argv or [PY, str(ROOT / "manage.py"), "serve"]
        self.log = log or Path(tempfile.mkstemp(prefix="lab-bench-daphne-", suffix=".log")[1])
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 30.0) -> Daphne:
        out = open(self.log, "ab")  # noqa: SIM115
        self.proc = subprocess.Popen(self.argv, env=self.env, cwd=ROOT, stdout=out, stderr=out)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"daphne exited: {self.log.read_text()[-2000:]}")
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port), 0.2):
                return self
            time.sleep(0.05)
        raise RuntimeError("daphne did not listen in time")

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


# ----------------------------------------------------------------------------------------
# Claude Code 2.1.328-shaped lines (field sets copied from compat/claude_code/fixtures)

_SESSION = "00000000-0000-4000-8000-000000000000"
_COMMON = {
    "userType": "external",
    "entrypoint": "cli",
    "cwd": "/work/wt",
    "version": "2.1.328",
    "gitBranch": "main",
}
_USAGE = {
    "input_tokens": 100, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": 10,
    "output_tokens_details": {"thinking_tokens": 0},
    "server_tool_use": {"web_search_requests": 0, "web_fetch_requests": 0}, "service_tier": "standard",
    "cache_creation": {"ephemeral_1h_input_tokens": 0, "ephemeral_5m_input_tokens": 0}, "inference_geo": "",
    "iterations": [], "speed": "standard", "fallback_credit": None,
}  # fmt: skip


def _stamp() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())


def _dumps(obj: object) -> bytes:
    return json.dumps(obj, separators=(", ", ": ")).encode()


def user_line(text: str, session: str = _SESSION, parent: str | None = None) -> bytes:
    return _dumps({
        "parentUuid": parent, "isSidechain": False, "promptId": str(uuid.uuid4()), "type": "user",
        "message": {"role": "user", "content": text}, "uuid": str(uuid.uuid4()), "timestamp": _stamp(),
        "permissionMode": "default", "origin": {"kind": "human"}, "promptSource": "typed", "turnOrigin": "human",
        "sessionId": session, **_COMMON,
    })  # fmt: skip


def assistant_line(
    blocks: list[dict[str, object]],
    *,
    stop: str | None = "end_turn",
    session: str = _SESSION,
    index: int = 0,
    message_id: str | None = None,
) -> bytes:
    return _dumps({
        "parentUuid": str(uuid.uuid4()), "isSidechain": False,
        "message": {
            "id": message_id or f"msg_{uuid.uuid4().hex[:24]}", "type": "message", "role": "assistant",
            "model": "claude-opus-5-5", "content": blocks, "stop_reason": stop, "stop_sequence": None,
            "usage": _USAGE, "stop_details": None,
        },
        "apiBlockIndex": index, "requestId": f"req_{uuid.uuid4().hex[:24]}", "requestRef": str(uuid.uuid4()),
        "requestedModel": "claude-opus-5-5", "promptCacheRequested": "5m", "type": "assistant",
        "uuid": str(uuid.uuid4()), "timestamp": _stamp(), "effort": "medium", "perTurnEffort": "medium",
        "madeBy": "model", "session_id": session, "sessionId": session, **_COMMON,
    })  # fmt: skip


def tool_result_line(tool_use_id: str, content: str, session: str = _SESSION) -> bytes:
    return _dumps({
        "parentUuid": str(uuid.uuid4()), "isSidechain": False, "promptId": str(uuid.uuid4()), "type": "user",
        "message": {"role": "user", "content": [
            {"tool_use_id": tool_use_id, "type": "tool_result", "content": content, "is_error": False}]},
        "uuid": str(uuid.uuid4()), "timestamp": _stamp(),
        "toolUseResult": {"stdout": content, "stderr": "", "interrupted": False, "isImage": False},
        "sandboxed": False, "session_id": session, "sessionId": session, **_COMMON,
    })  # fmt: skip


def turn_duration_line(session: str = _SESSION) -> bytes:
    return _dumps({
        "parentUuid": str(uuid.uuid4()), "isSidechain": False, "type": "system", "subtype": "turn_duration",
        "durationMs": 2902, "messageCount": 15, "timestamp": _stamp(), "uuid": str(uuid.uuid4()),
        "isMeta": False, "sessionId": session, **_COMMON,
    })  # fmt: skip


def _fixture_bookkeeping() -> dict[str, bytes]:
    """The real big bookkeeping lines (api-request-shape ≈ 30 KB, the prompt-snapshot
    attachment ≈ 50 KB, …), one of each kind, taken verbatim from the fixtures."""
    out: dict[str, bytes] = {}
    for f in sorted(FIXTURES.glob("*.jsonl")):
        for raw in f.read_bytes().splitlines():
            e = json.loads(raw)
            kind = e.get("type")
            if kind == "attachment":
                kind = f"attachment:{e['attachment'].get('type')}"
            if kind in ("user", "assistant", "system", "queue-operation"):
                continue
            if len(raw) > len(out.get(kind, b"")):
                out[kind] = raw
    return out


BOOKKEEPING = _fixture_bookkeeping()
BIG_SHAPE = BOOKKEEPING["api-request-shape"]


def text_block(text: str) -> dict[str, object]:
    return {"type": "text", "text": text}


_WORDS = [
    "the",
    "watcher",
    "reads",
    "only",
    "appended",
    "bytes",
    "and",
    "the",
    "consumer",
    "pulls",
    "its",
    "own",
    "gap",
    "from",
    "the",
    "transcript",
    "so",
    "nothing",
    "is",
    "sent",
    "twice",
    "while",
    "the",
    "index",
    "keeps",
    "checkpoints",
    "every",
    "few",
    "hundred",
    "messages",
]


def prose(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(words))


def synthetic_turns(rng: random.Random, *, tools: int, bookkeeping: bool) -> Iterator[bytes]:
    """One turn as Claude Code 2.1.328 writes it: the per-turn bookkeeping (when asked), the
    prompt, `tools` tool_use/tool_result pairs, the final text and turn_duration."""
    session = _SESSION
    if bookkeeping:
        for kind in ("mode", "permission-mode", "file-history-snapshot", "attachment:environment"):
            if kind in BOOKKEEPING:
                yield BOOKKEEPING[kind]
    yield user_line(prose(rng, 12), session)
    if bookkeeping:
        for kind, raw in BOOKKEEPING.items():
            if kind not in ("mode", "permission-mode", "file-history-snapshot", "attachment:environment"):
                yield raw
    for _ in range(tools):
        mid = f"msg_{uuid.uuid4().hex[:24]}"
        tid = f"toolu_{uuid.uuid4().hex[:24]}"
        yield assistant_line([text_block(prose(rng, 20))], stop="tool_use", message_id=mid, index=0)
        yield assistant_line(
            [{"type": "tool_use", "id": tid, "name": "Bash", "input": {"command": f"ls {prose(rng, 3)}"}}],
            stop="tool_use", message_id=mid, index=1,
        )  # fmt: skip
        yield tool_result_line(tid, prose(rng, 40))
    yield assistant_line([text_block(prose(rng, 60))], stop="end_turn")
    yield turn_duration_line(session)


def write_transcript(
    path: Path,
    *,
    target_bytes: int = 0,
    target_messages: int = 0,
    tools: int = 6,
    bookkeeping_every: int = 1,
    seed: int = 1,
) -> dict[str, int]:
    """A synthetic transcript of at least target_bytes / target_messages (3 messages per tool
    call + 2 per turn). Returns its size and message count as the writer intended them."""
    rng = random.Random(seed)
    size = messages = turns = 0
    with open(path, "wb") as f:
        while (target_bytes and size < target_bytes) or (target_messages and messages < target_messages):
            chunk = b"".join(
                raw + b"\n"
                for raw in synthetic_turns(rng, tools=tools, bookkeeping=turns % bookkeeping_every == 0)
            )
            f.write(chunk)
            size += len(chunk)
            messages += 3 * tools + 2
            turns += 1
    return {"bytes": size, "messages": messages, "turns": turns}


# ----------------------------------------------------------------------------------------
# markers: the append's monotonic timestamp travels inside the message text

MARK_RE = re.compile(rb"bmkR(\d+)N(\d+)T(\d+)Z")


def marker(run: int, n: int) -> str:
    return f"bmkR{run}N{n}T{time.monotonic_ns()}Z"


def append_marker(path: Path, run: int, n: int, *, with_bookkeeping: bool = False) -> None:
    """One Claude Code assistant entry carrying a timestamped marker (every 10th append also
    writes a 30 KB api-request-shape line first, as the CLI does before each request)."""
    data = (BIG_SHAPE + b"\n") if with_bookkeeping else b""
    data += assistant_line([text_block(f"progress {marker(run, n)} done")]) + b"\n"
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


# ----------------------------------------------------------------------------------------
# a minimal websocket client (RFC 6455; text frames, ping/pong, close)


class WS:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    @classmethod
    async def connect(cls, port: int, path: str, *, origin: str, cookie: str) -> WS:
        reader, writer = await asyncio.open_connection("127.0.0.1", port, limit=2**24)
        key = base64.b64encode(os.urandom(16)).decode()
        writer.write(
            (
                f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
                f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
                f"Origin: {origin}\r\nCookie: {cookie}\r\n\r\n"
            ).encode()
        )
        head = await reader.readuntil(b"\r\n\r\n")
        if b" 101 " not in head.split(b"\r\n", 1)[0]:
            raise ConnectionError(f"websocket refused: {head[:200]!r}")
        return cls(reader, writer)

    def _frame(self, op: int, payload: bytes) -> bytes:
        mask = os.urandom(4)
        n = len(payload)
        head = bytes([0x80 | op])
        if n < 126:
            head += bytes([0x80 | n])
        elif n < 65536:
            head += bytes([0x80 | 126]) + struct.pack("!H", n)
        else:
            head += bytes([0x80 | 127]) + struct.pack("!Q", n)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        return head + mask + masked

    async def send_json(self, obj: object) -> None:
        self.writer.write(self._frame(1, json.dumps(obj).encode()))
        await self.writer.drain()

    async def recv(self) -> bytes | None:
        """The next text message (bytes), None when the server closed."""
        parts: list[bytes] = []
        while True:
            b0, b1 = await self.reader.readexactly(2)
            op, n = b0 & 0x0F, b1 & 0x7F
            if n == 126:
                (n,) = struct.unpack("!H", await self.reader.readexactly(2))
            elif n == 127:
                (n,) = struct.unpack("!Q", await self.reader.readexactly(8))
            payload = await self.reader.readexactly(n)
            if op == 9:
                self.writer.write(self._frame(10, payload))
                continue
            if op == 10:
                continue
            if op == 8:
                return None
            parts.append(payload)
            if b0 & 0x80:
                return b"".join(parts)

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            self.writer.write(self._frame(8, struct.pack("!H", 1000)))
            await self.writer.drain()
            self.writer.close()


# ----------------------------------------------------------------------------------------
# numbers


def pct(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    k = (len(s) - 1) * p / 100
    lo = int(k)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def maxrss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def emit(result: dict[str, object]) -> None:
    """A benchmark's result: one JSON line on stdout, prefixed so logs can share the stream."""
    print("BENCH-RESULT " + json.dumps(result), flush=True)


@contextlib.contextmanager
def tmpdir(prefix: str) -> Iterator[Path]:
    d = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)
