"""`tools = [...]` (issue 36): a real way to send fewer built-in tools, per route or for every route."""

from __future__ import annotations

import pytest

from app.config import BUILTIN_TOOL_NAMES, ConfigError, load_settings
from app.engine.tool_choice import offered_tools
from app.tools.registry import TOOL_SPECS


def test_the_names_config_knows_are_the_registrys():
    assert set(BUILTIN_TOOL_NAMES) == {spec.name for spec in TOOL_SPECS}


def test_a_route_list_wins_over_the_global_one_and_an_empty_list_offers_none(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text(
        'tools = ["read_file", "grep"]\n'
        '[routes.a]\nprovider = "lab"\n'
        '[routes.b]\nprovider = "lab"\ntools = []\n'
        '[routes.c]\nprovider = "lab"\ntools = ["shell"]\n'
    )
    settings = load_settings(path, env={})
    names = {
        name: [s.name for s in offered_tools(settings, route)] for name, route in settings.routes.items()
    }
    assert names == {"a": ["read_file", "grep"], "b": [], "c": ["shell"]}


def test_an_unknown_tool_name_is_an_error_naming_file_and_line(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text('[routes.a]\nprovider = "lab"\ntools = ["read_file", "bash"]\n')
    with pytest.raises(ConfigError) as caught:
        load_settings(path, env={})
    assert f"{path}:3" in str(caught.value) and "'bash' is not a built-in tool" in str(caught.value)


async def test_the_request_declares_only_the_chosen_tools_and_a_call_to_another_is_refused(make_harness, lab):
    h = make_harness("anthropic", route_extra={"tools": ("read_file",)})
    assert [spec.name for spec in h.engine.builtin_tools] == ["read_file"]

    result = await h.engine.submit("!shell echo hi")

    assert result.outcome == "answered", result.error
    assert "This request does not offer the tool shell (tools offered: read_file" in result.text
