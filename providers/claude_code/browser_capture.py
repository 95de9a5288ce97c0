"""The BROWSER program lab hands `claude auth login`: it records the URL and opens nothing.

compat §11: the CLI runs `$BROWSER <url>` once, with the localhost-redirect URL. It does not
split $BROWSER on spaces, so auth.py points BROWSER at a generated one-line wrapper that runs
`python -I -S browser_capture.py <capture file> <url>`.

Stdlib only, no Django, no lab imports: it runs under `-I -S` in a process of the CLI's.
"""

from __future__ import annotations

import os
import sys

MAX_URL = 8192


def capture(capture_file: str, urls: list[str]) -> None:
    # Append-only and 0600: the file lives in lab's private 0700 temp dir; one URL a line.
    fd = os.open(capture_file, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    with os.fdopen(fd, "a", encoding="utf-8") as f:
        for url in urls:
            if url and len(url) <= MAX_URL and "\n" not in url and "\r" not in url:
                f.write(url + "\n")


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        return 2
    capture(argv[1], argv[2:])
    return 0  # "opened": the CLI then waits for a code or for its callback


if __name__ == "__main__":
    sys.exit(main(sys.argv))
