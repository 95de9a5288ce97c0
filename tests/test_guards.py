"""Provider-neutral by construction: the guards that keep the generic core from naming a provider.

Two guards, each with a self-test that plants a leak in a copy and watches it fail:
- imports: lab, accounts, runs, auth_flows and seeding import no concrete adapter. lint-imports
  (`make lint`) enforces the [tool.importlinter] contracts, written so a new providers/<package>/
  needs no edit there (`providers.*` is forbidden, the seam modules are the exceptions); the
  tests here keep those exceptions equal to the seam modules on disk, prove with lint-imports on
  a copy that a new adapter is covered, and re-check the rule with grimp independently.
- copy: no template or static file hardcodes a registered provider's name, id or domain; the
  display name reaches the page only through `provider_name` / `card.name` (display_name()).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import grimp
import pytest

REPO = Path(__file__).resolve().parent.parent
GENERIC = ("lab", "accounts", "live", "runs", "auth_flows", "seeding", "broadcast", "push")
# The seam: generic modules of providers/ that the generic core may import.
SEAM = {
    "base",
    "schema",
    "review",
    "errors",
    "registry",
    "known",
    "testing",
    "tmux",
    "launch",
    "sanitize",
    "jsonl",
    "keywindow",
    "pending",
    "bounded",
    "hookspool",
    "outbox",
    "safegit",
    "safefile",
    "tui",
    "hook_writer",
}
# Modules of an adapter that must stay Django-free whenever an adapter has them (docs/architecture.md:
# parsing and recipes test without a database): the no-Django contract names them by wildcard.
PURE_ADAPTER_MODULES = ("transcript", "recipes", "dialogs", "commands", "spool")
# Provider domains and vendors, beyond what the registry declares.
DOMAINS = (
    "anthropic",
    "claude.ai",
    "claude.com",
    "openai",
    "chatgpt.com",
    "gemini.google.com",
    "generativelanguage.googleapis.com",
)


# --- imports -------------------------------------------------------------------------------


def concrete_adapters(root: Path = REPO) -> list[str]:
    """Every providers/<name>/ package: anything with an __init__.py that is not the tests."""
    return sorted(
        f"providers.{p.parent.name}"
        for p in (root / "providers").glob("*/__init__.py")
        if p.parent.name != "tests" and not p.parent.name.startswith(("_", "."))
    )


def importlinter_config(root: Path = REPO) -> dict:
    return tomllib.loads((root / "pyproject.toml").read_text())["tool"]["importlinter"]


def no_adapter_contract(config: dict) -> dict:
    (contract,) = [
        c
        for c in config["contracts"]
        if c["type"] == "forbidden" and set(GENERIC) <= set(c["source_modules"])
    ]
    return contract


def seam_modules(root: Path = REPO) -> list[str]:
    return sorted(f"providers.{p.stem}" for p in (root / "providers").glob("*.py") if p.stem != "__init__")


def contract_gaps(root: Path = REPO) -> list[str]:
    """What the importlinter config misses for the packages and modules that exist on disk."""
    config = importlinter_config(root)
    gaps = []
    contract = no_adapter_contract(config)
    if not {"providers.*", "compat"} <= set(contract["forbidden_modules"]):
        gaps.append("the no-adapter contract must forbid providers.* and compat")
    apps = set(config["root_packages"]) - {"providers", "compat"}
    missing_sources = apps - set(contract["source_modules"])
    if missing_sources:
        gaps.append(f"root packages {sorted(missing_sources)} are not sources of the no-adapter contract")
    seam = seam_modules(root)
    # An ignored import into anything but a seam module would open a hole for an adapter.
    ignored = sorted(contract.get("ignore_imports", []))
    expected = sorted(f"** -> {module}" for module in seam)
    if ignored != expected:
        gaps.append(f"the no-adapter contract ignores {ignored}, the seam on disk is {expected}")
    missing_seam = set(seam) - set(contract["source_modules"])
    if missing_seam:
        gaps.append(f"seam modules {sorted(missing_seam)} are not sources of the no-adapter contract")
    (no_django,) = [c for c in config["contracts"] if c.get("forbidden_modules") == ["django"]]
    for name in PURE_ADAPTER_MODULES:
        if f"providers.*.{name}" not in no_django["source_modules"]:
            gaps.append(f"providers.*.{name}: not in the source_modules of the no-Django contract")
    return gaps


def adapter_import_chains(root_packages: list[str], adapters: list[str]) -> list[str]:
    """Import chains from a generic package to an adapter, found by grimp (the graph library
    lint-imports runs on), independently of how the contracts are written."""
    graph = grimp.build_graph(*root_packages, cache_dir=None)
    chains = []
    for generic in GENERIC:
        for adapter in adapters:
            for chain in sorted(graph.find_shortest_chains(importer=generic, imported=adapter)):
                chains.append(" -> ".join(chain))
    return chains


def test_every_concrete_adapter_is_forbidden_to_the_generic_core():
    assert concrete_adapters(), "providers/ holds at least the claude_code adapter"
    gaps = contract_gaps()
    assert not gaps, "pyproject.toml [tool.importlinter] is incomplete:\n" + "\n".join(gaps)


def test_the_seam_modules_are_the_only_generic_ones_in_providers():
    # A new module at providers/ top level is seam: it must be one the generic core may use,
    # else it belongs inside an adapter package.
    top = {p.stem for p in (REPO / "providers").glob("*.py")} - {"__init__"}
    assert top <= SEAM, f"unexpected seam modules {sorted(top - SEAM)}: add to SEAM or move into an adapter"


def test_no_generic_package_reaches_an_adapter():
    roots = importlinter_config()["root_packages"]
    chains = adapter_import_chains(roots, concrete_adapters())
    assert not chains, "the generic core reaches an adapter:\n" + "\n".join(chains)


def _copy_packages(dst: Path) -> None:
    for name in importlinter_config()["root_packages"]:
        shutil.copytree(REPO / name, dst / name, ignore=shutil.ignore_patterns("__pycache__", "fixtures"))
    shutil.copy(REPO / "pyproject.toml", dst / "pyproject.toml")


def _plant(path: Path, line: str) -> None:
    path.write_text(f"{line}\n{path.read_text()}")


def _lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(Path(sys.executable).with_name("lint-imports")), "--no-cache"],
        cwd=root,
        env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_lint_imports_fails_on_a_generic_module_importing_the_adapter(tmp_path):
    _copy_packages(tmp_path)
    _plant(tmp_path / "runs" / "services.py", "import providers.claude_code  # planted leak")
    out = _lint_imports(tmp_path)
    assert out.returncode != 0, out.stdout
    assert "The generic core never imports a concrete adapter BROKEN" in out.stdout
    assert "runs.services -> providers.claude_code" in out.stdout


def test_lint_imports_fails_on_a_chain_through_the_seam(tmp_path):
    # Imports of seam modules are ignored in the contract; the seam module itself is a source.
    _copy_packages(tmp_path)
    _plant(tmp_path / "providers" / "registry.py", "import providers.claude_code.provider  # planted")
    out = _lint_imports(tmp_path)
    assert out.returncode != 0, out.stdout
    assert "providers.registry -> providers.claude_code.provider" in out.stdout


def test_a_new_adapter_package_is_covered_without_an_edit(tmp_path):
    # A second adapter, as a new provider adds it: a folder, no pyproject.toml change.
    _copy_packages(tmp_path)
    newcli = tmp_path / "providers" / "newcli"
    newcli.mkdir()
    (newcli / "__init__.py").write_text("")
    (newcli / "transcript.py").write_text("import django.conf  # planted: parsing must not need Django\n")
    assert contract_gaps(tmp_path) == []
    _plant(tmp_path / "auth_flows" / "views.py", "from providers import newcli  # planted leak")
    out = _lint_imports(tmp_path)
    assert out.returncode != 0, out.stdout
    assert "auth_flows.views -> providers.newcli" in out.stdout
    assert "Transcript parsing, recipes and the schema import no Django BROKEN" in out.stdout
    assert "providers.newcli.transcript -> django (l.1)" in out.stdout


def test_a_new_seam_module_must_join_the_contract(tmp_path):
    _copy_packages(tmp_path)
    (tmp_path / "providers" / "clock.py").write_text("")
    assert contract_gaps(tmp_path) == [
        "the no-adapter contract ignores "
        + str(sorted(f"** -> {m}" for m in seam_modules()))
        + ", the seam on disk is "
        + str(sorted(f"** -> {m}" for m in [*seam_modules(), "providers.clock"])),
        "seam modules ['providers.clock'] are not sources of the no-adapter contract",
    ]


def test_grimp_finds_a_planted_chain_to_a_new_adapter(tmp_path):
    # In a subprocess: grimp locates packages by import name, and this process already
    # imported the real ones.
    _copy_packages(tmp_path)
    (tmp_path / "providers" / "newcli").mkdir()
    (tmp_path / "providers" / "newcli" / "__init__.py").write_text("")
    _plant(tmp_path / "auth_flows" / "views.py", "from providers import newcli  # planted leak")
    script = (
        "import sys; sys.path[:0] = [sys.argv[1], sys.argv[2]]\n"
        "from tests.test_guards import adapter_import_chains, concrete_adapters, importlinter_config\n"
        "from pathlib import Path\n"
        "root = Path(sys.argv[1])\n"
        "print('\\n'.join(adapter_import_chains(importlinter_config(root)['root_packages'],"
        " concrete_adapters(root))))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path), str(REPO)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert "auth_flows.views -> providers.newcli" in out.stdout.splitlines()


# --- copy ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Leak:
    path: str
    line: int
    term: str
    text: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.term!r} in {self.text.strip()[:120]!r}"


def provider_terms() -> dict[str, str]:
    """term -> why it is forbidden: every known provider's display name, id and brand (the
    id's first word), from the registry's own declarations, plus the fixed domains."""
    from django.conf import settings
    from django.utils.module_loading import import_string

    terms: dict[str, str] = {}
    for provider_id, dotted in settings.LAB_KNOWN_PROVIDERS.items():
        provider = import_string(dotted)()
        brand = provider_id.split("-")[0]
        for term in (provider.display_name(), provider.id, brand):
            if len(term) >= 4:
                terms.setdefault(term, f"{provider_id} (from the registry)")
    for domain in DOMAINS:
        terms.setdefault(domain, "a provider domain")
    return terms


def frontend_files(root: Path = REPO) -> list[Path]:
    """Templates and lab's own static files; vendored third-party files are not lab's copy."""
    files = [p for p in (root / "templates").rglob("*") if p.is_file()]
    for p in (root / "static").rglob("*"):
        if not p.is_file() or "vendor" in p.parts or ".min." in p.name:
            continue
        files.append(p)
    return sorted(files)


def copy_leaks(root: Path = REPO, terms: dict[str, str] | None = None) -> list[Leak]:
    terms = provider_terms() if terms is None else terms
    # Case-insensitive, on word edges: "Claude", "claude.ai", "CLAUDE_" all count; "claudette"
    # would not. Longest first so a line reports its most specific term.
    patterns = [
        (term, re.compile(rf"(?<![A-Za-z0-9]){re.escape(term)}(?![A-Za-z])", re.IGNORECASE))
        for term in sorted(terms, key=len, reverse=True)
    ]
    leaks = []
    for path in frontend_files(root):
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            for term, pattern in patterns:
                if pattern.search(line):
                    leaks.append(Leak(str(path.relative_to(root)), number, term, line))
                    break
    return leaks


def test_the_terms_come_from_the_registry():
    terms = provider_terms()
    assert {"Claude Code", "claude-code", "claude", "anthropic", "claude.ai"} <= set(terms)


def test_no_template_or_static_file_names_a_provider():
    leaks = copy_leaks()
    assert not leaks, "provider names belong to display_name(), not the page:\n" + "\n".join(map(str, leaks))


def test_the_copy_guard_names_file_and_line_of_a_planted_leak(tmp_path):
    shutil.copytree(REPO / "templates", tmp_path / "templates")
    shutil.copytree(REPO / "static", tmp_path / "static")
    detail = tmp_path / "templates" / "runs" / "detail.html"
    lines = detail.read_text().splitlines()
    lines.insert(2, "<p>Claude is thinking…</p>")
    detail.write_text("\n".join(lines) + "\n")
    with (tmp_path / "static" / "lab" / "lab.js").open("a") as f:
        f.write('\nconst help = "https://claude.ai/settings";\n')
    vendored = tmp_path / "static" / "lab" / "vendor"
    vendored.mkdir()
    (vendored / "sdk.js").write_text("// anthropic sdk\n")  # third-party: not lab's copy
    leaks = [str(leak) for leak in copy_leaks(tmp_path)]
    js_line = len((tmp_path / "static" / "lab" / "lab.js").read_text().splitlines())
    assert leaks == [
        f"static/lab/lab.js:{js_line}: 'claude.ai' in 'const help = \"https://claude.ai/settings\";'",
        "templates/runs/detail.html:3: 'claude' in '<p>Claude is thinking…</p>'",
    ]


# Every user-facing spot that names the provider, and the variable it must use.
NAME_SPOTS = {
    "templates/runs/detail.html": [
        "{{ provider_name }} needs input",
        "{{ provider_name }} asks",
        "· {{ provider_name }} ·",
    ],
    "templates/auth_flows/card.html": [
        "<h2>{{ card.name }}</h2>",
        "Log in to {{ card.name }}",
        "Log out of {{ card.name }}",
        "Sign in to {{ card.name }}",
    ],
}


@pytest.mark.parametrize("template", NAME_SPOTS)
def test_templates_take_the_name_from_display_name(template):
    text = (REPO / template).read_text()
    for spot in NAME_SPOTS[template]:
        assert spot in text, f"{template}: expected {spot!r}"


def test_the_views_put_display_name_into_the_context():
    # provider_name and card.name are the only ways in; each is display_name() at its source.
    sources = {
        # The page and the watcher's panel both take it from the run's view.
        "runs/runview.py": '"provider_name": self.provider_name',
        "runs/views.py": "**view.panel_context()",
        "live/watcher.py": "**view.panel_context()",
        "auth_flows/services.py": "name=provider.display_name()",
    }
    for path, needle in sources.items():
        assert needle in (REPO / path).read_text(), f"{path}: {needle!r}"


def test_every_needs_input_badge_uses_the_name_variable():
    for path in frontend_files():
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            # "X needs input" is the one state sentence that names its subject: the subject
            # must be a template variable, never a literal.
            for match in re.finditer(r"(\S+)\s+needs input\b", line):
                assert match.group(1) == "}}", f"{path.relative_to(REPO)}:{number}: {match.group(0)!r}"


# Options carry meaning, not positions (docs/architecture.md, "Dialog answering"): a template
# decides by an option's flags (preferred, denies, offered, takes_text, needs_text), never by
# where it sits among its siblings or by the adapter's `key`. An index may still be written out
# as the answer's value; only a test on it, an indexed lookup or a slice of options is a leak.
OPTION_POSITION = re.compile(
    r"forloop\.(?:rev)?counter0?\s*(?:==|!=|<=?|>=?|\|)"  # a branch or filter on a loop position
    r"|\boptions\.\d"  # options.0, question.options.2
    r"|\boptions\|(?:slice|first|last|dictsort)"  # a slice or pick of options
    r"|\.key\b"  # the adapter's own name for an option
)


def option_position_leaks(root: Path = REPO) -> list[str]:
    leaks = []
    for path in sorted((root / "templates").rglob("*.html")):
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            for match in OPTION_POSITION.finditer(line):
                leaks.append(f"{path.relative_to(root)}:{number}: {match.group(0)!r}")
    return leaks


def test_no_template_picks_an_option_by_position_or_key():
    leaks = option_position_leaks()
    assert not leaks, "a template must read an option's flags, not its index or key:\n" + "\n".join(leaks)


@pytest.mark.parametrize(
    "planted",
    [
        "{% for o in dialog.options %}{% if forloop.counter0 == 1 %}x{% endif %}{% endfor %}",
        "{% if option.key == 'deny' %}deny{% endif %}",
        "{{ dialog.options.0.label }}",
        '{% for o in question.options|slice:"1:" %}{% endfor %}',
    ],
)
def test_the_option_guard_finds_a_planted_position(tmp_path, planted):
    shutil.copytree(REPO / "templates", tmp_path / "templates")
    with (tmp_path / "templates" / "runs" / "dialog.html").open("a") as f:
        f.write(planted + "\n")
    leaks = option_position_leaks(tmp_path)
    assert leaks and all(leak.startswith("templates/runs/dialog.html:") for leak in leaks), leaks
