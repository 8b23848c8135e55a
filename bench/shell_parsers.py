"""Which bash parser reads issue 37's commands as bash does: tree-sitter-bash (what bulkhead uses) vs bashlex.

    python3 bench/shell_parsers.py          # bashlex is measured only when installed (pip install bashlex)

For each command, the simple commands bash runs (their words after quote removal) are known; a parser
is right when it gives exactly those, or reports a syntax error where bash would fail. Then the time
per parse and to import. tree-sitter's words come from `app.model.shell_syntax`; bashlex's from its
WordNode values.
"""

from __future__ import annotations

import importlib
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

ERROR = "syntax error"
CASES: list[tuple[str, object]] = [
    ("npm test $'\\'' ; touch X #'", [["npm", "test", "'"], ["touch", "X"]]),
    ("npm test #'\ntouch X\n#'", [["npm", "test"], ["touch", "X"]]),
    ("npm test > /tmp/x", [["npm", "test"]]),
    ('npm test $"a" ; touch X', [["npm", "test", "a"], ["touch", "X"]]),
    ("cat <<EOF\na ; touch X\nEOF", [["cat"]]),
    ("cat <<EOF\n$(touch X)\nEOF", [["cat"], ["touch", "X"]]),
    ("env curl x", [["env", "curl", "x"]]),
    ("\\curl x", [["curl", "x"]]),
    ("c'u'rl x", [["curl", "x"]]),
    ("$'cu'rl x", [["curl", "x"]]),
    ("/usr/bin/curl x", [["/usr/bin/curl", "x"]]),
    ("echo $(curl x)", [["echo", None], ["curl", "x"]]),
    ("diff <(curl x) y", [["diff", None, "y"], ["curl", "x"]]),
    ("f() { touch X; }; f", [["touch", "X"], ["f"]]),
    ("case x in x) touch X;; esac", [["touch", "X"]]),
    ("[[ -f x ]] && touch X", [["[[ -f x ]]"], ["touch", "X"]]),
    ("echo $((1+2)); touch X", [["echo", None], ["touch", "X"]]),
    ("coproc touch X", [["coproc", "touch", "X"]]),
    ("npm test 'abc", ERROR),
    ("npm \\\ntest", [["npm", "test"]]),
]


def tree_sitter_commands(command: str) -> object:
    from app.model.shell_syntax import parse_shell

    syntax = parse_shell(command)
    if syntax.doubt:
        return ERROR
    return sorted([list(c.words) for c in syntax.commands], key=str)


def bashlex_commands(command: str) -> object:
    import bashlex

    try:
        trees = bashlex.parse(command)
    except Exception:  # bashlex raises its own errors and NotImplementedError
        return ERROR
    found: list[list[str | None]] = []

    class Visitor(bashlex.ast.nodevisitor):  # type: ignore[misc,name-defined]
        def visitcommand(self, node, parts):
            words = []
            for part in parts:
                if part.kind == "word":
                    dynamic = any(
                        p.kind in ("commandsubstitution", "processsubstitution", "parameter")
                        for p in part.parts
                    )
                    words.append(None if dynamic else part.word)
            found.append(words)

    for tree in trees:
        Visitor().visit(tree)
    return sorted(found, key=str)


def timed(function, command: str, rounds: int = 300) -> float:
    samples = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(rounds):
            function(command)
        samples.append((time.perf_counter() - start) / rounds)
    return statistics.median(samples)


def import_ms(module: str) -> float:
    start = time.perf_counter()
    importlib.import_module(module)
    return (time.perf_counter() - start) * 1000


def main() -> int:
    parsers = {"tree-sitter-bash": tree_sitter_commands}
    imports = {"tree-sitter-bash": import_ms("tree_sitter_bash") + import_ms("tree_sitter")}
    try:
        imports["bashlex"] = import_ms("bashlex")
        parsers["bashlex"] = bashlex_commands
    except ImportError:
        print("bashlex is not installed: python3 -m pip install bashlex to compare")
    right = {name: 0 for name in parsers}
    print(f"{'command':<34} " + " ".join(f"{name:>18}" for name in parsers))
    for command, expected in CASES:
        want = expected if expected == ERROR else sorted(expected, key=str)  # type: ignore[arg-type]
        cells = []
        for name, parse in parsers.items():
            ok = parse(command) == want
            right[name] += ok
            cells.append(f"{'ok' if ok else 'WRONG':>18}")
        print(f"{command.encode('unicode_escape').decode()[:34]:<34} " + " ".join(cells))
    sample = "npm test && git diff --stat | tee out.txt; echo $'x' > y"
    print()
    for name, parse in parsers.items():
        micro = timed(parse, sample) * 1e6
        print(
            f"{name:>18}: {right[name]}/{len(CASES)} right, {micro:,.1f} µs per parse, import {imports[name]:,.0f} ms"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
