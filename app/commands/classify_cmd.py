"""`bulkhead classify` — explain one provider/gateway error in words, or classify a JSONL batch.

    bulkhead classify --status 403 --body-file page.html --header 'cf-ray: 8f3a…' --bytes 422200
    bulkhead classify --message 'Connection error.' --bytes 819260 --json
    bulkhead classify --batch cases.jsonl            # one JSON line out per line in ('-' = stdin)
    bulkhead classify --batch cases.jsonl --score    # lines with `expected`: accuracy, false payload verdicts

The words come from `app.engine.api.classify`, the same rules the recovery ladder uses.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from app.console import json_text
from app.engine.api.classify import (
    DEFAULT_DROP_THRESHOLD,
    DEFAULT_FALLBACK_CAP,
    GATEWAY_NAMES,
    Failure,
    Rule,
    classify_fields,
    describe_action,
)

EXIT_OK, EXIT_USAGE = 0, 2
STDIN = "-"
BATCH_FIELDS = ("status", "message", "body", "headers", "request_bytes")
# How the answer arrived, as the adapters set it: "http" (an HTTP error status), "html-200", "non-sse-200",
# "connection", "timeout", "stream-error"; null when the adapter flagged nothing.
BATCH_OPTIONAL_FIELDS = ("transport", "error_type", "provider", "request_header_bytes")


def run(args) -> int:
    """Dispatch: `--batch FILE` classifies many cases, otherwise one error from the flags."""
    threshold, rules, fallback_cap = _from_settings()
    batch = getattr(args, "batch", None)
    if batch:
        if getattr(args, "score", False):
            return run_score(batch, drop_threshold=threshold, user_rules=rules, as_json=_as_json(args))
        return run_batch(batch, drop_threshold=threshold, user_rules=rules)
    if getattr(args, "score", False):
        return _usage_error("--score needs --batch FILE.jsonl (lines with an `expected` kind)")
    return run_single(args, drop_threshold=threshold, user_rules=rules, fallback_cap=fallback_cap)


def run_single(
    args,
    *,
    drop_threshold: int = DEFAULT_DROP_THRESHOLD,
    user_rules: tuple[Rule, ...] = (),
    fallback_cap: int = DEFAULT_FALLBACK_CAP,
) -> int:
    """Classify the error given by --status/--body-file/--message/--header/--bytes and print it."""
    try:
        headers = parse_headers(getattr(args, "header", None) or [])
    except ValueError as exc:
        return _usage_error(str(exc))
    body = None
    body_file = getattr(args, "body_file", None)
    if body_file:
        try:
            body = _read_text(body_file)
        except OSError as exc:
            return _usage_error(f"cannot read --body-file {body_file}: {exc.strerror or exc}")
    status = getattr(args, "status", None)
    message = getattr(args, "message", "") or ""
    request_bytes = getattr(args, "bytes", None)
    if status is None and not message and body is None and not headers and request_bytes is None:
        return _usage_error(
            "nothing to classify: give --status, --body-file, --message, --header or --bytes "
            "(or --batch FILE.jsonl)"
        )
    transport = getattr(args, "transport", None)
    fields: dict[str, Any] = {  # the case: classified, and spelled out the same for --explain
        "status": status,
        "message": message,
        "body": body,
        "headers": headers,
        "request_bytes": request_bytes,
        "transport": transport,
        "drop_threshold": drop_threshold,
    }
    failure = classify_fields(**fields, user_rules=user_rules)
    explain = getattr(args, "explain", False)
    if getattr(args, "classify_json", False):
        data = failure_json(failure, fallback_cap=fallback_cap)
        if explain:
            data["explain"] = _explain(fields, user_rules)
        print(json_text(data))
    else:
        print(render_text(failure, fallback_cap=fallback_cap))
        if explain:
            print()
            print("\n".join(_explain(fields, user_rules)))
    return EXIT_OK


def _explain(fields: dict[str, Any], user_rules) -> list[str]:
    """The decision spelled out (`classify --explain`): the same case the classifier reads, evaluated again."""
    from app.commands.classify_explain import explain_lines
    from app.engine.api.classify import decision

    return explain_lines(decision(**fields, user_rules=user_rules))


def run_batch(
    path: str, *, drop_threshold: int = DEFAULT_DROP_THRESHOLD, user_rules: tuple[Rule, ...] = ()
) -> int:
    """Classify one JSON object a line; write one JSON line per case (an `error` line if malformed)."""
    try:
        text = _read_text(path)
    except OSError as exc:
        return _usage_error(f"cannot read --batch {path}: {exc.strerror or exc}")
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        print(json_text(classify_line(line, number, drop_threshold=drop_threshold, user_rules=user_rules)))
    return EXIT_OK


def run_score(
    path: str,
    *,
    drop_threshold: int = DEFAULT_DROP_THRESHOLD,
    user_rules: tuple[Rule, ...] = (),
    as_json: bool = False,
) -> int:
    """Classify a labelled batch and print accuracy, false payload verdicts and the misses."""
    from app.commands.classify_score import Score

    try:
        text = _read_text(path)
    except OSError as exc:
        return _usage_error(f"cannot read --batch {path}: {exc.strerror or exc}")
    score = Score()
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        verdict = classify_line(line, number, drop_threshold=drop_threshold, user_rules=user_rules)
        try:
            case = json.loads(line)
        except ValueError:
            case = {}
        score.add(case if isinstance(case, dict) else {}, verdict)
    print(json_text(score.to_dict()) if as_json else score.render())
    return EXIT_OK


def _as_json(args) -> bool:
    return bool(getattr(args, "classify_json", False))


def classify_line(
    line: str, number: int, *, drop_threshold: int = DEFAULT_DROP_THRESHOLD, user_rules: tuple[Rule, ...] = ()
) -> dict[str, Any]:
    """One batch line → its result object, or `{"id", "line", "error"}` when the line is unusable."""
    try:
        case = json.loads(line)
    except ValueError as exc:
        reason = (
            f"not valid JSON ({exc.msg}, column {exc.colno})"
            if isinstance(exc, json.JSONDecodeError)
            else "not valid JSON"
        )
        return {"id": None, "line": number, "error": f"line {number}: {reason}"}
    if not isinstance(case, dict):
        return {
            "id": None,
            "line": number,
            "error": f"line {number}: expected a JSON object, got {type(case).__name__}",
        }
    fields = {name: case.get(name) for name in BATCH_FIELDS + BATCH_OPTIONAL_FIELDS}
    failure = classify_fields(
        fields["status"],
        fields["message"] or "",
        fields["body"],
        fields["headers"],
        fields["request_bytes"],
        transport=fields["transport"],
        error_type=fields["error_type"],
        provider=fields["provider"],
        request_header_bytes=fields["request_header_bytes"],
        drop_threshold=drop_threshold,
        user_rules=user_rules,
    )
    return {
        "id": case.get("id"),
        "kind": failure.kind,
        "payload_related": failure.payload_related,
        "recoverable": failure.recoverable,
        "reason": failure.reason,
        "evidence": list(failure.evidence),
        "rule_id": failure.rule_id,
        "decided_by": failure.decided_by,
        "hop": failure.hop.to_dict() if failure.hop is not None else None,
    }


def failure_json(failure: Failure, *, fallback_cap: int = DEFAULT_FALLBACK_CAP) -> dict[str, Any]:
    """The `--json` object for one failure."""
    return {
        "kind": failure.kind,
        "payload_related": failure.payload_related,
        "recoverable": failure.recoverable,
        "transient": failure.transient,
        "reason": failure.reason,
        "evidence": list(failure.evidence),
        "gateway": failure.gateway,
        "action": describe_action(failure, fallback_cap=fallback_cap),
        "status": failure.status,
        "rejected_bytes": failure.rejected_bytes,
        "retry_after": failure.retry_after,
        "rule_id": failure.rule_id,
        "rule_origin": failure.rule_origin,
        "decided_by": failure.decided_by,
        "stated_window_tokens": failure.stated_window_tokens,
        "hop": failure.hop.to_dict() if failure.hop is not None else None,
    }


def render_text(failure: Failure, *, fallback_cap: int = DEFAULT_FALLBACK_CAP) -> str:
    """Kind, reason, gateway, evidence lines and the action, aligned for a terminal."""
    traits = [
        name
        for flag, name in (
            (failure.payload_related, "payload-related"),
            (failure.recoverable, "recoverable"),
            (failure.transient, "transient: retried"),
        )
        if flag
    ]
    lines = [
        f"kind      {failure.kind}  ({', '.join(traits) or 'not recoverable'})",
        f"reason    {failure.reason}",
    ]
    if failure.gateway:
        lines.append(f"gateway   {GATEWAY_NAMES.get(failure.gateway, failure.gateway)}")
    if failure.hop is not None and failure.hop.name:
        lines.append(f"hop       {failure.hop.kind.value}: {failure.hop.name}")
    evidence = [item for item in failure.evidence if not item.startswith("rule ")]
    for index, item in enumerate(evidence or ["none"]):
        lines.append(f"{'evidence' if index == 0 else '':10}- {item}")
    lines.append(
        f"rule      {failure.rule_id}"
        + (f"  (your rule, {failure.rule_origin})" if failure.user_rule else "  (built-in)")
        + (f" — {failure.decided_by}" if failure.decided_by else "")
    )
    lines.append(f"action    {describe_action(failure, fallback_cap=fallback_cap)}")
    return "\n".join(lines)


def parse_headers(values: list[str]) -> dict[str, str]:
    """`['Server: nginx', 'cf-ray: 8f3a']` → a dict; a value without a colon is a clear error."""
    headers: dict[str, str] = {}
    for value in values:
        name, colon, rest = value.partition(":")
        if not colon or not name.strip():
            raise ValueError(f"--header expects 'Name: value', got {value!r}")
        headers[name.strip()] = rest.strip()
    return headers


def _read_text(path: str) -> str:
    if path == STDIN:
        data = sys.stdin.buffer.read() if hasattr(sys.stdin, "buffer") else sys.stdin.read()
    else:
        with open(path, "rb") as handle:
            data = handle.read()
    return data.decode("utf-8", errors="replace") if isinstance(data, bytes) else data


def _from_settings() -> tuple[int, tuple[Rule, ...], int]:
    """`drop_payload_min_bytes`, the user's `[[classifier.rules]]` and `fallback_cap` from the settings;
    a broken config falls back to the defaults (and no user rules), loudly."""
    from app.config import ConfigError, load_settings
    from app.engine.api.classify import user_rules

    try:
        settings = load_settings()
    except ConfigError as exc:
        print(
            f"bulkhead: config ignored ({exc}); using the defaults and no [[classifier.rules]]",
            file=sys.stderr,
        )
        return DEFAULT_DROP_THRESHOLD, (), DEFAULT_FALLBACK_CAP
    return (
        int(settings.drop_payload_min_bytes),
        user_rules(settings),
        int(settings.fallback_cap),
    )


def _usage_error(text: str) -> int:
    print(f"bulkhead classify: {text}", file=sys.stderr)
    return EXIT_USAGE
