"""The deployment bed itself (tests/deploy/netns.py): hosts in network namespaces reach the
root namespace's PostgreSQL and Redis over their own links and nothing else, keep their tmux
servers apart, and leave nothing behind, even when the run that made them was killed.

Real parts throughout (ip netns, veth links, PostgreSQL, redis-server, tmux, processes inside
the namespaces), so marked live; they need root and fail, never skip, without it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.deploy import netns
from tests.deploy.netns import BedError, NetnsBed, free_port, leftovers, namespaces, ns_pids, wait_for

pytestmark = [pytest.mark.live, pytest.mark.timeout(120)]

ROOT = Path(__file__).resolve().parents[2]

# Run inside a host with its host_env: what PostgreSQL and Redis see of it.
PROBE = """
import json, os, psycopg, redis
with psycopg.connect(os.environ["DATABASE_URL"], connect_timeout=5) as conn:
    row = conn.execute(
        "SELECT host(inet_server_addr()), host(inet_client_addr()), current_user, current_database()"
    ).fetchone()
pong = redis.Redis.from_url(os.environ["REDIS_URL"], socket_timeout=5).ping()
print(json.dumps({"server": row[0], "client": row[1], "user": row[2], "db": row[3], "pong": pong}))
"""

LISTEN = """
import socket, sys
s = socket.socket()
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen()
print("listening", flush=True)
while True:
    s.accept()[0].close()
"""

CONNECT = """
import socket, sys
try:
    socket.create_connection((sys.argv[1], int(sys.argv[2])), 2).close()
    print("connected")
except OSError as exc:
    print(type(exc).__name__)
"""


def run_in(bed: NetnsBed, host: str | None, argv: list[str], log: Path, cwd: Path | None = None) -> str:
    """Run argv in `host` to its end; its output (it must exit 0)."""
    proc = bed.spawn(host, argv, cwd=cwd, log_path=log)
    bed.wait_for(lambda: proc.poll() is not None, 30, f"{argv[:3]} ending in host {host}", [log])
    out = log.read_text()
    assert proc.returncode == 0, f"exit {proc.returncode} in host {host}:\n{out}"
    return out


def python_in(bed: NetnsBed, host: str | None, code: str, *args: object, log: Path) -> str:
    return (
        run_in(bed, host, [sys.executable, "-c", code, *map(str, args)], log, cwd=ROOT)
        .strip()
        .splitlines()[-1]
    )


def test_each_host_reaches_postgres_and_redis_through_its_own_link(netns_bed, tmp_path):
    assert {netns_bed.host("a").ns, netns_bed.host("b").ns} <= set(namespaces())
    for name in ("a", "b"):
        host = netns_bed.host(name)
        seen = json.loads(python_in(netns_bed, name, PROBE, log=tmp_path / f"probe-{name}.log"))
        # The server answered on this host's root-side address and saw the host's own eth0
        # address: the connection went over the host's link, as user lab with its password.
        assert seen == {
            "server": host.root_ip,
            "client": host.host_ip,
            "user": "lab",
            "db": "lab",
            "pong": True,
        }
    assert netns_bed.host("a").network != netns_bed.host("b").network
    # A process spawned in the root namespace (a web tier) reaches both servers on loopback.
    seen = json.loads(python_in(netns_bed, None, PROBE, log=tmp_path / "probe-root.log"))
    assert seen == {"server": "127.0.0.1", "client": "127.0.0.1", "user": "lab", "db": "lab", "pong": True}


# lab's own settings in a host, as a runner would start: Django on the host's DATABASE_URL and
# channels-redis on its REDIS_URL.
LAB_PROCESS = """
import json, os, sys
import django
os.environ["DJANGO_SETTINGS_MODULE"] = "lab.settings"
django.setup()
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import connection
layer = get_channel_layer()
with connection.cursor() as cur:
    cur.execute("SELECT host(inet_client_addr())")
    client = cur.fetchone()[0]
if sys.argv[1] == "send":
    message = {"type": "hello", "from": os.environ["LAB_HOST"], "db_client": client}
    async_to_sync(layer.send)("bed-runner-b", message)
    print(json.dumps({"sent": True}))
else:
    print(json.dumps({"received": async_to_sync(layer.receive)("bed-runner-b"), "db_client": client}))
"""


def test_lab_processes_on_two_hosts_share_the_database_and_the_channel_layer(netns_bed, tmp_path):
    receiver = netns_bed.spawn(
        "b", [sys.executable, "-c", LAB_PROCESS, "receive"], cwd=ROOT, log_path=tmp_path / "b.log"
    )
    assert python_in(netns_bed, "a", LAB_PROCESS, "send", log=tmp_path / "a.log") == '{"sent": true}'
    netns_bed.wait_for(
        lambda: receiver.poll() is not None, 60, "b receiving a's message", [tmp_path / "b.log"]
    )
    got = json.loads((tmp_path / "b.log").read_text().strip().splitlines()[-1])
    a, b = netns_bed.host("a"), netns_bed.host("b")
    assert got == {"received": {"type": "hello", "from": "a", "db_client": a.host_ip}, "db_client": b.host_ip}


def test_a_port_on_one_hosts_loopback_is_out_of_the_other_hosts_reach(netns_bed, tmp_path):
    port = free_port()
    listener = netns_bed.spawn(
        "b", [sys.executable, "-c", LISTEN, str(port)], log_path=tmp_path / "listen.log"
    )
    netns_bed.wait_for(lambda: "listening" in (tmp_path / "listen.log").read_text(), 30, "b's listener up")
    assert listener.poll() is None

    def connect(host: str, address: str) -> str:
        return python_in(
            netns_bed, host, CONNECT, address, port, log=tmp_path / f"connect-{host}-{address}.log"
        )

    assert connect("b", "127.0.0.1") == "connected"  # the listener answers in its own host
    assert connect("a", "127.0.0.1") == "ConnectionRefusedError"  # a's loopback is a's own
    assert connect("a", netns_bed.host("b").host_ip) == "OSError"  # no route from a to b at all
    assert netns.can_connect("127.0.0.1", port) is False  # nor is it the root namespace's


def test_two_hosts_keep_their_tmux_servers_apart(netns_bed, tmp_path):
    for name in ("a", "b"):
        run_in(
            netns_bed,
            name,
            ["tmux", "-L", "lab", "new-session", "-d", "-s", f"on-{name}", "sleep 600"],
            tmp_path / f"new-{name}.log",
        )
    for name in ("a", "b"):
        out = run_in(
            netns_bed,
            name,
            ["tmux", "-L", "lab", "list-sessions", "-F", "#{session_name}"],
            tmp_path / f"ls-{name}.log",
        )
        assert out.split() == [f"on-{name}"], f"host {name}'s tmux server lists {out.split()}"
    assert netns_bed.host_env("a")["LAB_HOST"] == "a"
    envs = [netns_bed.host_env(n) for n in ("a", "b")]
    for key in ("LAB_DATA_DIR", "TMUX_TMPDIR", "LAB_AGENT_HOME", "DATABASE_URL", "REDIS_URL", "LAB_HOST"):
        assert envs[0][key] != envs[1][key], key


def test_killing_a_host_ends_everything_in_it_and_nothing_elsewhere(netns_bed, tmp_path):
    on_a = netns_bed.spawn("a", ["sleep", "600"])
    on_b = netns_bed.spawn("b", ["sleep", "600"])
    run_in(
        netns_bed,
        "b",
        ["tmux", "-L", "lab", "new-session", "-d", "-s", "x", "sleep 600"],
        tmp_path / "tmux.log",
    )
    in_b = ns_pids(netns_bed.host("b").ns)
    assert len(in_b) >= 2, in_b  # at least the sleep and the tmux server (out of every spawned group)

    assert sorted(netns_bed.kill_host("b")) == sorted(in_b)

    assert ns_pids(netns_bed.host("b").ns) == []
    assert on_b.returncode == -signal.SIGKILL
    assert on_a.poll() is None  # host a runs on
    assert ns_pids(netns_bed.host("a").ns) == [on_a.pid]


def test_teardown_leaves_nothing_behind(tmp_path):
    bed = NetnsBed(["a", "b"], logs_dir=tmp_path / "logs").start()
    try:
        bed.spawn("a", ["sleep", "600"])
        # A tmux server daemonizes out of the spawned process group: only emptying the
        # namespace reaches it.
        run_in(
            bed,
            "b",
            ["tmux", "-L", "lab", "new-session", "-d", "-s", "x", "sleep 600"],
            tmp_path / "tmux.log",
        )
        pids = [*bed.server_pids(), *ns_pids(bed.host("a").ns), *ns_pids(bed.host("b").ns)]
        assert len(pids) >= 5, pids  # redis, postmaster, sleep, tmux server, its shell or sleep
        assert leftovers(bed.id, pids)
    finally:
        bed.close()
    assert leftovers(bed.id, pids) == []


def test_a_bed_that_fails_to_start_takes_down_what_it_had_built(monkeypatch, tmp_path):
    def redis_fails(self):
        raise BedError("redis-server exited at once")

    monkeypatch.setattr(NetnsBed, "_start_redis", redis_fails)
    bed = NetnsBed(["a", "b"], logs_dir=tmp_path / "logs")
    with pytest.raises(BedError, match="redis-server exited at once"):
        bed.start()
    assert len(bed.hosts) == 2 and len(bed.server_pids()) == 1, "namespaces and PostgreSQL came up first"
    assert leftovers(bed.id, bed.server_pids()) == []


# A test run killed mid-test: it builds a bed, starts a process in it and dies by SIGKILL.
KILLED_RUN = """
import json, sys, time
from tests.deploy.netns import NetnsBed
bed = NetnsBed(["a"]).start()
sleeper = bed.spawn("a", ["sleep", "600"])
print(json.dumps({"id": bed.id, "pids": [*bed.server_pids(), sleeper.pid]}), flush=True)
time.sleep(600)
"""


def test_the_next_bed_sweeps_what_a_killed_run_left_and_spares_a_live_one(netns_bed_factory, tmp_path):
    live = netns_bed_factory(["live"])
    out = tmp_path / "killed-run.out"
    with out.open("wb") as fh:
        child = subprocess.Popen(
            [sys.executable, "-c", KILLED_RUN],
            cwd=ROOT,
            stdout=fh,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        line = wait_for(lambda: out.read_text().strip(), 60, "the killed run's bed up", [out])
        made = json.loads(line.splitlines()[-1])
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait(10)
    left = leftovers(made["id"], made["pids"])
    assert any(item.startswith("namespace") for item in left), left
    assert sum(item.startswith("process") for item in left) == 3, left  # redis, postmaster, sleep

    netns_bed_factory(["next"])  # starting a bed sweeps

    assert leftovers(made["id"], made["pids"]) == []
    # The live bed, whose owner (this process) is running, is untouched and still works.
    assert leftovers(live.id)
    assert live.host("live").ns in namespaces()
    assert python_in(live, "live", PROBE, log=tmp_path / "probe.log").endswith('"pong": true}')


def test_a_cut_link_takes_the_host_off_the_network_until_restored(netns_bed, tmp_path):
    def reaches(host: str, n: int) -> bool:
        addr = netns_bed.host(host).root_ip
        log = tmp_path / f"reach-{host}-{n}.log"
        return python_in(netns_bed, host, CONNECT, addr, netns_bed.pg_port, log=log) == "connected"

    assert reaches("a", 1)
    netns_bed.cut_link("a")
    assert not reaches("a", 2)
    assert reaches("b", 2)  # the other host is unaffected
    netns_bed.restore_link("a")
    attempts = iter(range(3, 100))
    netns_bed.wait_for(lambda: reaches("a", next(attempts)), 30, "a reaching PostgreSQL again")


def test_what_is_missing_is_named_with_its_package_and_the_bed_fails_rather_than_skips(monkeypatch):
    missing = netns.missing_tools(path="/nonexistent")
    assert any("iproute2" in m for m in missing) and any("redis-server" in m for m in missing), missing
    with pytest.raises(BedError, match="host name"):
        NetnsBed(["Not a name"])
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(BedError, match="needs root"):
        NetnsBed(["a"]).start()


def test_wait_for_gives_up_with_what_it_waited_for_and_the_logs_tail(tmp_path):
    log = tmp_path / "server.log"
    log.write_text("starting\nFATAL: could not bind\n")
    with pytest.raises(
        TimeoutError, match=r"runner up: still not so after 0.2 s(.|\n)*FATAL: could not bind"
    ):
        wait_for(lambda: False, 0.2, "runner up", [log])


def test_teardown_ends_a_root_namespace_process_daemons_too(tmp_path):
    """A web tier in the root namespace that starts runs has a tmux server of its own, which
    leaves the web tier's process group; teardown finds it by the bed's directory."""
    bed = NetnsBed(["a"], logs_dir=tmp_path / "logs").start()
    try:
        env = bed.web_env()
        started = bed.spawn(None, ["tmux", "-L", "lab", "new-session", "-d", "-s", "x", "sleep 600"], env=env)
        started.wait(30)
        out = subprocess.run(
            ["tmux", "-L", "lab", "display-message", "-p", "#{pid}"], env=env, capture_output=True, text=True
        )
        server = int(out.stdout.strip())
        assert os.getpgid(server) != started.pid  # out of the spawned group
    finally:
        bed.close()

    def gone() -> bool:
        try:
            return "zombie" in Path(f"/proc/{server}/status").read_text()
        except OSError:
            return True

    wait_for(gone, 10, f"the root namespace's tmux server {server} ending")
