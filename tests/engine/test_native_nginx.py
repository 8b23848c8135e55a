"""End to end behind a real nginx (client_max_body_size 128k) with context_engine = "provider".

The provider (the lab, through the real SDKs) compacts past its threshold; bulkhead turns the
compaction into a view, archives what it replaced, and the next request is smaller — so the
session keeps going under the gateway's cap without a single 413, and `/recall` restores a
replaced message byte for byte. Without an nginx binary the test is skipped and says why.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.config import Route, Settings
from app.engine.session import Session
from app.engine.turn import Engine
from app.model.messages import Text
from app.providers.base import make_provider
from app.sizes import KIB
from app.state import State
from app.store import Store
from tests.engine.conftest import FAKE_KEY, MODELS
from tests.lab.test_lab_nginx import _config, _nginx_binary, _wait_listening

pytestmark = pytest.mark.nginx
CAP = 128 * KIB
MAX_TURNS = 12


@pytest.fixture
def nginx(lab, tmp_path: Path) -> Iterator[str]:
    import socket

    binary = _nginx_binary()
    if binary is None:
        reason = "nginx is not installed (run .ci/run, or apt-get install -y nginx-light)"
        print(f"SKIPPED: {reason}")
        pytest.skip(reason)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    (tmp_path / "temp").mkdir()
    conf = tmp_path / "nginx.conf"
    conf.write_text(_config(tmp_path, port, lab.port))
    proc = subprocess.Popen(
        [binary, "-p", str(tmp_path), "-c", str(conf), "-e", str(tmp_path / "error.log")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _wait_listening(port, proc)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def _engine(which: str, url: str, tmp_path: Path) -> Engine:
    if which == "anthropic":
        route = Route(name="gw", provider="anthropic", model=MODELS["anthropic"], base_url=url)
    else:
        route = Route(
            name="gw", provider="openai", model=MODELS["openai"], base_url=url + "/v1", api="responses"
        )
    settings = Settings(
        memory="off",  # the request sizes below are the chat's own (the memory worker has its tests)
        routes={"gw": route},
        default_route="gw",
        context_engine="provider",
        provider_compact_threshold=20_000,
        retry_base_delay=0.01,
        retry_max_delay=0.05,
    )
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    session = Session.create(
        Store(), route="gw", provider=route.provider, model=route.model, workspace=str(workspace)
    )

    async def no_sleep(_delay: float) -> None:
        return None

    return Engine(
        settings,
        session,
        route,
        make_provider(route, settings, FAKE_KEY),
        state=State(),
        sleep=no_sleep,
        workspace=workspace,
    )


@pytest.mark.parametrize("which", ["anthropic", "responses"])
async def test_provider_compaction_keeps_a_session_under_a_128k_nginx_cap(lab, nginx, tmp_path, which):
    engine = _engine(which, nginx, tmp_path)
    session = engine.session
    compactions: list = []
    session.bus.subscribe(lambda e: compactions.append(e) if e.type == "compaction" else None)

    turns = 0
    while not compactions and turns < MAX_TURNS:
        result = await engine.submit(f"!big 12KB\nturn {turns}")
        assert result.outcome == "answered", result.error
        turns += 1
    assert compactions, f"the provider never compacted in {turns} turns"
    assert compactions[0].method == "provider"
    for _ in range(3):  # keep going: the view restarted at the compaction, so nothing hits the cap
        result = await engine.submit(f"!big 12KB\nturn {turns}")
        assert result.outcome == "answered", result.error
        turns += 1

    records = session.store.list_requests(session.id)
    assert all(r["status"] != 413 for r in records), [r["status"] for r in records]
    assert all(r["actual_bytes"] < CAP for r in records)
    compacted_at = next(i for i, r in enumerate(lab.requests()) if r.get("compaction"))
    sizes = [r["actual_bytes"] for r in records if r["outcome"] == "ok"]
    assert sizes[compacted_at + 1] < sizes[compacted_at]  # the request after the compaction is smaller
    assert max(sizes[compacted_at + 1 :]) < sizes[compacted_at]

    # Every replaced answer is in the archive; /recall gives one back byte for byte.
    replaced = next(m for m in session.master if m.role == "assistant" and len(m.text) > 10_000)
    assert all(m.id != replaced.id for m in session.view.messages)
    key = next(
        k for k in compactions[0].archive_keys if session.store.archive_get(k).content == replaced.text
    )
    recalled = engine.recall_into_view(key)
    assert recalled is not None
    assert recalled.parts == (Text(f"[recalled by the user]\n{replaced.text}"),)
