"""Fixtures shared by the app's UI tests: one lab per module, reset for every test."""

from __future__ import annotations

import dataclasses

import pytest

from app.config import Route, Settings, load_settings
from app.lab.embedded import LabHandle


@pytest.fixture
def lab(lab_server: LabHandle) -> LabHandle:
    lab_server.configure(gateway="none", cap=None, window=None, faults=None, seed=0, slow_pause=0.01)
    lab_server.clear_requests()
    return lab_server


def lab_settings(lab: LabHandle, *, max_output_tokens: int | None = None, **overrides) -> Settings:
    """The user's (test) config with one route, `lab`, to the lab server."""
    route = Route(name="lab", provider="lab", model="lab-1", base_url=lab.url)
    if (
        max_output_tokens is not None
    ):  # the lab stops at max_tokens (4 chars a token): let a !big answer through
        route = dataclasses.replace(route, max_output_tokens=max_output_tokens)
    return load_settings().with_overrides(routes={"lab": route}, **overrides)
