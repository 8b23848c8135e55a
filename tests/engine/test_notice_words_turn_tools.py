"""The words of the turn, tool, session, image and budget notices follow their facts: the branches of
app.engine.notice_words (each fact's plain case is checked by tests/engine/test_notice_words.py, and the
notices in their situations by the engine and lab tests)."""

from __future__ import annotations

from app.engine.cap_guard import cap_label
from app.engine.notice_words import notice
from app.engine.payload import CapInfo, FloorPart, describe_floor, heaviest_servers
from app.model.notice_facts import NoticeFact
from app.model.notice_facts.budget import CapReset, OverCapCompacting
from app.model.notice_facts.images import ImageNotApproved
from app.model.notice_facts.session import (
    InstructionsLoaded,
    RuleFileChanged,
    RuleFileInForce,
    RuleFileUnreadable,
    WorkspaceGatewaysRead,
)
from app.model.notice_facts.turn import AnswerCutKept, FloorAboveTarget, ImagesStubbed


def test_a_cut_answer_says_again_once_it_was_continued():
    first, again = notice(AnswerCutKept(escalations=0)), notice(AnswerCutKept(escalations=2))
    assert first.text == "answer cut at the token limit; it is kept, marked partial"
    assert again.text == "answer cut at the token limit again; it is kept, marked partial"
    assert first.level == again.level == "warn" and first.code == "partial"


def floor_fact(parts: list[FloorPart], servers: dict[str, int]) -> FloorAboveTarget:
    return FloorAboveTarget(
        trigger="preflight",
        over="pre-flight: history 60.0 KB ≈ 98% of learned cap (61.0 KB)",
        floor_bytes=sum(part.bytes for part in parts),
        target_bytes=24_000,
        parts=tuple(part.label for part in parts),
        part_bytes=tuple(part.bytes for part in parts),
        servers=tuple(servers),
        server_bytes=tuple(servers.values()),
    )


def test_the_floor_words_name_the_parts_and_servers_as_the_payload_does():
    parts = [
        FloorPart("system prompt", 1_100),
        FloorPart("instructions", 0),  # an empty part is not named
        FloorPart("tools (built-in)", 6_000),
        FloorPart("tools (MCP)", 52_000),
    ]
    servers = {"big": 40_000, "demo": 1_200, "docs": 9_000, "tiny": 300, "wiki": 1_500}
    said = notice(floor_fact(parts, servers))
    assert said.level == "warn" and said.code == "floor"
    assert said.text.startswith(
        "pre-flight: history 60.0 KB ≈ 98% of learned cap (61.0 KB) — but the request base"
    )
    # the same words as the payload's own (app.engine.payload), which the doctor and recovery use
    assert f": {describe_floor(parts)}; the heaviest {heaviest_servers(servers)}) is above" in said.text
    assert "the heaviest MCP servers big 39.1 KB, docs 8.8 KB, wiki 1.5 KB and 2 more)" in said.text
    assert said.text.endswith("compacting history cannot help; reduce the biggest part, tools (MCP)")


def test_the_floor_words_without_servers_or_parts():
    said = notice(floor_fact([FloorPart("system prompt", 900), FloorPart("tools (built-in)", 900)], {}))
    assert "(1.8 KB: system prompt 900 B, tools (built-in) 900 B) is above" in said.text  # no server clause
    assert said.text.endswith("reduce the biggest part, system prompt")  # the first of equals
    assert notice(floor_fact([], {})).text.endswith("reduce the biggest part, system prompt")


def test_stubbed_images_are_counted_and_the_reason_is_one_safe_line():
    one = notice(ImagesStubbed(images=1, reason="invalid image\n\x1b[31m", status=400))
    three = notice(ImagesStubbed(images=3, reason="bad", status=None))
    assert one.text.startswith(
        "the provider could not read an image in the conversation (invalid image\\x0a\\x1b[31m); replaced"
    )
    assert "\x1b" not in one.text and "\n" not in one.text
    assert three.text.startswith("the provider could not read 3 images in the conversation (bad); replaced")


def test_an_image_not_approved_says_why_it_asked_and_whether_anyone_could_answer():
    outside = notice(ImageNotApproved(image="@shot.png", path="/tmp/shot.png", ask_rule=None, could_ask=True))
    ruled = notice(
        ImageNotApproved(
            image="@shot.png", path="/w/shot.png", ask_rule="ask rule Read(*.png)", could_ask=True
        )
    )
    alone = notice(ImageNotApproved(image="@shot.png", path="/tmp/shot.png", ask_rule=None, could_ask=False))
    assert outside.text == "@shot.png is outside the workspace (/tmp/shot.png): not attached"
    assert ruled.text == "@shot.png: ask rule Read(*.png): not attached"
    assert alone.text == (
        "@shot.png is outside the workspace (/tmp/shot.png): not attached — there is no terminal to ask. Run "
        "bulkhead in a terminal to be asked, pass --yes, or copy the file into the workspace"
    )


def test_an_unreadable_rule_file_counts_the_rules_it_keeps():
    one = notice(RuleFileUnreadable(file=".claude/settings.json", problem="line 3: bad JSON", kept=1))
    two = notice(RuleFileUnreadable(file=".claude/settings.json", problem="line 3: bad JSON", kept=2))
    assert "(line 3: bad JSON): its 1 deny/ask rule from before stays in force" in one.text
    assert "its 2 deny/ask rules from before stay in force, its allow rules are off" in two.text


def test_the_level_follows_what_is_held_back_or_went_wrong():
    def level(fact: NoticeFact) -> str:
        return notice(fact).level

    start = {"file": ".bulkhead/settings.toml", "status": "approved", "summary": "project rules in force: x"}
    assert level(RuleFileInForce(held=True, **start)) == "warn"
    assert level(RuleFileInForce(held=False, **start)) == "info"
    assert level(RuleFileChanged(held=True, **start)) == "warn"
    assert level(RuleFileChanged(held=False, **start)) == "info"
    assert level(WorkspaceGatewaysRead(problem=True, explanation="could not read")) == "warn"
    assert level(WorkspaceGatewaysRead(problem=False, explanation="gateway profiles read")) == "info"


def test_the_instructions_name_each_file_by_its_scope():
    said = notice(
        InstructionsLoaded(
            files=("AGENTS.md", "~/.bulkhead/AGENTS.md", "docs/style.md"),
            scopes=("project", "global", "import"),
            file_bytes=(17, 2048, 100),
            request_bytes=3000,
        )
    )
    assert said.text == (
        "project instructions in the system prompt: AGENTS.md 17 B, global ~/.bulkhead/AGENTS.md 2.0 KB, "
        "docs/style.md (imported) 100 B — 2.9 KB of every request"
    )


def test_a_cap_reset_says_whether_there_was_one():
    assert notice(CapReset(forgotten=True)).text == "learned cap forgotten"
    assert notice(CapReset(forgotten=False)).text == "no learned cap to forget"


def test_the_cap_is_named_by_where_it_comes_from():
    assert cap_label(CapInfo(1000, "learned", "x")) == "learned cap"
    assert cap_label(CapInfo(1000, "assumed", "x")) == "assumed cap"
    assert cap_label(CapInfo(None, "none", "no cap known")) == "cap"
    said = notice(
        OverCapCompacting(
            predicted_bytes=70_000,
            cap_bytes=64_000,
            cap_source="configured",
            cap_detail="max_payload from config.toml:3",
            target_bytes=40_000,
        )
    )
    assert said.text == (
        "the next request (68.4 KB) is over the configured cap (62.5 KB; max_payload from config.toml:3) — "
        "compacting before it is sent (target 39.1 KB)"
    )
    assert said.level == "warn" and said.code == "over_cap"
