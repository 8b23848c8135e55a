"""`bulkhead probe --content [--session ID] [--json] [--withhold] [--yes] [--offline] [--paranoia N]`: find the
text a content-inspecting gateway refuses in a session's request (app.engine.api.blocked), and withhold it on
request. With the offline-waf extra installed the local Core Rule Set judges it first (zero requests);
`--offline` stops there, `--live` skips it; live probes (asked for first) run only when the offline check finds nothing."""

from __future__ import annotations

import asyncio
import sys
from typing import TYPE_CHECKING

from app.config import ConfigError, load_settings
from app.console import json_text
from app.textsafe import display_line

if TYPE_CHECKING:
    from app.engine.api import SessionApi
    from app.engine.api.blocked import BlockedReport


def _ask(question: str) -> bool:
    if not sys.stdin.isatty():
        return False
    print(question + " [y/N] ", end="", file=sys.stderr, flush=True)
    return sys.stdin.readline().strip().lower() in ("y", "yes")


def run_content(args) -> int:
    from app.engine.api import open_session
    from app.engine.api.blocked import offline_unavailable

    if args.probe_offline and offline_unavailable():
        print(f"bulkhead: probe --content --offline: {offline_unavailable()}", file=sys.stderr)
        return 2

    settings = load_settings()
    resume = args.probe_session
    say = (lambda text: None) if args.probe_json else (lambda text: print(text, flush=True))

    async def main() -> int:
        session = await open_session(  # not started: no hook runs, nothing is asked (nobody answers here)
            settings,
            route_name=args.probe_route,
            resume=resume,
            continue_=resume is None,
            what="probe --content",
            start=False,
            answers_approvals=False,
        )
        try:
            plan = session.blocked_plan()
            info = session.info()
            say(f"Session {info.id}, route {info.route}: {len(plan.parts)} parts in its request.")

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
                report = await session.find_offline(paranoia=args.probe_paranoia)
                if report.finding is not None or args.probe_offline:
                    return await _finish(session, report)
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
            return await _finish(session, await session.find_blocked(on_probe))
        finally:
            await session.close("probe")

    async def _finish(session: SessionApi, report: BlockedReport) -> int:
        result = report.to_json()
        if report.finding is not None and args.withhold:
            outcome = session.withhold(report.finding)
            message = outcome.message
            if outcome.take_back is not None:
                taken = await session.rewind_to(outcome.take_back, files=False)
                message += (
                    f"; it was: “{display_line(taken.prompt[:200])}” — send it again without the refused text"
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
                    print(f"  withhold it: bulkhead probe --content --session {session.info().id} --withhold")
        return 0 if report.finding is not None else 1

    try:
        return asyncio.run(main())
    except ConfigError:
        raise
