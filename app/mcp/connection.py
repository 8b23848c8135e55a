"""One MCP server: started in the background, watched, called, stopped — through the `mcp` SDK.

    connection = McpConnection(spec, log_path=folder / "mcp" / "demo.stderr.log", startup_timeout=30,
                               tool_timeout=120, on_change=...)
    connection.start()                      # returns at once; a task connects and lists the tools
    await connection.wait_settled()         # ready, failed, …
    result = await connection.call("echo", {"text": "hi"}, cancel=esc_event)   # mcp CallToolResult

The SDK's `Client` is an async context manager that must be entered and left by the same task,
so one runner task owns it: it connects (bounded by the startup timeout), lists the tools, then
waits until it is told to stop or the server goes away. Calls come from other tasks and are
bounded by the tool timeout; Esc cancels one. A stdio server's stderr goes to `log_path`, and
the last lines of it explain a failure. A server that exits is noticed when its stdout ends
(`_WatchedStream`): the state becomes `crashed` with those lines, and the session goes on
without its tools until `/mcp restart NAME`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from app.config_mcp import McpServerSpec
from app.mcp.stderr_log import StderrLog

STDERR_TAIL_LINES = 8  # lines of a server's stderr shown with a failure
STDERR_TAIL_BYTES = 16 * 1024  # read at most this much from the end of the log for them
MAX_TOOL_PAGES = 100  # tools/list pages followed before giving up on a paginator that never ends
CLIENT_NAME = "bulkhead"


class ServerState(StrEnum):
    PENDING = "pending"  # a project server the user was not asked about yet
    DENIED = "denied"  # a project server the user said no to
    DISABLED = "disabled"  # enabled = false, or a definition that cannot start (`problem`)
    STARTING = "starting"
    READY = "ready"
    FAILED = "failed"  # did not start: command missing, handshake error, startup timeout
    CRASHED = "crashed"  # was ready, then went away
    STOPPED = "stopped"


SETTLED = frozenset(
    {
        ServerState.READY,
        ServerState.FAILED,
        ServerState.CRASHED,
        ServerState.STOPPED,
        ServerState.DISABLED,
        ServerState.DENIED,
        ServerState.PENDING,
    }
)


@dataclass(frozen=True)
class McpTool:
    """A tool as the server lists it (names and text exactly as the server sent them)."""

    server: str
    name: str
    description: str
    input_schema: Mapping[str, Any] = field(hash=False)
    read_only: bool = False  # annotations.readOnlyHint
    title: str = ""


@dataclass(frozen=True)
class ServerStatus:
    """A snapshot of one server for the front ends (`/mcp`, `bulkhead mcp list`, events)."""

    name: str
    state: ServerState
    transport: str
    source: str
    describe: str
    reason: str = ""
    stderr_tail: tuple[str, ...] = ()
    tools: tuple[McpTool, ...] = ()
    log_path: str = ""
    server_version: str = ""
    protocol: str = ""
    started_seconds: float | None = None  # how long it took to become ready


class McpCallError(Exception):
    """A tool call that did not produce a result: the server is not running, timed out, went away."""

    def __init__(self, message: str, *, lost: bool = False) -> None:
        super().__init__(message)
        self.lost = lost  # the connection is gone: the server is marked crashed


def sdk_available() -> bool:
    try:
        import importlib.util

        return importlib.util.find_spec("mcp") is not None
    except (ImportError, ValueError):
        return False


def describe_error(exc: BaseException) -> str:
    """One line for an exception, looking inside the exception groups anyio's task groups raise."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, FileNotFoundError):
        return f"command not found: {exc.filename or exc}"
    if isinstance(exc, PermissionError):
        return f"not allowed to run it: {exc.filename or exc}"
    text = str(exc).strip() or type(exc).__name__
    name = type(exc).__name__
    return text if name in ("MCPError", "McpCallError") or text.startswith(name) else f"{name}: {text}"


def read_tail(path: Path, start: int = 0, lines: int = STDERR_TAIL_LINES) -> tuple[str, ...]:
    """The last `lines` non-empty lines written to `path` after offset `start` (raw, untrusted text)."""
    try:
        size = path.stat().st_size
        if start > size:  # the log rotated since: what is there is all new
            start = 0
        with open(path, "rb") as handle:
            begin = max(start, size - STDERR_TAIL_BYTES)
            handle.seek(begin)
            data = handle.read()
    except OSError:
        return ()
    text = data.decode("utf-8", "replace")
    found = [line.rstrip() for line in text.splitlines() if line.strip()]
    return tuple(found[-lines:])


def result_size(result: Any) -> int:
    """The bytes a tool result carries (its text, data and structured content), counted without copying."""
    total = 0
    for block in getattr(result, "content", None) or ():
        for name in ("text", "data", "blob"):
            value = getattr(block, name, None)
            if isinstance(value, str):
                total += len(value)
        resource = getattr(block, "resource", None)
        for name in ("text", "blob"):
            value = getattr(resource, name, None) if resource is not None else None
            if isinstance(value, str):
                total += len(value)
    structured = getattr(result, "structuredContent", None)
    if structured:
        import json

        total += len(json.dumps(structured, default=str))
    return total


def route_sdk_logging(folder: Path) -> None:
    """The mcp SDK logs tracebacks (a server that misbehaves, a closed pipe) through `logging`; with no
    handler Python prints them on stderr — into `-p`'s output and over the TUI. They go to
    `FOLDER/sdk.log` instead, redacted (once per process)."""
    import logging

    logger = logging.getLogger("mcp")
    if getattr(logger, "_bulkhead_routed", False):
        return
    logger.propagate = False
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        handler: logging.Handler = logging.FileHandler(folder / "sdk.log", encoding="utf-8")
    except OSError:
        handler = logging.NullHandler()

    class Redacting(logging.Filter):
        def filter(self, record: logging.LogRecord) -> bool:
            from app.redact import redact_text

            record.msg = redact_text(record.getMessage())
            record.args = ()
            if record.exc_info:
                import traceback

                record.msg += "\n" + redact_text("".join(traceback.format_exception(*record.exc_info)))
                record.exc_info = None
            return True

    handler.addFilter(Redacting())
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logger.addHandler(handler)
    logger._bulkhead_routed = True  # type: ignore[attr-defined]


class _WatchedStream:
    """The read side of a transport, telling `on_eof` when the server's output ends (it exited)."""

    def __init__(self, inner: Any, on_eof: Callable[[], None]) -> None:
        self._inner = inner
        self._on_eof = on_eof

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def __aenter__(self) -> _WatchedStream:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> Any:
        return await self._inner.__aexit__(*exc)

    def __aiter__(self) -> _WatchedStream:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self._inner.__anext__()
        except StopAsyncIteration:
            self._on_eof()
            raise

    async def receive(self) -> Any:
        try:
            return await self._inner.receive()
        except Exception:
            self._on_eof()
            raise

    async def aclose(self) -> None:
        await self._inner.aclose()


@contextlib.asynccontextmanager
async def _watched(transport: Any, on_eof: Callable[[], None]):
    async with transport as (read_stream, write_stream):
        yield _WatchedStream(read_stream, on_eof), write_stream


class McpConnection:
    def __init__(
        self,
        spec: McpServerSpec,
        *,
        log_path: Path,
        startup_timeout: float,
        tool_timeout: float,
        on_change: Callable[[McpConnection], None] | None = None,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
        log_max_bytes: int = 1024 * 1024,
        message_max_bytes: int = 16 * 1024 * 1024,
    ) -> None:
        self.spec = spec
        self.log_path = Path(log_path)
        self.log_max_bytes = log_max_bytes
        self.message_max_bytes = message_max_bytes
        self.startup_timeout = spec.startup_timeout or startup_timeout
        self.tool_timeout = spec.tool_timeout or tool_timeout
        self.on_change = on_change
        self.env = os.environ if env is None else env
        self.cwd = cwd
        self.state = ServerState.DISABLED if (not spec.enabled or spec.problem) else ServerState.STOPPED
        self.reason = spec.problem or ("enabled = false" if not spec.enabled else "")
        self.tools: tuple[McpTool, ...] = ()
        self.stderr_tail: tuple[str, ...] = ()
        self.server_version = ""
        self.protocol = ""
        self.started_seconds: float | None = None
        self._client: Any = None
        self._runner: asyncio.Task | None = None
        self._stop: asyncio.Event | None = None
        self._settled = asyncio.Event() if self.state in SETTLED else None
        self._log_start = 0
        self._stderr_log: StderrLog | None = None
        self._gone = asyncio.Event()
        self._http_error = ""  # the last HTTP refusal of a remote server, which the SDK does not name

    # -- state ------------------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self.spec.name

    def status(self) -> ServerStatus:
        return ServerStatus(
            name=self.name,
            state=self.state,
            transport=self.spec.transport,
            source=self.spec.source,
            describe=self.spec.describe(),
            reason=self.reason,
            stderr_tail=self.stderr_tail,
            tools=self.tools,
            log_path=str(self.log_path) if self.spec.transport == "stdio" else "",
            server_version=self.server_version,
            protocol=self.protocol,
            started_seconds=self.started_seconds,
        )

    def _set(self, state: ServerState, reason: str = "") -> None:
        self.state = state
        self.reason = reason
        if state in (ServerState.FAILED, ServerState.CRASHED):
            if self._stderr_log is not None:
                self._stderr_log.settle()  # its last words reach the log before they are read
            self.stderr_tail = read_tail(self.log_path, self._log_start)
        if state in SETTLED and self._settled is not None:
            self._settled.set()
        if self.on_change is not None:
            with contextlib.suppress(Exception):
                self.on_change(self)

    def mark(self, state: ServerState, reason: str = "") -> None:
        """Set a state that needs no connection (pending, denied, disabled)."""
        self._settled = asyncio.Event()
        self._set(state, reason)

    async def wait_settled(self, timeout: float | None = None) -> ServerState:
        if self._settled is not None and not self._settled.is_set():
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout):
                    await self._settled.wait()
        return self.state

    # -- lifecycle --------------------------------------------------------------------------------
    def expect(self) -> None:
        """Show the server as starting before it is launched (while the SDK is imported), so a turn
        waits for it instead of going out without its tools."""
        if (
            self.spec.enabled
            and not self.spec.problem
            and self.state not in (ServerState.STARTING, ServerState.READY)
        ):
            self._settled = asyncio.Event()
            self.state = ServerState.STARTING

    def start(self) -> None:
        """Connect in the background (a no-op for a disabled server or one already running)."""
        if self.spec.problem or not self.spec.enabled:
            self.mark(ServerState.DISABLED, self.spec.problem or "enabled = false")
            return
        if self._runner is not None and not self._runner.done():
            return
        self._stop = asyncio.Event()
        # the event one `expect` made is kept: a turn may be waiting on it
        if self._settled is None or self._settled.is_set():
            self._settled = asyncio.Event()
        self._gone = asyncio.Event()
        self._http_error = ""
        self.tools = ()
        self.stderr_tail = ()
        self._set(ServerState.STARTING)
        self._runner = asyncio.get_running_loop().create_task(self._run(), name=f"mcp {self.name}")

    async def stop(self) -> None:
        runner = self._runner
        if runner is None:
            return
        if self._stop is not None:
            self._stop.set()
        if not runner.done() and self.state == ServerState.STARTING:
            runner.cancel()  # not connected yet: nothing to end politely, and a hung start must not hold the exit
            with contextlib.suppress(BaseException):
                await runner
        elif not runner.done():
            try:
                async with asyncio.timeout(10):
                    await asyncio.shield(runner)
            except (TimeoutError, asyncio.CancelledError):
                runner.cancel()
                with contextlib.suppress(BaseException):
                    await runner
            except Exception:  # already reported by the runner
                pass
        self._runner = None

    async def restart(self) -> None:
        await self.stop()
        self.start()

    async def _run(self) -> None:
        started = time.monotonic()
        try:
            async with contextlib.AsyncExitStack() as stack:
                client = await self._connect(stack)
                self._client = client
                self.started_seconds = time.monotonic() - started
                self._set(ServerState.READY)
                waiters = {asyncio.ensure_future(self._stop.wait()), asyncio.ensure_future(self._gone.wait())}
                try:
                    await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    for waiter in waiters:
                        waiter.cancel()
                self._client = None
                if self._gone.is_set() and not self._stop.is_set() and self.state == ServerState.READY:
                    self._set(ServerState.CRASHED, "the server exited (its output ended)")
        except asyncio.CancelledError:
            self._client = None
            self._set(ServerState.STOPPED, "stopped")
            raise
        except TimeoutError:
            self._client = None
            self._set(
                ServerState.FAILED, f"did not answer within {self.startup_timeout:g} s (mcp_startup_timeout)"
            )
            return
        except BaseException as exc:  # anything the SDK or the server does is a failure
            self._client = None
            if isinstance(exc, KeyboardInterrupt | SystemExit):
                raise
            why = describe_error(exc)
            if self._http_error:
                why = f"{self._http_error} ({why})"
            elif why == "Connection closed" and self.spec.transport == "stdio":
                why = "the server exited before it answered (connection closed)"
            if self.state == ServerState.READY:
                self._set(ServerState.CRASHED, why)
            elif self.state == ServerState.STARTING:
                self._set(ServerState.FAILED, why)
            return
        if self.state not in (ServerState.CRASHED, ServerState.FAILED):
            self._set(ServerState.STOPPED, "stopped")

    async def _connect(self, stack: contextlib.AsyncExitStack) -> Any:
        """Enter the SDK client (bounded by the startup timeout) and list the tools; returns the client."""
        from mcp import Client
        from mcp.types import Implementation

        from app import __version__

        transport = await self._transport(stack)
        client = Client(
            _watched(transport, self._server_closed),
            client_info=Implementation(name=CLIENT_NAME, version=__version__),
        )
        async with asyncio.timeout(self.startup_timeout):
            await stack.enter_async_context(client)
            tools = await self._list_tools(client)
        info = client.server_info
        self.server_version = f"{info.name} {info.version}".strip() if info is not None else ""
        self.protocol = client.protocol_version
        self.tools = tools
        return client

    async def _transport(self, stack: contextlib.AsyncExitStack) -> Any:
        spec = self.spec
        if spec.transport == "stdio":
            from mcp.client.stdio import StdioServerParameters, stdio_client

            log = StderrLog(
                self.log_path, max_bytes=self.log_max_bytes
            )  # redacted, rotated (app/mcp/stderr_log.py)
            errlog = log.open(f"--- {time.strftime('%Y-%m-%d %H:%M:%S')} starting {spec.describe()}")
            stack.callback(log.close)
            self._stderr_log = log
            self._log_start = log.size()
            params = StdioServerParameters(
                command=spec.command or "",
                args=list(spec.args),
                env=dict(spec.env) or None,
                cwd=spec.cwd or (str(self.cwd) if self.cwd else None),
            )
            return stdio_client(params, errlog=errlog)
        headers = dict(spec.headers)
        if spec.bearer_token_env:
            headers["Authorization"] = f"Bearer {self.env.get(spec.bearer_token_env, '')}"
        if spec.transport == "sse":
            from mcp.client.sse import sse_client

            return sse_client(spec.url or "", headers=headers or None)
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        http = await stack.enter_async_context(create_mcp_http_client(headers=headers or None))

        async def remember(response: Any) -> None:  # the SDK reports a refusal without its status
            if response.status_code >= 400:
                self._http_error = f"HTTP {response.status_code} {response.reason_phrase}".strip()
                if response.status_code in (401, 403):
                    self._http_error += " — check the server's bearer_token_env / headers"

        http.event_hooks = {**http.event_hooks, "response": [*http.event_hooks.get("response", []), remember]}
        return streamable_http_client(spec.url or "", http_client=http)

    async def _list_tools(self, client: Any) -> tuple[McpTool, ...]:
        found: list[McpTool] = []
        cursor = None
        for _page in range(MAX_TOOL_PAGES):
            page = await client.list_tools(cursor=cursor)
            for tool in page.tools:
                annotations = tool.annotations
                found.append(
                    McpTool(
                        server=self.name,
                        name=tool.name,
                        description=tool.description or "",
                        input_schema=dict(tool.input_schema or {"type": "object"}),
                        read_only=bool(annotations and annotations.read_only_hint),
                        title=(tool.title or (annotations.title if annotations else None) or ""),
                    )
                )
            cursor = page.next_cursor
            if not cursor:
                break
        return tuple(found)

    def _server_closed(self) -> None:
        if self._stop is None or not self._stop.is_set():
            self._gone.set()

    # -- calls ------------------------------------------------------------------------------------
    async def call(
        self,
        tool: str,
        arguments: Mapping[str, Any],
        *,
        cancel: asyncio.Event | None = None,
        timeout: float | None = None,
    ) -> Any:
        """The server's `CallToolResult` (which may itself be an error result). Raises McpCallError when
        there is no result: the server is not running, the call timed out or the connection went away.
        Cancelling `cancel` (Esc) stops waiting and raises asyncio.CancelledError."""
        from mcp import MCPError

        client = self._client
        if client is None or self.state != ServerState.READY:
            why = f" ({self.reason})" if self.reason else ""
            raise McpCallError(
                f"MCP server {self.name} is {self.state.value}{why}; /mcp restart {self.name} starts it again"
            )
        limit = timeout or self.tool_timeout
        task = asyncio.ensure_future(client.call_tool(tool, dict(arguments), read_timeout_seconds=limit))
        waiter = asyncio.ensure_future(cancel.wait()) if cancel is not None else None
        try:
            done, _ = await asyncio.wait(
                {task} | ({waiter} if waiter else set()),
                timeout=limit + 5,
                return_when=asyncio.FIRST_COMPLETED,
            )
        except asyncio.CancelledError:
            task.cancel()
            raise
        finally:
            if waiter is not None:
                waiter.cancel()
        if task not in done:
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
            if waiter is not None and waiter in done:
                raise asyncio.CancelledError()
            raise McpCallError(f"{self.name}: {tool} did not answer within {limit:g} s (mcp_tool_timeout)")
        try:
            result = task.result()
        except MCPError as exc:
            lost = "closed" in str(exc).lower() or getattr(exc, "code", None) == -32000
            if "timed out" in str(exc).lower() or "timeout" in str(exc).lower():
                raise McpCallError(
                    f"{self.name}: {tool} did not answer within {limit:g} s (mcp_tool_timeout)"
                ) from exc
            if lost:
                self._lost(str(exc))
            raise McpCallError(f"{self.name}: {describe_error(exc)}", lost=lost) from exc
        except (OSError, ConnectionError) as exc:
            self._lost(describe_error(exc))
            raise McpCallError(f"{self.name}: connection lost: {describe_error(exc)}", lost=True) from exc
        except Exception as exc:  # a result the SDK could not read, a transport error
            if type(exc).__name__ in ("ConnectError", "RemoteProtocolError", "ReadError"):
                self._lost(describe_error(exc))
                raise McpCallError(f"{self.name}: connection lost: {describe_error(exc)}", lost=True) from exc
            raise McpCallError(f"{self.name}: {describe_error(exc)}") from exc
        size = result_size(result)
        if size > self.message_max_bytes:  # never taken into the conversation, the spill folder or the log
            from app.sizes import format_size

            raise McpCallError(
                f"{self.name}: {tool} answered with {format_size(size)}, more than mcp_result_max_bytes "
                f"({format_size(self.message_max_bytes)}); the result was refused — ask for less (a narrower "
                f"query, a page), or raise mcp_result_max_bytes"
            )
        return result

    async def ping(self) -> float:
        """Seconds for one round trip: `ping` on a handshake-era server, a fresh `tools/list` on a newer one
        (the 2026 protocol removed ping)."""
        import warnings

        from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

        client = self._client
        if client is None:
            raise McpCallError(f"MCP server {self.name} is {self.state.value}")
        started = time.monotonic()
        async with asyncio.timeout(self.tool_timeout):
            if self.protocol in HANDSHAKE_PROTOCOL_VERSIONS:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    await client.send_ping()
            else:
                await client.list_tools(cache_mode="refresh")
        return time.monotonic() - started

    def _lost(self, why: str) -> None:
        if self.state == ServerState.READY:
            self._set(ServerState.CRASHED, f"connection lost: {why}")
            self._gone.set()
