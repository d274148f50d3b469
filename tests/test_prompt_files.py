"""Files read into the model's prompt pass the secret screen: a repository's AGENTS.md that
links to a key, or into /proc (the agent's own environment), is refused and said; the real
instructions (AGENTS.md and CLAUDE.md) still reach the model.

Through ``build_session`` and the scripted model server: what is checked is the system message
the provider actually received.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tests.scripted_server import ScriptedServer
from tui.config import load_settings
from tui.tools.builtin.skill import list_skills
from tui.wiring import build_session

SECRET = "-----BEGIN OPENSSH PRIVATE KEY----- not-a-real-key"


def system_prompt(server: ScriptedServer) -> str:
    first = server.requests[0].body["messages"][0]
    assert first["role"] == "system"
    return str(first["content"])


async def run_once(workspace: Path, **security: Any) -> tuple[str, list[str]]:
    with ScriptedServer() as server:
        server.add({"text": "ok"})
        overrides: dict[str, Any] = {
            "provider": {"name": "openai", "model": "scripted"},
            "approval": {"mode": "ask"},
            "security": security,
        }
        overrides["provider"].update(base_url=server.openai_base_url, api_key="test-key")
        session = build_session(workspace, load_settings(workspace, overrides=overrides, env={}))
        try:
            await session.submit("hi")
        finally:
            await session.aclose()
        return system_prompt(server), list(session._warnings)


async def test_agents_md_linked_to_a_secret_is_refused_and_said(
    workspace: Path, tmp_path: Path
) -> None:
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "id_rsa").write_text(SECRET)
    (workspace / "AGENTS.md").symlink_to(vault / "id_rsa")
    (workspace / "CLAUDE.md").write_text("Run the tests with make test.")

    prompt, warnings = await run_once(workspace, extra_forbidden_paths=[str(vault)])

    assert SECRET not in prompt
    assert "Run the tests with make test." in prompt  # the honest file still counts
    assert any("AGENTS.md" in w and "protected path" in w for w in warnings), warnings


@pytest.mark.parametrize("target", ["/proc/self/environ", "/proc/self/cmdline", "/dev/zero"])
async def test_agents_md_linked_into_proc_or_dev_is_refused(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, target: str
) -> None:
    monkeypatch.setenv("AGENT_TUI_TEST_MARKER", "marker-from-the-environment")
    (workspace / "AGENTS.md").symlink_to(target)

    prompt, warnings = await run_once(workspace)

    assert "marker-from-the-environment" not in prompt
    assert "Project instructions from" not in prompt
    assert any(target.split("/")[1] in w and "not read" in w for w in warnings), warnings


def test_a_skill_linked_to_a_secret_is_skipped_and_said(workspace: Path, tmp_path: Path) -> None:
    folder = workspace / ".agent-tui" / "skills" / "deploy"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").symlink_to("/proc/self/environ")
    honest = workspace / ".agent-tui" / "skills" / "lint"
    honest.mkdir()
    (honest / "SKILL.md").write_text("---\nname: lint\ndescription: run the linters\n---\nruff")

    scan = list_skills(workspace, tmp_path / "user-skills")

    assert [skill.name for skill in scan.skills] == ["lint"]
    assert any("deploy" in p and "/proc" in p for p in scan.problems), scan.problems
    assert os.environ.get("PATH", "") not in " ".join(s.description for s in scan.skills)
