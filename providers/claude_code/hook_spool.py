"""The hook command Claude Code runs (compat §8): append the hook's JSON to lab's spool.

Invoked as `python hook_spool.py SPOOL_DIR` with the payload on stdin. It must never block or
fail the CLI: it reads a bounded payload, writes it atomically (temp file + rename, so the
watcher never sees half a file), and exits 0 whatever happens. Stdlib only, no Django: it
starts in a few milliseconds.
"""

import os
import sys
import time

MAX_PAYLOAD = 4 * 1024 * 1024


def main(argv: list[str]) -> int:
    try:
        spool = argv[1]
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
