"""`Bash(…)` rules against a shell command, on what bash will run (`app.model.shell_syntax`).

Patterns, in Claude Code's syntax: `*` matches anything; `cmd *` matches `cmd` alone or `cmd ARGS`
(not `cmdx`); the older `cmd:*` matches anything starting with `cmd`; `\\*` is a literal star and
`\\\\` a literal backslash (what "always" saves: the exact command, `Bash(rm -f build/\\*)`). A pattern
without a wildcard is exact: it matches the command as written, or a simple command whose words
(after quote removal) are the pattern.

- **allow** matches only when bulkhead is sure: the command parses cleanly, has no command
  substitution (`$(…)`, backticks, `<(…)`), every word of every simple command is static, and every
  simple command — those in pipelines, lists, subshells, functions, loops, heredoc substitutions —
  matches. Any doubt is "no match" (the approval mode decides). `timeout N`, `nice`, `nohup`, `time`
  in front are ignored. Redirections are not part of the match: the path gate judges them.
- **deny** and **ask** match when any simple command does, after normalising what bash normalises:
  assignments, `env`/`command`/`builtin`/`exec`/`nohup`/`nice`/`timeout`/`time`/`stdbuf`/`sudo`/
  `doas`/`xargs` prefixes (with their options) dropped, a path to a program reduced to its name
  (`/usr/bin/curl` → `curl`), quoting removed (`c'u'rl`, `\\curl`, `$'cu'rl` → `curl`), and the
  strings of `bash -c`, `sh -c`, `eval` and `env -S` parsed in turn. When a command's name is only
  known when it runs (`$cmd`, `c{u,}rl`, `/usr/bin/cur?`) or the command does not parse, the answer
  is None — "cannot tell" — and the caller asks instead of running it.

What a deny rule cannot promise: a program that runs another one by itself (a script, `make`,
`npm run`, `find -exec`, `python -c`) is not looked into; deny rules guard against the model typing a
command, not against every way of reaching a program.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator

from app.model.shell_syntax import ShellSyntax, SimpleCommand, parse_shell

# Allow rules: these wrappers in front change nothing about what runs (Claude Code ignores them too).
_ALLOW_WRAPPERS_RE = re.compile(
    r"^(?:(?:timeout(?:\s+-\S+)*\s+\S+|nice(?:\s+-n\s*-?\d+|\s+-\d+)?|nohup|time(?:\s+-p)?)\s+)+"
)
# Deny/ask: prefixes that run the rest as a command, and their options that take a value.
_PREFIX_OPTIONS: dict[str, frozenset[str]] = {
    "env": frozenset({"-u", "--unset", "-C", "--chdir", "-P"}),
    "command": frozenset(),
    "builtin": frozenset(),
    "exec": frozenset({"-a"}),
    "nohup": frozenset(),
    "nice": frozenset({"-n", "--adjustment"}),
    "timeout": frozenset({"-s", "--signal", "-k", "--kill-after"}),
    "time": frozenset({"-o", "--output", "-f", "--format"}),
    "stdbuf": frozenset({"-i", "-o", "-e", "--input", "--output", "--error"}),
    "sudo": frozenset({"-u", "-g", "-C", "-h", "-p", "-r", "-t", "-U", "-D", "-R", "-T"}),
    "doas": frozenset({"-u", "-C"}),
    "xargs": frozenset({"-a", "-d", "-E", "-I", "-L", "-n", "-P", "-s", "--arg-file", "--delimiter"}),
    "coproc": frozenset(),
}
_TAKES_DURATION = frozenset({"timeout"})  # `timeout 10 cmd`: the duration comes before the command
_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "busybox"})
_MAX_DEPTH = 3


def _split_pattern(pattern: str) -> list[str]:
    """The literal chunks between unescaped `*` (with `\\*` → `*` and `\\\\` → `\\` inside them)."""
    chunks, current, i = [], [], 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\" and i + 1 < len(pattern) and pattern[i + 1] in "*\\":
            current.append(pattern[i + 1])
            i += 2
            continue
        if char == "*":
            chunks.append("".join(current))
            current = []
        else:
            current.append(char)
        i += 1
    chunks.append("".join(current))
    return chunks


def escape_literal(command: str) -> str:
    """A command as an exact pattern: `\\` and `*` escaped, nothing else changed."""
    return command.replace("\\", "\\\\").replace("*", "\\*")


def is_exact(pattern: str) -> bool:
    return len(_split_pattern(pattern)) == 1


@functools.lru_cache(maxsize=512)
def _command_regex(pattern: str) -> re.Pattern[str]:
    chunks = _split_pattern(pattern)
    if len(chunks) > 1 and chunks[-1] == "" and chunks[-2].endswith(":"):  # `cmd:*`: a prefix
        head = chunks[:-1]
        head[-1] = head[-1][:-1]
        return re.compile("^" + ".*".join(re.escape(c) for c in head) + ".*$", re.S)
    tail = ""
    if len(chunks) > 1 and chunks[-1] == "" and chunks[-2].endswith(" "):  # `cmd *`: cmd alone or with args
        chunks = chunks[:-1]
        chunks[-1] = chunks[-1][:-1]
        tail = r"(?:\s.*)?"
        body = ".*".join(re.escape(c) for c in chunks)
        return re.compile(rf"^{body}{tail}$", re.S)
    return re.compile("^" + ".*".join(re.escape(c) for c in chunks) + "$", re.S)


def _matches(pattern: str, text: str, *, strict: bool = False) -> bool:
    """`strict`: an exact pattern must equal the text byte for byte (allow); else whitespace runs count as
    one space on both sides."""
    if is_exact(pattern):
        literal = _split_pattern(pattern)[0]
        return literal == text if strict else " ".join(literal.split()) == " ".join(text.split())
    return bool(_command_regex(" ".join(pattern.split())).match(" ".join(text.split())))


# -- allow ---------------------------------------------------------------------------------------------
def _allow_texts(command: SimpleCommand) -> list[str]:
    words = command.text or ""
    texts = [words, _ALLOW_WRAPPERS_RE.sub("", words)]
    source = command.source.strip()
    texts += [source, _ALLOW_WRAPPERS_RE.sub("", source)]
    if command.assignments:  # `A=1 npm test` is not `npm test`: the assignment is part of what is allowed
        prefix = " ".join(a for a in command.assignments if a is not None)
        texts = [f"{prefix} {t}" for t in texts]
    return texts


def allow_matches(pattern: str, command: str) -> bool:
    """Does an allow rule's pattern let `command` run? Only when bulkhead is sure (see the module's doc)."""
    syntax = parse_shell(command)
    if syntax.doubt or syntax.substitution or not syntax.commands:
        return False
    if any(r.target is None for r in syntax.redirections):
        return False
    if is_exact(pattern) and _split_pattern(pattern)[0] == command.strip():
        return True  # the very command the user approved
    return all(
        command_.static and any(_matches(pattern, text, strict=True) for text in _allow_texts(command_))
        for command_ in syntax.commands
    )


# -- deny and ask ---------------------------------------------------------------------------------------
def _program(name: str) -> str:
    return name.rsplit("/", 1)[-1] if "/" in name.rstrip("/") else name


def _strip_prefixes(words: list[str | None]) -> Iterator[list[str | None]]:
    """`words`, then what remains after each prefix that runs the rest (`env X=1 command -p curl` →
    `command -p curl`, then `curl`)."""
    yield words
    for _ in range(8):
        if not words or words[0] is None:
            return
        name = _program(words[0])
        if name not in _PREFIX_OPTIONS:
            return
        options = _PREFIX_OPTIONS[name]
        i = 1
        while i < len(words):
            word = words[i]
            if word is None:
                return
            if word == "--":
                i += 1
                break
            if name in ("env", "sudo") and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", word):
                i += 1
                continue
            if not word.startswith("-") or word == "-":
                if name == "env" and word == "-":
                    i += 1
                    continue
                break
            i += 2 if (word in options and "=" not in word) else 1
        if name in _TAKES_DURATION and i < len(words):
            i += 1
        words = words[i:]
        if not words:
            return
        yield words


def _nested(words: list[str | None]) -> list[str | None] | None:
    """The command string `bash -c STR`, `eval ARGS` or `env -S STR` runs; None when it has none.
    A list holding None when the string is not static."""
    if not words or words[0] is None:
        return None
    name = _program(words[0])
    if name == "eval":
        rest = words[1:]
        return [None] if any(w is None for w in rest) else [" ".join(w for w in rest if w is not None)]
    if name in _SHELLS:
        for i, word in enumerate(words[1:], start=1):
            if word is None:
                return [None]
            if word.startswith("-") and not word.startswith("--") and "c" in word[1:]:
                return [words[i + 1]] if i + 1 < len(words) else None
            if not word.startswith("-"):
                return None
    if name == "env":
        for i, word in enumerate(words[1:], start=1):
            if word in ("-S", "--split-string") and i + 1 < len(words):
                return [words[i + 1]]
            if word is not None and word.startswith(("-S", "--split-string=")) and len(word) > 2:
                return [word.split("=", 1)[1] if word.startswith("--") else word[2:]]
    return None


def _deny_texts(syntax: ShellSyntax, depth: int = 0) -> tuple[list[str], str, list[str]]:
    """Every text a deny or ask pattern is tried on; why bulkhead cannot be sure ("" when it can); and the
    static start of each command with an argument only known when it runs (`rm -rf` of `rm -rf $X`)."""
    texts: list[str] = []
    partial: list[str] = []
    doubt = syntax.doubt
    for command in syntax.commands:
        texts.append(" ".join(command.source.split()))
        for words in _strip_prefixes(list(command.words)):
            if not words:
                continue
            if words[0] is None:
                doubt = doubt or "its program's name is only known when it runs"
                continue
            normal = [_program(words[0]), *words[1:]]
            if all(w is not None for w in normal):
                texts.append(" ".join(w for w in normal if w is not None))
            else:  # a dynamic argument: match on the static words before it
                static = []
                for word in normal:
                    if word is None:
                        break
                    static.append(word)
                texts.append(" ".join(static))
                partial.append(" ".join(static))
            nested = _nested(words)
            if nested is not None:
                inner = nested[0]
                if inner is None or depth >= _MAX_DEPTH:
                    doubt = doubt or "it runs a command string only known when it runs"
                    continue
                more, why, more_partial = _deny_texts(parse_shell(inner), depth + 1)
                texts += more
                partial += more_partial
                doubt = doubt or why
    return texts, doubt, partial


def deny_matches(pattern: str, command: str) -> bool | None:
    """Does a deny (or ask) rule's pattern apply to `command`? True, False, or None when bulkhead cannot
    tell (the command does not parse, or a program's name is only known when it runs)."""
    syntax = parse_shell(command)
    texts, doubt, partial = _deny_texts(syntax)
    texts.append(" ".join(command.split()))
    if any(_matches(pattern, text) for text in texts if text):
        return True
    head = " ".join(_split_pattern(pattern)[0].split())
    if any(head.startswith(start + " ") for start in partial if start):
        return None  # `rm -rf $X` against `rm -rf /`: the pattern may match once $X is known
    return None if doubt else False


def command_doubt(command: str) -> str:
    """Why bulkhead cannot tell what `command` runs ("" when it can): shown when a deny rule cannot judge it."""
    return _deny_texts(parse_shell(command))[1] or "an argument is only known when it runs"
