"""The /model picker's listing of a route's models: one call per route that never raises.

    found = await list_route_models(route, settings, api_key, timeout=20)
    found.models  → (ModelChoice(route="work", model="claude-opus-5", window=1_000_000, …), …)
    found.error   → "auth: 401 … — check the key" when the endpoint could not say

It lives in the engine (not in `app/providers/models.py`, which holds the choices) because a failure is named by
the engine's classifier: providers never import the engine.
"""

from __future__ import annotations

import asyncio

from app.config import Route, Settings
from app.engine.failures import classify
from app.providers.base import ListedModel, ProviderError
from app.providers.factory import make_provider
from app.providers.models import RouteModels, choice_for


def describe_failure(error: BaseException) -> str:
    """One line for the picker: the failure's kind and reason, in the provider's words where it gave some."""
    if isinstance(error, ProviderError):
        failure = classify(error)
        return f"{failure.kind}: {failure.reason}"
    return f"{type(error).__name__}: {error}"


async def list_route_models(
    route: Route, settings: Settings, api_key: str | None, *, timeout: float
) -> RouteModels:
    """The route's models (its configured one always among them, first), or the error that says why not."""
    provider = make_provider(route, settings, api_key)
    error = ""
    listed: list[ListedModel] = []
    try:
        listed = await asyncio.wait_for(provider.list_models(), timeout)
    except TimeoutError:
        error = f"no answer in {timeout:g} s (model_list_timeout)"
    except NotImplementedError as exc:
        error = str(exc)
    except Exception as exc:  # one route's failure is a line in the picker, not a crash
        error = describe_failure(exc)
    finally:
        try:
            await provider.aclose()
        except Exception:  # closing is best effort
            pass
    ids = {model.id for model in listed}
    if route.model not in ids:  # the configured model is always offered, listed or not
        listed.insert(0, ListedModel(route.model, "", note="" if error or not listed else "not in the list"))
    else:
        listed.sort(key=lambda model: model.id != route.model)
    return RouteModels(route, tuple(choice_for(route, model) for model in listed), error)
