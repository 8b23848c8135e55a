"""Predicted request bytes agree with what crossed the wire, and prediction is incremental.

Every view is built, sent to the scripted server and compared three ways: `predicted_bytes`
from `build()`, `actual_bytes` recorded from the SDK's transport, and the bytes the server
really read. The worst predicted/actual ratio per provider is printed in the summary.
"""

from __future__ import annotations

import base64
import json
import random

import pytest

from app.model.messages import Image, Message, Text, ToolCall, ToolResult
from app.providers.base import dumps, string_len
from app.providers.wire import LONG_STRING, compact_len

from . import frames as F
from .common import BYTE_RATIOS, READ_TOOL, SYSTEM, collect, image_message, user
from .conftest import make_anthropic, make_bedrock, make_openai
from .scripted_server import Stream

UNICODE = (
    "Olá 😀 👩‍👩‍👧 🇵🇹 café naïve — 你好，世界 日本語のテキスト 한국어 "
    "שלום עולם \u200fمرحبا بالعالم\u200f Ελληνικά русский ǅ e\u0301 "
    'quotes " and \\ backslashes \t tabs \x00\x1f controls \u2028\u2029 separators ✨'
)
SCHEMA_TOOLS = [READ_TOOL]


def _random_image(seed: int, size: int) -> Image:
    data = random.Random(seed).randbytes(size)
    return Image("image/jpeg" if seed % 2 else "image/png", base64.b64encode(data).decode())


def _big_result(chars: int) -> str:
    line = "│ 行 %06d: def handler(request): return {'ok': True, 'note': 'ünïcødé ✓'}\n"
    out: list[str] = []
    total, n = 0, 0
    while total < chars:
        piece = line % n
        out.append(piece)
        total += len(piece)
        n += 1
    return "".join(out)


def views() -> dict[str, list[Message]]:
    big = _big_result(1_100_000)
    assert len(big.encode("utf-8")) >= 1_000_000
    calls = [
        ToolCall(
            "toolu_01",
            "read_file",
            {"path": "src/ünï.py", "note": UNICODE[:40], "n": 3.5, "flags": [True, None]},
        )
    ]
    return {
        "unicode": [
            user(UNICODE),
            Message.create("assistant", UNICODE[::-1]),
            user("و" * 5000 + "🙂" * 3000),
        ],
        "images": [
            image_message(),
            Message.create("assistant", "I see a pixel."),
            Message.create("user", [Text("and these?"), _random_image(1, 150_000), _random_image(2, 90_000)]),
        ],
        "tools-large-result": [
            user("read it"),
            Message.create("assistant", [Text("Reading."), *calls]),
            Message.create("tool", [ToolResult("toolu_01", big)]),
            Message.create("assistant", [ToolCall("toolu_02", "read_file", {"path": "missing"})]),
            Message.create("tool", [ToolResult("toolu_02", "not found: missing", is_error=True)]),
            user("thanks"),
        ],
        "mixed-session": _session(),
    }


def _session() -> list[Message]:
    rng = random.Random(7)
    out: list[Message] = [Message.create("system", "Notice: the session was resumed. 📌")]
    for turn in range(20):
        out.append(user(f"turn {turn}: " + rng.choice([UNICODE, "plain ascii text " * 40, "∑ λ → ∞ " * 30])))
        call_id = f"toolu_{turn:04d}"
        out.append(
            Message.create(
                "assistant",
                [Text(f"Looking ({turn})…"), ToolCall(call_id, "read_file", {"path": f"f{turn}.txt"})],
            )
        )
        out.append(
            Message.create(
                "tool", [ToolResult(call_id, _big_result(rng.randint(10, 40_000)), is_error=turn % 7 == 0)]
            )
        )
        out.append(Message.create("assistant", f"Done with {turn}. " + "答" * rng.randint(0, 300)))
    return out


MAKERS = {"anthropic": make_anthropic, "openai": make_openai, "bedrock": make_bedrock}


def test_dumps_serializes_as_the_sdks_do():
    """`dumps` (one C encoder made once) gives json.dumps's bytes with the SDKs' options, and its errors."""

    def sdk(obj):
        return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")

    values = [
        UNICODE,
        {
            "type": "text",
            "text": UNICODE,
            "n": [1, 2.5, -0.0, 1e300, True, None],
            "nested": {"a": ({"b": ()},)},
        },
        {7: "int key", 2.5: "float key", True: "bool key", None: "none key"},
        [],
        {},
        "",
        12,
    ]
    for value in values:
        assert dumps(value) == sdk(value)
    for bad in (float("nan"), {"x": float("inf")}):
        with pytest.raises(ValueError, match="Out of range float"):
            dumps(bad)
    with pytest.raises(TypeError, match="Object of type set is not JSON serializable"):
        dumps({"tools": {1, 2}})
    with pytest.raises(UnicodeEncodeError):  # a lone surrogate cannot be sent, as with json.dumps
        dumps("bad byte \udcff")


def test_long_strings_are_counted_to_the_byte_dumps_writes():
    """`compact_len` counts a block's long strings (`string_len`: UTF-8 bytes and escapes, no escaped copy)
    — the bytes `dumps` writes for every kind of character, and its error for a lone surrogate."""
    escaped = '"\\\b\f\n\r\t' + "".join(map(chr, range(32)))  # two-character and \u00XX escapes
    kept = "\x7f\u2028é✓🙋 plain/ascii"  # written as they are (raw UTF-8)
    for text in ("", "a", escaped, kept, UNICODE):
        assert string_len(text) == len(dumps(text))
    long = (escaped + kept + UNICODE) * (LONG_STRING // 20)
    assert len(long) >= LONG_STRING
    for block in (
        {"type": "text", "text": long},
        {"type": "tool_result", "tool_use_id": "toolu_01", "content": long, "is_error": True},
        {"role": "tool", "content": long, "n": [1, 2.5, None], "name": "x" * LONG_STRING},
        {"type": "image", "source": {"type": "base64", "data": long}},  # nested: written, not counted
        [long, long],
        long,
    ):
        assert compact_len(block) == len(dumps(block))
    with pytest.raises(UnicodeEncodeError):
        compact_len({"type": "text", "text": "x" * LONG_STRING + "\udcff"})


def test_botocore_len_counts_what_json_dumps_writes_for_botocore():
    """`botocore_len` (one C encoder made once) counts json.dumps's bytes with botocore's options — ASCII escapes,
    `", "` and `": "`, blobs as base64, NaN allowed — and raises its errors."""
    from app.providers.bedrock import _blob, botocore_len

    values = [
        UNICODE,
        {
            "text": UNICODE,
            "n": [1, 2.5, -0.0, 1e300, float("nan"), True, None],
            "nested": {"a": ({"b": ()},)},
        },
        {"image": {"format": "png", "source": {"bytes": b"\x89PNG\r\n\x1a\n" * 100}}},
        {7: "int key", 2.5: "float key", True: "bool key", None: "none key"},
        "lone surrogate \udcff and 🙋",
        [],
        {},
        12,
    ]
    for value in values:
        assert botocore_len(value) == len(json.dumps(value, default=_blob))
    with pytest.raises(TypeError, match="not JSON serializable: set"):
        botocore_len({"tools": {1, 2}})


@pytest.mark.parametrize("view_name", ["unicode", "images", "tools-large-result", "mixed-session"])
@pytest.mark.parametrize("provider_name", list(MAKERS))
async def test_predicted_bytes_match_the_wire(server, settings, monkeypatch, provider_name, view_name):
    if provider_name == "bedrock":
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAFAKEFAKEFAKEFAKE")
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "FAKE-secret-for-tests")
    provider = MAKERS[provider_name](server, settings)
    view = views()[view_name]
    request = provider.build(view, SYSTEM + " ✨", SCHEMA_TOOLS, max_tokens=4096)
    reply = (
        F.bedrock_text(["ok"])
        if provider_name == "bedrock"
        else (F.openai_text(["ok"]) if provider_name == "openai" else F.anthropic_text(["ok"]))
    )
    server.push(Stream(200, F.EVENTSTREAM if provider_name == "bedrock" else F.SSE, reply))

    await collect(provider, request)

    received = server.last
    assert received.complete
    assert request.actual_bytes == received.body_bytes == int(received.headers["content-length"])
    ratio = request.predicted_bytes / request.actual_bytes
    BYTE_RATIOS.setdefault(provider_name, []).append(ratio)
    assert abs(ratio - 1) <= 0.01
    assert request.predicted_bytes == request.actual_bytes  # in fact: exact
    if provider_name != "bedrock":
        assert received.body == dumps(request.body)
    else:
        assert json.loads(received.body)["messages"]  # botocore's own serialization, parsed back


# -- incremental --------------------------------------------------------------------------------

MEASURE = {
    "anthropic": ("app.providers.anthropic", "compact_len"),
    "openai": ("app.providers.openai", "compact_len"),
    "bedrock": ("app.providers.bedrock", "botocore_len"),
}


@pytest.mark.parametrize("provider_name", list(MAKERS))
def test_prediction_is_incremental(server, settings, monkeypatch, provider_name):
    import importlib

    provider = MAKERS[provider_name](server, settings)
    chunk = "incremental ✓ " * 7_000  # ~100 KB per message, 10 MB in all
    view = [Message.create("user" if i % 2 == 0 else "assistant", f"{i}: {chunk}") for i in range(100)]
    first = provider.build(view, SYSTEM, SCHEMA_TOOLS, max_tokens=1000)
    assert first.predicted_bytes > 10_000_000

    module_name, function_name = MEASURE[provider_name]
    module = importlib.import_module(module_name)
    original = getattr(module, function_name)
    measured: list[int] = []

    def counting(obj):
        size = original(obj)
        measured.append(size)
        return size

    monkeypatch.setattr(module, function_name, counting)
    before = provider.serialized_messages
    new = user("one more question 🙋")
    second = provider.build([*view, new], SYSTEM, SCHEMA_TOOLS, max_tokens=1000)

    assert provider.serialized_messages - before == 1  # only the new message was translated
    assert sum(measured) < 2_000  # the new message and the small envelope: nothing of the 10 MB
    assert second.predicted_bytes > first.predicted_bytes
    monkeypatch.setattr(module, function_name, original)
    if provider_name != "bedrock":
        assert second.predicted_bytes == len(dumps(second.body))


def test_cached_pieces_are_never_mutated_by_cache_marks(server, settings):
    """Cache marks move with the conversation; the per-message cache must not keep old ones."""
    provider = make_anthropic(server, settings)
    view = [
        user("a"),
        Message.create("assistant", "b"),
        user("c"),
        Message.create("assistant", "d"),
        user("e"),
    ]
    provider.build(view[:3], SYSTEM, [], max_tokens=10)
    later = provider.build(view, SYSTEM, [], max_tokens=10)
    assert later.predicted_bytes == len(dumps(later.body))
    assert "cache_control" not in later.body["messages"][0]["content"][-1]
