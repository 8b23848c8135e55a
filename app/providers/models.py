"""What the /model picker lists: each route's models, with the window and output cap for each.

    found = await list_route_models(route, settings, api_key, timeout=20)   # never raises
    found.models  → (ModelChoice(route="work", model="claude-opus-5", window=1_000_000, …), …)
    found.error   → "auth: 401 … — check the key" when the endpoint could not say

Windows and output caps come from `catalog.py`, or from the endpoint when it says (vLLM's
`max_model_len`); a route's own `context_window` / `max_output_tokens` win for its configured model.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from app.config import Route, Settings
from app.providers.base import ListedModel, ProviderError, make_provider
from app.providers.catalog import model_limits


@dataclass(frozen=True)
class ModelChoice:
    route: str
    model: str
    name: str = ""
    window: int = 0
    max_output: int = 0
    limits_from: str = "catalog"  # catalog | endpoint | route | default
    note: str = ""


@dataclass(frozen=True)
class RouteModels:
    route: Route
    models: tuple[ModelChoice, ...] = ()
    error: str = ""


def choice_for(route: Route, listed: ListedModel) -> ModelChoice:
    limits = model_limits(route.provider, listed.id)
    window, output, source = limits.context_window, limits.max_output_tokens, limits.source
    if listed.window:
        window, source = listed.window, "endpoint"
    if listed.id == route.model and (route.context_window or route.max_output_tokens):
        window = route.context_window or window
        output = route.max_output_tokens or output
        source = "route"
    return ModelChoice(route=route.name, model=listed.id, name=listed.name, window=window, max_output=output,
                       limits_from=source, note=listed.note)


def describe_failure(error: BaseException) -> str:
    """One line for the picker: the failure's kind and reason, in the provider's words where it gave some."""
    if isinstance(error, ProviderError):
        from app.engine.failures import classify

        failure = classify(error)
        return f"{failure.kind}: {failure.reason}"
    return f"{type(error).__name__}: {error}"


async def list_route_models(route: Route, settings: Settings, api_key: str | None, *,
                            timeout: float) -> RouteModels:
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
    except Exception as exc:  # noqa: BLE001 - one route's failure is a line in the picker, not a crash
        error = describe_failure(exc)
    finally:
        try:
            await provider.aclose()
        except Exception:  # noqa: BLE001 - closing is best effort
            pass
    ids = {model.id for model in listed}
    if route.model not in ids:  # the configured model is always offered, listed or not
        listed.insert(0, ListedModel(route.model, "", note="" if error or not listed else "not in the list"))
    else:
        listed.sort(key=lambda model: model.id != route.model)
    return RouteModels(route, tuple(choice_for(route, model) for model in listed), error)
