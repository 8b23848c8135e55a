"""The case the classifier's rules read (`Case`), where the failed request went (`Target`), and the header
test the rule tables share. A leaf: `failure_input.make_case` builds a Case, `failure_vendors` reads one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from app.engine.resets import SizeEvidence
from app.network_env import ProxyInEffect


@dataclass(frozen=True)
class Target:
    """Where the failed request went: its URL, the setting that names it, and the proxy in effect for it."""

    url: str = ""
    setting: str = ""  # e.g. "base_url of [routes.work]" — what the user changes to point elsewhere
    proxy: ProxyInEffect | None = None  # the forward proxy the SDK used (HTTPS_PROXY, HTTP_PROXY, ALL_PROXY)


# -- the normalised case the rules read -------------------------------------------------------------
@dataclass
class Case:
    status: int | None
    status_note: str  # "" or " (from the message)"
    message: str
    body: str
    headers: dict[str, str]
    request_bytes: int | None
    transport: str
    error_type: str
    drop_threshold: int
    class_names: tuple[str, ...] = ()  # the failing exception's classes (its MRO)
    cause_names: tuple[str, ...] = ()  # classes further down its __cause__/__context__ chain
    cause_notes: tuple[str, ...] = ()
    cause_text: str = ""  # the messages of the whole __cause__/__context__ chain, lower case
    size_evidence: SizeEvidence | None = None  # what this endpoint showed about body sizes (resets)
    request_header_bytes: int | None = None  # the request's header block, when the adapter measured it
    retry_after: float | None = None
    text: str = ""  # message + body: lower case, entities decoded, whitespace collapsed
    codes: frozenset[str] = frozenset()
    html: bool = False
    json_envelope: bool = False
    gateway: str | None = None
    provider: str = ""  # the adapter's kind ("anthropic", "bedrock", …) when known: hints name its SDK
    target: Target | None = None  # where the request went (URL, setting, proxy), when the sender knows
    request_values: int | None = None  # how many JSON values (leaves) the body held: WAFs count them
    reading: object = None  # the meaning reading, made once (app/engine/failure_meaning.py)

    def status_evidence(self) -> str:
        return f"status {self.status}{self.status_note}"

    def header(self, name: str) -> str | None:
        return self.headers.get(name)


def header_matches(headers: Mapping[str, str], name: str, value_part: str) -> str | None:
    """The matching header name, for a name (or a prefix ending in '-') and value substring."""
    for key, value in headers.items():
        if (key.startswith(name) if name.endswith("-") else key == name) and value_part in value.lower():
            return key
    return None
