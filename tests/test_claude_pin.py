import json
import subprocess
from pathlib import Path

from django.conf import settings

REPO = Path(__file__).resolve().parent.parent


def test_it_runs_the_pinned_claude_code_version():
    pin = json.loads((REPO / "package.json").read_text())["dependencies"]["@anthropic-ai/claude-code"]
    assert pin.count(".") == 2 and pin[0].isdigit(), "the pin must be an exact version"
    out = subprocess.run(
        [str(settings.LAB_AGENT_BIN_DIR / "claude"), "--version"], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[0] == pin
