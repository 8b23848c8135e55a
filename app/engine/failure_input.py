"""Reading a failure: raw fields or an SDK exception, normalised into the `Case` the rules read
(`app/engine/failure_case.py`: the record, which the vendor table reads too).

Nothing here raises on odd input: unreadable parts become empty text, unknown sizes None.
"""

from __future__ import annotations

import html
import json
import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

from app.engine.failure_case import Case, Target
from app.engine.failure_phrases import (
    AUTH_CLASSES,
    CONNECT_FAILURE_CLASSES,
    CONNECTION_DROP_CLASSES,
    DEFAULT_DROP_THRESHOLD,
    MAX_CAUSE_DEPTH,
    MAX_SCAN_CHARS,
    TIMEOUT_CLASSES,
)
from app.engine.failure_shapes import (
    BOTOCORE_CODE,
    CODE_FIELD,
    HTML_TAG,
    JSON_ERROR_IN_MESSAGE,
    RETRY_IN_TEXT,
    SDK_MODULES,
    STATUS_IN_MESSAGE,
)
from app.engine.failure_vendors import find_vendor
from app.engine.resets import SizeEvidence
from app.providers.base import ProviderError, parse_retry_after


# -- normalising input ------------------------------------------------------------------------------
def make_case(
    *,
    status: Any = None,
    message: Any = "",
    body: Any = None,
    headers: Any = None,
    request_bytes: Any = None,
    transport: Any = None,
    error_type: Any = None,
    drop_threshold: Any = DEFAULT_DROP_THRESHOLD,
    class_names: Iterable[str] = (),
    cause_names: Iterable[str] = (),
    cause_notes: Iterable[str] = (),
    cause_text: str = "",
    extra_codes: Iterable[str] = (),
    retry_after: Any = None,
    size_evidence: SizeEvidence | None = None,
    request_header_bytes: Any = None,
    provider: Any = None,
    target: Target | None = None,
    request_values: Any = None,
) -> Case:
    message_text = _as_text(message)
    body_text = _as_text(body)
    header_map = _as_headers(headers)
    threshold = _as_size(drop_threshold)
    case = Case(
        status=_as_status(status),
        status_note="",
        message=message_text,
        body=body_text,
        headers=header_map,
        request_bytes=_as_size(request_bytes),
        transport=_as_text(transport).strip().lower(),
        error_type=_as_text(error_type).strip(),
        drop_threshold=DEFAULT_DROP_THRESHOLD if threshold is None else threshold,
        class_names=tuple(class_names) or _class_hint(error_type),
        cause_names=tuple(cause_names),
        cause_notes=tuple(cause_notes),
        cause_text=_as_text(cause_text).lower()[:MAX_SCAN_CHARS],
        size_evidence=size_evidence if isinstance(size_evidence, SizeEvidence) else None,
        request_header_bytes=_as_size(request_header_bytes),
        provider=_as_text(provider).strip().lower(),
        target=target if isinstance(target, Target) else None,
        request_values=_as_size(request_values),
    )
    lowered_message = _scan_window(message_text).lower()
    if case.status is None:
        for pattern in STATUS_IN_MESSAGE:
            found = pattern.search(lowered_message)
            if found:
                case.status, case.status_note = int(found.group(1)), " (from the message)"
                break
    raw = _scan_window(message_text) + "\n" + _scan_window(body_text)
    case.html = bool(HTML_TAG.search(raw)) or "text/html" in header_map.get("content-type", "")
    case.text = re.sub(r"\s+", " ", html.unescape(raw).lower())
    case.json_envelope = _looks_like_json_error(body_text, lowered_message)
    case.codes = _error_codes(case, raw.lower(), extra_codes)
    case.gateway = _detect_gateway(case)
    case.retry_after = _as_seconds(retry_after)
    if case.retry_after is None:
        case.retry_after = _retry_after(case)
    return case


def _class_hint(error_type: Any) -> tuple[str, ...]:
    """An adapter may name the SDK class in `error_type` ("APITimeoutError"): read it as one."""
    name = _as_text(error_type).strip()
    known = TIMEOUT_CLASSES | CONNECTION_DROP_CLASSES | CONNECT_FAILURE_CLASSES | AUTH_CLASSES
    return (name,) if name.lower() in known else ()


def _as_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).decode("utf-8", errors="replace")
    if isinstance(value, Mapping | list | tuple):
        try:
            return json.dumps(value, ensure_ascii=False, default=str)
        except (TypeError, ValueError, RecursionError):
            pass
    try:
        return str(value)
    except Exception:  # a hostile __str__
        return f"<unprintable {type(value).__name__}>"


def _as_status(value: Any) -> int | None:
    number = _as_int(value)
    return number if number is not None and 100 <= number <= 999 else None


def _as_size(value: Any) -> int | None:
    number = _as_int(value)
    return number if number is not None and 0 <= number < 2**62 else None


def _as_int(value: Any) -> int | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value) if math.isfinite(value) and value.is_integer() else None
    if isinstance(value, str | bytes):
        text = value.decode("latin-1") if isinstance(value, bytes) else value
        text = text.strip()
        return int(text) if text.isascii() and text.isdigit() and len(text) < 20 else None
    return None


def _as_seconds(value: Any) -> float | None:
    try:
        seconds = float(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return seconds if math.isfinite(seconds) and seconds >= 0 else None


def _as_headers(value: Any) -> dict[str, str]:
    """Lower-case header names to string values, from a mapping, pairs, or junk (→ {})."""
    if value is None or isinstance(value, str | bytes):
        return {}
    items: Iterable[Any]
    try:
        if isinstance(value, Mapping) or callable(getattr(value, "items", None)):
            items = list(value.items())
        else:
            items = list(value)
    except Exception:
        return {}
    result: dict[str, str] = {}
    for item in items[:500]:
        try:
            key, val = item
        except (TypeError, ValueError):
            continue
        name = _as_text(key).strip().lower()
        if name:
            result[name] = _as_text(val).strip()
    return result


def _scan_window(text: str) -> str:
    if len(text) <= MAX_SCAN_CHARS:
        return text
    head = MAX_SCAN_CHARS * 3 // 4
    return text[:head] + "\n…\n" + text[-(MAX_SCAN_CHARS - head) :]


def _looks_like_json_error(body: str, lowered_message: str) -> bool:
    """True when the answer is an API's own JSON error, not a middlebox page."""
    stripped = body.strip()
    if stripped[:1] in ("{", "["):
        try:
            return isinstance(json.loads(stripped[:MAX_SCAN_CHARS]), dict | list)
        except (ValueError, RecursionError):
            return False
    return not stripped and bool(JSON_ERROR_IN_MESSAGE.search(lowered_message))


def _error_codes(case: Case, lowered_raw: str, extra: Iterable[str]) -> frozenset[str]:
    codes = {m.group(1) for m in CODE_FIELD.finditer(lowered_raw)}
    codes |= {m.group(1) for m in BOTOCORE_CODE.finditer(lowered_raw)}
    amzn = case.header("x-amzn-errortype")
    if amzn:
        codes.add(amzn.split(":", 1)[0].strip().lower())
    if case.error_type:
        codes.add(case.error_type.lower())
    codes |= {_as_text(code).strip().lower() for code in extra if code}
    codes.discard("")
    return frozenset(codes)


def _detect_gateway(case: Case) -> str | None:
    """The middlebox that answered, from its headers, cookies, link hosts and page (not from an API's JSON)."""
    mark = find_vendor(case)
    return mark.vendor.name if mark is not None else None


def _retry_after(case: Case) -> float | None:
    try:
        seconds = parse_retry_after(case.headers)
    except Exception:
        seconds = None
    if seconds is not None:
        return seconds
    found = RETRY_IN_TEXT.search(case.text)
    if found:
        value = float(found.group(1))
        return value / 1000 if found.group(2) == "ms" else value
    return None


# -- reading exceptions -----------------------------------------------------------------------------
def qualified_name(error: BaseException) -> str:
    cls = type(error)
    module = getattr(cls, "__module__", "") or ""
    return cls.__name__ if module == "builtins" else f"{module}.{cls.__name__}"


def _is_provider_origin(error: BaseException) -> bool:
    module = (getattr(type(error), "__module__", "") or "").lower()
    if module == "builtins":
        return isinstance(error, OSError)  # ConnectionResetError, TimeoutError, … not ValueError
    return any(module == root or module.startswith(root + ".") for root in SDK_MODULES)


def _cause_chain(error: BaseException) -> list[BaseException]:
    chain: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and len(chain) < MAX_CAUSE_DEPTH and all(current is not c for c in chain):
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain


def _class_names(error: BaseException) -> list[str]:
    skip = {"object", "BaseException", "Exception"}
    return [cls.__name__ for cls in type(error).__mro__ if cls.__name__ not in skip]


def parts_from_exception(error: BaseException) -> dict[str, Any] | None:
    """The fields the rules read, taken from a ProviderError or a raw SDK exception."""
    wrapper = error if isinstance(error, ProviderError) else None
    primary = wrapper.original if wrapper is not None and wrapper.original is not None else error
    if wrapper is None and not _is_provider_origin(error):
        return None
    chain = _cause_chain(primary)
    parts: dict[str, Any] = {
        "class_names": [] if primary is wrapper else _class_names(primary),  # error_type names the class
        "cause_names": [name for exc in chain[1:] for name in _class_names(exc)],
        "cause_notes": [
            f"cause {type(exc).__name__}: {clip(safe_str(exc), 100)}" for exc in chain[1:3] if safe_str(exc)
        ],
        "cause_text": "\n".join(f"{type(exc).__name__}: {safe_str(exc)}" for exc in chain[1:]),
    }
    botocore = _botocore_response(primary)
    message = safe_str(primary)
    if wrapper is not None and wrapper.message and wrapper.message not in message:
        message = f"{wrapper.message}\n{message}" if primary is not wrapper else wrapper.message
    parts["message"] = message
    parts["status"] = _first_present(
        getattr(wrapper, "status", None),
        _as_status(getattr(primary, "status_code", None)),
        _as_status(_dig(botocore, "ResponseMetadata", "HTTPStatusCode")),
        _as_status(_dig(botocore, "Error", "Code")),
    )
    parts["body"] = _first_present(getattr(wrapper, "body", None), _sdk_body(primary))
    parts["headers"] = (
        getattr(wrapper, "headers", None)
        or _sdk_headers(primary)
        or _dig(botocore, "ResponseMetadata", "HTTPHeaders")
        or None
    )
    parts["request_bytes"] = _first_present(
        getattr(wrapper, "request_bytes", None), _sdk_request_bytes(primary)
    )
    parts["transport"] = getattr(wrapper, "transport", None) or _sdk_transport(
        parts["class_names"], parts["status"] if primary is not wrapper else None
    )
    parts["error_type"] = getattr(wrapper, "error_type", None)
    parts["extra_codes"] = [
        code
        for code in (
            _as_text(getattr(primary, "type", None))
            if isinstance(getattr(primary, "type", None), str)
            else None,
            _as_text(getattr(primary, "code", None))
            if isinstance(getattr(primary, "code", None), str)
            else None,
            _as_text(_dig(botocore, "Error", "Code")) if _dig(botocore, "Error", "Code") else None,
        )
        if code
    ]
    parts["retry_after"] = getattr(wrapper, "retry_after", None)
    parts["request_header_bytes"] = getattr(wrapper, "request_header_bytes", None)
    parts["provider"] = getattr(wrapper, "provider", None)
    return parts


def _first_present(*values: Any) -> Any:
    return next((value for value in values if value is not None), None)


def _dig(data: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(data, Mapping):
            return None
        data = data.get(key)
    return data


def _botocore_response(error: BaseException) -> Mapping[str, Any] | None:
    response = getattr(error, "response", None)
    return response if isinstance(response, Mapping) else None


def _sdk_body(error: BaseException) -> Any:
    body = getattr(error, "body", None)
    if body is not None:
        return body
    response = getattr(error, "response", None)
    if response is None or isinstance(response, Mapping):
        return None
    try:
        text = response.text
    except Exception:  # an unread streaming response
        return None
    return text if isinstance(text, str) and text else None


def _sdk_headers(error: BaseException) -> dict[str, str] | None:
    response = getattr(error, "response", None)
    if response is None or isinstance(response, Mapping):
        return None
    try:
        return {str(k): str(v) for k, v in response.headers.items()}
    except Exception:
        return None


def _sdk_request_bytes(error: BaseException) -> int | None:
    """Exact body size: httpx-style `request.content`, botocore-style `request.body`."""
    request = getattr(error, "request", None)
    if request is None:
        kwargs = getattr(error, "kwargs", None)
        request = kwargs.get("request") if isinstance(kwargs, Mapping) else None
    if request is None:
        return None
    for attribute in ("content", "body"):
        try:
            value = getattr(request, attribute, None)
        except Exception:  # httpx raises for an unread streaming body
            continue
        if isinstance(value, bytes | bytearray):
            return len(value)
        if isinstance(value, str):
            return len(value.encode("utf-8"))
    return None


def _sdk_transport(class_names: list[str], status: int | None = None) -> str | None:
    """How a raw SDK exception's answer arrived, as an adapter would flag it."""
    lowered = [name.lower() for name in class_names]
    if lowered and lowered[0] in TIMEOUT_CLASSES:
        return "timeout"
    if any(name in CONNECTION_DROP_CLASSES | CONNECT_FAILURE_CLASSES for name in lowered):
        return "connection"
    return "http" if status is not None else None


API_MESSAGE_MAX_CHARS = 100_000  # bodies longer than this are not parsed for the provider's own words


def api_message(case: Case) -> str:
    """The provider's own words from a JSON error body (`error.message`, `error` as a string,
    `message`, `Message`, `detail`), whitespace collapsed; "" when the body is not such JSON."""
    for text in (case.body, case.message[case.message.find("{") :] if "{" in case.message else ""):
        if not text or len(text) > API_MESSAGE_MAX_CHARS:
            continue
        try:
            data = json.loads(text)
        except (ValueError, RecursionError):
            continue
        if isinstance(data, dict) and isinstance(data.get("error"), str) and data["error"].strip():
            return " ".join(data["error"].split())  # Ollama, llama.cpp and other local servers
        for candidate in (data.get("error") if isinstance(data, dict) else None, data):
            if isinstance(candidate, dict):
                for key in ("message", "Message", "detail"):
                    said = candidate.get(key)
                    if isinstance(said, str) and said.strip():
                        return " ".join(said.split())
    return ""


def clip(text: str, limit: int) -> str:
    """Evidence text cut to `limit`, redacted before the cut (`app.redact.clip_redacted`)."""
    from app.redact import clip_redacted

    return clip_redacted(text, limit)


def safe_str(value: Any) -> str:
    try:
        return str(value)
    except Exception:
        return f"<unprintable {type(value).__name__}>"
