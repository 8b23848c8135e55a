"""The lab model's answer to `/init`: a deterministic AGENTS.md built from the facts in the prompt.

The prompt (app.engine.project_init) carries `- key: value` lines between `<facts>` and `</facts>`
and ends with `Write it to: PATH`. The lab model answers with one `write_file` call of that path —
unless the prompt says the file exists, when it only says what it would change.
"""

from __future__ import annotations

import re

_FACTS_RE = re.compile(r"<facts>\n(.*?)\n</facts>", re.S)
_TARGET_RE = re.compile(r"^Write it to: (.+)$", re.M)
COMMAND_KEYS = ("build", "test", "lint", "check", "start")


def facts(prompt: str) -> dict[str, str]:
    match = _FACTS_RE.search(prompt)
    out: dict[str, str] = {}
    for line in match.group(1).splitlines() if match else ():
        key, colon, value = line.removeprefix("- ").partition(": ")
        if colon:
            out[key.strip()] = value.strip()
    return out


def agents_md(found: dict[str, str]) -> str:
    project = found.get("project", "this project")
    lines = [
        f"# AGENTS.md — {project}",
        "",
        "Instructions for coding agents working here. Written by bulkhead's lab model from what "
        "`/init` found; edit it to say what matters.",
        "",
    ]
    if found.get("readme"):
        lines += [f"{found['readme']}", ""]
    commands = [(key, found[key]) for key in COMMAND_KEYS if key in found]
    if commands:
        lines += ["## Commands", ""] + [f"- {key}: {command}" for key, command in commands] + [""]
    if found.get("top level"):
        lines += (
            ["## Layout", ""] + [f"- `{entry.strip()}`" for entry in found["top level"].split(",")] + [""]
        )
    if found.get("manifests"):
        lines += ["## Build files", "", f"- {found['manifests']}", ""]
    lines += ["## Conventions", "", "- Run the tests before saying a change is done.", ""]
    return "\n".join(lines)


def answer(prompt: str) -> tuple[str, dict] | str:
    """(`write_file`, its input) — or a text answer when the file already exists."""
    target = _TARGET_RE.search(prompt)
    path = target.group(1).strip() if target else "AGENTS.md"
    found = facts(prompt)
    if found.get("existing instructions", "none") != "none" and "AGENTS.md" in found["existing instructions"]:
        return (
            f"Lab model · /init: {path} already exists; a real model would read it and improve it with "
            f"edit_file. The lab model leaves it as it is."
        )
    return "write_file", {"path": path, "content": agents_md(found)}
