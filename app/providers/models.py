"""What the /model picker lists: each route's models, with the window and output cap for each.

    choice_for(route, ListedModel("claude-opus-5", …)) → ModelChoice(route="work", window=1_000_000, …)

Listing a route's models (which classifies a failure, an engine concern) is `app/engine/model_list.py`.

Windows and output caps come from `catalog.py`, or from the endpoint when it says (vLLM's
`max_model_len`); a route's own `context_window` / `max_output_tokens` win for its configured model.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.config import Route
from app.providers.base import ListedModel
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
    return ModelChoice(
        route=route.name,
        model=listed.id,
        name=listed.name,
        window=window,
        max_output=output,
        limits_from=source,
        note=listed.note,
    )
