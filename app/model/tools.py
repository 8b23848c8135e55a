"""A tool as every provider is told about it: its name, what it does, and the JSON schema of its input.

The built-in tools (`app.tools`) and the MCP servers' (`app.mcp`) are described with it; the provider adapters
translate it into their wire formats (`app.providers`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ToolSpec:
    """A tool as every provider is told about it.

    `defer_loading`: Anthropic's tool search — the definition is sent but the model does not read
    it until a `tool_reference` loads it (app.mcp.deferral); other providers send it as usual.
    """

    name: str
    description: str
    input_schema: Mapping[str, Any]
    defer_loading: bool = False
