"""The hook command Codex runs (compat/codex/COMPAT-adapter.md §6): append the hook's JSON to the
run's spool.

Invoked as `python -S hook_spool.py` with the payload on stdin and the spool directory in the
LAB_CODEX_SPOOL environment variable (inherited from the pane: one fixed command, so Codex's
trust hash for it never changes). It must never block or fail the CLI: a bounded read, an atomic
write (temp file + rename, so the watcher never sees half a file), exit 0 whatever happens.
Stdlib only, no Django.
"""

import os
import sys
import time

MAX_PAYLOAD = 4 * 1024 * 1024
SPOOL_ENV = "LAB_CODEX_SPOOL"


def main() -> int:
    try:
        spool = os.environ.get(SPOOL_ENV, "")
        if not spool or not os.path.isdir(spool):
            return 0  # Codex started outside lab (an operator's own shell): nothing to record
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
    sys.exit(main())
