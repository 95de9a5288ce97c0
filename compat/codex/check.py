"""What a Codex CLI version breaks (compat/check.py does the work):

.venv/bin/python -m compat.codex.check 0.172.0   # or: make compat-check VERSION=0.172.0 PROVIDER=codex
.venv/bin/python -m compat.codex.check latest
"""

from __future__ import annotations

from pathlib import Path

from compat import check
from compat.codex.home import PACKAGE, PINNED_VERSION, installed_version

TARGET = check.Target(
    provider_id="codex",
    name="Codex",
    package=PACKAGE,
    binary="codex",
    compat_dir=Path(__file__).resolve().parent,
    pinned=PINNED_VERSION,
    installed_version=installed_version,
)


def main(argv: list[str] | None = None) -> int:
    return check.main(TARGET, argv)


if __name__ == "__main__":
    raise SystemExit(main())
