"""The refused request judged here, with zero requests: the OWASP Core Rule Set run locally by libmodsecurity.

    why_not = offline_unavailable()             # "" when the extra and the rules are installed, else what to do
    crs = LocalCrs(paranoia=2)                  # Debian's modsecurity-crs rules at that paranoia level
    verdict = crs.judge(texts)                  # "blocked" | "passed", and crs.last_rules: what matched

Optional: `pip install 'bulkhead[offline-waf]'` brings the `libmodsecurity` wheel (ModSecurity v3's library
with its Python bindings); the rules are Debian's `modsecurity-crs` (`apt install modsecurity-crs`), read
where Debian puts them. Measured against the real Apache 2.4 + ModSecurity 2.9 + CRS 3.3 in front of the lab
(tests/engine/test_offline_waf.py): the same verdicts at paranoia levels 1 and 2. Two differences from
Apache's setup are deliberate: REQUEST-910-IP-REPUTATION.conf is left out (it needs a GeoIP database and
judges the client's address, not the text) and SecRequestBodyInMemoryLimit (an Apache-only directive) is
dropped from Debian's `modsecurity.conf-recommended`.

Each judgement is one in-memory transaction shaped like the probes (a count-tokens body, each text its own
JSON string, the SDK's headers): `app.engine.content_finder` bisects with it exactly as it does with live
probes, so the part and the span come out the same way, in milliseconds, and nothing leaves the machine.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

Verdict = Literal["blocked", "passed"]
EXTRA = "offline-waf"
INSTALL_EXTRA = f"pip install 'bulkhead[{EXTRA}]' (or: pip install libmodsecurity)"
RECOMMENDED = Path("/etc/modsecurity/modsecurity.conf-recommended")
CRS_SETUP = Path("/etc/modsecurity/crs/crs-setup.conf")
CRS_RULES = Path("/usr/share/modsecurity-crs/rules")
LEFT_OUT_RULE_FILES = ("REQUEST-910-IP-REPUTATION.conf",)  # the client's address, not the text: needs GeoIP
APACHE_ONLY = ("SecRequestBodyInMemoryLimit",)  # ModSecurity 2 (Apache) directives v3 refuses
# What the library must not write anywhere (audit and debug logs, temp and data folders): judged in memory.
NOT_HERE = ("SecAuditLog", "SecAuditEngine", "SecDebugLog", "SecTmpDir", "SecDataDir")
UNICODE_MAPPING = Path(
    "/etc/modsecurity/unicode.mapping"
)  # “ ” ‘ ’ read as " and ' (t:urlDecodeUni), as Apache
PARANOIA_LEVELS = (1, 2, 3, 4)
# Rules that only add up the score or report it: the rules that matched the text are the others.
SCORING_RULES = frozenset({949110, 959100, 980130, 980140, 980145, 980150, 980170})
PATH = "/v1/messages/count_tokens"


def offline_unavailable() -> str:
    """Why the offline judge cannot run here ("" when it can): the missing extra or rules, and the fix."""
    try:
        import libmodsecurity  # noqa: F401 - the optional extra
    except ImportError:
        return f"the offline WAF check needs the `{EXTRA}` extra: {INSTALL_EXTRA}"
    missing = [str(p) for p in (RECOMMENDED, CRS_SETUP) if not p.is_file()]
    if not CRS_RULES.is_dir():
        missing.append(str(CRS_RULES))
    if missing:
        return (
            f"the offline WAF check needs the OWASP Core Rule Set and ModSecurity's recommended settings "
            f"({', '.join(missing)} missing): apt install modsecurity-crs"
        )
    return ""


def _directives(paranoia: int) -> str:
    lines = []
    for line in RECOMMENDED.read_text(encoding="utf-8").splitlines():
        stripped = line.strip()
        if stripped.startswith(APACHE_ONLY + NOT_HERE):
            continue
        line = line.replace("SecRuleEngine DetectionOnly", "SecRuleEngine On")
        lines.append(
            line.replace("SecUnicodeMapFile unicode.mapping", f"SecUnicodeMapFile {UNICODE_MAPPING}")
        )
    lines += [
        "SecAuditEngine Off",
        f'SecAction "id:900000,phase:1,nolog,pass,t:none,setvar:tx.paranoia_level={paranoia}"',
        f"Include {CRS_SETUP}",
    ]
    lines += [
        f"Include {path}"
        for path in sorted(CRS_RULES.glob("*.conf"))
        if path.name not in LEFT_OUT_RULE_FILES and path.name.startswith("REQUEST-")
    ]
    return "\n".join(lines)


class LocalCrs:
    """The Core Rule Set at one paranoia level, loaded once; `judge` is thread-safe (one at a time)."""

    def __init__(self, paranoia: int = 1) -> None:
        if paranoia not in PARANOIA_LEVELS:
            raise ValueError(f"paranoia level {paranoia} is not one of 1, 2, 3, 4")
        import libmodsecurity  # deferred: an optional extra, imported only when asked for

        self.paranoia = paranoia
        self._library = libmodsecurity
        self._engine = libmodsecurity.ModSecurity()
        self._matched: list[Any] = []
        self._engine.set_rule_message_callback(self._matched.append)
        self._rules = libmodsecurity.RulesSet()
        if self._rules.load(_directives(paranoia)) < 0:
            raise RuntimeError(f"the Core Rule Set did not load: {self._rules.get_parser_error()[:300]}")
        self._lock = threading.Lock()
        self.evaluations = 0
        self.last_rules: tuple[str, ...] = ()  # "942100 SQL Injection Attack Detected via libinjection", …

    def close(self) -> None:
        self._engine.set_rule_message_callback(None)  # the library's registry would keep it otherwise

    def judge(self, texts: Sequence[str]) -> Verdict:
        """Would the CRS refuse a request carrying `texts` (each its own JSON string, as a probe)?"""
        body = json.dumps(
            {
                "model": "claude",
                "messages": [{"role": "user", "content": [{"type": "text", "text": t} for t in texts]}],
            },
            ensure_ascii=False,
        ).encode("utf-8")
        headers = (
            ("Host", "localhost"),
            ("Content-Type", "application/json"),
            ("Accept", "application/json"),
            ("User-Agent", "bulkhead"),
            ("anthropic-version", "2023-06-01"),
            ("Content-Length", str(len(body))),
        )
        with self._lock:
            self._matched.clear()
            transaction = self._library.Transaction(self._engine, self._rules)
            transaction.process_connection("127.0.0.1", 40000, "127.0.0.1", 443)
            transaction.process_uri(PATH, "POST", "1.1")
            for name, value in headers:
                transaction.add_request_header(name, value)
            transaction.process_request_headers()
            blocked = _disruptive(transaction)
            if not blocked:
                transaction.append_request_body(body)
                transaction.process_request_body()
                blocked = _disruptive(transaction)
            transaction.process_logging()
            self.evaluations += 1
            self.last_rules = tuple(
                dict.fromkeys(
                    f"{m.rule_id} {m.message}".strip()
                    for m in self._matched
                    if m.rule_id not in SCORING_RULES
                )
            )
        return "blocked" if blocked else "passed"

    async def verdict(self, texts: Sequence[str]) -> Verdict:
        """`judge` as the content finder's `send` (no request: a local evaluation)."""
        return self.judge(texts)


def _disruptive(transaction: Any) -> bool:
    intervention = transaction.intervention()
    return bool(intervention is not None and intervention.disruptive and intervention.status >= 400)
