"""What `manage.py demo` needs from a provider's test bed, by convention: a module
``compat/<package>/demo.py`` with ``start(data: Path, repo: Path) -> DemoAgent`` that starts the
provider's scripted model and prepares a private HOME in which the real CLI reaches its prompt
in ``repo`` with no account."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from providers.known import package


@dataclass(frozen=True)
class DemoAgent:
    home: Path  # LAB_AGENT_HOME
    env: dict[str, str]  # LAB_AGENT_ENV: the scripted model's address and the CLI's test key
    model_url: str
    stop: Callable[[], None]  # stops the scripted model


def start(provider_id: str, data: Path, repo: Path) -> DemoAgent:
    module = importlib.import_module(f"compat.{package(provider_id)}.demo")
    agent: DemoAgent = module.start(data, repo)
    return agent
