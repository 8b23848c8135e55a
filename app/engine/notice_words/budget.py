"""The words of the budget notices (facts in app.model.notice_facts.budget)."""

from __future__ import annotations

from app.engine.describe import Description, describe
from app.model.cap_names import cap_name
from app.model.notice_facts.budget import CapReset, OverCapCompacting
from app.sizes import format_size


@describe.register
def _over_cap(fact: OverCapCompacting) -> Description:
    return Description(
        f"the next request ({format_size(fact.predicted_bytes)}) is over the {cap_name(fact.cap_source)} "
        f"({format_size(fact.cap_bytes)}; {fact.cap_detail}) — compacting before it is sent "
        f"(target {format_size(fact.target_bytes)})",
        level="warn",
        code=fact.code,
    )


@describe.register
def _cap_reset(fact: CapReset) -> Description:
    return Description(
        "learned cap forgotten" if fact.forgotten else "no learned cap to forget", code=fact.code
    )


__all__: list[str] = []
