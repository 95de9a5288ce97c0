"""The README's settings table and .env.example name every setting lab reads, with the default
lab really uses, and nothing lab no longer reads; the README names the pinned CLI version."""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SETTINGS = REPO / "lab" / "settings.py"
README = REPO / "README.md"
ENV_EXAMPLE = REPO / ".env.example"
READERS = {"str", "int", "list", "bool", "db_url", "env_bool"}


def read_settings() -> dict[str, object]:
    """Every variable lab/settings.py reads from the environment -> its literal default
    (None when the default is computed)."""
    found: dict[str, object] = {}
    for node in ast.walk(ast.parse(SETTINGS.read_text())):
        if not isinstance(node, ast.Call):
            continue
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        if name not in READERS or not node.args or not isinstance(node.args[0], ast.Constant):
            continue
        var = node.args[0].value
        if not isinstance(var, str) or not var.isupper():
            continue
        default = next((k.value for k in node.keywords if k.arg == "default"), None)
        if default is None and len(node.args) > 1:
            default = node.args[1]
        found[var] = _constant(default)
    return found


def _constant(node: ast.expr | None) -> object:
    """A literal, or arithmetic on literals (64 * 1024); None for anything computed (a path
    under the data dir, the known providers)."""
    if node is None:
        return None
    try:
        return ast.literal_eval(node)
    except ValueError:
        pass
    if all(isinstance(n, (ast.BinOp, ast.Constant, ast.operator)) for n in ast.walk(node)):
        return eval(compile(ast.Expression(node), "<default>", "eval"))  # literals only: checked above
    return None


def shown(value: object) -> str:
    """A default as the docs write it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    return str(value)


def computed_defaults(tmp_path: Path) -> dict[str, str]:
    """The defaults no literal says, as lab works them out with nothing set."""
    code = (
        "import json, django; from django.conf import settings; django.setup(); "
        "print(json.dumps({'LAB_PROVIDERS_ENABLED': ','.join(settings.LAB_PROVIDERS)}))"
    )
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "LAB_DATA_DIR": str(tmp_path / "data"),
        "DJANGO_SETTINGS_MODULE": "lab.settings",
    }
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout.splitlines()[-1]))


def env_example() -> dict[str, str | None]:
    """NAME -> its value in .env.example (None: only named, commented out)."""
    found: dict[str, str | None] = {}
    for line in ENV_EXAMPLE.read_text().splitlines():
        if m := re.fullmatch(r"([A-Z][A-Z0-9_]*)=(.*)", line):
            found[m[1]] = m[2]
        elif m := re.fullmatch(r"# ([A-Z][A-Z0-9_]*)=.*", line):
            found.setdefault(m[1], None)
    return found


def readme_table() -> dict[str, str]:
    """NAME -> the Default cell of the README's settings table (a row may name several)."""
    text = README.read_text()
    section = text.split("## Settings", 1)[1].split("\n## ", 1)[0]
    found: dict[str, str] = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 3 or not cells[0].startswith("`"):
            continue
        names = re.findall(r"`([A-Z][A-Z0-9_]*)`", cells[0])
        defaults = [d.strip().strip("`") for d in cells[1].split(",")]
        for i, name in enumerate(names):
            found[name] = defaults[i] if len(defaults) == len(names) else cells[1]
    return found


def test_every_setting_is_in_env_example_and_nothing_stale() -> None:
    read = read_settings()
    example = env_example()
    assert sorted(set(read) - set(example)) == [], "read by lab, missing from .env.example"
    assert sorted(set(example) - set(read)) == [], "in .env.example, not read by lab"


def test_every_setting_is_in_the_readme_table_and_nothing_stale() -> None:
    read = read_settings()
    table = readme_table()
    assert sorted(set(read) - set(table)) == [], "read by lab, missing from README's settings table"
    assert sorted(set(table) - set(read)) == [], "in README's settings table, not read by lab"


def test_the_defaults_written_are_the_defaults_lab_uses(tmp_path: Path) -> None:
    read = read_settings()
    computed = computed_defaults(tmp_path)
    example = env_example()
    table = readme_table()
    wrong = []
    for name, default in read.items():
        real = computed.get(name, shown(default) if default is not None else None)
        if real is None:
            continue  # computed from another setting: the docs say so in words
        if example.get(name) is not None and example[name] != real:
            wrong.append(f".env.example {name}={example[name]} (lab: {real!r})")
        cell = table.get(name)
        # An empty default is one lab works out (lab's HOME, a path in the data dir): in words.
        if cell is not None and real != "" and cell.strip("`") != real:
            wrong.append(f"README {name}: {cell} (lab: {real!r})")
    assert wrong == []


def test_the_readme_names_the_pinned_claude_code_version() -> None:
    pinned = json.loads((REPO / "package.json").read_text())["dependencies"]["@anthropic-ai/claude-code"]
    named = set(re.findall(r"Claude Code (\d+\.\d+\.\d+)", README.read_text()))
    assert named <= {pinned}, f"README names {sorted(named)}; package.json pins {pinned}"
