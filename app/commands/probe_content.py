"""`bulkhead probe --content [--session ID] [--json] [--withhold] [--yes] [--offline] [--paranoia N]`: find the
text a content-inspecting gateway refuses in a session's request (app.engine.api.blocked), and withhold it on
request. With the offline-waf extra installed the local Core Rule Set judges it first (zero requests);
`--offline` stops there, `--live` skips it; live probes (asked for first) run only when the offline check finds nothing."""

from __future__ import annotations

import asyncio
import sys

from app.config import ConfigError, load_settings
from app.console import json_text
from app.engine.api.blocked import withhold
from app.textsafe import display_line


def _ask(question: str) -> bool:
    if not sys.stdin.isatty():
        return False
    print(question + " [y/N] ", end="", file=sys.stderr, flush=True)
    return sys.stdin.readline().strip().lower() in ("y", "yes")


def run_content(args) -> int:
    from app.engine.api.blocked import blocked_plan, find_blocked, find_offline, offline_unavailable
    from app.engine.api.setup import open_engine

    if args.probe_offline and offline_unavailable():
        print(f"bulkhead: probe --content --offline: {offline_unavailable()}", file=sys.stderr)
        return 2

    settings = load_settings()
    resume = args.probe_session
    engine, choice, _ = open_engine(
        settings, route_name=args.probe_route, resume=resume, continue_=resume is None, what="probe --content"
    )
    say = (lambda text: None) if args.probe_json else (lambda text: print(text, flush=True))

    async def main() -> int:
        try:
            plan = blocked_plan(engine)
            say(
                f"Session {engine.session.id}, route {engine.route.name}: {len(plan.parts)} parts in its request."
            )

            def on_probe(number: int, what: str, verdict: str) -> None:
                if args.probe_json:
                    print(
                        json_text({"type": "probe", "probe": number, "sent": what, "verdict": verdict}),
                        flush=True,
                    )
                else:
                    say(f"  probe {number:>2}: {what:<24} → {verdict}")

            if args.probe_offline or not (offline_unavailable() or args.probe_live):
                say("Judging it here with the OWASP Core Rule Set first (offline: nothing is sent)…")
                report = await find_offline(engine, paranoia=args.probe_paranoia)
                if report.finding is not None or args.probe_offline:
                    return await _finish(engine, report)
                say(f"  offline: {report.message}")
            if not args.yes:
                if not _ask(plan.question):
                    print(
                        "bulkhead: not probing (nothing was sent). Rerun with --yes to probe without asking.",
                        file=sys.stderr,
                    )
                    return 2
            elif not args.probe_json:
                say(plan.question.removesuffix(" Go on?") + " (--yes)")
            return await _finish(engine, await find_blocked(engine, on_probe=on_probe))
        finally:
            await engine.close("probe")

    async def _finish(engine, report) -> int:
        result = report.to_json()
        if report.finding is not None and args.withhold:
            outcome = withhold(engine.session, report.finding)
            message = outcome.message
            if outcome.take_back is not None:
                prompt, _ = await engine.rewind_to(outcome.take_back, files=False)
                message += (
                    f"; it was: “{display_line(prompt.text[:200])}” — send it again without the refused text"
                )
            result["withheld"] = {
                "applied": outcome.applied,
                "message": message,
                "key": outcome.archive_key,
                "taken_back": outcome.take_back is not None,
            }
        if args.probe_json:
            print(json_text(result), flush=True)
        else:
            print(("✓ " if report.finding else "✖ ") + report.message)
            if report.finding is not None:
                span = report.finding.span
                print(f"  span ({len(span)} chars): {display_line(span[:300])}")
                for rule in report.rules:
                    print(f"  CRS rule {display_line(rule)}")
                if "withheld" in result:
                    withheld = result["withheld"]
                    lead = (
                        "  "
                        if withheld["applied"]
                        else "  taken back: "
                        if withheld["taken_back"]
                        else "  not withheld: "
                    )
                    print(lead + withheld["message"])
                else:
                    print(f"  withhold it: bulkhead probe --content --session {engine.session.id} --withhold")
        return 0 if report.finding is not None else 1

    try:
        return asyncio.run(main())
    except ConfigError:
        raise
