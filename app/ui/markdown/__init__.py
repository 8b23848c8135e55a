"""Markdown for answers: `parser` (markdown-it, pure), `painter` (tokens → lines, pure), `widget` (AnswerView).

Justified by measurement (a widget per block stalled typing for seconds while an answer streamed); whether it still
earns its cost against Textual's own `Markdown.get_stream()` is measured by bench/markdown_render.py.
"""
