"""Typed settings: defaults < config.toml < BULKHEAD_* environment < command-line flags.

The user's `config.toml` is read, never written. What bulkhead learns (caps per
endpoint, last route, theme) lives in `state.toml` beside the database (`app.state`).
Every problem is a `ConfigError` whose message names the file, the line and the value.
"""

from __future__ import annotations

import math
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import platformdirs

from app.model.fallback import DEFAULT_FALLBACK_ON, FALLBACK_AFTER_PARTIAL, STAYING_KINDS, FallbackKind
from app.sizes import SizeError, format_size, parse_size

PROVIDERS = ("anthropic", "openai", "bedrock", "lab")
APPROVAL_MODES = ("ask", "auto-read", "auto-edit", "never-ask")
CONTEXT_ENGINES = ("local", "provider")  # or "mcp:NAME": an MCP server's context_compact writes summaries
OPENAI_APIS = ("responses", "chat")  # routes.NAME.api on provider = "openai" routes
MCP_TOOL_SEARCH = ("auto", "bulkhead", "off")
PROXY_ANTHROPIC_ERRORS = ("prompt-too-long", "request-too-large")  # app.proxy.native_errors.OverflowStyle
MEMORY_MODES = ("off", "suggest", "auto")  # app.engine.memory: distil facts, offer them, or keep them
HOOK_EVENTS = (
    "SessionStart",
    "SessionEnd",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "PreCompact",
    "PostCompact",
    "Stop",
    "Notification",
    "RequestRejected",
)


class ConfigError(Exception):
    """A configuration problem, worded for the user (file:line: what is wrong and what to do).

    `problems` lists every problem found (a file is checked whole, so one run reports them all);
    the message is the one problem, or all of them, one a line."""

    def __init__(self, message: str = "", *, problems: list[str] | tuple[str, ...] = ()) -> None:
        self.problems: tuple[str, ...] = tuple(problems) or ((message,) if message else ())
        if not message and len(self.problems) > 1:
            message = f"{len(self.problems)} problems in the configuration:\n" + "\n".join(
                f"  {problem}" for problem in self.problems
            )
        super().__init__(message or (self.problems[0] if self.problems else ""))


def data_home() -> Path:
    """Folder for the database, state.toml and per-session folders (`BULKHEAD_HOME` overrides)."""
    override = os.environ.get("BULKHEAD_HOME")
    return Path(override).expanduser() if override else platformdirs.user_data_path("bulkhead")


def config_path() -> Path:
    override = os.environ.get("BULKHEAD_CONFIG")
    return Path(override).expanduser() if override else _default_path()


def example_config_path() -> Path:
    """The commented starter config, in the source tree or inside the installed package."""
    here = Path(__file__).resolve().parent
    for candidate in (here.parent / "config.example.toml", here / "config.example.toml"):
        if candidate.exists():
            return candidate
    raise ConfigError("config.example.toml is missing from this installation; reinstall bulkhead")


# The built-in tools by name (app.tools.registry declares them; a test keeps the two in step). Config
# sits below the tools in the import layers, so the names are spelled here for `tools = [...]`.
BUILTIN_TOOL_NAMES = (
    "read_file", "list_dir", "glob", "grep", "web_fetch", "shell", "write_file", "edit_file", "recall",
)  # fmt: skip


def _opt(
    kind: str,
    help: str,
    choices: tuple[str, ...] = (),
    *,
    low: float | None = None,
    high: float | None = None,
    above: float | None = None,
) -> dict:
    """A setting's metadata: its kind, help, choices, and its range (`low` ≤ v ≤ `high`, v > `above`)."""
    return {"kind": kind, "help": help, "choices": choices, "low": low, "high": high, "above": above}


@dataclass(frozen=True)
class Route:
    """A named way to reach a model: provider, model and endpoint."""

    name: str
    provider: str
    model: str
    base_url: str | None = None
    max_payload: int | None = None
    context_window: int | None = None
    max_output_tokens: int | None = None
    region: str | None = None
    profile: str | None = None
    endpoint_url: str | None = None
    api_key_env: str | None = None
    api: str | None = None  # openai routes: "responses" | "chat"; None = by base_url (providers.openai)
    images: bool | None = None  # does the model take image blocks (None: bulkhead guesses by provider)
    tools: tuple[str, ...] | None = None  # built-in tools offered on this route (None: the global `tools`)
    fallback: tuple[str, ...] | None = (
        None  # the routes that take a turn this one cannot answer (None: the global)
    )

    @property
    def endpoint_id(self) -> str:
        """Where a learned cap belongs: the provider plus the host that enforces it."""
        if self.provider == "bedrock":
            where = self.endpoint_url or f"region:{self.region or 'default'}"
        else:
            where = self.base_url or "default"
        return f"{self.provider} {hide_url_password(where)}"


_ROUTE_KEYS: dict[str, str] = {
    "provider": "choice",
    "model": "str",
    "base_url": "str",
    "max_payload": "size",
    "context_window": "int",
    "max_output_tokens": "int",
    "region": "str",
    "profile": "str",
    "endpoint_url": "str",
    "api_key_env": "str",
    "api": "choice",
    "images": "bool",
    "tools": "tools?",
    "fallback": "routenames",
}
_ROUTE_CHOICES: dict[str, tuple[str, ...]] = {"provider": PROVIDERS, "api": OPENAI_APIS}


@dataclass(frozen=True)
class HookSpec:
    event: str
    command: str
    matcher: str = ""
    timeout: float = 60.0


@dataclass(frozen=True)
class ClassifierRuleSpec:
    """One `[[classifier.rules]]` table: when every given field matches, the error is `kind`."""

    kind: str
    where: str  # "path:line" of its table, for messages and `bulkhead classify`
    id: str = ""
    status: tuple[int, ...] = ()
    header: str | None = None  # "Name" or "Name: value substring"
    phrase: str | None = None  # a regular expression (case-insensitive) over message and body
    priority: int = 1000  # built-in rules use 0–999: a user rule wins unless told otherwise
    reason: str | None = None


@dataclass(frozen=True)
class Settings:
    """Every tunable number of DESIGN.md §4–§8. Each is also `BULKHEAD_<NAME>` in the environment."""

    default_route: str | None = field(default=None, metadata=_opt("str?", "route used when none is given"))
    max_payload: int | None = field(
        default=None, metadata=_opt("size?", "request body cap for every route", low=1024)
    )
    context_window: int | None = field(
        default=None, metadata=_opt("int?", "context window override (tokens)", low=1000)
    )
    max_output_tokens: int = field(
        default=8192, metadata=_opt("int", "max_tokens of a normal request", low=1)
    )
    max_recovery_attempts: int = field(
        default=3, metadata=_opt("int", "recovery ladder attempts per failure", high=10)
    )
    max_token_escalations: int = field(
        default=2, metadata=_opt("int", "max_tokens doublings per answer", high=10)
    )
    emergency_keep_messages: int = field(
        default=10, metadata=_opt("int", "L2: non-system messages kept", low=1)
    )
    nuclear_keep_messages: int = field(default=4, metadata=_opt("int", "L3: non-system messages kept", low=1))
    nuclear_message_chars: int = field(
        default=4000, metadata=_opt("int", "L3: cap per kept message", low=100)
    )
    assistant_cut_chars: int = field(default=5000, metadata=_opt("int", "L1: assistant messages cut above"))
    microcompact_truncate_turns: int = field(default=2, metadata=_opt("int", "tool result age for preview"))
    microcompact_summarize_turns: int = field(default=4, metadata=_opt("int", "tool result age for one line"))
    microcompact_truncate_min_chars: int = field(default=3000, metadata=_opt("int", "preview only above"))
    microcompact_summarize_min_chars: int = field(default=1000, metadata=_opt("int", "one line only above"))
    microcompact_head_chars: int = field(default=2000, metadata=_opt("int", "preview head"))
    microcompact_tail_chars: int = field(default=500, metadata=_opt("int", "preview tail"))
    turn_budget_chars: int = field(default=200_000, metadata=_opt("int", "tool output per turn", low=1000))
    result_max_chars: int = field(default=20_000, metadata=_opt("int", "tool output per result", low=500))
    compact_model: str | None = field(default=None, metadata=_opt("str?", "route that writes summaries"))
    compact_threshold: float = field(
        default=0.85, metadata=_opt("float", "window share that compacts", above=0, high=1)
    )
    compact_target: float = field(
        default=0.50, metadata=_opt("float", "window share compaction aims at", above=0, high=1)
    )
    preflight_ratio: float = field(
        default=0.85, metadata=_opt("float", "cap share that compacts first", above=0, high=1)
    )
    preflight_target: float = field(
        default=0.40, metadata=_opt("float", "cap share preflight aims at", above=0, high=1)
    )
    no_cap_warn_bytes: int = field(default=int(2.5 * 1024 * 1024), metadata=_opt("size", "warn once above"))
    fallback_cap: int = field(
        default=4 * 1024 * 1024, metadata=_opt("size", "cap when size is unknown", low=1024)
    )
    drop_payload_min_bytes: int = field(default=500_000, metadata=_opt("int", "drops count as payload above"))
    summary_min_chars_cap: int = field(default=80, metadata=_opt("int", "quality gate floor cap"))
    summary_skip_after_miss: int = field(default=2, metadata=_opt("int", "summaries skipped after a miss"))
    summary_keep_messages: int = field(
        default=6, metadata=_opt("int", "recent messages a summary keeps whole")
    )
    summarizer_floor_chars: int = field(default=20_000, metadata=_opt("int", "summarizer input floor"))
    summary_timeout: float = field(
        default=600.0, metadata=_opt("float", "seconds a summary may take", above=0)
    )
    retry_max_attempts: int = field(default=4, metadata=_opt("int", "transient retries per request", high=20))
    retry_base_delay: float = field(default=1.0, metadata=_opt("float", "first backoff (seconds)"))
    retry_max_delay: float = field(default=30.0, metadata=_opt("float", "longest backoff (seconds)"))
    request_timeout: float = field(default=600.0, metadata=_opt("float", "seconds per request", above=0))
    connect_timeout: float = field(default=10.0, metadata=_opt("float", "seconds to connect", above=0))
    ca_bundle: str | None = field(
        default=None,
        metadata=_opt("str?", "CA bundle (PEM file; a folder for Anthropic/OpenAI) every provider trusts"),
    )
    content_probe_max: int = field(
        default=60, metadata=_opt("int", "probes /blocked may send to find refused text", low=1, high=500)
    )
    tools: tuple[str, ...] | None = field(
        default=None, metadata=_opt("tools?", "built-in tools offered to the model (default: all; [] none)")
    )
    approval: str = field(default="auto-read", metadata=_opt("choice", "tool approvals", APPROVAL_MODES))
    approval_preview_lines: int = field(
        default=40,
        metadata=_opt("int", "diff lines an edit's approval card shows (a new file: its first lines)", low=0),
    )
    workspace: str | None = field(default=None, metadata=_opt("str?", "folder tools work in (default: cwd)"))
    max_mentions: int = field(default=10, metadata=_opt("int", "@file mentions attached per prompt"))
    image_max_bytes: int = field(
        default=5 * 1024 * 1024, metadata=_opt("size", "largest image attached", low=0)
    )
    checkpoint_max_bytes: int = field(
        default=16 * 1024 * 1024, metadata=_opt("size", "largest file /undo can restore", low=0)
    )
    instructions_max_bytes: int = field(
        default=256 * 1024, metadata=_opt("size", "AGENTS.md / CLAUDE.md bytes in the system prompt", low=0)
    )
    mention_index_max_files: int = field(
        default=200_000, metadata=_opt("int", "files the @ completion lists", low=1)
    )
    mention_index_ttl: float = field(
        default=30.0, metadata=_opt("float", "seconds before @ relists the files", low=0)
    )
    model_list_timeout: float = field(
        default=20.0, metadata=_opt("float", "seconds /model waits for a model list", above=0)
    )
    context_engine: str = field(
        default="local", metadata=_opt("engine", "local, provider or mcp:NAME", CONTEXT_ENGINES)
    )
    provider_compact_threshold: int = field(
        default=0,
        metadata=_opt(
            "int",
            "input tokens at which the provider compacts (context_engine = provider; 0 = automatic)",
            low=0,
        ),
    )
    mcp_defer_ratio: float = field(
        default=0.10, metadata=_opt("float", "share of the cap MCP tools may take", above=0, high=1)
    )
    mcp_tool_search: str = field(
        default="auto", metadata=_opt("choice", "how MCP tools are deferred", MCP_TOOL_SEARCH)
    )
    mcp_startup_timeout: float = field(
        default=30.0, metadata=_opt("float", "seconds an MCP server may take to start", above=0)
    )
    mcp_tools_wait: float = field(
        default=10.0,
        metadata=_opt(
            "float",
            "seconds a turn's first request waits for MCP servers still starting, so their tools are in it "
            "(0 = never waits: their tools join from the next request)",
            low=0,
        ),
    )
    mcp_tool_timeout: float = field(
        default=120.0, metadata=_opt("float", "seconds an MCP tool call may take", above=0)
    )
    mcp_compact_timeout: float = field(
        default=180.0, metadata=_opt("float", "seconds an MCP context_compact may take", above=0)
    )
    mcp_image_max_bytes: int = field(
        default=1024 * 1024, metadata=_opt("size", "largest MCP image sent to the model", low=0)
    )
    mcp_log_max_bytes: int = field(
        default=1024 * 1024,
        metadata=_opt(
            "size", "per MCP server stderr log; past it the log rotates (one older part kept)", low=4096
        ),
    )
    mcp_result_max_bytes: int = field(
        default=16 * 1024 * 1024,
        metadata=_opt(
            "size", "largest MCP message bulkhead takes from a server (bigger: refused)", low=65536
        ),
    )
    lease_foreign_max_age: float = field(
        default=86400.0,
        metadata=_opt(
            "float", "seconds after which a session lease from another machine may be taken over", above=0
        ),
    )
    har_body_limit: int = field(default=64 * 1024, metadata=_opt("size", "body bytes kept per HAR entry"))
    proxy_port: int = field(
        default=8788, metadata=_opt("int", "port `bulkhead proxy` listens on (127.0.0.1)", low=1, high=65535)
    )
    proxy_idle_timeout: float = field(
        default=900.0,
        metadata=_opt(
            "float", "seconds `bulkhead proxy` waits for a byte either way before giving up", above=0
        ),
    )
    proxy_record_body_max: int = field(
        default=4 * 1024 * 1024,
        metadata=_opt("size", "request bodies up to this are kept whole for the proxy's records", low=0),
    )
    proxy_anthropic_error: str = field(
        default="prompt-too-long",
        metadata=_opt(
            "choice",
            "how `bulkhead proxy --translate` words a size refusal for Anthropic clients",
            PROXY_ANTHROPIC_ERRORS,
        ),
    )
    hook_timeout: float = field(
        default=60.0, metadata=_opt("float", "default hook timeout (seconds)", above=0)
    )
    theme: str | None = field(default=None, metadata=_opt("str?", "Textual theme (else the last used)"))
    chat_window_items: int = field(
        default=60, metadata=_opt("int", "chat items mounted on resume and per page", low=10, high=2000)
    )
    chat_window_screens: int = field(
        default=2, metadata=_opt("int", "screens of history drawn around what the chat shows", low=1, high=50)
    )
    shell_env_passthrough: tuple[str, ...] = field(
        default=(), metadata=_opt("names", "provider credentials the shell tool may still see")
    )
    web_fetch_max_bytes: int = field(
        default=200 * 1024,
        metadata=_opt("size", "text a web_fetch returns at most (the body read stops there)", low=1024),
    )
    web_fetch_timeout: float = field(
        default=30.0, metadata=_opt("float", "seconds a web_fetch waits for each hop", above=0, high=600)
    )
    web_fetch_max_redirects: int = field(
        default=5, metadata=_opt("int", "redirects a web_fetch follows", low=0, high=20)
    )
    fallback: tuple[str, ...] = field(
        default=(), metadata=_opt("routenames", "routes a turn moves to when a route cannot answer")
    )
    fallback_sticky: bool = field(
        default=False, metadata=_opt("bool", "the route that answered stays for the next turn")
    )
    fallback_on: tuple[str, ...] = field(
        default=DEFAULT_FALLBACK_ON,
        metadata=_opt("fallbackkinds", "failure kinds that move to the next route"),
    )
    fallback_after_partial: str = field(
        default="ask",
        metadata=_opt("choice", "after a partial answer: ask, continue or stop", FALLBACK_AFTER_PARTIAL),
    )
    memory: str = field(
        default="suggest", metadata=_opt("choice", "memory worker: off, suggest or auto", MEMORY_MODES)
    )
    memory_max_bytes: int = field(
        default=16 * 1024, metadata=_opt("size", "largest memory file (auto) in the system prompt", low=0)
    )
    memory_lag_turns: int = field(
        default=2, metadata=_opt("int", "turns the memory worker stays behind the conversation", high=50)
    )
    routes: Mapping[str, Route] = field(default_factory=dict, metadata={"kind": "routes"})
    hooks: tuple[HookSpec, ...] = field(default=(), metadata={"kind": "hooks"})
    classifier_rules: tuple[ClassifierRuleSpec, ...] = field(default=(), metadata={"kind": "classifier"})
    mcp_servers: Mapping[str, Any] = field(
        default_factory=dict, metadata={"kind": "mcp_servers"}
    )  # app.config_mcp
    keys: Mapping[str, str] = field(default_factory=dict, metadata={"kind": "keys"})
    permissions: Mapping[str, tuple[str, ...]] = field(default_factory=dict, metadata={"kind": "permissions"})
    sources: Mapping[str, str] = field(default_factory=dict, metadata={"kind": "meta"})
    config_file: Path | None = field(default=None, metadata={"kind": "meta"})

    def route(self, name: str | None = None) -> Route:
        """The named route, the default one, or an error that lists what exists."""
        name = name or self.default_route
        if name and name in self.routes:
            return self.routes[name]
        if name:
            known = ", ".join(sorted(self.routes)) or "none"
            raise ConfigError(
                f"no route named {name!r} (configured routes: {known}); see `bulkhead config show`"
            )
        if len(self.routes) == 1:
            return next(iter(self.routes.values()))
        raise ConfigError(
            "several routes are configured and none is the default: set default_route in config.toml"
        )

    def with_overrides(self, **changes: Any) -> Settings:
        return replace(self, **changes)

    def with_approval(self, mode: str) -> Settings:
        """These settings under another approval mode (`/approval`, Shift+Tab); ValueError names the modes."""
        if mode not in APPROVAL_MODES:
            raise ValueError(f"{mode!r} is not an approval mode: {', '.join(APPROVAL_MODES)}")
        return replace(self, approval=mode)


SETTING_FIELDS = {
    f.name: f
    for f in fields(Settings)
    if f.metadata.get("kind")
    not in ("routes", "hooks", "keys", "meta", "classifier", "mcp_servers", "permissions")
}


# --- locating keys in the file, for messages that name the line ---------------------------------

_HEADER_RE = re.compile(r"^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")


def _locate(text: str, table: str, key: str) -> int | None:
    """The 1-based line where `key` is set inside `[table]` ("" for the top level).

    A key that is itself a table (`[routes.work]`, `[[hooks.Stop]]`) is found at its header.
    """
    current = ""
    key_re = re.compile(rf"^\s*[\"']?{re.escape(key)}[\"']?\s*=")
    subtable = f"{table}.{key}" if table else key
    for number, line in enumerate(text.splitlines(), start=1):
        header = _HEADER_RE.match(line)
        if header:
            current = re.sub(r"\s*\.\s*", ".", header.group(1).replace('"', "").replace("'", ""))
            if current == subtable:
                return number
            continue
        if current == table and key_re.match(line):
            return number
    return None


ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# A setting whose name says it holds a secret, or a value that looks like a key: never printed whole.
_SECRET_NAME_RE = re.compile(r"(?:key|token|secret|passw(?:or)?d|auth|credential)", re.I)
_KEY_LIKE_RE = re.compile(r"^(?:sk-|sk_|xox[abp]-|gh[pousr]_|AKIA|ASIA|AIza|eyJ)|^[A-Za-z0-9+/=_.-]{32,}$")


def hide_url_password(url: str) -> str:
    """`https://user:s3cret@host` → `https://user:***@host`; anything else unchanged."""
    from app.redact import URL_PASSWORD_RE, URL_PASSWORD_SHOWN

    return URL_PASSWORD_RE.sub(lambda m: m.group(1) + URL_PASSWORD_SHOWN + m.group(3), url) if url else url


def _looks_secret(value: Any, key: str = "") -> bool:
    """A string under a secret-sounding key, or one shaped like a key (`sk-…`, 32+ key characters)."""
    return (
        isinstance(value, str)
        and bool(value)
        and bool(_SECRET_NAME_RE.search(key.rsplit(".", 1)[-1]) or _KEY_LIKE_RE.match(value.strip()))
    )


def _shown(value: Any, key: str = "") -> str:
    """A value for an error message: its repr, shortened — or only its shape when it may be a secret (a
    table's keys and values each judged so: a key pasted as a header name is hidden too)."""
    if isinstance(value, Mapping):
        inner = ", ".join(f"{_shown(k)}: {_shown(v, str(k))}" for k, v in list(value.items())[:6])
        text = "{" + inner + (", …" if len(value) > 6 else "") + "}"
        return text if len(text) <= 200 else text[:197] + "..."
    if isinstance(value, list | tuple):
        inner = ", ".join(_shown(v, key) for v in list(value)[:6])
        return "[" + inner + (", …" if len(value) > 6 else "") + "]"
    if _looks_secret(value, key):
        from app.secrets import mask

        return f"'{mask(value)}' (hidden: it may be a secret)"
    if isinstance(value, str) and "://" in value:
        value = hide_url_password(value)
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


@dataclass
class _Origin:
    path: Path | None
    text: str

    def where(self, table: str, key: str) -> str:
        if self.path is None:
            return "config"
        line = _locate(self.text, table, key)
        return f"{self.path}:{line}" if line else str(self.path)


def _convert(kind: str, value: Any, key: str, where: str, choices: tuple[str, ...] = ()) -> Any:
    """Turn a raw value (TOML value or env string) into the key's type, or say precisely why not."""
    optional = kind.endswith("?")
    base = kind.rstrip("?")
    if optional and (value is None or (isinstance(value, str) and value.strip().lower() in ("", "none"))):
        return None
    try:
        if base == "size":
            return parse_size(value)
        if base == "int":
            if isinstance(value, bool):
                raise ValueError
            number = int(value) if not isinstance(value, float) or value.is_integer() else None
            if number is None or number < 0:
                raise ValueError
            return number
        if base == "float":
            if isinstance(value, bool):
                raise ValueError
            real = float(value)
            if not math.isfinite(real) or real < 0:
                raise ValueError
            return real
        if base == "bool":
            if isinstance(value, bool):
                return value
            lowered = str(value).strip().lower()
            if lowered in ("1", "true", "yes", "on"):
                return True
            if lowered in ("0", "false", "no", "off"):
                return False
            raise ValueError
        if base == "engine":  # a choice, or mcp:NAME
            if str(value) in choices or re.fullmatch(r"mcp:[A-Za-z0-9_-]{1,48}", str(value)):
                return str(value)
            raise ConfigError(
                f"{where}: {key} = {value!r} is not one of {', '.join(choices)} or mcp:NAME "
                f"(an MCP server with a context_compact tool)"
            )
        if base == "choice":
            if str(value) not in choices:
                raise ConfigError(f"{where}: {key} = {_shown(value, key)} is not one of {', '.join(choices)}")
            return str(value)
        if base == "str":
            if not isinstance(value, str):
                raise ValueError
            return value
        if base == "tools":  # built-in tool names: a list, [] for none
            items = [v.strip() for v in value.split(",") if v.strip()] if isinstance(value, str) else value
            if not isinstance(items, list | tuple) or not all(isinstance(v, str) for v in items):
                raise ValueError
            unknown = [v for v in items if v not in BUILTIN_TOOL_NAMES]
            if unknown:
                raise ConfigError(
                    f"{where}: {key}: {_shown(unknown[0], key)} is not a built-in tool "
                    f"(tools: {', '.join(BUILTIN_TOOL_NAMES)}; [] offers none)"
                )
            return tuple(dict.fromkeys(items))
        if base == "routenames":  # route names (each checked against the routes once they are read)
            items = [v.strip() for v in value.split(",") if v.strip()] if isinstance(value, str) else value
            if not isinstance(items, list | tuple) or not all(
                isinstance(v, str) and v.strip() for v in items
            ):
                raise ValueError
            return tuple(dict.fromkeys(v.strip() for v in items))
        if base == "fallbackkinds":
            items = [v.strip() for v in value.split(",") if v.strip()] if isinstance(value, str) else value
            if not isinstance(items, list | tuple) or not all(isinstance(v, str) for v in items):
                raise ValueError
            for item in items:
                if item in STAYING_KINDS:
                    raise ConfigError(
                        f"{where}: {key}: {item!r} never moves to another route — a request refused for its "
                        f"size or shape is recovered on the route that refused it (the recovery ladder); "
                        f"kinds that move: {', '.join(DEFAULT_FALLBACK_ON)}"
                    )
                if item not in DEFAULT_FALLBACK_ON:
                    raise ConfigError(
                        f"{where}: {key}: {_shown(item, key)} is not a failure kind that can move to another "
                        f"route (kinds: {', '.join(DEFAULT_FALLBACK_ON)})"
                    )
            return tuple(FallbackKind(v).value for v in dict.fromkeys(items))
        if base == "names":
            items = [v.strip() for v in value.split(",")] if isinstance(value, str) else value
            if not isinstance(items, list | tuple) or not all(isinstance(v, str) for v in items):
                raise ValueError
            bad = [v for v in items if v and not ENV_NAME_RE.match(v)]
            if bad:
                raise ConfigError(
                    f"{where}: {key}: {_shown(bad[0], key)} is not an environment variable name "
                    f'(letters, digits and _, e.g. "GITHUB_TOKEN")'
                )
            return tuple(v for v in items if v)
    except SizeError as exc:
        text = str(exc)
        if isinstance(value, str) and value and _shown(value, key) != repr(value):  # may be a secret
            text = text.replace(repr(value), _shown(value, key)).replace(value, _shown(value, key))
        raise ConfigError(f"{where}: {key}: {text}") from None
    except (TypeError, ValueError, OverflowError):
        wanted = {
            "int": "a whole number ≥ 0",
            "float": "a number ≥ 0",
            "bool": "true or false",
            "str": "a string",
            "names": 'a list of variable names, e.g. ["GITHUB_TOKEN"]',
            "tools": 'a list of built-in tool names, e.g. ["read_file", "grep"], or [] for none',
            "routenames": 'a list of route names, e.g. ["bedrock", "local"]',
            "fallbackkinds": 'a list of failure kinds, e.g. ["overloaded", "server_error"]',
        }.get(base, base)
        raise ConfigError(f"{where}: {key} = {_shown(value, key)} is not {wanted}") from None
    raise AssertionError(f"unknown setting kind {kind}")


def _read_toml(path: Path) -> tuple[dict, str]:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise ConfigError(
            f"{path}: cannot read the config file ({exc.strerror or exc}); "
            "check it, or point BULKHEAD_CONFIG elsewhere"
        ) from None
    try:
        return tomllib.loads(text), text
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        at = re.search(r"\(at line (\d+), column (\d+)\)", message)
        reason = re.sub(r"\s*\(at line \d+, column \d+\)", "", message)
        if at:
            raise ConfigError(f"{path}:{at.group(1)}:{at.group(2)}: invalid TOML: {reason}") from None
        raise ConfigError(f"{path}: invalid TOML: {reason}") from None


class _Problems:
    """Every problem of one load, in the order found (a file is checked whole, not up to its first error)."""

    def __init__(self) -> None:
        self.items: list[str] = []

    def add(self, message: str) -> None:
        self.items.append(message)

    def convert(
        self,
        kind: str,
        value: Any,
        key: str,
        where: str,
        choices: tuple[str, ...] = (),
        meta: Mapping[str, Any] | None = None,
    ) -> tuple[bool, Any]:
        """(True, converted value), or (False, None) with the problem noted."""
        try:
            converted = _convert(kind, value, key, where, choices)
            if meta is not None:
                _check_range(converted, key, where, meta)
            return True, converted
        except ConfigError as exc:
            self.add(str(exc))
            return False, None


def _shown_number(value: Any, meta: Mapping[str, Any]) -> str:
    """A number as the error shows it; an integer too long for a float is shown by its digit count."""
    if isinstance(value, int) and abs(value) >= 10**18:
        return f"{str(value)[:6]}… ({len(str(abs(value)))} digits)"
    return format_size(value) if str(meta.get("kind", "")).startswith("size") else f"{value:g}"


def _check_range(value: Any, key: str, where: str, meta: Mapping[str, Any]) -> None:
    """A value outside its key's range is an error that says the range (e.g. compact_threshold = 1.5)."""
    if value is None or isinstance(value, str):
        return
    low, high, above = meta.get("low"), meta.get("high"), meta.get("above")
    too_low = (low is not None and value < low) or (above is not None and value <= above)
    too_high = high is not None and value > high
    if not (too_low or too_high):
        return
    shown = _shown_number(value, meta)
    bound = lambda v: _shown_number(v, meta)  # noqa: E731
    if above is not None and high is not None:
        wanted = f"more than {bound(above)} and at most {bound(high)}"
        if high == 1 and above == 0:
            wanted += " (a share: 0.85 means 85%)"
    elif low is not None and high is not None:
        wanted = f"between {bound(low)} and {bound(high)}"
    elif high is not None:
        wanted = f"at most {bound(high)}"
    elif above is not None:
        wanted = f"more than {bound(above)}"
    else:
        wanted = f"at least {bound(low)}"
    raise ConfigError(f"{where}: {key} = {shown} is out of range: it must be {wanted}")


_URL_RE = re.compile(r"^(https?)://[^/\s?#]+", re.I)


def check_url(value: str, key: str, where: str) -> None:
    """A base URL must say how to connect: `127.0.0.1:8787` fails every request later, so say so now."""
    if _URL_RE.match(value):
        return
    if "://" not in value:
        local = re.match(r"^(localhost|127\.|\[::1\]|0\.0\.0\.0|10\.|192\.168\.)", value)
        if _looks_secret(value):  # a key pasted as the URL: never echoed, not even as "https://<key>"
            raise ConfigError(
                f"{where}: {key} = {_shown(value, key)} is not a URL — did you paste a key here? A base URL "
                f"looks like https://api.example.com/v1 (keys belong in the keyring or api_key_env)"
            )
        raise ConfigError(
            f"{where}: {key} = {value!r} has no scheme — add http:// for a local server "
            f'("http://{value}") or https:// for a remote one' + ("" if local else f' ("https://{value}")')
        )
    raise ConfigError(f"{where}: {key} = {_shown(value, key)} must start with http:// or https://")


def _parse_routes(raw: Any, origin: _Origin, problems: _Problems) -> dict[str, Route]:
    if not isinstance(raw, dict):
        problems.add(f"{origin.where('', 'routes')}: routes must be a table of [routes.NAME] tables")
        return {}
    routes: dict[str, Route] = {}
    for name, table in raw.items():
        section = f"routes.{name}"
        if not isinstance(table, dict):
            problems.add(f"{origin.where('routes', name)}: routes.{name} must be a table")
            continue
        values: dict[str, Any] = {}
        valid = True
        for key, value in table.items():
            where = origin.where(section, key)
            if key not in _ROUTE_KEYS:
                known = ", ".join(_ROUTE_KEYS)
                problems.add(
                    f"{where}: unknown key {key!r} = {_shown(value, key)} in [routes.{name}] (known: {known})"
                )
                valid = False
                continue
            ok, converted = problems.convert(
                _ROUTE_KEYS[key],
                value,
                f"routes.{name}.{key}",
                where,
                _ROUTE_CHOICES.get(key, PROVIDERS),
                _ROUTE_RANGES.get(key),
            )
            if ok and key in ("base_url", "endpoint_url") and converted:
                try:
                    check_url(converted, f"routes.{name}.{key}", where)
                except ConfigError as exc:
                    problems.add(str(exc))
                    ok = False
            if ok and key == "api_key_env" and not ENV_NAME_RE.match(converted):
                problems.add(
                    f"{where}: routes.{name}.api_key_env names the environment variable that holds "
                    f'the key (e.g. "AZURE_OPENAI_API_KEY"), not the key itself: '
                    f"{_shown(converted, key)}"
                )
                ok = False
            valid = valid and ok
            if ok:
                values[key] = converted
        if "provider" not in table:
            problems.add(
                f"{origin.where('routes', name)}: [routes.{name}] needs provider = "
                f"one of {', '.join(PROVIDERS)}"
            )
            continue
        if "api" in values and values.get("provider") != "openai":
            problems.add(
                f"{origin.where(section, 'api')}: api = {values['api']!r} only applies to "
                f'provider = "openai" routes ([routes.{name}] is {values.get("provider")!r}); remove it'
            )
            continue
        if "model" not in table:
            if values.get("provider") not in ("lab", None):
                problems.add(f'{origin.where("routes", name)}: [routes.{name}] needs model = "..."')
                continue
            values["model"] = "lab-1"
        if valid:
            routes[name] = Route(name=name, **values)
    return routes


_ROUTE_RANGES: dict[str, dict[str, Any]] = {
    "max_payload": {"kind": "size", "low": 1024},
    "context_window": {"kind": "int", "low": 1000},
    "max_output_tokens": {"kind": "int", "low": 1},
}


def _parse_hooks(
    raw: Any, origin: _Origin, default_timeout: float, problems: _Problems
) -> tuple[HookSpec, ...]:
    if not isinstance(raw, dict):
        problems.add(f"{origin.where('', 'hooks')}: hooks must be tables like [[hooks.PreToolUse]]")
        return ()
    specs: list[HookSpec] = []
    for event, entries in raw.items():
        if event not in HOOK_EVENTS:
            problems.add(
                f"{origin.where('hooks', event)}: unknown hook event {event!r} "
                f"(known: {', '.join(HOOK_EVENTS)})"
            )
            continue
        if isinstance(entries, dict):
            entries = [entries]
        if not isinstance(entries, list):
            problems.add(
                f"{origin.where('hooks', event)}: hooks.{event} must be [[hooks.{event}]] tables "
                f'with command = "...", not {entries!r}'
            )
            continue
        for entry in entries:
            if not isinstance(entry, dict) or not isinstance(entry.get("command"), str):
                problems.add(f'{origin.where("hooks", event)}: each [[hooks.{event}]] needs command = "..."')
                continue
            where = origin.where(f"hooks.{event}", "timeout")
            ok, timeout = problems.convert(
                "float",
                entry.get("timeout", default_timeout),
                f"hooks.{event}.timeout",
                where,
                meta={"kind": "float", "above": 0},
            )
            matcher = entry.get("matcher", "")
            if not isinstance(matcher, str):
                problems.add(f"{origin.where(f'hooks.{event}', 'matcher')}: matcher must be a string")
                continue
            if ok:
                specs.append(
                    HookSpec(event=event, command=entry["command"], matcher=matcher, timeout=timeout)
                )
    return tuple(specs)


def _parse_keys(raw: Any, origin: _Origin, problems: _Problems) -> dict[str, str]:
    """`[keys]`: binding id → key (with fallbacks, comma separated), e.g. "app.inspector" = "f4"."""
    if not isinstance(raw, dict):
        problems.add(f'{origin.where("", "keys")}: keys must be a table: [keys] "app.help" = "f1"')
        return {}
    keys: dict[str, str] = {}
    for binding, value in raw.items():
        if not isinstance(value, str) or not value.strip():
            problems.add(
                f"{origin.where('keys', binding)}: keys.{binding} = {value!r} is not a key name "
                f'(e.g. "f4" or "ctrl+b,alt+b")'
            )
            continue
        keys[binding] = value
    return keys


def _check_pairs(values: Mapping[str, Any], sources: Mapping[str, str], problems: _Problems) -> None:
    """Settings that only make sense together: a target below its threshold, a backoff below its cap."""
    pairs = (
        ("compact_target", "compact_threshold"),
        ("preflight_target", "preflight_ratio"),
        ("retry_base_delay", "retry_max_delay"),
    )
    for smaller, larger in pairs:
        if smaller not in values and larger not in values:
            continue
        low = values.get(smaller, SETTING_FIELDS[smaller].default)
        high = values.get(larger, SETTING_FIELDS[larger].default)
        strict = smaller != "retry_base_delay"
        if low is not None and high is not None and (low >= high if strict else low > high):
            where = sources.get(smaller if smaller in values else larger, "config")
            problems.add(
                f"{where}: {smaller} = {low:g} must be {'below' if strict else 'at most'} {larger} = {high:g}"
            )


def _check_fallbacks(
    routes: Mapping[str, Route],
    raw_routes: Any,
    default: tuple[str, ...],
    sources: Mapping[str, str],
    origin: _Origin,
    problems: _Problems,
) -> None:
    """Every route a `fallback` list names exists (file:line), and no chain leads back to where it began."""
    known = set(routes) | (set(raw_routes) if isinstance(raw_routes, dict) else set())
    listed = ", ".join(sorted(known)) or "none"
    for name in default:
        if name not in known:
            problems.add(
                f"{sources.get('fallback', 'config')}: fallback names no route {name!r} (configured routes: {listed})"
            )
    for route in routes.values():
        for name in route.fallback or ():
            if name not in known:
                problems.add(
                    f"{origin.where(f'routes.{route.name}', 'fallback')}: routes.{route.name}.fallback names no "
                    f"route {name!r} (configured routes: {listed})"
                )
    reported: set[frozenset[str]] = set()
    for start in routes.values():
        cycle = _fallback_cycle(routes, start.name)
        if cycle is None or frozenset(cycle) in reported:
            continue
        reported.add(frozenset(cycle))
        problems.add(
            f"{origin.where(f'routes.{cycle[0]}', 'fallback')}: the fallback chain goes round in a circle "
            f"({' → '.join([*cycle, cycle[0]])}) — a route's fallback may not lead back to it; remove one of "
            f"these links"
        )


def _fallback_cycle(routes: Mapping[str, Route], start: str) -> list[str] | None:
    """The routes of a cycle reachable from `start` through their own `fallback` lists (None: no cycle)."""
    path: list[str] = []
    done: set[str] = set()

    def visit(name: str) -> list[str] | None:
        if name in path:
            return path[path.index(name) :]
        if name in done or name not in routes:
            return None
        path.append(name)
        for nxt in routes[name].fallback or ():
            found = visit(nxt)
            if found is not None:
                return found
        path.pop()
        done.add(name)
        return None

    return visit(start)


def fallback_chain(settings: Settings, head: str) -> tuple[str, ...]:
    """The routes a turn that starts on `head` may use, in order: `head`, then its own `fallback` list (else
    the global `fallback`), each followed by the routes of its own `fallback` list (depth first, once each;
    `config check` refuses cycles). Routes that do not exist are left out."""
    chain: list[str] = [head]

    def add(names: tuple[str, ...]) -> None:
        for name in names:
            if name in chain or name not in settings.routes:
                continue
            chain.append(name)
            add(settings.routes[name].fallback or ())

    route = settings.routes.get(head)
    own = route.fallback if route is not None else None
    add(own if own is not None else settings.fallback)
    return tuple(chain)


def _register_secrets(settings: Settings, env: Mapping[str, str]) -> None:
    """What the settings say is secret joins the redaction registry (`app.redact`): the routes'
    `api_key_env` values, passwords in their URLs, and the environment's keys and proxy passwords."""
    from app.redact import register_url_password
    from app.secrets import register_environment_secrets

    register_environment_secrets(env, [r.api_key_env for r in settings.routes.values() if r.api_key_env])
    for route in settings.routes.values():
        for url in (route.base_url, route.endpoint_url):
            register_url_password(url, f"password in routes.{route.name}")


_CLASSIFIER_RULE_KEYS = ("id", "kind", "status", "header", "phrase", "priority", "reason")


def _table_lines(text: str, header: str) -> list[int]:
    """1-based lines of every `[[header]]` (an array of tables), in order."""
    dotted = r"\s*\.\s*".join(re.escape(part) for part in header.split("."))
    pattern = re.compile(rf"^\s*\[\[\s*{dotted}\s*\]\]")
    return [number for number, line in enumerate(text.splitlines(), start=1) if pattern.match(line)]


def _key_line(text: str, start: int, key: str) -> int:
    """The line of `key = …` in the table that starts at line `start` (the table's line if not found)."""
    key_re = re.compile(rf"^\s*[\"']?{re.escape(key)}[\"']?\s*=")
    for number, line in enumerate(text.splitlines()[start:], start=start + 1):
        if _HEADER_RE.match(line):
            break
        if key_re.match(line):
            return number
    return start


def _parse_classifier(raw: Any, origin: _Origin) -> tuple[ClassifierRuleSpec, ...]:
    """`[[classifier.rules]]`: user rules for a corporate gateway's own pages, checked here (file:line)."""
    from app.model.failure_kinds import KINDS

    if not isinstance(raw, dict):
        raise ConfigError(
            f"{origin.where('', 'classifier')}: classifier must be a table: [[classifier.rules]]"
        )
    unknown = sorted(set(raw) - {"rules"})
    if unknown:
        raise ConfigError(
            f"{origin.where('classifier', unknown[0])}: unknown key {unknown[0]!r} in [classifier] "
            f"(only [[classifier.rules]] tables)"
        )
    rules = raw.get("rules", [])
    if not isinstance(rules, list):
        raise ConfigError(
            f"{origin.where('classifier', 'rules')}: classifier.rules must be [[classifier.rules]] tables"
        )
    starts = _table_lines(origin.text, "classifier.rules") if origin.path else []
    specs: list[ClassifierRuleSpec] = []
    for index, table in enumerate(rules):
        start = starts[index] if index < len(starts) else None

        def where(key: str | None = None, _start: int | None = start) -> str:
            if origin.path is None:
                return "config"
            if _start is None:
                return str(origin.path)
            return f"{origin.path}:{_key_line(origin.text, _start, key) if key else _start}"

        if not isinstance(table, dict):
            raise ConfigError(f"{where()}: each classifier rule must be a [[classifier.rules]] table")
        for key in table:
            if key not in _CLASSIFIER_RULE_KEYS:
                raise ConfigError(
                    f"{where(key)}: unknown key {key!r} in [[classifier.rules]] "
                    f"(known: {', '.join(_CLASSIFIER_RULE_KEYS)})"
                )
        kind = table.get("kind")
        if kind not in KINDS:
            raise ConfigError(
                f"{where('kind' if 'kind' in table else None)}: classifier rule kind = {kind!r} is not one "
                f"of {', '.join(KINDS)}"
            )
        statuses = table.get("status", [])
        statuses = [statuses] if isinstance(statuses, int) and not isinstance(statuses, bool) else statuses
        if not isinstance(statuses, list) or not all(
            isinstance(v, int) and not isinstance(v, bool) and 100 <= v <= 999 for v in statuses
        ):
            raise ConfigError(
                f"{where('status')}: status = {_shown(table.get('status'))} is not an HTTP status "
                f"(100–999) or a list of them"
            )
        header = table.get("header")
        if header is not None and (not isinstance(header, str) or not header.partition(":")[0].strip()):
            raise ConfigError(f'{where("header")}: header = {_shown(header)} is not "Name" or "Name: value"')
        phrase = table.get("phrase")
        if phrase is not None:
            if not isinstance(phrase, str) or not phrase:
                raise ConfigError(f"{where('phrase')}: phrase = {_shown(phrase)} is not a regular expression")
            try:
                re.compile(phrase, re.IGNORECASE)
            except re.error as exc:
                raise ConfigError(
                    f"{where('phrase')}: phrase = {_shown(phrase)} is not a valid regular expression "
                    f"({exc.msg} at position {exc.pos})"
                ) from None
        if not statuses and header is None and phrase is None:
            raise ConfigError(f"{where()}: a classifier rule needs at least one of status, header or phrase")
        priority = table.get("priority", 1000)
        if isinstance(priority, bool) or not isinstance(priority, int):
            raise ConfigError(f"{where('priority')}: priority = {_shown(priority)} is not a whole number")
        rule_id = table.get("id", f"{index + 1}")
        reason = table.get("reason")
        if not isinstance(rule_id, str | int) or (reason is not None and not isinstance(reason, str)):
            raise ConfigError(
                f"{where('id' if 'reason' not in table else 'reason')}: id and reason must be strings"
            )
        specs.append(
            ClassifierRuleSpec(
                kind=kind,
                where=where(),
                id=f"config:{rule_id}",
                status=tuple(statuses),
                header=header,
                phrase=phrase,
                priority=priority,
                reason=reason,
            )
        )
    return tuple(specs)


def _parse_mcp_servers(raw: Any, origin: _Origin, env: Mapping[str, str]) -> dict[str, Any]:
    """`[mcp_servers.NAME]` tables (app.config_mcp; imported only when there are some)."""
    if not raw:
        return {}
    from app.config_mcp import McpConfigError, parse_config_servers

    try:
        return parse_config_servers(raw, origin.where, env)
    except McpConfigError as exc:
        raise ConfigError(str(exc)) from None


def _parse_permissions(raw: Any, origin: _Origin) -> dict[str, tuple[str, ...]]:
    """`[permissions]`: allow / ask / deny lists of rules in Claude Code's syntax (app.model.permission_rules)."""
    from app.model.permission_rules import RuleError, parse_rule

    if not isinstance(raw, dict):
        raise ConfigError(
            f"{origin.where('', 'permissions')}: permissions must be a table: [permissions] "
            f'allow = ["Bash(npm test:*)"]'
        )
    parsed: dict[str, tuple[str, ...]] = {}
    for kind, rules in raw.items():
        where = origin.where("permissions", kind)
        if kind not in ("allow", "ask", "deny"):
            raise ConfigError(f"{where}: unknown key {kind!r} in [permissions] (known: allow, ask, deny)")
        if not isinstance(rules, list):
            raise ConfigError(
                f'{where}: permissions.{kind} must be a list of rules, e.g. ["Bash(npm test:*)"]'
            )
        for rule in rules:
            try:
                parse_rule(rule)
            except RuleError as exc:
                raise ConfigError(f"{where}: permissions.{kind}: {exc}") from None
        parsed[kind] = tuple(rules)
    return parsed


def load_settings(
    path: Path | None = None,
    env: Mapping[str, str] | None = None,
    flags: Mapping[str, Any] | None = None,
) -> Settings:
    """Build Settings from defaults, the config file (if present), the environment and flags.

    Every problem is collected (each with its file:line or variable) and raised together in one
    ConfigError. A config file named by BULKHEAD_CONFIG that does not exist is one of them: an
    explicit path is never silently replaced by the defaults."""
    env = os.environ if env is None else env
    named = os.environ.get("BULKHEAD_CONFIG") if path is None else None
    path = config_path() if path is None else path
    raw: dict = {}
    origin = _Origin(None, "")
    if path.exists():
        raw, text = _read_toml(path)
        origin = _Origin(path, text)
    elif named:
        raise ConfigError(
            f"BULKHEAD_CONFIG={named}: no such file — create it (`bulkhead config init` writes a "
            f"commented one there), fix the path, or unset BULKHEAD_CONFIG to use {_default_path()}"
        )

    problems = _Problems()
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for key, value in raw.items():
        if key in ("routes", "hooks", "keys", "classifier", "mcp_servers", "permissions"):
            continue
        if key not in SETTING_FIELDS:
            problems.add(
                f"{origin.where('', key)}: unknown key {key!r} = {_shown(value, key)} "
                f"(see config.example.toml for every key)"
            )
            continue
        meta = SETTING_FIELDS[key].metadata
        where = origin.where("", key)
        ok, converted = problems.convert(meta["kind"], value, key, where, meta["choices"], meta)
        if ok:
            values[key] = converted
            sources[key] = where

    for key, spec in SETTING_FIELDS.items():
        env_name = f"BULKHEAD_{key.upper()}"
        if env_name in env:
            meta = spec.metadata
            ok, converted = problems.convert(
                meta["kind"], env[env_name], key, f"environment {env_name}", meta["choices"], meta
            )
            if ok:
                values[key] = converted
                sources[key] = f"env {env_name}"

    for key, value in (flags or {}).items():
        if value is None:
            continue
        if key not in SETTING_FIELDS:
            problems.add(f"unknown setting {key!r}")
            continue
        meta = SETTING_FIELDS[key].metadata
        ok, converted = problems.convert(
            meta["kind"], value, key, f"--{key.replace('_', '-')}", meta["choices"], meta
        )
        if ok:
            values[key] = converted
            sources[key] = "flag"

    _check_pairs(values, sources, problems)
    routes = _parse_routes(raw.get("routes", {}), origin, problems)
    hooks = _parse_hooks(raw.get("hooks", {}), origin, values.get("hook_timeout", 60.0), problems)
    keys = _parse_keys(raw.get("keys", {}), origin, problems)
    try:
        classifier_rules = _parse_classifier(raw.get("classifier", {}), origin)
    except ConfigError as exc:
        problems.add(str(exc))
        classifier_rules = ()
    try:
        mcp_servers = _parse_mcp_servers(raw.get("mcp_servers", {}), origin, env)
    except ConfigError as exc:
        problems.add(str(exc))
        mcp_servers = {}
    try:
        permissions = _parse_permissions(raw.get("permissions", {}), origin)
    except ConfigError as exc:
        problems.add(str(exc))
        permissions = {}
    for key in ("default_route", "compact_model"):
        name = values.get(key)
        if name is not None and name not in routes and name not in raw.get("routes", {}):
            known = ", ".join(sorted(routes)) or "none"
            problems.add(
                f"{sources.get(key, 'config')}: {key} = {_shown(name, key)} names no route (configured routes: {known})"
            )
    _check_fallbacks(routes, raw.get("routes", {}), values.get("fallback", ()), sources, origin, problems)
    if problems.items:
        raise ConfigError(problems=problems.items)
    settings = Settings(
        routes=routes,
        hooks=hooks,
        keys=keys,
        sources=sources,
        classifier_rules=classifier_rules,
        mcp_servers=mcp_servers,
        permissions=permissions,
        config_file=path if path.exists() else None,
        **values,
    )
    _register_secrets(settings, env)
    return settings


def _default_path() -> Path:
    return platformdirs.user_config_path("bulkhead") / "config.toml"
