"""The commit guard: git hooks that keep seeded files and (when the operator turned attribution
off) attribution lines out of the commits an agent makes.

It applies a SeedMeta's `seeded_paths` and `scrub_patterns` for any provider, and only to the
agent: lab puts `core.hooksPath` in the agent's environment (GIT_CONFIG_COUNT/KEY/VALUE, git
2.31+), so the repository's config, its hooks and the operator's own commits are untouched.
Every hook first does lab's part, then runs the repository's own hook of that name (the hooks
directory git would have used, resolved when the run started), so a project's pre-commit
checks keep running.

This file is also the hook program (`python -S commit_guard.py <hook> [args…]`): the standard
library only, no Django, nothing from lab.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shlex
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath

CHAIN = "LAB_GUARD_CHAIN"  # the hooks directory git would use without lab
SEEDED = "LAB_GUARD_SEEDED"  # JSON list of glob patterns (PurePosixPath.full_match)
SCRUB = "LAB_GUARD_SCRUB"  # JSON list of regexes, applied per line; absent: attribution on

GUARDED = ("pre-commit", "commit-msg")
# githooks(5): every hook git runs from the hooks directory. Each one lab does not guard only
# chains, so replacing the directory never silences a hook the repository relies on.
CHAINED = (
    "applypatch-msg",
    "pre-applypatch",
    "post-applypatch",
    "prepare-commit-msg",
    "post-commit",
    "pre-rebase",
    "post-checkout",
    "post-merge",
    "pre-push",
    "pre-receive",
    "update",
    "proc-receive",
    "post-receive",
    "post-update",
    "reference-transaction",
    "push-to-checkout",
    "pre-auto-gc",
    "post-rewrite",
    "sendemail-validate",
    "fsmonitor-watchman",
    "p4-changelist",
    "p4-prepare-changelist",
    "p4-post-changelist",
    "p4-pre-submit",
    "post-index-change",
    "pre-merge-commit",
)


class GuardError(Exception):
    """The guard cannot be set up for this worktree; the message is safe to show."""


_CHAIN_STUB = """#!/bin/sh
# lab commit guard: nothing to check here; run the repository's own {name} hook, if any.
if [ -n "${chain}" ] && [ -x "${chain}/{name}" ]; then exec "${chain}/{name}" "$@"; fi
exit 0
"""
_GUARD_STUB = """#!/bin/sh
# lab commit guard: check, then run the repository's own {name} hook (see {script}).
exec {python} -S {script} {name} "$@"
"""


def install_hooks(directory: Path, *, python: str = sys.executable) -> Path:
    """Write the hook stubs into `directory` (idempotent; only changed files are rewritten)."""
    directory.mkdir(parents=True, exist_ok=True, mode=0o755)
    script = str(Path(__file__).resolve())
    quoted = {"python": shlex.quote(python), "script": shlex.quote(script)}
    stubs = {name: _GUARD_STUB.format(name=name, **quoted) for name in GUARDED}
    stubs |= {name: _CHAIN_STUB.replace("{name}", name).replace("{chain}", CHAIN) for name in CHAINED}
    for name, text in stubs.items():
        path = directory / name
        try:
            if path.read_text() == text and os.access(path, os.X_OK):
                continue
        except FileNotFoundError:
            pass
        # Unique per call: two runs starting at once in one process must not share a temp file.
        tmp = path.with_name(f".{name}.{secrets.token_hex(6)}.tmp")
        tmp.write_text(text)
        tmp.chmod(0o755)
        tmp.replace(path)
    return directory


def original_hooks_dir(worktree: Path) -> str:
    """The hooks directory git uses in `worktree` now (core.hooksPath honoured), absolute."""
    cp = subprocess.run(
        ["git", "rev-parse", "--path-format=absolute", "--git-path", "hooks"],
        cwd=worktree,
        capture_output=True,
        text=True,
        env={k: v for k, v in os.environ.items() if not k.startswith("GIT_")},
    )
    if cp.returncode != 0:
        raise GuardError(f"git rev-parse --git-path hooks failed in {worktree}: {cp.stderr.strip()}")
    return cp.stdout.strip()


def guard_env(
    *,
    worktree: Path,
    hooks_dir: Path,
    seeded_paths: Sequence[str],
    scrub_patterns: Sequence[str],
    scrub: bool,
    base_env: Mapping[str, str],
) -> dict[str, str]:
    """The environment that puts the guard in front of every git the agent runs.

    GIT_CONFIG_* entries already in `base_env` (the operator's LAB_AGENT_ENV) are kept: lab's
    entry goes after them."""
    for pattern in scrub_patterns:
        try:
            re.compile(pattern)  # a bad declaration fails at spawn, not inside a commit
        except re.error as exc:
            raise GuardError(f"Not a usable scrub pattern {pattern!r}: {exc}") from None
    index = int(base_env.get("GIT_CONFIG_COUNT", "0") or 0)
    env = {
        "GIT_CONFIG_COUNT": str(index + 1),
        f"GIT_CONFIG_KEY_{index}": "core.hooksPath",
        f"GIT_CONFIG_VALUE_{index}": str(hooks_dir),
        CHAIN: original_hooks_dir(worktree),
        SEEDED: json.dumps(list(seeded_paths)),
    }
    if scrub and scrub_patterns:
        env[SCRUB] = json.dumps(list(scrub_patterns))
    return env


# --- the hook program ------------------------------------------------------------------------


def seeded_in_index(patterns: Sequence[str]) -> list[str]:
    """Staged additions that match a seeded-path pattern. A file the repository already tracks
    (its own CLAUDE.md, say) may be modified and committed as usual."""
    cp = subprocess.run(
        ["git", "diff", "--cached", "--name-only", "-z", "--no-renames", "--diff-filter=A"],
        capture_output=True,
        text=True,
        check=True,
    )
    paths = [p for p in cp.stdout.split("\0") if p]
    return [p for p in paths if any(PurePosixPath(p).full_match(pat) for pat in patterns)]


def scrub_message(text: str, patterns: Sequence[str]) -> str:
    """The message without lines matching any pattern; blank lines the removal left at the end
    or doubled up are dropped, so the message still ends cleanly."""
    for pattern in patterns:
        text = re.sub(pattern, "", text, flags=re.MULTILINE)
    text = re.sub(r"\n{3,}", "\n\n", text)
    return text.rstrip() + "\n" if text.strip() else text


def _check(hook: str, args: list[str]) -> str | None:
    """lab's part of `hook`: None when the commit may go on, else the reason it may not."""
    if hook == "pre-commit":
        seeded = seeded_in_index(json.loads(os.environ.get(SEEDED, "[]")))
        if seeded:
            listed = "\n".join(f"  {p}" for p in seeded)
            return (
                "lab: these files were seeded into this worktree for the agent and must not be "
                f"committed:\n{listed}\nUnstage them with: git restore --staged -- <path>"
            )
    elif hook == "commit-msg" and args and os.environ.get(SCRUB):
        path = Path(args[0])
        before = path.read_text(encoding="utf-8", errors="surrogateescape")
        after = scrub_message(before, json.loads(os.environ[SCRUB]))
        if after != before:
            path.write_text(after, encoding="utf-8", errors="surrogateescape")
    return None


def main(argv: list[str]) -> int:
    hook, args = argv[0], argv[1:]
    refused = _check(hook, args)
    if refused:
        print(refused, file=sys.stderr)
        return 1
    chain = os.environ.get(CHAIN, "")
    original = os.path.join(chain, hook)
    if chain and os.access(original, os.X_OK) and not os.path.isdir(original):
        os.execv(original, [original, *args])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
