"""Where the palette's "Screenshot" goes: the Downloads folder when there is one, else the working folder.

Textual saves to the user's Downloads folder (platformdirs) and fails ("Failed to save screenshot") when it
does not exist — on most servers and containers. Textual says the path it saved to.
"""

from __future__ import annotations

from pathlib import Path


def screenshot_folder(workspace: Path) -> Path:
    from platformdirs import user_downloads_path

    downloads = Path(user_downloads_path())
    return downloads if downloads.is_dir() else Path(workspace)
