"""Config mistakes never pass silently: a named config file that does not exist, values out of range,
base URLs without a scheme — and `config check` reports every problem with its file:line, not the first."""

from __future__ import annotations

import pytest

from app.cli import main
from app.config import ConfigError, load_settings


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize("argv", [["config", "check"], ["config", "show"], ["-p", "hello"]])
def test_a_named_config_file_that_does_not_exist_is_an_error(tmp_path, monkeypatch, capsys, argv):
    missing = tmp_path / "typo" / "config.toml"
    monkeypatch.setenv("BULKHEAD_CONFIG", str(missing))
    code, out, err = run_cli(capsys, *argv)
    assert code == 2
    said = out + err
    assert f"BULKHEAD_CONFIG={missing}: no such file" in said and "bulkhead config init" in said
    assert "valid" not in said and "lab model" not in said  # no fallback to the defaults and the lab


def test_config_init_creates_the_named_file(tmp_path, monkeypatch, capsys):
    missing = tmp_path / "new" / "config.toml"
    monkeypatch.setenv("BULKHEAD_CONFIG", str(missing))
    assert run_cli(capsys, "config", "init")[0] == 0 and missing.exists()
    assert run_cli(capsys, "config", "check")[0] == 0


def test_config_check_reports_every_problem_with_its_line(tmp_path, monkeypatch, capsys):
    config = tmp_path / "many.toml"
    config.write_text(
        'approval = "sometimes"\n'  # 1: not a mode
        "compact_threshold = 1.5\n"  # 2: a share above 1
        "no_such_key = 3\n"  # 3: unknown
        "retry_max_attempts = -1\n"  # 4: negative
        "\n[routes.local]\n"
        'provider = "openai"\n'
        'model = "qwen"\n'
        'base_url = "127.0.0.1:8787"\n'  # 9: no scheme
        "\n[routes.far]\n"
        'provider = "anthropic"\n'
        'model = "m"\n'
        'base_url = "ftp://gateway.example.com"\n',  # 14: not http(s)
        encoding="utf-8",
    )
    monkeypatch.setenv("BULKHEAD_CONFIG", str(config))
    code, out, _ = run_cli(capsys, "config", "check")
    assert code == 2
    problems = [line for line in out.splitlines() if line.startswith("✖ ")]
    assert [p.split(": ", 1)[0] for p in problems] == [f"✖ {config}:{n}" for n in (1, 2, 3, 4, 9, 14)]
    assert "'sometimes' is not one of ask, auto-read, auto-edit, never-ask" in problems[0]
    assert "compact_threshold = 1.5 is out of range: it must be more than 0 and at most 1" in problems[1]
    assert "unknown key 'no_such_key'" in problems[2]
    assert "retry_max_attempts = -1 is not a whole number" in problems[3]
    assert (
        "routes.local.base_url = '127.0.0.1:8787' has no scheme — add http:// for a local server "
        '("http://127.0.0.1:8787")'
    ) in problems[4]
    assert (
        "routes.far.base_url = 'ftp://gateway.example.com' must start with http:// or https://" in problems[5]
    )
    assert "6 problems" in out


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("compact_threshold = 0\n", "compact_threshold = 0 is out of range"),
        ("preflight_target = 2\n", "preflight_target = 2 is out of range"),
        (
            "compact_target = 0.9\ncompact_threshold = 0.8\n",
            "compact_target = 0.9 must be below compact_threshold = 0.8",
        ),
        ("request_timeout = 0\n", "request_timeout = 0 is out of range: it must be more than 0"),
        ("max_recovery_attempts = 50\n", "max_recovery_attempts = 50 is out of range: it must be at most 10"),
        ('max_payload = "100"\nfallback_cap = 10\n', None),  # a bare number is MB: valid
        ('max_payload = "1KB"\n', None),
        ("max_output_tokens = 0\n", "max_output_tokens = 0 is out of range: it must be at least 1"),
        (
            '[routes.r]\nprovider = "lab"\nmax_payload = "10B"\n',
            "routes.r.max_payload = 10 B is out of range",
        ),
        ("retry_base_delay = 40\n", "retry_base_delay = 40 must be at most retry_max_delay = 30"),
    ],
)
def test_ranges(tmp_path, text, needle):
    path = tmp_path / "c.toml"
    path.write_text(text, encoding="utf-8")
    if needle:
        with pytest.raises(ConfigError) as info:
            load_settings(path, env={})
        assert needle in str(info.value) and f"{path}:" in str(info.value)
    else:
        load_settings(path, env={})  # valid


def test_an_environment_value_out_of_range_names_the_variable(tmp_path):
    with pytest.raises(ConfigError) as info:
        load_settings(tmp_path / "absent.toml", env={"BULKHEAD_COMPACT_THRESHOLD": "1.5"})
    assert "environment BULKHEAD_COMPACT_THRESHOLD: compact_threshold = 1.5 is out of range" in str(
        info.value
    )


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8787",
        "https://gateway.example.com/anthropic",
        "http://localhost:11434/v1",
        "HTTPS://Example.com",
    ],
)
def test_urls_with_a_scheme_pass(tmp_path, url):
    path = tmp_path / "c.toml"
    path.write_text(f'[routes.r]\nprovider = "openai"\nmodel = "m"\nbase_url = "{url}"\n', encoding="utf-8")
    assert load_settings(path, env={}).routes["r"].base_url == url


def test_a_remote_host_without_a_scheme_suggests_https(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text(
        '[routes.r]\nprovider = "bedrock"\nmodel = "m"\nendpoint_url = "bedrock.example.com"\n',
        encoding="utf-8",
    )
    with pytest.raises(ConfigError) as info:
        load_settings(path, env={})
    assert "routes.r.endpoint_url = 'bedrock.example.com' has no scheme" in str(info.value)
    assert '"https://bedrock.example.com"' in str(info.value)
