"""lab's own git: every git command lab itself runs goes through here. No Django.

A repository is untrusted input, and so is a worktree the agent can write (it shares the
repository's config). Git runs programs a repository's config names: `core.fsmonitor` on status
and diff, hooks on `worktree add` (post-checkout, reference-transaction), filter drivers that
`.gitattributes` selects on every read or write of a work-tree file, diff drivers and textconv,
the upload-pack of a partial clone's lazy fetch. None of them runs here:

- fixed `-c` settings turn off fsmonitor, hooks, submodule recursion, signatures, auto gc and
  every transport (lab's git never fetches, so a lazy fetch cannot start a remote's programs);
- every `filter.<name>.clean/smudge/process` that the repository's own config (local or
  worktree scope, and what those include) defines is overridden with an empty command, which git
  treats as "no filter". In-tree `.gitattributes` cannot be turned off in git 2.39, so the drivers
  are what is disabled. The operator's own drivers (system or global config, git-lfs say) stay;
- diff callers pass DIFF_SAFETY (no external diff, no textconv).

The override list is read by a `git config` run just before each command. An agent that could
rewrite the config between the two runs would already be running programs of its own, so that
window gives it nothing new.

Every command is bounded: git starts in its own process group, and at the bound the whole group
is killed and reaped and GitTimeout says what was stopped. Output stays bytes; `text()` decodes
what is shown (bad bytes become U+FFFD), `path()` what goes back to git (surrogateescape).
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import IO

TIMEOUT_S = 60.0
# stderr is only ever shown as a message: the rest is dropped.
STDERR_MAX_BYTES = 64 * 1024
_CHUNK = 64 * 1024

SAFE_CONFIG: tuple[tuple[str, str], ...] = (
    ("core.fsmonitor", "false"),
    ("core.hooksPath", "/dev/null"),
    ("core.untrackedCache", "false"),
    ("core.quotePath", "false"),
    ("core.pager", "cat"),
    ("submodule.recurse", "false"),
    ("log.showSignature", "false"),
    ("gc.auto", "0"),
    ("maintenance.auto", "false"),
    ("protocol.allow", "never"),
)
DIFF_SAFETY = ("--no-ext-diff", "--no-textconv")
_FILTER_KEYS = ("clean", "smudge", "process")
# Config scopes the repository (and the agent) can write; system and global are the operator's.
_REPOSITORY_SCOPES = frozenset({"local", "worktree"})

# Variables that would point git at another repository, index or config than the one named with
# -C (they leak in when lab itself runs under a git hook, or in CI), or run a program of their own.
_ENV_DROPPED = frozenset(
    {
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_INDEX_FILE",
        "GIT_COMMON_DIR",
        "GIT_OBJECT_DIRECTORY",
        "GIT_ALTERNATE_OBJECT_DIRECTORIES",
        "GIT_NAMESPACE",
        "GIT_CEILING_DIRECTORIES",
        "GIT_CONFIG_PARAMETERS",
        "GIT_CONFIG_COUNT",
        "GIT_EXTERNAL_DIFF",
    }
)


class GitTimeout(Exception):
    """Git did not finish within its bound; it and everything it started were killed."""


@dataclass(frozen=True)
class Result:
    returncode: int
    stdout: bytes
    stderr: bytes
    truncated: bool = False  # stdout stopped at the caller's cap (git was stopped there)

    @property
    def err(self) -> str:
        return text(self.stderr).strip()


def text(data: bytes) -> str:
    """Bytes for the operator to read: what is not UTF-8 shows as U+FFFD."""
    return data.decode("utf-8", errors="replace")


def path(data: bytes) -> str:
    """A path for git or the filesystem: every byte survives the round trip (os.fsencode)."""
    return data.decode("utf-8", errors="surrogateescape")


def shown(name: str) -> str:
    """A path() string as the operator reads it."""
    return name.encode("utf-8", errors="surrogateescape").decode("utf-8", errors="replace")


def _env(extra: Sequence[tuple[str, str]]) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in _ENV_DROPPED and not k.startswith(("GIT_CONFIG_KEY_", "GIT_CONFIG_VALUE_"))
    }
    env["GIT_TERMINAL_PROMPT"] = "0"  # never block on a credential prompt
    env["GIT_PAGER"] = "cat"
    env["LC_ALL"] = "C"  # stable messages
    # Keys go through the environment, not -c: a driver's name may hold "=", which -c splits on.
    env["GIT_CONFIG_COUNT"] = str(len(extra))
    for i, (key, value) in enumerate(extra):
        env[f"GIT_CONFIG_KEY_{i}"] = key
        env[f"GIT_CONFIG_VALUE_{i}"] = value
    return env


def _argv(args: Sequence[str], cwd: str, config: Sequence[tuple[str, str]] = ()) -> list[str]:
    # `config` comes after SAFE_CONFIG: git keeps the last -c of a key, so a caller can allow
    # one thing (a push's transport, lab's own hooks) for one command and nothing else.
    flags = [f for key, value in (*SAFE_CONFIG, *config) for f in ("-c", f"{key}={value}")]
    return ["git", "--no-pager", "-C", cwd, *flags, *args]


def repository_filters(cwd: str, *, timeout: float = TIMEOUT_S) -> list[str]:
    """The filter drivers the repository's own config defines (names, as git spells them)."""
    with _spawn(["config", "--list", "-z", "--show-scope"], cwd, timeout, extra=()) as proc:
        out = _read_all(proc, timeout_at=time.monotonic() + timeout, cap=None)
    names: list[str] = []
    fields = out.stdout.split(b"\0")
    for scope, entry in zip(fields[0::2], fields[1::2], strict=False):
        key = path(entry.partition(b"\n")[0])
        section, _, rest = key.partition(".")
        name, _, var = rest.rpartition(".")
        repository_scope = path(scope) in _REPOSITORY_SCOPES
        if section == "filter" and name and var in _FILTER_KEYS and repository_scope and name not in names:
            names.append(name)
    return names


def operator_config(cwd: str | os.PathLike[str], *, timeout: float = TIMEOUT_S) -> list[tuple[str, str]]:
    """(key, value) pairs of the operator's own config (system and global scopes), in git's
    order: what a command that must not take the repository's word may still take."""
    with _spawn(["config", "--list", "-z", "--show-scope"], os.fspath(cwd), timeout, extra=()) as proc:
        out = _read_all(proc, timeout_at=time.monotonic() + timeout, cap=None)
    pairs: list[tuple[str, str]] = []
    fields = out.stdout.split(b"\0")
    for scope, entry in zip(fields[0::2], fields[1::2], strict=False):
        key, _, value = entry.partition(b"\n")
        if path(scope) not in _REPOSITORY_SCOPES and path(scope) != "command":
            pairs.append((path(key), path(value)))
    return pairs


def _neutralised(names: Sequence[str]) -> list[tuple[str, str]]:
    # An empty command is "no filter" to git; required=false keeps git from refusing the file.
    out = [(f"filter.{n}.{k}", "") for n in names for k in _FILTER_KEYS]
    return out + [(f"filter.{n}.required", "false") for n in names]


def run(
    *args: str,
    cwd: str | os.PathLike[str],
    timeout: float = TIMEOUT_S,
    max_stdout: int | None = None,
    config: Sequence[tuple[str, str]] = (),
    env: Mapping[str, str] | None = None,
) -> Result:
    """`git -C cwd ARGS`, safely, without raising on a failure (the caller types it). With
    max_stdout, git is stopped once it has written that many bytes (Result.truncated).
    `config` adds -c settings after SAFE_CONFIG (they win); `env` adds variables."""
    where = os.fspath(cwd)
    deadline = time.monotonic() + timeout
    extra = _neutralised(repository_filters(where, timeout=timeout)) if os.path.isdir(where) else []
    with _spawn(args, where, timeout, extra=extra, config=config, env=env) as proc:
        return _read_all(proc, timeout_at=deadline, cap=max_stdout)


@contextmanager
def stream(*args: str, cwd: str | os.PathLike[str], timeout: float = TIMEOUT_S) -> Iterator[Lines]:
    """git's stdout as it comes, for output too big to hold: leaving the block early stops git.
    Check `.returncode` and `.err` after reading to the end."""
    where = os.fspath(cwd)
    deadline = time.monotonic() + timeout
    extra = _neutralised(repository_filters(where, timeout=timeout))
    with _spawn(args, where, timeout, extra=extra) as proc:
        yield Lines(proc, deadline)


class _Proc:
    def __init__(self, popen: subprocess.Popen[bytes], stderr: IO[bytes], verb: str, bound: float) -> None:
        self.popen = popen
        self.stderr_file = stderr
        self.verb = verb
        self.bound = bound

    def kill(self) -> None:
        """Kill git's whole process group (what it started too) and reap git."""
        if self.popen.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.popen.pid, signal.SIGKILL)
            self.popen.wait()

    def stderr(self) -> bytes:
        self.stderr_file.seek(0)
        return self.stderr_file.read(STDERR_MAX_BYTES)

    def timed_out(self) -> GitTimeout:
        self.kill()
        return GitTimeout(f"git {self.verb} did not finish within {self.bound:.0f} s; lab stopped it.")

    def wait(self, timeout_at: float) -> int:
        try:
            return self.popen.wait(timeout=max(timeout_at - time.monotonic(), 0.0))
        except subprocess.TimeoutExpired:
            raise self.timed_out() from None


@contextmanager
def _spawn(
    args: Sequence[str],
    cwd: str,
    bound: float,
    *,
    extra: Sequence[tuple[str, str]],
    config: Sequence[tuple[str, str]] = (),
    env: Mapping[str, str] | None = None,
) -> Iterator[_Proc]:
    with tempfile.TemporaryFile() as err:
        popen = subprocess.Popen(
            _argv(args, cwd, config),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=err,  # a file, not a pipe: a chatty stderr can never stall git's stdout
            env=_env(extra) | dict(env or {}),
            start_new_session=True,  # its own process group, so a kill reaches what it started
        )
        proc = _Proc(popen, err, args[0] if args else "", bound)
        try:
            yield proc
        finally:
            # Left early (a cap, an error): stop git rather than leave it writing to nobody.
            if popen.stdout is not None:
                popen.stdout.close()
            proc.kill()


def _read_all(proc: _Proc, *, timeout_at: float, cap: int | None) -> Result:
    chunks: list[bytes] = []
    size = 0
    for chunk in _chunks(proc, timeout_at):
        chunks.append(chunk)
        size += len(chunk)
        if cap is not None and size >= cap:
            proc.kill()
            # Stopped by lab, not failed: the caller reads `truncated` before the status.
            stopped = proc.popen.returncode if proc.popen.returncode is not None else -signal.SIGKILL
            return Result(stopped, b"".join(chunks)[:cap], proc.stderr(), truncated=True)
    returncode = proc.wait(timeout_at)
    return Result(returncode=returncode, stdout=b"".join(chunks), stderr=proc.stderr())


def _chunks(proc: _Proc, timeout_at: float) -> Iterator[bytes]:
    assert proc.popen.stdout is not None
    fd = proc.popen.stdout.fileno()
    with selectors.DefaultSelector() as sel:
        sel.register(fd, selectors.EVENT_READ)
        while True:
            remaining = timeout_at - time.monotonic()
            if remaining <= 0 or not sel.select(remaining):
                raise proc.timed_out()
            chunk = os.read(fd, _CHUNK)
            if not chunk:
                return
            yield chunk


class Lines:
    """git's stdout read piece by piece (up to a one-byte separator), each piece held to at most
    `limit` bytes however long git's line is: the rest of it is skipped and `cut` says so."""

    def __init__(self, proc: _Proc, timeout_at: float) -> None:
        self._proc = proc
        self._chunks = _chunks(proc, timeout_at)
        self._timeout_at = timeout_at
        self._buf = b""
        self._eof = False

    def read(self, sep: bytes, limit: int) -> tuple[bytes, bool] | None:
        """The next piece without its separator, and whether it was cut; None at the end."""
        kept = bytearray()
        cut = False
        while True:
            i = self._buf.find(sep)
            part = self._buf if i < 0 else self._buf[:i]
            self._buf = b"" if i < 0 else self._buf[i + 1 :]
            room = limit - len(kept)
            kept += part[: max(room, 0)]
            cut = cut or len(part) > room
            if i >= 0:
                return bytes(kept), cut
            if not self._fill():
                return (bytes(kept), cut) if kept or cut else None

    def _fill(self) -> bool:
        if self._eof:
            return False
        try:
            self._buf += next(self._chunks)
            return True
        except StopIteration:
            self._eof = True
            return False

    def finish(self) -> int:
        """git's exit status, once its output has been read to the end."""
        return self._proc.wait(self._timeout_at)

    @property
    def err(self) -> str:
        return text(self._proc.stderr()).strip()
