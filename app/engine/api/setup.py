"""Setting a front end up, through the front door: which route a run uses and with which key
(`bulkhead doctor`, `mcp`, `probe`).

    choice = choose_route(settings, args.route)       # a RouteChoice, or a ConfigError that says what to do
    choice.route, choice.api_key, choice.notices, choice.lab
    choice = with_model(choice, state, "gpt-5.5")     # the same route with another model (`/model`, --model)

A session is opened with `app.engine.api.open_session` (a `SessionApi`): no front end holds the `Engine`.
"""

from __future__ import annotations

from app.engine.route_choice import RouteChoice, choose_route, with_model

__all__ = ["RouteChoice", "choose_route", "with_model"]
