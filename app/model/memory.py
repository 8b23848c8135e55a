"""The memory worker's words: its prompt, how its answer is read, how a fact is compared with another.

The worker (app.engine.memory) sends a segment of the conversation with `MEMORY_SYSTEM` and reads back one fact
per line. The lab model recognises the prompt by `MEMORY_SYSTEM_MARKER` and answers deterministically: every line
of the segment that starts with "remember:" (`remember_lines`), so the flow can be seen and tested offline.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Literal

MemoryMode = Literal["off", "suggest", "auto"]
FactState = Literal["pending", "accepted", "rejected", "kept"]

MEMORY_SYSTEM_MARKER = "You are bulkhead's memory worker."
MEMORY_SYSTEM = (
    f"{MEMORY_SYSTEM_MARKER} You read a segment of a coding session between a user and an assistant and "
    "write down the durable facts worth remembering in later sessions of the same project: decisions taken, "
    "conventions, commands that work (build, test, lint, run), paths and where things live, gotchas and their "
    "fixes, preferences the user stated. Leave out what only mattered for the moment, guesses, secrets "
    "(keys, tokens, passwords) and anything already obvious from the code. Answer with one fact per line, "
    'each starting with "- ", each a short self-contained sentence. Answer NONE when there is nothing durable.'
)
MEMORY_REQUEST_HEADER = "Segment of the conversation to read (older messages first):"
NO_FACTS = "NONE"
REMEMBER_PREFIX = "remember:"
FACT_MAX_CHARS = 400  # a longer line is not a fact but a paragraph: cut

_BULLET_RE = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+")
_SPACE_RE = re.compile(r"\s+")


def memory_request_text(segment: str, part: int = 1, parts: int = 1) -> str:
    """The user message of a memory request: the segment (or one part of it)."""
    which = f" (part {part} of {parts})" if parts > 1 else ""
    return f"{MEMORY_REQUEST_HEADER[:-1]}{which}:\n\n{segment}\n\nWrite the durable facts, one per line."


def parse_facts(answer: str) -> list[str]:
    """The facts in the worker's answer: its bullet lines (or its plain lines), NONE → none, each cut to
    FACT_MAX_CHARS, duplicates left out."""
    text = answer.strip()
    if not text or text.upper().rstrip(".") == NO_FACTS:
        return []
    lines = [line for line in text.splitlines() if line.strip()]
    bulleted = [line for line in lines if _BULLET_RE.match(line)]
    chosen = bulleted or lines
    facts: list[str] = []
    seen: set[str] = set()
    for line in chosen:
        fact = _SPACE_RE.sub(" ", _BULLET_RE.sub("", line, count=1)).strip()
        if not fact or fact.upper().rstrip(".") == NO_FACTS:
            continue
        if len(fact) > FACT_MAX_CHARS:
            fact = fact[: FACT_MAX_CHARS - 1].rstrip() + "…"
        key = fact_key(fact)
        if key not in seen:
            seen.add(key)
            facts.append(fact)
    return facts


def fact_key(fact: str) -> str:
    """What two facts share when they say the same thing (case, spaces and end punctuation aside)."""
    return _SPACE_RE.sub(" ", fact).strip().rstrip(".!").casefold()


def remember_lines(texts: Iterable[str]) -> list[str]:
    """The lab model's memory: the text after "remember:" on every line that starts with it, in order."""
    found: list[str] = []
    for text in texts:
        for line in text.splitlines():
            stripped = line.strip()
            if stripped.lower().startswith(REMEMBER_PREFIX):
                fact = stripped[len(REMEMBER_PREFIX) :].strip()
                if fact and fact not in found:
                    found.append(fact)
    return found
