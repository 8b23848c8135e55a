"""recall: restore archived (CCR) content, byte for byte.

One key → the archived content alone, exactly as stored. Several keys → one section
per key (`archive.format_recall`: headed `=== ccr:KEY (N chars) ===`, never a real marker,
so the output can be archived again). A missing key says so in its section; the call is
an error only when every key is missing. The
output is `preserve_verbatim` and never budget-cut: the model asked for it in full.
"""

from __future__ import annotations

from typing import Any

from app.model.archive import format_recall, parse_recall_keys
from app.model.tools import ToolSpec
from app.tools.base import ToolContext, ToolInfo, ToolOutcome, error, schema

NOT_FOUND = "[not found in the archive]"


async def recall(args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
    raw = args["keys"]
    text = " ".join(str(item) for item in raw) if isinstance(raw, list) else str(raw)
    keys = parse_recall_keys(text)
    if not keys:
        return error(
            f"recall: no archive key in {text[:200]!r}; keys are 16 hex digits, as in "
            f"<<ccr:0123456789abcdef>>"
        )
    if ctx.recall is None:
        return error("recall: the archive is not available in this session")

    found: dict[str, str] = {}
    problems: dict[str, str] = {}
    for key in keys:
        try:
            content = ctx.recall(key)
        except Exception as exc:  # a broken archive is a tool error, not a crash
            problems[key] = f"[archive lookup failed: {type(exc).__name__}: {exc}]"
            continue
        if content is None:
            problems[key] = NOT_FOUND
        else:
            found[key] = content

    if not found:
        names = ", ".join(f"ccr:{key}" for key in keys)  # bare form: a marker here would point at nothing
        details = "; ".join(f"ccr:{k}: {v.strip('[]')}" for k, v in problems.items() if v != NOT_FOUND)
        return error(f"recall: not found in the archive: {names}" + (f" ({details})" if details else ""))
    return ToolOutcome(content=format_recall({key: found.get(key) for key in keys}), preserve_verbatim=True)


# -- what the model is told ---------------------------------------------------------------------------
TOOLS: tuple[ToolInfo, ...] = (
    ToolInfo(
        ToolSpec(
            "recall",
            "Restore archived content by its key, exactly as it was. Keys appear in markers like "
            "[[ccr:0123456789abcdef]]; pass one key or several.",
            schema(
                {
                    "keys": {
                        "anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}],
                        "description": "One key, several keys separated by spaces, or a list of keys.",
                    },
                },
                ["keys"],
            ),
        ),
        "recall",
        recall,
    ),
)
