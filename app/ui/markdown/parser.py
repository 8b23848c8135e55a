"""Markdown parsing for the answer view: markdown-it with `<<ccr:KEY>>` markers kept, split into top-level blocks.

    tokens, env = parse_markdown(text)          # a whole document (reference definitions land in env)
    split_blocks(text, main_parser().parse(text))   # [(source, tokens), …]; the sources put together are `text`
    code_language("python title=x")             # "python"; "text" when Pygments has no built-in lexer by that name
    cold_languages(tokens)                      # fenced languages whose lexer was never used in this process

Pure (no Textual): safe to run in a thread, tested in tests/ui/markdown/test_parser.py.
"""

from __future__ import annotations

import functools
import re
import threading
from typing import TYPE_CHECKING, Any

if (
    TYPE_CHECKING
):  # markdown-it is imported with the first parser: the first frame (an empty chat) parses nothing
    from markdown_it import MarkdownIt
    from markdown_it.token import Token

_MARKER = re.compile(r"<<ccr:[^<>\s]+>>")  # a key, or a placeholder such as <<ccr:KEY>>


def _ccr_marker(state: Any, silent: bool) -> bool:
    """`<<ccr:KEY>>` is an archive marker, shown and copied as it is — not `<` + an autolink + `>`."""
    if not state.src.startswith("<<ccr:", state.pos):
        return False
    match = _MARKER.match(state.src, state.pos)
    if match is None:
        return False
    if not silent:
        state.push("text", "", 0).content = match.group(0)
    state.pos = match.end()
    return True


def _markdown_parser() -> MarkdownIt:
    from markdown_it import MarkdownIt

    parser = MarkdownIt("gfm-like")
    parser.inline.ruler.after("text", "ccr_marker", _ccr_marker)
    return parser


@functools.cache
def main_parser() -> MarkdownIt:
    """The event loop's parser (`PARSER`), made at its first use; a thread parse has its own (`_thread_parser`)."""
    return _markdown_parser()


def __getattr__(name: str) -> Any:
    if name == "PARSER":  # `from app.ui.markdown.parser import PARSER`: the event loop's parser
        return main_parser()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_parsers = threading.local()


def _thread_parser() -> MarkdownIt:
    """This thread's parser, made once (a parser is not shared between threads; making one and compiling
    its rules cost more than parsing a short answer: 0.7 against 0.3 ms)."""
    if threading.current_thread() is threading.main_thread():
        return main_parser()
    parser = getattr(_parsers, "parser", None)
    if parser is None:
        parser = _parsers.parser = _markdown_parser()
    return parser


def parse_markdown(text: str) -> tuple[list[Token], dict[str, Any]]:
    """Tokens of a whole document and its env (reference definitions land there)."""
    env: dict[str, Any] = {}
    return _thread_parser().parse(text, env), env


def top_level_groups(tokens: list[Token]) -> list[tuple[int, list[Token]]]:
    """Split a token stream into its top-level blocks: (first source line, tokens) each."""
    groups: list[tuple[int, list[Token]]] = []
    depth = 0
    for token in tokens:
        if depth == 0:
            start = token.map[0] if token.map else (groups[-1][0] if groups else 0)
            groups.append((start, [token]))
        else:
            groups[-1][1].append(token)
        depth = max(0, depth + token.nesting)
    return groups


def line_starts(text: str) -> list[int]:
    """Offset of the first character of each line (markdown-it counts lines by "\n" only)."""
    starts = [0]
    index = text.find("\n")
    while index != -1:
        starts.append(index + 1)
        index = text.find("\n", index + 1)
    return starts


def split_blocks(text: str, tokens: list[Token]) -> list[tuple[str, list[Token]]]:
    """(source, tokens) of each top-level block; the sources put together are `text`."""
    groups = top_level_groups(tokens)
    starts = line_starts(text)

    def offset(line: int) -> int:
        return starts[line] if line < len(starts) else len(text)

    blocks = []
    for index, (start, group) in enumerate(groups):
        begin = 0 if index == 0 else offset(start)
        end = offset(groups[index + 1][0]) if index + 1 < len(groups) else len(text)
        blocks.append((text[begin:end], group))
    return blocks


REFERENCE_DEFINITION = re.compile(
    r"^ {0,3}\[[^\]\n]+\]:", re.M
)  # `[label]: url` (may sit in a quote or list: rare)


@functools.cache
def _builtin_lexer_names() -> frozenset[str]:
    from pygments.lexers import get_all_lexers

    return frozenset(
        alias for _name, aliases, _files, _mimes in get_all_lexers(plugins=False) for alias in aliases
    )


@functools.lru_cache(maxsize=512)
def code_language(info: str) -> str:
    """The lexer a fenced block is highlighted with: the first word of its info string if Pygments has a
    built-in lexer by that name, else "text". Never a plugin lookup nor a guess: an unknown name (as a
    fence's first line streams in: "py", "pyt"…) makes Pygments load every plugin's entry point, and a
    guess runs every lexer over the code — 300 ms on the event loop here."""
    name = info.split()[0].lower() if info.strip() else ""
    return name if name in _builtin_lexer_names() else "text"


# Languages whose Pygments lexer has been used in this process. A lexer's first use compiles its rules
# (45 ms for Python here): the answer view draws a block that needs a lexer not used yet in a thread.
LEXERS_READY: set[str] = {"text"}


def cold_languages(tokens: list[Token]) -> set[str]:
    """The languages of the fenced blocks among `tokens` whose lexer has not been used yet."""
    return {
        language
        for token in tokens
        if token.type == "fence" and (language := code_language(token.info)) not in LEXERS_READY
    }
