"""Bash rules matched on what bash will run (issue 37, items 2 and 3): the shell grammar, allow only when
sure, deny after normalisation, redirections through the path gate, "always" saving the exact command."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.engine.permissions import Permissions, suggest_rule
from app.tools.approval import needs_approval


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    folder.mkdir()
    return folder


def rules(ws: Path, *, allow=(), ask=(), deny=()) -> Permissions:
    return Permissions.load(ws, {"allow": list(allow), "ask": list(ask), "deny": list(deny)})


def kind(ws: Path, command: str, **given) -> str | None:
    return rules(ws, **given).check("shell", {"command": command}).kind


# -- item 2: the commands never ride an allow rule -------------------------------------------------
@pytest.mark.parametrize(
    "command",
    [
        "npm test $'\\'' ; touch X #'",  # ANSI-C quoting hides the `;` from a quote-only splitter
        "npm test #'\ntouch X\n#'",  # a comment hides the newline
        'npm test $"x" ; touch X',  # a locale string
        "npm test <<EOF\n$(touch X)\nEOF",  # a substitution in an unquoted heredoc
        "npm test && f() { touch X; }",  # a function body is a command too
        "npm test 'unterminated",  # a syntax error: doubt, no match
        "npm test\r; touch X",  # control characters: doubt
        "npm test ${x:-$(touch X)}",
        "PATH=/tmp/evil npm test",  # an assignment changes what runs
        "npm test; x=1",
    ],
)
def test_a_prefix_rule_never_allows_another_command_hidden_by_quoting(ws: Path, command: str) -> None:
    assert kind(ws, command, allow=["Bash(npm test:*)"]) is None


@pytest.mark.parametrize(
    "command",
    [
        "npm test",
        "npm test -- --ci 'a;b' \"c|d\"",
        "npm test # a comment; touch X",
    ],
)
def test_the_same_rule_still_allows_what_it_names(ws: Path, command: str) -> None:
    assert kind(ws, command, allow=["Bash(npm test:*)"]) == "allow"


def test_a_quoted_heredoc_is_text_not_commands(ws: Path) -> None:
    from app.model.shell_syntax import parse_shell

    command = "cat <<'EOF'\n$(touch X); rm -rf /\nEOF"
    assert kind(ws, command, allow=["Bash(cat:*)"]) == "allow"
    assert [c.words for c in parse_shell(command).commands] == [("cat",)]


# -- item 2: deny after normalisation -------------------------------------------------------------------------
@pytest.mark.parametrize(
    "command",
    [
        "curl https://x",
        "env curl https://x",
        "env -i FOO=1 curl x",
        "command curl x",
        "command -p curl x",
        "builtin exec curl x",
        "exec curl x",
        "exec -a name curl x",
        "\\curl x",
        "c'u'rl x",
        'c"u"rl x',
        "$'cu'rl x",
        "/usr/bin/curl x",
        "./bin/curl x",
        "timeout 5 curl x",
        "nice -n 5 nohup curl x",
        "sudo -u root curl x",
        "xargs -n 1 curl < urls",
        "echo $(curl x)",
        "bash -c 'curl x'",
        "sh -ec 'curl x'",
        "eval 'curl x'",
        "env -S 'curl x'",
        "true && (curl x)",
        "for u in a; do curl $u; done",
        "CI=1 curl x",
    ],
)
def test_deny_rules_see_through_what_bash_normalises(ws: Path, command: str) -> None:
    assert kind(ws, command, allow=["Bash"], deny=["Bash(curl:*)"]) == "deny"


@pytest.mark.parametrize(
    "command", ["c{u,}rl x", "/usr/bin/cur? x", "$CMD x", "${X} x", 'bash -c "$S"', "eval $S"]
)
def test_a_deny_rule_that_cannot_tell_makes_the_call_ask(ws: Path, command: str) -> None:
    verdict = rules(ws, allow=["Bash"], deny=["Bash(curl:*)"]).check("shell", {"command": command})
    assert verdict.kind == "ask"
    assert "cannot tell whether the deny rule Bash(curl:*)" in verdict.reason


def test_a_dynamic_argument_asks_only_where_the_rule_could_match(ws: Path) -> None:
    assert kind(ws, "rm -rf $X", allow=["Bash"], deny=["Bash(rm -rf /)"]) == "ask"
    assert kind(ws, "ls $X", allow=["Bash"], deny=["Bash(rm -rf /)"]) == "allow"
    assert kind(ws, "grep curl notes.txt", allow=["Bash"], deny=["Bash(curl:*)"]) == "allow"


# -- item 2: redirections are file accesses --------------------------------------------------------------------
def test_redirections_are_paths_for_the_gate(ws: Path) -> None:
    from app.tools.approval import shell_paths

    found = shell_paths("npm test > /tmp/x 2>&1 < in.txt >> logs/out.txt &> /dev/null", ws)
    assert found.writes == (Path("/tmp/x"), ws / "logs" / "out.txt")
    assert found.reads == (ws / "in.txt",)
    assert shell_paths("echo > $F", ws).unknown and shell_paths("cd /tmp && echo > x", ws).unknown


@pytest.mark.parametrize("mode", ["never-ask", "auto-edit"])
def test_a_redirection_outside_the_workspace_asks_even_when_a_rule_allows_the_command(
    ws: Path, mode: str
) -> None:
    permissions = rules(ws, allow=["Bash(npm test:*)"])
    args = {"command": "npm test > /tmp/x"}
    assert permissions.check("shell", args).kind == "allow"  # the command is allowed …
    ask, why = needs_approval("shell", args, mode, ws)
    assert ask and "outside the workspace: /tmp/x" in why  # … the write outside still asks
    assert needs_approval("shell", {"command": "npm test > out.txt"}, "never-ask", ws) == (
        False,
        "approval mode never-ask",
    )
    ask, why = needs_approval("shell", {"command": "npm test > $OUT"}, "never-ask", ws)
    assert ask and "cannot name before it runs" in why


def test_edit_and_read_deny_rules_apply_to_redirections(ws: Path) -> None:
    permissions = rules(ws, allow=["Bash"], deny=["Edit(./.env)", "Read(./secrets/**)"])
    verdict = permissions.check("shell", {"command": "echo KEY=1 > .env"})
    assert verdict.kind == "deny" and "Edit(./.env)" in verdict.reason and "> " in verdict.reason
    assert permissions.check("shell", {"command": "wc -l < secrets/key.pem"}).kind == "deny"
    assert permissions.check("shell", {"command": "echo hi > notes.txt"}).kind == "allow"


# -- item 3: "always" remembers this command, not a pattern -----------------------------------------------------
def test_always_allowing_a_command_with_a_star_saves_it_exactly(ws: Path) -> None:
    rule = suggest_rule("shell", {"command": "rm -f build/*"}, ws)
    assert rule == "Bash(rm -f build/\\*)"
    permissions = rules(ws, allow=[rule])
    assert permissions.check("shell", {"command": "rm -f build/*"}).kind == "allow"
    for other in (
        "rm -f build/ ../outside/victim.txt",
        "rm -f build/x",
        "rm -f build/* ~/x",
        "rm -f build/*; id",
    ):
        assert permissions.check("shell", {"command": other}).kind is None, other


def test_an_exact_approval_of_a_compound_command_matches_it_again(ws: Path) -> None:
    command = "make clean && make -j4  'all targets'"
    permissions = rules(ws, allow=[suggest_rule("shell", {"command": command}, ws)])
    assert permissions.check("shell", {"command": command}).kind == "allow"
    assert permissions.check("shell", {"command": "make clean && make -j4 'all targets' && id"}).kind is None
    assert permissions.check("shell", {"command": "make clean && make -j4 'all  targets'"}).kind is None
