"""Words of the engine the TUI shows outside a session's calls: the request floor and the tool parts in
words (the Payload panel, `/context`) and `/init`'s prompt."""

from app.engine.payload import FLOOR_LABELS, MCP_PART, describe_floor, describe_tools
from app.engine.project_init import init_prompt

__all__ = ["FLOOR_LABELS", "MCP_PART", "describe_floor", "describe_tools", "init_prompt"]
