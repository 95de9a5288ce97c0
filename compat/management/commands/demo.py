"""`make demo`: lab with the real agent CLI answering from the scripted local model.

Offline and account-free: a demo git repository to start runs on, and the default provider's
demo (``compat/<package>/demo.py``, see compat/demo.py): its scripted model on a free loopback
port and a private agent HOME under the data dir. lab is served with LAB_AGENT_HOME /
LAB_AGENT_ENV pointing at both.
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
        from compat.demo import start

        data = Path(settings.DATA_DIR)
        repo = data / "demo-repo"
        if not (repo / ".git").exists():
            repo.mkdir(parents=True, exist_ok=True)
            git = ["git", "-c", "user.name=lab demo", "-c", "user.email=demo@lab.invalid"]
            subprocess.run([*git, "init", "-q", "-b", "main"], cwd=repo, check=True)
            (repo / "README.md").write_text("# demo repository\n\nStart a run on this repository from lab.\n")
            subprocess.run([*git, "add", "README.md"], cwd=repo, check=True)
            subprocess.run([*git, "commit", "-q", "-m", "demo"], cwd=repo, check=True)
        agent = start(settings.LAB_DEFAULT_PROVIDER, data, repo)
        self.stdout.write(f"scripted model on {agent.model_url}; demo repository: {repo}")
        child_env = {
            **os.environ,
            "LAB_AGENT_HOME": str(agent.home),
            "LAB_AGENT_ENV": json.dumps(agent.env),
        }
        try:
            subprocess.run(
                [sys.executable, "manage.py", "serve"], env=child_env, cwd=settings.BASE_DIR, check=False
            )
        except KeyboardInterrupt:
            pass
        finally:
            agent.stop()
