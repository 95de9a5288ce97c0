"""`make demo`: lab with the real agent CLI answering from the scripted local model.

Offline and account-free: a private agent HOME under the data dir (onboarding done, the
test API key approved), a demo git repository to start runs on, the scripted model on a free
loopback port, and lab served with LAB_AGENT_HOME / LAB_AGENT_ENV pointing at both.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Serve lab with the real agent CLI pointed at the scripted local model (no account needed)."

    def handle(self, *args: Any, **options: Any) -> None:
        from compat.claude_code.home import prepare_home
        from compat.claude_code.scripted_model import ScriptedModel, demo_script

        data = Path(settings.DATA_DIR)
        repo = data / "demo-repo"
        if not (repo / ".git").exists():
            repo.mkdir(parents=True, exist_ok=True)
            git = ["git", "-c", "user.name=lab demo", "-c", "user.email=demo@lab.invalid"]
            subprocess.run([*git, "init", "-q", "-b", "main"], cwd=repo, check=True)
            (repo / "README.md").write_text("# demo repository\n\nStart a run on this repository from lab.\n")
            subprocess.run([*git, "add", "README.md"], cwd=repo, check=True)
            subprocess.run([*git, "commit", "-q", "-m", "demo"], cwd=repo, check=True)
        model = ScriptedModel(demo_script()).start()
        home = data / "demo-home"
        env = prepare_home(home, repo, base_url=model.url)
        agent_env = {k: v for k, v in env.items() if k not in ("HOME", "PATH", "TERM", "LANG")}
        self.stdout.write(f"scripted model on {model.url}; demo repository: {repo}")
        child_env = {
            **os.environ,
            "LAB_AGENT_HOME": str(home),
            "LAB_AGENT_ENV": json.dumps(agent_env),
        }
        try:
            subprocess.run(
                [sys.executable, "manage.py", "serve"], env=child_env, cwd=settings.BASE_DIR, check=False
            )
        except KeyboardInterrupt:
            pass
        finally:
            model.stop()
