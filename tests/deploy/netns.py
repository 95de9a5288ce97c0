"""A deployment test bed: several "hosts" on one machine, each in its own network namespace,
sharing one PostgreSQL and one Redis that run in the root namespace.

Topology of a bed with hosts a and b (bed id <pid>-<seq>: the owning process and a counter):

    root namespace                                 namespace lab-<pid>-<seq>-a
      PostgreSQL, Redis on 127.0.0.1 and on          lo   127.0.0.1  (its own)
      every root-side address below                  eth0 10.213.0.2/30
      lv<pid>-<seq>-0  10.213.0.1/30  <── veth ──>   DATABASE_URL, REDIS_URL -> 10.213.0.1

                                                   namespace lab-<pid>-<seq>-b
      lv<pid>-<seq>-1  10.213.0.5/30  <── veth ──>   eth0 10.213.0.6/30 -> 10.213.0.5

(<pid> is hex in link names: Linux allows 15 characters.) The /30s are taken from 10.213.0.0/16,
the first ones no root-side link uses, under a lock, so beds of parallel test runs never share
one. A host has no route but its own link: it reaches the servers only through its root-side
address (PostgreSQL sees it connect from its eth0 address), its 127.0.0.1 is its own, and it
cannot reach the other hosts, as two machines on separate links.

Why each host gets its own TMUX_TMPDIR, data dir and agent home: a network namespace separates
the network stack, not the filesystem. tmux's server socket is a file,
$TMUX_TMPDIR/tmux-<uid>/<name>, so two hosts using one socket name would share one tmux server
across namespaces: one machine, not two. The bed gives each host its own directories instead.

Teardown kills every process inside each namespace, not only the groups it spawned (a tmux
server daemonizes out of its client's process group), deletes the links and namespaces, stops
the servers and removes the bed's directory, and reports what it could not do. A test run killed
before teardown leaves all that behind under its pid: the next bed sweeps whatever belongs to a
process that is gone (sweep_leftovers). No Django here: the bed is plain processes.

A web tier runs in the root namespace (spawn(None, ...), web_env()): it reaches the servers on
127.0.0.1 and is out of the hosts' reach, as they are out of its own except through the servers.
"""

from __future__ import annotations

import contextlib
import fcntl
import ipaddress
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

SUBNET = ipaddress.ip_network("10.213.0.0/16")
NETNS_DIR = Path("/run/netns")
STATE_PREFIX = "lab-netns-"
DB_USER = "lab"
DB_NAME = "lab"
NS_RE = re.compile(r"^lab-(\d+)-(\d+)-")
LINK_RE = re.compile(r"^lv([0-9a-f]+)-([0-9a-f]+)-")
HOST_RE = re.compile(r"^[a-z0-9][a-z0-9-]{0,23}$")
MAX_HOSTS = 16
# Searched besides PATH: a non-login root shell may not have the sbin directories on it.
SBIN = "/usr/sbin:/sbin"
NEEDED = {"ip": "iproute2", "redis-server": "redis-server", "runuser": "util-linux"}

_seq = 0


class BedError(RuntimeError):
    """The bed could not be built, used or taken down; the message says what and why."""


def missing_tools(path: str | None = None) -> list[str]:
    """What the bed needs and cannot find, each with the Debian package that brings it."""
    search = f"{os.environ.get('PATH', '')}:{SBIN}" if path is None else path
    missing = [
        f"{tool} (Debian package {pkg})"
        for tool, pkg in NEEDED.items()
        if not shutil.which(tool, path=search)
    ]
    if not _pg_bindir():
        missing.append("PostgreSQL server binaries (Debian package postgresql)")
    return missing


def _tool(name: str) -> str:
    found = shutil.which(name, path=f"{os.environ.get('PATH', '')}:{SBIN}")
    if not found:
        raise BedError(f"{name} is not installed (Debian package {NEEDED[name]}; scripts/ensure-system test)")
    return found


def _pg_bindir() -> Path | None:
    dirs = [p for p in Path("/usr/lib/postgresql").glob("*/bin") if (p / "initdb").exists()]
    return max(dirs, key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0) if dirs else None


def _run(argv: Sequence[str], what: str, *, check: bool = True, timeout: float = 60) -> str:
    done = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout, check=False)
    if check and done.returncode != 0:
        raise BedError(f"{what} failed ({' '.join(argv)}): {(done.stderr or done.stdout).strip()}")
    return done.stdout


def tail(path: Path, lines: int = 20) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError as exc:
        return f"(cannot read {path}: {exc.strerror})"
    return "\n".join(text.splitlines()[-lines:]) or "(empty)"


def wait_for[T](predicate: Callable[[], T], timeout: float, what: str, logs: Iterable[Path] = ()) -> T:
    """Poll `predicate` until it returns something truthy, and return that. Past `timeout`
    seconds, raise TimeoutError naming `what` with the last lines of each log in `logs`."""
    deadline = time.monotonic() + timeout
    delay = 0.02
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            tails = "".join(f"\n--- last lines of {p} ---\n{tail(p)}" for p in logs)
            raise TimeoutError(f"{what}: still not so after {timeout:g} s{tails}")
        time.sleep(delay)
        delay = min(delay * 2, 0.25)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def can_connect(address: str, port: int, timeout: float = 0.5) -> bool:
    with contextlib.suppress(OSError), socket.create_connection((address, port), timeout):
        return True
    return False


# --- who owns what: a pid in a name, and whether that process is still the one that made it ---


def _start_epoch(pid: int) -> float | None:
    """When process `pid` started (seconds since the epoch), or None if it is gone or a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        boot = next(line for line in Path("/proc/stat").read_text().splitlines() if line.startswith("btime"))
    except (OSError, StopIteration):
        return None
    fields = stat.rsplit(")", 1)[1].split()  # the command name may hold spaces and parentheses
    if fields[0] in ("Z", "X"):
        return None
    return int(boot.split()[1]) + int(fields[19]) / os.sysconf("SC_CLK_TCK")


def _owner_alive(pid: int, made_at: float) -> bool:
    """Whether `pid` is alive and is the process that made something at `made_at`: a pid reused
    by a later process started after the thing was made (2 s of slack for /proc's rounding)."""
    start = _start_epoch(pid)
    return start is not None and start <= made_at + 2


@contextlib.contextmanager
def _lock() -> Iterator[None]:
    # Beds of parallel test runs allocate subnets and sweep under one machine-wide lock.
    lock_dir = Path("/run/lock") if Path("/run/lock").is_dir() else Path(tempfile.gettempdir())
    with (lock_dir / "lab-netns.lock").open("a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def namespaces() -> list[str]:
    return [
        line.split()[0]
        for line in _run([_tool("ip"), "netns", "list"], "listing namespaces").splitlines()
        if line
    ]


def root_links() -> list[str]:
    out = _run([_tool("ip"), "-o", "link", "show"], "listing links")
    return [line.split(":")[1].strip().split("@")[0] for line in out.splitlines() if line.count(":") >= 2]


def ns_pids(ns: str) -> list[int]:
    out = _run([_tool("ip"), "netns", "pids", ns], f"listing the processes of {ns}", check=False)
    return [int(x) for x in out.split() if x.isdigit()]


def strays(directory: Path) -> list[int]:
    """Processes (other than this one) whose environment names a path under `directory`."""
    marker = str(directory).encode() + b"/"
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            env = (entry / "environ").read_bytes()
        except OSError:
            continue
        if any(b"=" + marker in item or item.endswith(b"=" + marker[:-1]) for item in env.split(b"\0")):
            found.append(int(entry.name))
    return found


def _signal_all(pids: Iterable[int], sig: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)


def _empty_namespace(ns: str, grace: float = 3.0) -> None:
    """Every process in `ns` gone: SIGTERM, then SIGKILL after `grace` seconds."""
    pids = ns_pids(ns)
    if not pids:
        return
    _signal_all(pids, signal.SIGTERM)
    with contextlib.suppress(TimeoutError):
        wait_for(lambda: not ns_pids(ns), grace, f"processes in {ns} ending on SIGTERM")
        return
    _signal_all(ns_pids(ns), signal.SIGKILL)
    try:
        wait_for(lambda: not ns_pids(ns), 10, f"processes in {ns} ending on SIGKILL")
    except TimeoutError as exc:
        raise BedError(f"processes {ns_pids(ns)} in namespace {ns} survive SIGKILL") from exc


def _stop_postgres(bindir: str, data: str) -> None:
    if Path(data, "postmaster.pid").exists():
        _run(
            [
                _tool("runuser"),
                "-u",
                "postgres",
                "--",
                f"{bindir}/pg_ctl",
                "-D",
                data,
                "-m",
                "immediate",
                "-w",
                "stop",
            ],
            "stopping PostgreSQL",
            check=False,
        )


def _stop_pid(pid: int, name: str) -> None:
    """Stop `pid` if it is still a process whose command line names `name` (never a reused pid)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return
    if name.encode() not in cmdline:
        return
    _signal_all([pid], signal.SIGTERM)
    with contextlib.suppress(TimeoutError):
        wait_for(lambda: _start_epoch(pid) is None, 5, f"{name} ({pid}) ending")
        return
    _signal_all([pid], signal.SIGKILL)


def _state_dirs() -> list[Path]:
    return sorted(Path(tempfile.gettempdir()).glob(f"{STATE_PREFIX}*-*"))


def _sweep() -> list[str]:
    """Remove what beds of dead owners left. Call under _lock()."""
    removed: list[str] = []
    ip = _tool("ip")
    for ns in namespaces():
        m = NS_RE.match(ns)
        if not m:
            continue
        try:
            made_at = (NETNS_DIR / ns).stat().st_mtime
        except OSError:
            continue  # deleted since the listing: another bed's teardown
        if _owner_alive(int(m[1]), made_at):
            continue
        _empty_namespace(ns, grace=0.5)
        _run([ip, "netns", "del", ns], f"deleting leftover namespace {ns}", check=False)
        removed.append(f"namespace {ns}")
    for link in root_links():
        m = LINK_RE.match(link)
        if m and _start_epoch(int(m[1], 16)) is None:
            _run([ip, "link", "del", link], f"deleting leftover link {link}", check=False)
            removed.append(f"link {link}")
    for state in _state_dirs():
        try:
            info = json.loads((state / "state.json").read_text())
        except (OSError, ValueError):
            info = {}
        owner = info.get("owner_pid") or int(state.name[len(STATE_PREFIX) :].split("-")[0] or 0)
        if _owner_alive(int(owner), info.get("made_at", state.stat().st_mtime)):
            continue
        if info.get("pg_data"):
            _stop_postgres(info["pg_bindir"], info["pg_data"])
        if info.get("redis_pid"):
            _stop_pid(int(info["redis_pid"]), "redis-server")
        shutil.rmtree(state, ignore_errors=True)
        removed.append(f"directory {state}")
    return removed


def sweep_leftovers() -> list[str]:
    """Remove the namespaces, links, servers and directories of beds whose owning process is
    gone (a killed test run); leave those of live runs alone. Returns what it removed."""
    with _lock():
        return _sweep()


def leftovers(bed_id: str, pids: Iterable[int] = ()) -> list[str]:
    """What of bed `bed_id` is still there: namespaces, links, its directory, and any of `pids`
    still running. Empty after a clean teardown."""
    pid, seq = (int(x) for x in bed_id.split("-"))
    found = [f"namespace {ns}" for ns in namespaces() if ns.startswith(f"lab-{pid}-{seq}-")]
    found += [f"link {link}" for link in root_links() if link.startswith(f"lv{pid:x}-{seq:x}-")]
    state = Path(tempfile.gettempdir()) / f"{STATE_PREFIX}{bed_id}"
    if state.exists():
        found.append(f"directory {state}")
    found += [f"process {p}" for p in pids if _start_epoch(p) is not None]
    return found


@dataclass(frozen=True)
class Host:
    name: str
    ns: str
    link: str  # the root side of the veth pair; the namespace side is eth0
    root_ip: str  # where the host reaches PostgreSQL and Redis
    host_ip: str  # the host's own eth0 address
    network: str
    dir: Path

    @property
    def data_dir(self) -> Path:
        return self.dir / "data"

    @property
    def tmux_tmpdir(self) -> Path:
        return self.dir / "tmux"

    @property
    def agent_home(self) -> Path:
        return self.dir / "agent-home"


class NetnsBed:
    """Hosts in network namespaces plus PostgreSQL and Redis in the root namespace. Use as a
    context manager (or start()/close()); see the module docstring for the topology."""

    def __init__(
        self, hosts: Sequence[str] = ("a", "b"), *, logs_dir: Path | None = None, postgres: bool = True
    ) -> None:
        global _seq
        if not hosts or len(hosts) > MAX_HOSTS or len(set(hosts)) != len(hosts):
            raise BedError(f"a bed takes 1 to {MAX_HOSTS} distinct host names, got {list(hosts)}")
        for name in hosts:
            if not HOST_RE.match(name):
                raise BedError(f"host name {name!r}: lower-case letters, digits and '-', at most 24")
        _seq += 1
        self.id = f"{os.getpid()}-{_seq}"
        self.names = list(hosts)
        self.want_postgres = postgres
        self.dir = Path(tempfile.gettempdir()) / f"{STATE_PREFIX}{self.id}"
        self.logs_dir = logs_dir or self.dir / "logs"
        self.hosts: dict[str, Host] = {}
        self.pg_port = 0
        self.redis_port = 0
        self.db_password = secrets.token_hex(16)
        self.redis_password = secrets.token_hex(16)
        self._pg_data: Path | None = None
        self._pg_bindir: Path | None = None
        self._redis: subprocess.Popen[bytes] | None = None
        self._procs: list[tuple[str, subprocess.Popen[bytes]]] = []
        self._logs: list[Path] = []
        self._state: dict[str, Any] = {}
        self._made_dir = False
        self._pg_pid: int | None = None

    # --- life cycle ---

    def __enter__(self) -> NetnsBed:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> NetnsBed:
        if os.geteuid() != 0:
            raise BedError("the network-namespace bed needs root (ip netns add)")
        if missing := missing_tools():
            raise BedError(f"the bed needs {', '.join(missing)}: run scripts/ensure-system test")
        try:
            with _lock():
                # Sweep first: a killed run whose pid this process now has left names this
                # bed is about to take.
                _sweep()
                self.dir.mkdir(mode=0o711)
                self._made_dir = True
                self.dir.chmod(0o711)  # PostgreSQL runs as its own user and must reach its data dir
                self.logs_dir.mkdir(parents=True, exist_ok=True)
                self._save_state(owner_pid=os.getpid(), made_at=time.time())
                self._make_links()
            if self.want_postgres:
                self._start_postgres()
            self._start_redis()
        except BaseException:
            with contextlib.suppress(BedError):
                self.close()
            raise
        return self

    def close(self) -> None:
        """Take everything down, each step even when an earlier one failed; raise BedError
        naming every step that failed."""
        errors: list[str] = []

        def step(what: str, fn: Callable[..., object], *args: Any) -> None:
            try:
                fn(*args)
            except Exception as exc:
                errors.append(f"{what}: {exc}")

        for _host, proc in self._procs:
            step(f"stopping process {proc.pid}", self.kill, proc, signal.SIGTERM, 3)
        # A root-namespace process's daemons (a web tier's tmux server) leave its process group:
        # found by the bed's directory in their environment.
        step("stopping the root namespace's strays", _signal_all, strays(self.dir), signal.SIGKILL)
        ip = shutil.which("ip", path=f"{os.environ.get('PATH', '')}:{SBIN}") or "ip"
        for host in self.hosts.values():
            step(f"emptying {host.ns}", _empty_namespace, host.ns)
            # Deleting the link first removes both ends at once; the kernel frees a deleted
            # namespace's devices later, asynchronously, and a leak check would race that.
            if host.link in root_links():
                step(f"deleting link {host.link}", _run, [ip, "link", "del", host.link], "ip link del")
            if host.ns in namespaces():
                step(f"deleting {host.ns}", _run, [ip, "netns", "del", host.ns], "ip netns del")
        if self._redis is not None:
            step("stopping Redis", self._redis.terminate)
            step("stopping Redis", self._redis.wait, 10)
        if self._pg_data is not None and self._pg_bindir is not None:
            step("stopping PostgreSQL", _stop_postgres, str(self._pg_bindir), str(self._pg_data))
        if self.logs_dir != self.dir / "logs":
            for log in (self.dir / "pg" / "server.log", self.dir / "redis.log"):
                with contextlib.suppress(OSError):
                    shutil.copy(log, self.logs_dir / log.name)
        if self._made_dir and self.dir.exists():
            step("removing the bed's directory", shutil.rmtree, self.dir)
        if errors:
            raise BedError(f"bed {self.id} teardown: " + "; ".join(errors))

    def _save_state(self, **items: Any) -> None:
        self._state.update(items)
        (self.dir / "state.json").write_text(json.dumps(self._state))

    def _make_links(self) -> None:
        ip = _tool("ip")
        for route in _run([ip, "-o", "-4", "route", "show"], "listing routes").splitlines():
            dest, dev = route.split()[0], route.split(" dev ")[1].split()[0] if " dev " in route else ""
            if dest != "default" and not LINK_RE.match(dev) and ipaddress.ip_network(dest).overlaps(SUBNET):
                raise BedError(f"this machine routes {dest} (dev {dev}): it overlaps the bed's {SUBNET}")
        used = set(
            re.findall(
                r"inet (\d+\.\d+\.\d+\.\d+)/", _run([ip, "-o", "-4", "addr", "show"], "listing addresses")
            )
        )
        subnets = (n for n in SUBNET.subnets(new_prefix=30) if str(n.network_address + 1) not in used)
        pid, seq = (int(x) for x in self.id.split("-"))
        for index, name in enumerate(self.names):
            net = next(subnets, None)
            if net is None:
                raise BedError(f"no free /30 left in {SUBNET}")
            host = Host(
                name=name,
                ns=f"lab-{self.id}-{name}",
                link=f"lv{pid:x}-{seq:x}-{index:x}",
                root_ip=str(net.network_address + 1),
                host_ip=str(net.network_address + 2),
                network=str(net),
                dir=self.dir / "hosts" / name,
            )
            self.hosts[name] = host
            for d in (host.data_dir, host.tmux_tmpdir, host.agent_home):
                d.mkdir(parents=True)
            if host.link in root_links():
                # A dead namesake's: the kernel frees a deleted namespace's links asynchronously.
                _run([ip, "link", "del", host.link], f"deleting stale link {host.link}", check=False)
            _run([ip, "netns", "add", host.ns], f"creating namespace {host.ns}")
            _run(
                [ip, "link", "add", host.link, "type", "veth", "peer", "name", "eth0", "netns", host.ns],
                "veth",
            )
            _run([ip, "addr", "add", f"{host.root_ip}/30", "dev", host.link], "root-side address")
            _run([ip, "link", "set", host.link, "up"], "root-side link up")
            _run([ip, "-n", host.ns, "addr", "add", f"{host.host_ip}/30", "dev", "eth0"], "host address")
            _run([ip, "-n", host.ns, "link", "set", "eth0", "up"], "host link up")
            _run([ip, "-n", host.ns, "link", "set", "lo", "up"], "host loopback up")

    def _start_postgres(self) -> None:
        bindir = _pg_bindir()
        assert bindir is not None  # missing_tools() said so
        pg = self.dir / "pg"
        pg.mkdir()
        shutil.chown(pg, "postgres", "postgres")
        data = pg / "data"
        self._pg_bindir = bindir
        as_pg = [_tool("runuser"), "-u", "postgres", "--"]
        _run(
            [*as_pg, f"{bindir}/initdb", "-D", str(data), "-A", "trust", "-U", "postgres", "--no-sync"],
            "initdb",
        )
        self._pg_data = data
        self._save_state(pg_bindir=str(bindir), pg_data=str(data))
        # Trust on loopback (the test process, as the superuser); a password over the links,
        # as a runner on another machine would log in.
        with (data / "pg_hba.conf").open("a") as hba:
            for host in self.hosts.values():
                hba.write(f"host all {DB_USER} {host.network} scram-sha-256\n")
        listen = ",".join(["127.0.0.1", *(h.root_ip for h in self.hosts.values())])
        for attempt in range(3):
            self.pg_port = free_port()
            conf = (
                f"\nlisten_addresses = '{listen}'\nport = {self.pg_port}\nunix_socket_directories = '{pg}'\n"
                "fsync = off\nsynchronous_commit = off\nfull_page_writes = off\nmax_connections = 200\n"
            )
            with (data / "postgresql.conf").open("a") as fh:
                fh.write(conf)
            log = pg / "server.log"
            argv = [*as_pg, f"{bindir}/pg_ctl", "-D", str(data), "-l", str(log), "-w", "-t", "60", "start"]
            if subprocess.run(argv, capture_output=True, check=False, timeout=90).returncode == 0:
                break
            if attempt == 2 or "already in use" not in tail(log):
                raise BedError(
                    f"PostgreSQL did not start on port {self.pg_port}; {log} says:\n{tail(log, 8)}"
                )
        self._logs.append(pg / "server.log")
        self._pg_pid = int((data / "postmaster.pid").read_text().split()[0])
        for address in ["127.0.0.1", *(h.root_ip for h in self.hosts.values())]:
            wait_for(partial(can_connect, address, self.pg_port), 30, f"PostgreSQL on {address}", self._logs)
        psql = [f"{bindir}/psql", "-X", "-q", "-h", "127.0.0.1", "-p", str(self.pg_port), "-U", "postgres"]
        _run(
            [
                *psql,
                "-v",
                "ON_ERROR_STOP=1",
                "-c",
                f"CREATE ROLE {DB_USER} LOGIN CREATEDB PASSWORD '{self.db_password}'",
            ],
            "creating the database role",
        )
        _run([*psql, "-c", f"CREATE DATABASE {DB_NAME} OWNER {DB_USER}"], "creating the database")

    def _start_redis(self) -> None:
        binary = _tool("redis-server")
        log = self.dir / "redis.log"
        conf = self.dir / "redis.conf"
        self._logs.append(log)
        for attempt in range(3):
            self.redis_port = free_port()
            addresses = " ".join(["127.0.0.1", *(h.root_ip for h in self.hosts.values())])
            conf.write_text(
                f'port {self.redis_port}\nbind {addresses}\nsave ""\nappendonly no\n'
                f"requirepass {self.redis_password}\ndir {self.dir}\nlogfile {log}\n"
            )
            conf.chmod(0o600)
            self._redis = subprocess.Popen(
                [binary, str(conf)], stdin=subprocess.DEVNULL, start_new_session=True
            )
            self._save_state(redis_pid=self._redis.pid)
            redis = self._redis

            def up(redis: subprocess.Popen[bytes] = redis) -> bool | str:
                if redis.poll() is not None:
                    return "exited"
                return all(
                    self._redis_ping(a) for a in ["127.0.0.1", *(h.root_ip for h in self.hosts.values())]
                )

            if wait_for(up, 30, "Redis answering PING on every address", self._logs) is True:
                return
            if attempt == 2 or "already in use" not in tail(log):
                raise BedError(f"Redis did not start on port {self.redis_port}; {log} says:\n{tail(log, 8)}")

    def _redis_ping(self, address: str) -> bool:
        try:
            with socket.create_connection((address, self.redis_port), 0.5) as s:
                s.sendall(f"AUTH {self.redis_password}\r\nPING\r\n".encode())
                reply = b""
                while b"PONG" not in reply and len(reply) < 200:
                    chunk = s.recv(200)
                    if not chunk:
                        break
                    reply += chunk
                return reply == b"+OK\r\n+PONG\r\n"
        except OSError:
            return False

    # --- what a test uses ---

    def host(self, name_or_ns: str) -> Host:
        for host in self.hosts.values():
            if name_or_ns in (host.name, host.ns):
                return host
        raise BedError(f"no host {name_or_ns!r} in bed {self.id} (hosts: {', '.join(self.hosts)})")

    def database_url(self, host: str | None = None, database: str = DB_NAME) -> str:
        """PostgreSQL for `host` through its root-side address, or through loopback for the root
        namespace (the test process, a web tier) when host is None. Always as user lab: tables
        one tier creates (migrate) are then the others' too."""
        if not self.want_postgres:
            raise BedError(f"bed {self.id} was made without PostgreSQL")
        address = "127.0.0.1" if host is None else self.host(host).root_ip
        return f"postgres://{DB_USER}:{self.db_password}@{address}:{self.pg_port}/{database}"

    def redis_url(self, host: str | None = None) -> str:
        address = "127.0.0.1" if host is None else self.host(host).root_ip
        return f"redis://:{self.redis_password}@{address}:{self.redis_port}/0"

    def host_env(self, host: str, base: dict[str, str] | None = None) -> dict[str, str]:
        """The environment of a lab process on `host`: this process's environment (or `base`)
        with the host's own data dir, tmux directory, agent home, servers and name."""
        h = self.host(host)
        env = dict(os.environ if base is None else base)
        env.pop("TMUX", None)  # a test started inside tmux: not this host's server
        env.update(
            LAB_DATA_DIR=str(h.data_dir),
            TMUX_TMPDIR=str(h.tmux_tmpdir),
            LAB_AGENT_HOME=str(h.agent_home),
            REDIS_URL=self.redis_url(h.name),
            LAB_HOST=h.name,
        )
        if self.want_postgres:
            env["DATABASE_URL"] = self.database_url(h.name)
        return env

    def web_env(self, base: dict[str, str] | None = None) -> dict[str, str]:
        """The environment of a process in the root namespace (a web tier): servers on
        loopback, directories of its own, and no LAB_HOST (set one to make it a runner too)."""
        env = dict(os.environ if base is None else base)
        env.pop("TMUX", None)
        env.pop("LAB_HOST", None)
        web = self.dir / "web"
        for d in ("data", "tmux", "agent-home"):
            (web / d).mkdir(parents=True, exist_ok=True)
        env.update(
            LAB_DATA_DIR=str(web / "data"),
            TMUX_TMPDIR=str(web / "tmux"),
            LAB_AGENT_HOME=str(web / "agent-home"),
            REDIS_URL=self.redis_url(),
        )
        if self.want_postgres:
            env["DATABASE_URL"] = self.database_url()
        return env

    def spawn(
        self,
        host: str | None,
        argv: Sequence[str],
        env: dict[str, str] | None = None,
        cwd: str | Path | None = None,
        log_path: Path | None = None,
    ) -> subprocess.Popen[bytes]:
        """Start `argv` inside `host`'s namespace (the root namespace when host is None) in a
        process group of its own, stdout and stderr to `log_path` (default: a numbered log in the
        bed's logs dir). `env` defaults to host_env (web_env in the root namespace). Teardown
        stops it."""
        name = "root" if host is None else self.host(host).name
        if host is None:
            argv, default_env = list(argv), self.web_env()
        else:
            argv, default_env = [_tool("ip"), "netns", "exec", self.host(host).ns, *argv], self.host_env(name)
        log_path = Path(log_path) if log_path else self.logs_dir / f"{name}-{len(self._procs) + 1}.log"
        log_path.parent.mkdir(parents=True, exist_ok=True)
        with log_path.open("ab") as log:
            proc = subprocess.Popen(
                argv,
                env=default_env if env is None else env,
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own group: kill() reaches its children too
            )
        self._procs.append((name, proc))
        self._logs.append(log_path)
        return proc

    def kill(
        self, proc: subprocess.Popen[bytes], sig: int = signal.SIGTERM, timeout: float = 10
    ) -> int | None:
        """Send `sig` to `proc`'s whole process group; for a signal that ends it, wait for it
        (SIGKILL after `timeout` seconds) and return its exit status."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        if sig in (signal.SIGSTOP, signal.SIGCONT, signal.SIGTSTP):
            return None
        try:
            return proc.wait(timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            return proc.wait(10)

    def kill_host(self, host: str, sig: int = signal.SIGKILL) -> list[int]:
        """Every process inside `host`'s namespace gets `sig` (a machine that dies takes its tmux
        server and agents with it, not only the runner's group). Returns the pids signalled."""
        h = self.host(host)
        pids = ns_pids(h.ns)
        _signal_all(pids, sig)
        if sig == signal.SIGKILL:
            wait_for(lambda: not ns_pids(h.ns), 10, f"processes in {h.ns} ending on SIGKILL")
            for name, proc in self._procs:
                if name == h.name:
                    proc.wait(10)
        return pids

    def cut_link(self, host: str) -> None:
        """The host drops off the network (its processes keep running): its link goes down."""
        _run([_tool("ip"), "link", "set", self.host(host).link, "down"], "cutting the link")

    def restore_link(self, host: str) -> None:
        _run([_tool("ip"), "link", "set", self.host(host).link, "up"], "restoring the link")

    @property
    def logs(self) -> list[Path]:
        return list(self._logs)

    def server_pids(self) -> list[int]:
        """The pids of Redis and the PostgreSQL postmaster (for a leak check)."""
        return [p for p in (self._redis.pid if self._redis else None, self._pg_pid) if p]

    def wait_for[T](
        self, predicate: Callable[[], T], timeout: float, what: str, logs: Iterable[Path] | None = None
    ) -> T:
        """wait_for() that shows the tails of the bed's logs (servers and spawned processes)."""
        return wait_for(predicate, timeout, what, self._logs if logs is None else logs)
