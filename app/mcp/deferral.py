"""MCP tool definitions that do not crowd the payload.

Every request carries every tool definition, so MCP tools are part of the request's floor —
the part compaction cannot touch. Their exact bytes (measured by the route's own request
builder) are compared with a share of the effective cap (`mcp_defer_ratio`, 10%; the effective
cap is the smallest of the byte cap — configured, learned or assumed — and the usable context
window in bytes). Past it, the definitions are deferred:

- **bulkhead's index** (every route): the full definitions are not sent. One tool, `tool_search`,
  carries a compact index of the deferred tools (name — first sentence, shorter and shorter
  until it fits: name only, then one line per server) and, when the model calls it, answers with
  the full definitions of what matched and *loads* them: loaded tools are sent in full from then
  on, newest first, as long as they fit the share. A deferred tool called directly still runs.
- **Anthropic's `defer_loading`** (`provider = "anthropic"` routes): every MCP definition is sent
  with `defer_loading: true`, so the model does not read it until `tool_search` returns a
  `tool_reference` to it. This saves context tokens but not bytes — the definitions still cross
  the gateway — so it is only chosen when the full definitions fit the byte share and it is the
  context window they crowd; with a byte cap in the way the index is used.

`mcp_tool_search = "bulkhead"` always uses the index when deferring, `"off"` never defers.
`plan_tools` is pure: the engine gives it the tools, the budget and a measure function.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from app.mcp.adapter import one_line
from app.model.tools import ToolSpec
from app.sizes import format_size

SEARCH_TOOL = "tool_search"
MAX_SEARCH_RESULTS = 5  # tools a keyword query loads
MAX_EXACT_NAMES = 20  # tools one call may load by exact name
INDEX_LEVELS = (100, 40, 0)  # chars of description per index line; 0 = names only; then one line per server
INDEX_SHARE = 0.75  # of the share the index may take (else a shorter level): the rest is for loaded tools

Measure = Callable[[Sequence[ToolSpec]], int]  # bytes these MCP specs add to a request


@dataclass(frozen=True)
class DeferralPlan:
    """What the MCP part of the tool list is, and why."""

    mode: str  # none (no MCP tools) | full | index | native
    specs: tuple[ToolSpec, ...]  # the MCP-side specs to send (tool_search included when deferred)
    full_bytes: int = 0  # what every MCP definition would add
    sent_bytes: int = 0  # what the specs sent add
    budget_bytes: int | None = None  # the share of the effective cap they may take
    per_server: Mapping[str, int] = field(default_factory=dict)  # full bytes by server, heaviest first
    tool_count: int = 0
    loaded: tuple[str, ...] = ()  # deferred tools sent in full (index mode)
    index_level: str = ""  # "100 chars", "names", "servers"
    reason: str = ""

    @property
    def deferred(self) -> bool:
        return self.mode in ("index", "native")


def _search_spec(index: str, count: int, servers: Sequence[str], native: bool) -> ToolSpec:
    where = ", ".join(servers)
    how = (
        "Matching tools become callable at once."
        if native
        else "The answer gives their full definitions and they become callable."
    )
    description = (
        f"{count} tools of the MCP servers {where} are available, but their definitions are not "
        f"sent with every request (they would crowd it). Call {SEARCH_TOOL} with keywords, or with "
        f"exact tool names separated by commas, to load the ones you need. {how}\n"
        f"Index (name — what it does):\n{index}"
    )
    schema = {
        "type": "object",
        "properties": {
            "query": {
                "type": "string",
                "description": "Keywords (e.g. 'create issue'), or exact names separated by commas.",
            }
        },
        "required": ["query"],
    }
    return ToolSpec(SEARCH_TOOL, description, schema)


def index_text(specs: Sequence[ToolSpec], servers: Mapping[str, str], level: int | None) -> str:
    """The index lines: `name — first sentence` cut at `level` chars, names only (0), or per server (None)."""
    if level is None:
        counts: dict[str, int] = {}
        for spec in specs:
            counts[servers.get(spec.name, "?")] = counts.get(servers.get(spec.name, "?"), 0) + 1
        return "\n".join(
            f"- server {server}: {n} tools, named mcp__{server}__… (search by keyword)"
            for server, n in counts.items()
        )
    if level == 0:
        return "\n".join(f"- {spec.name}" for spec in specs)
    return "\n".join(f"- {spec.name} — {one_line(spec.description, level)}" for spec in specs)


def plan_tools(
    tools: Sequence[ToolSpec],
    servers: Mapping[str, str],
    *,
    budget_bytes: int | None,
    measure: Measure,
    setting: str = "auto",
    native_possible: bool = False,
    byte_budget: int | None = None,
    loaded: Sequence[str] = (),
) -> DeferralPlan:
    """Decide how MCP tools are sent.

    `tools`: every MCP tool's full spec (stable objects); `servers`: tool name → server;
    `budget_bytes`: the share of the effective cap; `byte_budget`: the share of the byte cap alone
    (None when no byte cap is known) — native deferral must fit it; `loaded`: names loaded by
    `tool_search`, newest last.
    """
    if not tools:
        return DeferralPlan("none", ())
    per_server: dict[str, int] = {}
    by_server: dict[str, list[ToolSpec]] = {}
    for spec in tools:
        by_server.setdefault(servers.get(spec.name, "?"), []).append(spec)
    for server, specs in by_server.items():
        per_server[server] = measure(specs)
    heaviest = dict(sorted(per_server.items(), key=lambda item: -item[1]))
    full = measure(tools)
    base = DeferralPlan("full", tuple(tools), full, full, budget_bytes, heaviest, len(tools))
    if setting == "off" or budget_bytes is None or full <= budget_bytes:
        why = (
            "mcp_tool_search = off"
            if setting == "off"
            else f"{format_size(full)} of definitions fit the share ({format_size(budget_bytes)})"
            if budget_bytes is not None
            else "no cap known"
        )
        return replace(base, reason=why)
    server_names = list(by_server)
    native = setting == "auto" and native_possible and (byte_budget is None or full <= byte_budget)
    over = f"{format_size(full)} of MCP definitions exceed {format_size(budget_bytes)} (mcp_defer_ratio of the cap)"
    index_budget = int(budget_bytes * INDEX_SHARE)  # the rest of the share is for tools tool_search loads
    for level in (*INDEX_LEVELS, None):
        text = index_text(tools, servers, level)
        search = _search_spec(text, len(tools), server_names, native)
        label = "servers" if level is None else ("names" if level == 0 else f"{level} chars")
        if native:
            deferred = tuple(replace(spec, defer_loading=True) for spec in tools)
            sent = (search, *deferred)
            # Tokens are what native deferral saves: the index has to fit the share by itself.
            if measure((search,)) <= index_budget or level is None:
                return replace(
                    base,
                    mode="native",
                    specs=sent,
                    sent_bytes=measure(sent),
                    index_level=label,
                    reason=f"{over}; sent with defer_loading (Anthropic tool search): the model reads "
                    f"them only when tool_search loads them",
                )
            continue
        index_bytes = measure((search,))
        if index_bytes > index_budget and level is not None:
            continue
        kept = _fit_loaded(tools, loaded, search, budget_bytes, measure)
        sent = (search, *kept)
        return replace(
            base,
            mode="index",
            specs=sent,
            sent_bytes=measure(sent),
            index_level=label,
            loaded=tuple(spec.name for spec in kept),
            reason=f"{over}; a compact index and {SEARCH_TOOL} are sent instead",
        )
    raise AssertionError("unreachable")


def _fit_loaded(
    tools: Sequence[ToolSpec], loaded: Sequence[str], search: ToolSpec, budget: int, measure: Measure
) -> list[ToolSpec]:
    """The loaded tools that fit the share with the index, newest first (kept in load order)."""
    by_name = {spec.name: spec for spec in tools}
    kept: list[ToolSpec] = []
    for name in reversed(list(dict.fromkeys(loaded))):
        spec = by_name.get(name)
        if spec is None:
            continue
        if measure((search, spec, *kept)) > budget:
            break
        kept.insert(0, spec)
    return kept


# -- tool_search -------------------------------------------------------------------------------------

_WORD = re.compile(r"[A-Za-z0-9]+")


def _words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text.replace("_", " "))}


def search(tools: Sequence[ToolSpec], query: str) -> list[ToolSpec]:
    """Tools named exactly (comma or space separated), else the best keyword matches (name words count
    double, then description, then argument names)."""
    by_name = {spec.name: spec for spec in tools}
    names = [n.strip() for n in re.split(r"[,\s]+", query or "") if n.strip()]
    exact = [by_name[n] for n in dict.fromkeys(names) if n in by_name]
    if exact and len(exact) == len(set(names)):
        return exact[:MAX_EXACT_NAMES]
    wanted = _words(query)
    if not wanted:
        return exact[:MAX_EXACT_NAMES]
    scored: list[tuple[int, int, ToolSpec]] = []
    for order, spec in enumerate(tools):
        props = spec.input_schema.get("properties", {}) if isinstance(spec.input_schema, Mapping) else {}
        score = (
            2 * len(wanted & _words(spec.name))
            + len(wanted & _words(spec.description))
            + len(wanted & _words(" ".join(props)))
        )
        if spec in exact:
            score += 100
        if score:
            scored.append((-score, order, spec))
    scored.sort(key=lambda item: (item[0], item[1]))
    return [spec for _score, _order, spec in scored[:MAX_SEARCH_RESULTS]]


def describe_found(found: Iterable[ToolSpec], *, native: bool) -> str:
    """The text of a tool_search answer: each tool's full definition (index mode) or its name (native)."""
    found = list(found)
    if not found:
        return "No MCP tool matches; try other keywords, or exact names from the index."
    if native:
        return "Loaded: " + ", ".join(spec.name for spec in found)
    blocks = [
        f"Loaded {len(found)} tool{'s' if len(found) != 1 else ''}; call {'them' if len(found) != 1 else 'it'} "
        f"by name."
    ]
    for spec in found:
        blocks.append(
            f"## {spec.name}\n{spec.description}\ninput schema: "
            + json.dumps(dict(spec.input_schema), ensure_ascii=False, separators=(",", ":"))
        )
    return "\n\n".join(blocks)
