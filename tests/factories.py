from pathlib import Path

import factory
from django.contrib.auth import get_user_model

from runs.models import Run


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)

    username = factory.Sequence(lambda n: f"operator{n}")
    password = factory.django.Password("correct horse battery staple")
    is_staff = True
    is_superuser = True


class RunFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Run

    name = factory.Sequence(lambda n: f"run-{n}")
    provider_id = "fake"
    repository = "/tmp/repo"
    worktree = "/tmp/repo"
    branch = factory.Sequence(lambda n: f"lab/run-{n}")
    tmux_socket = "labtest"
    tmux_session = factory.Sequence(lambda n: f"lab-test-{n}")


# A program a hostile repository's git config names: it leaves a mark named after the role it
# was started in, then does that role's job (a filter passes the content through).
_MARK_SCRIPT = """#!/bin/sh
touch "{marks}/$(basename "$0")"
case "$(basename "$0")" in
  clean|smudge) cat ;;
  textconv) cat "$1" ;;
esac
exit 0
"""


def hostile_repository(root: Path) -> tuple[Path, Path]:
    """A repository (one commit: a.txt, b.txt, .gitattributes) whose own git config makes git run
    programs: a core.fsmonitor hook, a core.hooksPath with post-checkout and
    reference-transaction hooks, a clean/smudge filter and a diff driver with textconv, all
    selected by its .gitattributes. Each program touches a file named after its role in the
    marks folder. Returns (repository, marks folder)."""
    import subprocess

    repo, marks, bin_dir = root / "hostile", root / "marks", root / "hostile-bin"
    for d in (repo, marks, bin_dir, bin_dir / "hooks"):
        d.mkdir(parents=True)
    script = _MARK_SCRIPT.format(marks=marks)
    roles = ["fsmonitor", "clean", "smudge", "textconv", "extdiff", "hooks/post-checkout"]
    for role in [*roles, "hooks/reference-transaction", "hooks/pre-commit"]:
        (bin_dir / role).write_text(script)
        (bin_dir / role).chmod(0o755)
    git = ["git", "-c", "user.name=lab-test", "-c", "user.email=lab-test@example.invalid"]

    def run(*args: str) -> None:
        subprocess.run([*git, *args], cwd=repo, check=True, capture_output=True)

    run("init", "-q", "-b", "main")
    (repo / "a.txt").write_text("alpha\n")
    (repo / "b.txt").write_text("bravo\n")
    (repo / ".gitattributes").write_text("*.txt filter=mark diff=mark\n")
    run("add", ".")
    run("commit", "-q", "-m", "initial")
    # The config goes in after the commit, so making the repository ran none of it.
    for key, value in [
        ("core.fsmonitor", str(bin_dir / "fsmonitor")),
        ("core.hooksPath", str(bin_dir / "hooks")),
        ("filter.mark.clean", str(bin_dir / "clean")),
        ("filter.mark.smudge", str(bin_dir / "smudge")),
        ("filter.mark.required", "true"),
        ("diff.mark.textconv", str(bin_dir / "textconv")),
        ("diff.mark.command", str(bin_dir / "extdiff")),
    ]:
        run("config", key, value)
    return repo, marks
