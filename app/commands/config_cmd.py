"""`bulkhead config init|path|show|check`."""

from __future__ import annotations

import sys
from dataclasses import fields

from app.config import (
    SETTING_FIELDS,
    ConfigError,
    Settings,
    config_path,
    data_home,
    example_config_path,
    hide_url_password,
    load_settings,
)
from app.fsutil import atomic_write
from app.sizes import format_size

_FLAG_SETTINGS = ("max_payload", "context_window", "approval", "workspace")


def _flags(args) -> dict:
    """The global flags that are settings (`bulkhead --max-payload 1MB config show`)."""
    return {key: getattr(args, key, None) for key in _FLAG_SETTINGS} if args is not None else {}


def run(args) -> int:
    if args.action in ("show", "check"):
        return {"show": show, "check": check}[args.action](args)
    return {"init": init, "path": path}[args.action]()


def init() -> int:
    target = config_path()
    empty = target.is_file() and target.stat().st_size == 0  # nothing in it to lose
    if target.exists() and not empty:
        print(f"bulkhead: {target} already exists; edit it, or move it away to start over", file=sys.stderr)
        return 1
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(
        target, example_config_path().read_text(encoding="utf-8"), 0o600
    )  # an empty file is replaced
    print(f"wrote {target}\nuncomment a [routes.NAME] table, then run `bulkhead config check`")
    return 0


def path() -> int:
    from app.state import state_path
    from app.store import database_path

    target = config_path()
    if not target.exists():
        hint = "  (not created yet: bulkhead config init)"
    elif target.is_file() and target.stat().st_size == 0:
        hint = "  (empty: every default; bulkhead config init writes a commented starter)"
    else:
        hint = ""
    print(f"config   {target}{hint}")
    print(f"state    {state_path()}")
    print(f"database {database_path()}")
    print(f"sessions {data_home() / 'sessions'}")
    return 0


def _describe(name: str, value, kind: str) -> str:
    if value is None:
        return "—"
    if kind.startswith("size"):
        return f"{format_size(value)} ({value} bytes)"
    if isinstance(value, tuple):
        return ", ".join(value) or "—"
    return str(value)


def show(args=None) -> int:
    settings = load_settings(flags=_flags(args))
    print(f"# config file: {settings.config_file or 'none (defaults)'}")
    for field_ in fields(Settings):
        if field_.name not in SETTING_FIELDS:
            continue
        value = getattr(settings, field_.name)
        source = settings.sources.get(field_.name, "default")
        print(f"{field_.name:34} {_describe(field_.name, value, field_.metadata['kind']):28} [{source}]")
    print()
    if not settings.routes:
        print("routes: none — bulkhead will use the built-in lab model")
    for route in settings.routes.values():
        marker = " (default)" if route.name == settings.default_route else ""
        print(f"[routes.{route.name}]{marker}")
        for field_ in fields(route):
            value = getattr(route, field_.name)
            if field_.name != "name" and value is not None:
                shown = format_size(value) if field_.name == "max_payload" else value
                if isinstance(value, tuple):  # tools, fallback: as written in config.toml
                    shown = "[" + ", ".join(f'"{item}"' for item in value) + "]"
                if field_.name in ("base_url", "endpoint_url"):
                    shown = hide_url_password(str(value))
                print(f"  {field_.name} = {shown}")
    for hook in settings.hooks:
        print(f"hook {hook.event} matcher={hook.matcher or '*'} timeout={hook.timeout:g}s: {hook.command}")
    for spec in settings.mcp_servers.values():  # names of env and headers only: their values may be secrets
        state = "" if spec.enabled else " (enabled = false)"
        print(
            f"mcp server {spec.name}{state}: {spec.describe()}"
            + (f" — {spec.problem}" if spec.problem else "")
        )
    _show_gateway_profiles()
    return 0


def _show_gateway_profiles() -> None:
    """What each endpoint has shown (state.toml, learned or imported): one line each."""
    from app.gateway_profile import all_profiles, profile_summary
    from app.state import State
    from app.textsafe import display_line

    try:
        profiles = all_profiles(State())
    except OSError:
        return
    if not profiles:
        return
    print()
    print("gateway profiles (state.toml; `bulkhead gateway show` gives the details):")
    for profile in profiles:
        print(f"  {display_line(profile.endpoint)}: {display_line(profile_summary(profile))}")


def native_lines(settings, route) -> list[str]:
    """Which OpenAI API a route speaks, and what context_engine = "provider" does on it."""
    from app.providers.openai import openai_api

    lines = []
    api = openai_api(route) if route.provider == "openai" else None
    if api:
        why = f"routes.{route.name}.api" if route.api else "the default for this base_url"
        lines.append(
            f"speaks the OpenAI {'Responses' if api == 'responses' else 'Chat Completions'} API ({why})"
        )
    if settings.context_engine != "provider":
        return lines
    if route.provider in ("anthropic", "lab"):
        lines.append(
            "context_engine = provider: Anthropic server-side compaction and clear_tool_uses edits, "
            "mirrored into the local view"
        )
    elif api == "responses":
        lines.append(
            "context_engine = provider: OpenAI Responses compaction (compact_threshold, /responses/compact), "
            "mirrored into the local view"
        )
    elif api == "chat":
        lines.append(
            "context_engine = provider: none — Chat Completions has no native compaction; the local "
            'pipeline compacts (set api = "responses" if the server speaks it)'
        )
    else:
        lines.append(
            "context_engine = provider: none — Bedrock Converse has no native compaction; the local "
            "pipeline compacts"
        )
    return lines


def ca_bundle_line(settings, route) -> tuple[bool, str]:
    """Which CA bundle the route trusts and where that came from (`app.ca_bundle`); "" for the lab."""
    from app.ca_bundle import DEFAULT_STORE, SDK_NAMES, for_route

    if route.provider not in SDK_NAMES:
        return True, ""
    bundle = for_route(route, settings)
    sdk = SDK_NAMES[route.provider]
    if bundle is None:
        return True, (
            f"CA bundle: {sdk}'s default ({DEFAULT_STORE[route.provider]}); behind a TLS-inspecting proxy set ca_bundle "
            "in config.toml to its CA"
        )
    problem = bundle.problem(route.name, route.provider)
    if problem:
        return False, problem.split(": ", 1)[1]
    kind = "folder" if bundle.is_dir else "file"
    return True, f"CA bundle {bundle.path} ({kind}, from {bundle.source}), handed to {sdk} as verify="


def check(args=None) -> int:
    from app.config import fallback_chain
    from app.secrets import get_api_key

    try:
        settings = load_settings(flags=_flags(args))
    except ConfigError as exc:
        for problem in exc.problems:
            print(f"✖ {problem}")
        if len(exc.problems) > 1:
            print(f"{len(exc.problems)} problems: fix them all, then run `bulkhead config check` again")
        return 2
    print(f"✓ {settings.config_file or 'no config file'}: valid")
    problems = 0
    for route in settings.routes.values():
        if route.provider in ("anthropic", "openai"):
            lookup = get_api_key(route.provider, route.api_key_env)
            local = bool(
                route.base_url and any(h in route.base_url for h in ("localhost", "127.0.0.1", "[::1]"))
            )
            if lookup.value:
                print(f"✓ routes.{route.name}: key from {lookup.source}")
            elif local:
                print(f"✓ routes.{route.name}: local endpoint, no key needed")
            else:
                problems += 1
                name = route.api_key_env or (
                    "ANTHROPIC_API_KEY" if route.provider == "anthropic" else "OPENAI_API_KEY"
                )
                print(
                    f"✖ routes.{route.name}: no API key — run `bulkhead auth set {route.provider}` or export {name}"
                )
        elif route.provider == "bedrock":
            print(
                f"• routes.{route.name}: AWS credentials come from the AWS chain"
                f"{f' (profile {route.profile})' if route.profile else ''}; region {route.region or 'from AWS config'}"
            )
        else:
            print(f"✓ routes.{route.name}: lab model, no key needed")
        for line in native_lines(settings, route):
            print(f"• routes.{route.name}: {line}")
        ok, line = ca_bundle_line(settings, route)
        if line:
            problems += not ok
            print(f"{'✓' if ok else '✖'} routes.{route.name}: {line}")
        chain = fallback_chain(settings, route.name)
        if len(chain) > 1:
            print(
                f"• routes.{route.name}: fallback chain {' → '.join(chain)} (moves on after "
                f"{', '.join(settings.fallback_on) or 'nothing'}; "
                f"{'the route that answered stays' if settings.fallback_sticky else 'each turn starts here'})"
            )
    for rule in settings.classifier_rules:
        said = ", ".join(
            f"{k} {v!r}"
            for k, v in (
                ("status", list(rule.status) or None),
                ("header", rule.header),
                ("phrase", rule.phrase),
            )
            if v
        )
        print(f"✓ classifier rule {rule.id} ({rule.where}): {said} → {rule.kind} (priority {rule.priority})")
    from app.network_env import network_lines

    for network in network_lines():
        problems += not network.ok
        print(f"{'•' if network.ok else '✖'} network: {network.text}")
    return 1 if problems else 0
