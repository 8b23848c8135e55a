"""The workspace's files for `@` completion: listed in a thread worker, with progress, when stale.

The list is built when the prompt first completes an `@`, again once it is older than
`mention_index_ttl` or a turn ran since (tools may have made files); the prompt keeps using the old
list meanwhile.
"""

from __future__ import annotations

import contextlib

from textual import work
from textual.css.query import NoMatches

from app.ui.app_host import AppMixin


class FileMentions(AppMixin):
    """Mixed into `BulkheadApp`: `want_files` is the prompt's hook; the listing runs in a worker."""

    files_listing = False  # the workspace's files are being listed
    files_stale = False  # a turn ran since they were listed

    def want_files(self) -> None:
        if self.files_listing:
            return
        matcher = self.prompt.file_matcher
        if (
            matcher is not None
            and not self.files_stale
            and self.clock() - matcher.index.built_at < self.settings.mention_index_ttl
        ):
            return
        self.files_listing, self.files_stale = True, False
        if matcher is None:
            self.prompt.files_status = "listing the workspace's files…"
        self._list_files()

    @work(thread=True, group="file-index", exclusive=True, exit_on_error=False, name="list workspace files")
    def _list_files(self) -> None:
        from app.engine.api.mentions import FuzzyPaths, build_file_index

        def progress(count: int) -> None:
            with contextlib.suppress(Exception):  # the app may be closing
                self.call_from_thread(self._files_progress, count)

        matcher = None
        try:
            index = build_file_index(
                self.workspace,
                max_files=self.settings.mention_index_max_files,
                progress=progress,
                now=self.clock,
            )
            matcher = FuzzyPaths(index)
        finally:
            with contextlib.suppress(Exception):
                self.call_from_thread(self._files_listed, matcher)

    def _files_progress(self, count: int) -> None:
        with contextlib.suppress(NoMatches):
            if self.prompt.file_matcher is None:
                self.prompt.files_status = f"listing the workspace's files… {count:,} so far"
                if self.prompt.typing_mention():
                    self.prompt.refresh_completions()

    def _files_listed(self, matcher) -> None:
        self.files_listing = False
        with contextlib.suppress(NoMatches):
            prompt = self.prompt
            if matcher is None:
                prompt.files_status = "could not list the workspace's files"
                return
            index = matcher.index
            prompt.file_matcher = matcher
            prompt.files_status = (
                f"{index.files:,} files"
                + (" (git)" if index.source == "git" else "")
                + (f" — the first {index.files:,} only (mention_index_max_files)" if index.truncated else "")
            )
            if prompt.typing_mention():  # what was typed meanwhile gets the fuzzy list now
                prompt.refresh_completions()
