"""`bulkhead -p hi --json` on an `api = "responses"` route: a real process against the lab's /v1/responses."""

from __future__ import annotations

import json

from tests.engine.test_oneshot import _run


def test_p_json_on_a_responses_route_reaches_v1_responses(lab, tmp_path):
    config = tmp_path / "config.toml"
    config.write_text(
        f'default_route = "gpt"\n\n[routes.gpt]\nprovider = "openai"\nmodel = "gpt-5.5"\n'
        f'base_url = "{lab.url}/v1"\napi = "responses"\napi_key_env = "LAB_KEY"\n'
    )

    done = _run("-p", "hi", "--json", env_extra={"BULKHEAD_CONFIG": str(config), "LAB_KEY": "sk-lab"})

    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    assert events[-1]["type"] == "result" and "Lab model" in events[-1]["text"] and "hi" in events[-1]["text"]
    assert [r["path"] for r in lab.requests()] == ["/v1/responses"]
    assert lab.requests()[0]["verdict"] == "passed" and lab.requests()[0]["stream"] is True


def test_api_on_a_route_that_is_not_openai_names_the_line(tmp_path):
    config = tmp_path / "config.toml"
    config.write_text(
        'default_route = "c"\n\n[routes.c]\nprovider = "anthropic"\nmodel = "m"\napi = "responses"\n'
    )

    done = _run("-p", "hi", env_extra={"BULKHEAD_CONFIG": str(config)})

    assert done.returncode == 2 and f"{config}:6" in done.stderr and "only applies" in done.stderr
