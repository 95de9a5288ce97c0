"""What a repository would make the agent (and git) do, shown to the operator before lab trusts
it: the provider's own project settings (through the seam) and git's. Reads files only; nothing
here runs a program the repository names.

Trust itself is recorded by the provider, where its CLI records it (AgentProvider
.trust_repository), so it lasts and holds for the operator's own use of the CLI too.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from providers.registry import get_provider
from providers.schema import RepositorySetting
from seeding import worktrees

# Git settings that name a program git runs, for lab's own commands or the agent's. Keys are
# matched lowercased, as git compares them; `<x>` is any subsection.
_GIT_PROGRAM_KEYS = re.compile(
    r"core\.(fsmonitor|hookspath|sshcommand|pager|editor|askpass)"
    r"|sequence\.editor|diff\.external|gpg(\.[^.]+)?\.program|uploadpack\.packobjectshook"
    r"|credential(\..+)?\.helper|filter\..+\.(clean|smudge|process)|diff\..+\.(command|textconv)"
    r"|merge\..+\.driver|include\.path|includeif\..+\.path"
)
_FSMONITOR_OFF = {"false", "no", "off", "0", ""}
_ATTRIBUTE_DRIVERS = re.compile(r"(?:^|\s)-?!?(filter|diff|merge)=(\S+)")


@dataclass(frozen=True, slots=True)
class RepositoryReview:
    """What the new-run form shows about a repository for one provider."""

    repository: Path
    provider_name: str
    agent: list[RepositorySetting]  # the provider's own project settings
    git: list[RepositorySetting]  # git's config, hooks and attributes that run programs
    trusted: bool

    @property
    def settings(self) -> list[RepositorySetting]:
        return [*self.agent, *self.git]

    @property
    def redirects(self) -> bool:
        return any(s.redirects for s in self.settings)

    @property
    def needs_decision(self) -> bool:
        """Something is there and the operator has not trusted it yet."""
        return bool(self.settings) and not self.trusted


def repository_review(*, provider_id: str, repository: Path) -> RepositoryReview:
    """The repository's main checkout read for `provider_id`: what its files would do, and
    whether the CLI's record trusts it."""
    provider = get_provider(provider_id)
    checkout = worktrees.main_worktree(Path(repository))
    return RepositoryReview(
        repository=checkout,
        provider_name=provider.display_name(),
        agent=provider.repository_settings(checkout),
        git=git_settings(checkout),
        trusted=provider.repository_trusted(checkout),
    )


def git_settings(checkout: Path) -> list[RepositorySetting]:
    """Git settings of the repository that run programs: config keys naming a program (for
    every worktree of it: the config is shared), hooks in its hooks directory, and the
    `.gitattributes` lines that put a configured filter, diff or merge driver to work."""
    config = worktrees.git_path(checkout, "config")
    programs = _config_programs(config)
    drivers = {m.group(1) for s in programs if (m := _DRIVER_KEY.match(s.detail))}
    # Not `--git-path hooks`: lab's own git sets core.hooksPath=/dev/null, so git would answer
    # that. The default hooks folder is beside the shared config; a core.hooksPath of the
    # repository's is listed with the config's programs.
    hooks = _hooks(config.parent / "hooks")
    return [*programs, *hooks, *_attribute_drivers(checkout, drivers)]


_DRIVER_KEY = re.compile(r"(?:filter|diff|merge)\.(.+)\.(?:clean|smudge|process|command|textconv|driver) = ")


def _config_programs(config: Path) -> list[RepositorySetting]:
    if not config.is_file():
        return []
    # --no-includes: an included file is reported as such (include.path), not read here.
    cp = worktrees.git("config", "--file", str(config), "--no-includes", "--list", "-z", cwd=config.parent)
    if cp.returncode != 0:
        return [RepositorySetting(".git/config", "git config", "could not be read: its content is unknown")]
    found = []
    for entry in cp.stdout.split("\0"):
        key, _, value = entry.partition("\n")
        key = key.lower()
        if not _GIT_PROGRAM_KEYS.fullmatch(key):
            continue
        if key == "core.fsmonitor" and value.strip().lower() in _FSMONITOR_OFF:
            continue
        found.append(RepositorySetting(".git/config", "git program", f"{key} = {value}"))
    return found


def _hooks(hooks_dir: Path) -> list[RepositorySetting]:
    """Executable hooks (and links) git would run from the repository's hooks directory."""
    try:
        names = sorted(os.listdir(hooks_dir))
    except (FileNotFoundError, NotADirectoryError):
        return []
    found = []
    for name in names:
        try:
            st = os.lstat(hooks_dir / name)
        except FileNotFoundError:
            continue
        if name.endswith(".sample"):
            continue
        if stat.S_ISLNK(st.st_mode) or (stat.S_ISREG(st.st_mode) and st.st_mode & 0o111):
            found.append(RepositorySetting(".git/hooks", "git hook", name))
    return found


def _attribute_drivers(checkout: Path, drivers: set[str]) -> list[RepositorySetting]:
    if not drivers:
        return []  # an attribute naming no configured driver runs nothing
    try:
        # Non-blocking, no links: a FIFO or a link to a device must not hang the page.
        fd = os.open(checkout / ".gitattributes", os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except (FileNotFoundError, NotADirectoryError):
        return []
    except OSError as exc:
        return [RepositorySetting(".gitattributes", "git attributes", f"could not be read ({exc.strerror})")]
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return [RepositorySetting(".gitattributes", "git attributes", "not a regular file")]
        text = f.read(256 * 1024).decode("utf-8", "replace")
    return [
        RepositorySetting(".gitattributes", "git driver", line.strip())
        for line in text.splitlines()
        if not line.lstrip().startswith("#")
        and any(m.group(2) in drivers for m in _ATTRIBUTE_DRIVERS.finditer(line))
    ]
