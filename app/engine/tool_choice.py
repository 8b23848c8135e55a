"""Which built-in tools a request declares: `tools = [...]` in config.toml, per route or for all routes.

    specs = offered_tools(settings, route)     # the registry's specs, in its order, filtered by name

A route's own `tools` wins over the global one; absent both, every built-in tool is offered; `[]` offers
none. Fewer tools means a smaller request floor, and fewer fixed texts for a content-inspecting gateway
to judge. A model that calls a built-in tool the route does not offer gets an error result, never a run.
"""

from __future__ import annotations

from app.config import Route, Settings
from app.providers.base import ToolSpec
from app.tools.registry import TOOL_SPECS


def chosen_names(settings: Settings, route: Route) -> tuple[str, ...] | None:
    """The names configured for `route` (its own, else the global list), or None for every tool."""
    return route.tools if route.tools is not None else settings.tools


def offered_tools(settings: Settings, route: Route) -> tuple[ToolSpec, ...]:
    names = chosen_names(settings, route)
    if names is None:
        return TOOL_SPECS
    return tuple(spec for spec in TOOL_SPECS if spec.name in names)


def not_offered(name: str, settings: Settings, route: Route) -> str | None:
    """The error result for a call to a built-in tool this route does not offer, or None when it may run."""
    names = chosen_names(settings, route)
    if names is None or name in names or name not in {spec.name for spec in TOOL_SPECS}:
        return None
    offered = ", ".join(names) or "none"
    return (
        f"The tool {name} is not offered on this route (tools = [{offered}] in config.toml); "
        f"ask the user to add it if you need it."
    )
