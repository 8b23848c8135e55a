"""`bulkhead probe`: bisection against the lab's gateways with the real adapters (issue 9)."""

from __future__ import annotations

import json
import math

import pytest

from app.config import Settings
from app.engine.retry import RetryPolicy
from app.probe import Prober, timed
from app.providers.base import make_provider
from app.sizes import KIB, MIB
from tests.engine.conftest import FAKE_KEY, route_for

LOW, HIGH, PRECISION = KIB, 4 * MIB, KIB
CLEAN_BOUND = math.ceil(math.log2((HIGH - LOW) / PRECISION)) + 3  # the bound


@pytest.fixture(autouse=True)
def _aws(aws_env):
    """Bedrock probes sign requests: fake credentials (the lab ignores SigV4)."""


async def _probe(lab, provider: str = "anthropic", *, low=LOW, high=HIGH, precision=PRECISION):
    settings = Settings(retry_base_delay=0.0, retry_max_delay=0.0)
    adapter = make_provider(route_for(provider, lab.url), settings, FAKE_KEY)
    sleeps: list[float] = []

    async def sleep(delay: float) -> None:
        sleeps.append(delay)

    async def send(size: int):
        async def call() -> tuple[int, int | None]:
            reply = await adapter.probe(size)
            return reply.status, reply.actual_bytes

        return await timed(call, size)

    prober = Prober(
        send,
        drop_threshold=settings.drop_payload_min_bytes,
        retry_policy=RetryPolicy(max_attempts=4, base_delay=0.0, max_delay=0.0),
        sleep=sleep,
    )
    try:
        return await prober.find(low, high, precision)
    finally:
        await adapter.aclose()


@pytest.mark.parametrize(
    "gateway", ["nginx", "cloudflare", "akamai", "modsecurity", "aws-waf", "reset", "html-200", "apigw"]
)
async def test_probe_finds_each_gateways_cap_within_precision_and_bound(lab, gateway):
    cap = 200 * KIB
    lab.configure(gateway=gateway, cap=cap)

    result = await _probe(lab)

    assert result.conclusive, result.message
    assert result.cap_bytes is not None, result.message
    assert cap - PRECISION <= result.cap_bytes <= cap
    assert result.smallest_rejected > cap
    assert result.smallest_rejected - result.cap_bytes <= PRECISION + 64  # within the precision (+ envelope)
    assert len(result.probes) <= CLEAN_BOUND
    assert result.kind in ("payload_too_large", "waf_block", "connection_drop")
    assert result.evidence


@pytest.mark.parametrize("cap_kib", [8, 128, 1024, 3000])
@pytest.mark.parametrize("provider", ["anthropic", "openai", "bedrock"])
async def test_probe_at_several_caps_through_every_provider(lab, provider, cap_kib):
    lab.configure(gateway="nginx", cap=cap_kib * KIB)

    result = await _probe(lab, provider)

    assert cap_kib * KIB - PRECISION <= result.cap_bytes <= cap_kib * KIB
    assert len(result.probes) <= CLEAN_BOUND


async def test_a_header_limit_is_no_body_cap(lab):
    """Behind a 431 header limit every body passes: no cap is found (and none would be saved)."""
    lab.configure(gateway="header-431", cap=16 * KIB)

    result = await _probe(lab, high=2 * MIB)

    assert result.conclusive and result.cap_bytes is None and "no cap found" in result.message
    assert [p.verdict for p in result.probes] == ["passed"]


async def test_no_cap_up_to_max(lab):
    lab.configure(gateway="none")

    result = await _probe(lab, high=2 * MIB)

    assert result.conclusive and result.cap_bytes is None
    assert "no cap found" in result.message
    assert len(result.probes) == 1


@pytest.mark.parametrize("faults", ["429:0.3", "529:0.3,500:0.2", "drop:0.25", "429@1+2+3,500@5"])
async def test_faults_during_a_probe_never_give_a_wrong_cap(lab, faults):
    cap = 300 * KIB
    lab.configure(gateway="nginx", cap=cap, faults=faults, seed=7)

    result = await _probe(lab)

    if result.cap_bytes is not None:
        assert cap - PRECISION <= result.cap_bytes <= cap, result.message
    else:
        assert not result.conclusive  # a clear report instead of a cap, never a false one
    assert any(p.verdict in ("transient", "dropped") for p in result.probes)


def test_the_cli_prints_each_probe_and_the_result_as_json(lab, tmp_path, monkeypatch, capsys):
    from app.cli import main

    lab.configure(gateway="cloudflare", cap=64 * KIB)
    config = tmp_path / "config.toml"
    config.write_text(
        f'default_route = "gw"\n[routes.gw]\nprovider = "anthropic"\nmodel = "claude-sonnet-5-5"\n'
        f'base_url = "{lab.url}"\n'
    )
    monkeypatch.setenv("BULKHEAD_CONFIG", str(config))
    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)

    code = main(["probe", "--max", "1MB", "--json", "--save"])

    assert code == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert all(line["type"] == "probe" for line in lines[:-2]) and lines[-2]["type"] == "floor"
    result = lines[-1]
    assert result["type"] == "result" and result["kind"] == "waf_block" and result["saved"] is True
    assert 63 * KIB <= result["cap_bytes"] <= 64 * KIB
    assert result["probes"] == len(lines) - 2
    from app.state import State

    assert State().learned_cap(f"anthropic {lab.url}").cap_bytes == result["cap_bytes"]


# -- issue 38 item 2: probes carry the route's floor ------------------------------------------------------------


def _cli_config(tmp_path, monkeypatch, lab, extra: str = "") -> None:
    config = tmp_path / "config.toml"
    config.write_text(
        f'default_route = "gw"\n{extra}[routes.gw]\nprovider = "anthropic"\nmodel = "claude-sonnet-5-5"\n'
        f'base_url = "{lab.url}"\n'
    )
    monkeypatch.setenv("BULKHEAD_CONFIG", str(config))
    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
    monkeypatch.chdir(tmp_path)


def test_every_probe_carries_the_system_prompt_and_the_tools(lab, tmp_path, monkeypatch, capsys):
    """The floor (system prompt with the workspace's AGENTS.md, the tool definitions) goes with every probe,
    first on its own: the report gives its size and says it passes."""
    from app.cli import main

    lab.configure(gateway="nginx", cap=64 * KIB)
    _cli_config(tmp_path, monkeypatch, lab)
    (tmp_path / "AGENTS.md").write_text("Always run the tests. " * 100)

    code = main(["probe", "--max", "1MB", "--json"])

    assert code == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    floor = next(line for line in lines if line["type"] == "floor")
    assert (
        floor["passed"] is True
        and floor["parts"]["instructions"] > 2_000
        and floor["parts"]["tools (built-in)"] > 0
    )
    probes = [line for line in lines if line["type"] == "probe"]
    assert (
        probes[0]["bytes"] <= floor["bytes"] + 64 and probes[0]["verdict"] == "passed"
    )  # the floor alone first
    counted = [r for r in lab.requests() if r.get("operation") == "count_tokens"]
    assert counted and all(r["tools"] >= 8 and r["system_bytes"] > 2_000 for r in counted)
    assert all(r["bytes"] >= floor["bytes"] - 64 for r in lab.requests())  # no probe smaller than the floor
    result = lines[-1]
    assert result["floor_passes"] is True and 63 * KIB <= result["cap_bytes"] <= 64 * KIB


def test_a_floor_over_the_cap_is_reported_as_refused_not_as_a_cap(lab, tmp_path, monkeypatch, capsys):
    """The gateway takes 3 KB; the floor is ≈4.5 KB, so every chat request is refused. A bare probe reported
    "cap found: up to 3 KB pass"; now the floor is refused on its own, the probe says so and exits 1."""
    from app.cli import main

    lab.configure(gateway="nginx", cap=3 * KIB)
    _cli_config(tmp_path, monkeypatch, lab)

    code = main(["probe", "--max", "1MB"])

    out = capsys.readouterr().out
    assert code == 1
    assert "REFUSED on its own (payload_too_large" in out
    assert "every chat request on this route carries it, so every one is refused" in out
    assert "cap found" not in out
    assert len(lab.requests()) == 1  # no bisection after the floor was refused
