import json
import subprocess
from pathlib import Path

from django.conf import settings

from compat.claude_code.home import PACKAGE, PINNED_VERSION, claude_binary, fixtures_dir, installed_version

REPO = Path(__file__).resolve().parents[3]


def test_it_runs_the_pinned_claude_code_version():
    pin = json.loads((REPO / "package.json").read_text())["dependencies"][PACKAGE]
    assert pin.count(".") == 2 and pin[0].isdigit(), "the pin must be an exact version"
    out = subprocess.run(
        [str(settings.LAB_AGENT_BIN_DIR / "claude"), "--version"], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[0] == pin


def test_package_json_is_the_one_place_the_version_is_written():
    # An upgrade is one line in package.json (then `npm ci`, new captures): everything else
    # derives from it, and the pinned version has its own captured fixtures.
    pin = json.loads((REPO / "package.json").read_text())["dependencies"][PACKAGE]
    assert PINNED_VERSION == pin == installed_version(claude_binary())
    assert sorted(fixtures_dir().glob("*.jsonl")), f"no fixtures captured from {pin}"
    lock = json.loads((REPO / "package-lock.json").read_text())
    assert lock["packages"][""]["dependencies"][PACKAGE] == pin
    assert lock["packages"][f"node_modules/{PACKAGE}"]["version"] == pin
