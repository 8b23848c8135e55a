"""What an edit would change, before it runs (the approval card's diff), and what a denial with a reason
tells the model."""

from __future__ import annotations

from app.tools.approval import Denial, denied_outcome
from app.tools.change_preview import preview_change


def test_an_edit_previews_the_diff_the_tool_would_write_and_writes_nothing(tmp_path):
    source = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"
    (tmp_path / "calc.py").write_text(source)
    args = {"path": "calc.py", "old_string": "return a - b", "new_string": "return b - a"}
    preview = preview_change("edit_file", args, tmp_path)
    assert preview is not None and preview.summary == "calc.py: +1 −1 lines" and not preview.problem
    assert "-    return a - b\n+    return b - a\n" in preview.text and preview.text.startswith("@@ ")
    assert (tmp_path / "calc.py").read_text() == source  # nothing written


def test_a_new_file_previews_its_head_and_says_how_much_more(tmp_path):
    content = "".join(f"line {n}\n" for n in range(1, 101))
    preview = preview_change(
        "write_file", {"path": "new/notes.md", "content": content}, tmp_path, max_lines=5
    )
    assert preview is not None and preview.new_file
    assert preview.summary.startswith("new/notes.md: a new file, 100 lines")
    assert preview.text == "line 1\nline 2\nline 3\nline 4\nline 5\n" and preview.more_lines == 95
    assert not (tmp_path / "new").exists()


def test_an_edit_that_would_fail_says_why_before_anyone_approves_it(tmp_path):
    (tmp_path / "a.txt").write_text("x = 1\nx = 1\n")
    missing = preview_change("edit_file", {"path": "a.txt", "old_string": "y", "new_string": "z"}, tmp_path)
    assert missing is not None and "old_string was not found in a.txt" in missing.problem
    twice = preview_change("edit_file", {"path": "a.txt", "old_string": "x = 1", "new_string": "x"}, tmp_path)
    assert twice is not None and "appears 2 times" in twice.problem
    nofile = preview_change("edit_file", {"path": "b.txt", "old_string": "a", "new_string": "b"}, tmp_path)
    assert nofile is not None and "does not exist" in nofile.problem


def test_a_rewrite_of_an_existing_file_is_a_diff_and_a_binary_one_says_so(tmp_path):
    (tmp_path / "a.txt").write_text("one\ntwo\n")
    rewrite = preview_change("write_file", {"path": "a.txt", "content": "one\nthree\n"}, tmp_path)
    assert rewrite is not None and "-two\n+three" in rewrite.text and not rewrite.new_file
    (tmp_path / "b.bin").write_bytes(b"\x00\x01\x02" * 10)
    binary = preview_change("write_file", {"path": "b.bin", "content": "text"}, tmp_path)
    assert binary is not None and "binary" in binary.summary and not binary.text


def test_other_tools_have_no_preview(tmp_path):
    assert preview_change("shell", {"command": "ls"}, tmp_path) is None
    assert preview_change("edit_file", {"path": "a"}, tmp_path, max_lines=0) is None


def test_a_denial_with_a_reason_is_what_the_model_is_told():
    outcome = denied_outcome("edit_file", "why it asked", said=Denial("use a docstring\ninstead").said)
    assert outcome.is_error
    assert "The user denied this edit_file call and said: use a docstring instead" in outcome.content
    assert "why it asked" not in outcome.content
