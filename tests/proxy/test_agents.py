"""The real Claude Code and Codex CLIs, offline, against the lab behind a real 64 KB nginx — directly, and
through `bulkhead proxy` (issue 42, "must show"). What each one does was measured here first:

- Claude Code (2.1.x) already compacts by itself when nginx's 413 hits a conversation of more than one
  exchange — but a WAF's block page (a 403, judged to be about size) ends the session with "Failed to
  authenticate". Through the proxy (--translate) the page becomes "prompt is too long: N tokens > M
  maximum", its own reactive compaction runs and the turn is answered. A single exchange over the cap
  (one big file read) cannot be compacted by any client: Claude Code says "Request too large (max 32MB)"
  directly, "Prompt is too long" through --translate, and --shrink answers it.
- Codex (0.171) resends nginx's 413 six times, prints the HTML and fails — and every later turn fails the
  same way: the session is stuck. Through the proxy the refusal is `context_length_exceeded`: the turn
  ends at once ("ran out of room in the model's context window"), and the next turn auto-compacts and is
  answered. --shrink answers the first turn.

Every run's HTTP(S)_PROXY is a local listener that refuses and records (`agents.Refuser`): each test
asserts it saw nothing, so the CLIs reached only 127.0.0.1.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.proxy.records import Action, ProxyRecord

from .agents import Refuser, agent, claude, codex, lines_file
from .conftest import nginx_refusals

pytestmark = [pytest.mark.nginx, pytest.mark.slow]


@pytest.fixture
def refuser() -> Iterator[Refuser]:
    listener = Refuser()
    yield listener
    listener.close()
    assert listener.seen == [], f"a CLI tried to reach the network: {listener.seen}"


@pytest.fixture
def claude_exe() -> str:
    return agent("claude", "@anthropic-ai/claude-code")


@pytest.fixture
def codex_exe() -> str:
    return agent("codex", "@openai/codex")


def _home(tmp_path: Path, name: str) -> Path:
    home = tmp_path / name
    home.mkdir()
    return home


def _compaction_request(record: ProxyRecord) -> bool:
    """A request of the client's own compaction (Claude Code asks for a summary of the conversation)."""
    text = (record.body or b"").decode("utf-8", "replace")
    return "create a detailed summary of this conversation" in text or "<summary>" in text


def test_claude_code_compacts_on_a_waf_page_only_through_the_proxy(
    lab, nginx, start_proxy, refuser, claude_exe, tmp_path
):
    lab.configure(gateway="cloudflare", cap="42KB")  # the lab's WAF page, behind the real nginx
    work = tmp_path / "work"
    work.mkdir()
    first = lines_file(work / "m1.txt", 250)  # ≈ 24 KB: more than Claude Code re-attaches after a compaction
    second = lines_file(work / "m2.txt", 140)  # ≈ 13 KB: the turn that goes over the WAF's 42 KB

    def two_turns(base_url: str, home: Path):
        one = claude(
            claude_exe,
            base_url,
            f'!call Read {{"file_path": "{first}"}}',
            home=home,
            workdir=work,
            refuser=refuser,
        )
        assert one.code == 0 and "m1.txt line 00000" in one.out, one.text
        return claude(
            claude_exe,
            base_url,
            f'!call Read {{"file_path": "{second}"}}',
            home=home,
            workdir=work,
            refuser=refuser,
            resume=True,
        )

    direct = two_turns(nginx.url, _home(tmp_path, "direct"))
    assert direct.code == 1 and "Cloudflare" in direct.text  # "Failed to authenticate. API Error: …"

    proxy = start_proxy(nginx.url, translate=True)
    proxied = two_turns(proxy.url, _home(tmp_path, "proxied"))
    assert proxied.code == 0, proxied.text
    assert "m2.txt line 00000" in proxied.out  # the turn is answered, from the tool result it asked for
    records = [r for r in proxy.records() if "count_tokens" not in r.path]
    translated = next(i for i, r in enumerate(records) if r.action is Action.TRANSLATED)
    # nothing showed size or content (app.engine.block_cause): undecided, treated as size and translated
    assert records[translated].kind == "waf_block" and records[translated].cause == "unknown"
    after = records[translated + 1 :]
    assert any(_compaction_request(r) and r.status == 200 for r in after)  # its own compaction ran
    assert after[-1].status == 200 and not _compaction_request(after[-1])


def test_claude_code_single_exchange_over_the_cap_is_answered_with_shrink(
    lab, nginx, start_proxy, refuser, claude_exe, tmp_path
):
    work = tmp_path / "work"
    work.mkdir()
    big = lines_file(work / "big.txt", 700)  # ≈ 68 KB: one read puts the request over nginx's 64 KB
    prompt = f'!call Read {{"file_path": "{big}"}}'

    direct = claude(
        claude_exe, nginx.url, prompt, home=_home(tmp_path, "direct"), workdir=work, refuser=refuser
    )
    assert direct.code == 1 and "Request too large (max 32MB)" in direct.text  # the wrong limit

    translate = start_proxy(nginx.url, translate=True)
    honest = claude(
        claude_exe, translate.url, prompt, home=_home(tmp_path, "translate"), workdir=work, refuser=refuser
    )
    assert honest.code == 1 and "Prompt is too long" in honest.text  # one exchange: nothing to compact

    shrink = start_proxy(nginx.url, translate=True, shrink=True)
    answered = claude(
        claude_exe, shrink.url, prompt, home=_home(tmp_path, "shrink"), workdir=work, refuser=refuser
    )
    assert answered.code == 0, answered.text
    assert "[bulkhead proxy: this tool result" in answered.out  # the lab model answers from the stub
    assert any(r.action is Action.SHRUNK and r.status == 200 for r in shrink.records())


def _three_cats(work: Path) -> str:
    files = [lines_file(work / f"{name}.txt", 330) for name in ("a", "b", "c")]  # Codex keeps ≈10 KB of each
    return "\n".join(f'!call exec_command {{"cmd": "cat {path}"}}' for path in files)


def test_codex_compacts_on_the_next_turn_only_through_the_proxy(
    lab, nginx, start_proxy, refuser, codex_exe, tmp_path
):
    work = tmp_path / "work"
    work.mkdir()
    prompt = _three_cats(work)

    home = _home(tmp_path, "direct")
    before = nginx_refusals(nginx)
    direct = codex(codex_exe, nginx.url, prompt, home=home, workdir=work, refuser=refuser)
    assert direct.code == 1 and "413 Request Entity Too Large" in direct.text
    assert nginx_refusals(nginx) - before >= 2  # the same refused body, sent again and again
    again = codex(codex_exe, nginx.url, "what now?", home=home, workdir=work, refuser=refuser, resume=True)
    assert again.code == 1 and "413" in again.text  # stuck: every later turn is refused the same way

    proxy = start_proxy(nginx.url, translate=True)
    home = _home(tmp_path, "proxied")
    before = nginx_refusals(nginx)
    first = codex(codex_exe, proxy.url, prompt, home=home, workdir=work, refuser=refuser)
    assert first.code == 1 and "context window" in first.text and "<html>" not in first.text
    assert nginx_refusals(nginx) - before == 1  # refused once: no flood
    second = codex(codex_exe, proxy.url, "what now?", home=home, workdir=work, refuser=refuser, resume=True)
    assert second.code == 0, second.text
    assert "context compacted" in second.text and "You said: “what now?”" in second.out
    assert [r.action for r in proxy.records()].count(Action.TRANSLATED) == 1


def test_codex_first_turn_is_answered_with_shrink(lab, nginx, start_proxy, refuser, codex_exe, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    proxy = start_proxy(nginx.url, translate=True, shrink=True)
    run = codex(
        codex_exe,
        proxy.url,
        _three_cats(work),
        home=_home(tmp_path, "codex-home"),
        workdir=work,
        refuser=refuser,
    )
    assert run.code == 0, run.text
    assert "received 3 tool results" in run.out
    actions = [r.action for r in proxy.records()]
    assert Action.RESENT in actions and actions[-1] is Action.SHRUNK
    resent = proxy.records()[-1]
    assert resent.status == 200 and json.loads(resent.body or b"{}")["input"]
