"""Texts bulkhead sends to models. The seed texts are verbatim (they are part of the contract), except where
a stock web application firewall refuses them: every text here passes Debian's Apache + ModSecurity + OWASP
CRS at paranoia levels 1 and 2 (tests/engine/test_modsecurity_crs.py sends each one through it). That
rules out backticks, `--`, `<<`, `/*`, `*/`, a `$` before a letter, "word (" after a PHP function name,
a slash followed later by a quote, and twelve or more of ~!@#$%^&*()-+={}[]|:;"'`<> in one text — where
every non-ASCII punctuation (an em dash, curly quotes, a middle dot) counts twice (rule 942430 matches
the bytes of ´’‘, so their leading bytes too). Hence plain ASCII punctuation throughout."""

from __future__ import annotations

SYSTEM_PROMPT = """\
You are a coding assistant working in the workspace of the user through bulkhead, a terminal client.
Use the tools to read, search, run and edit; prefer targeted reads (offset and limit) and grep over
reading whole large files. Keep answers concise and concrete. When a message contains a marker like
[[ccr:0123456789abcdef]], the full original content can be restored with the recall tool."""

# Injected once per session after a payload-limit recovery (seed: context-recovery, in English on purpose).
PAYLOAD_NOTICE = (
    "[SYSTEM NOTICE: PAYLOAD LIMIT HIT] A proxy or gateway rejected the previous request due to body size. "
    "History was compacted to recover. Going forward: 1. When reading files, prefer targeted reads with "
    "line ranges, e.g. sed -n 100,200p file, or read_file with offset and limit, instead of reading entire "
    "files. 2. Prefer grep or ripgrep with specific patterns over full file reads. 3. If you previously read "
    "a large file, its full content is persisted at the path shown in the tool result preview, so re-read "
    "specific ranges from that file rather than repeating the original read. 4. Summarize findings "
    "incrementally rather than accumulating raw tool output."
)
PAYLOAD_NOTICE_PREFIX = "[SYSTEM NOTICE: PAYLOAD LIMIT HIT]"
# The seed's wording, which sessions from before issue 36 still hold (recognised, never written again).
LEGACY_PAYLOAD_NOTICE_PREFIX = "[SYSTEM NOTICE — PAYLOAD LIMIT HIT]"
PAYLOAD_NOTICE_PREFIXES = (PAYLOAD_NOTICE_PREFIX, LEGACY_PAYLOAD_NOTICE_PREFIX)

# After an answer stops at max_tokens (seed: Max Output Token Escalation).
CONTINUATION = (
    "Your response was cut off at the token limit. Resume DIRECTLY from where you stopped, without repeating "
    "any content. Continue the implementation or explanation from the exact point of interruption."
)

# Level 3 notice (seed), followed by the marker of the dropped segment.
COMPACTED_NOTICE = (
    "[Context was automatically compacted due to size limits. Previous conversation history has been "
    "summarized. Continue from where you left off.]"
)

# Level 2 notice naming the dropped segment; {count} messages, {markers} the archive markers.
DROPPED_NOTICE = (
    "[Earlier conversation ({count} messages) was moved out of context to fit size limits. "
    "Full content recoverable via @recall {markers}]"
)

# The summarizer's system prompt. The lab model recognises summary requests by its first line.
SUMMARY_SYSTEM_MARKER = "You are bulkhead's conversation summarizer."
SUMMARY_SYSTEM = (
    SUMMARY_SYSTEM_MARKER
    + """
Summarize the conversation segment you are given so the assistant can continue the work without it.
Keep: the user's goals and constraints, decisions made, files and functions touched (with paths),
commands run and their outcomes, errors met and how they were resolved, open tasks and next steps.
Keep every [[ccr:KEY]] marker you see, verbatim, next to what it refers to.
Write plain prose and short lists. Do not refuse, do not ask questions, do not add commentary."""
)

SUMMARY_HEADER = "[Summary of earlier conversation]"

# Put after a prompt whose turn was interrupted (Esc, a crash) before any answer, so the next prompt
# is not sent merged with it — the model would otherwise carry out both.
INTERRUPTED_TURN = (
    "(No answer: the request above got no reply — it was interrupted or failed — and I did not act on it. "
    "I will only act on it if you ask again.)"
)

# The first words of the `/init` prompt (app.engine.project_init); the lab model recognises them.
INIT_MARKER = "[bulkhead /init]"
