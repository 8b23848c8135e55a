"""The design contract the code cites is in the repository, and every citation still finds its section.

Code, tests and benchmarks say `DESIGN.md §N` (or `§N–§M`) for the rule they keep; docs/DESIGN.md numbers its
sections `## N. Title` and keeps the numbers stable. A citation of a section that is gone, or a renumbering that
leaves citations behind, fails here. The repository's own Markdown links (README, docs/, CONTRIBUTING.md,
bench/README.md) must point at files that exist, and at headings that exist (the README's table of contents).
"""

from __future__ import annotations

import re
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[2]
DESIGN = REPOSITORY / "docs" / "DESIGN.md"
CITING = ("app", "tests", "bench", "scripts")
CITATION = re.compile(r"DESIGN\.md\s+§(\d+)(?:\s*[–-]\s*§?(\d+))?")
HEADING = re.compile(r"^## (\d+)\. \S", re.MULTILINE)
LINK = re.compile(r"\]\(([^)\s#]*)(?:#([^)\s]*))?\)")
FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)
LINKING = ("README.md", "CONTRIBUTING.md", "docs/DESIGN.md", "docs/ARCHITECTURE.md", "bench/README.md")


def _citations() -> dict[int, list[str]]:
    cited: dict[int, list[str]] = {}
    files = [path for folder in CITING for path in (REPOSITORY / folder).rglob("*.py")]
    files.append(REPOSITORY / "pyproject.toml")
    for path in files:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for match in CITATION.finditer(line):
                first = int(match.group(1))
                last = int(match.group(2) or first)
                for section in range(first, last + 1):
                    cited.setdefault(section, []).append(f"{path.relative_to(REPOSITORY)}:{number}")
    return cited


def test_every_cited_design_section_exists():
    sections = {int(n) for n in HEADING.findall(DESIGN.read_text(encoding="utf-8"))}
    cited = _citations()
    assert cited, "no `DESIGN.md §N` citation found: the pattern or the paths are wrong"
    missing = {section: places for section, places in cited.items() if section not in sections}
    assert not missing, f"cited sections missing from docs/DESIGN.md: {missing}"


def test_design_sections_are_numbered_in_order_without_gaps():
    numbers = [int(n) for n in HEADING.findall(DESIGN.read_text(encoding="utf-8"))]
    assert numbers == list(range(1, len(numbers) + 1))


def _anchors(document: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation but `-` and `_` dropped, spaces as `-`, repeats numbered."""
    anchors: set[str] = set()
    text = FENCE.sub("", document.read_text(encoding="utf-8"))
    for heading in re.findall(r"^#{1,6} (.+)$", text, re.MULTILINE):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        candidate, n = slug, 0
        while candidate in anchors:
            n += 1
            candidate = f"{slug}-{n}"
        anchors.add(candidate)
    return anchors


def test_relative_links_in_the_documentation_exist():
    broken = []
    for name in LINKING:
        document = REPOSITORY / name
        for target, anchor in LINK.findall(document.read_text(encoding="utf-8")):
            if "://" in target or target.startswith("mailto:"):
                continue
            path = (document.parent / target) if target else document
            if not path.exists():
                broken.append(f"{name}: {target}")
            elif anchor and path.suffix == ".md" and anchor not in _anchors(path):
                broken.append(f"{name}: {target}#{anchor} (no such heading)")
    assert not broken, f"links to files or headings that do not exist: {broken}"
