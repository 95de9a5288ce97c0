"""5. Reply → text present in the pane's program, through the adapter's paste path.

A tiny program in a real tmux pane (raw tty, bracketed paste on, as the agent TUI sets it)
timestamps every read from stdin. lab's path is Tmux.paste (load-buffer from stdin +
paste-buffer -p) then, after the adapter's deliberate pacing (ClaudeCodeProvider's
enter_delay, reported separately and not counted), Tmux.send_keys Enter. The baseline is the
common naive approach: `tmux send-keys -l TEXT` (the text as literal keys in argv).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import textwrap
import time
import uuid
from pathlib import Path

from bench.common import emit, kill_tmux_server, pct

STAMPER = textwrap.dedent(
    """
    import os, sys, time, tty
    tty.setraw(0)
    os.write(1, b"\\x1b[?2004h")  # bracketed paste on, as the agent TUI does
    out = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    while True:
        data = os.read(0, 65536)
        if not data:
            break
        os.write(out, b"%d %s\\n" % (time.monotonic_ns(), data.hex().encode()))
    """
)


class Log:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.pos = 0
        self.data = b""
        self.stamps: list[tuple[int, int]] = []  # (ns, cumulative bytes)

    def poll(self) -> None:
        with open(self.path, "rb") as f:
            f.seek(self.pos)
            chunk = f.read()
        end = chunk.rfind(b"\n") + 1
        self.pos += end
        for line in chunk[:end].splitlines():
            ns, hexed = line.split(b" ", 1)
            self.data += bytes.fromhex(hexed.decode())
            self.stamps.append((int(ns), len(self.data)))

    def wait_for(self, start: int, predicate, timeout: float = 10.0) -> int:  # type: ignore[no-untyped-def]
        """The timestamp of the read that made predicate(data since start) true."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.poll()
            if predicate(self.data[start:]):
                for ns, total in self.stamps:
                    if total > start and predicate(self.data[start:total]):
                        return ns
            time.sleep(0.0005)
        raise TimeoutError(f"not received: {self.data[start:][-200:]!r}")


def paste_one_call(sock: str, session: str, text: str) -> None:
    """The proposed Tmux.paste: load-buffer and paste-buffer -d chained with tmux's `;` in one
    process, instead of three tmux processes (load, paste, delete)."""
    buffer = f"lab-{uuid.uuid4().hex}"
    subprocess.run(
        ["tmux", "-L", sock, "-f", "/dev/null", "load-buffer", "-b", buffer, "-", ";",
         "paste-buffer", "-p", "-d", "-b", buffer, "-t", f"={session}:"],
        input=text.encode(), check=True, capture_output=True,
    )  # fmt: skip


def main() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from providers.claude_code.provider import enter_delay
    from providers.tmux import Tmux

    trials = int(os.environ.get("BENCH_REPLY_TRIALS", "20"))
    sock = f"labbench-reply-{os.getpid()}"
    tmp = Path(tempfile.mkdtemp(prefix="lab-bench-reply-"))
    log_path = tmp / "stdin.log"
    log_path.touch()
    script = tmp / "stamper.py"
    script.write_text(STAMPER)
    tmux = Tmux(sock)
    session = "stamper"
    tmux.new_session(session, cwd=str(tmp), argv=[sys.executable, str(script), str(log_path)], env={})
    log = Log(log_path)
    time.sleep(0.5)
    texts = {
        "short": "yes, go ahead",
        "600ch": ("Please refactor the watcher so it holds one lease per run. " * 11)[:564]
        + "\nThen run the tests and report back.",
    }
    out: dict[str, object] = {}
    try:
        for label, text in texts.items():
            paste, enter, naive, one = [], [], [], []
            for _ in range(trials):
                log.poll()
                start = len(log.data)
                t0 = time.monotonic_ns()
                tmux.paste(session, text)
                done = log.wait_for(start, lambda d: d.endswith(b"\x1b[201~"))
                paste.append((done - t0) / 1e6)
                time.sleep(enter_delay(text))  # the adapter's deliberate pacing (compat §6)
                log.poll()
                start = len(log.data)
                t1 = time.monotonic_ns()
                tmux.send_keys(session, "Enter")
                done = log.wait_for(start, lambda d: b"\r" in d)
                enter.append((done - t1) / 1e6)
                # baseline: the text typed as literal keys through argv
                log.poll()
                start = len(log.data)
                n = len(text.encode())
                t2 = time.monotonic_ns()
                subprocess.run(
                    ["tmux", "-L", sock, "send-keys", "-t", f"={session}:", "-l", text], check=True
                )
                done = log.wait_for(start, lambda d, n=n: len(d) >= n)
                naive.append((done - t2) / 1e6)
                # proposed fix: the same bracketed paste in ONE tmux invocation (-d deletes it)
                log.poll()
                start = len(log.data)
                t3 = time.monotonic_ns()
                paste_one_call(sock, session, text)
                done = log.wait_for(start, lambda d: d.endswith(b"\x1b[201~"))
                one.append((done - t3) / 1e6)
            out[label] = {
                "chars": len(text),
                "paste_p50": pct(paste, 50), "paste_p95": pct(paste, 95),
                "enter_p50": pct(enter, 50), "enter_p95": pct(enter, 95),
                "pacing_ms": enter_delay(text) * 1000,
                "naive_p50": pct(naive, 50), "naive_p95": pct(naive, 95),
                "one_call_p50": pct(one, 50), "one_call_p95": pct(one, 95),
            }  # fmt: skip
    finally:
        kill_tmux_server(sock)
    emit({"reply": out, "trials": trials})


if __name__ == "__main__":
    main()
