"""Benchmark: fuzzy `@` completion over a generated 100,000-file tree — the time per keystroke.

    python3 bench/mention.py              # 100,000 files, 120 queries typed letter by letter
    python3 bench/mention.py --json       # one JSON line per measurement, then the headline
    python3 bench/mention.py --quick      # 40 queries
    python3 bench/mention.py --files 20000 --git   # a smaller tree, listed by `git ls-files` too

A tree of N files is written to a temporary folder (about one folder per 12 files, 0–6 deep, named
from a word list; file names word[_word][NN].ext, modification times spread over a year, a few hundred files edited in the
last hour, and `__pycache__` folders that must never be offered). `build_file_index` lists it (a
walk: the tree is no git work tree unless `--git`) and `FuzzyPaths` prepares it — what the app's
worker does. Then queries are typed one letter at a time, as in the prompt after `@`; each
keystroke is one `complete(prefix)` call, timed. Queries are made from random files of the tree
in three styles users type: the start of the name (`handl`), the name without its dot
(`clipy` for cli.py) and the folder's initials plus the name (`appcli` for app/cli.py).

The figure is the p99 per keystroke (target < 30 ms). The ratio compares it, in the same run, with
a naive matcher that tests every path with one regex per keystroke and sorts the matches. Also
printed: how often the file a query was made from is among the eight shown, and how often the first
suggestion has its name (names repeat across the tree, as `__init__.py` or `index.ts` do).
"""

from __future__ import annotations

import os
import random
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import (
    Output,
    fmt_ms,
    fmt_ratio,
    machine_note,
    median,
    parser,
    percentile,
    ratio,
    temp_home,
)

WORDS = (
    "app core engine util service model view controller api client server config test spec lib src "
    "pkg internal cmd handler router store db cache auth user account payment order item list detail "
    "common shared component widget page hook style asset doc script build tool data schema migration "
    "parser lexer render session prompt payload archive gateway"
).split()
EXTS = (".py", ".ts", ".tsx", ".js", ".go", ".rs", ".java", ".md", ".json", ".yml", ".css", ".html", ".txt")
DEPTHS = (1, 2, 2, 3, 3, 3, 4, 4, 5, 6, 7)
YEAR = 365 * 86400
FILES_PER_FOLDER = 12
NAIVE_KEYSTROKES = 200  # the naive matcher is slow: timed on the first queries' keystrokes only


def make_folders(rng: random.Random, files: int) -> list[str]:
    """A folder hierarchy like a real repository's: about one folder per FILES_PER_FOLDER files, 0–6 deep."""
    folders = [""]
    while len(folders) < max(1, files // FILES_PER_FOLDER):
        parent = rng.choice(folders)
        if parent.count("/") >= max(DEPTHS) - 1:
            continue
        name = rng.choice(WORDS) + (str(rng.randint(0, 40)) if rng.random() < 0.3 else "")
        folders.append(f"{parent}{name}/")
    return folders


def make_tree(root: Path, files: int, seed: int) -> list[str]:
    """Write `files` files (plus ignored __pycache__ ones) under `root`; their relative paths."""
    rng = random.Random(seed)
    now = time.time()
    folders = make_folders(rng, files)
    paths: dict[str, None] = {}
    while len(paths) < files:
        name = (
            rng.choice(WORDS)
            + rng.choice(("", "_" + rng.choice(WORDS), str(rng.randint(0, 99))))
            + rng.choice(EXTS)
        )
        paths[rng.choice(folders) + name] = None
    made: set[Path] = set()
    for number, relative in enumerate(paths):
        path = root / relative
        if path.parent not in made:
            path.parent.mkdir(parents=True, exist_ok=True)
            made.add(path.parent)
        path.write_bytes(b"")
        edited = now - (rng.random() * 3600 if number % 300 == 0 else rng.random() * YEAR)
        os.utime(path, (edited, edited))
        if relative.endswith(".py") and number % 50 == 0:
            cache = path.parent / "__pycache__"
            cache.mkdir(exist_ok=True)
            (cache / (path.stem + ".cpython-311.pyc")).write_bytes(b"\0")
    return list(paths)


def make_queries(paths: list[str], count: int, seed: int) -> list[tuple[str, str]]:
    """(query, the file it was made from) in the three styles, round robin."""
    rng = random.Random(seed + 1)
    queries: list[tuple[str, str]] = []
    while len(queries) < count:
        path = rng.choice(paths)
        folders, name = path.split("/")[:-1], path.rsplit("/", 1)[-1]
        stem = name.rsplit(".", 1)[0]
        style = len(queries) % 3
        if style == 0:
            query = stem[: rng.randint(4, 8)]
        elif style == 1:
            query = name.replace(".", "")
        else:
            query = "".join(folder[0] for folder in folders[-2:]) + stem[:5]
        queries.append((query.lower(), path))
    return queries


def naive_complete(lower: list[str], paths: list[str], query: str, limit: int = 8) -> list[str]:
    """The obvious matcher: one regex per path per keystroke, matches sorted by match span then path length."""
    pattern = re.compile(".*?".join(re.escape(c) for c in query))
    scored = []
    for i, path in enumerate(lower):
        match = pattern.search(path)
        if match:
            scored.append((match.end() - match.start(), len(path), i))
    scored.sort()
    return [paths[i] for _, _, i in scored[:limit]]


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--files", type=int, default=100_000, help="files in the generated tree (default 100,000)")
    p.add_argument("--queries", type=int, help="queries typed (default 120, --quick 40)")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument(
        "--git", action="store_true", help="also make the tree a git work tree and time `git ls-files`"
    )
    args = p.parse_args()
    from app.engine.file_index import FuzzyPaths, build_file_index

    count = args.queries or (40 if args.quick else 120)
    out = Output("mention", args.json)
    out.text(f"mention: {args.files:,} files, {count} queries typed letter by letter; {machine_note()}")
    with temp_home("bulkhead-bench-mention-") as home:
        root = home / "tree"
        root.mkdir()
        started = time.perf_counter()
        written = make_tree(root, args.files, args.seed)
        out.record(
            {"tree_files": len(written), "write_s": round(time.perf_counter() - started, 1)},
            f"tree written: {len(written):,} files in {time.perf_counter() - started:.1f} s",
        )
        if args.git:
            import subprocess

            subprocess.run(["git", "init", "-q", str(root)], check=True)
            (root / ".gitignore").write_text("__pycache__/\n")
            subprocess.run(["git", "-C", str(root), "add", "-A"], check=True)
        started = time.perf_counter()
        index = build_file_index(root, max_files=max(200_000, args.files + 1))
        build_s = time.perf_counter() - started
        started = time.perf_counter()
        matcher = FuzzyPaths(index)
        prepare_s = time.perf_counter() - started
        ignored = sum("__pycache__" in path for path in index.paths)
        out.record(
            {
                "index_source": index.source,
                "index_files": index.files,
                "index_paths": len(index.paths),
                "build_s": round(build_s, 2),
                "prepare_s": round(prepare_s, 2),
                "ignored_listed": ignored,
            },
            f"listed ({index.source}): {index.files:,} files + {len(index.paths) - index.files:,} folders "
            f"in {build_s:.2f} s, prepared in {prepare_s:.2f} s; __pycache__ entries listed: {ignored}",
        )
        queries = make_queries(written, count, args.seed)
        ours: list[float] = []
        naive: list[float] = []
        first = shown = 0
        lower = [path.lower() for path in index.paths]
        paths = list(index.paths)
        for query, target in queries:
            result: list[tuple[str, bool]] = []
            for n in range(1, len(query) + 1):
                begun = time.perf_counter()
                result = matcher.complete(query[:n])
                ours.append((time.perf_counter() - begun) * 1000)
            suggested = [path for path, _ in result]
            first += bool(suggested) and suggested[0].rsplit("/", 1)[-1] == target.rsplit("/", 1)[-1]
            shown += target in suggested
            if len(naive) >= NAIVE_KEYSTROKES:
                continue
            for n in range(1, len(query) + 1):
                begun = time.perf_counter()
                naive_complete(lower, paths, query[:n])
                naive.append((time.perf_counter() - begun) * 1000)
        p50, p99, worst = median(ours), percentile(ours, 99), max(ours)
        naive_p99 = percentile(naive, 99)
        out.record(
            {
                "keystrokes": len(ours),
                "p50_ms": round(p50, 2),
                "p99_ms": round(p99, 2),
                "max_ms": round(worst, 2),
                "naive_p50_ms": round(median(naive), 2),
                "naive_p99_ms": round(naive_p99, 2),
                "target_first": first,
                "target_in_8": shown,
                "queries": len(queries),
            },
            f"per keystroke ({len(ours):,}): p50 {fmt_ms(p50)} ms, p99 {fmt_ms(p99)} ms, max {fmt_ms(worst)} ms"
            f" — naive p50 {fmt_ms(median(naive))} ms, p99 {fmt_ms(naive_p99)} ms",
        )
        out.text(
            f"the file a query was made from: among the 8 shown {shown}/{len(queries)}; a file of its "
            f"name first {first}/{len(queries)} (names repeat across the tree)"
        )
        out.headline(
            f"fuzzy @ completion, {index.files:,}-file tree",
            f"p99 {fmt_ms(p99)} ms per keystroke (p50 {fmt_ms(p50)} ms; listing {build_s:.1f} s in a worker); "
            f"made-from file shown {shown}/{len(queries)}",
            f"naive / bulkhead p99 {fmt_ratio(ratio(naive_p99, p99))}",
        )


if __name__ == "__main__":
    main()
