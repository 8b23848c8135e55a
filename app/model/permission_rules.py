r"""Permission rules' grammar, in Claude Code's syntax: `Tool` or `Tool(specifier)`, and how a specifier matches.

The vocabulary of `[permissions]` in config.toml (checked at load time by `app.config`), of the workspace's
rule files and of "always" in an approval. Which rules are in force, and what they decide, is the engine's
(`app.engine.permissions`, whose docstring describes the rules as a user writes them).
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from app.model.command_rules import allow_matches, deny_matches

Kind = Literal["allow", "ask", "deny"]
KINDS: tuple[Kind, ...] = ("deny", "ask", "allow")  # the order rules are evaluated in

READS = ("read_file", "list_dir", "glob", "grep")
EDITS = ("edit_file", "write_file")
TOOL_ALIASES: Mapping[str, tuple[str, ...]] = {
    "Bash": ("shell",),
    "Read": READS,
    "Edit": EDITS,
    "Write": EDITS,
    "MultiEdit": ("edit_file",),
    "Glob": ("glob",),
    "Grep": ("grep",),
    "LS": ("list_dir",),
    "WebFetch": ("web_fetch",),
    "shell": ("shell",),
    "read_file": ("read_file",),
    "list_dir": ("list_dir",),
    "glob": ("glob",),
    "grep": ("grep",),
    "edit_file": ("edit_file",),
    "write_file": ("write_file",),
    "recall": ("recall",),
    "web_fetch": ("web_fetch",),
}
PATH_TOOLS = frozenset(READS + EDITS)
FOLDER_TOOLS = frozenset({"list_dir", "glob", "grep"})  # their path is a folder they read inside
_RULE_RE = re.compile(r"^\s*([A-Za-z_][\w-]*\*?)\s*(?:\((.*)\))?\s*$", re.S)
SESSION = "this session"


class RuleError(ValueError):
    """A rule that does not parse; the message says what a rule looks like."""


def parse_rule(text: str) -> tuple[str, str | None]:
    """`Bash(npm test:*)` → ("Bash", "npm test:*"); `Read` → ("Read", None)."""
    if not isinstance(text, str):
        raise RuleError(
            f'{text!r} is not a rule: rules are strings like "Bash(npm test:*)" or "Read(./src/**)"'
        )
    match = _RULE_RE.match(text)
    if not match:
        raise RuleError(
            f'{text!r} is not a rule: write Tool or Tool(specifier), e.g. "Bash(npm test:*)", '
            f'"Read(./src/**)", "WebFetch(domain:example.com)", "mcp__github"'
        )
    tool, specifier = match.group(1), match.group(2)
    if tool not in TOOL_ALIASES and not tool.startswith("mcp__"):
        known = ", ".join(k for k in TOOL_ALIASES if k[0].isupper())
        raise RuleError(
            f"{text!r}: unknown tool {tool!r} (Claude Code's {known}, bulkhead's tool names, "
            f"or mcp__SERVER[__TOOL])"
        )
    specifier = specifier.strip() if specifier is not None else None
    if specifier in ("", "*"):
        specifier = None
    if tool in ("WebFetch", "web_fetch") and specifier is not None and not specifier.startswith("domain:"):
        raise RuleError(f"{text!r}: WebFetch rules name a domain: WebFetch(domain:example.com)")
    return tool, specifier


# -- commands ----------------------------------------------------------------------------------------
def command_matches(pattern: str, command: str, kind: Kind) -> bool | None:
    """Does a Bash rule's pattern match `command`, as bash will run it (`app.model.command_rules`)?
    Allow rules must match every simple command and only when bulkhead is sure; deny and ask rules match
    when any part does, after normalisation — None when bulkhead cannot tell (the caller asks)."""
    if kind == "allow":
        return allow_matches(pattern, command)
    return deny_matches(pattern, command)


# -- paths -------------------------------------------------------------------------------------------
def _glob_regex(pattern: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "\\" and i + 1 < len(pattern):
            out.append(re.escape(pattern[i + 1]))
            i += 2
        elif pattern[i] == "[" and "]" in pattern[i + 2 :]:
            end = pattern.index("]", i + 2)
            inner = pattern[i + 1 : end]
            out.append(
                "[" + ("^" + inner[1:] if inner.startswith("!") else inner).replace("\\", "\\\\") + "]"
            )
            i = end + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return "".join(out)


@dataclass(frozen=True)
class PathPattern:
    root: Path
    regex: re.Pattern[str]

    @classmethod
    def parse(cls, specifier: str, base: Path) -> PathPattern:
        anchored = True
        if specifier.startswith("//"):
            root, pattern = Path("/"), specifier[2:]
        elif specifier.startswith("~/"):
            root, pattern = Path.home(), specifier[2:]
        elif specifier.startswith("/"):
            root, pattern = base, specifier[1:]
        elif specifier.startswith("./"):
            root, pattern = base, specifier[2:]
        else:
            root, pattern = base, specifier
            anchored = "/" in specifier.rstrip("/")  # gitignore: a bare name matches at any depth
        pattern = pattern.rstrip("/") or "**"
        prefix = "" if anchored else "(?:.*/)?"
        # A literal last part (a folder name) covers what is inside it; `*` stays in one folder (Claude Code).
        inside = "" if any(c in pattern.rsplit("/", 1)[-1] for c in "*?[") else "(?:/.*)?"
        return cls(
            Path(os.path.normpath(root)), re.compile(f"^{prefix}{_glob_regex(pattern)}{inside}$", re.S)
        )

    def matches(self, path: Path) -> bool:
        try:
            relative = path.relative_to(self.root).as_posix()
        except ValueError:
            return False
        return relative != "." and bool(self.regex.match(relative))


@functools.lru_cache(maxsize=256)
def path_pattern(specifier: str, base: Path) -> PathPattern:
    return PathPattern.parse(specifier, base)


def path_candidates(path: Path) -> set[Path]:
    return {Path(os.path.normpath(path)), Path(os.path.realpath(path))}


def mcp_parts(name: str) -> tuple[str, str | None]:
    """`mcp__SERVER__TOOL` → (SERVER, TOOL); `mcp__SERVER` → (SERVER, None); ("", None) for other names. A
    server name never holds `__` (app.config_mcp refuses it), so the first `__` after it ends it."""
    if not name.startswith("mcp__"):
        return "", None
    server, separator, tool = name[len("mcp__") :].partition("__")
    return server, (tool if separator else None)
