"""What an endpoint has shown, beyond its body cap: its capability profile, per endpoint, in state.toml.

    profile = load_profile(state, route.endpoint_id)
    record_header_limit(state, endpoint, header_bytes=17_600, reason="431 …")
    record_refused_beta(state, endpoint, "context-management-2025-06-27", how="refused", evidence="400 …")
    record_content_block(state, endpoint, kind="waf_block", why="…", gateway="Apache (…)", incident_id="…")
    record_stream_quirk(state, endpoint, "buffered_sse", detail="…")
    record_hop(state, endpoint, name="Squid (the proxy at 127.0.0.1:3128, from HTTP_PROXY)", kind="forward-proxy")

Facts this machine learned live in `[profiles."ENDPOINT"]` (the learned body cap stays in `[caps]`);
facts imported from a team's `gateways.toml` (`bulkhead gateway import`, a workspace's
`.bulkhead/gateways.toml`) live apart in `[imported."ENDPOINT"]`, with their source and date, so both
are shown side by side and an import never overwrites what this machine saw. Every fact carries `at`
(UTC, ISO 8601). Lists are bounded (`MAX_FACTS`); a repeated fact counts up instead of growing the list.

- **header limit**: the smallest request header block refused as too large (431 and its kin);
- **refused betas**: `anthropic-beta` values the endpoint refused (400 "Unexpected value(s) … for the
  `anthropic-beta` header") or stripped (the beta's body field then refused) — never sent there again;
- **content blocks**: refusals judged to be about the content (`app.engine.block_cause` judges; the
  engine and `bulkhead proxy` record them through `app.engine.profile_evidence`), with why, the gateway
  and the page's incident ID — the one record of a content block in state.toml;
- **streaming quirks**: `buffered_sse` (the whole answer arrived at once: something buffers the stream),
  `idle_cut` (the stream was cut after a silence: an idle timeout on the way);
- **hops**: the forward proxies and gateways a failure named (the classifier's `Failure.hop`: its name,
  kind, vendor, address, the setting that put it there, its own error, the line that named it).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from app.sizes import format_size
from app.state import LearnedCap, State

PROFILES = "profiles"
IMPORTED = "imported"
MAX_FACTS = 20  # per list and endpoint: the oldest go first
EVIDENCE_CHARS = 300
StreamQuirk = Literal["buffered_sse", "idle_cut"]
BetaRefusal = Literal["refused", "stripped"]
QUIRK_WORDS = {"buffered_sse": "buffered SSE (the answer arrives all at once)", "idle_cut": "idle cut"}


def now_iso() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _clean(value: Any) -> Any:
    """A value TOML can hold (no None, no nested odd types), strings bounded."""
    if isinstance(value, bool | int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else 0.0
    return str(value)[:EVIDENCE_CHARS]


def _entry(raw: Mapping[str, Any]) -> dict[str, Any]:
    return {str(k): _clean(v) for k, v in raw.items() if v is not None}


@dataclass(frozen=True)
class Facts:
    """One side of a profile: what this machine learned, or what a file brought (`source`, `imported_at`)."""

    cap: LearnedCap | None = None
    header_limit: Mapping[str, Any] | None = None
    betas: tuple[Mapping[str, Any], ...] = ()
    content_blocks: tuple[Mapping[str, Any], ...] = ()
    streaming: tuple[Mapping[str, Any], ...] = ()
    hops: tuple[Mapping[str, Any], ...] = ()
    source: str = ""
    imported_at: str = ""

    @property
    def empty(self) -> bool:
        return not (
            self.cap or self.header_limit or self.betas or self.content_blocks or self.streaming or self.hops
        )

    @classmethod
    def from_table(cls, table: Mapping[str, Any], cap: LearnedCap | None = None) -> Facts:
        def entries(key: str) -> tuple[Mapping[str, Any], ...]:
            value = table.get(key)
            return tuple(e for e in value if isinstance(e, Mapping)) if isinstance(value, list) else ()

        limit = table.get("header_limit")
        if cap is None and isinstance(table.get("cap_bytes"), int) and table["cap_bytes"] > 0:
            rejected = table.get("cap_rejected_bytes")
            cap = LearnedCap(
                cap_bytes=int(table["cap_bytes"]),
                rejected_bytes=int(rejected) if isinstance(rejected, int) else None,
                learned_at=str(table.get("cap_learned_at", "")),
                kind=str(table.get("cap_kind", "")),
                reason=str(table.get("cap_reason", "")),
            )
        return cls(
            cap=cap,
            header_limit=limit if isinstance(limit, Mapping) else None,
            betas=entries("betas"),
            content_blocks=entries("content_blocks"),
            streaming=entries("streaming"),
            hops=entries("hops"),
            source=str(table.get("source", "")),
            imported_at=str(table.get("imported_at", "")),
        )

    def to_table(self) -> dict[str, Any]:
        """The facts as a TOML table (the export format, and `[imported]`'s)."""
        table: dict[str, Any] = {}
        if self.cap is not None:
            table["cap_bytes"] = self.cap.cap_bytes
            if self.cap.rejected_bytes:
                table["cap_rejected_bytes"] = self.cap.rejected_bytes
            table.update(
                cap_kind=self.cap.kind, cap_learned_at=self.cap.learned_at, cap_reason=self.cap.reason
            )
        if self.header_limit:
            table["header_limit"] = _entry(self.header_limit)
        for key in ("betas", "content_blocks", "streaming", "hops"):
            values = getattr(self, key)
            if values:
                table[key] = [_entry(v) for v in values]
        return table


@dataclass(frozen=True)
class GatewayProfile:
    endpoint: str
    learned: Facts = field(default_factory=Facts)
    imported: Facts | None = None

    @property
    def refused_betas(self) -> frozenset[str]:
        """Every beta this endpoint refused or stripped, here or for whoever shared the profile."""
        sides = (self.learned, self.imported) if self.imported is not None else (self.learned,)
        return frozenset(str(b.get("beta", "")) for side in sides for b in side.betas if b.get("beta"))

    @property
    def empty(self) -> bool:
        return self.learned.empty and (self.imported is None or self.imported.empty)


# -- reading -----------------------------------------------------------------------------------------------


def _table(data: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    value = data.get(name)
    return value if isinstance(value, Mapping) else {}


def _learned_cap(data: Mapping[str, Any], endpoint: str) -> LearnedCap | None:
    entry = _table(data, "caps").get(endpoint)
    if not isinstance(entry, Mapping):
        return None
    try:
        return LearnedCap.from_dict(dict(entry))
    except (KeyError, TypeError, ValueError):
        return None


def profile_from(data: Mapping[str, Any], endpoint: str) -> GatewayProfile:
    learned_table = _table(data, PROFILES).get(endpoint)
    imported_table = _table(data, IMPORTED).get(endpoint)
    return GatewayProfile(
        endpoint,
        Facts.from_table(
            learned_table if isinstance(learned_table, Mapping) else {}, _learned_cap(data, endpoint)
        ),
        Facts.from_table(imported_table) if isinstance(imported_table, Mapping) else None,
    )


def load_profile(state: State, endpoint: str) -> GatewayProfile:
    return profile_from(state.read(), endpoint)


def all_profiles(state: State) -> list[GatewayProfile]:
    """Every endpoint with anything known (a learned cap, learned facts, an import), sorted."""
    data = state.read()
    endpoints = set(_table(data, "caps")) | set(_table(data, PROFILES)) | set(_table(data, IMPORTED))
    profiles = [profile_from(data, endpoint) for endpoint in sorted(endpoints)]
    return [p for p in profiles if not p.empty]


def imported_cap(state: State, endpoint: str) -> Facts | None:
    """The imported side of `endpoint`'s profile when it carries a cap (the effective cap's candidate)."""
    table = _table(state.read(), IMPORTED).get(endpoint)
    if not isinstance(table, Mapping):
        return None
    facts = Facts.from_table(table)
    return facts if facts.cap is not None else None


# -- recording (this machine) ----------------------------------------------------------------------------


def _learned_table(data: dict[str, Any], endpoint: str) -> dict[str, Any]:
    profiles = data.get(PROFILES)
    if not isinstance(profiles, dict):
        profiles = data[PROFILES] = {}
    table = profiles.get(endpoint)
    if not isinstance(table, dict):
        table = profiles[endpoint] = {}
    return table


def _add(table: dict[str, Any], key: str, entry: dict[str, Any], same: Iterable[str]) -> None:
    """Add `entry` to the list `key`, or count up the entry that matches it on `same` (and refresh it)."""
    entries = [e for e in table.get(key, []) if isinstance(e, dict)]
    fields = tuple(same)
    for existing in entries:
        if all(existing.get(f) == entry.get(f) for f in fields):
            count = int(existing.get("count", 1)) + 1
            existing.update(entry)
            existing["count"] = count
            table[key] = entries
            return
    entries.append({**entry, "count": 1})
    table[key] = entries[-MAX_FACTS:]


def record_header_limit(state: State, endpoint: str, *, header_bytes: int, reason: str) -> None:
    """The endpoint refused a request whose header block was `header_bytes`: keep the smallest such."""

    def change(data: dict[str, Any]) -> None:
        table = _learned_table(data, endpoint)
        known = table.get("header_limit")
        if isinstance(known, dict) and int(known.get("refused_bytes", 0) or 0) <= header_bytes:
            return
        table["header_limit"] = _entry(
            {"refused_bytes": int(header_bytes), "at": now_iso(), "reason": reason}
        )

    state.update(change)


def record_refused_beta(state: State, endpoint: str, beta: str, *, how: BetaRefusal, evidence: str) -> None:
    """The endpoint refused (or stripped) `beta`: bulkhead stops sending it there."""

    def change(data: dict[str, Any]) -> None:
        entry = _entry({"beta": beta, "how": how, "at": now_iso(), "evidence": evidence})
        _add(_learned_table(data, endpoint), "betas", entry, ("beta",))

    state.update(change)


CONTENT_BLOCK_SAME = ("kind", "gateway")  # one entry per gateway and kind; a repeat counts up, newest ID kept


def record_content_block(
    state: State,
    endpoint: str,
    *,
    kind: str,
    why: str,
    status: int | None = None,
    gateway: str = "",
    incident_id: str | None = None,
    rejected_bytes: int | None = None,
) -> None:
    """A refusal judged to be about the content (the judge is the caller's: `app.engine.block_cause`)."""

    def change(data: dict[str, Any]) -> None:
        entry = _entry(
            {
                "cause": "content",
                "kind": kind,
                "status": status,
                "gateway": gateway,
                "incident_id": incident_id,
                "rejected_bytes": rejected_bytes,
                "at": now_iso(),
                "why": why,
            }
        )
        _add(_learned_table(data, endpoint), "content_blocks", entry, CONTENT_BLOCK_SAME)

    state.update(change)


def record_stream_quirk(
    state: State, endpoint: str, quirk: StreamQuirk, *, detail: str, idle_seconds: float | None = None
) -> None:
    def change(data: dict[str, Any]) -> None:
        entry = _entry(
            {
                "quirk": quirk,
                "at": now_iso(),
                "detail": detail,
                "idle_seconds": round(idle_seconds, 1) if idle_seconds is not None else None,
            }
        )
        _add(_learned_table(data, endpoint), "streaming", entry, ("quirk",))

    state.update(change)


def record_hop(
    state: State,
    endpoint: str,
    *,
    name: str,
    kind: str,
    vendor: str | None = None,
    address: str | None = None,
    setting: str | None = None,
    error: str | None = None,
    detail: str | None = None,
) -> None:
    """A hop a failure named (`Failure.hop`: a forward proxy or a gateway), counted up by name."""
    if not name.strip():
        return

    def change(data: dict[str, Any]) -> None:
        entry = _entry(
            {
                "name": name.strip(),
                "kind": kind,
                "vendor": vendor,
                "address": address,
                "setting": setting,
                "error": error,
                "detail": detail,
                "at": now_iso(),
            }
        )
        _add(_learned_table(data, endpoint), "hops", entry, ("name",))

    state.update(change)


def forget_profile(state: State, endpoint: str, *, imported: bool = True) -> bool:
    """Forget what this machine learned about `endpoint` (beyond its cap) and, with `imported`, the import."""
    removed: list[bool] = []

    def change(data: dict[str, Any]) -> None:
        gone = False
        for name in (PROFILES, IMPORTED) if imported else (PROFILES,):
            table = data.get(name)
            if isinstance(table, dict) and table.pop(endpoint, None) is not None:
                gone = True
        removed.append(gone)

    state.update(change)
    return removed[0]


# -- words ---------------------------------------------------------------------------------------------------


def _day(at: Any) -> str:
    return str(at or "").replace("T", " ").rstrip("Z")[:16]


def _count(entry: Mapping[str, Any]) -> str:
    count = int(entry.get("count", 1) or 1)
    return f" ×{count}" if count > 1 else ""


def describe_facts(facts: Facts, *, with_cap: bool = True) -> list[tuple[str, str]]:
    """(label, text) rows for one side of a profile."""
    rows: list[tuple[str, str]] = []
    if with_cap and facts.cap is not None:
        cap = facts.cap
        rejected = f" (¾ of a refused {format_size(cap.rejected_bytes)})" if cap.rejected_bytes else ""
        rows.append(
            (
                "body cap",
                f"{format_size(cap.cap_bytes)}{rejected}, {cap.kind or 'learned'} {_day(cap.learned_at)}",
            )
        )
    if facts.header_limit:
        limit = facts.header_limit
        rows.append(
            (
                "header limit",
                f"headers of {format_size(int(limit.get('refused_bytes', 0) or 0))} refused {_day(limit.get('at'))}"
                + (f" — {limit['reason']}" if limit.get("reason") else ""),
            )
        )
    for beta in facts.betas:
        how = "stripped on the way" if beta.get("how") == "stripped" else "refused"
        rows.append(
            (
                "refused beta",
                f"{beta.get('beta')} ({how}{_count(beta)}, {_day(beta.get('at'))}) — not sent there",
            )
        )
    for block in facts.content_blocks:
        status = f" {block['status']}" if block.get("status") else ""
        by = f" by {block['gateway']}" if block.get("gateway") else ""
        ref = f", {block['incident_id']}" if block.get("incident_id") else ""
        why = block.get("why") or block.get("cause", "")  # files from before 'why' carry it in 'cause'
        rows.append(
            (
                "content block",
                f"{block.get('kind', '')}{status}{_count(block)}{by}{ref}: {why} ({_day(block.get('at'))})",
            )
        )
    for quirk in facts.streaming:
        words = QUIRK_WORDS.get(str(quirk.get("quirk")), str(quirk.get("quirk")))
        idle = f" after ~{quirk['idle_seconds']:g} s of silence" if quirk.get("idle_seconds") else ""
        rows.append(("streaming", f"{words}{idle}{_count(quirk)} ({_day(quirk.get('at'))})"))
    for hop in facts.hops:
        error = f" {hop['error']}" if hop.get("error") else ""
        detail = f" — {hop['detail']}" if hop.get("detail") else ""
        label = "proxy hop" if hop.get("kind") == "forward-proxy" else "gateway hop"
        rows.append((label, f"{hop.get('name')}{error}{detail}{_count(hop)} ({_day(hop.get('at'))})"))
    return rows


def describe_profile(profile: GatewayProfile) -> list[tuple[str, str]]:
    """(label, text) rows: what this machine learned, then what was imported, marked with its source."""
    rows = describe_facts(profile.learned)
    if profile.imported is not None and not profile.imported.empty:
        origin = f"{_day(profile.imported.imported_at)} from {profile.imported.source or 'a file'}"
        rows.append(("imported", origin))
        rows += [(f"  {label}", text) for label, text in describe_facts(profile.imported)]
    return rows


def profile_lines(profile: GatewayProfile) -> list[str]:
    """Short lines for the Payload panel (no cap: the panel shows it already)."""
    lines = [f"{label}: {text}" for label, text in describe_facts(profile.learned, with_cap=False)]
    if profile.imported is not None and not profile.imported.empty:
        cap = profile.imported.cap
        what = f" (cap {format_size(cap.cap_bytes)})" if cap is not None else ""
        lines.append(
            f"imported{what} from {profile.imported.source or 'a file'}, {_day(profile.imported.imported_at)}"
        )
        lines += [f"  {label}: {text}" for label, text in describe_facts(profile.imported, with_cap=False)]
    return lines


def profile_summary(profile: GatewayProfile) -> str:
    """One line per endpoint for `bulkhead config show`: what is known, by label, and any import's source."""
    labels: dict[str, int] = {}
    for label, _text in describe_facts(profile.learned):
        labels[label] = labels.get(label, 0) + 1
    known = ", ".join(f"{label}{f' ×{n}' if n > 1 else ''}" for label, n in labels.items())
    if profile.learned.cap is not None:
        known = known.replace("body cap", f"body cap {format_size(profile.learned.cap.cap_bytes)}", 1)
    if profile.imported is not None and not profile.imported.empty:
        cap = profile.imported.cap
        known += ("; " if known else "") + (
            f"imported{f' (cap {format_size(cap.cap_bytes)})' if cap else ''} from {profile.imported.source}"
        )
    return known or "nothing"
