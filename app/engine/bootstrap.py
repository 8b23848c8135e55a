"""Opening an engine: pick the route (or the embedded lab), find the key, open or resume the session.

With no route configured: a key in the environment (or keyring) gives an implicit route
for that provider; with no key at all, bulkhead runs its built-in lab model in-process
and says so — a newcomer gets a working client with no key and no network.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from pathlib import Path

from app.config import ConfigError, Route, Settings
from app.engine.session import Session
from app.providers.base import make_provider
from app.secrets import get_api_key
from app.state import State
from app.store import Store

IMPLICIT_MODELS = {"anthropic": "claude-sonnet-5-5", "openai": "gpt-5.5"}
LAB_NOTICE = ("No provider is configured, so bulkhead is using its built-in lab model (offline, no key; it "
              "answers from what it receives — try `!read README.md` or `!big 40KB`). To use a real model, "
              "export ANTHROPIC_API_KEY or OPENAI_API_KEY, or add a route: `bulkhead config init`.")
_LOCAL_HOSTS = ("localhost", "127.0.0.1", "[::1]", "0.0.0.0")


@dataclass(frozen=True)
class RouteChoice:
    route: Route
    api_key: str | None
    notices: tuple[str, ...] = ()
    lab: bool = False


def _is_local(url: str | None) -> bool:
    return bool(url) and any(host in url for host in _LOCAL_HOSTS)


def choose_route(settings: Settings, name: str | None = None) -> RouteChoice:
    """The route to use and its key, or a ConfigError that says what to do."""
    if settings.routes:
        route = settings.route(name)
        key = None
        if route.provider in ("anthropic", "openai"):
            key = get_api_key(route.provider, route.api_key_env).value
            if not key and not _is_local(route.base_url):
                variable = route.api_key_env or ("ANTHROPIC_API_KEY" if route.provider == "anthropic"
                                                 else "OPENAI_API_KEY")
                raise ConfigError(f"routes.{route.name} needs an API key: run `bulkhead auth set {route.provider}` "
                                  f"or export {variable}")
        return RouteChoice(route, key, lab=route.provider == "lab")
    if name and name != "lab":
        raise ConfigError(f"no route named {name!r}: no routes are configured (`bulkhead config init`)")
    if name != "lab":
        for provider, model in IMPLICIT_MODELS.items():
            lookup = get_api_key(provider)
            if lookup.value:
                note = (f"No route configured: using {provider} ({model}) with the key from {lookup.source}. "
                        f"Add a route in config.toml to choose the model or a gateway.")
                return RouteChoice(Route(name=provider, provider=provider, model=model), lookup.value, (note,))
    return RouteChoice(Route(name="lab", provider="lab", model="lab-1"), None, (LAB_NOTICE,), lab=True)


def open_session(store: Store, route: Route, *, resume: str | None, continue_: bool, workspace: Path) -> tuple[Session, bool]:
    """(session, resumed): the one asked for, the latest (`--continue`), or a new one."""
    if resume:
        return Session.load(store, resume), True
    if continue_:
        latest = Session.latest(store)
        if latest is not None:
            return latest, True
    return Session.create(store, route=route.name, provider=route.provider, model=route.model,
                          workspace=str(workspace)), False


def with_model(choice: RouteChoice, state: State, model: str | None = None) -> RouteChoice:
    """The route with the model for this run: `model` (--model) if given, else the one /model chose for
    this route (state.toml), else the configured one — with a notice whenever it is not the configured one."""
    route = choice.route
    remembered = state.chosen_model(route.name)
    if model and model not in (route.model, remembered):
        note = f"route {route.name}: model {model} for this run (--model; config.toml says {route.model})"
    elif (model or remembered) and (model or remembered) != route.model:
        model = model or remembered
        note = (f"route {route.name}: model {model}, chosen with /model (config.toml says {route.model}; "
                f"/model changes it again)")
    else:
        return choice
    return replace(choice, route=replace(route, model=model), notices=(*choice.notices, note))


def open_engine(settings: Settings, *, route_name: str | None = None, resume: str | None = None,
                continue_: bool = False, workspace: Path | None = None,
                approver: Callable[[str, dict, str], Awaitable[bool]] | None = None,
                store: Store | None = None, state: State | None = None, model: str | None = None):
    """An Engine ready for `start()`, plus the route choice (for the notices to show). `model`
    (`--model`) overrides the route's model for this run."""
    from app.engine.turn import Engine

    store = store or Store()
    state = state or State()
    workspace = Path(workspace or settings.workspace or os.getcwd()).expanduser().resolve()
    if (resume or continue_) and route_name is None:
        latest = store.find_session(resume) if resume else store.latest_session()  # the row is enough here
        if latest is not None and (latest.route in settings.routes or not settings.routes):
            route_name = latest.route or None
            if not settings.routes and route_name not in (None, "lab", *IMPLICIT_MODELS):
                route_name = None
    choice = with_model(choose_route(settings, route_name), state, model)
    session, resumed = open_session(store, choice.route, resume=resume, continue_=continue_, workspace=workspace)
    if (session.route, session.provider, session.model) != (choice.route.name, choice.route.provider,
                                                              choice.route.model):
        session.set_route(choice.route.name, choice.route.provider, choice.route.model)
    provider = make_provider(choice.route, settings, choice.api_key)
    engine = Engine(settings, session, choice.route, provider, state=state, approver=approver, workspace=workspace)
    try:
        state.set("last_route", choice.route.name)
    except OSError:
        pass
    return engine, choice, resumed
