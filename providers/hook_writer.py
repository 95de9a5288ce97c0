"""The hook command every TUI adapter's CLI runs: append the hook's JSON to the run's spool
(providers/hookspool.py reads it).

Invoked as `python -S hook_writer.py [SPOOL_DIR]` with the payload on stdin. The spool dir is
the argument when given (Claude Code: its hooks are inline settings per run), else the
LAB_HOOK_SPOOL environment variable, inherited from the pane (Codex: one fixed command for every
run, so its trust hash for the command never changes). It must never block or fail the CLI: a
bounded read, an atomic write (temp file + rename, so the watcher never sees half a file), exit
0 whatever happens. Stdlib only, no Django: it starts in a few milliseconds.
"""

import os
import sys
import time

MAX_PAYLOAD = 4 * 1024 * 1024
SPOOL_ENV = "LAB_HOOK_SPOOL"


def main(argv: list[str]) -> int:
    try:
        spool = argv[1] if len(argv) > 1 else os.environ.get(SPOOL_ENV, "")
        if not spool or not os.path.isdir(spool):
            return 0  # the CLI started outside lab (an operator's own shell): nothing to record
        payload = sys.stdin.buffer.read(MAX_PAYLOAD)
        name = f"{time.time_ns():020d}-{os.getpid()}.json"
        tmp = os.path.join(spool, f".{name}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            view = memoryview(payload)
            while view:  # os.write may write less than asked: a short write must not land torn
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)
        os.rename(tmp, os.path.join(spool, name))
    except Exception:  # noqa: BLE001, S110 — a hook failure must never reach the CLI
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
