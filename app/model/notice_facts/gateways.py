"""The facts of the gateways notices: what an endpoint's profile learned (refused betas, a summary request's
cap) and the workspace's shared gateways file (worded by app.engine.notice_words.gateways)."""

from __future__ import annotations

from dataclasses import dataclass

from app.model.notice_facts import NoticeFact


@dataclass(frozen=True)
class BetaRefusedByEndpoint(NoticeFact):
    """An endpoint refuses (or strips) beta header values: bulkhead stops sending them there, remembered."""

    kind = "beta_refused"
    code = "beta_refused"
    endpoint: str
    header: str  # the header that carries them (anthropic-beta)
    betas: tuple[str, ...]
    stripped: bool  # the header never arrived (a gateway strips it), else the API refused its value
    evidence: str  # what in the error showed it, as the API or the gateway said it


@dataclass(frozen=True)
class BetaResent(NoticeFact):
    """The chat request goes again, once, without the betas the endpoint refused."""

    kind = "beta_resent"
    code = "beta_refused"
    betas: tuple[str, ...]


@dataclass(frozen=True)
class SummaryCapLearned(NoticeFact):
    """A summary request refused for its size: its route's endpoint learns a cap (¾ of it); the retry fits."""

    kind = "summary_cap_learned"
    code = "cap_learned"
    rejected_bytes: int
    cap_bytes: int
    endpoint: str


@dataclass(frozen=True)
class GatewaysFileUnreadable(NoticeFact):
    """The workspace's gateways file, once answered, could not be read: its profiles do not apply."""

    kind = "gateways_file_unreadable"
    code = "gateways"
    file: str  # .bulkhead/gateways.toml
    error: str  # the exception's message


@dataclass(frozen=True)
class GatewaysFileTrusted(NoticeFact):
    """The user trusted the workspace's gateways file: its profiles are read and apply."""

    kind = "gateways_file_trusted"
    code = "gateways"
    file: str  # .bulkhead/gateways.toml
    profiles: tuple[str, ...]  # each profile read, in app.workspace_gateways' words


@dataclass(frozen=True)
class GatewaysFileLeftAlone(NoticeFact):
    """The user declined the workspace's gateways file: it is left alone (remembered)."""

    kind = "gateways_file_left_alone"
    code = "gateways"
    file: str  # .bulkhead/gateways.toml


__all__ = [
    "BetaRefusedByEndpoint",
    "BetaResent",
    "GatewaysFileLeftAlone",
    "GatewaysFileTrusted",
    "GatewaysFileUnreadable",
    "SummaryCapLearned",
]
