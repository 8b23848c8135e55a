"""The words of the engine parts' notices follow their facts where the facts choose the phrasing or the level
(recovery, MCP, compaction, gateways, memory); the rest is covered by the sample walk of test_notice_words."""

from __future__ import annotations

from app.engine.notice_words import notice
from app.model.notice_facts.compaction import CompactionNotSaved, NativeCompactionOverCap
from app.model.notice_facts.gateways import BetaRefusedByEndpoint, GatewaysFileTrusted
from app.model.notice_facts.mcp import McpServerDown, McpStillStarting
from app.model.notice_facts.memory import MemoryFileFull
from app.model.notice_facts.recovery import FloorNearLimit, FloorTooBig, WindowLearned
from app.model.notice_facts.routes import FallbackRouteSkipped


def test_a_server_still_starting_is_told_by_whether_a_request_waited():
    waited = notice(McpStillStarting(server="docs", wait_seconds=2.5))
    not_waited = notice(McpStillStarting(server="docs", wait_seconds=0))
    assert waited.text.startswith("MCP server docs is still starting after 2.5 s (mcp_tools_wait)")
    assert waited.text.endswith("raise mcp_tools_wait to wait longer")
    assert not_waited.text.startswith(
        "MCP server docs is still starting: this request goes without its tools"
    )
    assert not_waited.text.endswith("(mcp_tools_wait = 0; set it above 0 to wait for them)")
    assert waited.level == not_waited.level == "warn" and waited.code == "mcp_wait"


def test_a_server_down_says_how_and_shows_its_words_escaped():
    failed = notice(McpServerDown(server="db", crashed=False, reason="exit 1", stderr_tail=()))
    crashed = notice(
        McpServerDown(server="db", crashed=True, reason="gone\x1b[2J", stderr_tail=("boom\x07", "bye"))
    )
    assert failed.text == (
        "MCP server db did not start: exit 1. The session goes on without its tools; /mcp restart db tries again."
    )
    assert crashed.text.startswith("MCP server db stopped working: gone")
    assert crashed.text.endswith("tries again. — last stderr lines:\n  boom\\x07\n  bye")
    assert "\x1b" not in crashed.text and "\x07" not in crashed.text


def test_a_learned_window_names_which_limit_it_was():
    tpm = notice(WindowLearned(tokens=30000, per_minute=True))
    window = notice(WindowLearned(tokens=30000, per_minute=False))
    assert "at most 30,000 tokens per request (its tokens-per-minute limit, from its error)" in tpm.text
    assert "(the model's context window, from its error)" in window.text


def test_the_floor_warns_when_close_and_is_an_error_when_too_big():
    close = notice(FloorNearLimit(base_bytes=900, refused_bytes=1000, diagnosis="the base is close"))
    big = notice(
        FloorTooBig(base_bytes=1200, refused_bytes=1000, cap_bytes=None, diagnosis="the base is over")
    )
    assert (close.level, close.code, close.text) == ("warn", "floor", "the base is close")
    assert (big.level, big.code, big.text) == ("error", "floor", "the base is over")


def test_a_compaction_not_saved_says_whose_it_was():
    own = notice(CompactionNotSaved(by_provider=False, error="disk full"))
    provider = notice(CompactionNotSaved(by_provider=True, error="disk full"))
    assert own.text == "Compaction could not be saved (disk full); the history is unchanged."
    assert (
        provider.text == "The provider's compaction could not be saved (disk full); the history is unchanged."
    )
    assert own.level == provider.level == "error" and own.code == "compaction"


def test_the_providers_compaction_over_cap_names_the_cap_by_its_source():
    learned = notice(NativeCompactionOverCap(request_bytes=300_000, cap_bytes=200_000, cap_source="learned"))
    unknown = notice(NativeCompactionOverCap(request_bytes=300_000, cap_bytes=200_000, cap_source="none"))
    assert "over the learned cap (195.3 KB) — not sent" in learned.text
    assert "over the cap (195.3 KB) — not sent" in unknown.text


def test_a_refused_beta_says_whether_it_was_refused_or_stripped():
    def said(stripped: bool) -> str:
        fact = BetaRefusedByEndpoint(
            endpoint="gw.example:443",
            header="anthropic-beta",
            betas=("a-1", "b-2"),
            stripped=stripped,
            evidence="400: unexpected value",
        )
        return notice(fact).text

    assert said(False).startswith(
        "gw.example:443 refuses the anthropic-beta value a-1, b-2 (400: unexpected value)"
    )
    assert said(True).startswith("gw.example:443 strips the anthropic-beta value a-1, b-2")


def test_the_memory_file_full_counts_its_facts():
    one = notice(MemoryFileFull(max_bytes=2048, dropped=1))
    two = notice(MemoryFileFull(max_bytes=2048, dropped=2))
    assert one.text.endswith("(2.0 KB): 1 older fact left it")
    assert two.text.endswith("(2.0 KB): 2 older facts left it")


def test_outside_text_in_the_words_is_one_safe_line():
    skipped = notice(
        FallbackRouteSkipped(route="backup", reason="main: 529 overloaded", error="no key\nset it")
    )
    trusted = notice(GatewaysFileTrusted(file=".bulkhead/gateways.toml", profiles=("gw\x1b[31m", "b")))
    assert skipped.text == "main: 529 overloaded; fallback route backup skipped: no key\\x0aset it"
    assert "\x1b" not in trusted.text and trusted.text.endswith("(trusted): gw\\x1b[31m; b")
