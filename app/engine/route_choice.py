"""Which route a run uses and with which key: a configured route, an implicit one for a key in the
environment (or keyring), or the built-in lab model; and the model /model or --model chose for it.

    choice = choose_route(settings, "work")            # RouteChoice, or a ConfigError that says what to do
    choice = with_model(choice, state, "gpt-5.5")      # the same route with this run's model, said in a notice

A leaf of the engine: `bootstrap` (opening an engine) and `fallback` (the next route of a chain) both use it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from app.config import ConfigError, Route, Settings
from app.secrets import get_api_key
from app.state import State

IMPLICIT_MODELS = {"anthropic": "claude-sonnet-5-5", "openai": "gpt-5.5"}
LAB_NOTICE = (
    "No provider is configured, so bulkhead is using its built-in lab model (offline, no key; it "
    "answers from what it receives — try `!read README.md` or `!big 40KB`). To use a real model, "
    "export ANTHROPIC_API_KEY or OPENAI_API_KEY, or add a route: `bulkhead config init`."
)
_LOCAL_HOSTS = ("localhost", "127.0.0.1", "[::1]", "0.0.0.0")


@dataclass(frozen=True)
class RouteChoice:
    route: Route
    api_key: str | None
    notices: tuple[str, ...] = ()
    lab: bool = False
    session_notices: tuple[str, ...] = ()  # about the session opened: its folder, a lease, a fork, its route


def _is_local(url: str | None) -> bool:
    return url is not None and any(host in url for host in _LOCAL_HOSTS)


def choose_route(settings: Settings, name: str | None = None) -> RouteChoice:
    """The route to use and its key, or a ConfigError that says what to do (no key; a CA bundle that
    does not exist — said here, before the first request)."""
    from app.ca_bundle import CaBundleMissing, check_route

    choice = _choose_route(settings, name)
    try:
        check_route(choice.route, settings)
    except CaBundleMissing as exc:
        raise ConfigError(str(exc)) from None
    from app.providers.wire import has_userinfo

    if has_userinfo(choice.route.base_url):
        choice = replace(
            choice,
            notices=(
                *choice.notices,
                f"route {choice.route.name}: the user:password in base_url is not sent — it would replace "
                f"your API key in the Authorization header; the key authenticates (remove it from base_url)",
            ),
        )
    return choice


def _choose_route(settings: Settings, name: str | None = None) -> RouteChoice:
    if settings.routes:
        route = settings.route(name)
        key = None
        if route.provider in ("anthropic", "openai"):
            key = get_api_key(route.provider, route.api_key_env).value
            if not key and not _is_local(route.base_url):
                variable = route.api_key_env or (
                    "ANTHROPIC_API_KEY" if route.provider == "anthropic" else "OPENAI_API_KEY"
                )
                raise ConfigError(
                    f"routes.{route.name} needs an API key: run `bulkhead auth set {route.provider}` "
                    f"or export {variable}"
                )
        return RouteChoice(route, key, lab=route.provider == "lab")
    if name and name != "lab":
        raise ConfigError(f"no route named {name!r}: no routes are configured (`bulkhead config init`)")
    if name != "lab":
        for provider, model in IMPLICIT_MODELS.items():
            lookup = get_api_key(provider)
            if lookup.value:
                note = (
                    f"No route configured: using {provider} ({model}) with the key from {lookup.source}. "
                    f"Add a route in config.toml to choose the model or a gateway."
                )
                return RouteChoice(
                    Route(name=provider, provider=provider, model=model), lookup.value, (note,)
                )
    return RouteChoice(Route(name="lab", provider="lab", model="lab-1"), None, (LAB_NOTICE,), lab=True)


def with_model(choice: RouteChoice, state: State, model: str | None = None) -> RouteChoice:
    """The route with the model for this run: `model` (--model) if given, else the one /model chose for
    this route (state.toml), else the configured one — with a notice whenever it is not the configured one."""
    route = choice.route
    remembered = state.chosen_model(route.name)
    if model and model not in (route.model, remembered):
        note = f"route {route.name}: model {model} for this run (--model; config.toml says {route.model})"
    elif (model or remembered) and (model or remembered) != route.model:
        model = model or remembered
        note = (
            f"route {route.name}: model {model}, chosen with /model (config.toml says {route.model}; "
            f"/model changes it again)"
        )
    else:
        return choice
    assert model is not None  # both branches above chose one
    return replace(choice, route=replace(route, model=model), notices=(*choice.notices, note))
