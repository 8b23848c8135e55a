"""`bulkhead proxy [--route NAME | --upstream URL] [--translate] [--early-reject] [--shrink] --headless`
and `bulkhead proxy status`.

The parser is built here (`add_parser`, called by `app.cli`), so this module imports only argparse at the
top: `bulkhead --help` stays instant.
"""

from __future__ import annotations

import argparse
from typing import Any

EXIT_OK, EXIT_ERROR, EXIT_USAGE = 0, 1, 2


def add_parser(sub: Any, formatter: type[argparse.HelpFormatter], port_type: Any) -> None:
    proxy = sub.add_parser(
        "proxy",
        help="put bulkhead's gateway knowledge in front of Claude Code, Codex or any SDK",
        formatter_class=formatter,
        description="A local reverse proxy for the Anthropic Messages API and OpenAI's Chat Completions and "
        "Responses APIs. Point another agent's base URL at it (it prints the lines to paste). By "
        "default it changes nothing (observe): bodies go upstream byte for byte, streamed both "
        "ways, and every exchange is recorded with its classification (`bulkhead sessions export "
        "ID --format har`). --translate turns a gateway's size refusal (an nginx 413 page, a WAF "
        "page judged size, a reset judged size) into the client's own provider's overflow error, so "
        "its own compaction runs, and a content block into a non-retryable error; --early-reject "
        "answers a request over the learned cap without sending it; --shrink rewrites it to fit. "
        "Learned caps are shared with bulkhead's own routes to the same endpoint (state.toml). "
        "The client's API key passes through untouched and is never stored or logged.",
        epilog="examples:\n"
        "  bulkhead proxy --upstream https://llm-gw.corp.example --headless\n"
        "  bulkhead proxy --route work --translate --headless\n"
        "  bulkhead proxy --upstream http://127.0.0.1:8787 --translate --shrink --headless   (the lab)\n"
        "  bulkhead proxy status",
    )
    where = proxy.add_mutually_exclusive_group()
    where.add_argument(
        "--route",
        "-r",
        dest="proxy_route",
        metavar="NAME",
        help="forward to this route (its base URL, CA bundle)",
    )
    where.add_argument(
        "--upstream", metavar="URL", help="forward to URL (the client's path appended: URL/v1/messages, …)"
    )
    proxy.add_argument(
        "--port",
        dest="proxy_port",
        type=port_type,
        metavar="PORT",
        help="port to listen on (default: proxy_port in config.toml, else 8788; 0: any free port)",
    )
    proxy.add_argument(
        "--bind",
        metavar="ADDRESS",
        help="listen on ADDRESS instead of 127.0.0.1 (a warning says who can then use it)",
    )
    proxy.add_argument(
        "--translate",
        action="store_true",
        help="a size refusal becomes the client's own overflow error; a content block a non-retryable one",
    )
    proxy.add_argument(
        "--early-reject",
        action="store_true",
        help="answer a request over the learned cap at once, without sending it (implies --translate)",
    )
    proxy.add_argument(
        "--shrink",
        action="store_true",
        help="rewrite a request over the learned cap to fit: old tool results become stable stubs, "
        "originals archived (implies --translate)",
    )
    proxy.add_argument(
        "--cap", metavar="SIZE", help="a body cap of your own (e.g. 512KB); the smaller one wins"
    )
    proxy.add_argument(
        "--anthropic-error",
        choices=("prompt-too-long", "request-too-large"),
        help="how a size refusal is worded for Anthropic clients (default: proxy_anthropic_error in config)",
    )
    proxy.add_argument(
        "--header",
        action="append",
        default=[],
        metavar="'NAME: VALUE'",
        help="add a header to every upstream request (e.g. a gateway's own token); repeatable",
    )
    proxy.add_argument(
        "--headless",
        action="store_true",
        help="no live view: one line per request on stdout (the live view is not built yet, so this is "
        "also what runs without the flag)",
    )
    actions = proxy.add_subparsers(dest="proxy_action", metavar="[status]", title="actions")
    status = actions.add_parser(
        "status",
        help="the running proxies: where, upstream, modes, counts and caps",
        description="Each running bulkhead proxy of this data folder: its address, upstream and modes, "
        "the requests it has seen (by outcome, kind and client) and the caps in force.",
    )
    status.add_argument("--json", dest="status_json", action="store_true", help="one JSON array")


def run(args: Any) -> int:
    if getattr(args, "proxy_action", None) == "status":
        from app.proxy.serve import print_status

        return print_status(as_json=bool(getattr(args, "status_json", False)))
    from app.proxy.serve import serve_from_args

    return serve_from_args(args)
