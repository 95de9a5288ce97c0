"""Shipping a run's work from lab: commit, push, the pull request's link, and merge back.

Every git here goes through lab's safe runner (providers/safegit: no fsmonitor, no filters the
repository defines, no hook of the repository's, a time bound), with argv lists only:

- a commit runs lab's own guard hooks (seeding/commit_guard.py: seeded files refused,
  attribution scrubbed when the run's choice says so) and chains no repository hook;
- a push allows exactly the transport its remote's URL needs, for that one command. The
  programs a repository's config could name for it (receive-pack, ssh command, askpass,
  credential helpers) are the operator's own or git's defaults, never the repository's, and
  no pre-push hook runs;
- merge back never touches the operator's working tree silently: a branch checked out in the
  main checkout moves only when that checkout is clean and the operator confirmed.

git's own message is shown verbatim when it fails (ShipError). No Django.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, urlsplit

from providers import safegit
from seeding import commit_guard

GIT_TIMEOUT_S = 30.0
# A push talks to another machine: longer, still bounded.
PUSH_TIMEOUT_S = 120.0
CLI_TIMEOUT_S = 60.0
MESSAGE_MAX_CHARS = 20_000
MAX_BODY_COMMITS = 50


class ShipError(Exception):
    """Git (or the forge's CLI) refused or failed; the message is safe to show, git's own text
    included verbatim."""


def _git(cwd: Path | str, *args: str, timeout: float = GIT_TIMEOUT_S, **kw: object) -> safegit.Result:
    try:
        return safegit.run(*args, cwd=cwd, timeout=timeout, **kw)  # type: ignore[arg-type]
    except safegit.GitTimeout as exc:
        raise ShipError(str(exc)) from None


def _out(cwd: Path | str, *args: str) -> str:
    res = _git(cwd, *args)
    if res.returncode != 0:
        raise ShipError(f"git {args[0]} failed: {res.err or 'no message'}")
    return safegit.text(res.stdout).strip()


def _literal(paths: Sequence[str]) -> list[str]:
    # Literal pathspecs: a file named like pathspec magic (":(glob)*") means only itself.
    return [f":(literal){p}" for p in paths]


# --- commit ------------------------------------------------------------------------------------


def commit(
    worktree: Path,
    *,
    message: str,
    paths: Sequence[str] | None,
    hooks_dir: Path,
    seeded_paths: Sequence[str],
    scrub_patterns: Sequence[str],
    scrub: bool,
) -> str:
    """Commit every change in the worktree (paths None) or only `paths`, with the operator's
    message, behind lab's commit guard. Returns git's summary line."""
    if not message.strip():
        raise ShipError("Write a commit message first. Nothing was committed.")
    if len(message) > MESSAGE_MAX_CHARS:
        raise ShipError(f"That message is longer than {MESSAGE_MAX_CHARS} characters. Nothing was committed.")
    if paths is not None and not paths:
        raise ShipError("Choose at least one file, or commit all changes. Nothing was committed.")
    # The guard's hooks and nothing else: an empty chain runs no hook of the repository's.
    env = {
        commit_guard.CHAIN: "",
        commit_guard.SEEDED: json.dumps(list(seeded_paths)),
    }
    if scrub and scrub_patterns:
        env[commit_guard.SCRUB] = json.dumps(list(scrub_patterns))
    hooks = (("core.hooksPath", str(hooks_dir)),)
    spec = _literal(paths) if paths is not None else []
    added = _git(worktree, "add", "-A", "--", *spec)
    if added.returncode != 0:
        raise ShipError(f"git add failed: {added.err}. Nothing was committed.")
    res = _git(worktree, "commit", "-m", message, "--", *spec, config=hooks, env=env)
    if res.returncode != 0:
        said = "\n".join(s for s in (safegit.text(res.stdout).strip(), res.err) if s)
        raise ShipError(f"git commit failed. Nothing was committed.\n{said}")
    return safegit.text(res.stdout).strip().splitlines()[0] if res.stdout.strip() else "Committed."


# --- push --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Remote:
    name: str
    url: str  # where a push goes (pushurl and insteadOf applied by git)
    fetch_url: str  # where the repository lives: the forge a pull request opens on


def remotes(worktree: Path) -> list[Remote]:
    names = [n for n in _out(worktree, "remote").splitlines() if n]
    found = []
    for name in names:
        push = _git(worktree, "remote", "get-url", "--push", name)
        fetch = _git(worktree, "remote", "get-url", name)
        if push.returncode == 0:
            url = safegit.text(push.stdout).strip()
            found.append(Remote(name, url, safegit.text(fetch.stdout).strip() or url))
    return found


def transport(url: str) -> str | None:
    """The one git protocol a push to `url` uses (git's names for protocol.<name>.allow), or
    None for one lab does not allow (ext::, fd::, a remote helper)."""
    if "::" in url.split("/", 1)[0]:
        return None  # <transport>::<address>: a remote helper program
    scheme = re.match(r"^([A-Za-z][A-Za-z0-9+.-]*)://", url)
    if scheme:
        name = scheme.group(1).lower()
        return {"ssh": "ssh", "git+ssh": "ssh", "ssh+git": "ssh", "https": "https", "http": "http"}.get(
            name, {"git": "git", "file": "file"}.get(name)
        )
    # scp-like "host:path" is ssh when the part before ':' has no '/'; anything else a path.
    head, colon, _ = url.partition(":")
    if colon and "/" not in head and head:
        return "ssh"
    return "file"


# Config keys that name a program a push may run: the operator's values only.
_PROGRAM_KEYS = ("core.sshcommand", "core.askpass", "credential.helper")


def push(worktree: Path, *, remote: str, branch: str) -> str:
    """Push the run's branch to `remote` (upstream set). Returns git's own report."""
    known = {r.name: r for r in remotes(worktree)}
    if not known:
        raise ShipError("This repository has no remote: add one (git remote add origin <url>), then push.")
    if remote not in known:
        raise ShipError(f"No remote named {remote!r}; this repository has: {', '.join(sorted(known))}.")
    proto = transport(known[remote].url)
    if proto is None:
        raise ShipError(f"lab pushes over ssh, https, git or a local path; {known[remote].url!r} is none.")
    operator = [(k, v) for k, v in safegit.operator_config(worktree) if k.lower() in _PROGRAM_KEYS]
    config = [
        (f"protocol.{proto}.allow", "always"),
        ("push.recurseSubmodules", "no"),
        ("push.gpgSign", "false"),
        (
            "core.sshCommand",
            next((v for k, v in reversed(operator) if k.lower() == "core.sshcommand"), "ssh"),
        ),
        ("core.askPass", next((v for k, v in reversed(operator) if k.lower() == "core.askpass"), "")),
        # An empty helper clears the list (the repository's included); the operator's follow.
        ("credential.helper", ""),
        *[("credential.helper", v) for k, v in operator if k.lower() == "credential.helper"],
    ]
    ref = f"refs/heads/{branch}"
    res = _git(
        worktree,
        "push",
        "--no-verify",
        "--receive-pack=git-receive-pack",
        "--set-upstream",
        remote,
        f"{ref}:{ref}",
        timeout=PUSH_TIMEOUT_S,
        config=config,
    )
    said = "\n".join(s for s in (safegit.text(res.stdout).strip(), res.err) if s)
    if res.returncode != 0:
        raise ShipError(f"git push failed:\n{said}")
    return said


# --- pull request ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Forge:
    kind: str  # github, gitlab, bitbucket, gitea
    host: str
    path: str  # owner/repo (a GitLab group path may be deeper)

    @property
    def web(self) -> str:
        return f"https://{self.host}/{self.path}"


_KNOWN = {
    "github.com": "github",
    "gitlab.com": "gitlab",
    "bitbucket.org": "bitbucket",
    "codeberg.org": "gitea",
    "gitea.com": "gitea",
}
# A self-hosted forge named after its software (gitlab.example.org): its first label says it.
_FIRST_LABEL = {"github": "github", "gitlab": "gitlab", "gitea": "gitea", "forgejo": "gitea"}


def forge(url: str) -> Forge | None:
    """The forge a remote URL points at, or None for a host lab does not recognise."""
    scheme = re.match(r"^([A-Za-z][A-Za-z0-9+.-]*)://", url)
    if scheme:
        parts = urlsplit(url)
        host, where = (parts.hostname or ""), parts.path
    else:
        head, colon, where = url.partition(":")
        if not colon or "/" in head:
            return None  # a local path
        host = head.rpartition("@")[2]
    host = host.lower()
    kind = _KNOWN.get(host) or _FIRST_LABEL.get(host.split(".", 1)[0] if "." in host else "")
    where = where.strip("/")
    where = where.removesuffix(".git")
    segments = [s for s in where.split("/") if s]
    if kind is None or len(segments) < 2 or any(s in (".", "..") for s in segments):
        return None
    if kind != "gitlab" and len(segments) != 2:
        return None
    return Forge(kind, host, "/".join(segments))


def pull_request_url(url: str, *, branch: str, base: str) -> str | None:
    """The forge's page that opens a pull request of `branch` into `base`; None when the
    remote's host is not one lab recognises (no guess)."""
    found = forge(url)
    if found is None:
        return None
    # Without a base the forge picks its default branch.
    b, t = quote(branch, safe=""), quote(base, safe="")
    compare = f"{t}...{b}" if base else b
    if found.kind == "github":
        return f"{found.web}/compare/{compare}?expand=1"
    if found.kind == "gitlab":
        target = f"&merge_request%5Btarget_branch%5D={t}" if base else ""
        return f"{found.web}/-/merge_requests/new?merge_request%5Bsource_branch%5D={b}{target}"
    if found.kind == "bitbucket":
        return f"{found.web}/pull-requests/new?source={b}" + (f"&dest={t}" if base else "")
    return f"{found.web}/compare/{compare}"


_CLI = {"github": "gh", "gitlab": "glab"}


def _cli_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("GIT_")} | {"GH_PROMPT_DISABLED": "1"}


def _cli(argv: list[str]) -> subprocess.CompletedProcess[str]:
    # Run outside any repository: the CLI is told the repository, and reads no worktree config.
    with tempfile.TemporaryDirectory() as nowhere:
        try:
            return subprocess.run(
                argv,
                cwd=nowhere,
                capture_output=True,
                text=True,
                errors="replace",
                stdin=subprocess.DEVNULL,
                env=_cli_env(),
                timeout=CLI_TIMEOUT_S,
            )
        except subprocess.TimeoutExpired:
            raise ShipError(
                f"{argv[0]} did not finish within {CLI_TIMEOUT_S:.0f} s; lab stopped it."
            ) from None
        except OSError as exc:
            raise ShipError(f"{argv[0]} could not start: {exc.strerror}.") from None


def forge_cli(url: str) -> str | None:
    """The forge's CLI (gh, glab) when it is installed on this host and logged in to the
    remote's host; None otherwise."""
    found = forge(url)
    name = _CLI.get(found.kind) if found else None
    if found is None or name is None or shutil.which(name) is None:
        return None
    return name if _cli([name, "auth", "status", "--hostname", found.host]).returncode == 0 else None


def create_pull_request(url: str, *, branch: str, base: str, title: str, body: str) -> str:
    """Create the pull request with the forge's CLI; returns its URL (the CLI's last line)."""
    found = forge(url)
    name = forge_cli(url)
    if found is None or name is None:
        raise ShipError("No forge CLI (gh, glab) is installed and logged in here for this remote.")
    repo = f"{found.host}/{found.path}"
    if name == "gh":
        argv = ["gh", "pr", "create", "--repo", repo, "--head", branch, "--base", base]
        argv += ["--title", title, "--body", body]
    else:
        argv = ["glab", "mr", "create", "--repo", repo, "--source-branch", branch]
        argv += ["--target-branch", base, "--title", title, "--description", body, "--yes"]
    done = _cli(argv)
    if done.returncode != 0:
        raise ShipError(f"{name} failed:\n{(done.stderr or done.stdout).strip()}")
    links = re.findall(r"https?://\S+", done.stdout)
    if not links:
        raise ShipError(f"{name} answered without a link:\n{done.stdout.strip()}")
    return links[-1]


def commits_body(repository: Path, *, base: str, branch: str, scrub: Sequence[str] = ()) -> str:
    """The branch's commits since `base`, oldest first, as a pull request's body; each
    message's lines matching a `scrub` pattern left out (attribution turned off)."""
    res = _git(
        repository,
        "log",
        "--reverse",
        f"--max-count={MAX_BODY_COMMITS}",
        "--format=%s%x00%b%x1e",
        f"{base}..refs/heads/{branch}",
    )
    if res.returncode != 0:
        raise ShipError(f"git log failed: {res.err}")
    items = []
    for record in safegit.text(res.stdout).split("\x1e"):
        subject, _, body = record.strip("\n").partition("\0")
        # Scrubbed before indenting: the patterns are anchored at a line's start.
        body = commit_guard.scrub_message(body, scrub) if scrub else body
        if subject:
            items.append(
                f"- {subject}" + (f"\n\n  {body.strip()}".replace("\n", "\n  ") if body.strip() else "")
            )
    return "\n".join(items)


# --- merge back --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Merged:
    message: str
    commit: str


def _tip(repository: Path, branch: str) -> str:
    res = _git(repository, "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}^{{commit}}")
    if res.returncode != 0:
        raise ShipError(f"There is no branch {branch!r} in {repository}.")
    return safegit.text(res.stdout).strip()


def _ancestor(repository: Path, older: str, newer: str) -> bool:
    return _git(repository, "merge-base", "--is-ancestor", older, newer).returncode == 0


def checked_out(repository: Path, branch: str) -> list[Path]:
    """The work trees that have `branch` checked out (the main checkout first)."""
    out = _git(repository, "worktree", "list", "--porcelain", "-z")
    if out.returncode != 0:
        raise ShipError(f"git worktree list failed: {out.err}")
    found, current = [], ""
    for field in safegit.path(out.stdout).split("\0"):
        if field.startswith("worktree "):
            current = field.removeprefix("worktree ")
        elif field == f"branch refs/heads/{branch}":
            found.append(Path(current))
    return found


def _dirty(checkout: Path) -> list[str]:
    res = _git(checkout, "status", "--porcelain", "-z", "--untracked-files=no")
    if res.returncode != 0:
        raise ShipError(f"git status failed in {checkout}: {res.err}")
    return [safegit.shown(e[3:]) for e in safegit.path(res.stdout).split("\0") if len(e) > 3]


def merge_back(
    repository: Path,
    *,
    branch: str,
    into: str,
    mode: str,
    confirmed: bool,
    message: str = "",
) -> Merged:
    """Bring the run's committed work into `into`: fast-forward (mode "ff") or one squashed
    commit (mode "squash"). The main checkout, when it has `into` checked out, is updated only
    when clean and `confirmed`; a linked worktree holding `into` is never touched."""
    if mode not in ("ff", "squash"):
        raise ShipError("Choose fast-forward or squash.")
    if branch == into:
        raise ShipError(f"{branch!r} is the run's own branch: choose the branch to merge into.")
    tip, base = _tip(repository, branch), _tip(repository, into)
    if _ancestor(repository, tip, base):
        raise ShipError(f"Nothing to merge: {into} already has every commit of {branch}.")
    holders = checked_out(repository, into)
    main = holders[0] if holders else None
    if holders:
        records = _out(repository, "worktree", "list", "--porcelain").splitlines()
        main_path = records[0].removeprefix("worktree ") if records else ""
        if os.path.realpath(holders[0]) != os.path.realpath(main_path):
            raise ShipError(
                f"{into} is checked out in the worktree {holders[0]}: lab updates only your main "
                "checkout. Nothing was merged."
            )
        dirty = _dirty(holders[0])
        if dirty:
            listed = "\n".join(f"  {p}" for p in dirty[:50])
            raise ShipError(
                f"Your main checkout ({holders[0]}) has {into} checked out with uncommitted changes; "
                f"lab does not touch them. Commit or stash them first. Nothing was merged.\n{listed}"
            )
        if not confirmed:
            raise ShipError(
                f"{into} is checked out in your main checkout ({holders[0]}): confirm that lab may "
                "update its files. Nothing was merged."
            )
    if mode == "ff":
        if not _ancestor(repository, base, tip):
            raise ShipError(
                f"{into} has commits that {branch} does not: a fast-forward is not possible. "
                "Squash instead, or rebase the branch. Nothing was merged."
            )
        new, count = tip, _out(repository, "rev-list", "--count", f"{base}..{tip}")
        said = (
            f"Fast-forwarded {into} to {new[:10]} ({count} commit{'s' if count != '1' else ''} of {branch})."
        )
    else:
        res = _git(repository, "merge-tree", "--write-tree", "--name-only", "--no-messages", "-z", base, tip)
        fields = [f for f in safegit.path(res.stdout).split("\0") if f]
        if res.returncode == 1:
            files = sorted({safegit.shown(f) for f in fields[1:]})
            listed = "\n".join(f"  {p}" for p in files)
            raise ShipError(
                f"Squashing {branch} into {into} would conflict in:\n{listed}\nNothing was merged."
            )
        if res.returncode != 0 or not fields:
            raise ShipError(f"git merge-tree failed: {res.err or 'no message'}")
        tree = fields[0]
        if tree == _out(repository, "rev-parse", f"{base}^{{tree}}"):
            raise ShipError(f"Nothing to merge: squashing {branch} would not change {into}.")
        text = message.strip() or f"Squashed {branch}"
        made = _git(repository, "commit-tree", tree, "-p", base, "-m", text)
        if made.returncode != 0:
            raise ShipError(f"git commit-tree failed: {made.err}. Nothing was merged.")
        new = safegit.text(made.stdout).strip()
        said = f"Squashed {branch} into {into} as {new[:10]}."
    if main is not None:
        # The branch is the main checkout's: only git's own fast-forward moves it and its files
        # together (it refuses to overwrite an untracked file).
        res = _git(main, "merge", "--ff-only", "--no-edit", new)
        if res.returncode != 0:
            raise ShipError(f"git merge --ff-only failed in {main}: {res.err}. Nothing was merged.")
        return Merged(f"{said} Your main checkout ({main}) was updated.", new)
    res = _git(repository, "update-ref", "-m", f"lab: merge back {branch}", f"refs/heads/{into}", new, base)
    if res.returncode != 0:
        raise ShipError(f"git update-ref failed: {res.err}. Nothing was merged.")
    return Merged(said, new)


def squash_message(
    subject: str, repository: Path, *, base: str, branch: str, scrub: Sequence[str] = ()
) -> str:
    body = commits_body(repository, base=base, branch=branch, scrub=scrub)
    return f"{subject}\n\n{body}\n" if body else f"{subject}\n"


def start_branch(repository: Path, base_ref: str | None) -> str:
    """The branch a new run's branch starts from: `base_ref` when it names a branch, else the
    branch the repository's HEAD is on; "" when it starts from a commit or tag (merge back
    then asks which branch)."""
    if base_ref:
        res = _git(repository, "rev-parse", "--verify", "--quiet", f"refs/heads/{base_ref}")
        return base_ref if res.returncode == 0 else ""
    res = _git(repository, "symbolic-ref", "--quiet", "--short", "HEAD")
    return safegit.text(res.stdout).strip() if res.returncode == 0 else ""
