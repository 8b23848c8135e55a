"""The signals the classifier's rules are made of, and the named predicates (`Check`) for what a
pattern cannot say. A signal reads the normalised `Case` and answers a `Hit` — its evidence lines,
how a reason names it, and what it measured — or None. See `failure_rules.py` for the rules.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from app.engine.failure_case import Case, header_matches
from app.engine.failure_input import clip
from app.engine.failure_phrases import (
    AUTH_CODES,
    CONNECTION_DROP_CLASSES,
    CONTEXT_OVERFLOW_CODES,
    CONTEXT_OVERFLOW_RE,
    DROP_RE,
    EXCESS_WORDS,
    LENGTH_WORDS,
    OUTPUT_ONLY_WORDS,
    OVERLOADED_CODES,
    RATE_LIMIT_CODES,
    SERVER_ERROR_CODES,
    TPM_LIMIT,
)
from app.engine.failure_shapes import BYTE_LIMIT, INPUT_PLUS_OUTPUT, TOKEN_COUNTS
from app.engine.resets import judge_reset
from app.sizes import format_size


# -- what a signal saw ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Hit:
    """A matched signal: its evidence lines and how a reason names it ("an HTML block page")."""

    lines: tuple[str, ...] = ()
    words: tuple[str, ...] = ()
    value: Any = None  # what a predicate measured (e.g. the stated token limit)


Signal = Callable[[Case], "Hit | None"]


def make_hit(line: str | Iterable[str] = (), words: str = "", value: Any = None) -> Hit:
    lines = (line,) if isinstance(line, str) else tuple(line)
    return Hit(tuple(item for item in lines if item), (words,) if words else (), value)


def _pattern(value: str | re.Pattern[str]) -> re.Pattern[str]:
    return value if isinstance(value, re.Pattern) else re.compile(value)


# -- signals -------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Status:
    """The HTTP status is one of `codes` (None: no HTTP answer) or within `between` (inclusive)."""

    codes: tuple[int | None, ...] = ()
    between: tuple[int, int] | None = None
    quiet: bool = False  # match without an evidence line (a condition, not a signal)

    def __call__(self, case: Case) -> Hit | None:
        status = case.status
        inside = status in self.codes or (
            status is not None and self.between is not None and self.between[0] <= status <= self.between[1]
        )
        if not inside:
            return None
        if self.quiet or status is None:
            return make_hit()
        return make_hit(case.status_evidence(), str(status))


def status(*codes: int | None, between: tuple[int, int] | None = None, quiet: bool = False) -> Status:
    return Status(tuple(codes), between, quiet)


@dataclass(frozen=True)
class Header:
    """A response header (a name, or a prefix ending in "-") whose value holds `contains`."""

    name: str
    contains: str = ""
    unless_json: bool = False  # ignored when the body is the API's own JSON error (rides on real answers)
    note: str = ""

    def __call__(self, case: Case) -> Hit | None:
        if self.unless_json and case.json_envelope:
            return None
        key = header_matches(case.headers, self.name.lower(), self.contains.lower())
        if key is None:
            return None
        value = case.headers[key]
        words = f"{key} header" if not self.contains else f"{key}: {clip(value, 20)}"
        return make_hit(self.note or f"header {key}: {clip(value, 40)}", words)


@dataclass(frozen=True)
class Phrase:
    """A regular expression found in the message + body (lower case, entities decoded)."""

    pattern: re.Pattern[str]
    html_only: bool = False  # only when the body is an HTML page
    label: str = ""  # e.g. "TLS": `phrase "…" (TLS)`
    clip_at: int = 60

    def __call__(self, case: Case) -> Hit | None:
        if self.html_only and not case.html:
            return None
        found = self.pattern.search(case.text)
        if not found:
            return None
        said = clip(found.group(0), self.clip_at)
        suffix = f" ({self.label})" if self.label else ""
        return make_hit(f'phrase "{said}"{suffix}', f'"{clip(found.group(0), 40)}"')


def phrase(
    pattern: str | re.Pattern[str], *, html_only: bool = False, label: str = "", clip_at: int = 60
) -> Phrase:
    return Phrase(_pattern(pattern), html_only, label, clip_at)


@dataclass(frozen=True)
class Code:
    """An error code or type from the body, the SDK exception or `x-amzn-ErrorType`."""

    codes: frozenset[str]

    def __call__(self, case: Case) -> Hit | None:
        found = sorted(case.codes & self.codes)
        if not found:
            return None
        return make_hit([f'error code "{code}"' for code in found], f"error code {found[0]}")


def code(*codes: str | Iterable[str]) -> Code:
    flat: set[str] = set()
    for item in codes:
        flat |= {item} if isinstance(item, str) else set(item)
    return Code(frozenset(c.lower() for c in flat))


@dataclass(frozen=True)
class HtmlBody:
    """The body is a web page where the API speaks JSON."""

    line: str = "HTML body where the API speaks JSON"

    def __call__(self, case: Case) -> Hit | None:
        return make_hit(self.line, "an HTML block page") if case.html else None


@dataclass(frozen=True)
class NotHtml:
    def __call__(self, case: Case) -> Hit | None:
        return None if case.html else make_hit()


@dataclass(frozen=True)
class Transport:
    """The adapter's transport flag: connection, timeout, html-200, non-sse-200, stream-error."""

    values: tuple[str, ...]
    line: str = ""

    def __call__(self, case: Case) -> Hit | None:
        if case.transport not in self.values:
            return None
        return make_hit(self.line or f"transport: {case.transport}")


def transport(*values: str, line: str = "") -> Transport:
    return Transport(tuple(values), line)


@dataclass(frozen=True)
class ExceptionClass:
    """An exception class by name: the failing one (`first_only`: its own class) or down the cause chain."""

    names: frozenset[str]
    chain: bool = False
    first_only: bool = False

    def __call__(self, case: Case) -> Hit | None:
        own = case.class_names[:1] if self.first_only else case.class_names
        for name in own:
            if name.lower() in self.names:
                return make_hit(f"exception {name}", name)
        if self.chain:
            for name in case.cause_names:
                if name.lower() in self.names:
                    return make_hit(f"exception {name}", name)
        return None


@dataclass(frozen=True)
class CauseChain:
    """A regular expression in the messages of the exception's cause chain (issue 22: a 407 down it)."""

    pattern: re.Pattern[str]

    def __call__(self, case: Case) -> Hit | None:
        found = self.pattern.search(case.cause_text)
        return make_hit(f'cause chain says "{clip(found.group(0), 60)}"', found.group(0)) if found else None


@dataclass(frozen=True)
class BytesAtLeast:
    """The request body was at least `size` bytes."""

    size: int

    def __call__(self, case: Case) -> Hit | None:
        if case.request_bytes is None or case.request_bytes < self.size:
            return None
        return make_hit(f"request {format_size(case.request_bytes)} ≥ {format_size(self.size)}")


@dataclass(frozen=True)
class AnyOf:
    """At least one of `signals` matches; the evidence of every one that does is kept."""

    signals: tuple[Signal, ...]

    def __call__(self, case: Case) -> Hit | None:
        hits = [hit for hit in (signal(case) for signal in self.signals) if hit is not None]
        return _merge(hits) if hits else None


@dataclass(frozen=True)
class AllOf:
    """Every one of `signals` matches (to group inside an AnyOf)."""

    signals: tuple[Signal, ...]

    def __call__(self, case: Case) -> Hit | None:
        hits = []
        for signal in self.signals:
            hit = signal(case)
            if hit is None:
                return None
            hits.append(hit)
        return _merge(hits)


def _merge(hits: Sequence[Hit]) -> Hit:
    value = next((hit.value for hit in hits if hit.value is not None), None)
    return Hit(
        tuple(line for hit in hits for line in hit.lines), tuple(w for hit in hits for w in hit.words), value
    )


def any_of(*signals: Signal) -> AnyOf:
    return AnyOf(tuple(signals))


def all_of(*signals: Signal) -> AllOf:
    return AllOf(tuple(signals))


@dataclass(frozen=True)
class Check:
    """A named procedural predicate (what a pattern cannot say): `test(case) -> Hit | None`."""

    name: str
    test: Callable[[Case], Hit | None]

    def __call__(self, case: Case) -> Hit | None:
        return self.test(case)


# -- the named predicates ------------------------------------------------------------------------------
def _no_http_answer(case: Case) -> Hit | None:
    """No HTTP response, or a 200 whose stream then broke (the only 200s a dropped connection can have)."""
    if case.status is None or (case.status == 200 and case.transport in ("connection", "stream-error")):
        return make_hit()
    return None


def _dropped(case: Case) -> Hit | None:
    """The connection went away: the transport flag, a drop exception (also down the chain), or drop wording."""
    lines: list[str] = []
    if case.transport == "connection":
        lines.append(
            "transport: connection dropped (no HTTP response)"
            if case.status is None
            else f"transport: connection cut after status {case.status}"
        )
    name = next((n for n in case.class_names if n.lower() in CONNECTION_DROP_CLASSES), None)
    if name:
        lines.append(f"exception {name}")
    found = DROP_RE.search(case.text)
    if found:
        lines.append(f'phrase "{found.group(0)}"')
    if not lines and not any(n.lower() in CONNECTION_DROP_CLASSES for n in case.cause_names):
        return None
    return make_hit(lines + list(case.cause_notes[:2]))


def _reset_is_size(case: Case) -> Hit | None:
    verdict = judge_reset(case.request_bytes, case.drop_threshold, case.size_evidence)
    return make_hit(verdict.evidence, verdict.rule) if verdict.payload else None


def _reset_size_unproven(case: Case) -> Hit | None:
    verdict = judge_reset(case.request_bytes, case.drop_threshold, case.size_evidence)
    return None if verdict.payload else make_hit(verdict.evidence)


def _overflow_pairing(case: Case) -> Hit | None:
    """A sentence pairing a token/length word with an excess word ("Requested input length 9000 exceeds …")."""
    for sentence in re.split(r"[.;!?\n]\s", case.text):
        length = LENGTH_WORDS.search(sentence)
        excess = EXCESS_WORDS.search(sentence)
        if not (length and excess) or abs(length.start() - excess.start()) > 80:
            continue
        if OUTPUT_ONLY_WORDS.search(sentence) and not re.search(r"\b(?:input|prompt|context)\b", sentence):
            continue  # "max_tokens > the model's maximum output": a setting, not a long conversation
        return make_hit(f'words "{length.group(0)}" + "{excess.group(0)}"', f'"{clip(sentence.strip(), 80)}"')
    return None


def _tpm_request_over_limit(case: Case) -> Hit | None:
    """One request above the tokens-per-minute limit ("Limit 6000, Requested 9000"): waiting cannot help."""
    found = TPM_LIMIT.search(case.text)
    if not found:
        return None
    limit, used, requested = (int(g.replace(",", "")) if g else None for g in found.group(1, 2, 3))
    if requested is None or limit is None or requested <= limit:
        return None  # "Used 6000, Requested 5000": the minute's budget is spent, a wait helps
    return make_hit(f"tokens per minute: requested {requested:,} > limit {limit:,}", "", value=limit)


def _byte_limit(case: Case) -> Hit | None:
    found = BYTE_LIMIT.search(case.text)
    if not found:
        return None
    size = int(found.group(1))
    return make_hit(f"server limit {format_size(size)} ({size:,} bytes)")


def _request_size(case: Case) -> Hit | None:
    return make_hit(f"request {format_size(case.request_bytes)}") if case.request_bytes is not None else None


def _retry_after(case: Case) -> Hit | None:
    return (
        make_hit(f"retry-after {format_seconds(case.retry_after)}") if case.retry_after is not None else None
    )


def _cf_ray_on_json(case: Case) -> Hit | None:
    if case.json_envelope and header_matches(case.headers, "cf-ray", ""):
        return make_hit("header cf-ray ignored: the body is the API's own JSON error")
    return None


def _stream_error_note(case: Case) -> Hit | None:
    return make_hit("transport: error event inside the stream") if case.transport == "stream-error" else None


def _html_note(case: Case) -> Hit | None:
    return make_hit("HTML error page from a gateway") if case.html else None


def token_counts(case: Case) -> Hit | None:
    """Token figures the error states, parsed (`value` is the stated window, when there is one)."""
    text = case.text
    found = INPUT_PLUS_OUTPUT.search(text)
    if found:
        prompt, output, limit = (_number(found.group(i)) for i in (1, 2, 3))
        return make_hit(f"tokens: {prompt:,} input + {output:,} max_tokens > {limit:,} limit", value=limit)
    for pattern, used_group, limit_group in TOKEN_COUNTS:
        found = pattern.search(text)
        if found:
            used, limit = _number(found.group(used_group)), _number(found.group(limit_group))
            over = f" ({(used - limit) / limit:+.0%})" if limit else ""
            return make_hit(f"tokens: {used:,} > {limit:,} limit{over}", value=limit)
    return None


def _number(text: str) -> int:
    return int(text.replace(",", ""))


def format_seconds(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    return f"{seconds:.0f}s" if float(seconds).is_integer() else f"{seconds:.1f}s"


NO_HTTP_ANSWER = Check("no HTTP answer", _no_http_answer)
DROPPED = Check("connection dropped", _dropped)
RESET_IS_SIZE = Check("reset judged by size", _reset_is_size)
RESET_UNPROVEN = Check("reset not proven a size problem", _reset_size_unproven)
OVERFLOW_PAIRING = Check("length word + excess word", _overflow_pairing)
TPM_OVER_LIMIT = Check("one request over the tokens-per-minute limit", _tpm_request_over_limit)
BYTE_LIMIT_NOTE = Check("server byte limit", _byte_limit)
REQUEST_SIZE = Check("request size", _request_size)
RETRY_AFTER = Check("retry-after", _retry_after)
CF_RAY_ON_JSON = Check("cf-ray on the API's JSON", _cf_ray_on_json)
STREAM_ERROR = Check("error event in the stream", _stream_error_note)
HTML_NOTE = Check("gateway HTML page", _html_note)
TOKEN_COUNTS_NOTE = Check("token counts", token_counts)

API_EVENT_CODES = code(
    RATE_LIMIT_CODES,
    OVERLOADED_CODES,
    SERVER_ERROR_CODES,
    AUTH_CODES,
    CONTEXT_OVERFLOW_CODES,
    "invalid_request_error",
)
API_EVENT = any_of(
    API_EVENT_CODES, phrase(CONTEXT_OVERFLOW_RE)
)  # an API error that arrived, not a dropped line
BELOW_500 = status(None, between=(100, 499), quiet=True)
NO_STATUS_OR_200 = status(None, 200, quiet=True)
