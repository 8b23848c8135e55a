"""`/init`: ask the model to write a starter AGENTS.md from what the project holds.

bulkhead looks first (cheaply, without the model): the top-level files and folders, the build
manifests it knows (pyproject.toml, package.json, Cargo.toml, go.mod, Makefile) and the commands
they imply, the README's first line, existing instruction files. The prompt hands these facts to
the model, which explores further with its tools and writes the file with `write_file` (an existing
one it improves with `edit_file`) — through the usual approvals, and checkpointed, so `/undo` takes
it back. The lab model answers the prompt with a deterministic file built from the facts.
"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

from app.engine.instructions import INSTRUCTION_NAMES, project_root
from app.model.prompts import INIT_MARKER

MAX_LISTED = 40


def _read(path: Path, limit: int = 256 * 1024) -> str:
    try:
        with path.open("rb") as handle:
            return handle.read(limit).decode("utf-8", "replace")
    except OSError:
        return ""


def _commands(root: Path) -> list[tuple[str, str]]:
    """(what, command) pairs the manifests imply, e.g. ("test", "npm test")."""
    found: list[tuple[str, str]] = []
    package = root / "package.json"
    if package.is_file():
        try:
            scripts = json.loads(_read(package)).get("scripts") or {}
        except (ValueError, AttributeError):
            scripts = {}
        for what in ("build", "test", "lint", "start"):
            if what in scripts:
                found.append((what, "npm test" if what == "test" else f"npm run {what}"))
    pyproject = root / "pyproject.toml"
    if pyproject.is_file():
        try:
            data = tomllib.loads(_read(pyproject))
        except tomllib.TOMLDecodeError:
            data = {}
        tool = data.get("tool") or {}
        if "pytest" in tool or (root / "tests").is_dir():
            found.append(("test", "python3 -m pytest"))
        if "ruff" in tool:
            found.append(("lint", "ruff check ."))
    if (root / "Cargo.toml").is_file():
        found += [("build", "cargo build"), ("test", "cargo test")]
    if (root / "go.mod").is_file():
        found += [("build", "go build ./..."), ("test", "go test ./...")]
    makefile = root / "Makefile"
    if makefile.is_file():
        targets = re.findall(r"^([A-Za-z][\w-]*):(?!=)", _read(makefile), re.M)
        for what in ("build", "test", "lint", "check"):
            if what in targets:
                found.append((what, f"make {what}"))
    seen: set[str] = set()
    unique = []
    for what, command in found:
        if what not in seen:
            seen.add(what)
            unique.append((what, command))
    return unique


def project_facts(workspace: Path) -> list[str]:
    """`- key: value` lines describing the project, for the /init prompt."""
    root = project_root(workspace)
    facts = [f"- project: {root.name}"]
    try:
        entries = sorted(root.iterdir(), key=lambda p: (not p.is_dir(), p.name.lower()))
    except OSError:
        entries = []
    visible = [p for p in entries if not p.name.startswith(".") or p.name in (".github",)]
    if visible:
        listed = ", ".join(p.name + ("/" if p.is_dir() else "") for p in visible[:MAX_LISTED])
        more = f" (+{len(visible) - MAX_LISTED} more)" if len(visible) > MAX_LISTED else ""
        facts.append(f"- top level: {listed}{more}")
    manifests = [
        name
        for name in (
            "pyproject.toml",
            "package.json",
            "Cargo.toml",
            "go.mod",
            "Makefile",
            "requirements.txt",
            "pom.xml",
            "build.gradle",
        )
        if (root / name).is_file()
    ]
    if manifests:
        facts.append(f"- manifests: {', '.join(manifests)}")
    for what, command in _commands(root):
        facts.append(f"- {what}: `{command}`")
    for readme in ("README.md", "README.rst", "README.txt", "README"):
        if (root / readme).is_file():
            first = next(
                (
                    line.strip().lstrip("#").strip()
                    for line in _read(root / readme, 8192).splitlines()
                    if line.strip()
                ),
                "",
            )
            if first:
                facts.append(f"- readme: {first[:120]}")
            break
    existing = [name for name in INSTRUCTION_NAMES if (root / name).is_file()]
    facts.append(f"- existing instructions: {', '.join(existing) if existing else 'none'}")
    return facts


def init_prompt(workspace: Path) -> str:
    """The prompt `/init` sends."""
    root = project_root(workspace)
    target = root / "AGENTS.md"
    shown = "AGENTS.md" if root == Path(workspace).expanduser().resolve() else str(target)
    exists = target.is_file()
    action = (
        f"{shown} exists: read it and improve it with edit_file (keep what is right)."
        if exists
        else f"Create {shown} with write_file."
    )
    return (
        f"{INIT_MARKER} Write a starter AGENTS.md for this project: the instructions coding agents "
        f"(bulkhead, Codex, Claude Code via @AGENTS.md) read before they work here.\n"
        f"Explore the project with your tools first. Include: the commands to build, test, lint and run "
        f"it; where things live; the conventions the code follows; anything surprising a newcomer must "
        f"know. Be concrete and short (under 200 lines), no generic advice. {action}\n\n"
        f"What bulkhead found:\n<facts>\n" + "\n".join(project_facts(workspace)) + "\n</facts>\n"
        f"Write it to: {shown}"
    )
