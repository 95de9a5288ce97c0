"""The benchmarks are not collected by the suite (`make bench` runs them), so an import that a
refactoring broke would surface only there: every bench module must at least import."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
MODULES = sorted(
    [f"bench.{p.stem}" for p in (REPO / "bench").glob("*.py") if p.stem not in {"__init__", "__main__"}]
    + [f"tests.browser.{p.stem}" for p in (REPO / "tests" / "browser").glob("bench_*.py")]
)


def test_there_are_bench_modules_to_check():
    assert "bench.latency" in MODULES and "tests.browser.bench_e2e_cli" in MODULES


@pytest.mark.parametrize("module", MODULES)
def test_every_bench_module_imports(module):
    importlib.import_module(module)
