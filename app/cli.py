"""`bulkhead` — argument parsing and dispatch. Each sub-command lives in `app/commands/`.

    bulkhead                         TUI (new session; --resume ID, --continue)
    bulkhead "prompt"                TUI with that prompt sent (a sub-command's name wins: `--` before it)
    bulkhead -p "prompt" [--json]    one-shot: answer on stdout, notices on stderr
    bulkhead lab | probe | classify | sessions | archive | config | auth | mcp | proxy | permissions

Imports are deferred to the command that needs them, so `bulkhead --help` is instant.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import importlib
import sys
from collections.abc import Iterator

EXIT_OK, EXIT_ERROR, EXIT_USAGE = 0, 1, 2


class Parser(argparse.ArgumentParser):
    """argparse without prefix matching (`classify --body` is not `--body-file`); sub-commands' parsers are
    made of the same class."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)


class HelpFormatter(argparse.HelpFormatter):
    """Descriptions wrapped paragraph by paragraph, example lines (indented) kept as written, and each
    flag's default named after its help when it has one."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        import textwrap

        out = []
        for paragraph in text.split("\n\n"):
            lines = paragraph.split("\n")
            if any(line.startswith("  ") for line in lines[1:]) or paragraph.startswith("  "):
                out.append("\n".join(indent + line for line in lines))  # examples: as written
            else:
                out.append(
                    textwrap.fill(" ".join(lines), width, initial_indent=indent, subsequent_indent=indent)
                )
        return "\n\n".join(out)

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if (
            "(default" in text
            or not action.option_strings
            or action.default in (None, False, "", [], argparse.SUPPRESS)
        ):
            return text
        return text + " (default: %(default)s)"


def port(value: str) -> int:
    """A TCP port, 1–65535 (0 would pick one at random: use it only on purpose, in tests)."""
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a port number (1–65535)") from None
    if not 0 <= number <= 65535:
        raise argparse.ArgumentTypeError(f"{number} is not a port: use 1–65535 (e.g. --port 8787)")
    return number


def _sub(sub, name: str, *, help: str, description: str, examples: str = ""):
    return sub.add_parser(
        name,
        help=help,
        description=description,
        formatter_class=HelpFormatter,
        epilog=("examples:\n" + examples) if examples else None,
    )


def _add_session_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--route",
        "-r",
        metavar="ROUTE",
        help="route from config.toml to use (default: "
        "default_route, else the only route, else a key's implicit route, else the lab)",
    )
    parser.add_argument(
        "--model",
        "-m",
        metavar="MODEL",
        help="model for this run, instead of the route's (e.g. claude-opus-5); /model remembers one",
    )
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--resume", metavar="ID", help="resume the session with this id (or id prefix)")
    group.add_argument(
        "--continue",
        "-c",
        dest="continue_",
        action="store_true",
        help="continue the newest session of this folder (the workspace) that no other bulkhead has open",
    )
    parser.add_argument(
        "--fork",
        action="store_true",
        help="with --resume/--continue: go on in a copy of the session (e.g. one open elsewhere)",
    )
    parser.add_argument(
        "--read-only",
        action="store_true",
        help="with --resume: open the session to read it, even while another bulkhead writes it",
    )
    parser.add_argument(
        "--max-payload", metavar="SIZE", help="request body cap, e.g. 128KB (overrides config)"
    )
    parser.add_argument("--context-window", metavar="TOKENS", type=int, help="context window override")
    parser.add_argument(
        "--approval",
        choices=("ask", "auto-read", "auto-edit", "never-ask"),
        help="tool approval mode (default: approval in config.toml, else auto-read)",
    )
    parser.add_argument("--workspace", metavar="DIR", help="folder the tools work in (default: current)")


def _add_session_filters(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--here", action="store_true", help="only the sessions of the current folder")
    parser.add_argument("--folder", metavar="DIR", help="only the sessions of DIR")
    parser.add_argument("--older-than", metavar="AGE", help="last used more than AGE ago (30d, 12h, 2w)")
    parser.add_argument("--newer-than", metavar="AGE", help="last used within AGE (30d, 12h, 2w)")


def build_parser() -> argparse.ArgumentParser:
    with _translations_looked_up_once():
        return _build_parser()


@contextlib.contextmanager
def _translations_looked_up_once() -> Iterator[None]:
    """argparse translates its few words (`options`, `show this help message and exit`, …) for every parser it
    makes, and gettext looks for the catalogue on disk at each call when there is none (the usual case): ~140
    lookups, 7 ms of every start. While the parsers are built, each word is looked up once (the same answers)."""
    original = getattr(argparse, "_", None)
    if not callable(original):  # another argparse: nothing to speed up
        yield
        return
    looked_up: dict[str, str] = {}

    def once(message: str) -> str:
        if message not in looked_up:
            looked_up[message] = original(message)
        return looked_up[message]

    argparse._ = once  # type: ignore[attr-defined]
    try:
        yield
    finally:
        argparse._ = original  # type: ignore[attr-defined]


def _build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="bulkhead",
        formatter_class=HelpFormatter,
        description="A terminal chat client for coding sessions that survives gateways, WAFs and context "
        "overflows — and shows why.\n\nWith no COMMAND, bulkhead starts the full-screen chat (the "
        "TUI) in the current folder: a new session, or --continue / --resume one. With -p it "
        "answers once on stdout and exits. With nothing configured it uses its built-in lab "
        "model (offline, no key).",
        epilog="examples:\n"
        "  bulkhead                               the chat, a new session\n"
        "  bulkhead -c                            continue this folder's newest session\n"
        '  bulkhead "fix the failing test"        the chat, with that prompt sent\n'
        '  bulkhead -- "lab"                      a prompt that is a command name\n'
        '  bulkhead -p "/compact" -c              a slash command on this folder\'s newest session\n'
        '  bulkhead -p "explain @app/cli.py"      one answer on stdout\n'
        '  git diff | bulkhead -p "review this"   piped stdin is appended to the prompt\n'
        "  bulkhead COMMAND --help                what a command does, its flags and examples",
    )
    parser.add_argument(
        "-p",
        "--print",
        dest="prompt",
        metavar="PROMPT",
        nargs="?",
        const="",
        help="one-shot: answer PROMPT on stdout, then exit; piped stdin is appended, and with no "
        "PROMPT (or -p -) stdin is the prompt; @path attaches a file",
    )
    parser.add_argument("--json", action="store_true", help="with -p: one JSON object per engine event")
    parser.add_argument(
        "--quiet",
        "-q",
        action="store_true",
        help="with -p: only the answer on stdout and errors on stderr (no notices, progress or tool lines)",
    )
    parser.add_argument(
        "--yes",
        "-y",
        action="store_true",
        help="with -p: approve every tool call (and start the workspace's .mcp.json servers)",
    )
    parser.add_argument(
        "--fallback-after-partial",
        action="store_true",
        help="with -p: when a route fails after part of the answer arrived, continue it on the next route of "
        "the fallback chain (without this flag -p keeps the partial answer and stops)",
    )
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    _add_session_flags(parser)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    lab = _sub(
        sub,
        "lab",
        help="run the local gateway simulator and lab model",
        description="Run a local server that speaks the Anthropic, OpenAI and Bedrock wire formats behind a "
        "simulated gateway (a body cap and how it is enforced, a context window, faults), "
        "answered by the offline lab model. Point a route's base_url at it to reproduce your "
        "gateway's behaviour without a key. GET /_lab/requests shows what it received; "
        "POST /_lab/config changes it while it runs. Ctrl+C stops it.",
        examples="  bulkhead lab                                         no gateway, port 8787\n"
        "  bulkhead lab --gateway nginx --cap 128KB             a 413 page above 128 KB\n"
        '  bulkhead lab --gateway cloudflare --cap 256KB --faults "429:0.05,drop@7" --seed 1',
    )
    lab.add_argument("--host", default="127.0.0.1", help="address to listen on (loopback by default)")
    lab.add_argument("--port", type=port, default=8787, help="TCP port to listen on (1–65535)")
    lab.add_argument(
        "--gateway",
        default="none",
        metavar="PROFILE",
        help="how the cap is enforced: none, nginx, cloudflare, akamai, modsecurity, aws-waf, "
        "header-431, reset, html-200, apigw, apigw-waf, beta-refuse, beta-strip",
    )
    lab.add_argument(
        "--cap",
        metavar="SIZE",
        help="body cap the gateway enforces (e.g. 128KB; default: the profile's own; none: no cap at all)",
    )
    lab.add_argument(
        "--window",
        metavar="TOKENS",
        help="context window of the lab model in tokens (default: 200000; none: no overflow)",
    )
    lab.add_argument(
        "--faults",
        metavar="SPEC",
        help='KIND:RATE or KIND@N[+M], comma separated, e.g. "429:0.1,529:0.05,drop@3"; kinds: '
        "429 529 500 503 drop slow timeout cut stream-error (none: no faults)",
    )
    lab.add_argument("--seed", type=int, default=0, help="seed of the random faults")

    probe = _sub(
        sub,
        "probe",
        help="find the largest request body a route's gateway accepts",
        description="Bisect the request body size between --min and --max until the largest accepted "
        "size is known to within --precision. The probes never run the model: Anthropic's "
        "and Bedrock's count-tokens endpoints, and for OpenAI-compatible routes a completion "
        "with max_tokens 0 that the provider refuses once it is past the gateway. Rate "
        "limits, overloads and flaky connections are retried and reported, never taken for "
        "a cap. --save remembers the cap for this endpoint (state.toml).",
        examples="  bulkhead probe                              the default route, 1 KB … 32 MB\n"
        "  bulkhead probe --route work --max 16MB --save\n"
        "  bulkhead probe --json | jq 'select(.type == \"result\").cap_bytes'",
    )
    probe.add_argument(
        "--route",
        "-r",
        dest="probe_route",
        metavar="ROUTE",
        help="route to probe (default: the session's default route)",
    )
    probe.add_argument("--min", default="1KB", metavar="SIZE", help="smallest body to try (should pass)")
    probe.add_argument("--max", default="32MB", metavar="SIZE", help="largest body to try")
    probe.add_argument(
        "--precision", default="1KB", metavar="SIZE", help="stop when the cap is known to within this much"
    )
    probe.add_argument("--max-probes", type=int, default=40, metavar="N", help="at most this many requests")
    probe.add_argument("--save", action="store_true", help="remember the cap found for this endpoint")
    probe.add_argument(
        "--content",
        action="store_true",
        help="find which part of a session's request a content-inspecting gateway refuses (asks first: "
        "each probe carries conversation text to the gateway)",
    )
    probe.add_argument(
        "--session",
        dest="probe_session",
        metavar="ID",
        help="with --content: the session (default: the latest)",
    )
    probe.add_argument(
        "--withhold", action="store_true", help="with --content: withhold what was found from the model"
    )
    probe.add_argument("--yes", action="store_true", help="with --content: do not ask before probing")
    probe.add_argument(
        "--offline",
        dest="probe_offline",
        action="store_true",
        help="with --content: judge the request with the OWASP Core Rule Set here (zero requests; needs the "
        "offline-waf extra and Debian's modsecurity-crs); without it the offline check still runs first "
        "when installed",
    )
    probe.add_argument(
        "--live",
        dest="probe_live",
        action="store_true",
        help="with --content: probe the gateway itself, without the offline check first (its rules may not be "
        "the Core Rule Set)",
    )
    probe.add_argument(
        "--paranoia",
        dest="probe_paranoia",
        type=int,
        choices=(1, 2, 3, 4),
        metavar="N",
        help="with --content: the CRS paranoia level of the offline check (default: the lowest of 1-4 that "
        "refuses the request)",
    )
    probe.add_argument(
        "--json",
        dest="probe_json",
        action="store_true",
        help='one JSON object per probe, then {"type": "result", "cap_bytes", …}',
    )

    classify = _sub(
        sub,
        "classify",
        help="explain one provider/gateway error in words",
        description="Classify one error the way the recovery ladder does — kind (payload_too_large, "
        "waf_block, context_overflow, …), whether it is payload-related and recoverable, "
        "the evidence that decided it and what bulkhead would do — from what you saw: "
        "the status, the response body, headers, the exception message and the size of "
        "the rejected request.\n\n"
        "--batch FILE.jsonl classifies one JSON object per line ('-' = stdin) and prints "
        "one JSON verdict per line. Fields of a line (all optional): id, status (int), "
        "message (str), body (str), headers (object of name: value), request_bytes "
        '(int), transport (how the answer arrived, as the adapters set it: "http", "html-200", '
        '"non-sse-200", "connection", "timeout" or "stream-error"), error_type (the SDK\'s exception name), '
        "provider, request_header_bytes (int). A verdict: {id, kind, payload_related, recoverable, reason, "
        "evidence}; an unusable line gives {id, line, error}. With --score, lines carry an expected kind "
        "(and a family) and bulkhead prints the accuracy, the false payload verdicts and every miss.",
        examples="  bulkhead classify --status 413 --bytes 422400\n"
        "  bulkhead classify --status 403 --header 'cf-ray: 8f3a1c2b9d7e4a61-SJC' "
        "--body-file page.html --json\n"
        "  bulkhead classify --batch errors.jsonl     "
        '# {"id": 1, "status": 413, "body": "...", "request_bytes": 900000}\n'
        "  bulkhead classify --batch tests/fixtures/failures/heldout-vectors.jsonl --score",
    )
    classify.add_argument(
        "--status",
        type=int,
        metavar="CODE",
        help="HTTP status of the response (none: no response came back, e.g. a dropped connection)",
    )
    classify.add_argument("--body-file", metavar="FILE", help="file with the response body ('-' for stdin)")
    classify.add_argument("--message", default="", help="the exception message, if any")
    classify.add_argument(
        "--header", action="append", default=[], metavar="'K: V'", help="a response header, repeatable"
    )
    classify.add_argument("--bytes", type=int, metavar="N", help="size of the rejected request body in bytes")
    classify.add_argument(
        "--json",
        dest="classify_json",
        action="store_true",
        help="print the verdict as one JSON object instead of text",
    )
    classify.add_argument(
        "--batch", metavar="FILE.jsonl", help="classify one JSON object per line (see above); '-' reads stdin"
    )
    classify.add_argument(
        "--transport",
        choices=("http", "html-200", "non-sse-200", "connection", "timeout", "stream-error"),
        help="how the answer arrived, as the adapters flag it (default: none flagged)",
    )
    classify.add_argument(
        "--explain",
        action="store_true",
        help="spell the decision out: the rule and the generalising signal that decided, what else matched, "
        "what the words say, the vendor and the hop",
    )
    classify.add_argument(
        "--score",
        action="store_true",
        help="with --batch: compare each line's `expected` kind and print accuracy, false payload verdicts "
        "and misses (--json: as one object)",
    )

    sessions = _sub(
        sub,
        "sessions",
        help="list, show, export, rename or delete sessions",
        description="Sessions live in one SQLite database in the data folder (`bulkhead config path`). "
        "Each keeps its whole master log; export writes it as Markdown, JSON or HAR "
        "(the requests, for a network team). rm deletes one with its archive, requests and "
        "folder (never one another bulkhead holds).",
        examples="  bulkhead sessions list --here --newer-than 7d\n"
        "  bulkhead sessions prune --older-than 30d\n"
        "  bulkhead sessions show s_1a2b\n"
        "  bulkhead sessions export s_1a2b --format har -o session.har\n"
        "  bulkhead sessions rm s_1a2b --yes",
    )
    sessions_sub = sessions.add_subparsers(dest="action", metavar="ACTION", required=True)
    s_list = sessions_sub.add_parser(
        "list", help="recent sessions", description="The most recent sessions, newest first."
    )
    _add_session_filters(s_list)
    prune = sessions_sub.add_parser(
        "prune",
        help="delete the sessions not used for a while",
        description="Delete every session last used more than AGE ago (of one folder with --here / --folder), "
        "with its archive, requests and folder; never one another bulkhead holds. Asks first, listing "
        "them, unless --yes.",
    )
    prune.add_argument("--older-than", required=True, metavar="AGE", help="30d, 12h, 2w, 90m, 45s")
    prune.add_argument("--here", action="store_true", help="only this folder's sessions")
    prune.add_argument("--folder", metavar="DIR", help="only the sessions of DIR")
    prune.add_argument("--yes", "-y", dest="rm_yes", action="store_true", help="do not ask for confirmation")
    prune.add_argument("--dry-run", action="store_true", help="say what would be deleted, delete nothing")
    s_list.add_argument(
        "--json",
        dest="sessions_json",
        action="store_true",
        help="one JSON array: id, title, route, provider, model, workspace, times, messages",
    )
    rm = sessions_sub.add_parser(
        "rm",
        help="delete a session with its archive, requests and folder",
        description="Delete one session with its archive, requests and folder (asks first).",
    )
    rm.add_argument("id", help="a session id or a unique prefix of one")
    rm.add_argument("--yes", "-y", dest="rm_yes", action="store_true", help="do not ask for confirmation")
    unlock = sessions_sub.add_parser(
        "unlock",
        help="free a session another bulkhead holds (shows the holder, asks)",
        description="Free a session whose lease is held by a bulkhead that is gone — typically one on another "
        "machine (a shared home), which bulkhead cannot check. Shows who holds it and since when, and asks.",
    )
    unlock.add_argument("id", help="a session id or a unique prefix of one")
    unlock.add_argument(
        "--yes", "-y", dest="unlock_yes", action="store_true", help="do not ask for confirmation"
    )
    rename = sessions_sub.add_parser(
        "rename", help="set a session's title", description="Set a session's title."
    )
    rename.add_argument("id", help="a session id or a unique prefix of one")
    rename.add_argument("title", nargs="+", help="the new title")
    show = sessions_sub.add_parser(
        "show", help="one session's messages", description="Print one session's messages (its master log)."
    )
    show.add_argument("id", help="a session id or a unique prefix of one")
    export = sessions_sub.add_parser(
        "export",
        help="export a session",
        formatter_class=HelpFormatter,
        description="Write one session as Markdown, JSON or HAR.",
    )
    export.add_argument("id", help="a session id or a unique prefix of one")
    export.add_argument("--format", choices=("md", "json", "har"), default="md", help="what to write")
    export.add_argument("--output", "-o", metavar="FILE", help="write here instead of stdout")

    archive = _sub(
        sub,
        "archive",
        help="browse the archive of compacted content",
        description="Everything a compaction removed from the view is archived byte for byte under a "
        "key (<<ccr:KEY>> markers in the conversation). List it, search it (full text), "
        "print one segment; /recall KEY in the chat puts it back.",
        examples="  bulkhead archive list --session s_1a2b\n"
        "  bulkhead archive search 'stack trace'\n"
        "  bulkhead archive show 3f2a9c0d1e4b5a6f",
    )
    archive_sub = archive.add_subparsers(dest="action", metavar="ACTION", required=True)
    a_list = archive_sub.add_parser(
        "list", help="archived segments, newest first", description="Archived segments, newest first."
    )
    a_list.add_argument("--session", metavar="ID", help="only this session's (default: every session)")
    a_search = archive_sub.add_parser(
        "search", help="full-text search", description="Full-text search (FTS5)."
    )
    a_search.add_argument("query", help='words to find (FTS5 syntax: "a phrase", word*, a OR b)')
    a_search.add_argument("--session", metavar="ID", help="only this session's (default: every session)")
    a_show = archive_sub.add_parser(
        "show",
        help="print an archived segment (control characters shown as escapes)",
        description="Print one archived segment as it was archived; control characters "
        "and escape sequences are shown as visible escapes unless --raw.",
    )
    a_show.add_argument("key", help="the 16 hex digits of the key, or a [[ccr:KEY]] marker")
    a_show.add_argument(
        "--raw",
        action="store_true",
        help="the stored bytes unchanged, escape sequences included (for a file or a pipe)",
    )

    config = _sub(
        sub,
        "config",
        help="create, locate, show or check the configuration",
        description="bulkhead reads config.toml (BULKHEAD_CONFIG names another file), then BULKHEAD_* "
        "environment variables, then flags. It never writes your config.toml: what it "
        "learns goes to state.toml. `check` reports every problem with its file:line and "
        "the routes' credentials.",
        examples="  bulkhead config init     write a commented starter config.toml\n"
        "  bulkhead config check    every problem, with its line; exit 2 if any\n"
        "  bulkhead config show     each setting's value and where it came from",
    )
    config_sub = config.add_subparsers(dest="action", metavar="ACTION", required=True)
    config_sub.add_parser("init", help="write a commented starter config.toml")
    config_sub.add_parser("path", help="print where config.toml, state.toml and the data live")
    config_sub.add_parser("show", help="print the effective settings and where each came from")
    config_sub.add_parser("check", help="validate config.toml and the routes' credentials")

    mcp = _sub(
        sub,
        "mcp",
        help="MCP servers: state, tools, the bytes their definitions add",
        description="Start the configured MCP servers (config.toml's [mcp_servers.NAME] and the workspace's "
        ".mcp.json) and say how each is: its state, its tools and the bytes their definitions "
        "add to every request. A workspace's .mcp.json servers start only once allowed "
        "(`approve`, or the question the TUI and -p ask).",
        examples="  bulkhead mcp list\n  bulkhead mcp tools github\n  bulkhead mcp ping github",
    )
    mcp_sub = mcp.add_subparsers(dest="action", metavar="ACTION", required=True)
    m_list = mcp_sub.add_parser("list", help="start every server, show its state, tools and definition bytes")
    m_tools = mcp_sub.add_parser("tools", help="one server's tools (name, read-only, bytes, description)")
    m_tools.add_argument("name", help="the server's name")
    m_ping = mcp_sub.add_parser("ping", help="time one server's start and a round trip")
    m_ping.add_argument("name", help="the server's name")
    for sub_parser in (m_list, m_tools, m_ping):
        sub_parser.add_argument(
            "--yes",
            "-y",
            dest="mcp_yes",
            action="store_true",
            help="start this workspace's .mcp.json servers without asking (not remembered)",
        )
    m_list.add_argument("--json", dest="mcp_json", action="store_true", help="one JSON object per server")
    m_approve = mcp_sub.add_parser(
        "approve", help="allow this workspace's .mcp.json servers (all, or those named)"
    )
    m_approve.add_argument("names", nargs="*", metavar="NAME", help="servers to allow (default: all of them)")
    mcp_sub.add_parser("reset", help="forget the answers given for this workspace's .mcp.json servers")

    permissions = _sub(
        sub,
        "permissions",
        help="the permission rules in force; approve a workspace's rule files",
        description="A workspace's rule files (.claude/settings.json, .claude/settings.local.json, "
        ".bulkhead/settings.toml) come with the repository: their deny and ask rules are always in force, "
        "their allow rules only once you approved them (asked in the TUI, on the terminal by -p, or here). "
        "The answer is kept in state.toml with a fingerprint of the allow rules: a change asks again.",
        examples="  bulkhead permissions list\n"
        "  bulkhead permissions approve                       every rule file of this workspace\n"
        "  bulkhead permissions approve .claude/settings.json\n"
        "  bulkhead permissions reset                         forget the answers",
    )
    permissions_sub = permissions.add_subparsers(dest="action", metavar="ACTION", required=True)
    permissions_sub.add_parser("list", help="every rule in force with its file, and the rules held back")
    for action, text in (
        ("approve", "put the allow rules of this workspace's rule files in force (all, or those named)"),
        ("deny", "keep the allow rules of this workspace's rule files off, without asking again"),
    ):
        p_action = permissions_sub.add_parser(action, help=text)
        p_action.add_argument(
            "files", nargs="*", metavar="FILE", help="e.g. .claude/settings.json (default: all)"
        )
    permissions_sub.add_parser("reset", help="forget the answers for this workspace's rule files")

    from app.commands.proxy_cmd import add_parser as add_proxy_parser  # its flags live beside its code

    add_proxy_parser(sub, HelpFormatter, port)

    auth = _sub(
        sub,
        "auth",
        help="store API keys in the system keyring",
        description="Store, check or delete an API key in the system keyring (read without echo, or "
        "from stdin when piped). Without a keyring, export ANTHROPIC_API_KEY / OPENAI_API_KEY "
        "(or a route's api_key_env) instead. Keys never reach the database, logs or exports.",
        examples="  bulkhead auth set anthropic\n"
        "  bulkhead auth status\n"
        "  pass show work/openai | bulkhead auth set openai",
    )
    auth_sub = auth.add_subparsers(dest="action", metavar="ACTION", required=True)
    for action, text in (
        ("set", "store a key (read without echo)"),
        ("status", "which keys are found where"),
        ("delete", "remove a stored key"),
    ):
        p = auth_sub.add_parser(action, help=text, description=text[0].upper() + text[1:] + ".")
        p.add_argument(
            "provider",
            nargs="?" if action == "status" else None,
            choices=("anthropic", "openai"),
            help="whose key" + (" (default: both)" if action == "status" else ""),
        )
    from app.commands import doctor_cmd, gateway_cmd  # issue 38: each registers its own sub-command

    gateway_cmd.add_parser(sub, _sub)
    doctor_cmd.add_parser(sub, _sub)
    return parser


_COMMANDS = {
    "lab": "app.commands.lab_cmd",
    "probe": "app.commands.probe_cmd",
    "classify": "app.commands.classify_cmd",
    "sessions": "app.commands.sessions_cmd",
    "archive": "app.commands.archive_cmd",
    "config": "app.commands.config_cmd",
    "auth": "app.commands.auth_cmd",
    "mcp": "app.commands.mcp_cmd",
    "proxy": "app.ui.proxy_run",  # its live view; status and --headless in app.commands.proxy_cmd
    "gateway": "app.commands.gateway_cmd",
    "doctor": "app.commands.doctor_cmd",
    "permissions": "app.commands.permissions_cmd",
}


class UsageError(Exception):
    """A command line that cannot mean anything: said in one line, exit status 2."""


def split_prompt(parser: argparse.ArgumentParser, argv: list[str]) -> tuple[list[str], str]:
    """`bulkhead [flags] "prompt" [flags]`: (the command line without the prompt, the prompt) — the TUI opens
    with it sent. A sub-command's name is the sub-command (`--` before a prompt that is one); with -p the
    prompt is -p's. A word close to a sub-command's name is taken for a typo, and more than one word for
    an unquoted prompt: both are refused with what to type."""
    import difflib

    takes_value = {
        option: action.nargs not in (0, "?") and action.nargs != argparse.OPTIONAL
        for action in parser._actions
        for option in action.option_strings
    }
    positions: list[int] = []
    wanting = -1  # where a -p without its prompt is
    index = 0
    while index < len(argv):
        token = argv[index]
        if token == "--":
            rest = argv[index + 1 :]
            if len(rest) > 1:
                raise UsageError(
                    f'give the prompt as one argument, in quotes: bulkhead -- "{" ".join(rest)}"'
                )
            return argv[:index], rest[0] if rest else ""
        if token in ("-p", "--print") or token.startswith("--print="):
            given = "=" in token or (index + 1 < len(argv) and not argv[index + 1].startswith("-"))
            if given or positions:
                return argv, ""  # one-shot: -p has its prompt
            wanting = index  # `-p -c "prompt"`: the prompt comes after other flags
            index += 1
            continue
        if token.startswith("-") and token != "-":
            index += 2 if takes_value.get(token, False) and "=" not in token else 1
            continue
        if not positions and token in _COMMANDS:
            return argv, ""  # a sub-command: its own parser reads the rest
        positions.append(index)
        index += 1
    if not positions:
        return argv, ""
    if wanting >= 0:  # -p's prompt, moved next to it (argparse would take it for a sub-command)
        moved = [token for i, token in enumerate(argv) if i != positions[0]]
        moved.insert(wanting + 1, argv[positions[0]])
        return moved, ""
    words = [argv[i] for i in positions]
    if len(words) > 1:
        raise UsageError(f'give the prompt as one argument, in quotes: bulkhead "{" ".join(words)}"')
    prompt = words[0]
    near = difflib.get_close_matches(prompt, list(_COMMANDS), n=1, cutoff=0.75)
    if near and " " not in prompt:
        raise UsageError(
            f"{prompt!r} is not a command — did you mean `bulkhead {near[0]}`? To send it to the model as a "
            f'prompt: bulkhead -- "{prompt}"'
        )
    return [token for i, token in enumerate(argv) if i != positions[0]], prompt


def _config_or_store_error(exc: Exception, display) -> int:
    from app.redact import redact_text

    print(f"bulkhead: {display(redact_text(str(exc)))}", file=sys.stderr)
    return getattr(exc, "exit_code", EXIT_USAGE)


def main(argv: list[str] | None = None) -> int:
    # No cyclic collections while starting: the TUI's imports, stylesheets and first widgets allocate ~80,000
    # objects, and the collector went over them again and again (~30 ms before the first frame, a third of it
    # one full collection). The TUI turns it back on once its first frame is drawn (`app.ui.startup.
    # collect_from_now`); every other command at once.
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _main(argv, collecting)
    finally:
        if collecting:
            gc.enable()


def _main(argv: list[str] | None, collecting: bool) -> int:
    from app.config import ConfigError
    from app.console import prepare_streams
    from app.textsafe import SafeStream, display

    prepare_streams()  # a terminal that is not UTF-8 gets ASCII stand-ins, never a crash or a lost chunk
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        argv, initial_prompt = split_prompt(parser, argv)
    except UsageError as exc:
        print(f"bulkhead: {exc}", file=sys.stderr)
        return EXIT_USAGE
    args = parser.parse_args(argv)
    args.initial_prompt = initial_prompt
    if args.version:
        from app import __version__

        print(f"bulkhead {__version__}")
        return EXIT_OK
    tui = not args.command and args.prompt is None
    if collecting and not tui:
        gc.enable()
    if args.initial_prompt and not tui:
        print("bulkhead: a prompt before a sub-command means nothing — put it after -p", file=sys.stderr)
        return EXIT_USAGE
    streams = (sys.stdout, sys.stderr)
    if not tui:  # what a command prints may come from outside (answers, bodies, files): app/textsafe.py
        sys.stdout, sys.stderr = SafeStream(sys.stdout), SafeStream(sys.stderr)
    try:
        if args.command:
            module = importlib.import_module(_COMMANDS[args.command])
        elif args.prompt is not None:
            module = importlib.import_module("app.commands.oneshot")
        else:
            module = importlib.import_module("app.ui.run")
        return int(module.run(args) or 0)
    except ConfigError as exc:
        return _config_or_store_error(exc, display)
    except KeyboardInterrupt:
        print("bulkhead: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `bulkhead … | head`: the reader left; exit quietly
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    except OSError as exc:  # a full disk, a folder without permission: one clear line, no traceback
        where = f" ({exc.filename})" if getattr(exc, "filename", None) else ""
        print(
            display(
                f"bulkhead: {exc.strerror or exc}{where} — check free space and permissions, or set "
                f"BULKHEAD_HOME"
            ),
            file=sys.stderr,
        )
        return EXIT_ERROR
    except Exception as exc:
        # The store (sqlite) is imported by what uses it, not here: the TUI's first frame does not wait for it.
        store = sys.modules.get("app.store")
        if store is not None and isinstance(exc, store.StoreError):
            return _config_or_store_error(exc, display)
        from app.engine.session import SessionNotFound

        if not isinstance(exc, SessionNotFound):
            raise
        print(display(f"bulkhead: {exc}"), file=sys.stderr)  # --resume of an id that does not exist
        return EXIT_USAGE
    finally:
        if not tui:
            for stream in (sys.stdout, sys.stderr):
                if isinstance(stream, SafeStream):
                    with contextlib.suppress(Exception):
                        stream.end()
            sys.stdout, sys.stderr = streams


if __name__ == "__main__":
    sys.exit(main())
