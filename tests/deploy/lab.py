"""lab deployed on a NetnsBed: a web tier in the root namespace (daphne, LAB_ROLE=web) and a
runner per host (`manage.py runner`) in each host's namespace, each host with its own scripted
model, agent home, repository, data dir and tmux server; all sharing the bed's PostgreSQL and
Redis. Every process is started as an operator would start it (manage.py, daphne), with the
same settings a deployment uses. Used by the deployment test and by `make bench`."""

from __future__ import annotations

import json
import re
import secrets
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from compat.claude_code.home import private_home
from tests.deploy.netns import NetnsBed, can_connect, free_port, tail, wait_for

REPO_ROOT = Path(__file__).resolve().parents[2]
PYTHON = sys.executable
DAPHNE = str(Path(sys.executable).parent / "daphne")
OPERATOR = "operator"
# Generous: a real TUI starts in 1-11 s on a loaded 2-core box.
START_S = 90.0


@dataclass
class HostProcesses:
    name: str
    token: str
    repo: Path
    agent_env: dict[str, str]
    agent_home: Path
    model_port: int
    runner: subprocess.Popen[bytes] | None = None
    model: subprocess.Popen[bytes] | None = None
    runner_log: Path = field(default_factory=Path)


class Deployment:
    def __init__(self, bed: NetnsBed, root: Path, *, web_host: str = "") -> None:
        """`web_host`: the web tier is also that host's runner (LAB_ROLE=all), with an agent of
        its own in the root namespace; else it is a web tier only (LAB_ROLE=web)."""
        self.bed = bed
        self.web_host = web_host
        self.web_agent: HostProcesses | None = None
        self.root = root
        self.port = free_port()
        self.origin = f"http://127.0.0.1:{self.port}"
        self.secret_key = secrets.token_urlsafe(50)
        self.password = "deploy-test-" + secrets.token_hex(8)
        self.hosts: dict[str, HostProcesses] = {}
        self.web: subprocess.Popen[bytes] | None = None
        self.web_log = root / "web.log"

    # --- environments ---

    def common(self, env: dict[str, str]) -> dict[str, str]:
        env = {k: v for k, v in env.items() if not k.startswith(("LAB_TEST_", "PYTEST"))}
        env.update(
            DJANGO_SETTINGS_MODULE="lab.settings",
            SECRET_KEY=self.secret_key,
            LAB_ORIGIN=self.origin,
            LAB_BIND=f"127.0.0.1:{self.port}",
            PYTHONUNBUFFERED="1",
        )
        return env

    def web_env(self) -> dict[str, str]:
        env = {
            **self.common(self.bed.web_env()),
            "LAB_ROLE": "web",
            "DJANGO_SUPERUSER_PASSWORD": self.password,
        }
        if self.web_agent is not None:
            env.update(
                LAB_ROLE="all",
                LAB_HOST=self.web_host,
                LAB_AGENT_HOME=str(self.web_agent.agent_home),
                LAB_AGENT_ENV=json.dumps(self.web_agent.agent_env),
                LAB_PROVIDERS_ENABLED="claude-code",
            )
        return env

    def host_env(self, h: HostProcesses) -> dict[str, str]:
        env = self.common(self.bed.host_env(h.name))
        env.update(
            LAB_RUNNER_TOKEN=h.token,
            LAB_AGENT_HOME=str(h.agent_home),
            LAB_AGENT_ENV=json.dumps(h.agent_env),
            LAB_PROVIDERS_ENABLED="claude-code",
        )
        return env

    def manage(self, *argv: str, env: dict[str, str] | None = None) -> str:
        done = subprocess.run(
            [PYTHON, "manage.py", *argv],
            cwd=REPO_ROOT,
            env=env or self.web_env(),
            capture_output=True,
            text=True,
        )
        if done.returncode:
            raise RuntimeError(f"manage.py {' '.join(argv)} failed:\n{done.stdout}\n{done.stderr}")
        return done.stdout

    # --- life cycle ---

    def start(self) -> Deployment:
        self.manage("migrate", "--noinput", "-v0")
        self.manage("createsuperuser", "--noinput", "--username", OPERATOR, "--email", "op@lab.invalid")
        for name in self.bed.names:
            token = re.search(r"LAB_RUNNER_TOKEN=(\S+)", self.manage("host", "add", name))[1]  # type: ignore[index]
            h = self.bed.host(name)
            port = free_port()
            home = private_home(h.dir / "claude", f"http://127.0.0.1:{port}")
            agent_env = {k: v for k, v in home.env.items() if k not in ("HOME", "PATH", "TERM", "LANG")}
            self.hosts[name] = HostProcesses(name, token, home.worktree, agent_env, home.home, port)
        for h in self.hosts.values():
            self.start_model(h)
            self.start_runner(h)
        if self.web_host:
            port = free_port()
            home = private_home(self.root / "web-claude", f"http://127.0.0.1:{port}")
            agent_env = {k: v for k, v in home.env.items() if k not in ("HOME", "PATH", "TERM", "LANG")}
            self.web_agent = HostProcesses(self.web_host, "", home.worktree, agent_env, home.home, port)
            argv = [PYTHON, "-m", "compat.claude_code.scripted_model", "--port", str(port)]
            log = self.root / "model-web.log"
            self.web_agent.model = self.bed.spawn(None, argv, cwd=REPO_ROOT, log_path=log)
            wait_for(lambda: can_connect("127.0.0.1", port), 30, "the web tier's scripted model", [log])
        self.start_web()
        for h in self.hosts.values():
            self.wait_up(h.name)
        return self

    def start_model(self, h: HostProcesses) -> None:
        # On every address of the host: its agent asks 127.0.0.1, the readiness check its eth0.
        argv = [
            PYTHON,
            "-m",
            "compat.claude_code.scripted_model",
            "--host",
            "0.0.0.0",
            "--port",
            str(h.model_port),
        ]
        h.model = self.bed.spawn(
            h.name, argv, env=self.host_env(h), cwd=REPO_ROOT, log_path=self.root / f"model-{h.name}.log"
        )
        address = self.bed.host(h.name).host_ip
        wait_for(
            lambda: can_connect(address, h.model_port),
            30,
            f"host {h.name}'s scripted model",
            [self.root / f"model-{h.name}.log"],
        )

    def start_runner(self, h: HostProcesses) -> None:
        h.runner_log = self.root / f"runner-{h.name}.log"
        h.runner = self.bed.spawn(
            h.name,
            [PYTHON, "manage.py", "runner"],
            env=self.host_env(h),
            cwd=REPO_ROOT,
            log_path=h.runner_log,
        )

    def kill_runner(self, name: str) -> None:
        h = self.hosts[name]
        assert h.runner is not None
        self.bed.kill(h.runner, signal.SIGKILL)
        h.runner = None

    def start_web(self) -> None:
        argv = [DAPHNE, "-b", "127.0.0.1", "-p", str(self.port), "lab.asgi:application"]
        self.web = self.bed.spawn(None, argv, env=self.web_env(), cwd=REPO_ROOT, log_path=self.web_log)
        wait_for(lambda: self.http_ok("/login/"), 60, "the web tier", [self.web_log])

    def http_ok(self, path: str) -> bool:
        try:
            with urllib.request.urlopen(self.origin + path, timeout=2) as answer:
                return answer.status == 200
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            return False

    def host_row(self, name: str) -> dict[str, Any]:
        import psycopg

        with psycopg.connect(self.bed.database_url(), autocommit=True) as conn:
            row = conn.execute(
                "SELECT name, extract(epoch FROM now() - last_seen) FROM hosts_host WHERE name = %s", (name,)
            ).fetchone()
        return (
            {"name": row[0], "silent_s": float(row[1]) if row and row[1] is not None else None} if row else {}
        )

    def watch_leases(self) -> list[tuple[str, str]]:
        """(application name, client address) of every session holding a run's watch lease."""
        import psycopg

        with psycopg.connect(self.bed.database_url(), autocommit=True) as conn:
            rows = conn.execute(
                "SELECT a.application_name, host(a.client_addr) FROM pg_locks l "
                "JOIN pg_stat_activity a ON a.pid = l.pid WHERE l.locktype = 'advisory'"
            ).fetchall()
        return [(str(r[0]), str(r[1])) for r in rows]

    def wait_up(self, name: str) -> None:
        def up() -> bool:
            silent = self.host_row(name).get("silent_s")
            return silent is not None and silent < 4

        wait_for(up, START_S, f"host {name}'s runner to beat", [self.hosts[name].runner_log])

    def logs(self) -> str:
        parts = [f"--- web ---\n{tail(self.web_log, 40)}"]
        for h in self.hosts.values():
            parts.append(f"--- runner {h.name} ---\n{tail(h.runner_log, 40)}")
        return "\n".join(parts)
