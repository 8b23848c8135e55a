"""HTML as readable text, with the standard library's parser (for `web_fetch`).

    html_to_text("<h1>Guide</h1><p>Install <a href='/dl'>it</a>.</p>", base_url="https://x.test/")
    # → "# Guide\n\nInstall it (https://x.test/dl)."

Dropped with their contents: script, style, noscript, template, svg, nav, head (its title is kept as the
first heading), iframe. Headings become `#` lines, list items `- ` lines, a link its text followed by its
address; `pre` keeps its lines; elsewhere whitespace collapses. Nothing in the page is interpreted.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from urllib.parse import urljoin

_DROPPED = frozenset({"script", "style", "noscript", "template", "svg", "nav", "head", "iframe", "select"})
_BLOCKS = frozenset(
    {
        "p", "div", "section", "article", "main", "header", "footer", "aside", "blockquote", "table", "tr",
        "ul", "ol", "dl", "dt", "dd", "figure", "figcaption", "form", "hr", "br", "li", "pre", "details",
        "summary", "h1", "h2", "h3", "h4", "h5", "h6", "title", "body", "html",
    }
)  # fmt: skip
_VOID = frozenset(
    {"br", "hr", "img", "input", "meta", "link", "area", "base", "col", "embed", "source", "wbr"}
)
_SPACES = re.compile(r"[ \t\r\f\v\u00a0]+")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


class _Reader(HTMLParser):
    def __init__(self, base_url: str) -> None:
        super().__init__(convert_charrefs=True)
        self.base_url = base_url
        self.lines: list[str] = []  # finished blocks
        self.current: list[str] = []  # text of the block being read
        self.dropping: list[str] = []  # the open dropped elements
        self.pre = 0
        self.prefix = ""
        self.title = ""
        self.in_title = False
        self.href: str | None = None
        self.link_text: list[str] = []

    # -- blocks ------------------------------------------------------------------------------------
    def flush(self) -> None:
        text = "".join(self.current)
        self.current = []
        if self.pre:
            body = text.strip("\n")
        else:
            body = _SPACES.sub(" ", text.replace("\n", " ")).strip()
        if body:
            self.lines.append(self.prefix + body)
        self.prefix = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title" and not self.dropping[1:]:
            self.in_title = True
            return
        if self.dropping:
            if tag not in _VOID:
                self.dropping.append(tag)
            return
        if tag in _DROPPED:
            self.dropping.append(tag)
            return
        if tag in _BLOCKS:
            self.flush()
        if tag == "pre":
            self.pre += 1
        elif tag in ("h1", "h2", "h3", "h4", "h5", "h6"):
            self.prefix = "#" * int(tag[1]) + " "
        elif tag == "li":
            self.prefix = "- "
        elif tag in ("td", "th"):
            self.current.append(" | " if self.current else "")
        elif tag == "a":
            href = dict(attrs).get("href") or ""
            self.href = urljoin(self.base_url, href) if href and not href.startswith("#") else None
            self.link_text = []
        elif tag == "img":
            alt = (dict(attrs).get("alt") or "").strip()
            if alt:
                self.current.append(f"[image: {alt}]")

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self.in_title = False
        if self.dropping:
            if tag in self.dropping:
                while self.dropping and self.dropping.pop() != tag:
                    pass
            return
        if tag == "a" and self.href is not None:
            text = _SPACES.sub(" ", "".join(self.link_text)).strip()
            if text and self.href.lower().startswith(("http://", "https://")) and self.href != text:
                self.current.append(f" ({self.href})")
            self.href = None
        if tag == "pre" and self.pre:
            self.flush()
            self.pre -= 1
        elif tag in _BLOCKS:
            self.flush()

    def handle_data(self, data: str) -> None:
        if self.in_title:
            self.title += data
            return
        if self.dropping:
            return
        self.current.append(data)
        if self.href is not None:
            self.link_text.append(data)


def html_to_text(html: str, base_url: str = "") -> str:
    """The page's readable text: blocks separated by blank lines, control characters removed."""
    reader = _Reader(base_url)
    try:
        reader.feed(html)
        reader.close()
    except Exception:  # html.parser is lenient; a page it still chokes on keeps what was read
        pass
    reader.flush()
    title = _SPACES.sub(" ", reader.title).strip()
    lines = reader.lines
    if title and not (lines and lines[0].lstrip("# ").strip() == title):
        lines = [f"# {title}", *lines]
    return _CONTROL.sub("", "\n\n".join(lines))
