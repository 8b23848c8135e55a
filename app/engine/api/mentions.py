"""The prompt's `@` mentions for a front end (`app.ui.prompt`, `app.ui.file_mentions`): the workspace's file
index and its fuzzy matcher, completing and describing a mention. The files a mention attaches are read by
the session when the prompt is sent, not here."""

from app.engine.file_index import FuzzyPaths, build_file_index
from app.engine.mentions import complete_mention, describe_completion, is_explicit_path, mention_at_end

__all__ = [
    "FuzzyPaths",
    "build_file_index",
    "complete_mention",
    "describe_completion",
    "is_explicit_path",
    "mention_at_end",
]
