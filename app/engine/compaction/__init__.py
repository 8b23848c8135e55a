"""Planned compaction: pure passes from a view to a new view plus archive entries and a report."""
