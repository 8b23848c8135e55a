"""What the sender tells the classifier about where a failed request went (issue 38 items 3–5).

The classifier reads the answer; only the sender knows the URL, the setting that names it and the proxy
the SDK took from the environment for it — so a refused connection can say "nothing listens at
127.0.0.1:9 (base_url of [routes.local])" and a 407 can name HTTP_PROXY when the upstream is http://.
It also counts the JSON values of a body a gateway refused with a 400 (ModSecurity's SecArgumentsLimit).
"""

from __future__ import annotations

from typing import Any

from app.engine.failure_case import Target
from app.network_env import proxy_for

VALUE_COUNT_CAP = 1_000_000  # stop counting past this many values: the answer is "very many" already


def target_for(url: str, provider: str, route: Any = None, route_name: str = "") -> Target:
    """The request's URL, what names it in the user's settings, and the proxy in effect for it."""
    return Target(url=url, setting=_setting(provider, route, route_name), proxy=proxy_for(url, provider))


def _setting(provider: str, route: Any, route_name: str) -> str:
    table = f"[routes.{route_name}]" if route_name else "the route"
    key = "endpoint_url" if provider == "bedrock" else "base_url"
    if route is not None and getattr(route, key, None):
        return f"{key} of {table}"
    if provider == "lab":
        return "the built-in lab model"
    return f"the provider's default address ({key} of {table} is not set)"


def count_values(body: Any) -> int:
    """How many scalar values (leaves) a JSON body holds — what a WAF counts as its arguments."""
    count = 0
    stack = [body]
    while stack and count < VALUE_COUNT_CAP:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
        else:
            count += 1
    return count
