"""The embedded lab as the `lab` provider: a lab route with no `base_url` starts the lab in-process.

The providers sit below the lab (`app.lab` imports `app.providers.base`), so they never start it themselves:
the engine registers this builder with the provider factory when it is imported (`app/engine/__init__.py`).
"""

from __future__ import annotations

from typing import Any

from app.config import Route, Settings
from app.providers.base import Provider
from app.providers.factory import register_provider


def _start_embedded_lab(**options: Any) -> Any:
    from app.lab.embedded import start_embedded_lab  # the lab server, imported when a lab route first sends

    return start_embedded_lab(**options)


def embedded_lab_provider(route: Route, settings: Settings, api_key: str | None = None) -> Provider:
    from app.providers.lab import LabProvider

    return LabProvider(route, settings, api_key, start_lab=_start_embedded_lab)


def register_embedded_lab() -> None:
    register_provider("lab", embedded_lab_provider)
