"""A shell command as bash will read it: its simple commands, their words, its redirections.

Permission rules (`Bash(npm test:*)`) are matched against what bash will run, so the command is
parsed with a real bash grammar — tree-sitter-bash — not split on `;` and quotes: `$'…'`, `$"…"`,
comments, heredocs, here-strings, line continuations, subshells, functions and control structures all
read as bash reads them. Words are taken after quote removal (`c'u'rl` and `\\curl` are `curl`); a
word whose value is only known when it runs (`$x`, `$(…)`, a glob in a command name, `{a,b}`) has the
value None. When anything is uncertain — a syntax error, a construct this module does not know,
control characters, the parser not installed — `doubt` says why, and callers treat the command as
one they cannot judge (no allow rule matches it).

    syntax = parse_shell("npm test > /tmp/x; touch X")
    [c.words for c in syntax.commands]   # [("npm", "test"), ("touch", "X")]
    syntax.redirections                  # (Redirection(">", "/tmp/x", writes=True),)

Why tree-sitter-bash rather than bashlex (measured on the cases of issue 37): bashlex raises
NotImplementedError on `case`, `[[ … ]]`, `$((…))` and `coproc`, and gives `$'\\''` and `$"a"` the
wrong values (`$'` and `$a`); tree-sitter-bash parses all of them, names every quoting form, is
maintained, and parses in ~8 µs where bashlex takes ~380 µs (and 85 ms to import).

No import of the rest of the app: the rule grammar may move to `app.model` as it is.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any

# Nodes whose children are walked for the commands inside (anything else named is a doubt).
_CONTAINERS = frozenset(
    {
        "program",
        "list",
        "pipeline",
        "subshell",
        "compound_statement",
        "if_statement",
        "elif_clause",
        "else_clause",
        "while_statement",
        "for_statement",
        "c_style_for_statement",
        "case_statement",
        "case_item",
        "do_group",
        "negated_command",
        "function_definition",
        "redirected_statement",
        "heredoc_redirect",
        "heredoc_body",
        "herestring_redirect",
        "command_substitution",
        "process_substitution",
        "arithmetic_expansion",
        "expansion",
        "string",
        "translated_string",
        "concatenation",
        "binary_expression",
        "unary_expression",
        "ternary_expression",
        "parenthesized_expression",
        "postfix_expression",
        "subscript",
        "array",
        "variable_assignments",
    }
)
# Leaves (or nodes without commands of their own) that need no walking.
_LEAVES = frozenset(
    {
        "comment",
        "word",
        "number",
        "raw_string",
        "ansi_c_string",
        "string_content",
        "simple_expansion",
        "variable_name",
        "special_variable_name",
        "heredoc_start",
        "heredoc_end",
        "heredoc_content",
        "file_descriptor",
        "test_operator",
        "regex",
        "extglob_pattern",
        "brace_expression",
        "command_name",
        "expansion_flags",
    }
)
_SUBSTITUTIONS = frozenset({"command_substitution", "process_substitution"})
_WRITE_OPERATORS = frozenset({">", ">>", ">|", "&>", "&>>", "<>", ">&"})
_READ_OPERATORS = frozenset({"<", "<>", "<&"})
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_ANSI_ESCAPES = {
    "a": "\a",
    "b": "\b",
    "e": "\x1b",
    "E": "\x1b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
    "\\": "\\",
    "'": "'",
    '"': '"',
    "?": "?",
}
_ANSI_RE = re.compile(r"\\(x[0-9A-Fa-f]{1,2}|u[0-9A-Fa-f]{1,4}|U[0-9A-Fa-f]{1,8}|[0-7]{1,3}|c.|.)", re.S)


@dataclass(frozen=True)
class SimpleCommand:
    """One command bash runs. `words[0]` is its name; a word is None when only running tells its value."""

    source: str  # as written (without its redirections)
    words: tuple[str | None, ...]
    assignments: tuple[str | None, ...] = ()  # NAME=value before the name (values None when not static)

    @property
    def static(self) -> bool:
        return all(word is not None for word in self.words) and all(a is not None for a in self.assignments)

    @property
    def text(self) -> str | None:
        """The words joined by single spaces (None when a word is not static)."""
        return " ".join(w for w in self.words if w is not None) if self.static else None


@dataclass(frozen=True)
class Redirection:
    """`> path`, `>> path`, `< path`, `&> path`…: a file bash opens. `target` None: only known when it runs."""

    operator: str
    target: str | None
    writes: bool


@dataclass(frozen=True)
class ShellSyntax:
    commands: tuple[SimpleCommand, ...] = ()
    redirections: tuple[Redirection, ...] = ()
    substitution: bool = False  # `$(…)`, backticks, `<(…)`, `>(…)` anywhere (heredoc bodies included)
    doubt: str = ""  # why bulkhead cannot be sure what runs; "" when the parse is clean


@functools.cache
def _parser() -> Any:
    """tree-sitter's bash parser, or None when the packages are missing (every command is then a doubt)."""
    try:
        import tree_sitter_bash
        from tree_sitter import Language, Parser
    except ImportError:
        return None
    return Parser(Language(tree_sitter_bash.language()))


def parser_available() -> bool:
    return _parser() is not None


MISSING_PARSER = "the bash parser is not installed (python3 -m pip install tree-sitter tree-sitter-bash)"


def parse_shell(command: str) -> ShellSyntax:
    """What bash will run for `command` (see the module's doc)."""
    parser = _parser()
    if parser is None:
        return ShellSyntax(doubt=MISSING_PARSER)
    if _CONTROL.search(command):
        return ShellSyntax(doubt="the command holds control characters")
    source = command.encode("utf-8")
    tree = parser.parse(source)
    root = tree.root_node
    walker = _Walker(source)
    walker.walk(root)
    doubt = walker.doubt
    if root.has_error:
        doubt = "bash would not parse it the same way (a syntax error)"
    return ShellSyntax(
        commands=tuple(walker.commands),
        redirections=tuple(walker.redirections),
        substitution=walker.substitution,
        doubt=doubt,
    )


class _Walker:
    def __init__(self, source: bytes) -> None:
        self.source = source
        self.commands: list[SimpleCommand] = []
        self.redirections: list[Redirection] = []
        self.substitution = False
        self.doubt = ""

    def text(self, node: Any) -> str:
        return str(self.source[node.start_byte : node.end_byte].decode("utf-8", "replace"))

    def unsure(self, why: str) -> None:
        self.doubt = self.doubt or why

    def walk(self, node: Any) -> None:
        kind = node.type
        if node.is_missing:
            self.unsure("bash would not parse it the same way (something is missing)")
            return
        if not node.is_named:
            return
        if kind in _SUBSTITUTIONS:
            self.substitution = True
        if kind == "command":
            self.command(node)
        elif kind in ("declaration_command", "unset_command"):
            self.declaration(node)
        elif kind == "variable_assignment":  # a bare assignment: `PATH=/tmp/x` (its value may run things)
            value = self.assignment(node)
            self.commands.append(SimpleCommand(self.text(node), (value,)))
        elif kind == "test_command":  # `[[ … ]]`: no program runs, but what is inside may substitute
            self.commands.append(SimpleCommand(self.text(node), (self.text(node),)))
            self.children(node)
        elif kind == "file_redirect":
            self.redirect(node)
        elif kind in _CONTAINERS:
            self.children(node)
        elif kind in _LEAVES:
            if kind == "command_name":
                self.children(node)
        elif kind == "ERROR":
            self.unsure("bash would not parse it the same way (a syntax error)")
        else:
            self.unsure(f"bulkhead does not know the shell construct {kind!r}")
            self.children(node)

    def children(self, node: Any) -> None:
        for child in node.children:
            self.walk(child)

    def command(self, node: Any) -> None:
        words: list[str | None] = []
        assignments: list[str | None] = []
        start = end = None
        children = node.children
        for index, child in enumerate(children):
            field_name = node.field_name_for_child(index)
            if child.type == "variable_assignment":
                assignments.append(self.assignment(child))
            elif child.type in ("file_redirect", "herestring_redirect"):
                self.walk(child)
                continue
            elif (
                child.type == "$"
                and index + 1 < len(children)
                and children[index + 1].start_byte == child.end_byte
            ):
                continue  # `$"…"`: a translated string, the string that follows is the word
            elif field_name in ("name", "argument") or child.type == "command_name":
                if child.type == "command_name":
                    target = child.children[0] if child.children else child
                    words.append(self.value(target, name=True))
                else:
                    words.append(self.value(child) if child.is_named else self.text(child))
                self.walk(child)
            elif child.is_named:
                self.walk(child)
                continue
            else:
                continue
            start = child.start_byte if start is None else start
            end = child.end_byte
        source = self.source[start:end].decode("utf-8", "replace") if start is not None else ""
        self.commands.append(SimpleCommand(source, tuple(words), tuple(assignments)))

    def declaration(self, node: Any) -> None:
        words: list[str | None] = []
        for child in node.children:
            if not child.is_named:
                words.append(self.text(child))  # export, local, declare, readonly, typeset, unset
            elif child.type == "variable_assignment":
                words.append(self.assignment(child))
            elif child.type == "file_redirect":
                self.walk(child)
            else:
                words.append(self.value(child))
                self.walk(child)
        self.commands.append(SimpleCommand(self.text(node), tuple(words)))

    def assignment(self, node: Any) -> str | None:
        """`NAME=value` with the value after quote removal; None when the value is not static."""
        name = node.child_by_field_name("name")
        value = node.child_by_field_name("value")
        for child in node.children:
            self.walk(child)
        if name is None:
            return None
        if value is None:
            return self.text(name) + "="
        shown = self.value(value)
        return None if shown is None else f"{self.text(name)}={shown}"

    def redirect(self, node: Any) -> None:
        operator = ""
        destination = None
        for index, child in enumerate(node.children):
            if not child.is_named and child.type != "file_descriptor":
                operator = child.type
            elif node.field_name_for_child(index) == "destination":
                destination = child
            self.walk(child)
        if destination is None:  # `>&-`: closes a descriptor
            return
        target = self.value(destination)
        if operator in (">&", "<&") and (target is None or target.isdigit() or target == "-"):
            if target is None:  # `>&$fd`: a descriptor or a file, decided when it runs
                self.redirections.append(Redirection(operator, None, writes=operator == ">&"))
            return
        if operator in _WRITE_OPERATORS or operator in _READ_OPERATORS:
            self.redirections.append(Redirection(operator, target, writes=operator in _WRITE_OPERATORS))
        else:
            self.unsure(f"bulkhead does not know the redirection {operator!r}")

    def value(self, node: Any, *, name: bool = False) -> str | None:
        """A word after quote removal, or None when only running tells (expansions, substitutions). In a
        command's name (`name=True`) an unquoted glob, brace or leading tilde is not static either: the
        program run depends on the file system (`/usr/bin/cur?`, `c{u,}rl`); in an argument it is kept as
        written (`build/*`), which is what a rule's pattern is written against."""
        kind = node.type
        if kind == "word":
            text = self.text(node)
            return None if name and _unquoted_special(text) else _unescape(text)
        if kind in ("number", "variable_name"):
            return self.text(node)
        if kind == "raw_string":
            return self.text(node)[1:-1]
        if kind == "ansi_c_string":
            return _ansi_c(self.text(node)[2:-1])
        if kind in ("string", "translated_string"):
            parts = []
            for child in node.children:
                if not child.is_named:
                    continue
                if child.type != "string_content":
                    return None
                parts.append(_unescape_quoted(self.text(child)))
            return "".join(parts)
        if kind == "concatenation":
            values = [self.value(child) for child in node.children if child.is_named]
            if any(v is None for v in values) or (name and _brace_in(node, self)):
                return None
            return "".join(v for v in values if v is not None)
        return None


def _unescape(text: str) -> str:
    """Backslash removal as in an unquoted word: `\\x` → `x`, a backslash-newline disappears."""
    return re.sub(r"\\(.)", lambda m: "" if m.group(1) == "\n" else m.group(1), text, flags=re.S)


def _unescape_quoted(text: str) -> str:
    """Backslash removal inside double quotes: only before $ ` " \\ and newline."""
    return re.sub(r'\\([$`"\\\n])', lambda m: "" if m.group(1) == "\n" else m.group(1), text)


def _unquoted_special(text: str) -> bool:
    """An unescaped glob character, brace or leading tilde: the word's value depends on the file system or
    the environment."""
    if text.startswith("~"):
        return True
    escaped = False
    for char in text:
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char in "*?[{}":
            return True
    return False


def _brace_in(node: Any, walker: _Walker) -> bool:
    """A concatenation bash may brace-expand (`c{u,}rl`): an unquoted `{` among its words."""
    return any(child.type == "word" and _unquoted_special(walker.text(child)) for child in node.children)


def _ansi_c(body: str) -> str | None:
    def one(match: re.Match[str]) -> str:
        escape = match.group(1)
        if escape[0] in "xuU":
            return chr(int(escape[1:], 16))
        if escape[0] in "01234567":
            return chr(int(escape, 8) & 0xFF)
        if escape[0] == "c":
            return chr(ord(escape[1].upper()) & 0x1F)
        return _ANSI_ESCAPES.get(escape, "\\" + escape)

    try:
        value = _ANSI_RE.sub(one, body)
    except (ValueError, OverflowError):
        return None
    return None if "\x00" in value else value
