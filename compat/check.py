"""What a CLI version breaks: install it aside, run its live suite on it, print a table.

Shared by every provider; a provider's ``compat/<package>/check.py`` names its Target and calls
``main`` (``make compat-check VERSION=<x.y.z|latest> PROVIDER=<package>``):

    .venv/bin/python -m compat.claude_code.check 2.1.332   # or: make compat-check VERSION=2.1.332
    .venv/bin/python -m compat.claude_code.check latest

The version goes into a scratch npm prefix (``var/compat-check/<package>/<version>/``, reused
when already there): the pin in package.json and the repo's node_modules are never touched. The
live tests (``-m live``) of ``compat/<package>/`` and ``tests/`` then run with
``LAB_AGENT_BIN_DIR`` pointing at that install, which lab's adapter and the provider's live
harness both honour, and the conformance suite narrowed to the provider. Each test is placed
under the COMPAT sections whose text names it, so the table reads section by section; a test no
section names gets a row of its own rather than disappearing. A failure whose message starts with
"drift" (a changed catalog description, an unknown link shape) is shown as drift.

Exit status: 0 when every live test passed, 1 otherwise, 2 when the version could not be installed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from compat.conformance import CONFORMANCE_ONLY

REPO_ROOT = Path(__file__).resolve().parent.parent
VERSION_RE = re.compile(r"\d+\.\d+\.\d+")
# A test named in a COMPAT text: `file.py::test_x`, `test_x`, or the prefix `test_x…`.
NAMED_RE = re.compile(r"(?:(test_\w+)\.py(?:::(test_\w+)(…)?)?)|(test_\w+)(…)?")
REASON_MAX = 300  # a changed description is named with both texts
EVERY_RE = re.compile(r"[Ee]very live test(?!'s)")


class CheckError(Exception):
    pass


@dataclass(frozen=True)
class Target:
    """One provider's CLI as the check installs and names it."""

    provider_id: str  # the registry id: the conformance suite is narrowed to it
    name: str  # for the table's first line ("Claude Code")
    package: str  # the npm package pinned in package.json
    binary: str  # its command under node_modules/.bin
    compat_dir: Path  # compat/<package>/: its COMPAT*.md and its live tests
    pinned: str  # the version package.json pins
    installed_version: Callable[[Path], str]  # the version of the package holding a binary

    @property
    def scratch(self) -> Path:
        return REPO_ROOT / "var" / "compat-check" / self.compat_dir.name


# --- the registry and the scratch install -----------------------------------------------------


def _npm(*args: str) -> str:
    cp = subprocess.run(["npm", *args], capture_output=True, text=True, timeout=600)
    if cp.returncode != 0:
        raise CheckError(f"npm {' '.join(args)} failed: {cp.stderr.strip()[-500:]}")
    return cp.stdout


def resolve(target: Target, version: str) -> tuple[str, str]:
    """(exact version, its release date from the registry). "latest" is the registry's tag."""
    times = json.loads(_npm("view", target.package, "time", "--json"))
    if version == "latest":
        version = json.loads(_npm("view", target.package, "dist-tags.latest", "--json"))
    if not VERSION_RE.fullmatch(version):
        raise CheckError(f"not an exact version: {version!r} (x.y.z or latest)")
    if version not in times:
        raise CheckError(f"the registry has no {target.package}@{version}")
    return version, times[version]


def install(target: Target, version: str) -> Path:
    """``<scratch>/<version>/node_modules/.bin``, installed there once with its own manifest."""
    prefix = target.scratch / version
    bin_dir = prefix / "node_modules" / ".bin"
    binary = bin_dir / target.binary
    installed_version = target.installed_version
    if binary.exists():
        try:
            if installed_version(binary) == version:
                return bin_dir
        except FileNotFoundError:
            pass
    shutil.rmtree(prefix, ignore_errors=True)
    prefix.mkdir(parents=True)
    # Its own package.json, so npm never walks up to the repo's manifest or node_modules.
    (prefix / "package.json").write_text(json.dumps({"name": "lab-compat-check", "private": True}) + "\n")
    _npm("install", "--prefix", str(prefix), "--no-audit", "--no-fund", "--loglevel=error",
         "--save-exact", f"{target.package}@{version}")  # fmt: skip
    if installed_version(binary) != version:
        raise CheckError(f"npm installed {installed_version(binary)} into {prefix}, not {version}")
    return bin_dir


# --- the live suite --------------------------------------------------------------------------


@dataclass
class Outcome:
    nodeid: str
    status: str  # pass | fail | drift | skip
    reason: str = ""

    @property
    def name(self) -> str:
        return self.nodeid.rsplit("::", 1)[-1].split("[", 1)[0]

    @property
    def module(self) -> str:
        return self.nodeid.split("::", 1)[0].rsplit("/", 1)[-1].removesuffix(".py")


def run_live(target: Target, bin_dir: Path, junit: Path, pytest_args: list[str]) -> None:
    """The provider's live tests and the shared ones under tests/, with the conformance suite
    narrowed to the provider: another provider's CLI is not in the scratch install."""
    env = {**os.environ, "LAB_AGENT_BIN_DIR": str(bin_dir), CONFORMANCE_ONLY: target.provider_id}
    paths = [str(target.compat_dir.relative_to(REPO_ROOT)), "tests"]
    argv = [sys.executable, "-m", "pytest", "-q", "-m", "live", f"--junitxml={junit}", *paths, *pytest_args]
    subprocess.run(argv, cwd=REPO_ROOT, env=env, check=False)


def _one_line(text: str) -> str:
    line = next((s.strip() for s in text.splitlines() if s.strip()), "")
    line = re.sub(r"^(Failed|AssertionError): ", "", line)
    return line if len(line) <= REASON_MAX else line[: REASON_MAX - 1] + "…"


def outcomes(junit: Path) -> list[Outcome]:
    found = []
    for case in ET.parse(junit).iter("testcase"):
        path = case.get("classname", "").replace(".", "/")
        nodeid = f"{path}.py::{case.get('name')}"
        status, reason = "pass", ""
        for tag in ("failure", "error"):
            bad = case.find(tag)
            if bad is not None:
                reason = _one_line(bad.get("message") or bad.text or tag)
                status = "drift" if reason.lower().startswith("drift") else "fail"
                if tag == "error":
                    reason = f"error: {reason}"
                break
        skipped = case.find("skipped")
        if status == "pass" and skipped is not None:
            status, reason = "skip", _one_line(skipped.get("message") or "")
        found.append(Outcome(nodeid, status, reason))
    return found


# --- COMPAT sections --------------------------------------------------------------------------


@dataclass
class Section:
    label: str
    tests: set[str] = field(default_factory=set)  # exact names
    prefixes: set[str] = field(default_factory=set)
    modules: set[str] = field(default_factory=set)
    every: bool = False  # "verified by every live test"

    def names(self, outcome: Outcome) -> bool:
        name = outcome.name
        return (
            self.every
            or name in self.tests
            or any(name.startswith(p) for p in self.prefixes)
            or outcome.module in self.modules
        )


def _label(doc: Path, heading: str) -> str:
    text = heading.lstrip("#").strip().replace("`", "")
    if doc.name == "COMPAT.md":
        return text
    topic = doc.stem.removeprefix("COMPAT-")
    return f"{topic} (whole file)" if heading.startswith("# ") else f"{topic} {text}"


def sections(compat_dir: Path) -> list[Section]:
    """Every COMPAT heading with a § (and each COMPAT-*.md file as a whole; untitled sub-headings
    fold into the section above them), with the tests its text names."""
    found: list[Section] = []
    for doc in sorted(compat_dir.glob("COMPAT*.md"), key=lambda p: (p.name != "COMPAT.md", p.name)):
        current: Section | None = None
        for line in doc.read_text().splitlines():
            whole_file = line.startswith("# ") and doc.name != "COMPAT.md"
            if line.startswith("#") and ("§" in line or whole_file):
                current = Section(_label(doc, line))
                found.append(current)
            if current is None:
                continue
            current.every |= bool(EVERY_RE.search(line))
            for module, file_test, file_prefix, test, prefix in NAMED_RE.findall(line):
                if module and file_test:
                    (current.prefixes if file_prefix else current.tests).add(file_test)
                elif module:
                    current.modules.add(module)
                elif test:
                    (current.prefixes if prefix else current.tests).add(test)
    return [s for s in found if s.every or s.tests or s.prefixes or s.modules]


# --- the table ----------------------------------------------------------------------------------


def table(
    target: Target, version: str, released: str, results: list[Outcome], secs: list[Section], seconds: float
) -> str:
    counts = {s: sum(o.status == s for o in results) for s in ("pass", "fail", "drift", "skip")}
    lines = [
        f"{target.name} {version} (released {released[:10]}; lab pins {target.pinned})",
        f"live suite: {len(results)} tests in {seconds:.0f} s: {counts['pass']} passed, {counts['fail']} "
        f"failed, {counts['drift']} drift, {counts['skip']} skipped",
        "",
    ]
    rows: list[tuple[str, str, list[Outcome]]] = []
    placed: set[str] = set()
    for sec in secs:
        mine = [o for o in results if sec.names(o)]
        if not sec.every:
            placed |= {o.nodeid for o in mine}
        rows.append((sec.label + (" [every live test]" if sec.every else ""), _verdict(mine), mine))
    unplaced = [o for o in results if o.nodeid not in placed]
    if unplaced:
        rows.append(("(no COMPAT section names these)", _verdict(unplaced), unplaced))
    width = max(len(label) for label, _, _ in rows)
    lines.append(f"{'COMPAT section':<{width}}  result")
    lines.append(f"{'-' * width}  {'-' * 24}")
    for label, verdict, mine in rows:
        lines.append(f"{label:<{width}}  {verdict}")
        for o in [] if label.endswith("[every live test]") else mine:
            if o.status in ("fail", "drift"):
                lines.append(f"{'':<{width}}    {o.status}: {o.name}: {o.reason}")
    return "\n".join(lines)


def _verdict(mine: list[Outcome]) -> str:
    if not mine:
        return "no live test ran"
    bad = [o for o in mine if o.status in ("fail", "drift")]
    passed = sum(o.status == "pass" for o in mine)
    skipped = sum(o.status == "skip" for o in mine)
    counts = f"{passed}/{len(mine)} passed" + (f", {skipped} skipped" if skipped else "")
    if not bad:
        return f"pass ({counts})"
    word = "drift" if all(o.status == "drift" for o in bad) else "FAIL"
    return f"{word} ({counts})"


def main(target: Target, argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog=f"python -m compat.{target.compat_dir.name}.check",
        description=f"What a {target.name} version breaks: install it aside, run the live suite on it.",
    )
    parser.add_argument("version", help="x.y.z or latest")
    parser.add_argument("pytest_args", nargs="*", help="extra pytest arguments (after --), e.g. -k login")
    args = parser.parse_args(argv)
    try:
        version, released = resolve(target, args.version)
        print(f"installing {target.package}@{version} into {target.scratch / version} (the pin and "
              "node_modules stay)")  # fmt: skip
        bin_dir = install(target, version)
    except CheckError as exc:
        print(f"compat-check: {exc}", file=sys.stderr)
        return 2
    junit = target.scratch / version / "junit.xml"
    junit.unlink(missing_ok=True)
    started = time.monotonic()
    run_live(target, bin_dir, junit, args.pytest_args)
    if not junit.exists():
        print("compat-check: pytest wrote no report (see its output above)", file=sys.stderr)
        return 1
    results = outcomes(junit)
    print()
    print(table(target, version, released, results, sections(target.compat_dir), time.monotonic() - started))
    return 0 if results and all(o.status in ("pass", "skip") for o in results) else 1
