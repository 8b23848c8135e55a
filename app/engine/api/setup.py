"""Setting a front end up, through the front door: which route a run uses and with which key
(`bulkhead doctor`, `mcp`, `probe`), and the engine itself for the command lines that still drive it
directly (`-p`, `probe --content`).

    choice = choose_route(settings, args.route)       # a RouteChoice, or a ConfigError that says what to do
    choice.route, choice.api_key, choice.notices, choice.lab
    choice = with_model(choice, state, "gpt-5.5")     # the same route with another model (`/model`, --model)

    engine, choice, resumed = open_engine(settings, route_name=…, resume=…, what="bulkhead -p")

A front end that only needs a session opens it with `app.engine.api.open_session` (a `SessionApi`);
`open_engine` hands over the `Engine` and is here for `-p` and `probe --content` until they move to it.
"""

from __future__ import annotations

from app.engine.bootstrap import RouteChoice, choose_route, open_engine, with_model

__all__ = ["RouteChoice", "choose_route", "open_engine", "with_model"]
