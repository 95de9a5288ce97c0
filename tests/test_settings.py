"""Settings fail loud on bad values, and the defaults are the embedded ones."""

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
GOOD_KEY = "k" * 20 + "abcdefghij0123456789ABCDEFGHIJ"


def load_settings(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """Import lab.settings in a fresh interpreter with exactly this environment."""
    base = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "LAB_DATA_DIR": str(tmp_path / "data"),
        "DJANGO_SETTINGS_MODULE": "lab.settings",
    }
    code = (
        "import json, django; from django.conf import settings; django.setup(); "
        "print(json.dumps({'db': settings.DATABASES['default']['ENGINE'], "
        "'layer': settings.CHANNEL_LAYERS['default']['BACKEND'], 'hosts': settings.ALLOWED_HOSTS, "
        "'origins': settings.LAB_ALLOWED_ORIGINS, 'name': str(settings.DATABASES['default']['NAME'])}))"
    )
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO,
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_it_defaults_to_sqlite_and_the_in_memory_layer_on_loopback(tmp_path):
    proc = load_settings(tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.splitlines()[-1])
    assert out["db"] == "django.db.backends.sqlite3"
    assert out["name"] == str(tmp_path / "data" / "lab.sqlite3")
    assert out["layer"] == "lab.layers.InMemoryChannelLayer"
    assert out["origins"] == ["http://127.0.0.1:8000", "http://localhost:8000"]
    assert out["hosts"] == ["127.0.0.1", "localhost"]


def test_it_generates_the_secret_key_once_with_0600(tmp_path):
    assert load_settings(tmp_path).returncode == 0
    key_file = tmp_path / "data" / "secret_key"
    first = key_file.read_text()
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert len(first) >= 50
    assert load_settings(tmp_path).returncode == 0
    assert key_file.read_text() == first
    assert not list((tmp_path / "data").glob(".secret_key*.tmp"))


def test_it_uses_postgres_and_redis_from_urls(tmp_path):
    proc = load_settings(
        tmp_path, DATABASE_URL="postgres://u:p@127.0.0.1:5432/lab", REDIS_URL="redis://127.0.0.1:6379/0"
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.splitlines()[-1])
    assert out["db"] == "django.db.backends.postgresql"
    assert out["layer"] == "channels_redis.core.RedisChannelLayer"


def test_it_derives_hosts_and_origin_from_the_bind(tmp_path):
    proc = load_settings(tmp_path, LAB_BIND="127.0.0.2:9001")
    out = json.loads(proc.stdout.splitlines()[-1])
    assert out["hosts"] == ["127.0.0.2"]
    assert out["origins"] == ["http://127.0.0.2:9001"]


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"LAB_BIND": "nonsense"}, "LAB_BIND must be HOST:PORT"),
        ({"LAB_BIND": "127.0.0.1:99999"}, "LAB_BIND must be HOST:PORT"),
        ({"LAB_BIND": "0.0.0.0:8000"}, "not a loopback address"),
        ({"LAB_BIND": "192.0.2.7:8000"}, "not a loopback address"),
        ({"SECRET_KEY": "short"}, "too short"),
        ({"SECRET_KEY": "x" * 60}, "too simple"),
        ({"SECRET_KEY": "django-insecure-" + GOOD_KEY}, "well-known placeholder"),
        ({"REDIS_URL": "http://127.0.0.1:6379"}, "REDIS_URL must be a redis:// URL"),
        ({"LAB_AGENT_ENV": "{nope"}, "LAB_AGENT_ENV is not JSON"),
        ({"LAB_AGENT_ENV": '{"A": 1}'}, "JSON object of strings"),
        ({"LAB_PROVIDERS_ENABLED": "newcli"}, "unknown provider 'newcli'"),
        ({"LAB_TMUX_SOCKET": "a;b"}, "LAB_TMUX_SOCKET"),
        ({"LAB_ORIGIN": "ftp://x"}, "LAB_ORIGIN must be"),
        ({"DEBUG": "maybe"}, ""),
    ],
)
def test_it_refuses_bad_values(tmp_path, env, message):
    proc = load_settings(tmp_path, **env)
    assert proc.returncode != 0
    if message:
        assert "ImproperlyConfigured" in proc.stderr
        assert message in proc.stderr


def test_it_serves_a_remote_bind_only_when_allowed(tmp_path):
    proc = load_settings(tmp_path, LAB_BIND="0.0.0.0:8000", LAB_ALLOW_REMOTE="true", SECRET_KEY=GOOD_KEY)
    assert proc.returncode == 0, proc.stderr


# --- the data dir is lab's user's alone ------------------------------------------------------


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_a_pre_created_open_data_dir_and_database_are_made_private(tmp_path):
    data = tmp_path / "data"
    (data / "runs").mkdir(parents=True)
    for path in (data, data / "runs"):
        path.chmod(0o755)
    for name in ("lab.sqlite3", "lab.sqlite3-wal", "lab.sqlite3-shm", "secret_key"):
        (data / name).write_text(GOOD_KEY if name == "secret_key" else "")
        (data / name).chmod(0o644)
    proc = load_settings(tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert _mode(data) == _mode(data / "runs") == 0o700
    for name in ("lab.sqlite3", "lab.sqlite3-wal", "lab.sqlite3-shm", "secret_key"):
        assert _mode(data / name) == 0o600, name


def test_the_database_lab_creates_is_0600_whatever_the_umask(tmp_path):
    code = (
        "import os, django; os.umask(0); django.setup(); from django.db import connection; "
        "connection.cursor().execute('CREATE TABLE t (x)'); connection.close()"
    )
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "LAB_DATA_DIR": str(tmp_path / "data")}
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO,
        env={**env, "DJANGO_SETTINGS_MODULE": "lab.settings"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    data = tmp_path / "data"
    assert _mode(data / "lab.sqlite3") == 0o600
    assert [p.name for p in data.glob("lab.sqlite3-*") if _mode(p) != 0o600] == []


def test_a_symlinked_database_file_stops_lab_and_says_why(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "elsewhere").write_text("")
    (tmp_path / "data" / "lab.sqlite3").symlink_to(tmp_path / "elsewhere")
    proc = load_settings(tmp_path)
    assert proc.returncode != 0
    assert "ImproperlyConfigured" in proc.stderr
    assert "lab.sqlite3 is not a regular file" in proc.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user needs root")
def test_a_data_dir_of_another_user_stops_lab_and_says_why(tmp_path):
    (tmp_path / "data").mkdir(mode=0o755)
    os.chown(tmp_path / "data", 65534, 65534)
    proc = load_settings(tmp_path)
    assert proc.returncode != 0
    assert "belongs to user id 65534" in proc.stderr and "LAB_DATA_DIR of your own" in proc.stderr


def test_a_fifo_as_the_secret_key_file_stops_lab_at_once(tmp_path):
    (tmp_path / "data").mkdir()
    os.mkfifo(tmp_path / "data" / "secret_key")
    proc = load_settings(tmp_path)  # its own 60 s bound: a read of the FIFO would wait forever
    assert proc.returncode != 0
    assert "secret_key is not a regular file" in proc.stderr
