"""The lab model: deterministic, offline, and honest about what it received.

It answers from the conversation it is sent — never from randomness or the clock:

- By default it reports what arrived: ``Lab model · turn 3 · received 12.4 KB (≈3,100 tokens) in
  7 messages. You said: “…”``.
- Its own words pass a stock OWASP CRS at paranoia levels 1 and 2 (tests/lab/test_lab_answers_crs.py): no
  backticks, no `<<`, no "X is not Y" (rule 942130 reads it as an SQL tautology at PL2).
- It answers the user's latest request, as a real model would: the last user text that is not
  something bulkhead injected (the payload notice, a compaction notice, a summary, recalled archive
  text). Lines of that request that start with ``!`` are commands (the grammar below, also in
  ``GRAMMAR`` for the UI) — never ``!`` lines inside a notice, recalled text or a tool result. Several
  tool lines give several tool calls in one response. A tool is only called when the request
  declares a tool of that name; otherwise the answer says it is not offered.
- When the latest user message carries tool results, it answers from them: each tool's name, size,
  first line and error flag.
- A memory request (system prompt starting with ``MEMORY_SYSTEM_MARKER``, the memory worker's) gets every line
  of the segment that starts with ``remember:``, one ``- fact`` a line (``NONE`` when there is none).
- A summarization request (system prompt starting with ``SUMMARY_SYSTEM_MARKER``) gets an extractive
  summary: the latest instructions first, then one line per message of the segment (role, first
  sentence, tool calls named) and every ``[[ccr:KEY]]`` marker found, verbatim; at least 120 chars and
  at most ``max(6,000, 10 % of the input)`` chars.
- Output is limited by ``max_tokens`` (tokens = chars / 4; a request without one gets 4,096): an answer
  longer than that stops with ``max_tokens``. After ``!cut`` (or a cut ``!big``), a user message that is
  bulkhead's CONTINUATION text finishes the answer with ``end_turn``.

Grammar::

    !read PATH [START-END]   read_file {path, offset: START, limit: END-START+1} (1-based lines)
    !ls [PATH]               list_dir {path}            (default ".")
    !grep PATTERN [PATH]     grep {pattern, path}       (default "."; quote patterns with spaces)
    !shell CMD…              shell {command: "CMD…"}
    !fetch URL               web_fetch {url: URL}
    !write PATH TEXT…        write_file {path, content: "TEXT…"}   (a literal \\n becomes a newline)
    !edit PATH OLD NEW       edit_file {path, old_string: OLD, new_string: NEW}   (shell-style quoting; \\n too)
    !recall KEY…             recall {keys: [KEY, …]}    (bare keys or <<ccr:KEY>> markers)
    !call TOOL {JSON}        any tool the request offers, e.g. !call mcp__demo__echo {"text": "hi"}
    !big SIZE                answer with SIZE of text, e.g. !big 40KB (KB = 1024 bytes)
    !cut                     answer past max_tokens, so the answer stops at max_tokens
    !echo TEXT…              answer TEXT as it is, \\n \\t \\e \\xHH \\uHHHH \\\\ decoded
    !help                    this grammar
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass

from app.lab.conversation import (
    END_TURN,
    MAX_TOKENS,
    TEXT,
    TOOL_USE,
    TOOL_USE_STOP,
    Block,
    Conversation,
    Reply,
    Turn,
    compact_json,
)
from app.model.memory import MEMORY_SYSTEM_MARKER, NO_FACTS, remember_lines
from app.model.prompts import (
    COMPACTED_NOTICE,
    CONTINUATION,
    CONTINUES_NOTICE,
    DROPPED_NOTICE,
    INIT_MARKER,
    LEGACY_PAYLOAD_NOTICE_PREFIX,
    PAYLOAD_NOTICE_PREFIX,
    SUMMARY_HEADER,
    SUMMARY_SYSTEM_MARKER,
)
from app.sizes import SizeError, format_size, parse_size

GRAMMAR = """\
The lab model understands lines of your message that start with "!":
  !read PATH [START-END]   call read_file {path, offset: START, limit: END-START+1}
  !ls [PATH]               call list_dir {path}
  !grep PATTERN [PATH]     call grep {pattern, path}
  !shell CMD…              call shell {command}
  !fetch URL               call web_fetch {url}
  !write PATH TEXT…        call write_file {path, content}  (\\n in TEXT is a newline)
  !edit PATH OLD NEW       call edit_file {path, old_string, new_string}  (quote words with spaces)
  !recall KEY…             call recall {keys}  (bare keys or <<ccr:KEY>> markers)
  !call TOOL {JSON}        call any offered tool, e.g. !call mcp__demo__echo {"text": "hi"}
  !big SIZE                answer with that much text, e.g. !big 40KB
  !cut                     answer past max_tokens (stops at max_tokens; continue to finish)
  !echo TEXT…              answer TEXT as it is (\\n \\t \\e \\xHH \\uHHHH decoded)
  !help                    show this list
Several tool lines → several tool calls in one answer. Anything else: a report of what it received."""

DEFAULT_MAX_OUTPUT_TOKENS = 4096
MAX_BIG_BYTES = 64 * 1024 * 1024
SUMMARY_MIN_CHARS = 120
SUMMARY_MAX_CHARS = 6000
SUMMARY_INPUT_SHARE = 0.10
ECHO_CHARS = 80

TOOL_COMMANDS = {
    "read": "read_file",
    "ls": "list_dir",
    "grep": "grep",
    "shell": "shell",
    "fetch": "web_fetch",
    "write": "write_file",
    "edit": "edit_file",
    "recall": "recall",
    "call": "",
}  # !call names its tool
_MARKER_RE = re.compile(r"<<ccr:[0-9a-f]{16}>>|\[\[ccr:[0-9a-f]{16}\]\]")
_KEY_RE = re.compile(r"^(?:<<ccr:|\[\[ccr:)?([0-9a-fA-F]{16})(?:>>|\]\])?$")
_RANGE_RE = re.compile(r"^(\d+)\s*[-:]\s*(\d+)$")
_ROLE_HEADER_RE = (
    re.compile(  # "[User · turn 3]", "[Tool result: shell · turn 2]", "## assistant:", "**user**"
        r"^[ \t]*(?:\[(user|assistant|tool|system)\b[^\]\n]*\]"
        r"|(?:#{1,6}[ \t]*|\*\*)?(user|assistant|tool|system)\b[^\n:]{0,40}?(?::|\*\*))",
        re.I | re.M,
    )
)
_INSTRUCTIONS_RE = re.compile(
    r"<instructions>(.*?)</instructions>"  # tagged
    r"|^[^\n]*\binstructions\b[^\n]*:[ \t]*\n(.+?)(?=\n[ \t]*\n|\Z)"  # "… with instructions — follow them:\n…"
    r"|^[ \t]*(?:additional |custom |user )?(?:instructions|focus)[ \t]*:[ \t]*(\S[^\n]*)$",  # "Instructions: …"
    re.I | re.M | re.S,
)
_CALL_ARROW_RE = re.compile(r"→ ([A-Za-z_][\w.-]*)")
_KNOWN_TOOLS_RE = re.compile(
    r"\b(read_file|list_dir|glob|grep|web_fetch|shell|write_file|edit_file|recall)\b"
)
_CLOSING_RE = re.compile(r"\n\s*\n\s*write the summary[^\n]*\s*\Z", re.I)


@dataclass(frozen=True)
class Command:
    verb: str
    args: str
    line: str


# --- helpers ---------------------------------------------------------------------------------------


def _one_line(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _first_sentence(text: str, limit: int = 160) -> str:
    flat = " ".join(text.split())
    match = re.search(r"(?<=[.!?])\s", flat)
    return _one_line(flat[: match.start()] if match else flat, limit)


def _first_line(text: str, limit: int = 80) -> str:
    for line in text.splitlines():
        if line.strip():
            return _one_line(line, limit)
    return ""


def _user_turn_number(conv: Conversation) -> int:
    return max(1, sum(1 for t in conv.turns if t.role == "user" and t.text.strip() and not t.tool_results))


def _is_continuation(text: str) -> bool:
    return " ".join(text.split()) == " ".join(CONTINUATION.split())


# Texts bulkhead puts in user messages that are not the user's request (the model reads them as context).
INJECTED_PREFIXES = (
    PAYLOAD_NOTICE_PREFIX,
    LEGACY_PAYLOAD_NOTICE_PREFIX,
    COMPACTED_NOTICE[:40],
    DROPPED_NOTICE.split("(", 1)[0],
    SUMMARY_HEADER,
    "[recalled by the user]",
    CONTINUES_NOTICE,
)
HOOK_CONTEXT_MARK = "\n\n[hook context]\n"


def is_injected(text: str) -> bool:
    """True for a notice, summary or recalled segment bulkhead added to the conversation."""
    return text.lstrip().startswith(INJECTED_PREFIXES)


def latest_request(conv: Conversation) -> tuple[Turn | None, str]:
    """The user's latest request: (its turn, its text without hook context), walking back over user
    turns that hold only injected texts. A turn with tool results is itself the latest request."""
    for turn in reversed(conv.turns):
        if turn.role != "user":
            break
        if turn.tool_results:
            return turn, ""
        for block in reversed([b for b in turn.blocks if b.kind == TEXT]):
            if block.text.strip() and not is_injected(block.text):
                return turn, block.text.split(HOOK_CONTEXT_MARK, 1)[0]
    return None, ""


def parse_commands(text: str) -> list[Command]:
    commands = []
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped.startswith("!") or len(stripped) < 2:
            continue
        verb, _, args = stripped[1:].partition(" ")
        verb = verb.lower()
        if verb in TOOL_COMMANDS or verb in ("big", "cut", "echo", "help"):
            commands.append(Command(verb, args.strip(), stripped))
    return commands


def _split_args(args: str) -> list[str]:
    try:
        return shlex.split(args)
    except ValueError:
        return args.split()


def _generic_call(args: str) -> tuple[str, dict] | str:
    """`!call TOOL {JSON}`: any tool by name, with a JSON object as its input (none: `{}`)."""
    name, _, raw = args.strip().partition(" ")
    if not name:
        return 'usage: !call TOOL {JSON}, e.g. !call mcp__demo__echo {"text": "hi"}'
    raw = raw.strip()
    if not raw:
        return name, {}
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        return f"!call {name}: the input does not parse as JSON ({exc.msg} at char {exc.pos}): {raw[:80]}"
    if not isinstance(value, dict):
        return f"!call {name}: the input must be a JSON object, got {type(value).__name__}"
    return name, value


def tool_call(command: Command) -> tuple[str, dict] | str:
    """The tool name and input for a tool command, or a usage message when the arguments are wrong."""
    if command.verb == "call":
        return _generic_call(command.args)
    name = TOOL_COMMANDS[command.verb]
    if command.verb == "read":
        parts = _split_args(command.args)
        if not parts:
            return "usage: !read PATH [START-END]"
        args: dict = {"path": parts[0]}
        if len(parts) > 1:
            match = _RANGE_RE.match("".join(parts[1:]))
            if not match or int(match.group(2)) < int(match.group(1)):
                return f"!read: {' '.join(parts[1:])} does not look like a line range START-END"
            start, end = int(match.group(1)), int(match.group(2))
            args.update(offset=start, limit=end - start + 1)
        return name, args
    if command.verb == "ls":
        parts = _split_args(command.args)
        return name, {"path": parts[0] if parts else "."}
    if command.verb == "grep":
        parts = _split_args(command.args)
        if not parts:
            return "usage: !grep PATTERN [PATH]"
        return name, {"pattern": parts[0], "path": parts[1] if len(parts) > 1 else "."}
    if command.verb == "shell":
        if not command.args:
            return "usage: !shell CMD…"
        return name, {"command": command.args}
    if command.verb == "fetch":
        if not command.args.strip():
            return "usage: !fetch URL"
        return name, {"url": command.args.strip()}
    if command.verb == "write":
        path, _, content = command.args.partition(" ")
        if not path:
            return "usage: !write PATH TEXT…"
        return name, {"path": path, "content": content.replace("\\n", "\n")}
    if command.verb == "edit":
        parts = _split_args(command.args)
        if len(parts) != 3:
            return "usage: !edit PATH OLD NEW (quote OLD and NEW when they hold spaces)"
        return name, {
            "path": parts[0],
            "old_string": parts[1].replace("\\n", "\n"),
            "new_string": parts[2].replace("\\n", "\n"),
        }
    keys = []
    for part in _split_args(command.args):
        match = _KEY_RE.match(part)
        if not match:
            return (
                f"!recall: {part} does not look like an archive key (16 hex digits, or a [[ccr:KEY]] marker)"
            )
        keys.append(match.group(1).lower())
    if not keys:
        return "usage: !recall KEY…"
    return name, {"keys": keys}


_ECHO_ESCAPE_RE = re.compile(r"\\(?:([nte\\])|x([0-9a-fA-F]{2})|u([0-9a-fA-F]{4}))")


def echo_text(args: str) -> str:
    """`!echo`'s text: `\\n`, `\\t`, `\\e` (ESC), `\\xHH`, `\\uHHHH` and `\\\\` decoded — so a lab answer can carry
    exactly the bytes a test (or a curious user) wants a terminal to receive."""

    def decode(match: re.Match[str]) -> str:
        simple, byte, code = match.groups()
        if simple:
            return {"n": "\n", "t": "\t", "e": "\x1b", "\\": "\\"}[simple]
        return chr(int(byte or code, 16))

    return _ECHO_ESCAPE_RE.sub(decode, args)


def filler(size: int) -> str:
    """`size` characters of deterministic ASCII text; filler(n) is always a prefix of filler(m > n)."""
    line_chars = 64
    lines, total, n = [], 0, 0
    while total < size:
        n += 1
        line = f"Lab filler line {n:06d}: the quick brown fox jumps over the dog."
        line = line.ljust(line_chars - 1, ".") + "\n"
        lines.append(line)
        total += len(line)
    return "".join(lines)[:size]


def _cut_text(max_tokens: int) -> str:
    target = max_tokens * 4 + 400
    parts: list[str] = []
    n = 0
    while sum(len(p) for p in parts) < target:
        n += 1
        parts.append(
            f"Lab model · !cut · paragraph {n}: this answer is deliberately longer than max_tokens "
            "allows, so it stops at the limit and bulkhead can continue it.\n"
        )
    return "".join(parts)


CUT_ENDING = "…and that completes the long answer. (Lab model: finished after the continuation — end_turn.)"


# --- answers ---------------------------------------------------------------------------------------


def _report(conv: Conversation, said: str) -> str:
    echo = _one_line(said, ECHO_CHARS)
    return (
        f"Lab model · turn {_user_turn_number(conv)} · received {format_size(conv.body_bytes)} "
        f"(≈{conv.input_tokens:,} tokens) in {conv.message_count} message{'s' if conv.message_count != 1 else ''}. "
        f"You said: “{echo}”."  # never a quote last: the CRS reads a text ending in one as injection (942110)
    )


def _tool_names_by_id(conv: Conversation) -> dict[str, str]:
    return {b.id: b.name for t in conv.turns for b in t.tool_uses}


def _tool_results_answer(conv: Conversation, turn: Turn) -> str:
    names = _tool_names_by_id(conv)
    results = turn.tool_results
    lines = [
        f"Lab model · turn {_user_turn_number(conv)} · received {len(results)} tool "
        f"result{'s' if len(results) != 1 else ''}:"
    ]
    for block in results:
        size = format_size(len(block.text.encode("utf-8")))
        flag = ", error" if block.is_error else ""
        first = _first_line(block.text) or "(empty)"
        lines.append(f"- {names.get(block.id, 'unknown tool')} ({size}{flag}): “{first}”.")
    return "\n".join(lines)


def _origin_turn(conv: Conversation) -> tuple[int, str] | None:
    """The user request a chain of continuations started from: its turn's index and its text."""
    for index in range(len(conv.turns) - 1, -1, -1):
        turn = conv.turns[index]
        if turn.role != "user":
            continue
        for block in reversed([b for b in turn.blocks if b.kind == TEXT]):
            if block.text.strip() and not _is_continuation(block.text) and not is_injected(block.text):
                return index, block.text.split(HOOK_CONTEXT_MARK, 1)[0]
    return None


def _continuation(conv: Conversation) -> list[Block]:
    origin = _origin_turn(conv)
    commands = parse_commands(origin[1]) if origin else []
    verbs = {c.verb for c in commands}
    if origin and "big" in verbs:
        big = next(c for c in commands if c.verb == "big")
        try:
            size = min(parse_size(big.args), MAX_BIG_BYTES)
        except SizeError:
            size = 0
        sent = sum(len(t.text) for t in conv.turns[origin[0] + 1 :] if t.role == "assistant")
        if size > sent:
            return [Block(TEXT, filler(size)[sent:])]
    if "cut" in verbs or "big" in verbs:
        return [Block(TEXT, CUT_ENDING)]
    return [Block(TEXT, "Lab model · my last answer was complete, so there is no more to add.")]


def _commands_answer(conv: Conversation, commands: Sequence[Command]) -> list[Block]:
    notes: list[str] = []
    texts: list[str] = []
    calls: list[Block] = []
    turn = _user_turn_number(conv)
    # ids are deterministic but differ between requests (turn numbers restart after a compaction)
    seed = f"{conv.message_count}\n{conv.last_user.text if conv.last_user else ''}".encode()
    call_prefix = f"lab{turn:03d}{hashlib.sha256(seed).hexdigest()[:10]}"
    for command in commands:
        if command.verb == "help":
            texts.append(GRAMMAR)
        elif command.verb == "big":
            try:
                size = parse_size(command.args)
            except SizeError as exc:
                notes.append(f"!big: {exc}")
                continue
            texts.append(filler(min(size, MAX_BIG_BYTES)))
        elif command.verb == "cut":
            texts.append(_cut_text(conv.max_tokens or DEFAULT_MAX_OUTPUT_TOKENS))
        elif command.verb == "echo":
            texts.append(echo_text(command.args))
        else:
            call = tool_call(command)
            if isinstance(call, str):
                notes.append(call)
            elif call[0] not in conv.tools:
                offered = ", ".join(conv.tools) or "none"
                notes.append(
                    f"This request does not offer the tool {call[0]} (tools offered: {offered}), "
                    f"so I cannot run this line: {command.line}"
                )
            else:
                calls.append(
                    Block(TOOL_USE, name=call[0], input=call[1], id=f"{call_prefix}{len(calls) + 1:02d}")
                )
    blocks: list[Block] = []
    if calls:
        names = ", ".join(b.name for b in calls)
        notes.insert(0, f"Lab model · turn {turn} · calling {names}.")
    text = "\n".join(notes) + ("\n" if notes and texts else "") + "".join(texts)
    if text:
        blocks.append(Block(TEXT, text))
    return blocks + calls


def _init_answer(conv: Conversation, said: str) -> list[Block]:
    """`/init`: one write_file call with a deterministic AGENTS.md (app.lab.init_answer)."""
    from app.lab.init_answer import answer

    result = answer(said)
    if isinstance(result, str):
        return [Block(TEXT, result)]
    name, args = result
    if name not in conv.tools:
        return [
            Block(
                TEXT,
                f"Lab model · /init: this request does not offer the tool {name}, so I cannot write {args['path']}.",
            )
        ]
    call_id = f"labinit{hashlib.sha256(said.encode()).hexdigest()[:12]}"
    return [
        Block(TEXT, f"Lab model · /init: writing {args['path']} from what bulkhead found."),
        Block(TOOL_USE, name=name, input=args, id=call_id),
    ]


# --- summaries -------------------------------------------------------------------------------------


def _segment_lines(conv: Conversation) -> list[str]:
    turns = list(conv.turns)
    names = _tool_names_by_id(conv)
    if len(turns) == 1:
        return _rendered_segment_lines(turns[0].text)
    lines = []
    for turn in turns:
        parts = []
        if turn.text.strip():
            parts.append(_first_sentence(turn.text))
        if turn.tool_uses:
            parts.append("[calls " + ", ".join(b.name for b in turn.tool_uses) + "]")
        if turn.tool_results:
            described = ", ".join(
                f"{names.get(b.id, 'tool')} ({format_size(len(b.text.encode()))}"
                f"{', error' if b.is_error else ''})"
                for b in turn.tool_results
            )
            parts.append(f"[results of {described}]")
        lines.append(f"{turn.role}: {' '.join(parts) or '(no text)'}")
    return lines


def _rendered_segment_lines(text: str) -> list[str]:
    """A segment rendered into one message: split it at role headers, else at paragraphs."""
    text = _CLOSING_RE.sub("", text)
    headers = list(_ROLE_HEADER_RE.finditer(text))
    arrows = bool(_CALL_ARROW_RE.search(text))  # bulkhead names calls `→ shell: ls`; else look for tool names
    if len(headers) >= 2:
        lines = []
        for index, match in enumerate(headers):
            end = headers[index + 1].start() if index + 1 < len(headers) else len(text)
            body = text[match.end() : end]
            found = _CALL_ARROW_RE.findall(body) if arrows else _KNOWN_TOOLS_RE.findall(body)
            tools = list(dict.fromkeys(found))
            tail = f" [tools: {', '.join(tools)}]" if tools else ""
            role = (match.group(1) or match.group(2)).lower()
            lines.append(f"{role}: {_first_sentence(body) or '(no text)'}{tail}")
        return lines
    return [f"- {_first_sentence(p)}" for p in re.split(r"\n\s*\n", text) if p.strip()]


def _instructions(conv: Conversation) -> str:
    last = conv.last_user
    if last is None:
        return ""
    found = [m.group(1) or m.group(2) or m.group(3) for m in _INSTRUCTIONS_RE.finditer(last.text)]
    return _one_line(found[-1], 400) if found else ""


def summarize(conv: Conversation) -> str:
    input_chars = sum(len(b.text) for t in conv.turns for b in t.blocks)
    limit = max(SUMMARY_MAX_CHARS, int(input_chars * SUMMARY_INPUT_SHARE))
    markers = list(dict.fromkeys(m for t in conv.turns for b in t.blocks for m in _MARKER_RE.findall(b.text)))
    instructions = _instructions(conv)
    lines = _segment_lines(conv)
    head = [
        f"Summary of the earlier conversation ({len(lines)} message{'s' if len(lines) != 1 else ''}, "
        "lab model, extractive)."
    ]
    if instructions:
        head.insert(0, f"Instructions: {instructions}")
    tail = [f"Archived content: {' '.join(markers)}"] if markers else []
    budget = limit - sum(len(x) + 1 for x in head + tail)
    body: list[str] = []
    for index, line in enumerate(lines):
        if len(line) + 1 + 40 > budget:
            body.append(f"(… {len(lines) - index} more messages)")
            break
        body.append(line)
        budget -= len(line) + 1
    text = "\n".join(head + body + tail)
    if len(text) < SUMMARY_MIN_CHARS:
        text += (
            f"\nThe segment held {len(conv.turns)} messages ({input_chars:,} chars); "
            "the lab model keeps the first sentence of each and every archive marker."
        )
    return text


# --- entry point -----------------------------------------------------------------------------------


def memory_facts(conv: Conversation) -> str:
    """The memory worker's request: every line of the segment that starts with "remember:", as facts."""
    facts = remember_lines(b.text for t in conv.turns if t.role == "user" for b in t.blocks if b.kind == TEXT)
    return "\n".join(f"- {fact}" for fact in facts) if facts else NO_FACTS


def _intended(conv: Conversation) -> list[Block]:
    if conv.system.startswith(SUMMARY_SYSTEM_MARKER):
        return [Block(TEXT, summarize(conv))]
    if conv.system.startswith(MEMORY_SYSTEM_MARKER):
        return [Block(TEXT, memory_facts(conv))]
    last, said = latest_request(conv)
    if last is None:
        return [Block(TEXT, _report(conv, ""))]
    if last.tool_results:
        return [Block(TEXT, _tool_results_answer(conv, last))]
    if _is_continuation(said):
        return _continuation(conv)
    if said.lstrip().startswith(INIT_MARKER):
        return _init_answer(conv, said)
    commands = parse_commands(said)
    if commands:
        return _commands_answer(conv, commands)
    report = _report(conv, said)
    if _user_turn_number(conv) == 1:
        report += "\n(An offline, deterministic lab model. Send !help for the commands it understands.)"
    return [Block(TEXT, report)]


def limit_output(blocks: Sequence[Block], max_tokens: int | None) -> Reply:
    """Apply max_tokens (chars / 4): cut text at the limit, drop what does not fit, pick the stop reason."""
    budget = (max_tokens or DEFAULT_MAX_OUTPUT_TOKENS) * 4
    used, out, stop = 0, [], None
    for block in blocks:
        if block.kind == TEXT:
            if used + len(block.text) > budget:
                out.append(Block(TEXT, block.text[: budget - used]))
                used, stop = budget, MAX_TOKENS
                break
            used += len(block.text)
            out.append(block)
        else:
            cost = len(block.name) + len(compact_json(block.input or {}))
            if used + cost > budget:
                stop = MAX_TOKENS
                break
            used += cost
            out.append(block)
    out = [b for b in out if b.kind != TEXT or b.text]
    if stop is None:
        stop = TOOL_USE_STOP if any(b.kind == TOOL_USE for b in out) else END_TURN
    return Reply(tuple(out), stop, max(1, -(-used // 4)))


def respond(conv: Conversation) -> Reply:
    """The lab model's answer to `conv`, with max_tokens applied."""
    return limit_output(_intended(conv), conv.max_tokens)
