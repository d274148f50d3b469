"""What the rating context changes: where relative paths point, which shell reads ``#``, which
places are secret — and that a verdict cached for one context is never served for another."""

from __future__ import annotations

import pytest

from tui.security.risk.assess import assess_command
from tui.security.risk.context import RiskContext

HOME = "/home/tester"
AT_HOME = RiskContext(cwd=HOME, home=HOME, local=False)
IN_PROJECT = RiskContext(cwd=f"{HOME}/src/app", home=HOME, local=False)


@pytest.mark.parametrize(
    "command",
    ["cat .ssh/id_rsa", "head -1 .npmrc", "grep -r token .", "rg token", "tar czf /tmp/h.tgz ."],
)
def test_relative_paths_are_secret_when_the_command_starts_at_home(command: str) -> None:
    assert assess_command(command, AT_HOME).reads_secret
    assert not assess_command(command, IN_PROJECT).reads_secret


def test_a_literal_cd_is_followed() -> None:
    assert assess_command("cd ~ && cat .npmrc", IN_PROJECT).reads_secret
    assert assess_command("cd .. && cd .. && grep -r x .", IN_PROJECT).reads_secret
    assert not assess_command("cd src && cat .npmrc", IN_PROJECT).reads_secret


def test_recursion_into_a_folder_that_holds_a_secret_is_a_secret_read() -> None:
    for command in ("grep -r x ~", "grep -R x /home", "cp -r ~ /tmp/x", "find ~ -exec cat {} +"):
        result = assess_command(command, IN_PROJECT)
        assert result.reads_secret and result.risk == "high", command
    for command in ("grep -r x src", "find ~ -name '*.py'", "ls -la ~"):
        assert not assess_command(command, IN_PROJECT).reads_secret, command


def test_a_comment_is_code_unless_the_shell_is_known_to_read_it_as_a_comment() -> None:
    command = "echo hi # ; rm -rf x"
    bash = RiskContext(cwd=HOME, home=HOME, shell="bash")
    assert assess_command(command, bash).risk == "low"
    for context in (None, RiskContext(cwd=HOME, home=HOME, shell="zsh")):
        result = assess_command(command, context)
        assert result.risk == "high" and not result.read_only
        assert any("interactive_comments" in r for s in result.segments for r in s.reasons)


def test_a_comment_that_is_only_words_stays_low() -> None:
    for command in ("ls # list files", "# note\ngit log --oneline -3 # recent", "cat a # b c"):
        result = assess_command(command, RiskContext(cwd="/srv", home=HOME, local=False))
        assert result.risk in ("low", "medium"), command  # git unchecked off this machine
        assert not result.reads_secret


def test_configured_secret_places_count() -> None:
    context = RiskContext(cwd="/srv/app", home=HOME, secrets=("/srv/app/prod.env",))
    assert assess_command("cat prod.env", context).reads_secret
    assert not assess_command("cat prod.env", RiskContext(cwd="/srv/app", home=HOME)).reads_secret


def test_verdicts_are_cached_per_context() -> None:
    first = assess_command("cat .npmrc", IN_PROJECT)
    assert not first.reads_secret
    assert assess_command("cat .npmrc", AT_HOME).reads_secret
    assert assess_command("cat .npmrc", IN_PROJECT) is first


@pytest.mark.parametrize("command", ["./ls", "bin/cat README.md", "/tmp/git status", "~/bin/rg x"])
def test_a_program_outside_the_system_folders_is_unknown_whatever_its_name(command: str) -> None:
    result = assess_command(command, IN_PROJECT)
    assert result.risk == "unknown" and not result.read_only


def test_system_paths_to_known_programs_keep_their_rating() -> None:
    assert assess_command("/usr/bin/ls -la", IN_PROJECT).read_only
    assert assess_command("/bin/cat README.md", IN_PROJECT).read_only
