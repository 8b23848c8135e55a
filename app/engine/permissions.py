"""Permission rules in Claude Code's syntax, so existing settings carry over.

A rule is `Tool` or `Tool(specifier)` in one of three lists: `allow` (runs without asking),
`ask` (always asks) and `deny` (never runs). Deny wins over ask, ask over allow; with no rule
matching, the approval mode decides (`app.tools.approval`). A path outside the workspace always
asks unless an allow rule names that path.

Sources, all read as they are: `[permissions]` in config.toml (yours, every project), the
workspace's `.bulkhead/settings.toml` (where "always for this project" is saved),
`.claude/settings.json` and `.claude/settings.local.json` (Claude Code's `permissions`), and the
rules of this session ("always for this session").

Tool names — Claude Code's and bulkhead's both work:

| rule tool            | bulkhead tools                          | specifier                           |
|----------------------|-----------------------------------------|-------------------------------------|
| `Bash`, `shell`      | shell                                   | command: `npm test`, `npm run *`, `git diff:*` |
| `Read`               | read_file, list_dir, glob, grep         | gitignore-style path                |
| `Edit`, `Write`      | edit_file, write_file                   | gitignore-style path                |
| `Glob`, `Grep`, `LS` | glob, grep, list_dir                    | path                                |
| `WebFetch`           | (a fetch tool, when there is one)       | `domain:example.com`, `domain:*.example.com` |
| `mcp__SERVER[__TOOL]`| that MCP server's tools (verbatim)      | —                                   |

Commands: `*` matches anything; `cmd *` matches `cmd` alone or `cmd ARGS` (not `cmdx`); the
older `cmd:*` matches any command starting with `cmd` (Claude Code's documented prefix rule). A compound command (`a && b`, `a; b`, `a | b`) is allowed only when
every part is; a deny or ask rule matching any part applies. Command substitution (`$(…)`, backticks)
is never allowed by a pattern — only by a bare `Bash` rule. Leading `timeout N`, `nice`, `nohup`,
`time` are ignored when matching.

Paths follow gitignore (as Claude Code's do): `//path` is absolute, `~/path` is in your home
folder, `/path` and `./path` and `path` start at the workspace; a pattern without a slash matches
at any depth (`*.env`); `*` stays within a folder, `**` crosses folders; a rule naming a folder
(`Read(./secrets)`) covers what is inside it.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

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
SUBSTITUTION = ("$(", "`", "<(", ">(")
_WRAPPERS_RE = re.compile(r"^(?:(?:timeout(?:\s+-\S+)*\s+\S+|nice(?:\s+-n\s*-?\d+|\s+-\d+)?|nohup|time)\s+)+")
_ENV_RE = re.compile(r"^(?:[A-Za-z_][A-Za-z0-9_]*=(?:'[^']*'|\"[^\"]*\"|\S*)\s+)+")
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
def split_command(command: str) -> list[str]:
    """The simple commands of a compound one: split at `&&`, `||`, `;`, `|`, `&` and newlines outside quotes."""
    parts: list[str] = []
    current: list[str] = []
    quote = ""
    i = 0
    while i < len(command):
        char = command[i]
        if quote:
            current.append(char)
            if char == "\\" and quote == '"' and i + 1 < len(command):
                current.append(command[i + 1])
                i += 1
            elif char == quote:
                quote = ""
        elif char == "\\" and i + 1 < len(command):
            current.append(command[i : i + 2])
            i += 1
        elif char in "'\"":
            quote = char
            current.append(char)
        elif char in ";|&\n":
            if char == "&" and i + 1 < len(command) and command[i + 1] == ">":  # &> redirection
                current.append(char)
            elif char == "&" and current and current[-1].endswith((">", "<")):  # 2>&1
                current.append(char)
            else:
                parts.append("".join(current))
                current = []
                if i + 1 < len(command) and command[i + 1] == char and char in "|&":
                    i += 1
        else:
            current.append(char)
        i += 1
    parts.append("".join(current))
    return [part.strip() for part in parts if part.strip()]


def _command_regex(pattern: str) -> re.Pattern[str]:
    if pattern.endswith(":*"):  # the older prefix syntax: anything starting with what comes before
        return re.compile(
            "^" + ".*".join(re.escape(chunk) for chunk in pattern[:-2].split("*")) + ".*$", re.S
        )
    if pattern.endswith(" *"):  # `cmd *`: cmd alone, or cmd and arguments (a word boundary)
        head, tail = pattern[:-2], r"(?:\s.*)?"
    else:
        head, tail = pattern, ""
    body = ".*".join(re.escape(chunk) for chunk in head.split("*"))
    return re.compile(rf"^{body}{tail}$", re.S)


def _simple_matches(pattern: str, command: str) -> bool:
    return bool(_command_regex(" ".join(pattern.split())).match(" ".join(command.split())))


def _strip_wrappers(command: str, *, env: bool) -> str:
    command = command.strip()
    for _ in range(4):
        before = command
        if env:
            command = _ENV_RE.sub("", command)
        command = _WRAPPERS_RE.sub("", command)
        if command == before:
            break
    return command


def command_matches(pattern: str, command: str, kind: Kind) -> bool:
    """Does a Bash rule's pattern match `command`? Allow rules must match every part of a compound
    command and never allow command substitution; deny and ask rules match when any part does."""
    if kind == "allow":
        if any(token in command for token in SUBSTITUTION):
            return False
        parts = split_command(command)
        return bool(parts) and all(_simple_matches(pattern, _strip_wrappers(p, env=False)) for p in parts)
    candidates = [command, *split_command(command)]
    return any(
        _simple_matches(pattern, _strip_wrappers(c, env=True)) or _simple_matches(pattern, c.strip())
        for c in candidates
    )


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


def _path_candidates(path: Path) -> set[Path]:
    return {Path(os.path.normpath(path)), Path(os.path.realpath(path))}


# -- rules -------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Rule:
    text: str  # as written
    kind: Kind
    source: str  # config.toml, .bulkhead/settings.toml, .claude/settings.json, …, "this session"
    base: Path  # where relative path patterns start (the workspace)
    tool: str = field(init=False)
    specifier: str | None = field(init=False)

    def __post_init__(self) -> None:
        tool, specifier = parse_rule(self.text)
        object.__setattr__(self, "tool", tool)
        object.__setattr__(self, "specifier", specifier)

    @property
    def names_paths(self) -> bool:
        """A path rule with a specifier: it may allow a path outside the workspace."""
        return self.specifier is not None and bool(set(TOOL_ALIASES.get(self.tool, ())) & PATH_TOOLS)

    def covers_tool(self, name: str) -> bool:
        if self.tool.startswith("mcp__"):
            server_wide = self.tool.removesuffix("__*")
            return name == self.tool or name.startswith(server_wide + "__")
        return name in TOOL_ALIASES.get(self.tool, ())

    def matches(self, name: str, args: Mapping[str, Any], workspace: Path) -> bool:
        if not self.covers_tool(name):
            return False
        if self.specifier is None:
            return True
        if name == "shell":
            command = args.get("command")
            return isinstance(command, str) and command_matches(self.specifier, command, self.kind)
        if name == "web_fetch":
            host = (urlsplit(str(args.get("url", ""))).hostname or "").lower()
            domain = self.specifier.removeprefix("domain:").lower()
            return host == domain or (domain.startswith("*.") and host.endswith(domain[1:]))
        if name in PATH_TOOLS:
            return self._matches_paths(name, args, workspace)
        return False

    def _matches_paths(self, name: str, args: Mapping[str, Any], workspace: Path) -> bool:
        from app.tools.approval import target_paths

        pattern = PathPattern.parse(self.specifier or "**", self.base)
        paths = target_paths(name, args, workspace)
        if not paths:
            return False
        results = []
        for path in paths:
            for candidate in _path_candidates(path):
                hit = pattern.matches(candidate)
                if not hit and name in FOLDER_TOOLS:
                    hit = pattern.matches(candidate / "\x00")  # a folder whose contents the rule covers
                results.append(hit)
        # An allow rule must hold for the path as written and as resolved (a symlink cannot smuggle
        # another file in); deny and ask apply when either matches.
        return all(results) if self.kind == "allow" else any(results)


@dataclass(frozen=True)
class Verdict:
    kind: Kind | None  # None: no rule matched (the approval mode decides)
    rule: Rule | None = None

    @property
    def reason(self) -> str:
        return f"{self.rule.kind} rule {self.rule.text} ({self.rule.source})" if self.rule else ""


def _rules_from(data: Any, source: str, base: Path, problems: list[str]) -> list[Rule]:
    rules: list[Rule] = []
    if not isinstance(data, Mapping):
        if data is not None:
            problems.append(f"{source}: permissions must be a table/object with allow, ask and deny lists")
        return rules
    for kind in ("allow", "ask", "deny"):
        entries = data.get(kind, [])
        if not isinstance(entries, list | tuple):
            problems.append(f'{source}: permissions.{kind} must be a list of rules like "Bash(npm test:*)"')
            continue
        for text in entries:
            try:
                rules.append(Rule(text, kind, source, base))
            except RuleError as exc:
                problems.append(f"{source}: {exc} — skipped")
    return rules


SETTINGS_TOML = Path(".bulkhead") / "settings.toml"
CLAUDE_FILES = (Path(".claude") / "settings.json", Path(".claude") / "settings.local.json")


class Permissions:
    """Every rule in force for a workspace, with where it came from."""

    def __init__(self, workspace: Path, rules: Iterable[Rule] = (), problems: Iterable[str] = ()) -> None:
        self.workspace = Path(workspace)
        self.rules: list[Rule] = list(rules)
        self.problems: list[str] = list(problems)

    @classmethod
    def load(
        cls,
        workspace: Path,
        config_rules: Mapping[str, Sequence[str]] | None = None,
        config_source: str = "config.toml",
    ) -> Permissions:
        workspace = Path(workspace).expanduser()
        problems: list[str] = []
        rules = _rules_from(dict(config_rules or {}), config_source, workspace, problems)
        settings = workspace / SETTINGS_TOML
        if settings.is_file():
            try:
                data = tomllib.loads(settings.read_text(encoding="utf-8"))
                rules += _rules_from(data.get("permissions"), str(SETTINGS_TOML), workspace, problems)
            except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
                problems.append(
                    f"{settings}: cannot be read ({exc}); its rules are not in force — fix the file"
                )
        for relative in CLAUDE_FILES:
            path = workspace / relative
            if not path.is_file():
                continue
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, ValueError) as exc:
                problems.append(f"{path}: not valid JSON ({exc}); its permissions are not in force")
                continue
            if isinstance(data, Mapping):
                rules += _rules_from(data.get("permissions"), str(relative), workspace, problems)
        return cls(workspace, rules, problems)

    def check(self, name: str, args: Mapping[str, Any]) -> Verdict:
        """The rule that decides this call: the first deny, else ask, else allow that matches."""
        args = args if isinstance(args, Mapping) else {}
        for kind in KINDS:
            for rule in self.rules:
                if rule.kind == kind and rule.matches(name, args, self.workspace):
                    return Verdict(kind, rule)
        return Verdict(None)

    def add_session_rule(self, text: str) -> Rule:
        rule = Rule(text, "allow", SESSION, self.workspace)
        if not any(r.text == text and r.kind == "allow" and r.source == SESSION for r in self.rules):
            self.rules.append(rule)
        return rule

    def save_project_rule(self, text: str) -> Path:
        """Add an allow rule to the workspace's `.bulkhead/settings.toml` (kept as you wrote it: only the
        `allow` list gains a line) and put it in force now."""
        from app.engine.project_settings import add_allow_rule

        path = self.workspace / SETTINGS_TOML
        add_allow_rule(path, text)
        if not any(
            r.text == text and r.kind == "allow" and r.source == str(SETTINGS_TOML) for r in self.rules
        ):
            self.rules.append(Rule(text, "allow", str(SETTINGS_TOML), self.workspace))
        return path

    def listing(self) -> list[tuple[str, str, str]]:
        """(kind, rule, source) for each rule, deny first: for F1 and the Permissions view."""
        return [
            (rule.kind, rule.text, rule.source) for kind in KINDS for rule in self.rules if rule.kind == kind
        ]


# -- "always": what to remember, and where -------------------------------------------------------------
def _path_spec(path: Path, workspace: Path) -> str:
    escaped = re.sub(r"([*?\[\]\\])", r"\\\1", path.as_posix())
    workspace = Path(os.path.normpath(workspace))
    try:
        relative = path.relative_to(workspace).as_posix()
    except ValueError:
        return "/" + escaped  # `//abs/path`
    return "./" + re.sub(r"([*?\[\]\\])", r"\\\1", relative)


def suggest_rule(name: str, args: Mapping[str, Any], workspace: Path) -> str:
    """The allow rule "always" remembers for this call: the exact command, the exact path."""
    from app.tools.approval import target_paths

    args = args if isinstance(args, Mapping) else {}
    if name == "shell":
        return f"Bash({' '.join(str(args.get('command', '')).split())})"
    if name in PATH_TOOLS:
        paths = target_paths(name, args, workspace)
        if paths:
            spec = _path_spec(paths[0], workspace)
            return f"{'Edit' if name in EDITS else 'Read'}({spec})"
    return name
