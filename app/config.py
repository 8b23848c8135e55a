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

from app.sizes import SizeError, parse_size

PROVIDERS = ("anthropic", "openai", "bedrock", "lab")
APPROVAL_MODES = ("ask", "auto-read", "auto-edit", "never-ask")
CONTEXT_ENGINES = ("local", "provider")
HOOK_EVENTS = (
    "SessionStart", "SessionEnd", "UserPromptSubmit", "PreToolUse", "PostToolUse",
    "PostToolUseFailure", "PreCompact", "PostCompact", "Stop", "Notification", "RequestRejected",
)


class ConfigError(Exception):
    """A configuration problem, worded for the user (file:line: what is wrong and what to do)."""


def data_home() -> Path:
    """Folder for the database, state.toml and per-session folders (`BULKHEAD_HOME` overrides)."""
    override = os.environ.get("BULKHEAD_HOME")
    return Path(override).expanduser() if override else platformdirs.user_data_path("bulkhead")


def config_path() -> Path:
    override = os.environ.get("BULKHEAD_CONFIG")
    return Path(override).expanduser() if override else platformdirs.user_config_path("bulkhead") / "config.toml"


def example_config_path() -> Path:
    """The commented starter config, in the source tree or inside the installed package."""
    here = Path(__file__).resolve().parent
    for candidate in (here.parent / "config.example.toml", here / "config.example.toml"):
        if candidate.exists():
            return candidate
    raise ConfigError("config.example.toml is missing from this installation; reinstall bulkhead")


def _opt(kind: str, help: str, choices: tuple[str, ...] = ()) -> dict:
    return {"kind": kind, "help": help, "choices": choices}


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
    images: bool | None = None  # does the model take image blocks (None: bulkhead guesses by provider)

    @property
    def endpoint_id(self) -> str:
        """Where a learned cap belongs: the provider plus the host that enforces it."""
        if self.provider == "bedrock":
            where = self.endpoint_url or f"region:{self.region or 'default'}"
        else:
            where = self.base_url or "default"
        return f"{self.provider} {where}"


_ROUTE_KEYS: dict[str, str] = {
    "provider": "choice", "model": "str", "base_url": "str", "max_payload": "size",
    "context_window": "int", "max_output_tokens": "int", "region": "str", "profile": "str",
    "endpoint_url": "str", "api_key_env": "str", "images": "bool",
}


@dataclass(frozen=True)
class HookSpec:
    event: str
    command: str
    matcher: str = ""
    timeout: float = 60.0


@dataclass(frozen=True)
class Settings:
    """Every tunable number of DESIGN.md §4–§8. Each is also `BULKHEAD_<NAME>` in the environment."""

    default_route: str | None = field(default=None, metadata=_opt("str?", "route used when none is given"))
    max_payload: int | None = field(default=None, metadata=_opt("size?", "request body cap for every route"))
    context_window: int | None = field(default=None, metadata=_opt("int?", "context window override (tokens)"))
    max_output_tokens: int = field(default=8192, metadata=_opt("int", "max_tokens of a normal request"))
    max_recovery_attempts: int = field(default=3, metadata=_opt("int", "recovery ladder attempts per failure"))
    max_token_escalations: int = field(default=2, metadata=_opt("int", "max_tokens doublings per answer"))
    emergency_keep_messages: int = field(default=10, metadata=_opt("int", "L2: non-system messages kept"))
    nuclear_keep_messages: int = field(default=4, metadata=_opt("int", "L3: non-system messages kept"))
    nuclear_message_chars: int = field(default=4000, metadata=_opt("int", "L3: cap per kept message"))
    assistant_cut_chars: int = field(default=5000, metadata=_opt("int", "L1: assistant messages cut above"))
    microcompact_truncate_turns: int = field(default=2, metadata=_opt("int", "tool result age for preview"))
    microcompact_summarize_turns: int = field(default=4, metadata=_opt("int", "tool result age for one line"))
    microcompact_truncate_min_chars: int = field(default=3000, metadata=_opt("int", "preview only above"))
    microcompact_summarize_min_chars: int = field(default=1000, metadata=_opt("int", "one line only above"))
    microcompact_head_chars: int = field(default=2000, metadata=_opt("int", "preview head"))
    microcompact_tail_chars: int = field(default=500, metadata=_opt("int", "preview tail"))
    turn_budget_chars: int = field(default=200_000, metadata=_opt("int", "tool output per turn"))
    result_max_chars: int = field(default=20_000, metadata=_opt("int", "tool output per result"))
    compact_model: str | None = field(default=None, metadata=_opt("str?", "route that writes summaries"))
    compact_threshold: float = field(default=0.85, metadata=_opt("float", "window share that compacts"))
    compact_target: float = field(default=0.50, metadata=_opt("float", "window share compaction aims at"))
    preflight_ratio: float = field(default=0.85, metadata=_opt("float", "cap share that compacts first"))
    preflight_target: float = field(default=0.40, metadata=_opt("float", "cap share preflight aims at"))
    no_cap_warn_bytes: int = field(default=int(2.5 * 1024 * 1024), metadata=_opt("size", "warn once above"))
    fallback_cap: int = field(default=4 * 1024 * 1024, metadata=_opt("size", "cap when size is unknown"))
    drop_payload_min_bytes: int = field(default=500_000, metadata=_opt("int", "drops count as payload above"))
    summary_min_chars_cap: int = field(default=80, metadata=_opt("int", "quality gate floor cap"))
    summary_skip_after_miss: int = field(default=2, metadata=_opt("int", "summaries skipped after a miss"))
    summary_keep_messages: int = field(default=6, metadata=_opt("int", "recent messages a summary keeps whole"))
    summarizer_floor_chars: int = field(default=20_000, metadata=_opt("int", "summarizer input floor"))
    summary_timeout: float = field(default=600.0, metadata=_opt("float", "seconds a summary may take"))
    retry_max_attempts: int = field(default=4, metadata=_opt("int", "transient retries per request"))
    retry_base_delay: float = field(default=1.0, metadata=_opt("float", "first backoff (seconds)"))
    retry_max_delay: float = field(default=30.0, metadata=_opt("float", "longest backoff (seconds)"))
    request_timeout: float = field(default=600.0, metadata=_opt("float", "seconds per request"))
    connect_timeout: float = field(default=10.0, metadata=_opt("float", "seconds to connect"))
    approval: str = field(default="auto-read", metadata=_opt("choice", "tool approvals", APPROVAL_MODES))
    workspace: str | None = field(default=None, metadata=_opt("str?", "folder tools work in (default: cwd)"))
    max_mentions: int = field(default=10, metadata=_opt("int", "@file mentions attached per prompt"))
    image_max_bytes: int = field(default=5 * 1024 * 1024, metadata=_opt("size", "largest image attached"))
    checkpoint_max_bytes: int = field(default=16 * 1024 * 1024,
                                      metadata=_opt("size", "largest file /undo can restore"))
    instructions_max_bytes: int = field(default=256 * 1024,
                                        metadata=_opt("size", "AGENTS.md / CLAUDE.md bytes in the system prompt"))
    context_engine: str = field(default="local", metadata=_opt("choice", "local or provider", CONTEXT_ENGINES))
    har_body_limit: int = field(default=64 * 1024, metadata=_opt("size", "body bytes kept per HAR entry"))
    hook_timeout: float = field(default=60.0, metadata=_opt("float", "default hook timeout (seconds)"))
    theme: str | None = field(default=None, metadata=_opt("str?", "Textual theme (else the last used)"))
    routes: Mapping[str, Route] = field(default_factory=dict, metadata={"kind": "routes"})
    hooks: tuple[HookSpec, ...] = field(default=(), metadata={"kind": "hooks"})
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
            raise ConfigError(f"no route named {name!r} (configured routes: {known}); see `bulkhead config show`")
        if len(self.routes) == 1:
            return next(iter(self.routes.values()))
        raise ConfigError("several routes are configured and none is the default: set default_route in config.toml")

    def with_overrides(self, **changes: Any) -> Settings:
        return replace(self, **changes)


SETTING_FIELDS = {f.name: f for f in fields(Settings)
                  if f.metadata.get("kind") not in ("routes", "hooks", "keys", "permissions", "meta")}


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


def _shown(value: Any) -> str:
    """A value for an error message: its repr, shortened."""
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
            number = float(value)
            if not math.isfinite(number) or number < 0:
                raise ValueError
            return number
        if base == "bool":
            if isinstance(value, bool):
                return value
            lowered = str(value).strip().lower()
            if lowered in ("1", "true", "yes", "on"):
                return True
            if lowered in ("0", "false", "no", "off"):
                return False
            raise ValueError
        if base == "choice":
            if str(value) not in choices:
                raise ConfigError(f"{where}: {key} = {value!r} is not one of {', '.join(choices)}")
            return str(value)
        if base == "str":
            if not isinstance(value, str):
                raise ValueError
            return value
    except SizeError as exc:
        raise ConfigError(f"{where}: {key}: {exc}") from None
    except (TypeError, ValueError, OverflowError):
        wanted = {"int": "a whole number ≥ 0", "float": "a number ≥ 0", "bool": "true or false",
                  "str": "a string"}.get(base, base)
        raise ConfigError(f"{where}: {key} = {value!r} is not {wanted}") from None
    raise AssertionError(f"unknown setting kind {kind}")


def _read_toml(path: Path) -> tuple[dict, str]:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the config file ({exc.strerror or exc}); "
                          "check it, or point BULKHEAD_CONFIG elsewhere") from None
    try:
        return tomllib.loads(text), text
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        at = re.search(r"\(at line (\d+), column (\d+)\)", message)
        reason = re.sub(r"\s*\(at line \d+, column \d+\)", "", message)
        if at:
            raise ConfigError(f"{path}:{at.group(1)}:{at.group(2)}: invalid TOML: {reason}") from None
        raise ConfigError(f"{path}: invalid TOML: {reason}") from None


def _parse_routes(raw: Any, origin: _Origin) -> dict[str, Route]:
    if not isinstance(raw, dict):
        raise ConfigError(f"{origin.where('', 'routes')}: routes must be a table of [routes.NAME] tables")
    routes: dict[str, Route] = {}
    for name, table in raw.items():
        section = f"routes.{name}"
        if not isinstance(table, dict):
            raise ConfigError(f"{origin.where('routes', name)}: routes.{name} must be a table")
        values: dict[str, Any] = {}
        for key, value in table.items():
            where = origin.where(section, key)
            if key not in _ROUTE_KEYS:
                known = ", ".join(_ROUTE_KEYS)
                raise ConfigError(f"{where}: unknown key {key!r} = {_shown(value)} in [routes.{name}] "
                                  f"(known: {known})")
            values[key] = _convert(_ROUTE_KEYS[key], value, f"routes.{name}.{key}", where, PROVIDERS)
        if "provider" not in values:
            raise ConfigError(f"{origin.where('routes', name)}: [routes.{name}] needs provider = "
                              f"one of {', '.join(PROVIDERS)}")
        if "model" not in values:
            if values["provider"] != "lab":
                raise ConfigError(f"{origin.where('routes', name)}: [routes.{name}] needs model = \"...\"")
            values["model"] = "lab-1"
        routes[name] = Route(name=name, **values)
    return routes


def _parse_hooks(raw: Any, origin: _Origin, default_timeout: float) -> tuple[HookSpec, ...]:
    if not isinstance(raw, dict):
        raise ConfigError(f"{origin.where('', 'hooks')}: hooks must be tables like [[hooks.PreToolUse]]")
    specs: list[HookSpec] = []
    for event, entries in raw.items():
        if event not in HOOK_EVENTS:
            raise ConfigError(f"{origin.where('hooks', event)}: unknown hook event {event!r} "
                              f"(known: {', '.join(HOOK_EVENTS)})")
        if isinstance(entries, dict):
            entries = [entries]
        if not isinstance(entries, list):
            raise ConfigError(f"{origin.where('hooks', event)}: hooks.{event} must be [[hooks.{event}]] tables "
                              f"with command = \"...\", not {entries!r}")
        for entry in entries:
            if not isinstance(entry, dict) or not isinstance(entry.get("command"), str):
                raise ConfigError(f"{origin.where('hooks', event)}: each [[hooks.{event}]] needs command = \"...\"")
            where = origin.where(f"hooks.{event}", "timeout")
            timeout = _convert("float", entry.get("timeout", default_timeout), f"hooks.{event}.timeout", where)
            matcher = entry.get("matcher", "")
            if not isinstance(matcher, str):
                raise ConfigError(f"{origin.where(f'hooks.{event}', 'matcher')}: matcher must be a string")
            specs.append(HookSpec(event=event, command=entry["command"], matcher=matcher, timeout=timeout))
    return tuple(specs)


def _parse_keys(raw: Any, origin: _Origin) -> dict[str, str]:
    """`[keys]`: binding id → key (with fallbacks, comma separated), e.g. "app.inspector" = "f4"."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{origin.where('', 'keys')}: keys must be a table: [keys] \"app.help\" = \"f1\"")
    for binding, keys in raw.items():
        if not isinstance(keys, str) or not keys.strip():
            raise ConfigError(f"{origin.where('keys', binding)}: keys.{binding} = {keys!r} is not a key name "
                              f"(e.g. \"f4\" or \"ctrl+b,alt+b\")")
    return dict(raw)


def _parse_permissions(raw: Any, origin: _Origin) -> dict[str, tuple[str, ...]]:
    """`[permissions]`: allow / ask / deny lists of rules in Claude Code's syntax (app.engine.permissions)."""
    from app.engine.permissions import RuleError, parse_rule

    if not isinstance(raw, dict):
        raise ConfigError(f"{origin.where('', 'permissions')}: permissions must be a table: [permissions] "
                          f"allow = [\"Bash(npm test:*)\"]")
    parsed: dict[str, tuple[str, ...]] = {}
    for kind, rules in raw.items():
        where = origin.where("permissions", kind)
        if kind not in ("allow", "ask", "deny"):
            raise ConfigError(f"{where}: unknown key {kind!r} in [permissions] (known: allow, ask, deny)")
        if not isinstance(rules, list):
            raise ConfigError(f"{where}: permissions.{kind} must be a list of rules, e.g. [\"Bash(npm test:*)\"]")
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
    """Build Settings from defaults, the config file (if present), the environment and flags."""
    env = os.environ if env is None else env
    path = config_path() if path is None else path
    raw: dict = {}
    origin = _Origin(None, "")
    if path.exists():
        raw, text = _read_toml(path)
        origin = _Origin(path, text)

    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for key, value in raw.items():
        if key in ("routes", "hooks", "keys", "permissions"):
            continue
        if key not in SETTING_FIELDS:
            raise ConfigError(f"{origin.where('', key)}: unknown key {key!r} = {_shown(value)} "
                              f"(see config.example.toml for every key)")
        meta = SETTING_FIELDS[key].metadata
        where = origin.where("", key)
        values[key] = _convert(meta["kind"], value, key, where, meta["choices"])
        sources[key] = where

    for key, spec in SETTING_FIELDS.items():
        env_name = f"BULKHEAD_{key.upper()}"
        if env_name in env:
            meta = spec.metadata
            values[key] = _convert(meta["kind"], env[env_name], key, f"environment {env_name}", meta["choices"])
            sources[key] = f"env {env_name}"

    for key, value in (flags or {}).items():
        if value is None:
            continue
        if key not in SETTING_FIELDS:
            raise ConfigError(f"unknown setting {key!r}")
        meta = SETTING_FIELDS[key].metadata
        values[key] = _convert(meta["kind"], value, key, f"--{key.replace('_', '-')}", meta["choices"])
        sources[key] = "flag"

    routes = _parse_routes(raw.get("routes", {}), origin)
    hooks = _parse_hooks(raw.get("hooks", {}), origin, values.get("hook_timeout", 60.0))
    keys = _parse_keys(raw.get("keys", {}), origin)
    permissions = _parse_permissions(raw.get("permissions", {}), origin)
    settings = Settings(routes=routes, hooks=hooks, keys=keys, permissions=permissions, sources=sources,
                        config_file=path if path.exists() else None, **values)
    for key in ("default_route", "compact_model"):
        name = getattr(settings, key)
        if name is not None and name not in routes:
            known = ", ".join(sorted(routes)) or "none"
            where = sources.get(key, "config")
            raise ConfigError(f"{where}: {key} = {name!r} names no route (configured routes: {known})")
    return settings
