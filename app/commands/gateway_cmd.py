"""`bulkhead gateway show|export|import|trust|forget` — what endpoints have shown, and sharing it.

    bulkhead gateway show [ENDPOINT] [--json]     learned here and imported, side by side, with sources
    bulkhead gateway export [ENDPOINT] > gateways.toml
    bulkhead gateway import FILE|- [--loosen]     into [imported] in state.toml, marked with source and date
    bulkhead gateway trust [--deny]               read (or leave alone) the workspace's .bulkhead/gateways.toml
    bulkhead gateway forget ENDPOINT [--imported] what this machine learned about it (or only the import)

ENDPOINT is a route name, an endpoint as state.toml writes it (`anthropic https://gw.example.com`), or a
piece of one that names a single known endpoint.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from app.config import ConfigError

ACTIONS = ("show", "export", "import", "trust", "forget")


def add_parser(sub, make) -> None:
    """Register `gateway` on the CLI's sub-parsers (`make` is cli._sub)."""
    gateway = make(
        sub,
        "gateway",
        help="what each endpoint has shown (caps, header limits, refused betas, …); export and import it",
        description="Every endpoint's capability profile: the body cap, the header limit, betas it refuses, "
        "content blocks, streaming quirks and the proxy hop — learned on this machine, or imported from a "
        "team's gateways.toml (marked with its source and date). An imported cap is a starting point: "
        "evidence here tightens it, and a file never loosens one without --loosen. A workspace's committed "
        ".bulkhead/gateways.toml is read once you trust it.",
        examples="  bulkhead gateway show\n"
        "  bulkhead gateway export > gateways.toml\n"
        "  bulkhead gateway import gateways.toml\n"
        "  bulkhead gateway export | BULKHEAD_HOME=/other bulkhead gateway import -\n"
        "  bulkhead gateway trust            read this workspace's .bulkhead/gateways.toml",
    )
    actions = gateway.add_subparsers(dest="action", metavar="ACTION", required=True)
    show = actions.add_parser("show", help="the profiles, learned and imported, with their sources")
    show.add_argument("endpoint", nargs="?", metavar="ENDPOINT", help="a route, an endpoint or part of one")
    show.add_argument("--json", dest="gateway_json", action="store_true", help="one JSON object per endpoint")
    export = actions.add_parser("export", help="what this machine knows, as a gateways.toml on stdout")
    export.add_argument("endpoint", nargs="?", metavar="ENDPOINT", help="only this one (default: every one)")
    imp = actions.add_parser("import", help="read a gateways.toml (FILE, or - for stdin)")
    imp.add_argument("file", metavar="FILE", help="the file, or - to read stdin")
    imp.add_argument(
        "--loosen",
        action="store_true",
        help="let the file raise a cap imported before (a cap this machine learned always stays)",
    )
    trust = actions.add_parser(
        "trust", help="read this workspace's .bulkhead/gateways.toml (asked once per content)"
    )
    trust.add_argument("--deny", action="store_true", help="leave it alone (remembered until it changes)")
    forget = actions.add_parser("forget", help="forget what this machine learned about an endpoint")
    forget.add_argument("endpoint", metavar="ENDPOINT", help="a route, an endpoint or part of one")
    forget.add_argument("--imported", action="store_true", help="forget only what was imported for it")


def _state():
    from app.state import State

    return State()


def resolve_endpoint(name: str, known: list[str]) -> str:
    """A route name, an exact endpoint, or a piece of exactly one known endpoint."""
    from app.config import load_settings

    try:
        settings = load_settings()
        if name in settings.routes:
            return settings.routes[name].endpoint_id
    except ConfigError:
        pass
    if name in known:
        return name
    matches = [endpoint for endpoint in known if name.lower() in endpoint.lower()]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        listed = "; ".join(known) or "none yet"
        raise ConfigError(f"gateway: no known endpoint matches {name!r} (known: {listed})")
    raise ConfigError(f"gateway: {name!r} matches several endpoints: {'; '.join(matches)} — be more precise")


def _show(args) -> int:
    from app.gateway_profile import all_profiles, describe_profile
    from app.textsafe import display_line

    state = _state()
    profiles = all_profiles(state)
    if args.endpoint:
        wanted = resolve_endpoint(args.endpoint, [p.endpoint for p in profiles])
        profiles = [p for p in profiles if p.endpoint == wanted]
    if args.gateway_json:
        for profile in profiles:
            print(
                json.dumps(
                    {
                        "endpoint": profile.endpoint,
                        "learned": profile.learned.to_table(),
                        "imported": (
                            {
                                **profile.imported.to_table(),
                                "source": profile.imported.source,
                                "imported_at": profile.imported.imported_at,
                            }
                            if profile.imported is not None
                            else None
                        ),
                    },
                    ensure_ascii=False,
                )
            )
        return 0
    if not profiles:
        print(
            "no endpoint has shown anything yet (caps and profiles are learned from refusals; "
            "`bulkhead gateway import FILE` reads a team's)"
        )
        return 0
    for index, profile in enumerate(profiles):
        if index:
            print()
        print(display_line(profile.endpoint))
        rows = describe_profile(profile)
        if not rows:
            print("  (nothing beyond what is configured)")
        for label, text in rows:
            print(f"  {label:16} {display_line(text)}")
    return 0


def _export(args) -> int:
    from app.gateway_profile import all_profiles
    from app.gateway_share import export_profiles

    state = _state()
    endpoints = None
    if args.endpoint:
        endpoints = [resolve_endpoint(args.endpoint, [p.endpoint for p in all_profiles(state)])]
    sys.stdout.write(export_profiles(state, endpoints))
    return 0


def _import(args) -> int:
    from app.gateway_share import GatewayFileError, import_profiles
    from app.textsafe import display_line

    if args.file == "-":
        text, source = sys.stdin.read(), "stdin"
    else:
        path = Path(args.file).expanduser()
        try:
            text, source = path.read_text(encoding="utf-8"), str(path.resolve())
        except OSError as exc:
            raise ConfigError(f"gateway import: cannot read {path}: {exc.strerror or exc}") from None
        except UnicodeDecodeError:
            raise ConfigError(f"gateway import: {path} is not UTF-8 text") from None
    try:
        report = import_profiles(_state(), text, source=source, loosen=args.loosen)
    except GatewayFileError as exc:
        raise ConfigError(f"gateway import: {exc}") from None
    for line in report.imported:
        print(f"imported {display_line(line)}")
    for line in report.skipped:
        print(f"skipped  {display_line(line)}", file=sys.stderr)
    if not report.imported:
        print("nothing imported", file=sys.stderr)
        return 1
    print(
        f"{report.count} endpoint{'s' if report.count != 1 else ''} imported from {display_line(source)} "
        f"(`bulkhead gateway show` lists them beside what this machine learned)"
    )
    return 0


def _trust(args) -> int:
    from app.gateway_share import GatewayFileError, parse_file
    from app.textsafe import display_line
    from app.workspace_gateways import WORKSPACE_FILE, answer_gateways_file, gateways_file, workspace_file

    workspace = Path(getattr(args, "workspace", None) or os.getcwd())
    found = gateways_file(workspace)
    if found is None:
        root = workspace_file(workspace).parent.parent
        print(f"no {WORKSPACE_FILE} in {root} (or it is over 1 MB)", file=sys.stderr)
        return 1
    state = _state()
    if args.deny:
        answer_gateways_file(state, found, "deny")
        print(f"{found.path} is left alone (asked again if it changes)")
        return 0
    try:
        gateways, exported_at = parse_file(found.content.decode("utf-8", errors="replace"), str(found.path))
    except GatewayFileError as exc:
        raise ConfigError(f"gateway trust: {exc}") from None
    print(
        f"{display_line(str(found.path))}: {len(gateways)} endpoint(s)"
        + (f", exported {exported_at}" if exported_at else "")
    )
    for line in answer_gateways_file(state, found, "allow"):
        print(f"  imported {display_line(line)}")
    return 0


def _forget(args) -> int:
    from app.gateway_profile import all_profiles, forget_profile
    from app.gateway_share import forget_imported

    state = _state()
    endpoint = resolve_endpoint(args.endpoint, [p.endpoint for p in all_profiles(state)])
    if args.imported:
        done = forget_imported(state, endpoint)
        what = "the imported profile"
    else:
        done = forget_profile(state, endpoint, imported=False)
        what = "what this machine learned (beyond the cap: /cap reset forgets it)"
    print(f"{endpoint}: {what} forgotten" if done else f"{endpoint}: nothing to forget")
    return 0


def run(args: argparse.Namespace) -> int:
    return {"show": _show, "export": _export, "import": _import, "trust": _trust, "forget": _forget}[
        args.action
    ](args)
