"""lab's one settings file: everything from the environment, failing loud on bad values.

The embedded default is a SQLite file and the in-memory channel layer in LAB_DATA_DIR;
DATABASE_URL and REDIS_URL switch to PostgreSQL and channels-redis.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
import secrets
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

import django_stubs_ext
import environ
from django.core.exceptions import ImproperlyConfigured
from django.utils.csp import CSP

from lab.private import NotPrivate, private_dir, private_file
from providers.known import KNOWN_PROVIDERS

django_stubs_ext.monkeypatch()  # lets ModelAdmin[Run] and QuerySet["Run"] subscript at runtime

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.Env()

_TRUE, _FALSE = {"1", "true", "yes", "on"}, {"0", "false", "no", "off", ""}


def env_bool(name: str, default: bool) -> bool:
    """Strict booleans: django-environ reads "maybe" as False; a typo must not mean "off"."""
    raw = os.environ.get(name)
    if raw is None:
        return default
    if raw.strip().lower() in _TRUE:
        return True
    if raw.strip().lower() in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name} must be true or false, got {raw!r}")


if (BASE_DIR / ".env").exists():
    environ.Env.read_env(BASE_DIR / ".env")  # optional; real environment variables win

DEBUG = env_bool("DEBUG", False)

DATA_DIR = Path(env.str("LAB_DATA_DIR", default=str(BASE_DIR / "var"))).expanduser().resolve()


def _private(fix: Callable[[Path], None], path: Path) -> None:
    try:
        fix(path)
    except NotPrivate as exc:
        raise ImproperlyConfigured(str(exc)) from None


_private(private_dir, DATA_DIR)


# --- bind, hosts, origins --------------------------------------------------------------------


def _parse_bind(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ImproperlyConfigured(f"LAB_BIND must be HOST:PORT, got {value!r}")
    return host, int(port)


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


LAB_BIND = env.str("LAB_BIND", default="127.0.0.1:8000")
BIND_HOST, BIND_PORT = _parse_bind(LAB_BIND)
LAB_ALLOW_REMOTE = env_bool("LAB_ALLOW_REMOTE", False)
if not _is_loopback(BIND_HOST) and not LAB_ALLOW_REMOTE:
    # Whoever reaches lab can run code through the agent: leaving loopback is a decision.
    raise ImproperlyConfigured(
        f"LAB_BIND={LAB_BIND} is not a loopback address; set LAB_ALLOW_REMOTE=true to serve it "
        "(behind TLS, with a strong operator password)."
    )

_bind_host_for_url = f"[{BIND_HOST}]" if ":" in BIND_HOST else BIND_HOST
LAB_ORIGIN = env.str("LAB_ORIGIN", default=f"http://{_bind_host_for_url}:{BIND_PORT}").rstrip("/")
_origin = urlsplit(LAB_ORIGIN)
if _origin.scheme not in ("http", "https") or not _origin.hostname or _origin.path:
    raise ImproperlyConfigured(f"LAB_ORIGIN must be scheme://host[:port], got {LAB_ORIGIN!r}")

# The exact origins a browser page of lab has; websockets from anything else are refused.
LAB_ALLOWED_ORIGINS = [LAB_ORIGIN]
ALLOWED_HOSTS = [_origin.hostname]
if _is_loopback(BIND_HOST) and _origin.hostname in ("127.0.0.1", "::1"):
    # The same loopback server under its other name; a rebinding page cannot take it.
    alias = LAB_ORIGIN.replace(_bind_host_for_url, "localhost", 1)
    LAB_ALLOWED_ORIGINS.append(alias)
    ALLOWED_HOSTS.append("localhost")
ALLOWED_HOSTS += env.list("LAB_EXTRA_HOSTS", default=[])
CSRF_TRUSTED_ORIGINS = list(LAB_ALLOWED_ORIGINS)


# --- the secret key --------------------------------------------------------------------------

_WELL_KNOWN_KEYS = {"changeme", "secret", "secret_key", "django-insecure", "your-secret-key"}


def _check_secret_key(key: str) -> str:
    if len(key) < 50 or len(set(key)) < 5:
        raise ImproperlyConfigured("SECRET_KEY is too short or too simple (50+ varied characters).")
    if key.lower() in _WELL_KNOWN_KEYS or key.startswith("django-insecure"):
        raise ImproperlyConfigured("SECRET_KEY is a well-known placeholder; generate a real one.")
    return key


def _generated_secret_key(path: Path) -> str:
    """Generated once into the data dir, 0600; written to a temp file and renamed so a kill
    mid-write never leaves a torn key."""
    for stale in path.parent.glob(f".{path.name}.*.tmp"):  # left by a process killed mid-write
        if not Path(f"/proc/{stale.name.split('.')[2]}").exists():
            stale.unlink(missing_ok=True)
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        pass
    key = secrets.token_urlsafe(64)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(key)
        f.flush()
        os.fsync(f.fileno())
    try:
        os.link(tmp, path)  # never overwrite a key another process wrote first
    except FileExistsError:
        key = path.read_text().strip()
    finally:
        tmp.unlink()
    return key


# A key file from before lab wrote it 0600 (or copied in by hand) is made 0600 too; one that is
# not a regular file stops lab before anything reads it.
_private(private_file, DATA_DIR / "secret_key")
SECRET_KEY = _check_secret_key(
    env.str("SECRET_KEY", default="") or _generated_secret_key(DATA_DIR / "secret_key")
)


# --- apps ------------------------------------------------------------------------------------

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "django_htmx",
    "accounts",
    "hosts",
    "runs",
    "live",
    "terminal",
    "push",
    "auth_flows",
    "seeding",
    "compat",  # management commands only: make demo, the scripted model
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "lab.headers.NoStoreMiddleware",  # outermost but security: it marks every response
    "lab.errors.TmuxNotAnsweringMiddleware",  # a stopped tmux server: a 503 that says so
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "lab.csrf.CsrfViewMiddleware",  # Django's, plus a required Origin or Referer
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.auth.middleware.LoginRequiredMiddleware",
    "runs.relay.HostRelayMiddleware",  # a run of another host: relayed to its runner
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
]

ROOT_URLCONF = "lab.urls"
ASGI_APPLICATION = "lab.asgi.application"
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "runs:list"
LOGOUT_REDIRECT_URL = "login"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.template.context_processors.csp",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
            "builtins": ["runs.templatetags.runs_extras"],
        },
    }
]

DATABASES = {
    "default": env.db_url("DATABASE_URL", default=f"sqlite:///{DATA_DIR / 'lab.sqlite3'}"),
}
# Reuse connections (the watcher and the sockets query on every change), checked before use.
DATABASES["default"]["CONN_MAX_AGE"] = env.int("CONN_MAX_AGE", default=60)
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # WAL + a busy timeout: the watcher and request handlers write concurrently.
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {"init_command": "PRAGMA journal_mode=WAL;", "timeout": 20, "transaction_mode": "IMMEDIATE"}
    )
    _sqlite = str(DATABASES["default"]["NAME"])
    if _sqlite and _sqlite != ":memory:" and not _sqlite.startswith("file:"):
        # Created here at 0600 so SQLite's own create, whatever the umask, cannot leave it
        # readable; SQLite gives its -wal and -shm files the database file's mode.
        _private(lambda p: private_file(p, create=True), Path(_sqlite))
        for _suffix in ("-wal", "-shm", "-journal"):
            _private(private_file, Path(_sqlite + _suffix))
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS_URL = env.str("REDIS_URL", default="")
if REDIS_URL:
    if urlsplit(REDIS_URL).scheme not in ("redis", "rediss", "unix"):
        raise ImproperlyConfigured(f"REDIS_URL must be a redis:// URL, got {REDIS_URL!r}")
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            # redis-py's 5 s socket timeout equals channels-redis's 5 s blocking pop, so an idle
            # socket's read timed out and daphne dropped the consumer: give the pop room.
            "CONFIG": {
                "hosts": [{"address": REDIS_URL, "socket_timeout": 30}],
                # A relayed socket's frames queue on the web tier's channel (several machines):
                # a page catching up sends many at once, past channels' default of 100.
                "channel_capacity": {"specific.*": 1000},
            },
        }
    }
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "lab.layers.InMemoryChannelLayer"}}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator", "OPTIONS": {"min_length": 12}},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = env.str("TIME_ZONE", default="UTC")
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
# xterm.js and its fit addon come from npm (pinned in package.json), served as they are: the
# Terminal view needs no build step.
STATICFILES_DIRS = [
    BASE_DIR / "static",
    ("xterm", BASE_DIR / "node_modules" / "@xterm" / "xterm"),
    ("xterm-fit", BASE_DIR / "node_modules" / "@xterm" / "addon-fit"),
]
STATIC_ROOT = DATA_DIR / "static"


# --- security headers ------------------------------------------------------------------------

SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF, CSP.NONCE],
    "style-src": [CSP.SELF],
    "img-src": [CSP.SELF, "data:"],
    "connect-src": [CSP.SELF],
    "frame-ancestors": [CSP.NONE],
    "form-action": [CSP.SELF],
    "base-uri": [CSP.NONE],
    "object-src": [CSP.NONE],
}
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_SAMESITE = "Strict"
_https = _origin.scheme == "https"
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = _https
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", False)
SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)
if _https:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SILENCED_SYSTEM_CHECKS = env.list("LAB_SILENCED_CHECKS", default=[])
# The deploy check looks for Django's CSRF middleware by its dotted name. lab's subclass is that
# middleware plus a required Origin or Referer (lab/csrf.py), so its warning is silenced only
# while the subclass is in MIDDLEWARE: without either, the warning comes back.
if "lab.csrf.CsrfViewMiddleware" in MIDDLEWARE:
    SILENCED_SYSTEM_CHECKS.append("security.W003")


# --- lab -------------------------------------------------------------------------------------

# The explicit provider registry (docs/architecture.md): id -> dotted path, one line per provider in
# providers/known.py. LAB_PROVIDERS_ENABLED picks.
LAB_KNOWN_PROVIDERS = dict(KNOWN_PROVIDERS)
_enabled = env.list("LAB_PROVIDERS_ENABLED", default=list(LAB_KNOWN_PROVIDERS))
for _pid in _enabled:
    if _pid not in LAB_KNOWN_PROVIDERS:
        raise ImproperlyConfigured(f"LAB_PROVIDERS_ENABLED names an unknown provider {_pid!r}")
LAB_PROVIDERS = {pid: LAB_KNOWN_PROVIDERS[pid] for pid in _enabled}
LAB_DEFAULT_PROVIDER = _enabled[0] if _enabled else ""

# Several machines (docs/architecture.md): the host this process is, and its role: `all` is web
# tier and this host's runner at once (the one-process default), `web` relays every run to its
# host's runner. `manage.py runner` is the runner role whatever this says.
LAB_HOST = env.str("LAB_HOST", default="local")
if not re.fullmatch(r"[a-z0-9][a-z0-9-]{0,39}", LAB_HOST):
    raise ImproperlyConfigured("LAB_HOST is lowercase letters, digits and '-', at most 40, e.g. build-2")
LAB_ROLE = env.str("LAB_ROLE", default="all")
if LAB_ROLE not in ("all", "web"):
    raise ImproperlyConfigured("LAB_ROLE is `all` (web tier and runner) or `web` (web tier only)")
# The credential a runner joins its host with (`manage.py host add NAME` prints it).
LAB_RUNNER_TOKEN = env.str("LAB_RUNNER_TOKEN", default="")

# lab's own tmux server: never the operator's default one.
LAB_TMUX_SOCKET = env.str("LAB_TMUX_SOCKET", default="lab")
if not LAB_TMUX_SOCKET.replace("-", "").replace("_", "").isalnum():
    raise ImproperlyConfigured("LAB_TMUX_SOCKET may hold letters, digits, '-' and '_' only")

# Where agent CLIs installed by npm live, and what every spawned agent gets in its env
# (e.g. {"ANTHROPIC_BASE_URL": "http://127.0.0.1:9100"} for the offline demo).
LAB_AGENT_BIN_DIR = Path(env.str("LAB_AGENT_BIN_DIR", default=str(BASE_DIR / "node_modules" / ".bin")))
try:
    LAB_AGENT_ENV: dict[str, str] = json.loads(env.str("LAB_AGENT_ENV", default="{}"))
except json.JSONDecodeError as exc:
    raise ImproperlyConfigured(f"LAB_AGENT_ENV is not JSON: {exc}") from None
if not isinstance(LAB_AGENT_ENV, dict) or not all(
    isinstance(k, str) and isinstance(v, str) for k, v in LAB_AGENT_ENV.items()
):
    raise ImproperlyConfigured("LAB_AGENT_ENV must be a JSON object of strings")
# An agent HOME other than the operator's (the demo and the tests use a private one).
LAB_AGENT_HOME = env.str("LAB_AGENT_HOME", default="")

LAB_RUNS_DIR = DATA_DIR / "runs"  # per-run spool dirs and the like
_private(private_dir, LAB_RUNS_DIR)

# What the generic seeder writes into every new worktree; "" means the data dir's seed/ files.
LAB_SEED_CONTEXT_FILE = env.str("LAB_SEED_CONTEXT_FILE", default="")
LAB_SEED_SKILLS_DIR = env.str("LAB_SEED_SKILLS_DIR", default="")
# The operator's defaults for each new run (the new-run form can change them per run): the
# agent's attribution lines in commits and PRs, and what to do with a repository's own MCP
# servers (they run code; "reject" keeps them off without a start-up prompt).
LAB_SEED_ATTRIBUTION = env_bool("LAB_SEED_ATTRIBUTION", True)
LAB_SEED_PROJECT_MCP = env.str("LAB_SEED_PROJECT_MCP", default="reject")
if LAB_SEED_PROJECT_MCP not in ("approve", "reject"):
    raise ImproperlyConfigured(
        f"LAB_SEED_PROJECT_MCP must be approve or reject, got {LAB_SEED_PROJECT_MCP!r}"
    )
# Test-only: extra environment for a provider's login child (the offline login test points
# it at a local TLS proxy). Never set in production; there is no environment variable for it.
LAB_LOGIN_EXTRA_ENV: dict[str, str] = {}
LAB_REPLY_MAX_BYTES = env.int("LAB_REPLY_MAX_BYTES", default=64 * 1024)
# Continue at a usage limit's reset (runs/schedule.py): the message sent, how long after the
# CLI's reset time, and how often the serve process looks for due messages.
LAB_CONTINUE_TEXT = env.str("LAB_CONTINUE_TEXT", default="continue")
LAB_CONTINUE_MARGIN_S = env.int("LAB_CONTINUE_MARGIN_S", default=60)
LAB_SCHEDULE_POLL_S = env.int("LAB_SCHEDULE_POLL_S", default=5)
DATA_UPLOAD_MAX_MEMORY_SIZE = max(LAB_REPLY_MAX_BYTES * 2, 2_621_440)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"client_errors_in_one_line": {"()": "lab.errors.ClientErrorsInOneLine"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "filters": ["client_errors_in_one_line"]}},
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="INFO")},
    "loggers": {"daphne": {"level": "WARNING"}},
}


# --- Web Push (push/) --------------------------------------------------------------------------

# Browsers offer service workers and push only to a secure context: an https origin or
# loopback. Elsewhere push is off unless asked for (the account page says why it would fail).
LAB_PUSH = env_bool("LAB_PUSH", _https or _is_loopback(_origin.hostname or ""))
# The VAPID key pair (RFC 8292), generated on first use; a push service ties every
# subscription to it, so it is kept like the secret key.
LAB_PUSH_KEY_FILE = DATA_DIR / "vapid_private.pem"
_private(private_file, LAB_PUSH_KEY_FILE)
# The VAPID "sub" claim: whom a push service may contact about lab's pushes.
LAB_PUSH_CONTACT = env.str(
    "LAB_PUSH_CONTACT", default=LAB_ORIGIN if _https else "mailto:operator@lab.invalid"
)
if not LAB_PUSH_CONTACT.startswith(("mailto:", "https://")):
    raise ImproperlyConfigured(f"LAB_PUSH_CONTACT must be a mailto: or https: URL, got {LAB_PUSH_CONTACT!r}")
# How long a push service keeps an undelivered push (RFC 8030 TTL): a "needs input" from hours
# ago is stale.
LAB_PUSH_TTL = env.int("LAB_PUSH_TTL", default=900)
if not 0 <= LAB_PUSH_TTL <= 7 * 24 * 3600:
    raise ImproperlyConfigured(f"LAB_PUSH_TTL must be between 0 and 604800 seconds, got {LAB_PUSH_TTL}")
# Test-only: accept a subscription whose endpoint is plain http (the tests' local push
# service). Every browser's push service is https; there is no environment variable for it.
LAB_PUSH_HTTP_ENDPOINTS = False
