"""The built-in tools: one `ToolInfo(spec, kind, handler)` per tool, declared in its own module, and `run_tool`.

    outcome = await run_tool("read_file", {"path": "app/cli.py"}, ctx)   # never raises (see app.tools.base)
    TOOL_SPECS  → what every request declares, read tools first, then web_fetch, shell, edits, recall
    READ_TOOLS, EDIT_TOOLS → names by kind, for approvals (app.tools.approval)

Adding a tool: declare its `ToolInfo` in its module's `TOOLS` and list the module in `_MODULES`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from app.model.tools import ToolSpec
from app.tools import files, recall, search, shell, web_fetch
from app.tools.base import ToolContext, ToolError, ToolInfo, ToolOutcome, error
from app.tools.budget import apply_budget

_MODULES = (files, search, web_fetch, shell, recall)
_KIND_ORDER = (
    "read",
    "fetch",
    "shell",
    "edit",
    "recall",
)  # the order requests declare them in (stable within a kind)

TOOLS: Mapping[str, ToolInfo] = {
    info.name: info
    for info in sorted(
        (info for module in _MODULES for info in module.TOOLS), key=lambda info: _KIND_ORDER.index(info.kind)
    )
}
TOOL_SPECS: tuple[ToolSpec, ...] = tuple(info.spec for info in TOOLS.values())
NEVER_BUDGETED = frozenset({"recall"})  # the model asked for the full content
READ_TOOLS = frozenset(name for name, info in TOOLS.items() if info.kind in ("read", "recall"))
EDIT_TOOLS = frozenset(name for name, info in TOOLS.items() if info.kind == "edit")


# -- arguments ---------------------------------------------------------------------------------------
def _check_args(info: ToolInfo, args: Any) -> dict[str, Any]:
    """Arguments checked against the schema, leniently: numbers given as strings are accepted."""
    if args is None:
        args = {}
    if not isinstance(args, Mapping):
        raise ToolError(f"arguments must be a JSON object, got {type(args).__name__}")
    schema = info.spec.input_schema
    properties: Mapping[str, Any] = schema.get("properties", {})
    missing = [name for name in schema.get("required", ()) if args.get(name) is None]
    if missing:
        raise ToolError(f"missing required argument{'s' if len(missing) > 1 else ''}: {', '.join(missing)}")
    checked: dict[str, Any] = {}
    for key, value in args.items():
        prop = properties.get(key)
        if prop is None:
            known = ", ".join(properties) or "none"
            raise ToolError(f"unknown argument {key!r} (arguments: {known})")
        if value is None:
            continue
        checked[key] = _coerce(key, value, prop)
    return checked


def _coerce(key: str, value: Any, prop: Mapping[str, Any]) -> Any:
    kind = prop.get("type")
    if kind == "string" and not isinstance(value, str):
        raise ToolError(f"{key} must be a string, got {type(value).__name__}")
    if kind in ("integer", "number"):
        if isinstance(value, bool):
            raise ToolError(f"{key} must be a number, got a boolean")
        if isinstance(value, str):
            try:
                value = float(value.strip())
            except ValueError:
                raise ToolError(f"{key} must be a number, got {value!r}") from None
        if not isinstance(value, int | float) or value != value:
            raise ToolError(f"{key} must be a number, got {type(value).__name__}")
        if kind == "integer":
            if not float(value).is_integer():
                raise ToolError(f"{key} must be a whole number, got {value!r}")
            value = int(value)
        minimum = prop.get("minimum")
        if minimum is not None and value < minimum:
            raise ToolError(f"{key} must be at least {minimum}, got {value!r}")
        maximum = prop.get("maximum")
        if maximum is not None and value > maximum:
            raise ToolError(f"{key} must be at most {maximum:g}, got {value!r}")
    if kind == "boolean" and not isinstance(value, bool):
        lowered = str(value).strip().lower()
        if lowered not in ("true", "false", "1", "0"):
            raise ToolError(f"{key} must be true or false, got {value!r}")
        value = lowered in ("true", "1")
    if "anyOf" in prop and not isinstance(value, str | list):
        raise ToolError(f"{key} must be a string or a list of strings, got {type(value).__name__}")
    return value


# -- the one entry point -----------------------------------------------------------------------------
async def run_tool(name: str, args: Mapping[str, Any] | None, ctx: ToolContext) -> ToolOutcome:
    """Run tool `name` with the model's `args`; every failure is an error outcome, never an exception.

    Approvals are not checked here (see `app.tools.approval.needs_approval`): call this only
    for calls that may run. The result is already budget-cut (except recall's).
    """
    info = TOOLS.get(name)
    if info is None:
        return error(f"Unknown tool {name!r}. Available tools: {', '.join(TOOLS)}.")
    try:
        checked = _check_args(info, args)
    except ToolError as exc:
        return error(f"Invalid arguments for {name}: {exc}.")
    try:
        outcome = await info.handler(checked, ctx)
    except ToolError as exc:
        outcome = error(f"{name}: {exc}")
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # a bug in a tool must not end the turn
        outcome = error(f"{name} failed unexpectedly: {type(exc).__name__}: {exc}")
    if outcome.preserve_verbatim or name in NEVER_BUDGETED:
        return outcome
    return apply_budget(name, outcome, ctx)
