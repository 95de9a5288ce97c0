"""Push is on by default only where browsers allow it (an https origin or loopback); its
settings fail loud on bad values."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def push_settings(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    code = (
        "import json, django; from django.conf import settings; django.setup(); "
        "print(json.dumps([settings.LAB_PUSH, settings.LAB_PUSH_CONTACT, settings.LAB_PUSH_TTL]))"
    )
    base = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "LAB_DATA_DIR": str(tmp_path / "data"),
        "DJANGO_SETTINGS_MODULE": "lab.settings",
    }
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO,
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


REMOTE = {"LAB_BIND": "0.0.0.0:8000", "LAB_ALLOW_REMOTE": "true"}


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, [True, "mailto:operator@lab.invalid", 900]),
        ({**REMOTE, "LAB_ORIGIN": "https://lab.example.org"}, [True, "https://lab.example.org", 900]),
        ({**REMOTE, "LAB_ORIGIN": "http://192.168.1.5:8000"}, [False, "mailto:operator@lab.invalid", 900]),
        (
            {**REMOTE, "LAB_ORIGIN": "http://192.168.1.5:8000", "LAB_PUSH": "true"},
            [True, "mailto:operator@lab.invalid", 900],
        ),
        ({"LAB_PUSH": "false", "LAB_PUSH_TTL": "60"}, [False, "mailto:operator@lab.invalid", 60]),
    ],
)
def test_push_is_on_by_default_only_for_a_secure_origin(tmp_path, env, expected):
    proc = push_settings(tmp_path, **env)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.splitlines()[-1]) == expected


@pytest.mark.parametrize(
    ("env", "says"),
    [
        ({"LAB_PUSH": "maybe"}, "LAB_PUSH must be true or false"),
        ({"LAB_PUSH_TTL": "-5"}, "LAB_PUSH_TTL must be between 0 and 604800 seconds"),
        ({"LAB_PUSH_CONTACT": "ops@example.org"}, "LAB_PUSH_CONTACT must be a mailto: or https: URL"),
    ],
)
def test_bad_push_settings_stop_lab_with_the_reason(tmp_path, env, says):
    proc = push_settings(tmp_path, **env)
    assert proc.returncode != 0 and says in proc.stderr
