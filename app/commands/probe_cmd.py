"""`bulkhead probe [--route R] [--min 1KB] [--max 32MB] [--precision 1KB] [--save] [--json]`."""

from __future__ import annotations

import asyncio
import sys

from app.config import ConfigError, load_settings
from app.console import json_text
from app.engine.api.probe import apply_profile, retry_policy, user_rules
from app.probe import Probe, ProbeAnswer, Prober, ProbeResult, max_probes_for, timed
from app.probe_floor import FloorOutcome, probe_with_floor, route_floor
from app.sizes import SizeError, format_size, parse_size


def _sizes(args) -> tuple[int, int, int]:
    try:
        low, high, precision = parse_size(args.min), parse_size(args.max), parse_size(args.precision)
    except SizeError as exc:
        raise ConfigError(f"probe: {exc}") from None
    if low >= high:
        raise ConfigError(f"probe: --min ({format_size(low)}) must be below --max ({format_size(high)})")
    return low, high, precision


def _print_probe(probe: Probe) -> None:
    status = f"{probe.status}" if probe.status else "no answer"
    detail = "" if probe.verdict == "passed" and probe.kind is None else f" — {probe.kind}: {probe.reason}"
    print(
        f"  probe {probe.number:>2}: {format_size(probe.size):>9} ({probe.size:,} bytes) → {probe.verdict:<9} "
        f"[{status}, {probe.latency_ms:,.0f} ms]{detail}",
        flush=True,
    )


def _print_result(result: ProbeResult, endpoint: str, saved: bool) -> None:
    print()
    print(("✓ " if result.conclusive else "✖ ") + result.message)
    if result.cap_bytes is not None:
        print(
            f"  largest body accepted: {result.cap_bytes:,} bytes ({format_size(result.cap_bytes)}); "
            f"smallest refused: {result.smallest_rejected:,} bytes"
        )
        if result.kind:
            print(f"  how the gateway says no: {result.kind}")
            for line in result.evidence:
                print(f"    · {line}")
        print(f'  suggestion: max_payload = "{result.suggestion // 1024}KB"   (in [routes.…] or config.toml)')
        if saved:
            print(f"  saved as the learned cap for {endpoint} in state.toml (`/cap reset` forgets it)")
        else:
            print("  rerun with --save to remember it as this endpoint's learned cap")
    print(f"  {len(result.probes)} probe requests")


def run(args) -> int:
    if getattr(args, "content", False):
        from app.commands.probe_content import run_content

        return run_content(args)
    if getattr(args, "withhold", False) or getattr(args, "probe_session", None):
        raise ConfigError("probe: --session and --withhold go with --content")
    from app.engine.api.setup import choose_route
    from app.providers.factory import make_provider
    from app.state import State

    settings = load_settings()
    low, high, precision = _sizes(args)
    choice = choose_route(settings, args.probe_route or args.route)
    route = choice.route
    provider = make_provider(route, settings, choice.api_key)
    apply_profile(provider, State())  # a beta this endpoint refused is left out, as chat leaves it out
    floor = route_floor(settings, provider)
    if not args.probe_json:
        where = route.base_url or route.endpoint_url or f"{route.provider} default endpoint"
        print(
            f"Probing route {route.name} ({where}) from {format_size(low)} to {format_size(high)}, "
            f"precision {format_size(precision)} (≈{max_probes_for(low, high, precision)} requests)."
        )
        print(f"Probes use {provider.probe_method}.")
        print(
            f"Every probe carries the route's floor — system prompt, instructions, tool definitions"
            f"{', headers ' + ', '.join(sorted(floor.floor.headers)) if floor.floor.headers else ''}: "
            f"{floor.describe()}."
        )
        for note in choice.notices:
            print(f"ℹ {note}", file=sys.stderr)

    async def send(size: int) -> ProbeAnswer:
        async def call() -> tuple[int, int | None]:
            reply = await provider.probe(size, floor.floor)
            return reply.status, reply.actual_bytes

        return await timed(call, size)

    def on_probe(probe: Probe) -> None:
        if args.probe_json:
            print(json_text(probe.to_json()), flush=True)
        else:
            _print_probe(probe)

    prober = Prober(
        send,
        drop_threshold=settings.drop_payload_min_bytes,
        retry_policy=retry_policy(settings),
        on_probe=on_probe,
        max_requests=args.max_probes,
        user_rules=user_rules(settings),
    )

    async def main() -> tuple[ProbeResult, FloorOutcome]:
        try:
            return await probe_with_floor(prober, floor, low, high, precision)
        finally:
            await provider.aclose()

    result, floor_outcome = asyncio.run(main())
    saved = False
    if args.save and result.cap_bytes is not None:
        State().learn_cap(
            route.endpoint_id,
            result.cap_bytes,
            rejected_bytes=result.smallest_rejected,
            kind=result.kind or "payload_too_large",
            reason=f"bulkhead probe: {result.message}",
        )
        saved = True
    if args.probe_json:
        print(json_text(floor_outcome.to_json()))
        payload = result.to_json()
        payload["saved"] = saved
        payload["floor_bytes"] = floor.bytes
        payload["floor_passes"] = floor_outcome.passed
        print(json_text(payload))
    else:
        _print_result(result, route.endpoint_id, saved)
        print(("  ✓ " if floor_outcome.passed else "  ✖ ") + floor_outcome.line)
    return 0 if result.conclusive and floor_outcome.passed else 1  # a refused floor: every chat request fails
