"""8. The real CLI end to end: tests/browser/bench_e2e_cli.py under pytest (it needs the browser
tests' fixtures: lab under daphne, the scripted model, the pinned Claude Code, Chromium). Its
BENCH-RESULT line passes through on stdout."""

from __future__ import annotations

import sys

import pytest

from bench.common import ROOT


def main() -> None:
    sys.exit(
        pytest.main(
            [str(ROOT / "tests" / "browser" / "bench_e2e_cli.py"), "-q", "-s", "-p", "no:cacheprovider"]
        )
    )


if __name__ == "__main__":
    main()
