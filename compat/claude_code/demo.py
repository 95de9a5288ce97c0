"""Claude Code for `make demo`: the scripted model's demo script (it echoes) and a private HOME
with onboarding done and the test key approved (compat/demo.py states the convention)."""

from __future__ import annotations

from pathlib import Path

from compat.claude_code.home import prepare_home
from compat.claude_code.scripted_model import ScriptedModel, demo_script
from compat.demo import DemoAgent


def start(data: Path, repo: Path) -> DemoAgent:
    model = ScriptedModel(demo_script()).start()
    home = data / "demo-home"
    env = prepare_home(home, repo, base_url=model.url)
    agent_env = {k: v for k, v in env.items() if k not in ("HOME", "PATH", "TERM", "LANG")}
    return DemoAgent(home=home, env=agent_env, model_url=model.url, stop=model.stop)
