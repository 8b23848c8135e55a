"""Share what endpoints have shown: `gateways.toml` out of one machine and into another.

    text = export_profiles(state, endpoints=None)          # TOML, what this machine knows
    report = import_profiles(state, text, source="gateways.toml", loosen=False)

The file (commit it as `.bulkhead/gateways.toml` and a workspace shares it, read on trust):

    format = "bulkhead-gateways"
    version = 1
    exported_at = "2026-12-01T10:00:00Z"

    [gateways."anthropic https://llm-gw.example.com"]
    cap_bytes = 121856                 # the body cap: ¾ of the smallest refusal seen
    cap_rejected_bytes = 162475
    header_limit = { refused_bytes = 17408, at = "…", reason = "…" }
    betas = [{ beta = "context-management-2025-06-27", how = "refused", at = "…" }]
    content_blocks = [ … ]   streaming = [ … ]   hops = [ … ]

Imported facts go to `[imported."ENDPOINT"]` in state.toml with their source and date, beside what this
machine learned (never over it). An imported cap is a starting point: the effective cap is the smallest of
the configured, learned and imported ones, so evidence here tightens it; a file never loosens a cap
imported before unless the user says so (`loosen`), and never touches a cap this machine learned.
No secret is in the file: endpoints are written without URL passwords, evidence was redacted when stored.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import tomli_w

from app.gateway_profile import CONTENT_BLOCK_SAME, IMPORTED, Facts, all_profiles, now_iso, profile_from
from app.redact import redact_text
from app.sizes import format_size
from app.state import State

FORMAT = "bulkhead-gateways"
VERSION = 1
PROVIDERS = ("anthropic", "openai", "bedrock", "lab")
LISTS = ("betas", "content_blocks", "streaming", "hops")
KEYS = {"betas": ("beta",), "content_blocks": CONTENT_BLOCK_SAME, "streaming": ("quirk",), "hops": ("name",)}


class GatewayFileError(ValueError):
    """A gateways file that cannot be read as one: the message names the file (and line) and the fix."""


@dataclass
class ImportReport:
    imported: list[str] = field(default_factory=list)  # one line per endpoint
    skipped: list[str] = field(default_factory=list)  # entries that were not valid, and why

    @property
    def count(self) -> int:
        return len(self.imported)


# -- export ---------------------------------------------------------------------------------------------


def _merge_lists(first: Iterable[Mapping[str, Any]], second: Iterable[Mapping[str, Any]], keys) -> list[dict]:
    merged: dict[tuple, dict] = {}
    for entry in [*first, *second]:
        key = tuple(entry.get(k) for k in keys)
        merged.setdefault(key, dict(entry))
    return list(merged.values())


def _shared(facts: Facts, other: Facts | None) -> dict[str, Any]:
    """One endpoint as exported: what this machine learned, completed by what it imported (the tighter cap)."""
    table = facts.to_table()
    if other is None:
        return table
    theirs = other.to_table()
    if "cap_bytes" in theirs and ("cap_bytes" not in table or theirs["cap_bytes"] < table["cap_bytes"]):
        for key in ("cap_bytes", "cap_rejected_bytes", "cap_kind", "cap_learned_at", "cap_reason"):
            table.pop(key, None)
            if key in theirs:
                table[key] = theirs[key]
    if "header_limit" in theirs and "header_limit" not in table:
        table["header_limit"] = theirs["header_limit"]
    for name in LISTS:
        merged = _merge_lists(table.get(name, []), theirs.get(name, []), KEYS[name])
        if merged:
            table[name] = merged
    return table


def export_profiles(state: State, endpoints: Iterable[str] | None = None) -> str:
    """What this machine knows about `endpoints` (default: every one), as a gateways.toml."""
    wanted = set(endpoints) if endpoints is not None else None
    gateways: dict[str, Any] = {}
    for profile in all_profiles(state):
        if wanted is not None and profile.endpoint not in wanted:
            continue
        table = _shared(profile.learned, profile.imported)
        if table:
            gateways[redact_text(profile.endpoint)] = table
    document = {"format": FORMAT, "version": VERSION, "exported_at": now_iso(), "gateways": gateways}
    header = (
        "# bulkhead gateway profiles: what these endpoints have shown (body caps, header limits, refused betas,\n"
        "# content blocks, streaming quirks, proxy hops). `bulkhead gateway import FILE` reads it; committed as\n"
        "# .bulkhead/gateways.toml, every workspace user is asked once whether to read it.\n"
    )
    return header + tomli_w.dumps(document)


# -- import ---------------------------------------------------------------------------------------------


def parse_file(text: str, where: str) -> tuple[dict[str, Any], str]:
    """The `gateways` table and the file's `exported_at`; GatewayFileError naming `where` and the line."""
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise GatewayFileError(f"{where}: not valid TOML — {exc}") from None
    if document.get("format", FORMAT) != FORMAT:
        raise GatewayFileError(
            f'{where}: format = "{document.get("format")}" is not a bulkhead gateways file'
        )
    version = document.get("version", VERSION)
    if not isinstance(version, int) or version > VERSION:
        raise GatewayFileError(
            f"{where}: version {version!r} is newer than this bulkhead reads ({VERSION}) — update bulkhead"
        )
    gateways = document.get("gateways")
    if not isinstance(gateways, dict):
        raise GatewayFileError(
            f'{where}: no [gateways."ENDPOINT"] table — export one with `bulkhead gateway export`'
        )
    return gateways, str(document.get("exported_at", ""))


def _valid(endpoint: str, table: Any) -> str:
    """Why an entry cannot be imported ("" when it can)."""
    if not isinstance(table, dict):
        return "not a table"
    provider = endpoint.split(" ", 1)[0]
    if provider not in PROVIDERS or " " not in endpoint:
        return (
            f"the endpoint must read '<provider> <url or region>' with provider one of {', '.join(PROVIDERS)}"
        )
    cap = table.get("cap_bytes")
    if cap is not None and (not isinstance(cap, int) or isinstance(cap, bool) or cap < 1024):
        return f"cap_bytes = {cap!r} is not a size in bytes (at least 1024)"
    for name in LISTS:
        value = table.get(name)
        if value is not None and not (isinstance(value, list) and all(isinstance(e, dict) for e in value)):
            return f"{name} must be a list of tables"
    if table.get("header_limit") is not None and not isinstance(table["header_limit"], dict):
        return "header_limit must be a table"
    return ""


def facts_in_words(facts: Facts) -> str:
    """What one endpoint's facts hold, counted: "cap 119.0 KB, 1 refused beta, 1 hop" ("" for nothing)."""
    what = [f"cap {format_size(facts.cap.cap_bytes)}"] if facts.cap is not None else []
    for name, words in (
        ("betas", "refused beta"),
        ("content_blocks", "content block"),
        ("streaming", "streaming quirk"),
        ("hops", "hop"),
    ):
        count = len(getattr(facts, name))
        if count:
            what.append(f"{count} {words}{'s' if count != 1 else ''}")
    if facts.header_limit:
        what.append("a header limit")
    return ", ".join(what)


def describe_file(text: str, where: str) -> list[str]:
    """One line per endpoint a gateways file holds and what it would import (for the trust question);
    raises GatewayFileError for a file that cannot be read."""
    gateways, exported_at = parse_file(text, where)
    lines = [f"exported {exported_at}"] if exported_at else []
    for endpoint, table in gateways.items():
        why = _valid(str(endpoint), table)
        what = why and f"skipped: {why}" or facts_in_words(Facts.from_table(table)) or "nothing"
        lines.append(f"{endpoint}: {what}")
    return lines


def import_profiles(state: State, text: str, *, source: str, loosen: bool = False) -> ImportReport:
    """Read a gateways file into `[imported]`, marked with `source` and today's date (see the module doc)."""
    gateways, exported_at = parse_file(text, source)
    report = ImportReport()
    origin = source + (f", exported {exported_at.replace('T', ' ').rstrip('Z')[:16]}" if exported_at else "")
    accepted: dict[str, dict[str, Any]] = {}
    for endpoint, table in gateways.items():
        why = _valid(str(endpoint), table)
        if why:
            report.skipped.append(f"{endpoint}: {why}")
        else:
            accepted[str(endpoint)] = table
    if not accepted:
        return report

    def change(data: dict[str, Any]) -> None:
        imported = data.get(IMPORTED)
        if not isinstance(imported, dict):
            imported = data[IMPORTED] = {}
        for endpoint, table in accepted.items():
            before = profile_from(data, endpoint)
            old = before.imported.to_table() if before.imported is not None else {}
            new = {k: v for k, v in table.items() if k in ("header_limit", *LISTS) or k.startswith("cap_")}
            notes = []
            if (
                "cap_bytes" in old
                and "cap_bytes" in new
                and new["cap_bytes"] > old["cap_bytes"]
                and not loosen
            ):
                notes.append(
                    f"kept the tighter imported cap {format_size(old['cap_bytes'])} (the file says "
                    f"{format_size(new['cap_bytes'])}; --loosen takes the file's)"
                )
                for key in ("cap_bytes", "cap_rejected_bytes", "cap_kind", "cap_learned_at", "cap_reason"):
                    new.pop(key, None)
                    if key in old:
                        new[key] = old[key]
            elif "cap_bytes" not in new and "cap_bytes" in old:
                new.update({k: v for k, v in old.items() if k.startswith("cap_")})
            for name in LISTS:
                merged = _merge_lists(new.get(name, []), old.get(name, []), KEYS[name])
                if merged:
                    new[name] = merged
            if "header_limit" not in new and "header_limit" in old:
                new["header_limit"] = old["header_limit"]
            learned = before.learned.cap
            if learned is not None and "cap_bytes" in new and learned.cap_bytes < new["cap_bytes"]:
                notes.append(
                    f"this machine's learned cap {format_size(learned.cap_bytes)} is tighter and stays in force "
                    f"(`/cap reset` forgets it)"
                )
            imported[endpoint] = {**new, "source": origin, "imported_at": now_iso()}
            line = f"{endpoint}: {facts_in_words(Facts.from_table(imported[endpoint])) or 'nothing new'}"
            report.imported.append(line + (f" — {'; '.join(notes)}" if notes else ""))

    state.update(change)
    return report


def forget_imported(state: State, endpoint: str) -> bool:
    removed: list[bool] = []

    def change(data: dict[str, Any]) -> None:
        table = data.get(IMPORTED)
        removed.append(isinstance(table, dict) and table.pop(endpoint, None) is not None)

    state.update(change)
    return removed[0]
