"""Known models: context window and output cap, by provider and model id.

`model_limits(provider, model)` matches the longest known prefix after normalising the
id (Bedrock's `us.`/`eu.`/`global.` inference-profile prefixes, the `anthropic.` vendor
prefix and `-v1:0` version suffixes, date suffixes). Unknown models get a conservative
default; a route's `context_window` / `max_output_tokens` override is applied by the
caller, and always wins.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

K = 1000


@dataclass(frozen=True)
class ModelLimits:
    context_window: int  # tokens
    max_output_tokens: int
    source: str = "catalog"  # catalog | default


DEFAULT_LIMITS = ModelLimits(128 * K, 8192, source="default")
LAB_LIMITS = ModelLimits(200 * K, 64 * K)

# Longest prefix wins. Windows are the standard (not beta) ones.
ANTHROPIC: dict[str, tuple[int, int]] = {
    "claude-fable-5": (1_000_000, 128 * K),
    "claude-mythos-5": (1_000_000, 128 * K),
    "claude-mythos-preview": (1_000_000, 128 * K),
    "claude-opus-5": (1_000_000, 128 * K),
    "claude-sonnet-5": (1_000_000, 128 * K),
    "claude-haiku-5": (1_000_000, 128 * K),
    "claude-opus-4-8": (1_000_000, 128 * K),
    "claude-opus-4-7": (1_000_000, 128 * K),
    "claude-opus-4-6": (1_000_000, 128 * K),
    "claude-sonnet-4-6": (1_000_000, 128 * K),
    "claude-opus-4-5": (200 * K, 64 * K),
    "claude-sonnet-4-5": (200 * K, 64 * K),
    "claude-haiku-4-5": (200 * K, 64 * K),
    "claude-opus-4-1": (200 * K, 32 * K),
    "claude-opus-4": (200 * K, 32 * K),
    "claude-sonnet-4": (200 * K, 64 * K),
    "claude-4-opus": (200 * K, 32 * K),
    "claude-4-sonnet": (200 * K, 64 * K),
    "claude-3-7-sonnet": (200 * K, 64 * K),
    "claude-3-5-sonnet": (200 * K, 8192),
    "claude-3-5-haiku": (200 * K, 8192),
    "claude-3-opus": (200 * K, 4096),
    "claude-3-sonnet": (200 * K, 4096),
    "claude-3-haiku": (200 * K, 4096),
    "claude-2": (100 * K, 4096),
    "claude-instant": (100 * K, 4096),
}

OPENAI: dict[str, tuple[int, int]] = {
    "gpt-5.6-luna": (400 * K, 128 * K),
    "gpt-5.6": (1_000_000, 128 * K),
    "gpt-5.5": (1_050_000, 128 * K),
    "gpt-5.4-mini": (400 * K, 128 * K),
    "gpt-5.4-nano": (400 * K, 128 * K),
    "gpt-5.4": (1_050_000, 128 * K),
    "gpt-5.3": (400 * K, 128 * K),
    "gpt-5.2": (400 * K, 128 * K),
    "gpt-5.1": (400 * K, 128 * K),
    "gpt-5-chat": (128 * K, 16384),
    "gpt-5": (400 * K, 128 * K),
    "gpt-4.1": (1_047_576, 32768),
    "gpt-4o": (128 * K, 16384),
    "chatgpt-4o": (128 * K, 16384),
    "gpt-4-turbo": (128 * K, 4096),
    "gpt-4-32k": (32768, 4096),
    "gpt-4": (8192, 8192),
    "gpt-3.5-turbo": (16385, 4096),
    "o4-mini": (200 * K, 100 * K),
    "o3-mini": (200 * K, 100 * K),
    "o3": (200 * K, 100 * K),
    "o1-mini": (128 * K, 65536),
    "o1-preview": (128 * K, 32768),
    "o1": (200 * K, 100 * K),
    "gpt-oss": (131072, 131072),
}

# Bedrock-only families (Claude ids on Bedrock are looked up in ANTHROPIC once normalised).
BEDROCK: dict[str, tuple[int, int]] = {
    "amazon.nova-premier": (1_000_000, 10 * K),
    "amazon.nova-pro": (300 * K, 10 * K),
    "amazon.nova-lite": (300 * K, 10 * K),
    "amazon.nova-micro": (128 * K, 10 * K),
    "meta.llama3-1": (128 * K, 2048),
    "meta.llama3-2": (128 * K, 2048),
    "meta.llama3-3": (128 * K, 2048),
    "meta.llama4": (1_000_000, 8192),
    "mistral.mistral-large": (128 * K, 8192),
    "cohere.command-r": (128 * K, 4096),
    "openai.gpt-oss": (128 * K, 128 * K),
}

_TABLES = {"anthropic": ANTHROPIC, "openai": OPENAI, "bedrock": BEDROCK}
_BEDROCK_PROFILE = re.compile(r"^(us|eu|apac|ap|jp|au|ca|us-gov|global)\.")
_BEDROCK_VERSION = re.compile(r"-v\d+(:\d+)?$|:\d+$")


def normalise(provider: str, model: str) -> str:
    """The id as the tables know it: lower case, no Bedrock profile, vendor or version parts."""
    name = model.strip().lower()
    if "/" in name and provider != "bedrock":
        name = name.rsplit("/", 1)[-1]  # "openai/gpt-4o", "anthropic/claude-…" via gateways
    if provider == "bedrock" or name.startswith(("anthropic.", "us.", "eu.", "apac.", "global.")):
        if name.startswith("arn:"):
            name = name.rsplit("/", 1)[-1]
        name = _BEDROCK_PROFILE.sub("", name)
        name = _BEDROCK_VERSION.sub("", name)
        if name.startswith("anthropic."):
            name = name[len("anthropic.") :]
    return name


def _lookup(table: dict[str, tuple[int, int]], name: str) -> tuple[int, int] | None:
    best = ""
    for prefix in table:
        if name.startswith(prefix) and len(prefix) > len(best):
            boundary = name[len(prefix) : len(prefix) + 1]
            if boundary in ("", "-", ".", ":", "@", "_"):
                best = prefix
    return table[best] if best else None


def model_limits(provider: str, model: str) -> ModelLimits:
    """Context window and output cap for `model` on `provider` (a default when unknown)."""
    if provider == "lab":
        return LAB_LIMITS
    name = normalise(provider, model)
    order = [_TABLES.get(provider, {})]
    if provider == "bedrock":
        order.append(ANTHROPIC)
    order += [table for table in (ANTHROPIC, OPENAI, BEDROCK) if table not in order]
    for table in order:
        found = _lookup(table, name)
        if found:
            return ModelLimits(*found)
    return DEFAULT_LIMITS


_CACHE_FREE_CLAUDE = re.compile(r"^claude-(3-(opus|sonnet|haiku)|3-5-sonnet|2|instant)")


def supports_prompt_cache(provider: str, model: str) -> bool:
    """Whether explicit cache points are accepted (Bedrock rejects them on older models)."""
    name = normalise(provider, model)
    if name.startswith("claude-"):
        return not _CACHE_FREE_CLAUDE.match(name)
    return name.startswith("amazon.nova")
