"""SVG snapshots of the answer view's Markdown, in the dark and the light theme, at 80 and 160 columns.

One tiny app per scenario (as Textual's own snapshot tests): an `AnswerView` holding a document with every block
the painter draws. Update after an intended change with `--snapshot-update` and look at the SVGs in
`__snapshots__/test_markdown_snapshots/`.
"""

from __future__ import annotations

import pytest
from textual.app import App, ComposeResult

from app.ui.markdown.widget import AnswerView

DOCUMENT = """\
# A heading

Some *emphasis*, **strong**, ~~struck~~ and `inline code`, a [link](https://example.com) and a marker
<<ccr:0123456789abcdef>>.

## Lists

- one
- two
  - nested, wide: 日本語のテキスト
1. first
2. second

> A quote that goes on long enough to wrap at eighty columns, so the border shows on more than one line.

```python
def greet(name: str) -> str:
    return f"hello {name}"  # a comment
```

| tool | kind | 名前 |
|------|------|------|
| read_file | read | 読む |
| shell | shell | 実行 |

---
"""


class MarkdownApp(App[None]):
    CSS = "Screen { background: $background; } AnswerView { padding: 0 1; }"

    def __init__(self, theme: str) -> None:
        super().__init__()
        self._theme_name = theme

    def compose(self) -> ComposeResult:
        yield AnswerView(DOCUMENT)

    def on_mount(self) -> None:
        self.theme = self._theme_name


async def drawn(pilot) -> None:
    """Wait (by polling, never a sleep) until the view has drawn every block at its width."""
    view = pilot.app.query_one(AnswerView)
    for _ in range(500):
        await pilot.pause()
        if view._width and not view._draw_pending():
            return
    raise AssertionError("the answer view never finished drawing")


@pytest.mark.parametrize("theme", ["textual-dark", "textual-light"])
@pytest.mark.parametrize("columns", [80, 160])
def test_markdown_in_both_themes_at_80_and_160_columns(snap_compare, theme, columns):
    assert snap_compare(MarkdownApp(theme), terminal_size=(columns, 48), run_before=drawn)
