"""Project instructions through real turns against the lab: the request carries them, the floor counts
them, `/memory` and `/init` write them."""

from __future__ import annotations

import pytest

from app.engine.instructions import load_instructions

MARKER = "AGENTS-MARKER-7f3a: always run make check before you finish"


@pytest.mark.parametrize("provider", ["anthropic", "openai", "bedrock"])
async def test_an_agents_md_marker_reaches_the_request_and_the_floor_breakdown(make_harness, lab, provider):
    h = make_harness(provider)
    (h.engine.workspace / "AGENTS.md").write_text(f"# Rules\n{MARKER}\n")
    h.engine.load_instructions()
    await h.engine.start()

    result = await h.engine.submit("hello")

    assert result.outcome == "answered", result.error
    model_requests = [r for r in lab.requests() if r.get("operation") == "generate"]
    assert model_requests and MARKER in model_requests[-1]["system_tail"]
    view = h.of_type("view")[-1]
    floor = {part.label: part.bytes for part in view.floor}
    assert list(floor) == ["system prompt", "instructions", "tools (built-in)"]
    instructions = load_instructions(h.engine.workspace, max_bytes=h.engine.settings.instructions_max_bytes)
    assert floor["instructions"] >= instructions.bytes  # JSON escaping only adds
    assert view.floor_bytes == h.engine.floor_sizes().total_bytes
    assert view.floor_bytes > sum(floor.values())  # the request envelope is on top of the parts
    notices = [e.text for e in h.of_type("notice") if e.code == "instructions"]
    assert notices and "AGENTS.md" in notices[0]


async def test_without_instruction_files_the_request_is_unchanged(make_harness, lab):
    h = make_harness()
    await h.engine.submit("hello")
    assert [part.label for part in h.of_type("view")[-1].floor] == ["system prompt", "tools (built-in)"]
    assert h.engine.system == h.engine.base_system


async def test_the_floor_diagnosis_names_the_instructions_when_they_are_the_problem(make_harness, lab):
    h = make_harness()
    (h.engine.workspace / "AGENTS.md").write_text("Always be careful.\n" * 3000)  # ~57 KB
    h.engine.load_instructions()
    lab.configure(gateway="nginx", cap=40_000)

    result = await h.engine.submit("hello")

    assert result.outcome == "failed"
    floor = [e.text for e in h.of_type("notice") if e.code == "floor"]
    assert floor and "the biggest part is instructions" in floor[0] and "AGENTS.md" in floor[0]
    # with the cap learned, the pre-flight says compaction cannot help and names the part to reduce
    await h.engine.submit("hello again")
    preflight = [e.text for e in h.of_type("notice") if e.code == "floor"][1:]
    assert preflight and "reduce the biggest part, instructions" in preflight[0]


async def test_memory_appends_to_agents_md_and_the_next_request_carries_it(make_harness, lab):
    h = make_harness()
    path = h.engine.remember("The API lives in services/api; run `make api` to start it")
    assert path == h.engine.workspace / "AGENTS.md"
    assert path.read_text() == "- The API lives in services/api; run `make api` to start it\n"
    await h.engine.submit("hello")
    assert "run `make api` to start it" in lab.requests()[-1]["system_tail"]
    assert h.of_type("view")[-1].reason == "turn"


async def test_init_writes_a_deterministic_agents_md_and_loads_it(make_harness, lab):
    from app.engine.project_init import init_prompt

    async def allow(name, args, why):
        return True

    h = make_harness(approver=allow)
    workspace = h.engine.workspace
    (workspace / "pyproject.toml").write_text("[project]\nname = 'demo'\n[tool.pytest.ini_options]\n")
    (workspace / "README.md").write_text("# Demo: a tiny service\n")
    (workspace / "src").mkdir()

    result = await h.engine.submit(init_prompt(workspace))

    assert result.outcome == "answered", result.error
    written = (workspace / "AGENTS.md").read_text()
    assert (
        "- test: `python3 -m pytest`" in written and "`src/`" in written and "Demo: a tiny service" in written
    )
    assert "AGENTS.md" in [f.path.name for f in h.engine.instructions.files]  # reloaded after the turn
    assert "python3 -m pytest" in h.engine.system
    # the same project gives the same file
    (workspace / "AGENTS.md").unlink()
    again = await h.engine.submit(init_prompt(workspace))
    assert again.outcome == "answered", again.error
    assert (workspace / "AGENTS.md").read_text() == written
