"""`bulkhead probe --content [--session ID] [--json] [--withhold] [--yes]`: find the text a content-inspecting
gateway refuses in a session's request (app.engine.blocked), and withhold it on request."""

from __future__ import annotations

import asyncio
import sys

from app.config import ConfigError, load_settings
from app.console import json_text
from app.engine.withhold import withhold
from app.textsafe import display_line


def _ask(question: str) -> bool:
    if not sys.stdin.isatty():
        return False
    print(question + " [y/N] ", end="", file=sys.stderr, flush=True)
    return sys.stdin.readline().strip().lower() in ("y", "yes")


def run_content(args) -> int:
    from app.engine.blocked import blocked_plan, find_blocked
    from app.engine.bootstrap import open_engine

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
            if not args.yes:
                if not _ask(plan.question):
                    print(
                        "bulkhead: not probing (nothing was sent). Rerun with --yes to probe without asking.",
                        file=sys.stderr,
                    )
                    return 2
            elif not args.probe_json:
                say(plan.question.removesuffix(" Go on?") + " (--yes)")

            def on_probe(number: int, what: str, verdict: str) -> None:
                if args.probe_json:
                    print(
                        json_text({"type": "probe", "probe": number, "sent": what, "verdict": verdict}),
                        flush=True,
                    )
                else:
                    say(f"  probe {number:>2}: {what:<24} → {verdict}")

            report = await find_blocked(engine, on_probe=on_probe)
            result = report.to_json()
            if report.finding is not None and args.withhold:
                outcome = withhold(engine.session, report.finding)
                result["withheld"] = {
                    "applied": outcome.applied,
                    "message": outcome.message,
                    "key": outcome.archive_key,
                }
            if args.probe_json:
                print(json_text(result), flush=True)
            else:
                print(("✓ " if report.finding else "✖ ") + report.message)
                if report.finding is not None:
                    span = report.finding.span
                    print(f"  span ({len(span)} chars): {display_line(span[:300])}")
                    if "withheld" in result:
                        print(
                            ("  " if result["withheld"]["applied"] else "  not withheld: ")
                            + result["withheld"]["message"]
                        )
                    else:
                        print(
                            f"  withhold it: bulkhead probe --content --session {engine.session.id} --withhold"
                        )
            return 0 if report.finding is not None else 1
        finally:
            await engine.close("probe")

    try:
        return asyncio.run(main())
    except ConfigError:
        raise
