"""``git status`` is read-only only in a repository whose config names no program for it.

Every case is a real repository (``git init`` plus a written ``.git/config``): the hazard is
shown to be real once (git does run the fsmonitor), then each key, include and layout is
shown to reach the rating.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tui.security.risk.assess import assess_command
from tui.security.risk.context import RiskContext
from tui.security.risk.verdict import CommandRisk


def _git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    _git("init", "-q", cwd=root)
    return root


def _config(repo: Path, text: str) -> None:
    with open(repo / ".git" / "config", "a") as handle:
        handle.write(text)


def _rate(command: str, cwd: Path, *, local: bool = True) -> CommandRisk:
    return assess_command(command, RiskContext(cwd=str(cwd), home="/home/tester", local=local))


def _reasons(result: CommandRisk) -> list[str]:
    return [reason for segment in result.segments for reason in segment.reasons]


def test_the_hazard_is_real_git_status_runs_the_fsmonitor(repo: Path, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    hook = tmp_path / "hook"
    hook.write_text(f"#!/bin/sh\ntouch {marker}\n")
    hook.chmod(0o755)
    _config(repo, f"[core]\n\tfsmonitor = {hook}\n")
    subprocess.run(["git", "status"], cwd=repo, capture_output=True, check=False)
    assert marker.exists()
    result = _rate("git status", repo)
    assert result.risk == "high" and not result.read_only
    assert "repository config sets core.fsmonitor: git status would run it" in " ".join(
        _reasons(result)
    )


def test_a_clean_repository_keeps_git_reads_low_and_read_only(repo: Path) -> None:
    _config(repo, "[user]\n\tname = x\n[core]\n\tfsmonitor = false\n")
    for command in ("git status", "git log --oneline", "git diff", "git show HEAD", "git branch"):
        result = _rate(command, repo)
        assert result.risk == "low" and result.read_only, (command, result.segments)


@pytest.mark.parametrize(
    ("config", "command", "key"),
    [
        ("[core]\n\tfsmonitor = ./x\n", "git diff", "core.fsmonitor"),
        ("[core]\n\tpager = ./x\n", "git log", "core.pager"),
        ('[pager]\n\tlog = "./x"\n', "git log", "pager.log"),
        ("[diff]\n\texternal = ./x\n", "git show HEAD", "diff.external"),
        ('[diff "pdf"]\n\ttextconv = ./x\n', "git diff", "diff.pdf.textconv"),
        ('[filter "lfs"]\n\tclean = ./x %f\n', "git status", "filter.lfs.clean"),
        ("[core]\n\tsshCommand = ./x\n", "git fetch", "core.sshcommand"),
        ("[core]\n\teditor = ./x\n", "git commit", "core.editor"),
        ("[gpg]\n\tprogram = ./x\n", "git log --show-signature", "gpg.program"),
        ("[credential]\n\thelper = !./x\n", "git ls-remote origin", "credential.helper"),
        ("[core]\n\thooksPath = .hooks\n", "git commit -m x", "core.hookspath"),
        ("[alias]\n\tst = !./x\n", "git st", "alias.st"),
    ],
)
def test_each_program_naming_key_makes_its_subcommands_high(
    repo: Path, config: str, command: str, key: str
) -> None:
    _config(repo, config)
    result = _rate(command, repo)
    assert result.risk == "high" and not result.read_only, result.segments
    assert any(f"repository config sets {key}:" in r for r in _reasons(result))


def test_a_key_only_affects_the_subcommands_it_runs_for(repo: Path) -> None:
    _config(repo, '[diff "pdf"]\n\ttextconv = ./x\n')
    assert _rate("git status", repo).read_only
    assert not _rate("git diff", repo).read_only


def test_include_path_is_followed(repo: Path, tmp_path: Path) -> None:
    included = tmp_path / "extra.conf"
    included.write_text("[core]\n\tfsmonitor = ./x\n")
    _config(repo, "[include]\n\tpath = ../../extra.conf\n")
    result = _rate("git status", repo)
    assert result.risk == "high"
    assert any("core.fsmonitor" in r for r in _reasons(result))


def test_include_if_is_followed(repo: Path, tmp_path: Path) -> None:
    included = tmp_path / "cond.conf"
    included.write_text("[core]\n\tpager = ./x\n")
    _config(repo, f'[includeIf "gitdir:{repo}/"]\n\tpath = {included}\n')
    assert _rate("git log", repo).risk == "high"


def test_an_include_out_of_reach_leaves_the_repository_unchecked(repo: Path) -> None:
    _config(repo, "[include]\n\tpath = /nonexistent/elsewhere.conf\n")
    result = _rate("git status", repo)
    assert result.risk == "medium" and not result.read_only
    assert any("not fully checked" in r for r in _reasons(result))


def test_a_linked_worktree_reads_the_main_repository_config(repo: Path, tmp_path: Path) -> None:
    (repo / "f").write_text("x")
    _git("add", "f", cwd=repo)
    _git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x", cwd=repo)
    worktree = tmp_path / "wt"
    _git("worktree", "add", "-q", str(worktree), cwd=repo)
    assert _rate("git status", worktree).read_only
    _config(repo, "[core]\n\tfsmonitor = ./x\n")
    assert _rate("git status", worktree).risk == "high"


def test_a_subdirectory_finds_its_repository(repo: Path) -> None:
    sub = repo / "src" / "deep"
    sub.mkdir(parents=True)
    _config(repo, "[core]\n\tfsmonitor = ./x\n")
    assert _rate("git status", sub).risk == "high"


@pytest.mark.parametrize(
    "command",
    [
        "cd elsewhere && git status",
        "git -C /tmp/other status",
        "git --git-dir=/tmp/other/.git status",
        "git --work-tree=/tmp status",
        "GIT_DIR=/tmp/other/.git git status",
    ],
)
def test_git_pointed_elsewhere_is_not_read_only(repo: Path, command: str) -> None:
    result = _rate(command, repo)
    assert not result.read_only and result.risk != "low", result.segments
    assert any("repository config not checked" in r for r in _reasons(result))


def test_without_a_local_repository_git_reads_are_not_checked(repo: Path) -> None:
    for result in (assess_command("git status"), _rate("git status", repo, local=False)):
        assert result.risk == "medium" and not result.read_only
        assert any("repository config not checked" in r for r in _reasons(result))


def test_git_config_environment_that_runs_programs_is_high(repo: Path) -> None:
    for command in (
        "GIT_PAGER=./x git log",
        "GIT_EXTERNAL_DIFF=./x git diff",
        "GIT_SSH_COMMAND=./x git fetch",
        "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.pager GIT_CONFIG_VALUE_0=./x git log",
        "git -c core.fsmonitor=./x status",
    ):
        assert _rate(command, repo).risk == "high", command
    assert _rate("GIT_PAGER=cat git log", repo).read_only
