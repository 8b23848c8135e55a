"""Real MCP servers for the tests: the demo server (tests/mcp/demo_server.py, written with the `mcp`
SDK's server API) over stdio and streamable HTTP, and an engine on the embedded lab that uses them."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

pytest.importorskip("mcp", reason="the mcp SDK is not installed (python3 -m pip install 'mcp>=2.3,<3')")

from app.config import Route, Settings
from app.config_mcp import McpServerSpec
from app.engine.session import Session
from app.engine.turn import Engine
from app.mcp.manager import McpManager
from app.providers.factory import make_provider
from app.state import State
from app.store import Store

DEMO = Path(__file__).with_name("demo_server.py")
FAKE_KEY = "sk-ant-FAKE-test-key"


def demo_spec(name: str = "demo", *args: str, env: dict[str, str] | None = None, **extra) -> McpServerSpec:
    """The demo server over stdio, started by the test's own Python."""
    return McpServerSpec(
        name=name, transport="stdio", command=sys.executable, args=(str(DEMO), *args), env=env or {}, **extra
    )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_port(port: int, process: subprocess.Popen, timeout: float = 30.0) -> None:
    """Until the port accepts connections (the server is up) — a bounded poll, not a sleep."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the demo HTTP server exited ({process.returncode})")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("the demo HTTP server did not start")


@pytest.fixture(scope="module")
def http_demo():
    """The demo server over streamable HTTP, requiring `Authorization: Bearer demo-token-123`."""
    port = free_port()
    env = {"DEMO_TOKEN": "demo-token-123", "PATH": "/usr/bin:/bin"}
    process = subprocess.Popen(
        [sys.executable, str(DEMO), "--http", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port, process)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()


@pytest.fixture
def lab(lab_server):
    lab_server.configure(gateway="none", cap=None, window=None, faults=None, seed=0)
    lab_server.clear_requests()
    lab_server.clear_cache()
    return lab_server


class McpHarness:
    def __init__(self, engine: Engine, events: list) -> None:
        self.engine = engine
        self.session = engine.session
        self.events = events

    def of_type(self, type_: str) -> list:
        return [e for e in self.events if e.type == type_]

    def notices(self, code: str | None = None) -> list[str]:
        return [e.text for e in self.of_type("notice") if code is None or e.code == code]

    def tool_results(self) -> list:
        return [p for m in self.session.master if m.role == "tool" for p in m.tool_results]


@pytest.fixture
async def make_engine(lab, tmp_path: Path) -> Callable[..., McpHarness]:
    """An engine on the lab (Anthropic wire format by default) with the given MCP servers (not started)."""
    engines: list[Engine] = []

    def build(
        *specs: McpServerSpec,
        provider: str = "lab",
        approver=None,
        state: State | None = None,
        route_extra: dict | None = None,
        **settings_changes,
    ) -> McpHarness:
        if provider == "lab":
            route = Route(name="t", provider="lab", model="lab-1", base_url=lab.url, **(route_extra or {}))
        else:
            route = Route(
                name="t",
                provider="anthropic",
                model="claude-sonnet-5-5",
                base_url=lab.url,
                **(route_extra or {}),
            )
        settings = Settings(
            routes={"t": route},
            default_route="t",
            retry_base_delay=0.01,
            retry_max_delay=0.05,
            request_timeout=30.0,
            **settings_changes,
        )
        store = Store()
        workspace = tmp_path / "ws"
        workspace.mkdir(exist_ok=True)
        session = Session.create(
            store, route="t", provider=route.provider, model=route.model, workspace=str(workspace)
        )
        manager = McpManager(
            {s.name: s for s in specs},
            log_folder=session.folder / "mcp",
            startup_timeout=settings.mcp_startup_timeout,
            tool_timeout=settings.mcp_tool_timeout,
            image_max_bytes=settings.mcp_image_max_bytes,
            cwd=workspace,
        )
        engine = Engine(
            settings,
            session,
            route,
            make_provider(route, settings, FAKE_KEY),
            state=state or State(),
            workspace=workspace,
            approver=approver,
            mcp=manager,
        )
        events: list = []
        session.bus.subscribe(events.append)
        engines.append(engine)
        return McpHarness(engine, events)

    yield build
    for engine in engines:
        await engine.close()
