"""Browser tests: lab served by daphne in a subprocess, as users run it, driven by Debian's
Chromium through Playwright, with the real Claude Code TUI answering from the scripted model.

The server has its own data dir (its own SQLite, whatever DATABASE_URL the suite runs with),
its own tmux socket and a private agent HOME; the scripted model runs in this process so a
test can script a turn and watch the stream. Nothing here downloads a browser.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect, sync_playwright

from compat.claude_code.home import prepare_home
from compat.claude_code.login_proxy import Behaviour, ClaudeLoginProxy, claude_certs
from compat.claude_code.scripted_model import Script, ScriptedModel

REPO_ROOT = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ARTIFACTS = REPO_ROOT / "artifacts" / "browser"
OPERATOR, PASSWORD = "operator", "browser-test-password-" + uuid.uuid4().hex[:8]
# Generous: the real TUI starts in 1-11 s on a loaded 2-core box (compat NOTES-live.md).
LIVE_TIMEOUT_MS = 60_000
expect.set_options(timeout=LIVE_TIMEOUT_MS)

# Variables of the outer test run that must not leak into the server: it chooses its own DB,
# channel layer, origin and provider set.
_SERVER_ENV_DROP = (
    "DATABASE_URL",
    "REDIS_URL",
    "LAB_ORIGIN",
    "LAB_EXTRA_HOSTS",
    "LAB_ALLOW_REMOTE",
    "LAB_PROVIDERS_ENABLED",
    "SECRET_KEY",
    "DEBUG",
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _git_repo(path: Path) -> Path:
    path.mkdir(parents=True)
    git = ["git", "-c", "user.name=lab-test", "-c", "user.email=lab-test@example.invalid"]
    subprocess.run([*git, "init", "-q", "-b", "main"], cwd=path, check=True)
    (path / "README.md").write_text("# browser test repo\n")
    subprocess.run([*git, "add", "README.md"], cwd=path, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "initial"], cwd=path, check=True)
    return path


class DropProxy:
    """A loopback TCP proxy in front of daphne, the browser's only way to lab, so a test can
    drop the network: `cut()` ends every connection without a websocket close frame (the
    browser sees 1006, the abnormal close htmx-ws reconnects on) and refuses new ones until
    `restore()`. Chromium's offline emulation (`context.set_offline`) does not close an open
    websocket, and JS can only close one normally (1000), which htmx-ws never reconnects."""

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.listener.getsockname()[1])
        self.blocked = threading.Event()
        self.cuts = 0
        self.lock = threading.Lock()
        self.open: set[socket.socket] = set()
        threading.Thread(target=self._accept, name="drop-proxy", daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return  # closed
            if self.blocked.is_set():
                client.close()
                continue
            try:
                upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
            except OSError:
                client.close()
                continue
            with self.lock:
                self.open |= {client, upstream}
            done = [0]
            for src, dst in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(src, dst, done), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, done: list[int]) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
            dst.shutdown(socket.SHUT_WR)  # pass a half-close on
        except OSError:
            self._drop(src, dst)
            return
        with self.lock:
            done[0] += 1
            both = done[0] == 2
        if both:
            self._drop(src, dst)

    def _drop(self, *socks: socket.socket) -> None:
        for s in socks:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()
            with self.lock:
                self.open.discard(s)

    def cut(self) -> None:
        self.blocked.set()
        self.cuts += 1
        with self.lock:
            socks = list(self.open)
        self._drop(*socks)

    def restore(self) -> None:
        self.blocked.clear()

    def close(self) -> None:
        self.listener.close()
        self.cut()


@dataclass
class LabServer:
    url: str  # through the proxy: what the browser uses
    direct_url: str  # daphne itself: for a look at the server while the proxy is cut
    proxy: DropProxy
    repo: Path
    home: Path
    tmux_socket: str
    model: ScriptedModel
    log: Path

    def log_tail(self, n: int = 60) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-n:])

    def transcript_contains(self, needle: str) -> bool:
        """Whether any transcript under the agent HOME records `needle` (the file is the record)."""
        return any(
            needle in p.read_text(errors="replace")
            for p in (self.home / ".claude" / "projects").glob("*/*.jsonl")
        )


def _wait_http_200(url: str, proc: subprocess.Popen[bytes], log: Path, timeout: float = 60.0) -> None:
    """The server is up when it answers GET /login/ with 200 (or it died: say why)."""
    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"daphne exited with {proc.returncode}:\n{log.read_text(errors='replace')}")
        try:
            with urllib.request.urlopen(url, timeout=2) as resp:
                if resp.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"lab did not answer {url} in {timeout}s:\n{log.read_text(errors='replace')}")
        time.sleep(0.1)  # back-off between connection attempts, not a wait for an outcome


@pytest.fixture(scope="package")
def scripted() -> Iterator[ScriptedModel]:
    model = ScriptedModel(Script()).start()
    try:
        yield model
    finally:
        model.stop()


def _server_env(
    root: Path, port: int, origin: str, sock: str, home: Path, agent_env: dict[str, str]
) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _SERVER_ENV_DROP}
    env.update(
        DJANGO_SETTINGS_MODULE="lab.settings",
        LAB_DATA_DIR=str(root / "data"),
        LAB_BIND=f"127.0.0.1:{port}",
        LAB_ORIGIN=origin,
        LAB_TMUX_SOCKET=sock,
        LAB_AGENT_HOME=str(home),
        LAB_AGENT_ENV=json.dumps(
            {k: v for k, v in agent_env.items() if k not in ("HOME", "PATH", "TERM", "LANG")}
        ),
        DJANGO_SUPERUSER_PASSWORD=PASSWORD,
        PYTHONUNBUFFERED="1",
    )
    return env


@contextlib.contextmanager
def _daphne(
    root: Path, port: int, env: dict[str, str], sock: str
) -> Iterator[tuple[subprocess.Popen[bytes], Path]]:
    """Migrate, create the operator, serve lab with daphne on `port`; stop it and its tmux server
    afterwards. Yields (the daphne process, its log file)."""
    python = str(VENV_BIN / "python")
    manage = [python, "manage.py"]
    subprocess.run([*manage, "migrate", "--noinput", "-v0"], cwd=REPO_ROOT, env=env, check=True)
    subprocess.run(
        [*manage, "createsuperuser", "--noinput", "--username", OPERATOR, "--email", "op@lab.invalid"],
        cwd=REPO_ROOT,
        env=env,
        check=True,
        capture_output=True,
    )
    log = root / "daphne.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [str(VENV_BIN / "daphne"), "-b", "127.0.0.1", "-p", str(port), "lab.asgi:application"],
            cwd=REPO_ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        _wait_http_200(f"http://127.0.0.1:{port}/login/", proc, log)
        yield proc, log
    finally:
        stopping = time.monotonic()
        proc.terminate()
        try:
            # A short grace: with a live run's watcher, daphne does not exit on SIGTERM (an idle
            # anyio worker thread of watchfiles keeps the interpreter up; see the report).
            proc.wait(timeout=3)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            print(f"daphne ignored SIGTERM for {time.monotonic() - stopping:.1f}s; killed")
        subprocess.run(["tmux", "-L", sock, "kill-server"], capture_output=True, check=False)
        # tmux may leave its socket file behind
        Path(os.environ.get("TMUX_TMPDIR", "/tmp"), f"tmux-{os.getuid()}", sock).unlink(missing_ok=True)
        if os.environ.get("LAB_BROWSER_SHOW_LOG"):
            print(log.read_text(errors="replace"))


@pytest.fixture(scope="package")
def lab_server(tmp_path_factory: pytest.TempPathFactory, scripted: ScriptedModel) -> Iterator[LabServer]:
    root = tmp_path_factory.mktemp("browser")
    repo = _git_repo(root / "repo")
    home = root / "agent-home"
    agent_env = prepare_home(home, repo, base_url=scripted.url)
    port = _free_port()
    proxy = DropProxy(port)
    sock = f"labbrowser-{os.getpid()}-{uuid.uuid4().hex[:6]}"
    # The browser reaches lab through the proxy: its pages' origin is the proxy's.
    env = _server_env(root, port, f"http://127.0.0.1:{proxy.port}", sock, home, agent_env)
    try:
        with _daphne(root, port, env, sock) as (_proc, log):
            yield LabServer(
                url=f"http://127.0.0.1:{proxy.port}",
                direct_url=f"http://127.0.0.1:{port}",
                proxy=proxy,
                repo=repo,
                home=home,
                tmux_socket=sock,
                model=scripted,
                log=log,
            )
    finally:
        proxy.close()


# Package scope, not session: while Playwright's sync API is started its event loop is the
# thread's running loop, so every async test collected after the browser tests (runs/, …)
# failed with "Runner.run() cannot be called from a running event loop".
@pytest.fixture(scope="package")
def browser() -> Iterator[Any]:
    with sync_playwright() as pw:
        # launch() gives every run a fresh temporary profile (its own --user-data-dir).
        chromium = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


# Records every socket open/close htmx-ws reports, so a test can tell a reconnect happened.
WS_PROBE = """
window.__ws = {opens: 0, closes: []};
document.addEventListener("htmx:wsOpen", () => { window.__ws.opens += 1; });
document.addEventListener("htmx:wsClose", (e) => { window.__ws.closes.push(e.detail.event.code); });
"""


def log_in(page: Any, base_url: str) -> None:

    page.goto(f"{base_url}/")
    expect(page).to_have_url(re.compile(r"/login/"))
    page.get_by_label("Username").fill(OPERATOR)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("heading", name="Runs")).to_be_visible(timeout=LIVE_TIMEOUT_MS)


@pytest.fixture(scope="package")
def context(browser: Any, lab_server: LabServer) -> Iterator[Any]:
    """One logged-in browser context for the session."""
    ctx = browser.new_context(base_url=lab_server.url, viewport={"width": 1200, "height": 900})
    ctx.set_default_timeout(LIVE_TIMEOUT_MS)
    ctx.add_init_script(WS_PROBE)
    page = ctx.new_page()
    log_in(page, lab_server.url)
    page.close()
    try:
        yield ctx
    finally:
        ctx.close()


@pytest.fixture
def page(context: Any, lab_server: LabServer, request: pytest.FixtureRequest) -> Iterator[Any]:
    p = context.new_page()
    try:
        yield p
    finally:
        if getattr(request.node, "rep_call", None) is not None and request.node.rep_call.failed:
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            p.screenshot(path=str(ARTIFACTS / f"FAILED-{request.node.name}.png"), full_page=True)
            print(f"--- daphne log tail ---\n{lab_server.log_tail()}")
        p.close()


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    rep = yield
    if rep.when == "call":
        item.rep_call = rep  # type: ignore[attr-defined]
    return rep


@dataclass
class RunPage:
    url: str
    name: str
    tmux_session: str


def start_run(page: Any, repo: Path, branch: str, options: dict[str, str] | None = None) -> RunPage:
    """Create a run through the new-run form and land on its page. `options` picks the
    provider's spawn options by name (the form's `opt:claude-code:<name>` selects)."""
    page.goto("/runs/new/")
    provider = page.get_by_label("Provider")
    expect(provider).to_have_value("claude-code")
    provider.select_option("claude-code")
    page.get_by_label("Repository").fill(str(repo))
    page.get_by_label("Branch").fill(branch)
    for name, value in (options or {}).items():
        field = page.locator(f'[name="opt:claude-code:{name}"]')
        field.select_option(value)
        expect(field).to_have_value(value)
    page.get_by_role("button", name="Start").click()
    expect(page).to_have_url(re.compile(r"/runs/\d+/$"), timeout=LIVE_TIMEOUT_MS)
    attach = page.locator(".run-head code.copyable").inner_text()
    match = re.fullmatch(r"tmux -L (\S+) attach -t =(\S+)", attach)
    assert match, attach
    return RunPage(url=page.url, name=branch.rsplit("/", 1)[-1], tmux_session=match.group(2))


@pytest.fixture(scope="package")
def chat_run(context: Any, lab_server: LabServer) -> RunPage:
    """The run most chat tests share (one real claude): created through the form."""
    p = context.new_page()
    try:
        return start_run(p, lab_server.repo, "lab/browser-chat")
    finally:
        p.close()


@pytest.fixture(scope="package")
def plan_run(context: Any, lab_server: LabServer) -> RunPage:
    """A run started in plan mode (the form's permission_mode option = "plan")."""
    p = context.new_page()
    try:
        return start_run(p, lab_server.repo, "lab/browser-plan", options={"permission_mode": "plan"})
    finally:
        p.close()


def commit_file(repo: Path, relpath: str, content: str) -> None:
    """Write and commit a file in a test repository (a run's worktree branches from HEAD)."""
    path = repo / relpath
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content)
    git = ["git", "-c", "user.name=lab-test", "-c", "user.email=lab-test@example.invalid"]
    subprocess.run([*git, "add", relpath], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-q", "-m", f"add {relpath}"], cwd=repo, check=True)


# --- a second server for the login flow ---------------------------------------------------------


@dataclass
class AuthServer:
    url: str
    home: Path  # the private agent HOME the login writes its credentials into
    proxy: ClaudeLoginProxy  # the offline sign-in servers the CLI reaches through HTTPS_PROXY
    proc: subprocess.Popen[bytes]
    log: Path

    def log_tail(self, n: int = 60) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-n:])


@pytest.fixture(scope="module")
def auth_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AuthServer]:
    """lab with the test-only LAB_LOGIN_EXTRA_ENV (tests/browser/settings_login.py): the real
    `claude auth login` talks to compat/claude_code/login_proxy.py's TLS CONNECT proxy and trusts its
    throwaway CA. Its own data dir and a private, empty agent HOME: never the operator's."""
    root = tmp_path_factory.mktemp("browser-auth")
    home = root / "agent-home"
    home.mkdir()
    certs = claude_certs(root / "tls")
    port = _free_port()
    sock = f"labbrowserauth-{os.getpid()}-{uuid.uuid4().hex[:6]}"
    with ClaudeLoginProxy(certs, Behaviour()) as proxy:
        env = _server_env(root, port, f"http://127.0.0.1:{port}", sock, home, {})
        env["DJANGO_SETTINGS_MODULE"] = "tests.browser.settings_login"
        env["LAB_TEST_LOGIN_EXTRA_ENV"] = json.dumps(
            {**proxy.env(), "DISABLE_TELEMETRY": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}
        )
        with _daphne(root, port, env, sock) as (proc, log):
            yield AuthServer(url=f"http://127.0.0.1:{port}", home=home, proxy=proxy, proc=proc, log=log)


@pytest.fixture(scope="module")
def auth_context(browser: Any, auth_server: AuthServer) -> Iterator[Any]:
    """A logged-in context of its own: both servers are 127.0.0.1 and cookies ignore the port."""
    ctx = browser.new_context(base_url=auth_server.url, viewport={"width": 1200, "height": 900})
    ctx.set_default_timeout(LIVE_TIMEOUT_MS)
    ctx.add_init_script(WS_PROBE)
    page = ctx.new_page()
    log_in(page, auth_server.url)
    page.close()
    try:
        yield ctx
    finally:
        ctx.close()


def screenshot(page: Any, name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path
