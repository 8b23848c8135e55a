r"""Permission rules in Claude Code's syntax, so existing settings carry over.

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

Commands are matched on what bash will run, parsed with a bash grammar (`app.engine.command_rules`):
`*` matches anything; `cmd *` matches `cmd` alone or `cmd ARGS` (not `cmdx`); the older `cmd:*` matches
any command starting with `cmd` (Claude Code's documented prefix rule); `\*` is a literal star. An
allow rule must match every simple command of a compound one (`a && b`, `a | b`, a subshell, a loop),
never matches command substitution or anything bulkhead cannot parse for sure (only a bare `Bash` rule
does). Deny and ask rules match any part after `env`/`command`/`exec`/… prefixes, quoting and program
paths are normalised; when they cannot tell, the call asks. Redirections (`> file`) are writes: `Edit`
deny and ask rules apply to them, and the path gate (outside the workspace, protected files) too.
"Always" remembers the exact command (`Bash(rm -f build/\*)`).

Paths follow gitignore (as Claude Code's do): `//path` is absolute, `~/path` is in your home
folder, `/path` and `./path` and `path` start at the workspace; a pattern without a slash matches
at any depth (`*.env`); `*` stays within a folder, `**` crosses folders; a rule naming a folder
(`Read(./secrets)`) covers what is inside it.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, Protocol
from urllib.parse import urlsplit

from app.engine.command_rules import allow_matches, command_doubt, deny_matches, escape_literal

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
    """Does a Bash rule's pattern match `command`, as bash will run it (`app.engine.command_rules`)?
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
def _path_pattern(specifier: str, base: Path) -> PathPattern:
    return PathPattern.parse(specifier, base)


def _path_candidates(path: Path) -> set[Path]:
    return {Path(os.path.normpath(path)), Path(os.path.realpath(path))}


def mcp_parts(name: str) -> tuple[str, str | None]:
    """`mcp__SERVER__TOOL` → (SERVER, TOOL); `mcp__SERVER` → (SERVER, None); ("", None) for other names. A
    server name never holds `__` (app.mcp.config refuses it), so the first `__` after it ends it."""
    if not name.startswith("mcp__"):
        return "", None
    server, separator, tool = name[len("mcp__") :].partition("__")
    return server, (tool if separator else None)


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
        if self.tool.startswith("mcp__"):  # by server and tool, never by string prefix
            rule_server, rule_tool = mcp_parts(self.tool.removesuffix("__*"))
            server, tool = mcp_parts(name)
            if not rule_server or rule_server != server:
                return False
            return rule_tool is None or rule_tool == tool
        return name in TOOL_ALIASES.get(self.tool, ())

    def matches(self, name: str, args: Mapping[str, Any], workspace: Path) -> bool | None:
        """Does this rule apply to the call? None: a deny or ask rule cannot tell (a shell command whose
        program is only known when it runs, or that does not parse)."""
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

        pattern = _path_pattern(self.specifier or "**", self.base)
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
    doubt: str = ""  # kind "ask" because a deny/ask rule could not tell whether it applies: why
    held: Rule | None = None  # no rule matched, but an allow rule held back (file not approved) would
    via: str = ""  # the rule matched a file the shell command redirects to (`> .env`)

    @property
    def reason(self) -> str:
        if self.rule is None:
            return ""
        said = f"{self.rule.kind} rule {self.rule.text} ({self.rule.source})"
        if self.doubt:
            return f"bulkhead cannot tell whether the {said} applies: {self.doubt}"
        return f"{said}{f' for {self.via}' if self.via else ''}"


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
RULE_FILES = (SETTINGS_TOML, *CLAUDE_FILES)  # the workspace's: they come with the repository
# pending: never answered; changed: answered for another version of its allow rules; refused: you said no
RuleFileStatus = Literal["approved", "pending", "changed", "refused", "no allow rules"]


class RuleTrust(Protocol):
    """Where the user's answers for the workspace's rule files are kept (`app.trust.WorkspaceTrust`)."""

    def decision(self, name: str, digest: str, /) -> str | None: ...

    def remember(self, items: Mapping[str, str], decision: Literal["allow", "deny"], /) -> None: ...

    def answers(self) -> Mapping[str, Any]: ...


def allow_fingerprint(texts: Iterable[str]) -> str:
    """What a rule file grants, as a digest: its allow rules, as written, in any order."""
    text = json.dumps(sorted(set(texts)), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True)
class RuleFile:
    """One of the workspace's rule files. Its deny and ask rules are always in force; its allow rules only
    once the user approved them (trust on first use: a repository never grants itself a permission)."""

    relative: str  # .claude/settings.json
    allow: tuple[str, ...]  # its allow rules, as written
    deny_ask: int  # how many deny and ask rules it has (in force whatever the answer)
    fingerprint: str
    status: RuleFileStatus

    @property
    def held(self) -> bool:
        return self.status in ("pending", "changed", "refused")


class Permissions:
    """Every rule in force for a workspace, with where it came from; and the workspace's allow rules that
    are held back until the user approves the file they are in."""

    def __init__(
        self,
        workspace: Path,
        rules: Iterable[Rule] = (),
        problems: Iterable[str] = (),
        *,
        files: Iterable[RuleFile] = (),
        held: Iterable[Rule] = (),
        trust: RuleTrust | None = None,
    ) -> None:
        self.workspace = Path(workspace)
        self.rules: list[Rule] = list(rules)
        self.problems: list[str] = list(problems)
        self.files: list[RuleFile] = list(files)
        self.held: list[Rule] = list(held)
        self.trust = trust

    @classmethod
    def load(
        cls,
        workspace: Path,
        config_rules: Mapping[str, Sequence[str]] | None = None,
        config_source: str = "config.toml",
        *,
        trust: RuleTrust | None = None,
    ) -> Permissions:
        """The rules of config.toml (yours: in force) and of the workspace's rule files: their deny and ask
        rules in force, their allow rules only where `trust` says the user approved that file as it is now
        (without `trust`, none are)."""
        workspace = Path(workspace).expanduser()
        problems: list[str] = []
        rules = _rules_from(dict(config_rules or {}), config_source, workspace, problems)
        files: list[RuleFile] = []
        held: list[Rule] = []
        for relative in RULE_FILES:
            found = _read_rule_file(workspace, relative, problems)
            if found is None:
                continue
            source = relative.as_posix()
            in_file = _rules_from(found, source, workspace, problems)
            allow = [rule for rule in in_file if rule.kind == "allow"]
            rules += [rule for rule in in_file if rule.kind != "allow"]
            digest = allow_fingerprint(rule.text for rule in allow)
            status: RuleFileStatus = "no allow rules"
            if allow:
                answer = trust.decision(source, digest) if trust is not None else None
                status = "approved" if answer == "allow" else "refused" if answer == "deny" else "pending"
                if status == "pending" and trust is not None and source in trust.answers():
                    status = "changed"
            if status == "approved":
                rules += allow
            else:
                held += allow
            files.append(
                RuleFile(
                    relative=source,
                    allow=tuple(rule.text for rule in allow),
                    deny_ask=len(in_file) - len(allow),
                    fingerprint=digest,
                    status=status,
                )
            )
        return cls(workspace, rules, problems, files=files, held=held, trust=trust)

    def check(self, name: str, args: Mapping[str, Any]) -> Verdict:
        """The rule that decides this call: the first deny, else ask, else allow that matches. A deny or
        ask rule that cannot tell whether it applies makes the call ask. A shell command's redirections
        are file accesses: `Edit` and `Read` deny and ask rules apply to their paths."""
        args = args if isinstance(args, Mapping) else {}
        probes = [(name, args, ""), *_redirect_probes(name, args, self.workspace)]
        doubtful: Rule | None = None
        for kind in KINDS:
            for rule in self.rules:
                if rule.kind != kind:
                    continue
                for probe_name, probe_args, via in probes if kind != "allow" else probes[:1]:
                    hit = rule.matches(probe_name, probe_args, self.workspace)
                    if hit:
                        return Verdict(kind, rule, via=via)
                    if hit is None and doubtful is None:
                        doubtful = rule
            if doubtful is not None:
                command = str(args.get("command", ""))
                return Verdict("ask", doubtful, doubt=command_doubt(command))
        held = next((rule for rule in self.held if rule.matches(name, args, self.workspace)), None)
        return Verdict(None, held=held)

    def denies_read(self, path: Path) -> bool:
        """Does a deny rule keep `path` from being read? grep, glob and list_dir leave such paths out of
        what they show (`ToolContext.read_denied`), so a search cannot read around `Read(./secrets/**)`."""
        args = {"path": str(path)}
        return any(
            rule.kind == "deny"
            and rule.covers_tool("read_file")
            and rule.matches("read_file", args, self.workspace)
            for rule in self.rules
        )

    # -- the workspace's files ------------------------------------------------------------------------
    def pending_files(self) -> list[RuleFile]:
        """Rule files whose allow rules wait for the user's answer (never asked, or changed since)."""
        return [file for file in self.files if file.status in ("pending", "changed")]

    def answer(self, relatives: Iterable[str], decision: Literal["allow", "deny"]) -> list[RuleFile]:
        """The user's answer for these files, remembered (when there is a trust store) and in force now:
        "allow" puts their allow rules in force, "deny" keeps them out and stops asking."""
        wanted = set(relatives)
        chosen = [file for file in self.files if file.relative in wanted and file.allow]
        if self.trust is not None and chosen:
            self.trust.remember({file.relative: file.fingerprint for file in chosen}, decision)
        status: RuleFileStatus = "approved" if decision == "allow" else "refused"
        self.files = [replace(file, status=status) if file in chosen else file for file in self.files]
        if decision == "allow":
            moving = [rule for rule in self.held if rule.source in wanted]
            self.held = [rule for rule in self.held if rule.source not in wanted]
            self.rules += moving
        return [replace(file, status=status) for file in chosen]

    def summary(self) -> list[str]:
        """One line per workspace rule file: what of it is in force. Said when a session starts."""
        lines = []
        for file in self.files:
            rules = f"{file.deny_ask} deny/ask rule{'s' if file.deny_ask != 1 else ''}"
            allows = f"{len(file.allow)} allow rule{'s' if len(file.allow) != 1 else ''}"
            if file.status == "no allow rules":
                lines.append(f"project rules in force: {file.relative} ({rules})")
            elif file.status == "approved":
                lines.append(f"project rules in force: {file.relative} ({allows} approved by you, {rules})")
            else:
                why = {
                    "refused": "you said no",
                    "changed": "its allow rules changed since you answered",
                }.get(file.status, "this repository's file was not approved yet")
                shown = ", ".join(file.allow[:6]) + (", …" if len(file.allow) > 6 else "")
                also = (
                    f"; its {rules} {'is' if file.deny_ask == 1 else 'are'} in force" if file.deny_ask else ""
                )
                lines.append(
                    f"project rules: {file.relative} allows {shown} — NOT in force: {why} "
                    f"(`bulkhead permissions approve` puts them in force){also}"
                )
        return lines

    def add_session_rule(self, text: str) -> Rule:
        rule = Rule(text, "allow", SESSION, self.workspace)
        if not any(r.text == text and r.kind == "allow" and r.source == SESSION for r in self.rules):
            self.rules.append(rule)
        return rule

    def save_project_rule(self, text: str) -> Path:
        """Add an allow rule to the workspace's `.bulkhead/settings.toml` (kept as you wrote it: only the
        `allow` list gains a line) and put it in force now. A file you had approved (or that granted
        nothing) stays approved with your rule added; one you had not approved stays held — its other
        allow rules are still not in force, and yours is in force for this session."""
        from app.engine.project_settings import add_allow_rule

        path = self.workspace / SETTINGS_TOML
        source = SETTINGS_TOML.as_posix()
        before = next((file for file in self.files if file.relative == source), None)
        add_allow_rule(path, text)
        rule = Rule(text, "allow", source, self.workspace)
        if not any(r.text == text and r.kind == "allow" and r.source == source for r in self.rules):
            self.rules.append(rule)
        if before is None or not before.held:
            allow = tuple(dict.fromkeys((*(before.allow if before else ()), text)))
            digest = allow_fingerprint(allow)
            if self.trust is not None:
                self.trust.remember({source: digest}, "allow")
            updated = RuleFile(source, allow, before.deny_ask if before else 0, digest, "approved")
            self.files = [f for f in self.files if f.relative != source] + [updated]
        return path

    def listing(self) -> list[tuple[str, str, str]]:
        """(kind, rule, source) for each rule, deny first, then the allow rules held back: for F1 and the
        Permissions view."""
        listed: list[tuple[str, str, str]] = [
            (rule.kind, rule.text, rule.source) for kind in KINDS for rule in self.rules if rule.kind == kind
        ]
        listed += [
            ("held", rule.text, f"{rule.source} — not in force until approved (bulkhead permissions approve)")
            for rule in self.held
        ]
        return listed


def _redirect_probes(
    name: str, args: Mapping[str, Any], workspace: Path
) -> list[tuple[str, dict[str, Any], str]]:
    """A shell command's redirections as the file tool calls they amount to: `> x` writes x, `< x` reads it."""
    if name != "shell" or not isinstance(args.get("command"), str):
        return []
    from app.tools.approval import shell_paths

    paths = shell_paths(args["command"], workspace)
    probes = [("write_file", {"path": str(path), "content": ""}, f"> {path}") for path in paths.writes]
    probes += [("read_file", {"path": str(path)}, f"< {path}") for path in paths.reads]
    return probes


def _read_rule_file(workspace: Path, relative: Path, problems: list[str]) -> Any:
    """The `permissions` table of one workspace rule file; None when there is no file (or it has none)."""
    path = workspace / relative
    if not path.is_file():
        return None
    if relative.suffix == ".toml":
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            problems.append(f"{path}: cannot be read ({exc}); its rules are not in force — fix the file")
            return None
        return data.get("permissions")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        problems.append(f"{path}: not valid JSON ({exc}); its permissions are not in force")
        return None
    return data.get("permissions") if isinstance(data, Mapping) else None


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
    if name == "shell":  # exactly this command: a `*` in it is a literal star, not a wildcard
        return f"Bash({escape_literal(str(args.get('command', '')).strip())})"
    if name in PATH_TOOLS:
        paths = target_paths(name, args, workspace)
        if paths:
            spec = _path_spec(paths[0], workspace)
            return f"{'Edit' if name in EDITS else 'Read'}({spec})"
    return name
