"""What an error says, read by meaning rather than by known phrases (issue 39).

A phrase table learns its sources' words; the next gateway words it differently. So each sentence of the
error's own words is read for *what* is over *which* limit:

- the object: the conversation's tokens (context, prompt, input, sequence length, `n_ctx`), the output
  (`max_tokens` in every spelling), the request body (body, payload, entity, content length, upload), its
  headers (header, cookie, Jetty's "head"), or something else entirely (an image, a file, the tool list, one
  field, the response);
- a limit being passed: an excess verb ("exceeds", "too large", "longer than", "ran out of room", "not
  enough"), a comparison ("must have less than", "should be [1, N]", "up to", "at most", "Max size: N") or
  numerals ("N > M", "N >= M");
- the unit the figures are in (tokens, bytes/KB/MB, pixels), which outranks the noun: "Request body too
  large … Max size: 8000 tokens" is about tokens.

The rules (`failure_rules.py`) combine these claims with the status family, where the body came from (the
provider's JSON, a gateway's HTML page, nothing) and the request's own size evidence. Each check writes the
sentence and the words that decided it as its evidence line.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from enum import StrEnum

from app.engine.failure_case import Case
from app.engine.failure_input import api_message, clip
from app.engine.failure_signals import Check, Hit, make_hit
from app.sizes import format_size

MAX_READ_CHARS = 6_000  # the provider's words or the page's text; errors say what they mean early on


class Subject(StrEnum):
    INPUT = "input"  # the conversation: tokens, context, prompt, messages
    OUTPUT = "output"  # the answer's length: max_tokens and its spellings
    BODY = "body"  # the request body's bytes
    HEADER = "header"  # the request's header block
    OTHER = "other"  # an image, a file, the tool list, one field, the response


# The output limit in every spelling: a setting, not the conversation's length.
OUTPUT_NOUNS = re.compile(
    r"\b(?:max_tokens|max_completion_tokens|max_output_tokens|maxoutputtokens|max_new_tokens|maxtokens"
    r"|max_tokens_to_sample|max_gen_len|num_predict|maximum tokens you requested|maximum tokens value"
    r"|max(?:imum)?(?: number of)? (?:output|completion|new|generated) tokens|(?:output|completion) tokens?"
    r"|tokens to generate|output token limit|max(?:imum)? output)\b"
)
INPUT_NOUNS = re.compile(
    r"\b(?:context(?![ _-]?(?:deadline|cancel))(?:[ _-]?(?:window|length|size|limit))?|prompt|inputs?|messages"
    r"|conversation|history"
    r"|n_ctx|num_ctx|n_keep|max_model_len|model length|sequence length|tokens to keep|input tokens)\b"
)
# The conversation itself, named outright — beside an output noun, "context window" alone is only the yardstick
# ("max_tokens must be less than … the context_window for this model" is about max_tokens).
STRONG_INPUT_NOUNS = re.compile(
    r"\b(?:prompt|inputs?|messages|conversation|history|n_keep|tokens to keep|input tokens|input length)\b"
)
TOKEN_NOUN = re.compile(r"\btokens?\b")
BODY_NOUNS = re.compile(
    r"\b(?:body|payload|entity|content[- ]length|request content|request size|upload(?:ed)?|post data"
    r"|post content-length|request length"
    r"|request(?= (?:is |was )?(?:too (?:large|long|big)|larger|bigger|exceed(?:s|ed)? the max(?:imum)? (?:size|length))))\b"
)
HEADER_NOUNS = re.compile(r"\b(?:headers?|cookies?|header fields?|request line|full head|head)\b")
OTHER_NOUNS = re.compile(
    r"\b(?:image|images|picture|pixels?|file|files|attachment|document|pages?|tools|functions|array"
    r"|field|parameter|stop sequences|metadata\.|response|reply|maxcontentlength|string too long"
    r"|per[- ]field|cache_control|batch size)\b"
)
# A string field of the conversation itself is the conversation ("Invalid 'messages[2].content': string too long").
CONVERSATION_FIELD = re.compile(r"'(?:messages|input|prompt|contents)[^']*'")

EXCESS = re.compile(
    r"\b(?:exceed(?:s|ed|ing)?|too (?:long|large|big|many)|is too|over (?:the |its )?(?:limit|maximum|max)"
    r"|(?:larger|greater|longer|bigger|more) than|beyond|ran out of|run out of|out of room|(?:does not|doesn't"
    r"|cannot|can't|won't) fit|to fit into|not enough|overflows?|above (?:the )?(?:max|maximum|limit)"
    r"|is limited|limit (?:exceeded|reached)|full head)\b"
)
COMPARISON = re.compile(
    r"\b(?:must (?:be|have) (?:less|fewer|smaller|shorter|at most|no more)|should (?:be|have) (?:less|fewer"
    r"|at most|smaller)|(?:cannot|can't|may not|must not) exceed|up to \d|at most \d|no more than"
    r"|max(?:imum)? (?:size|length|allowed|is|of)\b|max(?:imum)? \d|limit (?:is|of)\b|(?:expected|allowed) .{0,30}?<=)"
    r"|<= ?\d|\[1, ?\d[\d,]*\]|range of \w+ length"
)
NUMERALS = re.compile(r"\d[\d,]*\s*(?:tokens?\s*)?(?:>=?|≥)\s*(?:n_ctx:?\s*)?\d|\d[\d,]* (?:tokens )?> \d")
TOKEN_UNIT = re.compile(r"\d[\d,]*\s*tokens?\b|\btokens?:?\s*\d|\bmax size: \d[\d,]* tokens")
BYTE_UNIT = re.compile(r"\d[\d,.]*\s*(?:bytes?|[kmg]i?b|[kmg]b)\b", re.IGNORECASE)
PIXEL_UNIT = re.compile(r"\d[\d,]*\s*(?:pixels?|px)\b")
# A quota, rate or spend limit is exceeded by use over time, not by one request's size.
NOT_A_SIZE = re.compile(
    r"\b(?:quota|rate[ _-]?limit|spend|credits?|billing|budget|per (?:minute|day|hour))\b"
)
SENTENCE = re.compile(r"(?<=[.;!?])\s+|\n+|\bhowever,?\s", re.IGNORECASE)


@dataclass(frozen=True)
class Claim:
    """One sentence that says something is over a limit: what, and the words that say so."""

    subject: Subject
    sentence: str
    noun: str
    limit: str  # the excess verb, comparison or numerals found
    unit: str = ""  # "tokens", "bytes" or "pixels" when the sentence states figures in one

    def line(self) -> str:
        unit = f", figures in {self.unit}" if self.unit else ""
        return (
            f'meaning: {self.subject.value} noun "{clip(self.noun, 30)}" × limit "{clip(self.limit, 30)}"'
            f'{unit} — "{clip(self.sentence, 90)}"'
        )


@dataclass(frozen=True)
class Reading:
    """Every claim the error's words make, in order."""

    claims: tuple[Claim, ...] = ()
    source: str = ""  # "provider JSON", "page text", "message"

    def about(self, subject: Subject) -> Claim | None:
        return next((claim for claim in self.claims if claim.subject is subject), None)


def read(case: Case) -> Reading:
    """The claims in `case`'s words (cached on the case: rules ask many times)."""
    cached = case.reading
    if isinstance(cached, Reading):
        return cached
    words, source = _words(case)
    claims = tuple(claim for sentence in SENTENCE.split(words) if (claim := _claim(sentence.strip())))
    reading = Reading(claims, source)
    case.reading = reading
    return reading


def _words(case: Case) -> tuple[str, str]:
    said = api_message(case)
    if said:
        extra = _param_words(case)
        return (said + (". " + extra if extra else "")).lower()[:MAX_READ_CHARS], "provider JSON"
    if case.html:
        return _page_text(case.body or case.message)[:MAX_READ_CHARS], "page text"
    text = " ".join(part for part in (case.message, case.body) if part)
    return " ".join(html.unescape(text).lower().split())[:MAX_READ_CHARS], "message"


def _param_words(case: Case) -> str:
    """Some gateways put the provider's sentence in `param` ("Param Incorrect" / "max_tokens is too large…")."""
    found = re.search(r'"param"\s*:\s*"([^"]{20,400})"', case.body or "")
    return found.group(1) if found else ""


def _page_text(page: str) -> str:
    text = re.sub(r"(?is)<(script|style)\b.*?</\1\s*>", " ", page[:200_000])
    text = re.sub(r"(?s)<[^>]+>", " ", text)
    return " ".join(html.unescape(text).lower().split())


def _claim(sentence: str) -> Claim | None:
    if not sentence or len(sentence) > 600:
        sentence = sentence[:600]
    limit = EXCESS.search(sentence) or COMPARISON.search(sentence) or NUMERALS.search(sentence)
    if limit is None or NOT_A_SIZE.search(sentence):
        return None
    unit = _unit(sentence)
    header = HEADER_NOUNS.search(sentence)
    if header and unit != "tokens" and not INPUT_NOUNS.search(sentence):
        return Claim(
            Subject.HEADER, sentence, header.group(0), limit.group(0), unit
        )  # "header field", "metadata headers"
    conversation_field = CONVERSATION_FIELD.search(sentence)
    output = OUTPUT_NOUNS.search(sentence)
    inputs = INPUT_NOUNS.search(sentence) or conversation_field
    if output and not (
        STRONG_INPUT_NOUNS.search(sentence) or conversation_field
    ):  # the output setting, by name
        return Claim(Subject.OUTPUT, sentence, output.group(0), limit.group(0), unit)
    other = OTHER_NOUNS.search(sentence)
    if other and not conversation_field and unit != "tokens":
        return Claim(Subject.OTHER, sentence, other.group(0), limit.group(0), unit)
    if unit == "tokens" or inputs or TOKEN_NOUN.search(sentence):
        noun = (inputs or TOKEN_NOUN.search(sentence) or BODY_NOUNS.search(sentence) or limit).group(0)
        return Claim(Subject.INPUT, sentence, noun, limit.group(0), unit)
    body = BODY_NOUNS.search(sentence)
    if body and unit != "pixels":
        return Claim(Subject.BODY, sentence, body.group(0), limit.group(0), unit)
    return None


def _unit(sentence: str) -> str:
    if TOKEN_UNIT.search(sentence):
        return "tokens"
    if PIXEL_UNIT.search(sentence):
        return "pixels"
    if BYTE_UNIT.search(sentence):
        return "bytes"
    return ""


# -- stated byte limits and the request's own size ---------------------------------------------------------
_SIZE = re.compile(r"(\d[\d,.]*)\s*(bytes?|[kmg]i?b)\b", re.IGNORECASE)
_SCALE = {"b": 1, "k": 1024, "m": 1024**2, "g": 1024**3}


def stated_limit(claim: Claim) -> int | None:
    """The smallest byte figure in a body claim's sentence ("10485760 bytes", "Max 32MiB"), if any."""
    sizes = []
    for number, unit in _SIZE.findall(claim.sentence):
        try:
            value = float(number.replace(",", ""))
        except ValueError:
            continue
        sizes.append(int(value * _SCALE[unit[0].lower()]))
    return min(sizes) if sizes else None


def _fits_the_request(case: Case, claim: Claim) -> bool:
    """A body claim fits this request unless the request is known to be under every size the sentence names."""
    limit = stated_limit(claim)
    return limit is None or case.request_bytes is None or case.request_bytes >= limit * 0.9


# The window a sentence states: "less than N", "limit of N", "[1, N]", "Max size: N tokens", "of only N",
# "N > M" / "N>= n_ctx: M" (the second figure), "maximum … N".
_STATED = (
    re.compile(r"(?:>=?|≥)\s*(?:n_ctx:?\s*)?(\d[\d,]*)"),
    re.compile(
        r"(?:less than|fewer than|at most|up to|limit of|max(?:imum)? size:?|of only|\[1, ?"
        r"|context length(?: of)?(?: only)?|maximum (?:length|input length|allowed length|model length)(?: is| of)?)"
        r"\s*\(?(\d[\d,]*)"
    ),
)


def stated_window(claim: Claim) -> int | None:
    """The token limit an input claim states, when its figures are in tokens (or it names a context length)."""
    for pattern in _STATED:
        found = pattern.search(claim.sentence)
        if found:
            value = int(found.group(1).replace(",", ""))
            return value if value >= 256 else None  # smaller figures are counts of something else
    return None


# -- the checks the rules are made of ------------------------------------------------------------------------
def _conversation(case: Case) -> Hit | None:
    reading = read(case)
    claim = reading.about(Subject.INPUT)
    if claim is None:
        return None
    window = next((w for c in reading.claims if c.subject is Subject.INPUT and (w := stated_window(c))), None)
    return make_hit(claim.line(), f'"{clip(claim.sentence, 60)}"', value=window)


def _output_limit(case: Case) -> Hit | None:
    reading = read(case)
    claim = reading.about(Subject.OUTPUT)
    if claim is None or reading.about(Subject.INPUT) is not None:
        return None
    return make_hit(claim.line(), f'"{clip(claim.sentence, 60)}"')


def _body(case: Case) -> Hit | None:
    reading = read(case)
    claim = reading.about(Subject.BODY)
    if claim is None or reading.about(Subject.HEADER) or reading.about(Subject.INPUT):
        return None
    if not _fits_the_request(case, claim):
        return None
    lines = [claim.line()]
    limit = stated_limit(claim)
    if limit is not None and case.request_bytes is not None:
        lines.append(f"request {format_size(case.request_bytes)} vs the stated {format_size(limit)}")
    return make_hit(lines, f'"{clip(claim.sentence, 60)}"')


def _headers(case: Case) -> Hit | None:
    claim = read(case).about(Subject.HEADER)
    return make_hit(claim.line(), f'"{clip(claim.sentence, 60)}"') if claim else None


def _something_else(case: Case) -> Hit | None:
    """The only limit the words state is about something that is not the request (an image, the tools…)."""
    reading = read(case)
    claim = reading.about(Subject.OTHER)
    if claim is None or any(
        c.subject in (Subject.INPUT, Subject.BODY, Subject.HEADER) for c in reading.claims
    ):
        return None
    return make_hit(claim.line() + " — not the request's size", f'"{clip(claim.sentence, 60)}"')


MEANS_CONVERSATION_TOO_LONG = Check("token/context noun × limit", _conversation)
MEANS_OUTPUT_LIMIT = Check("output-limit noun × limit", _output_limit)
MEANS_BODY_TOO_LARGE = Check("size noun × limit", _body)
MEANS_HEADERS_TOO_LARGE = Check("header noun × limit", _headers)
MEANS_SOMETHING_ELSE = Check("a limit on something that is not the request", _something_else)


def describe(reading: Reading) -> list[str]:
    """`classify --explain`: every claim, one line each."""
    if not reading.claims:
        return [f"no sentence pairs an object with a limit (read the {reading.source or 'message'})"]
    return [f"{claim.line()}  [{reading.source}]" for claim in reading.claims]
