"""`bulkhead doctor`: walk the path a request of a route takes and say where it breaks.

    steps = walk(settings, choice)            # Step per line: route, proxy, dns, tcp, tunnel, tls, probe,
                                              # floor, profile — ok / fail (with what to do) / skip / info

The network steps stop at the first break (the ones after it are "not tried"). The probe is a request that
costs nothing, through the same SDK and client as chat (count-tokens, or `max_tokens: 0` where there is no
counting endpoint); then the route's floor — system prompt, instructions, tools, headers — goes on its own
and is set against the cap bulkhead knows; last, what the endpoint has shown before (its profile).
"""

from __future__ import annotations

import asyncio
import os
import socket
import ssl
from collections.abc import Callable, Mapping
from typing import Any

from app.doctor.network import (
    Proxy,
    Step,
    Target,
    dns_step,
    proxy_for,
    target_of,
    tcp_step,
    tls_step,
    tunnel_step,
)
from app.sizes import format_size

DEFAULT_URLS = {
    "anthropic": ("https://api.anthropic.com", "the Anthropic default endpoint (no base_url)"),
    "openai": ("https://api.openai.com/v1", "the OpenAI default endpoint (no base_url)"),
}
NOT_TRIED = "not tried: the path breaks above"


def route_target(route: Any) -> Target | None:
    """Where the route's requests go, and the setting that says so; None for the in-process lab."""
    if route.provider == "bedrock":
        if route.endpoint_url:
            return target_of(route.endpoint_url, f"routes.{route.name}.endpoint_url")
        region = (
            route.region
            or os.environ.get("AWS_REGION")
            or os.environ.get("AWS_DEFAULT_REGION")
            or "us-east-1"
        )
        return target_of(
            f"https://bedrock-runtime.{region}.amazonaws.com", f"routes.{route.name}.region ({region})"
        )
    if route.base_url:
        return target_of(route.base_url, f"routes.{route.name}.base_url")
    if route.provider in DEFAULT_URLS:
        url, setting = DEFAULT_URLS[route.provider]
        return target_of(url, setting)
    return None


def verify_context(route: Any, settings: Any) -> tuple[ssl.SSLContext, str, str]:
    """The TLS context the route's SDK verifies with, where its trust comes from, and what its SDK reads."""
    from app.ca_bundle import DEFAULT_STORE, botocore_verify, for_route, httpx_verify, sdk_reads

    bundle = for_route(route, settings)
    source = (
        f"{bundle.source} ({bundle.path})"
        if bundle is not None
        else DEFAULT_STORE.get(route.provider, "the system's trust store")
    )
    if route.provider == "bedrock":
        path = botocore_verify(route, settings)
        if path is None:
            import certifi

            path = certifi.where()
        return ssl.create_default_context(cafile=path), source, sdk_reads("bedrock")
    verify = httpx_verify(route, settings)
    if verify is True:
        try:
            from httpx2 import create_ssl_context

            context = create_ssl_context(True)
        except ImportError:
            context = ssl.create_default_context()
    else:
        context = verify
    return context, source, sdk_reads(route.provider)


def _connector(target: Target, proxy: Proxy | None, timeout: float) -> Callable[[], socket.socket]:
    """A fresh socket at the point TLS starts: the target itself, or a tunnel through the proxy."""

    def connect() -> socket.socket:
        if proxy is None:
            return socket.create_connection((target.host, target.port), timeout=timeout)
        sock = socket.create_connection((proxy.host, proxy.port), timeout=timeout)
        step = tunnel_step(sock, proxy, target)
        if step.status != "ok":
            sock.close()
            raise OSError(step.text)
        return sock

    return connect


def network_steps(route: Any, settings: Any, env: Mapping[str, str] | None = None) -> list[Step]:
    """Proxy, DNS, TCP, the proxy's tunnel and TLS, stopping at the first break."""
    target = route_target(route)
    if target is None:
        return [Step("network", "info", "the built-in lab runs inside bulkhead: no network on the way")]
    timeout = float(getattr(settings, "connect_timeout", 10.0))
    proxy, why = proxy_for(target, env)
    steps = [Step("proxy", "info", why)]
    hop_host, hop_port = (proxy.host, proxy.port) if proxy else (target.host, target.port)
    what = f"{proxy.variable} ({proxy.shown})" if proxy else target.setting
    dns, _addresses = dns_step(hop_host, hop_port, what)
    steps.append(dns)
    if dns.status != "ok":
        return steps
    tcp, sock = tcp_step(hop_host, hop_port, what, timeout)
    steps.append(tcp)
    if sock is None:
        return steps
    with sock:
        if proxy is not None and target.scheme == "https":
            tunnel = tunnel_step(sock, proxy, target)
            steps.append(tunnel)
            if tunnel.status != "ok":
                return steps
    if target.scheme != "https":
        steps.append(Step("tls", "info", f"plain HTTP to {target.host}:{target.port}: no TLS on this hop"))
        return steps
    try:
        context, source, hint = verify_context(route, settings)
    except Exception as exc:  # a CA bundle that does not exist: said as the step's failure
        steps.append(Step("tls", "fail", str(exc)))
        return steps
    steps.append(tls_step(_connector(target, proxy, timeout), target, context, source, hint, timeout))
    return steps


async def _probe_steps(settings: Any, route: Any, api_key: str | None, state: Any) -> list[Step]:
    """The zero-cost probe, the floor on its own against the known cap, the endpoint's profile."""
    from app.engine.cap_guard import cap_label, route_cap
    from app.engine.retry import RetryPolicy
    from app.engine.user_rules import build_rules
    from app.gateway_profile import load_profile, profile_lines
    from app.probe import Prober, timed
    from app.probe_floor import route_floor
    from app.providers.factory import make_provider

    provider = make_provider(route, settings, api_key)
    try:
        from app.engine.profile_evidence import apply_profile

        apply_profile(provider, state)
        floor = route_floor(settings, provider)
        carried: list[Any] = [None]

        async def send(size: int):
            async def call() -> tuple[int, int | None]:
                reply = await provider.probe(size, carried[0])
                return reply.status, reply.actual_bytes

            return await timed(call, size)

        prober = Prober(
            send,
            drop_threshold=settings.drop_payload_min_bytes,
            retry_policy=RetryPolicy(max_attempts=1, base_delay=0.5, max_delay=1.0),
            max_requests=6,
            user_rules=build_rules(settings.classifier_rules),
        )
        method = (
            provider.probe_method.split(":")[0] if provider.probe_method else "a request that costs nothing"
        )
        probe, why = await prober.try_size(256)
        steps: list[Step] = []
        if probe is None or probe.verdict != "passed":
            reason = why or (f"{probe.kind}: {probe.reason}" if probe is not None else "no answer")
            advice = _advice(prober.last_rejection) if probe is not None else ""
            steps.append(
                Step(
                    "probe",
                    "fail",
                    f"a request that costs nothing ({method}) did not get through: {reason}"
                    + (f" — {advice}" if advice else ""),
                    tuple(probe.evidence) if probe is not None else (),
                )
            )
            steps.append(Step("floor", "skip", "not tried: the probe failed"))
        else:
            status = f"HTTP {probe.status}" if probe.status else "answered"
            note = " (the provider refused our max_tokens: 0, as intended)" if probe.kind else ""
            steps.append(
                Step(
                    "probe",
                    "ok",
                    f"{method} answered through the same SDK: {status}{note}, {probe.latency_ms:.0f} ms",
                )
            )
            carried[0] = floor.floor
            floor_probe, floor_why = await prober.try_size(floor.bytes)
            cap = route_cap(settings, state, route)
            against = (
                f"{floor.bytes / cap.bytes:.0%} of the {cap_label(cap)} {format_size(cap.bytes)}"
                if cap.bytes
                else "no cap known"
            )
            if floor_probe is None or floor_probe.verdict != "passed":
                reason = floor_why or (
                    f"{floor_probe.kind}: {floor_probe.reason}" if floor_probe else "no answer"
                )
                steps.append(
                    Step(
                        "floor",
                        "fail",
                        f"the floor alone ({floor.describe()}; {against}) is refused: {reason} — every chat request "
                        f"carries it, so every one would be refused: reduce the instructions or tools, or take this "
                        f"report to the gateway's owners",
                        tuple(floor_probe.evidence) if floor_probe else (),
                    )
                )
            elif cap.bytes and floor.bytes >= cap.bytes:
                steps.append(
                    Step(
                        "floor",
                        "fail",
                        f"the floor ({floor.describe()}) passes, but it is over the {cap_label(cap)} "
                        f"{format_size(cap.bytes)} ({cap.detail}) — nothing over the cap is sent: raise max_payload "
                        f"if the gateway takes more (`/cap reset` forgets a learned cap)",
                    )
                )
            else:
                steps.append(Step("floor", "ok", f"{floor.describe()} passes on its own; {against}"))
        lines = profile_lines(load_profile(state, route.endpoint_id))
        steps.append(
            Step(
                "profile",
                "info",
                "; ".join(lines)
                if lines
                else "nothing learned about this endpoint yet beyond what is configured",
            )
        )
        return steps
    finally:
        await provider.aclose()


def _advice(failure: Any) -> str:
    if failure is None:
        return ""
    from app.engine.failure_words import describe_action

    action = describe_action(failure)
    return action.removeprefix("fail: ") if action.startswith("fail: ") else ""


def walk(
    settings: Any, route: Any, api_key: str | None, *, state: Any = None, env: Mapping[str, str] | None = None
) -> list[Step]:
    """Every step for `route` (see the module docstring)."""
    from app.state import State

    state = state or State()
    target = route_target(route)
    where = f"{target.url} ({target.setting})" if target else "the built-in lab (in-process)"
    steps = [Step("route", "info", f"{route.name}: {route.provider} · {route.model} · {where}")]
    network = network_steps(route, settings, env)
    steps += network
    if any(step.status == "fail" for step in network):
        steps += [Step(name, "skip", NOT_TRIED) for name in ("probe", "floor")]
        return steps
    try:
        steps += asyncio.run(_probe_steps(settings, route, api_key, state))
    except Exception as exc:  # the doctor reports, never crashes
        steps.append(Step("probe", "fail", f"the probe could not run: {type(exc).__name__}: {exc}"))
    return steps
