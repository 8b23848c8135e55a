"""Split the mined failure vectors into a development part and a held-out part (issue 39).

The held-out third is what predicts how the classifier does on the next gateway: its cases are never read
while rules are written. The split is decided by the cases alone, never by how they classify:

- within each family (the `family` field), cases are ordered by sha256 of `SEED:id`;
- the first third (at least two) are held out;
- if those come from a single source (a repository, or a site), the last one is swapped for the next case
  of another source, so every family is held out from at least two sources.

    python3 scripts/split_vectors.py            # print the split
    python3 scripts/split_vectors.py --write    # write mined-vectors.jsonl and heldout-vectors.jsonl
    python3 scripts/split_vectors.py --check    # exit 1 unless the two files are exactly this split

Both files live in tests/fixtures/failures/; the union of their lines is the input. `bulkhead classify
--batch tests/fixtures/failures/heldout-vectors.jsonl --score` gives the held-out figures.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections import defaultdict
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[1]
FOLDER = ROOT / "tests" / "fixtures" / "failures"
MINED = FOLDER / "mined-vectors.jsonl"
HELDOUT = FOLDER / "heldout-vectors.jsonl"
SEED = "bulkhead-issue-39"
MIN_HELD = 2


def source_key(source: str) -> str:
    """The source a case came from, coarse enough that two cases of one collection count as one."""
    text = source.strip()
    if text.startswith("observed"):
        return "observed"
    url = text.split(" ", 1)[0]
    parts = urlsplit(url)
    if parts.netloc.endswith("github.com") or parts.netloc == "raw.githubusercontent.com":
        path = [p for p in parts.path.split("/") if p]
        return "/".join(path[:2]).lower()
    if parts.netloc:
        return parts.netloc.lower().removeprefix("www.")
    return text.split("/", 2)[0].split(" ", 1)[0].lower()  # "squid-cache/squid errors/…" → its repository


def order(case: dict) -> str:
    return hashlib.sha256(f"{SEED}:{case['id']}".encode()).hexdigest()


def split(cases: list[dict]) -> tuple[list[dict], list[dict]]:
    families: dict[str, list[dict]] = defaultdict(list)
    for case in cases:
        families[case["family"]].append(case)
    held_ids: set[str] = set()
    for members in families.values():
        ranked = sorted(members, key=order)
        count = max(MIN_HELD, round(len(ranked) / 3))
        held = ranked[:count]
        if len({source_key(c["source"]) for c in held}) < 2:
            seen = {source_key(c["source"]) for c in held}
            other = next((c for c in ranked[count:] if source_key(c["source"]) not in seen), None)
            if other is not None:
                held[-1] = other
        held_ids |= {c["id"] for c in held}
    ordered = sorted(cases, key=lambda c: (c["family"], c["id"]))
    return [c for c in ordered if c["id"] not in held_ids], [c for c in ordered if c["id"] in held_ids]


def read(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def dump(cases: list[dict]) -> str:
    return "".join(json.dumps(case, ensure_ascii=False) + "\n" for case in cases)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--write", action="store_true", help="write the two files")
    parser.add_argument(
        "--check", action="store_true", help="exit 1 unless the files hold exactly this split"
    )
    parser.add_argument("--input", type=Path, help="read the cases from this file instead of the two files")
    args = parser.parse_args(argv)
    cases = read(args.input) if args.input else read(MINED) + read(HELDOUT)
    ids = [c["id"] for c in cases]
    if len(ids) != len(set(ids)):
        print(f"duplicate ids: {sorted({i for i in ids if ids.count(i) > 1})}", file=sys.stderr)
        return 1
    dev, held = split(cases)
    if args.check:
        if MINED.read_text(encoding="utf-8") != dump(dev) or HELDOUT.read_text(encoding="utf-8") != dump(
            held
        ):
            print("the files are not the seeded split: run scripts/split_vectors.py --write", file=sys.stderr)
            return 1
    if args.write:
        MINED.write_text(dump(dev), encoding="utf-8")
        HELDOUT.write_text(dump(held), encoding="utf-8")
    by_family: dict[str, list[str]] = defaultdict(list)
    for case in held:
        by_family[case["family"]].append(f"{case['id']} [{source_key(case['source'])}]")
    print(f"{len(dev)} development cases, {len(held)} held out (seed {SEED!r})")
    for family, names in sorted(by_family.items()):
        print(f"  {family}: {', '.join(names)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
