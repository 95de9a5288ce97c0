"""What a Claude Code version breaks (compat/check.py does the work):

.venv/bin/python -m compat.claude_code.check 2.1.332   # or: make compat-check VERSION=2.1.332
.venv/bin/python -m compat.claude_code.check latest
"""

from __future__ import annotations

from pathlib import Path

from compat import check
from compat.claude_code.home import PACKAGE, PINNED_VERSION, installed_version

TARGET = check.Target(
    provider_id="claude-code",
    name="Claude Code",
    package=PACKAGE,
    binary="claude",
    compat_dir=Path(__file__).resolve().parent,
    pinned=PINNED_VERSION,
    installed_version=installed_version,
)


def main(argv: list[str] | None = None) -> int:
    return check.main(TARGET, argv)


if __name__ == "__main__":
    raise SystemExit(main())
