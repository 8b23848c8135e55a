"""`bulkhead doctor [--route NAME] [--report FILE]` — where does the path of a request break?

One line per step, green or red, each failure with the sentence that says what to do: the route, the proxy
in effect (and the variable that set it), DNS, TCP, the proxy's tunnel, TLS (the certificate's issuer, a
TLS-inspecting proxy named as such, and whether the route's CA settings trust it), a probe that costs nothing
through the same SDK, the route's floor against the known cap, and what the endpoint has shown before.
`--report FILE` writes the same with details, redacted, for the network team. Exit 1 when a step failed.
"""

from __future__ import annotations

import os
import platform
import sys
from datetime import UTC, datetime
from pathlib import Path

from app.config import ConfigError

MARKS = {"ok": "✓", "fail": "✖", "warn": "!", "skip": "·", "info": "·"}
COLORS = {"ok": "32", "fail": "31", "warn": "33"}


def add_parser(sub, make) -> None:
    """Register `doctor` on the CLI's sub-parsers (`make` is cli._sub)."""
    doctor = make(
        sub,
        "doctor",
        help="walk the path a request takes and say where it breaks (proxy, DNS, TCP, TLS, probe, floor)",
        description="Walk the path a request of a route takes: the proxy in effect and the variable that set "
        "it, DNS, the TCP connection, the proxy's tunnel, the TLS chain's issuer (a TLS-inspecting proxy is "
        "named as such) and whether the route's CA settings trust it, a probe that costs nothing through the "
        "same SDK, the route's floor against the known cap, and what the endpoint has shown before. Each step "
        "is one line, green or red with what to do. Exit 1 when a step failed.",
        examples="  bulkhead doctor\n"
        "  bulkhead doctor --route work\n"
        "  bulkhead doctor --report doctor.txt     a redacted copy for your network team",
    )
    doctor.add_argument(
        "--route", dest="doctor_route", metavar="NAME", help="the route to check (default: as chat)"
    )
    doctor.add_argument(
        "--report", metavar="FILE", help="also write the steps, with details, redacted, to FILE"
    )


def _color(stream) -> bool:
    return bool(getattr(stream, "isatty", lambda: False)()) and not os.environ.get("NO_COLOR")


def _print_step(step) -> None:
    from app.textsafe import display_line

    mark = MARKS[step.status]
    out = sys.stdout
    if _color(out) and step.status in COLORS:
        raw = getattr(out, "wrapped", out)  # the mark's color is ours; the text is shown escaped
        raw.write(f"\x1b[{COLORS[step.status]}m{mark}\x1b[0m {step.name:8} {display_line(step.text)}\n")
        raw.flush()
    else:
        print(f"{mark} {step.name:8} {step.text}")


def report_text(steps, route_name: str) -> str:
    """The steps with their details, for a file: secrets and proxy passwords redacted."""
    from app import __version__
    from app.network_env import network_lines
    from app.redact import redact_text

    lines = [
        f"bulkhead doctor — {datetime.now(UTC):%Y-%m-%d %H:%M:%S} UTC",
        f"bulkhead {__version__}, Python {platform.python_version()}, {platform.system()} {platform.release()}",
        f"route {route_name}",
        "",
        "environment (proxy and CA variables that are set; passwords hidden):",
    ]
    lines += [f"  {line.text}" for line in network_lines()] or ["  (none)"]
    lines.append("")
    for step in steps:
        lines.append(f"[{step.status.upper():4}] {step.name}: {step.text}")
        lines += [f"         {detail}" for detail in step.details if detail]
    failed = [step for step in steps if step.status == "fail"]
    lines += ["", f"result: {'the path breaks at ' + failed[0].name if failed else 'every step passed'}"]
    return redact_text("\n".join(lines)) + "\n"


def run(args) -> int:
    from app.config import load_settings
    from app.doctor.walk import walk
    from app.engine.api.setup import choose_route
    from app.fsutil import atomic_write
    from app.network_env import register_proxy_passwords

    register_proxy_passwords()
    settings = load_settings()
    choice = choose_route(settings, args.doctor_route or args.route)
    route = choice.route
    for note in choice.notices:
        print(f"ℹ {note}", file=sys.stderr)
    steps = walk(settings, route, choice.api_key)
    for step in steps:
        _print_step(step)
    failed = [step for step in steps if step.status == "fail"]
    if args.report:
        path = Path(args.report).expanduser()
        try:
            atomic_write(path, report_text(steps, route.name), 0o644)
        except OSError as exc:
            raise ConfigError(f"doctor: cannot write {path}: {exc.strerror or exc}") from None
        print(f"report written to {path} (redacted: keys and proxy passwords are hidden)")
    return 1 if failed else 0
