"""The words of the gateways notices (facts in app.model.notice_facts.gateways)."""

from __future__ import annotations

from app.engine.describe import Description, describe
from app.model.notice_facts.gateways import (
    BetaRefusedByEndpoint,
    BetaResent,
    GatewaysFileLeftAlone,
    GatewaysFileTrusted,
    GatewaysFileUnreadable,
    SummaryCapLearned,
)
from app.sizes import format_size
from app.textsafe import display_line


@describe.register
def _beta_refused(fact: BetaRefusedByEndpoint) -> Description:
    how = "strips" if fact.stripped else "refuses"
    return Description(
        f"{fact.endpoint} {how} the {fact.header} value {', '.join(fact.betas)} ({fact.evidence}) — "
        f"bulkhead stops sending it there (remembered; `bulkhead gateway show` lists it)",
        level="warn",
        code=fact.code,
    )


@describe.register
def _beta_resent(fact: BetaResent) -> Description:
    return Description("sending the request again without it", code=fact.code)


@describe.register
def _summary_cap_learned(fact: SummaryCapLearned) -> Description:
    return Description(
        f"Gateway rejected a {format_size(fact.rejected_bytes)} summary request — payload cap set to "
        f"{format_size(fact.cap_bytes)} for {fact.endpoint}; the retry is fitted under it",
        level="warn",
        code=fact.code,
    )


@describe.register
def _file_unreadable(fact: GatewaysFileUnreadable) -> Description:
    return Description(
        display_line(f"could not read {fact.file}: {fact.error}"), level="warn", code=fact.code
    )


@describe.register
def _file_trusted(fact: GatewaysFileTrusted) -> Description:
    return Description(
        display_line(f"gateway profiles read from {fact.file} (trusted): " + "; ".join(fact.profiles)),
        code=fact.code,
    )


@describe.register
def _file_left_alone(fact: GatewaysFileLeftAlone) -> Description:
    return Description(
        display_line(f"{fact.file} is left alone (remembered; `bulkhead gateway trust` reads it)"),
        code=fact.code,
    )
