"""The adapter for a route: `make_provider(route, settings, api_key)`.

Imports only the adapter the route needs (each SDK is slow to import). A kind of provider that lives above
this package registers itself (`register_provider`): the embedded lab — the `lab` provider with no
`base_url` of its own, whose server is in `app.lab` — is registered by the engine (`app.engine.lab_provider`),
so the providers never start the lab themselves.
"""

from __future__ import annotations

from collections.abc import Callable

from app.config import Route, Settings
from app.providers.base import Provider

ProviderBuilder = Callable[[Route, Settings, "str | None"], Provider]
_REGISTERED: dict[str, ProviderBuilder] = {}


def register_provider(kind: str, builder: ProviderBuilder) -> None:
    """Make routes of `kind` with `builder` from now on (the last registration of a kind wins)."""
    _REGISTERED[kind] = builder


def make_provider(route: Route, settings: Settings, api_key: str | None = None) -> Provider:
    """The adapter for `route`. Imports only the module needed (each SDK is slow to import)."""
    registered = _REGISTERED.get(route.provider)
    if registered is not None:
        return registered(route, settings, api_key)
    if route.provider == "anthropic":
        from app.providers.anthropic import AnthropicProvider

        return AnthropicProvider(route, settings, api_key)
    if route.provider == "openai":
        from app.providers.openai import openai_api

        if openai_api(route) == "responses":
            from app.providers.responses import ResponsesProvider

            return ResponsesProvider(route, settings, api_key)
        from app.providers.openai import OpenAIProvider

        return OpenAIProvider(route, settings, api_key)
    if route.provider == "bedrock":
        from app.providers.bedrock import BedrockProvider

        return BedrockProvider(route, settings, api_key)
    if route.provider == "lab":  # a running `bulkhead lab` at the route's base_url (no embedded one here)
        from app.providers.lab import LabProvider

        return LabProvider(route, settings, api_key)
    raise ValueError(f"unknown provider {route.provider!r}")
