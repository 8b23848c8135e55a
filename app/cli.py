"""`bulkhead` — argument parsing and dispatch. Each sub-command lives in `app/commands/`.

    bulkhead                         TUI (new session; --resume ID, --continue)
    bulkhead -p "prompt" [--json]    one-shot: answer on stdout, notices on stderr
    bulkhead lab | probe | classify | sessions | archive | config | auth

Imports are deferred to the command that needs them, so `bulkhead --help` is instant.
"""

from __future__ import annotations

import argparse
import importlib
import sys

EXIT_OK, EXIT_ERROR, EXIT_USAGE = 0, 1, 2


def _add_session_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--route", "-r", metavar="ROUTE", help="route from config.toml to use")
    parser.add_argument("--model", "-m", metavar="MODEL",
                        help="model for this run, instead of the route's (e.g. claude-opus-5); /model remembers one")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--resume", metavar="ID", help="resume the session with this id (or id prefix)")
    group.add_argument("--continue", "-c", dest="continue_", action="store_true",
                       help="continue the most recent session")
    parser.add_argument("--max-payload", metavar="SIZE", help="request body cap, e.g. 128KB (overrides config)")
    parser.add_argument("--context-window", metavar="TOKENS", type=int, help="context window override")
    parser.add_argument("--approval", choices=("ask", "auto-read", "auto-edit", "never-ask"),
                        help="tool approval mode")
    parser.add_argument("--workspace", metavar="DIR", help="folder the tools work in (default: current)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="bulkhead",
        description="A terminal chat client for coding sessions that survives gateways, WAFs and "
                    "context overflows — and shows why.",
    )
    parser.add_argument("-p", "--print", dest="prompt", metavar="PROMPT",
                        help="one-shot: answer PROMPT on stdout (piped stdin is appended; @path attaches a file), "
                             "then exit")
    parser.add_argument("--json", action="store_true", help="with -p: one JSON object per engine event")
    parser.add_argument("--yes", "-y", action="store_true", help="with -p: approve every tool call")
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    _add_session_flags(parser)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    lab = sub.add_parser("lab", help="run the local gateway simulator and lab model")
    lab.add_argument("--host", default="127.0.0.1", help="address to listen on (loopback by default)")
    lab.add_argument("--port", type=int, default=8787)
    lab.add_argument("--gateway", default="none", metavar="PROFILE",
                     help="none, nginx, cloudflare, akamai, modsecurity, aws-waf, header-431, reset, html-200, "
                          "apigw, apigw-waf")
    lab.add_argument("--cap", metavar="SIZE", help="body cap the gateway enforces (e.g. 128KB)")
    lab.add_argument("--window", type=int, metavar="TOKENS", help="context window of the lab model")
    lab.add_argument("--faults", metavar="SPEC",
                     help='KIND:RATE or KIND@N[+M], comma separated, e.g. "429:0.1,529:0.05,drop@3"; kinds: '
                          '429 529 500 503 drop slow timeout cut stream-error')
    lab.add_argument("--seed", type=int, default=0, help="seed of the random faults")

    probe = sub.add_parser("probe", help="find the largest request body a route's gateway accepts")
    probe.add_argument("--route", "-r", dest="probe_route", metavar="ROUTE")
    probe.add_argument("--min", default="1KB", metavar="SIZE")
    probe.add_argument("--max", default="32MB", metavar="SIZE")
    probe.add_argument("--precision", default="1KB", metavar="SIZE")
    probe.add_argument("--max-probes", type=int, default=40, metavar="N")
    probe.add_argument("--save", action="store_true", help="remember the cap found for this endpoint")
    probe.add_argument("--json", dest="probe_json", action="store_true")

    classify = sub.add_parser("classify", help="explain one provider/gateway error in words")
    classify.add_argument("--status", type=int)
    classify.add_argument("--body-file", metavar="FILE", help="file with the response body ('-' for stdin)")
    classify.add_argument("--message", default="", help="the exception message, if any")
    classify.add_argument("--header", action="append", default=[], metavar="'K: V'")
    classify.add_argument("--bytes", type=int, metavar="N", help="size of the rejected request body")
    classify.add_argument("--json", dest="classify_json", action="store_true")
    classify.add_argument("--batch", metavar="FILE.jsonl", help="classify one JSON object per line")

    sessions = sub.add_parser("sessions", help="list, show, export, rename or delete sessions")
    sessions_sub = sessions.add_subparsers(dest="action", metavar="ACTION", required=True)
    s_list = sessions_sub.add_parser("list", help="recent sessions")
    s_list.add_argument("--json", dest="sessions_json", action="store_true",
                        help="one JSON array: id, title, route, provider, model, workspace, times, messages")
    rm = sessions_sub.add_parser("rm", help="delete a session with its archive, requests and folder")
    rm.add_argument("id", help="session id (or a unique prefix)")
    rm.add_argument("--yes", "-y", dest="rm_yes", action="store_true", help="do not ask for confirmation")
    rename = sessions_sub.add_parser("rename", help="set a session's title")
    rename.add_argument("id")
    rename.add_argument("title", nargs="+")
    show = sessions_sub.add_parser("show", help="one session's messages")
    show.add_argument("id")
    export = sessions_sub.add_parser("export", help="export a session")
    export.add_argument("id")
    export.add_argument("--format", choices=("md", "json", "har"), default="md")
    export.add_argument("--output", "-o", metavar="FILE", help="write here instead of stdout")

    archive = sub.add_parser("archive", help="browse the archive of compacted content")
    archive_sub = archive.add_subparsers(dest="action", metavar="ACTION", required=True)
    a_list = archive_sub.add_parser("list", help="archived segments, newest first")
    a_list.add_argument("--session", metavar="ID")
    a_search = archive_sub.add_parser("search", help="full-text search")
    a_search.add_argument("query")
    a_search.add_argument("--session", metavar="ID")
    a_show = archive_sub.add_parser("show", help="print an archived segment byte for byte")
    a_show.add_argument("key")

    config = sub.add_parser("config", help="create, locate, show or check the configuration")
    config_sub = config.add_subparsers(dest="action", metavar="ACTION", required=True)
    config_sub.add_parser("init", help="write a commented starter config.toml")
    config_sub.add_parser("path", help="print where config.toml, state.toml and the data live")
    config_sub.add_parser("show", help="print the effective settings and where each came from")
    config_sub.add_parser("check", help="validate config.toml and the routes' credentials")

    auth = sub.add_parser("auth", help="store API keys in the system keyring")
    auth_sub = auth.add_subparsers(dest="action", metavar="ACTION", required=True)
    for action, text in (("set", "store a key (read without echo)"), ("status", "which keys are found where"),
                         ("delete", "remove a stored key")):
        p = auth_sub.add_parser(action, help=text)
        p.add_argument("provider", nargs="?" if action == "status" else None, choices=("anthropic", "openai"))
    return parser


_COMMANDS = {
    "lab": "app.commands.lab_cmd",
    "probe": "app.commands.probe_cmd",
    "classify": "app.commands.classify_cmd",
    "sessions": "app.commands.sessions_cmd",
    "archive": "app.commands.archive_cmd",
    "config": "app.commands.config_cmd",
    "auth": "app.commands.auth_cmd",
}


def main(argv: list[str] | None = None) -> int:
    from app.config import ConfigError
    from app.store import StoreError

    parser = build_parser()
    args = parser.parse_args(argv)
    if args.version:
        from app import __version__

        print(f"bulkhead {__version__}")
        return EXIT_OK
    try:
        if args.command:
            module = importlib.import_module(_COMMANDS[args.command])
        elif args.prompt is not None:
            module = importlib.import_module("app.commands.oneshot")
        else:
            module = importlib.import_module("app.ui.run")
        return int(module.run(args) or 0)
    except (ConfigError, StoreError) as exc:
        print(f"bulkhead: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("bulkhead: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `bulkhead … | head`: the reader left; exit quietly
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    except OSError as exc:  # a full disk, a folder without permission: one clear line, no traceback
        where = f" ({exc.filename})" if getattr(exc, "filename", None) else ""
        print(f"bulkhead: {exc.strerror or exc}{where} — check free space and permissions, or set BULKHEAD_HOME",
              file=sys.stderr)
        return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
