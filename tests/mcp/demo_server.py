"""A real MCP server for the tests, written with the `mcp` SDK's server API (MCPServer).

    python3 tests/mcp/demo_server.py                 # stdio
    python3 tests/mcp/demo_server.py --http PORT     # streamable HTTP on 127.0.0.1:PORT/mcp
    … --big N          N extra tools with long descriptions (a ~500-byte definition each)
    … --hang           never answers (sleeps before serving): a server that hangs at startup
    … --crash          writes a traceback-like line to stderr and exits at once
    … --say-args       writes its arguments to stderr when it starts (a key passed in args, echoed)
    … --chatter BYTES  then writes about BYTES of stderr lines repeating them (a server that logs too much)
    … --garbage        writes a line that is not JSON-RPC to stdout first (the SDK logs a traceback)
    … --wait-for PATH  does not answer before PATH exists (a server slow to start, for as long as a test wants)

Tools: echo (read-only), add (structured result), tiny_image, note_resource, resource_link,
write_note (not read-only), slow, crash (exits mid-call), big_output, context_compact (the seed's
MCP context engine; its behaviour is set by DEMO_COMPACT = ok | error | empty | hang | refuse).
"""

from __future__ import annotations

import base64
import os
import sys
import time
from typing import TypedDict


def _fail_early(argv: list[str]) -> None:
    """--crash and --hang act before the SDK is imported, so they do what they say even on a slow machine."""
    if "--crash" in argv:
        print(
            "Traceback (most recent call last):\n  demo: cannot open the database (exit 2)",
            file=sys.stderr,
            flush=True,
        )
        sys.exit(2)
    if "--hang" in argv:
        print("demo: waiting for something that never comes", file=sys.stderr, flush=True)
        time.sleep(3600)
    if "--wait-for" in argv:
        gate = argv[argv.index("--wait-for") + 1]
        # the test opens the gate; a test that never does leaves a hung server
        while not os.path.exists(gate):
            time.sleep(0.02)
    if "--garbage" in argv:
        print("this is not JSON-RPC", flush=True)
    if "--say-args" in argv:
        print(f"demo: started with {' '.join(argv)}", file=sys.stderr, flush=True)
        if "--chatter" in argv:
            block = f"demo: chatter {' '.join(argv)}\n" * 500
            for _ in range(int(argv[argv.index("--chatter") + 1]) // len(block) + 1):
                sys.stderr.write(block)
            sys.stderr.flush()


if __name__ == "__main__":
    _fail_early(sys.argv[1:])

from mcp.server.mcpserver import MCPServer  # noqa: E402
from mcp.types import (  # noqa: E402
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
    ToolAnnotations,
)

TINY_PNG = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489"  # a whole 1×1 PNG
        "0000000b49444154789c6360000200000500017a5eab3f0000000049454e44ae426082"
    )
).decode()
READ_ONLY = ToolAnnotations(readOnlyHint=True)

server = MCPServer("demo", instructions="A demo server for bulkhead's tests.")


@server.tool(annotations=READ_ONLY)
def echo(text: str) -> str:
    """Echo the text back, unchanged."""
    return text


class Sum(TypedDict):
    sum: int


@server.tool(annotations=READ_ONLY)
def add(a: int, b: int) -> Sum:
    """Add two whole numbers; the result is structured."""
    return {"sum": a + b}


@server.tool(annotations=READ_ONLY)
def tiny_image() -> list:
    """A 1×1 PNG image and a caption."""
    return [
        TextContent(type="text", text="a tiny image"),
        ImageContent(type="image", data=TINY_PNG, mime_type="image/png"),
    ]


@server.tool(annotations=READ_ONLY)
def note_resource() -> list:
    """An embedded text resource."""
    return [
        EmbeddedResource(
            type="resource",
            resource=TextResourceContents(
                uri="demo://notes/1", mime_type="text/plain", text="the note says: okapi"
            ),
        )
    ]


@server.tool(annotations=READ_ONLY)
def resource_link() -> list:
    """A link to a resource."""
    return [
        ResourceLink(
            type="resource_link",
            name="Readme",
            uri="demo://readme",
            mime_type="text/markdown",
            description="the project readme",
        )
    ]


@server.tool()
def write_note(text: str) -> str:
    """Store a note (changes state: not read-only)."""
    return f"stored: {text}"


@server.tool(annotations=READ_ONLY)
def slow(seconds: float) -> str:
    """Sleep for that many seconds, then answer."""
    time.sleep(seconds)
    return f"slept {seconds}"


@server.tool()
def crash() -> str:
    """Exit the server in the middle of the call."""
    print("demo: crashing on request (exit 3)", file=sys.stderr, flush=True)
    os._exit(3)


@server.tool(annotations=READ_ONLY)
def big_output(size: int) -> str:
    """Return `size` characters of numbered lines."""
    lines, total, n = [], 0, 0
    while total < size:
        n += 1
        line = f"line {n:06d} of the big output\n"
        lines.append(line)
        total += len(line)
    return "".join(lines)[:size]


@server.tool()
def context_compact(segment: str, budget_chars: int, instruction: str = "") -> str:
    """Summarize a conversation segment within budget_chars (bulkhead's MCP context engine)."""
    mode = os.environ.get("DEMO_COMPACT", "ok")
    with open(os.environ.get("DEMO_COMPACT_LOG", os.devnull), "a", encoding="utf-8") as log:
        log.write(f"{len(segment)}\t{budget_chars}\t{instruction}\n")
    if mode == "error":
        raise RuntimeError("the context engine is down")
    if mode == "empty":
        return ""
    if mode == "hang":
        time.sleep(3600)
    if mode == "refuse":
        return "I can't help with that."
    head = " ".join(segment.split())[:200]
    text = (
        f"MCP demo summary ({len(segment):,} chars in). Instruction: {instruction or 'none'}. "
        f"The conversation began: {head}"
    )
    return text[:budget_chars]


def _add_big_tools(count: int) -> None:
    def make(i: int):
        def tool(query: str, limit: int = 10) -> str:
            return f"big tool {i}: {query} ({limit})"

        return tool

    filler = (
        "This tool belongs to a very large catalogue that exists to test how bulkhead keeps tool "
        "definitions from crowding the request: it searches records of kind {i} by a query and returns "
        "at most `limit` matches, ordered by relevance, with their identifiers and short descriptions. "
    )
    for i in range(count):
        server.add_tool(
            make(i), name=f"records_{i:04d}", description=filler.format(i=i) * 2, annotations=READ_ONLY
        )


def main(argv: list[str]) -> None:
    if "--big" in argv:
        _add_big_tools(int(argv[argv.index("--big") + 1]))
    if "--http" in argv:
        _serve_http(int(argv[argv.index("--http") + 1]))
    else:
        server.run()


def _serve_http(port: int) -> None:
    """Streamable HTTP on 127.0.0.1:PORT/mcp; with DEMO_TOKEN set, a request without
    `Authorization: Bearer $DEMO_TOKEN` gets a 401 (so the tests see bearer_token_env arrive)."""
    import uvicorn

    app = server.streamable_http_app()
    token = os.environ.get("DEMO_TOKEN")

    async def guarded(scope, receive, send):
        if token and scope["type"] == "http":
            headers = dict(scope.get("headers") or [])
            if headers.get(b"authorization", b"").decode() != f"Bearer {token}":
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [(b"content-type", b"application/json")],
                    }
                )
                await send(
                    {"type": "http.response.body", "body": b'{"error": "missing or wrong bearer token"}'}
                )
                return
        await app(scope, receive, send)

    uvicorn.run(guarded, host="127.0.0.1", port=port, log_level="warning", lifespan="on")


if __name__ == "__main__":
    main(sys.argv[1:])
