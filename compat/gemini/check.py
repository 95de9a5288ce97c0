"""What a Gemini CLI version breaks (compat/check.py does the work):

.venv/bin/python -m compat.gemini.check 0.62.0   # or: make compat-check VERSION=0.62.0 PROVIDER=gemini
.venv/bin/python -m compat.gemini.check latest
"""

from __future__ import annotations

from pathlib import Path

from compat import check
from compat.gemini.home import PACKAGE, PINNED_VERSION, installed_version

TARGET = check.Target(
    provider_id="gemini",
    name="Gemini CLI",
    package=PACKAGE,
    binary="gemini",
    compat_dir=Path(__file__).resolve().parent,
    pinned=PINNED_VERSION,
    installed_version=installed_version,
)


def main(argv: list[str] | None = None) -> int:
    return check.main(TARGET, argv)


if __name__ == "__main__":
    raise SystemExit(main())
