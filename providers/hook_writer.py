"""The hook command every TUI adapter's CLI runs: append the hook's JSON to the run's spool
(providers/hookspool.py reads it).

Invoked as `python -S hook_writer.py [SPOOL_DIR]` with the payload on stdin. As a status line
(`--status FILE [-- COMMAND...]`, Claude Code's statusLine) it keeps only the latest payload, in
FILE, then runs the operator's own status line COMMAND on the same payload and prints what it
prints (that is what the TUI shows). The spool dir is
the argument when given (Claude Code: its hooks are inline settings per run), else the
LAB_HOOK_SPOOL environment variable, inherited from the pane (Codex: one fixed command for every
run, so its trust hash for the command never changes). It must never block or fail the CLI: a
bounded read, an atomic write (temp file + rename, so the watcher never sees half a file), exit
0 whatever happens. Stdlib only, no Django: it starts in a few milliseconds.
"""

import os
import subprocess
import sys
import time

MAX_PAYLOAD = 4 * 1024 * 1024
SPOOL_ENV = "LAB_HOOK_SPOOL"
STATUS_FLAG = "--status"
CHAIN_TIMEOUT_S = 5


def _write_all(fd: int, payload: bytes) -> None:
    view = memoryview(payload)
    while view:  # os.write may write less than asked: a short write must not land torn
        view = view[os.write(fd, view) :]


def status(argv: list[str]) -> int:
    """The status line: the latest payload replaces FILE (the CLI calls it on every status
    change; only the newest matters), then the operator's own command, if any, draws the line."""
    payload = b""
    try:
        payload = sys.stdin.buffer.read(MAX_PAYLOAD)
        target = argv[2]
        if os.path.isdir(os.path.dirname(target) or "."):
            folder, name = os.path.split(target)
            tmp = os.path.join(folder, f".{name}.{os.getpid()}.tmp")  # a dot name: never read
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            try:
                _write_all(fd, payload)
            finally:
                os.close(fd)
            os.rename(tmp, target)
    except Exception:  # noqa: BLE001, S110 — the status line must never fail the CLI
        pass
    chain = argv[argv.index("--") + 1 :] if "--" in argv else []
    if chain:
        try:
            done = subprocess.run(
                chain, input=payload, capture_output=True, timeout=CHAIN_TIMEOUT_S, check=False
            )
            sys.stdout.buffer.write(done.stdout)
            sys.stdout.flush()
        except Exception:  # noqa: BLE001, S110 — the operator's command failing draws nothing
            pass
    return 0


def main(argv: list[str]) -> int:
    if len(argv) > 2 and argv[1] == STATUS_FLAG:
        return status(argv)
    try:
        spool = argv[1] if len(argv) > 1 else os.environ.get(SPOOL_ENV, "")
        if not spool or not os.path.isdir(spool):
            return 0  # the CLI started outside lab (an operator's own shell): nothing to record
        payload = sys.stdin.buffer.read(MAX_PAYLOAD)
        name = f"{time.time_ns():020d}-{os.getpid()}.json"
        tmp = os.path.join(spool, f".{name}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            _write_all(fd, payload)
        finally:
            os.close(fd)
        os.rename(tmp, os.path.join(spool, name))
    except Exception:  # noqa: BLE001, S110 — a hook failure must never reach the CLI
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
