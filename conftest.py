"""Suite-wide: an isolated data dir and tmux socket per session, so tests never touch the
operator's lab, and the settings lab reads at import time are set before Django loads."""

import os
import tempfile

import pytest

_tmp = tempfile.mkdtemp(prefix="lab-test-")
os.environ.setdefault("LAB_DATA_DIR", os.path.join(_tmp, "data"))
os.environ.setdefault("LAB_TMUX_SOCKET", f"labtest-{os.getpid()}")
os.environ.setdefault("LAB_AGENT_HOME", os.path.join(_tmp, "agent-home"))


@pytest.fixture(scope="session")
def django_db_modify_db_settings(django_db_modify_db_settings_parallel_suffix: None) -> None:
    """SQLite tests run on a file, as lab does (WAL, busy timeout): the in-memory shared-cache
    database Django would use instead fails a second writer at once ("table is locked") where
    the real one waits, so concurrent writers (the dialog answer claim) could not be tested."""
    from django.conf import settings

    db = settings.DATABASES["default"]
    if db["ENGINE"] == "django.db.backends.sqlite3":
        db.setdefault("TEST", {})["NAME"] = os.path.join(_tmp, "test.sqlite3")


@pytest.fixture
def operator(db):
    from tests.factories import UserFactory

    return UserFactory()


@pytest.fixture
def authed_client(client, operator):
    client.force_login(operator)
    return client


@pytest.fixture(autouse=True)
def _fresh_cache():
    # The login throttle's counters live in the cache: one test's failures are not the next's.
    from django.core.cache import cache

    cache.clear()


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    # PBKDF2's production cost makes every login in a test take seconds on a 2-core machine.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def git_repo(tmp_path):
    """A fresh git repository with one commit."""
    import subprocess

    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-c", "user.name=lab-test", "-c", "user.email=lab-test@example.invalid"]
    subprocess.run([*git, "init", "-q", "-b", "main"], cwd=repo, check=True)
    (repo / "README.md").write_text("# test repo\n")
    subprocess.run([*git, "add", "README.md"], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "initial"], cwd=repo, check=True)
    return repo


@pytest.fixture
def fake_provider(settings, tmp_path, monkeypatch):
    """The FakeProvider (every capability) enabled as the only provider, on a private tmux socket."""
    from providers import registry
    from providers.testing import FAKE_ROOT_ENV

    monkeypatch.setenv(FAKE_ROOT_ENV, str(tmp_path / "fake-transcripts"))
    settings.LAB_PROVIDERS = {"fake": "providers.testing.FullFakeProvider"}
    settings.LAB_DEFAULT_PROVIDER = "fake"
    settings.LAB_TMUX_SOCKET = f"labtest-{os.getpid()}-{tmp_path.name[-8:]}"
    settings.DATA_DIR = tmp_path / "data"
    settings.LAB_RUNS_DIR = tmp_path / "data" / "runs"
    registry._load.cache_clear()
    provider = registry.get_provider("fake")
    yield provider
    from providers.tmux import Tmux

    Tmux(settings.LAB_TMUX_SOCKET).kill_server()
    registry._load.cache_clear()


@pytest.fixture
def fresh_indexes():
    """This process's transcript indexes, empty before and after the test (they outlive tests)."""
    from live.frames import _gap_frames
    from runs.transcripts import _indexes

    _indexes.clear()
    _gap_frames.clear()
    yield _indexes
    _indexes.clear()
    _gap_frames.clear()


@pytest.fixture(autouse=True)
def _no_web_push(settings):
    # A test sends Web Push only when it asks for it (push/tests/): the sender's thread would
    # otherwise outlive the test's database.
    settings.LAB_PUSH = False
