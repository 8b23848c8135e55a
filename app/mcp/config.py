"""Where MCP servers come from: `[mcp_servers.NAME]` in config.toml and the workspace's `.mcp.json`.

config.toml (the user's own file, trusted):

    [mcp_servers.github]
    command = "npx"
    args = ["-y", "@modelcontextprotocol/server-github"]
    env = { GITHUB_PERSONAL_ACCESS_TOKEN = "${GITHUB_TOKEN}" }

    [mcp_servers.docs]
    url = "https://mcp.example.com/mcp"
    bearer_token_env = "DOCS_MCP_TOKEN"        # sent as Authorization: Bearer <value>

`.mcp.json` in the workspace, in Claude Code's format, so existing files work:

    {"mcpServers": {"demo": {"command": "python3", "args": ["server.py"], "env": {}},
                    "remote": {"type": "http", "url": "https://…/mcp", "headers": {"X-Key": "${KEY}"}}}}

`${VAR}` and `${VAR:-default}` expand from the environment in command, args, env, cwd, url and
headers (both files). A project file comes with the repository, so its servers are not started
until the user said yes once (`ProjectApprovals`); the answer is remembered in state.toml — never
in the workspace, which the repository could pre-fill — per workspace and per server, with a
fingerprint of the server's definition: a changed definition asks again.

Values of `env` and `headers` may be secrets: nothing here prints them (`describe` shows names, and
the command, args and URL as written — `${VAR}` unexpanded). Every variable a definition reads is listed
(`variables`); one whose name says it is a credential is flagged in the trust question and its value
joins the redaction registry, so it never reaches the screen, a log or an export.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from app.redact import is_secret_header, register_secret
from app.trust import Decision, WorkspaceTrust, fingerprint

PROJECT_FILE = ".mcp.json"
TRANSPORTS = ("stdio", "http", "sse")
SERVER_KEYS = {
    "type": "str",
    "command": "str",
    "args": "list",
    "env": "table",
    "cwd": "str",
    "url": "str",
    "headers": "table",
    "bearer_token_env": "str",
    "enabled": "bool",
    "startup_timeout": "float",
    "tool_timeout": "float",
}
_NAME_RE = re.compile(r"^[A-Za-z0-9_-]{1,48}$")
_VAR_RE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
# A variable whose name says it holds a credential: the question names it, its value is redacted everywhere.
CREDENTIAL_NAME_RE = re.compile(r"KEY|TOKEN|SECRET|PASS|CREDENTIAL|AUTH|COOKIE|SESSION|PRIVATE|CERT", re.I)


class McpConfigError(ValueError):
    """A server definition that cannot be used; the message names the file (and line) and what to do."""


@dataclass(frozen=True)
class McpServerSpec:
    """One MCP server as configured. `problem` says why it cannot start (e.g. a `${VAR}` not set)."""

    name: str
    transport: str  # stdio | http | sse
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict, hash=False)
    cwd: str | None = None
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict, hash=False)
    bearer_token_env: str | None = None
    enabled: bool = True
    startup_timeout: float | None = None
    tool_timeout: float | None = None
    source: str = "config"  # config | project
    origin: str = ""  # where it is defined, for messages (file, or file:line)
    fingerprint: str = ""  # of the definition as written (before ${VAR} expansion)
    problem: str = ""
    # As written (before ${VAR} expansion): what is shown — an expanded value may be a key.
    written_command: str | None = None
    written_args: tuple[str, ...] = ()
    written_url: str | None = None
    variables: tuple[
        str, ...
    ] = ()  # every environment variable the definition reads (${VAR}, bearer_token_env)

    @property
    def from_project(self) -> bool:
        return self.source == "project"

    @property
    def credential_variables(self) -> tuple[str, ...]:
        """The variables it reads whose names say they hold a credential (sent to this server)."""
        return tuple(name for name in self.variables if CREDENTIAL_NAME_RE.search(name))

    def describe(self) -> str:
        """`stdio: npx -y @modelcontextprotocol/server-github` / `http: https://…` as written (`${VAR}` kept),
        never env or header values."""
        if self.transport == "stdio":
            command = self.written_command if self.written_command is not None else self.command
            args = self.written_args if self.written_command is not None else self.args
            text = " ".join([command or "", *args]).strip()
        else:
            text = (self.written_url if self.written_url is not None else self.url) or ""
        extra = []
        if self.env:
            extra.append("env " + ", ".join(sorted(self.env)))
        if self.headers:
            extra.append("headers " + ", ".join(sorted(self.headers)))
        if self.bearer_token_env:
            extra.append(f"bearer ${self.bearer_token_env}")
        return f"{self.transport}: {text}" + (f" ({'; '.join(extra)})" if extra else "")

    def reads(self) -> str:
        """What it takes from your environment, credentials flagged: for the trust question ("" for nothing)."""
        if not self.variables:
            return ""
        credentials = self.credential_variables
        plain = [name for name in self.variables if name not in credentials]
        parts = []
        if credentials:
            parts.append(
                "⚠ sends it your " + ", ".join(f"${name}" for name in credentials) + " (credentials)"
            )
        if plain:
            parts.append("reads " + ", ".join(f"${name}" for name in plain))
        return "; ".join(parts)


# -- expansion -------------------------------------------------------------------------------------


def expand(text: str, env: Mapping[str, str], missing: list[str]) -> str:
    """`${VAR}` and `${VAR:-default}` from `env`; names that are unset and have no default go to `missing`."""

    def one(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        value = env.get(name)
        if value is not None and (value or default is None):
            return value
        if default is not None:
            return default
        missing.append(name)
        return ""

    return _VAR_RE.sub(one, text)


def _fingerprint(raw: Mapping[str, Any]) -> str:
    return fingerprint(dict(raw))


# -- one definition ----------------------------------------------------------------------------------


def parse_server(
    name: str, raw: Any, *, source: str, where: Callable[[str], str], env: Mapping[str, str] | None = None
) -> McpServerSpec:
    """A server definition from a TOML table or a `.mcp.json` entry. Raises McpConfigError for a
    definition that is wrong as written; a `${VAR}` that is not set is a `problem`, not an error
    (the server is listed and says why it cannot start)."""
    env = os.environ if env is None else env
    if not isinstance(raw, Mapping):
        raise McpConfigError(f"{where('')}: MCP server {name!r} must be a table/object with command or url")
    if not _NAME_RE.match(name):
        raise McpConfigError(
            f"{where('')}: MCP server name {name!r} may only use letters, digits, _ and - (at most 48)"
        )
    if "__" in name or name.startswith("_") or name.endswith("_"):  # `__` separates server and tool
        raise McpConfigError(
            f"{where('')}: MCP server name {name!r} may not contain `__` or start or end with `_`: tools are "
            f"named mcp__SERVER__TOOL, and such a name would fall under another server's rules — rename it"
        )
    values: dict[str, Any] = {}
    for key, value in raw.items():
        kind = SERVER_KEYS.get(key)
        if kind is None:
            if source == "project":  # Claude Code's files carry keys bulkhead has no use for; keep going
                continue
            raise McpConfigError(
                f"{where(key)}: unknown key {key!r} in MCP server {name!r} (known: {', '.join(SERVER_KEYS)})"
            )
        values[key] = _check(kind, value, key, name, where)
    transport = values.pop("type", None) or (
        "stdio" if "command" in values else "http" if "url" in values else ""
    )
    if transport == "streamable-http":
        transport = "http"
    if transport not in TRANSPORTS:
        if not transport:
            raise McpConfigError(
                f'{where("")}: MCP server {name!r} needs command = "…" (a local server) '
                f'or url = "https://…" (a remote one)'
            )
        raise McpConfigError(
            f"{where('type')}: MCP server {name!r}: type {transport!r} is not one of {', '.join(TRANSPORTS)}"
        )
    if transport == "stdio" and not values.get("command"):
        raise McpConfigError(f'{where("")}: MCP server {name!r} (stdio) needs command = "…"')
    if transport != "stdio" and not values.get("url"):
        raise McpConfigError(f'{where("")}: MCP server {name!r} ({transport}) needs url = "https://…"')

    missing: list[str] = []
    sub = lambda text: expand(text, env, missing)  # noqa: E731
    written = [
        values.get("command") or "",
        *values.get("args", ()),
        *values.get("env", {}).values(),
        values.get("cwd") or "",
        values.get("url") or "",
        *values.get("headers", {}).values(),
    ]
    variables = list(dict.fromkeys(m.group(1) for text in written for m in _VAR_RE.finditer(text)))
    if values.get("bearer_token_env") and values["bearer_token_env"] not in variables:
        variables.append(values["bearer_token_env"])
    for variable in variables:  # a credential it reads is never printed or logged, wherever it turns up
        if CREDENTIAL_NAME_RE.search(variable):
            register_secret(env.get(variable), f"env {variable} (MCP server {name!r})")
    for key, text in [*values.get("env", {}).items(), *values.get("headers", {}).items()]:
        if CREDENTIAL_NAME_RE.search(key) or is_secret_header(key):  # a literal key in the file, too
            register_secret(sub(text), f"MCP server {name!r} {key}")
    spec = McpServerSpec(
        name=name,
        transport=transport,
        command=sub(values["command"]) if values.get("command") else None,
        args=tuple(sub(a) for a in values.get("args", ())),
        env={k: sub(v) for k, v in values.get("env", {}).items()},
        cwd=sub(values["cwd"]) if values.get("cwd") else None,
        url=sub(values["url"]) if values.get("url") else None,
        headers={k: sub(v) for k, v in values.get("headers", {}).items()},
        bearer_token_env=values.get("bearer_token_env"),
        enabled=values.get("enabled", True),
        startup_timeout=values.get("startup_timeout"),
        tool_timeout=values.get("tool_timeout"),
        source=source,
        origin=where(""),
        fingerprint=_fingerprint(raw),
        written_command=values.get("command"),
        written_args=tuple(values.get("args", ())),
        written_url=values.get("url"),
        variables=tuple(variables),
    )
    if missing:
        names = ", ".join(f"${{{n}}}" for n in dict.fromkeys(missing))
        spec = replace(
            spec,
            problem=f"{names} {'is' if len(set(missing)) == 1 else 'are'} not set in the "
            f"environment (used by its definition in {where('')})",
        )
    if spec.bearer_token_env and not env.get(spec.bearer_token_env) and not spec.problem:
        spec = replace(spec, problem=f"bearer_token_env names ${spec.bearer_token_env}, which is not set")
    return spec


def _check(kind: str, value: Any, key: str, name: str, where: Callable[[str], str]) -> Any:
    def bad(wanted: str) -> McpConfigError:
        return McpConfigError(
            f"{where(key)}: MCP server {name!r}: {key} must be {wanted}, got {value!r}"[:300]
        )

    if kind == "str":
        if not isinstance(value, str):
            raise bad("a string")
        return value
    if kind == "list":
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise bad("a list of strings")
        return tuple(value)
    if kind == "table":
        if not isinstance(value, Mapping) or not all(isinstance(v, str) for v in value.values()):
            raise bad("a table of strings")
        return dict(value)
    if kind == "bool":
        if not isinstance(value, bool):
            raise bad("true or false")
        return value
    if kind == "float":
        if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
            raise bad("a number of seconds > 0")
        return float(value)
    raise AssertionError(kind)


# -- config.toml -------------------------------------------------------------------------------------
def _config_where(where: Callable[[str, str], str], name: str) -> Callable[[str], str]:
    return lambda key: where(f"mcp_servers.{name}", key) if key else where("mcp_servers", name)


def _project_where(path: Path, name: str) -> Callable[[str], str]:
    return lambda key: f"{path} (mcpServers.{name}{'.' + key if key else ''})"


def parse_config_servers(
    raw: Any, where: Callable[[str, str], str], env: Mapping[str, str] | None = None
) -> dict[str, McpServerSpec]:
    """`[mcp_servers.NAME]` tables; `where(table, key)` gives file:line for messages."""
    if not isinstance(raw, Mapping):
        raise McpConfigError(f"{where('', 'mcp_servers')}: mcp_servers must be [mcp_servers.NAME] tables")
    servers = {}
    for name, table in raw.items():
        servers[name] = parse_server(name, table, source="config", env=env, where=_config_where(where, name))
    return servers


# -- .mcp.json ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ProjectServers:
    path: Path
    servers: dict[str, McpServerSpec]
    problem: str = ""  # the file could not be used at all (invalid JSON, wrong shape)


def read_project_servers(workspace: Path, env: Mapping[str, str] | None = None) -> ProjectServers | None:
    """The workspace's `.mcp.json`, or None when there is none. Never raises: a broken file (or
    entry) is a `problem` the front ends show, and its other servers still load."""
    path = Path(workspace) / PROJECT_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        return ProjectServers(path, {}, f"{path}: cannot read it ({exc}); its MCP servers are not started")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        return ProjectServers(
            path,
            {},
            f"{path}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}; its MCP servers are not started",
        )
    table = data.get("mcpServers") if isinstance(data, dict) else None
    if not isinstance(table, dict):
        return ProjectServers(
            path,
            {},
            f'{path}: expected {{"mcpServers": {{NAME: {{…}}}}}} (Claude Code\'s '
            f"format); its MCP servers are not started",
        )
    servers: dict[str, McpServerSpec] = {}
    problems: list[str] = []
    for name, entry in table.items():
        try:
            servers[name] = parse_server(
                name, entry, source="project", env=env, where=_project_where(path, name)
            )
        except McpConfigError as exc:
            problems.append(str(exc))
    return ProjectServers(path, servers, "; ".join(problems))


def merge_servers(
    config: Mapping[str, McpServerSpec], project: ProjectServers | None
) -> tuple[dict[str, McpServerSpec], list[str]]:
    """config.toml's servers, then the project's; a project server with a config server's name is
    shadowed (your own definition wins) and said so."""
    merged = dict(config)
    notes: list[str] = []
    if project is None:
        return merged, notes
    if project.problem:
        notes.append(project.problem)
    for name, spec in project.servers.items():
        if name in merged:
            notes.append(
                f"{project.path}: MCP server {name!r} is also in config.toml; config.toml's definition "
                f"is used"
            )
            continue
        merged[name] = spec
    return merged, notes


# -- remembering the user's answer for a project's servers -----------------------------------------


class ProjectApprovals:
    """The user's yes/no for a workspace's `.mcp.json` servers, in state.toml (never in the workspace):
    `app.trust.WorkspaceTrust` with one entry per server and the fingerprint of its definition."""

    TABLE = "mcp_project_servers"

    def __init__(self, state: Any, workspace: Path) -> None:
        self.trust = WorkspaceTrust(state, workspace, table=self.TABLE)
        self.state = state
        self.workspace = self.trust.workspace

    def decision(self, spec: McpServerSpec) -> str | None:
        """ "allow" or "deny" when the user answered for this very definition; None when never asked
        (or the definition changed since)."""
        return self.trust.decision(spec.name, spec.fingerprint)

    def remember(self, specs: list[McpServerSpec], decision: str) -> None:
        """Remember "allow" or "deny" for these definitions."""
        if decision not in ("allow", "deny"):
            raise ValueError(f"an answer is allow or deny, not {decision!r}")
        answer: Decision = "allow" if decision == "allow" else "deny"
        self.trust.remember({spec.name: spec.fingerprint for spec in specs}, answer)

    def forget(self) -> int:
        """Forget every answer for this workspace (they will be asked again). Returns how many."""
        return self.trust.forget()
