"""Fuzzing the parsers that face the outside world (issue 10, reliability).

Every function here reads something bulkhead does not control — a size a user typed, a
config file, an error a gateway sent, a key a model wrote, a stream a server sent — and
must answer with a value or its own documented error, never with a stray exception:

- `parse_size` raises only `SizeError`;
- `load_settings` raises only `ConfigError`, and the message names the file;
- `classify_fields` never raises and always answers a known kind;
- `parse_recall_keys` never raises, returns 16-lowercase-hex keys, finds a marker in any prose;
- the Anthropic and OpenAI stream parsers (the text path `_from_body` and the real SDK path
  through a local server) raise only `ProviderError` and otherwise emit clean events;
- `decode_frames` raises only `EventStreamError`; `BedrockEvents` only `ProviderError`.

Examples are derandomized (the same inputs every run, no example database) so CI is
reproducible. `BULKHEAD_FUZZ_EXAMPLES=5000` explores randomly, with that many examples per
property (see README.md).

Known bugs have one deterministic reproducer each, marked `xfail(strict=True, reason="BUG: …")`,
and the property tests `reject()` exactly those inputs (`_known_*` predicates) so they keep
guarding everything else. When a bug is fixed its reproducer XPASSes and fails: drop the
marker and the predicate together.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import struct
import tempfile
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.config import SETTING_FIELDS, ConfigError, Settings, load_settings
from app.engine.failures import KINDS, PAYLOAD_KINDS, Failure, classify, classify_fields
from app.lab import eventstream
from app.lab.eventstream import EventStreamError, decode_frames
from app.model.archive import archive_key, marker, markers_in, parse_recall_keys
from app.providers.anthropic import AnthropicEvents, AnthropicProvider
from app.providers.base import ProviderError
from app.providers.bedrock import BedrockEvents
from app.providers.openai import OpenAIEvents, OpenAIProvider
from app.providers.wire import Exchange, parse_sse_text
from app.sizes import MAX_SIZE, SizeError, parse_size
from tests.reliability.helpers.streams import check_clean, problems_of
from tests.wire.common import SYSTEM, simple_view
from tests.wire.conftest import make_anthropic, make_bedrock, make_openai
from tests.wire.frames import EVENTSTREAM, SSE
from tests.wire.scripted_server import ScriptedServer, Stream

# hypothesis imports libcst to explain a failure (the known-bug properties fail on purpose); libcst warns on import
pytestmark = pytest.mark.filterwarnings("ignore:mypy_extensions.TypedDict is deprecated:DeprecationWarning")

_LONG = os.environ.get(
    "BULKHEAD_FUZZ_EXAMPLES"
)  # examples for a 200-example property; the others scale with it
BASE_EXAMPLES = 200


def fuzz(examples: int = BASE_EXAMPLES, **extra: Any):
    """Hypothesis settings for this file: derandomized in CI, random (and bigger) when run long by hand."""
    count = max(examples, int(_LONG) * examples // BASE_EXAMPLES) if _LONG else examples
    return settings(
        max_examples=count,
        deadline=None,
        derandomize=not _LONG,
        database=None,
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.function_scoped_fixture,
            HealthCheck.filter_too_much,
            HealthCheck.data_too_large,
        ],
        **extra,
    )


# -- shared strategies ------------------------------------------------------------------------------

JSON_LEAVES = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
)
JSON_VALUES = st.recursive(
    JSON_LEAVES,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)
SHORT_TEXT = st.text(max_size=24)
IDENT = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,11}", fullmatch=True)
COUNTS = st.integers(min_value=0, max_value=10**9)


# == sizes ===========================================================================================

SIZE_LIKE = st.builds(
    lambda n, space, unit: f"{n}{space}{unit}",
    st.one_of(
        st.integers(-5, 10**25).map(str),
        st.floats(allow_nan=True).map(repr),
        st.from_regex(r"\d{0,4}\.?\d{0,4}", fullmatch=True),
    ),
    st.sampled_from(["", " ", "  ", "\t"]),
    st.sampled_from(
        ["", "b", "B", "k", "KB", "kib", "MiB", "mb", "m", "G", "gb", "tb", "x", "KB ", "k b", "µB"]
    ),
)


@fuzz()
@given(
    st.one_of(
        st.text(),
        SIZE_LIKE,
        st.integers(),
        st.floats(),
        st.booleans(),
        st.none(),
        st.lists(st.integers(), max_size=2),
        st.binary(max_size=8),
    )
)
def test_parse_size_answers_bytes_or_size_error(value):
    try:
        result = parse_size(value)
    except SizeError as exc:
        assert str(exc), "a SizeError says what was wrong"
        return
    assert isinstance(result, int) and not isinstance(result, bool)
    assert 1 <= result <= MAX_SIZE


@fuzz()
@given(
    st.integers(1, 10**6),
    st.sampled_from(
        [("B", 1), ("KB", 1024), ("k", 1024), ("MiB", 1024**2), ("mb", 1024**2), ("GB", 1024**3)]
    ),
)
def test_parse_size_reads_what_it_promises(number, unit):
    name, factor = unit
    assert parse_size(f"{number}{name}") == number * factor
    assert parse_size(f"{number} {name}") == number * factor
    assert parse_size(str(number)) == number * 1024**2  # a bare number means MB


# == config ==========================================================================================

_FLOAT_KEYS = {name for name, spec in SETTING_FIELDS.items() if spec.metadata["kind"].rstrip("?") == "float"}
_ROUTE_KEYS = (
    "provider",
    "model",
    "base_url",
    "max_payload",
    "context_window",
    "max_output_tokens",
    "region",
    "profile",
    "endpoint_url",
    "api_key_env",
    "bogus",
)
_HOOK_EVENTS = ("PreToolUse", "Stop", "SessionStart", "RequestRejected", "NoSuchEvent")
_TOML_TEXT = st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x7f"), max_size=12)
_BIG_INTS = st.integers(min_value=2**64, max_value=10**400) | st.integers(
    max_value=-(2**64), min_value=-(10**400)
)


class _Datetime(str):
    """A TOML datetime literal (written bare)."""


TOML_SCALARS = st.one_of(
    st.integers(-(2**63), 2**63 - 1),
    _BIG_INTS,
    st.floats(),
    st.booleans(),
    _TOML_TEXT,
    st.sampled_from(
        [
            "5MB",
            "128KB",
            "2.5MB",
            "1 MiB",
            "0",
            "-1",
            "5XB",
            "none",
            "",
            "lab",
            "anthropic",
            "openai",
            "bedrock",
            "ask",
            "auto-read",
            "local",
            "provider",
            "true",
            "1e400",
            "nan",
        ]
    ),
    st.sampled_from(
        ["1979-05-27T07:32:00Z", "1979-05-27", "07:32:00", "1979-05-27T00:32:00.999999-07:00"]
    ).map(_Datetime),
)
TOML_VALUES = st.recursive(
    TOML_SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(IDENT, inner, max_size=3),
    max_leaves=6,
)


def _toml(value: Any) -> str:
    if isinstance(value, _Datetime):
        return str(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{json.dumps(k)} = {_toml(v)}" for k, v in value.items()) + " }"
    raise TypeError(value)


@st.composite
def config_documents(draw) -> tuple[str, dict[str, Any]]:
    """A TOML config built from real keys with arbitrary values (and a few wrong keys), plus its structure."""
    top = draw(st.dictionaries(st.sampled_from([*SETTING_FIELDS, "bogus_key"]), TOML_VALUES, max_size=4))
    routes = draw(
        st.dictionaries(
            IDENT, st.dictionaries(st.sampled_from(_ROUTE_KEYS), TOML_VALUES, max_size=4), max_size=2
        )
    )
    hooks = draw(
        st.dictionaries(
            st.sampled_from(_HOOK_EVENTS),
            TOML_VALUES
            | st.lists(
                st.fixed_dictionaries(
                    {"command": _TOML_TEXT}, optional={"matcher": TOML_VALUES, "timeout": TOML_VALUES}
                ),
                max_size=2,
            ),
            max_size=2,
        )
    )
    lines = [f"{json.dumps(k)} = {_toml(v)}" for k, v in top.items()]
    for name, table in routes.items():
        lines.append(f"[routes.{name}]")
        lines += [f"{k} = {_toml(v)}" for k, v in table.items()]
    if hooks:
        lines.append("[hooks]")
        lines += [f"{event} = {_toml(value)}" for event, value in hooks.items()]
    return "\n".join(lines) + "\n", {"top": top, "routes": routes, "hooks": hooks}


def _load(text: str | bytes) -> tuple[Path, Settings | ConfigError | BaseException]:
    """Write `text` as a config file and load it: (the file's path, Settings or what was raised)."""
    with tempfile.TemporaryDirectory(prefix="bulkhead-fuzz-") as folder:
        path = Path(folder) / "config.toml"
        path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass"))
        try:
            return path, load_settings(path, env={})
        except ConfigError as exc:
            return path, exc
        except Exception as exc:  # reported by the caller
            return path, exc


def _assert_config_contract(path: Path, outcome: Any) -> None:
    if isinstance(outcome, ConfigError):
        assert str(path) in str(outcome), f"the message names the file: {outcome}"
        return
    assert isinstance(outcome, Settings), f"load_settings raised {type(outcome).__name__}: {outcome!r}"
    assert outcome.config_file == path


@fuzz()
@given(st.one_of(st.text(), st.binary(), st.text(alphabet=st.sampled_from(list("[]=.\"'#\n abc123_-{},")))))
def test_config_loader_on_arbitrary_text_raises_only_config_error(text):
    path, outcome = _load(text)
    _assert_config_contract(path, outcome)


@fuzz()
@given(config_documents())
def test_config_loader_on_arbitrary_values_raises_only_config_error(document):
    text, structure = document
    path, outcome = _load(text)
    _assert_config_contract(path, outcome)


def test_regression_huge_integer_for_a_float_setting_is_a_config_error():
    path, outcome = _load("request_timeout = 1" + "0" * 400 + "\n")
    _assert_config_contract(path, outcome)


def test_regression_scalar_hook_entry_is_a_config_error():
    path, outcome = _load("[hooks]\nStop = 5\n")
    _assert_config_contract(path, outcome)


# == the classifier ==================================================================================

STATUSES = st.one_of(
    st.none(),
    st.sampled_from(
        [200, 400, 401, 403, 404, 406, 407, 408, 413, 422, 429, 431, 500, 502, 503, 504, 522, 529]
    ),
    st.integers(-1000, 1000),
    st.integers(),
    st.text(max_size=6),
    st.floats(),
    st.booleans(),
    st.binary(max_size=4),
)
PHRASES = st.sampled_from(
    [
        "prompt is too long: 210000 tokens > 200000 maximum",
        "context_length_exceeded",
        "maximum context length is 8192",
        "Request Entity Too Large",
        "413 Request Entity Too Large",
        "<html><title>403 Forbidden</title>cloudflare</html>",
        "Access Denied Reference #18.1a2b",
        "Rate limit reached",
        "must be reduced",
        "Overloaded",
        "upstream timed out",
        "Input is too long",
        "ValidationException",
        "Internal server error",
        '{"type":"error","error":{"type":"x"}}',
        '{"error":{"code":"context_length_exceeded","message":"too long"}}',
        "mod_security",
        "Zscaler",
        "&lt;html&gt;",
        "",
        "\x00",
        "413" * 50,
    ]
)
TEXTS = st.one_of(
    st.none(),
    st.text(),
    PHRASES,
    st.lists(PHRASES, max_size=4).map(" ".join),
    st.binary(max_size=64),
    st.integers(),
    JSON_VALUES,
)
HEADER_NAMES = st.sampled_from(
    [
        "cf-ray",
        "server",
        "x-amzn-ErrorType",
        "retry-after",
        "content-type",
        "x-amzn-waf-action",
        "cf-mitigated",
        "x-zscaler-x",
        "Retry-After",
        "x-request-id",
    ]
)
HEADER_VALUES = st.one_of(
    st.text(max_size=30),
    st.sampled_from(
        [
            "cloudflare",
            "AkamaiGHost",
            "nginx",
            "2",
            "-1",
            "1e309",
            "Wed, 21 Oct 2015 07:28:00 GMT",
            "RequestEntityTooLargeException",
            "text/html",
        ]
    ),
)
HEADERS = st.one_of(
    st.none(),
    st.dictionaries(HEADER_NAMES | st.text(max_size=10), HEADER_VALUES, max_size=4),
    st.lists(st.tuples(HEADER_NAMES, HEADER_VALUES), max_size=3),
    st.text(max_size=10),
    st.integers(),
    st.dictionaries(st.integers(), JSON_VALUES, max_size=2),
)
SIZES = st.one_of(
    st.none(), st.integers(), st.integers(0, 10**8), st.floats(), st.text(max_size=6), st.booleans()
)
TRANSPORTS = st.one_of(
    st.none(),
    st.sampled_from(["connection", "timeout", "stream-error", "html-200", "non-sse-200"]),
    st.text(max_size=8),
    st.integers(),
)


def _assert_failure(failure: Any) -> None:
    assert isinstance(failure, Failure)
    assert failure.kind in KINDS, failure.kind
    assert isinstance(failure.reason, str) and failure.reason
    assert isinstance(failure.evidence, tuple) and all(isinstance(e, str) for e in failure.evidence)
    assert failure.payload_related == (failure.kind in PAYLOAD_KINDS)
    assert failure.recoverable == (failure.payload_related or failure.kind == "context_overflow")


@fuzz(examples=400)
@given(
    status=STATUSES,
    message=TEXTS,
    body=TEXTS,
    headers=HEADERS,
    request_bytes=SIZES,
    transport=TRANSPORTS,
    error_type=TRANSPORTS | PHRASES,
    drop_threshold=SIZES,
)
def test_classifier_never_raises_and_always_answers_a_known_kind(
    status, message, body, headers, request_bytes, transport, error_type, drop_threshold
):
    failure = classify_fields(
        status,
        message,
        body,
        headers,
        request_bytes,
        transport=transport,
        error_type=error_type,
        drop_threshold=drop_threshold,
    )
    _assert_failure(failure)


@fuzz(examples=400)
@given(
    status=st.none() | st.integers(100, 599),
    message=st.text() | PHRASES,
    body=st.none() | st.text() | PHRASES,
    headers=st.dictionaries(HEADER_NAMES, HEADER_VALUES, max_size=4),
    request_bytes=st.none() | COUNTS,
    transport=st.none() | st.sampled_from(["connection", "timeout", "stream-error", "html-200"]),
    error_type=st.none() | IDENT,
)
def test_classifier_reads_every_well_typed_error(
    status, message, body, headers, request_bytes, transport, error_type
):
    """Well-typed fields are always read: the catch-all `classifier error` fallback is never needed."""
    failure = classify_fields(
        status, message, body, headers, request_bytes, transport=transport, error_type=error_type
    )
    _assert_failure(failure)
    assert not any(e.startswith("classifier error") for e in failure.evidence), failure.evidence
    # And through the exception path the engine uses, with the same facts on a ProviderError:
    error = ProviderError(
        message,
        provider="anthropic",
        status=status,
        headers=headers,
        body=body,
        request_bytes=request_bytes,
        error_type=error_type,
        transport=transport,
    )
    again = classify(error)
    _assert_failure(again)
    assert not any(e.startswith("classifier error") for e in again.evidence), again.evidence


# == recall keys =====================================================================================

HEX16 = st.from_regex(r"[0-9a-f]{16}", fullmatch=True)


@fuzz(examples=400)
@given(
    st.one_of(
        st.text(), st.text(alphabet=st.sampled_from(list("0123456789abcdefABCDEF<>:ccr@ \n"))), st.none()
    )
)
def test_recall_key_parser_never_raises_and_returns_keys(text):
    keys = parse_recall_keys(text)
    assert isinstance(keys, list) and len(keys) == len(set(keys))
    for key in keys:
        assert len(key) == 16 and all(c in "0123456789abcdef" for c in key), key


@fuzz(examples=400)
@given(before=st.text(), key=HEX16, after=st.text())
def test_a_marker_in_any_prose_is_found(before, key, after):
    text = f"{before}{marker(key)}{after}"
    assert key in parse_recall_keys(text)
    assert key in markers_in(text)


@fuzz()
@given(st.text(min_size=1))
def test_archive_keys_of_any_content_are_what_the_parser_reads(content):
    key = archive_key(content)
    assert parse_recall_keys(f"@recall <<ccr:{key}>> please") == [key]
    assert parse_recall_keys(f"CCR:{key.upper()}") == [key]


# == SSE streams: Anthropic and OpenAI =================================================================

ANTHROPIC_STOPS = st.sampled_from(
    ["end_turn", "tool_use", "max_tokens", "stop_sequence", "refusal", "pause_turn", "something_new"]
)
OPENAI_STOPS = st.sampled_from(["stop", "length", "tool_calls", "content_filter", "function_call", "weird"])


def _pieces(draw, text: str) -> list[str]:
    cuts = sorted(draw(st.lists(st.integers(0, len(text)), max_size=3)))
    bounds = [0, *cuts, len(text)]
    return [text[a:b] for a, b in zip(bounds, bounds[1:], strict=False) if b > a]


ARGUMENT_TEXT = st.one_of(
    st.dictionaries(IDENT, JSON_LEAVES, max_size=3).map(json.dumps),
    st.text(max_size=20),
    st.just(""),
    st.just("[1, 2]"),
    st.just('{"path": "a.txt"'),
)


@st.composite
def anthropic_events(draw) -> list[dict[str, Any]]:
    """A Messages-API event sequence: well formed, then malformed (dropped, reordered, stray events)."""
    events: list[dict[str, Any]] = [
        {
            "type": "message_start",
            "message": {
                "id": "msg_fuzz",
                "type": "message",
                "role": "assistant",
                "content": [],
                "model": "claude-fuzz",
                "usage": {
                    "input_tokens": draw(COUNTS),
                    "output_tokens": 1,
                    "cache_read_input_tokens": draw(COUNTS),
                    "cache_creation_input_tokens": draw(COUNTS),
                },
            },
        }
    ]
    if draw(st.booleans()):
        events.append({"type": "ping"})
    for index in range(draw(st.integers(0, 3))):
        if draw(st.booleans()):
            events.append(
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {"type": "text", "text": draw(SHORT_TEXT)},
                }
            )
            events += [
                {"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": t}}
                for t in draw(st.lists(SHORT_TEXT, max_size=3))
            ]
        else:
            events.append(
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {
                        "type": "tool_use",
                        "id": draw(IDENT),
                        "name": draw(IDENT),
                        "input": {},
                    },
                }
            )
            events += [
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "input_json_delta", "partial_json": p},
                }
                for p in _pieces(draw, draw(ARGUMENT_TEXT))
            ]
        events.append({"type": "content_block_stop", "index": index})
    events.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": draw(ANTHROPIC_STOPS), "stop_sequence": None},
            "usage": {"output_tokens": draw(COUNTS)},
        }
    )
    events.append({"type": "message_stop"})
    strays = st.sampled_from(
        [
            {"type": "brand_new_event", "payload": {"x": 1}},
            {"type": "thinking_delta"},
            {"no_type": True},
            {
                "type": "content_block_start",
                "index": 9,
                "content_block": {"type": "server_tool_use", "id": "s"},
            },
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "thinking_delta", "thinking": "hm"},
            },
            {
                "type": "content_block_delta",
                "index": 7,
                "delta": {"type": "input_json_delta", "partial_json": "{"},
            },
            {"type": "content_block_stop", "index": 5},
            {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
            {"type": "error", "error": {"type": "api_error"}},
            {"type": "error"},
            {"type": "message_delta", "delta": {}},
            {"type": "content_block_delta"},
            {"type": "content_block_start"},
        ]
    )
    return _malform(draw, events, strays)


@st.composite
def openai_chunks(draw) -> list[dict[str, Any]]:
    """chat.completion.chunk objects: well formed, then malformed."""

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "id": "chatcmpl-fuzz",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "gpt-fuzz",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    chunks = [chunk({"role": "assistant", "content": ""})]
    chunks += [chunk({"content": t}) for t in draw(st.lists(SHORT_TEXT, max_size=4))]
    for index in range(draw(st.integers(0, 2))):
        chunks.append(
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": index,
                            "id": draw(IDENT),
                            "type": "function",
                            "function": {"name": draw(IDENT), "arguments": ""},
                        }
                    ]
                }
            )
        )
        chunks += [
            chunk({"tool_calls": [{"index": index, "function": {"arguments": p}}]})
            for p in _pieces(draw, draw(ARGUMENT_TEXT))
        ]
    chunks.append(chunk({}, draw(OPENAI_STOPS)))
    if draw(st.booleans()):
        chunks.append(
            {
                "id": "chatcmpl-fuzz",
                "object": "chat.completion.chunk",
                "choices": [],
                "usage": {
                    "prompt_tokens": draw(COUNTS),
                    "completion_tokens": draw(COUNTS),
                    "prompt_tokens_details": {"cached_tokens": draw(COUNTS)},
                },
            }
        )
    strays = st.sampled_from(
        [
            {"choices": [{"index": 1, "delta": {"content": "other choice"}}]},
            {"choices": []},
            {},
            {"object": "chat.completion.chunk"},
            {"choices": [{"delta": {}}]},
            {"choices": [{"index": 0}]},
            {
                "choices": [
                    {"index": 0, "delta": {"tool_calls": [{"index": 5, "function": {"arguments": "{"}}]}}
                ]
            },
            {"choices": [{"index": 0, "delta": {"tool_calls": [{}]}}]},
            {"choices": [{"index": 0, "delta": {"refusal": "no"}}]},
            {"error": {"message": "The server had an error", "type": "server_error"}},
            {"error": {"message": "context_length_exceeded", "code": "context_length_exceeded"}},
            {"usage": None, "choices": None},
        ]
    )
    return _malform(draw, chunks, strays)


def _drop_a_field(draw, value: Any) -> Any:
    """A copy of `value` with one key removed somewhere inside (if there is one)."""
    paths: list[tuple[Any, ...]] = []

    def walk(node: Any, path: tuple[Any, ...]) -> None:
        if isinstance(node, dict):
            for key, child in node.items():
                paths.append((*path, key))
                walk(child, (*path, key))
        elif isinstance(node, list):
            for i, child in enumerate(node):
                walk(child, (*path, i))

    walk(value, ())
    if not paths:
        return value
    target = draw(st.sampled_from(paths))
    copy = json.loads(json.dumps(value))
    node = copy
    for step in target[:-1]:
        node = node[step]
    del node[target[-1]]
    return copy


def _malform(draw, events: list[dict[str, Any]], strays) -> list[dict[str, Any]]:
    operations = draw(st.lists(st.sampled_from(["drop", "field", "stray", "duplicate", "swap"]), max_size=4))
    for operation in operations:
        if operation == "stray" or not events:
            events.insert(draw(st.integers(0, len(events))), draw(strays))
            continue
        at = draw(st.integers(0, len(events) - 1))
        if operation == "drop":
            del events[at]
        elif operation == "field":
            events[at] = _drop_a_field(draw, events[at])
        elif operation == "duplicate":
            events.insert(at, events[at])
        elif len(events) > 1:
            other = draw(st.integers(0, len(events) - 1))
            events[at], events[other] = events[other], events[at]
    return events


@st.composite
def sse_text(draw, events: list[dict[str, Any]], *, named: bool, done: bool = False) -> str:
    """Events as SSE text, with some frames damaged: bad or cut JSON, comments, missing names, CRLF."""
    frames: list[str] = []
    for event in events:
        data = json.dumps(event, ensure_ascii=draw(st.booleans()))
        name = str(event.get("type", "message")) if named else None
        damage = draw(
            st.sampled_from(
                ["none"] * 8 + ["bad_json", "cut_json", "comment", "no_name", "split", "crlf", "junk_line"]
            )
        )
        if damage == "bad_json":
            data = data.replace("{", "{{", 1)
        elif damage == "cut_json":
            data = data[: draw(st.integers(0, max(0, len(data) - 1)))]
        elif damage == "no_name":
            name = None
        head = f"event: {name}\n" if name else ""
        if damage == "split" and len(data) > 2:
            at = draw(st.integers(1, len(data) - 1))
            frame = f"{head}data: {data[:at]}\ndata: {data[at:]}\n\n"
        else:
            frame = f"{head}data: {data}\n\n"
        if damage == "comment":
            frame = ": keep-alive\n" + frame
        elif damage == "crlf":
            frame = frame.replace("\n", "\r\n")
        elif damage == "junk_line":
            frame = (
                draw(st.sampled_from(["retry: 100\n", "id: 7\n", "nonsense without colon\n", "data\n"]))
                + frame
            )
        frames.append(frame)
    if done:
        frames.append("data: [DONE]\n\n")
    text = "".join(frames)
    if draw(st.integers(0, 5)) == 0:  # truncated stream
        text = text[: draw(st.integers(0, len(text)))]
    return text


def assert_clean_or_provider_error(parse: Callable[[], list[Any]]) -> None:
    """What a stream parser must do with anything: clean events, or a ProviderError — nothing else."""
    try:
        events = parse()
    except ProviderError:
        return
    check_clean(events)


def fed(parser, items: list[Any]) -> Callable[[], list[Any]]:
    """Feed every item to `parser`, then finish it: what the adapter does with one response."""

    def parse() -> list[Any]:
        out: list[Any] = []
        for item in items:
            out += parser.feed(item)
        return out + parser.finish()

    return parse


@fuzz(examples=300)
@given(st.text() | st.text(alphabet=st.sampled_from(list('event:data \n\r:{}"[]DONE'))))
def test_sse_splitter_never_raises(text):
    pairs = parse_sse_text(text)
    assert all(isinstance(name, str | None) and isinstance(data, str) for name, data in pairs)


def _anthropic_from_body(text: str) -> list[Any]:
    provider = AnthropicProvider.__new__(AnthropicProvider)
    provider.kind = "anthropic"
    exchange = Exchange(status=200)
    return provider._from_body(text, "text/plain", AnthropicEvents("anthropic", exchange), exchange)


def _openai_from_body(text: str) -> list[Any]:
    provider = OpenAIProvider.__new__(OpenAIProvider)
    provider.kind = "openai"
    exchange = Exchange(status=200)
    return provider._from_body(text, "text/plain", OpenAIEvents("openai", exchange), exchange)


@fuzz(examples=250)
@given(st.data())
def test_anthropic_stream_text_parses_to_clean_events_or_provider_error(data):
    """The text path (`_from_body`: SSE that arrived with a wrong content type) on damaged streams."""
    text = data.draw(sse_text(data.draw(anthropic_events()), named=data.draw(st.booleans())))
    assert_clean_or_provider_error(lambda: _anthropic_from_body(text))


@fuzz(examples=250)
@given(st.data())
def test_openai_stream_text_parses_to_clean_events_or_provider_error(data):
    text = data.draw(sse_text(data.draw(openai_chunks()), named=False, done=data.draw(st.booleans())))
    assert_clean_or_provider_error(lambda: _openai_from_body(text))


def _retype_a_leaf(draw, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One field somewhere given a value of another JSON type (a string where a number was, …)."""
    paths: list[tuple[Any, ...]] = []

    def walk(node: Any, path: tuple[Any, ...]) -> None:
        if isinstance(node, dict):
            for key, child in node.items():
                walk(child, (*path, key))
        elif isinstance(node, list):
            for i, child in enumerate(node):
                walk(child, (*path, i))
        elif path:
            paths.append(path)

    walk(events, ())
    if not paths:
        return events
    target = draw(st.sampled_from(paths))
    copy = json.loads(json.dumps(events))
    node = copy
    for step in target[:-1]:
        node = node[step]
    node[target[-1]] = draw(JSON_VALUES)
    return copy


@fuzz()
@given(st.data())
def test_anthropic_parser_on_wrongly_typed_fields(data):
    events = _retype_a_leaf(data.draw, data.draw(anthropic_events()))
    assert_clean_or_provider_error(fed(AnthropicEvents("anthropic", Exchange(status=200)), events))


@fuzz()
@given(st.data())
def test_openai_parser_on_wrongly_typed_fields(data):
    chunks = _retype_a_leaf(data.draw, data.draw(openai_chunks()))
    assert_clean_or_provider_error(fed(OpenAIEvents("openai", Exchange(status=200)), chunks))


# -- through the real SDKs, from a local server -------------------------------------------------------

WIRE_SETTINGS = Settings(request_timeout=10.0, connect_timeout=5.0)


class Wire:
    """A scripted local server, one event loop, and one provider of each kind pointed at the server."""

    def __init__(self) -> None:
        self.server = ScriptedServer().start()
        self.loop = asyncio.new_event_loop()
        self._providers: dict[str, Any] = {}

    def provider(self, kind: str):
        if kind not in self._providers:
            make = {"anthropic": make_anthropic, "openai": make_openai, "bedrock": make_bedrock}[kind]
            self._providers[kind] = make(self.server, WIRE_SETTINGS)
        return self._providers[kind]

    def outcome(self, kind: str, action) -> list[Any] | ProviderError:
        """Serve `action` to one streamed request; what the provider made of it."""
        provider = self.provider(kind)
        self.server.push(action)
        request = provider.build(simple_view(), SYSTEM, (), max_tokens=64)

        async def drain() -> list[Any]:
            return [event async for event in provider.stream(request)]

        try:
            return self.loop.run_until_complete(drain())
        except ProviderError as error:
            return error

    def close(self) -> None:
        for provider in self._providers.values():
            self.loop.run_until_complete(provider.aclose())
        self.loop.close()
        self.server.stop()


@pytest.fixture(scope="module")
def wire():
    connection = Wire()
    try:
        yield connection
    finally:
        connection.close()


def _chunked(draw, text: bytes) -> list[bytes]:
    return [piece for piece in _pieces(draw, text)] or [b""]  # type: ignore[arg-type]


@fuzz(examples=40)
@given(st.data())
def test_anthropic_sdk_stream_gives_clean_events_or_provider_error(wire, data):
    text = data.draw(sse_text(data.draw(anthropic_events()), named=data.draw(st.booleans()))).encode()
    action = Stream(200, SSE, _chunked(data.draw, text), reset=data.draw(st.integers(0, 9)) == 0)
    outcome = wire.outcome("anthropic", action)
    if not isinstance(outcome, ProviderError):
        check_clean(outcome)


@fuzz(examples=40)
@given(st.data())
def test_openai_sdk_stream_gives_clean_events_or_provider_error(wire, data):
    text = data.draw(
        sse_text(data.draw(openai_chunks()), named=False, done=data.draw(st.booleans()))
    ).encode()
    action = Stream(200, SSE, _chunked(data.draw, text), reset=data.draw(st.integers(0, 9)) == 0)
    outcome = wire.outcome("openai", action)
    if not isinstance(outcome, ProviderError):
        check_clean(outcome)


def _sse(events: list[dict[str, Any]], *, named: bool = True) -> list[bytes]:
    return [
        ((f"event: {e['type']}\n" if named else "") + f"data: {json.dumps(e)}\n\n").encode() for e in events
    ]


_ANTHROPIC_START = {
    "type": "message_start",
    "message": {
        "id": "m",
        "type": "message",
        "role": "assistant",
        "content": [],
        "model": "c",
        "usage": {"input_tokens": 1},
    },
}
_ANTHROPIC_TOOL_WITH_NUMBER_JSON = [
    _ANTHROPIC_START,
    {
        "type": "content_block_start",
        "index": 0,
        "content_block": {"type": "tool_use", "id": "t1", "name": "x", "input": {}},
    },
    {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": 5}},
    {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 1}},
    {"type": "message_stop"},
]


def test_regression_anthropic_numeric_partial_json_escapes_as_type_error(wire):
    outcome = wire.outcome("anthropic", Stream(200, SSE, _sse(_ANTHROPIC_TOOL_WITH_NUMBER_JSON)))
    assert isinstance(outcome, ProviderError) or not problems_of(outcome)


def test_regression_anthropic_numeric_text_gives_an_unclean_chunk(wire):
    events = [
        _ANTHROPIC_START,
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": 123}},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 1}},
        {"type": "message_stop"},
    ]
    outcome = wire.outcome("anthropic", Stream(200, SSE, _sse(events)))
    assert isinstance(outcome, ProviderError) or not problems_of(outcome), problems_of(outcome)


def test_regression_anthropic_text_path_list_index_escapes_as_type_error(wire):
    events = [
        _ANTHROPIC_START,
        {
            "type": "content_block_start",
            "index": [0],
            "content_block": {"type": "tool_use", "id": "t", "name": "x"},
        },
        {"type": "message_stop"},
    ]
    outcome = wire.outcome("anthropic", Stream(200, {"content-type": "text/plain"}, _sse(events)))
    assert isinstance(outcome, ProviderError) or not problems_of(outcome), outcome


def _openai_chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "c",
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def test_regression_openai_numeric_arguments_escape_as_type_error(wire):
    chunks = [
        _openai_chunk(
            {
                "tool_calls": [
                    {"index": 0, "id": "c1", "type": "function", "function": {"name": "f", "arguments": 5}}
                ]
            }
        ),
        _openai_chunk({}, "tool_calls"),
    ]
    frames = _sse(chunks, named=False) + [b"data: [DONE]\n\n"]
    outcome = wire.outcome("openai", Stream(200, SSE, frames))
    assert isinstance(outcome, ProviderError) or not problems_of(outcome), outcome


def test_regression_openai_string_usage_gives_an_unclean_chunk(wire):
    chunks = [
        _openai_chunk({"content": "hi"}, "stop"),
        {
            "id": "c",
            "object": "chat.completion.chunk",
            "choices": [],
            "usage": {"prompt_tokens": "x", "completion_tokens": 1},
        },
    ]
    frames = _sse(chunks, named=False) + [b"data: [DONE]\n\n"]
    outcome = wire.outcome("openai", Stream(200, SSE, frames))
    assert isinstance(outcome, ProviderError) or not problems_of(outcome), problems_of(outcome)


# == Bedrock: event-stream frames and ConverseStream events ===========================================


def _frame(header_bytes: bytes, payload: bytes) -> bytes:
    """A frame with correct lengths and CRCs around arbitrary header bytes."""
    total = 12 + len(header_bytes) + len(payload) + 4
    prelude = struct.pack(">II", total, len(header_bytes))
    prelude += struct.pack(">I", zlib.crc32(prelude) & 0xFFFFFFFF)
    message = prelude + header_bytes + payload
    return message + struct.pack(">I", zlib.crc32(message) & 0xFFFFFFFF)


GOOD_FRAMES = st.lists(
    st.tuples(
        st.sampled_from(["messageStart", "contentBlockDelta", "metadata", "x"]),
        st.dictionaries(IDENT, JSON_LEAVES, max_size=2),
    ),
    min_size=1,
    max_size=3,
).map(lambda items: b"".join(eventstream.event(n, p) for n, p in items))


@st.composite
def damaged_frames(draw) -> bytes:
    data = bytearray(draw(GOOD_FRAMES))
    for _ in range(draw(st.integers(1, 3))):
        operation = draw(st.sampled_from(["flip", "cut", "insert"]))
        if operation == "flip" and data:
            at = draw(st.integers(0, len(data) - 1))
            data[at] ^= draw(st.integers(1, 255))
        elif operation == "cut":
            del data[draw(st.integers(0, len(data))) :]
        else:
            at = draw(st.integers(0, len(data)))
            data[at:at] = draw(st.binary(min_size=1, max_size=4))
    return bytes(data)


def _decode(data: bytes) -> list[tuple[dict[str, str], bytes]] | EventStreamError | BaseException:
    try:
        return list(decode_frames(data))
    except EventStreamError as exc:
        return exc
    except Exception as exc:  # judged by the caller
        return exc


@fuzz(examples=400)
@given(
    st.one_of(
        st.binary(max_size=64),
        damaged_frames(),
        GOOD_FRAMES,
        st.tuples(st.binary(max_size=24), st.binary(max_size=24)).map(lambda hp: _frame(*hp)),
    )
)
def test_event_stream_decoder_raises_only_its_error(data):
    outcome = _decode(data)
    assert not isinstance(outcome, BaseException) or isinstance(outcome, EventStreamError), repr(outcome)


@fuzz()
@given(GOOD_FRAMES)
def test_event_stream_decoder_reads_what_the_lab_writes(data):
    frames = _decode(data)
    assert isinstance(frames, list) and frames
    for headers, payload in frames:
        assert headers[":message-type"] == "event" and isinstance(json.loads(payload), dict)


def test_regression_event_stream_header_that_is_not_utf8():
    outcome = _decode(_frame(b"\x01\xff\x07\x00\x01a", b"{}"))
    assert isinstance(outcome, EventStreamError), repr(outcome)


def test_regression_event_stream_header_overrunning_its_section():
    outcome = _decode(_frame(b"\x01a\x07\x00\x05ab", b'{"x": 1}'))
    assert isinstance(outcome, EventStreamError), repr(outcome)


@st.composite
def bedrock_events(draw) -> list[dict[str, Any]]:
    """ConverseStream events as botocore hands them over: well formed, then malformed."""
    events: list[dict[str, Any]] = [{"messageStart": {"role": "assistant"}}]
    for index in range(draw(st.integers(0, 3))):
        if draw(st.booleans()):
            events += [
                {"contentBlockDelta": {"contentBlockIndex": index, "delta": {"text": t}}}
                for t in draw(st.lists(SHORT_TEXT, min_size=1, max_size=3))
            ]
        else:
            events.append(
                {
                    "contentBlockStart": {
                        "contentBlockIndex": index,
                        "start": {"toolUse": {"toolUseId": draw(IDENT), "name": draw(IDENT)}},
                    }
                }
            )
            events += [
                {"contentBlockDelta": {"contentBlockIndex": index, "delta": {"toolUse": {"input": p}}}}
                for p in _pieces(draw, draw(ARGUMENT_TEXT))
            ]
        events.append({"contentBlockStop": {"contentBlockIndex": index}})
    events.append(
        {
            "messageStop": {
                "stopReason": draw(
                    st.sampled_from(
                        ["end_turn", "tool_use", "max_tokens", "guardrail_intervened", "new_reason"]
                    )
                )
            }
        }
    )
    events.append(
        {
            "metadata": {
                "usage": {
                    "inputTokens": draw(COUNTS),
                    "outputTokens": draw(COUNTS),
                    "totalTokens": draw(COUNTS),
                },
                "metrics": {"latencyMs": 5},
            }
        }
    )
    strays = st.sampled_from(
        [
            {"brandNewEvent": {"x": 1}},
            {"contentBlockStop": {"contentBlockIndex": 8}},
            {"contentBlockDelta": {"contentBlockIndex": 6, "delta": {"toolUse": {"input": "{"}}}},
            {"contentBlockDelta": {"delta": {"reasoningContent": {"text": "hm"}}}},
            {"contentBlockStart": {"start": {}}},
            {"messageStop": {}},
            {"metadata": {}},
            {},
        ]
    )
    return _malform(draw, events, strays)


@fuzz(examples=250)
@given(bedrock_events())
def test_bedrock_parser_gives_clean_events_or_provider_error(events):
    assert_clean_or_provider_error(fed(BedrockEvents("bedrock", Exchange(status=200)), events))


@fuzz()
@given(st.data())
def test_bedrock_parser_on_wrongly_typed_fields(data):
    events = _retype_a_leaf(data.draw, data.draw(bedrock_events()))
    assert_clean_or_provider_error(fed(BedrockEvents("bedrock", Exchange(status=200)), events))


@pytest.fixture
def aws(monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAFAKEFAKEFAKEFAKE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "fake-secret-for-fuzz")


def _bedrock_frames(draw, events: list[dict[str, Any]]) -> list[bytes]:
    frames = []
    for event in events:
        if not event:
            continue
        name, payload = next(iter(event.items()))
        frames.append(eventstream.event(name, payload if isinstance(payload, dict) else {"value": payload}))
    data = b"".join(frames)
    if draw(st.integers(0, 5)) == 0 and data:  # a damaged byte or a cut stream
        data = bytearray(data)
        at = draw(st.integers(0, len(data) - 1))
        if draw(st.booleans()):
            data[at] ^= 0x5A
        else:
            del data[at:]
        data = bytes(data)
    return _chunked(draw, data)


@fuzz(examples=25)
@given(st.data())
def test_bedrock_sdk_stream_gives_clean_events_or_provider_error(wire, aws, data):
    frames = _bedrock_frames(data.draw, data.draw(bedrock_events()))
    action = Stream(200, EVENTSTREAM, frames, reset=data.draw(st.integers(0, 9)) == 0)
    outcome = wire.outcome("bedrock", action)
    if not isinstance(outcome, ProviderError):
        check_clean(outcome)


def test_regression_bedrock_numeric_tool_input_escapes_as_type_error(wire, aws):
    frames = [
        eventstream.event("messageStart", {"role": "assistant"}),
        eventstream.event(
            "contentBlockStart",
            {"contentBlockIndex": 0, "start": {"toolUse": {"toolUseId": "t1", "name": "x"}}},
        ),
        eventstream.event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"toolUse": {"input": 5}}}),
        eventstream.event("messageStop", {"stopReason": "tool_use"}),
    ]
    outcome = wire.outcome("bedrock", Stream(200, EVENTSTREAM, frames))
    assert isinstance(outcome, ProviderError) or not problems_of(outcome), outcome


# == what a malformed stream does to a turn ============================================================


async def test_regression_a_malformed_stream_crashes_the_turn(tmp_path):
    from app.engine.session import Session
    from app.engine.turn import Engine
    from app.state import State
    from app.store import Store
    from tests.reliability.conftest import RecordedSleep

    server = ScriptedServer().start()
    try:
        events = [
            _ANTHROPIC_START,
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": 123}},
            {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 1}},
            {"type": "message_stop"},
        ]
        server.push(Stream(200, SSE, _sse(events)))
        provider = make_anthropic(server, WIRE_SETTINGS)
        session = Session.create(Store(), route="claude", provider="anthropic", model="claude-sonnet-5")
        engine = Engine(
            WIRE_SETTINGS,
            session,
            provider.route,
            provider,
            state=State(),
            sleep=RecordedSleep(),
            workspace=tmp_path,
            tools=(),
        )

        result = await engine.submit("hello")

        assert result.outcome in ("failed", "partial") and result.error
        assert all(r["outcome"] != "sending" for r in session.store.list_requests(session.id))
    finally:
        server.stop()
