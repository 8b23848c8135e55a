"""The lab's `modsecurity` profile judges content as a stock OWASP CRS would, in miniature.

A handful of patterns in the spirit of the CRS's paranoia-level-1 rules, applied to every JSON string in
the body (ModSecurity's JSON body processor makes each one an ARG): SQL tautologies and UNION SELECT,
shell injection (a separator, then a command), PHP code, path traversal. The first that matches decides;
the deciding rule is only in the lab's request log (`/_lab/requests`, field `rule`), never in the page,
as with the real thing. The lab's own grammar (`!echo`, `!shell ls`, `!big 8KB`) trips none of them by
itself; the content a user puts after it can.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ContentRule:
    id: str  # the CRS rule it stands for
    msg: str
    pattern: re.Pattern[str]


RULES: tuple[ContentRule, ...] = (
    ContentRule(
        "942100",
        "SQL Injection Attack: SQL tautology",
        re.compile(r"(?i)['\"]\s*(?:or|and)\s+['\"]?\w+['\"]?\s*=\s*['\"]?\w+|\bor\s+1\s*=\s*1\b"),
    ),
    ContentRule(
        "942190", "SQL Injection Attack: UNION SELECT", re.compile(r"(?i)\bunion\s+(?:all\s+)?select\b")
    ),
    ContentRule(
        "942360",
        "SQL Injection Attack: stacked DROP/DELETE",
        re.compile(r"(?i);\s*(?:drop\s+table|delete\s+from|truncate\s+table)\b"),
    ),
    ContentRule(
        "932100",
        "Remote Command Execution: Unix command injection",
        re.compile(r"(?:;|\|\||&&|\$\(|`)\s*(?:cat|curl|wget|nc|bash|sh|rm|chmod|python[23]?|perl)\b"),
    ),
    ContentRule(
        "933100",
        "PHP Injection Attack: PHP open tag or call",
        re.compile(r"(?i)<\?php|\b(?:system|exec|passthru|shell_exec|eval)\s*\(\s*\$_(?:GET|POST|REQUEST)"),
    ),
    ContentRule(
        "930100",
        "Path Traversal Attack",
        re.compile(r"(?:\.\./){2,}|/etc/(?:passwd|shadow)\b"),
    ),
)


@dataclass(frozen=True)
class ContentMatch:
    rule: ContentRule
    where: str  # the JSON path of the string, like ModSecurity's ARGS name
    matched: str


def _strings(value: Any, path: str = "") -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item, path)


def inspect(body: bytes) -> ContentMatch | None:
    """The first rule a JSON body's strings trip, or None (a body that is not JSON is left alone)."""
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return None
    for where, text in _strings(data):
        for rule in RULES:
            found = rule.pattern.search(text)
            if found:
                return ContentMatch(rule, where, found.group(0)[:80])
    return None
