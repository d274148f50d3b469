"""The skill tool over real skill folders in a workspace and a user folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import Harness
from tui.exec.local import LocalBackend
from tui.security.permissions import ApprovalMode
from tui.security.policy import SecurityPolicy
from tui.tools.base import missing_description_sections
from tui.tools.builtin.skill import MAX_LISTING_CHARS, SkillTool, list_skills, skill_tools
from tui.tools.registry import ToolRegistry
from tui.tools.result import ToolResult


def write_skill(root: Path, folder: str, front: str, body: str = "Do the thing.\n") -> Path:
    path = root / folder
    path.mkdir(parents=True, exist_ok=True)
    (path / "SKILL.md").write_text(f"---\n{front}\n---\n{body}")
    return path


@pytest.fixture
def user_dir(tmp_path: Path) -> Path:
    path = tmp_path / "config" / "skills"
    path.mkdir(parents=True)
    return path


def skill_harness(workspace: Path, user_dir: Path) -> Harness:
    policy = SecurityPolicy(workspace, approval_mode=ApprovalMode.READ_ONLY)
    backend = LocalBackend(default_cwd=str(workspace))
    return Harness(workspace, policy, ToolRegistry(skill_tools(workspace, user_dir)), backend)


async def load(h: Harness, name: str) -> ToolResult:
    return await h.call("skill", {"name": name})


async def test_loads_instructions_folder_and_files_from_every_root(
    workspace: Path, user_dir: Path
) -> None:
    pdf = write_skill(
        workspace / ".agent-tui" / "skills",
        "pdf-forms",
        "name: pdf-forms\ndescription: Fill in PDF forms.\nlicense: MIT",
        "# PDF forms\n\nRun `scripts/fill.py` on the form.\n",
    )
    (pdf / "scripts").mkdir()
    (pdf / "scripts" / "fill.py").write_text("print('fill')\n")
    (pdf / "reference.md").write_text("fields\n")
    (pdf / "__pycache__").mkdir()
    (pdf / "__pycache__" / "x.pyc").write_bytes(b"\0")
    write_skill(
        workspace / ".claude" / "skills", "changelog", "name: changelog\ndescription: Write it."
    )
    write_skill(user_dir, "haiku", "name: haiku\ndescription: Answer in haiku.")
    h = skill_harness(workspace, user_dir)
    result = await load(h, "pdf-forms")
    assert not result.is_error, result.text
    assert result.text.startswith("# Skill: pdf-forms\nDescription: Fill in PDF forms.")
    assert f"Folder: {pdf}" in result.text
    assert "- reference.md\n- scripts/fill.py\n" in result.text
    assert "SKILL.md" not in result.text.split("## Instructions")[0].split("Folder:")[1]
    assert "__pycache__" not in result.text
    assert result.text.rstrip().endswith("Run `scripts/fill.py` on the form.")
    assert "name: pdf-forms" not in result.text  # the front matter is not repeated
    assert result.details["metadata"] == {"license": "MIT"}
    assert result.details["files"] == ["reference.md", "scripts/fill.py"]
    assert result.details["source"] == "workspace"
    claude = await load(h, "changelog")
    assert not claude.is_error and "Write it." in claude.text
    assert "none" in claude.text.split("## Instructions")[0]
    user = await load(h, "HAIKU")  # names match case-insensitively as a fallback
    assert not user.is_error and user.details["source"] == "user"


async def test_workspace_wins_a_name_clash(workspace: Path, user_dir: Path) -> None:
    agent = write_skill(
        workspace / ".agent-tui" / "skills", "deploy", "name: deploy\ndescription: Project way."
    )
    claude = write_skill(
        workspace / ".claude" / "skills", "deploy", "name: deploy\ndescription: Claude way."
    )
    user = write_skill(user_dir, "my-deploy", "name: deploy\ndescription: My personal way.")
    scan = list_skills(workspace, user_dir)
    assert [s.name for s in scan.skills] == ["deploy"]
    assert scan.skills[0].folder == agent
    assert {s.folder for s in scan.shadowed} == {claude, user}
    h = skill_harness(workspace, user_dir)
    result = await load(h, "deploy")
    assert "Project way." in result.text and "personal" not in result.text
    assert set(result.details["shadowed"]) == {str(claude), str(user)}
    # Without the workspace copies the user's skill is the one found.
    only_user = list_skills(workspace / "elsewhere", user_dir)
    assert [(s.name, s.source) for s in only_user.skills] == [("deploy", "user")]


async def test_broken_skill_files_are_skipped_with_problems(
    workspace: Path, user_dir: Path
) -> None:
    write_skill(user_dir, "good", "name: good\ndescription: Works.")
    write_skill(user_dir, "bad-yaml", "name: bad-yaml\ndescription: [unclosed")
    write_skill(user_dir, "no-description", "name: no-description")
    write_skill(user_dir, "a-list", "- just\n- a list")
    (user_dir / "no-front").mkdir()
    (user_dir / "no-front" / "SKILL.md").write_text("# Just markdown\n")
    (user_dir / "binary").mkdir()
    (user_dir / "binary" / "SKILL.md").write_bytes(b"---\nname: \xff\xfe\n---\n")
    (user_dir / "empty-folder").mkdir()
    (user_dir / "stray-file.md").write_text("not a skill folder")
    scan = list_skills(workspace, user_dir)
    assert [s.name for s in scan.skills] == ["good"]
    problems = "\n".join(scan.problems)
    assert len(scan.problems) == 5
    assert "bad-yaml/SKILL.md: skipped, front matter is not valid YAML" in problems
    assert "no-description/SKILL.md: skipped, description is missing" in problems
    assert "a-list/SKILL.md: skipped, front matter must be a mapping" in problems
    assert "no-front/SKILL.md: skipped, no YAML front matter" in problems
    assert "binary/SKILL.md: skipped, not UTF-8" in problems
    tool = SkillTool(workspace, user_dir)
    assert tool.problems == scan.problems
    assert "- good: Works." in tool.description and "bad-yaml" not in tool.description
    h = skill_harness(workspace, user_dir)
    assert not (await load(h, "good")).is_error
    broken = await load(h, "bad-yaml")
    assert broken.is_error and "NotFound" in broken.text
    assert "Available skills, closest first: good" in broken.text
    assert "not valid YAML" in broken.text  # says why the one asked for was skipped


async def test_unknown_name_lists_skills_closest_first(workspace: Path, user_dir: Path) -> None:
    for name in ("web-scraping", "pdf-forms", "pdf-merge", "spreadsheet"):
        write_skill(user_dir, name, f"name: {name}\ndescription: About {name}.")
    h = skill_harness(workspace, user_dir)
    result = await load(h, "pdf-form")
    assert result.is_error and "NotFound" in result.text
    listed = result.text.split("closest first: ")[1].split(", ")
    assert listed[0] == "pdf-forms" and listed[1] == "pdf-merge"
    assert set(listed) == {"web-scraping", "pdf-forms", "pdf-merge", "spreadsheet"}
    empty = skill_harness(workspace, user_dir / "none")
    nothing = await load(empty, "anything")
    assert nothing.is_error and "no skills are installed" in nothing.text


async def test_description_lists_skills_within_a_cap(workspace: Path, user_dir: Path) -> None:
    none = SkillTool(workspace, user_dir)
    assert missing_description_sections(none.description) == []
    assert "none installed right now" in none.description
    write_skill(user_dir, "alpha", "name: alpha\ndescription: >\n  First skill,\n  folded.")
    small = SkillTool(workspace, user_dir)
    assert "- alpha: First skill, folded.\n" in small.description
    assert '{"name": "alpha"}' in small.description
    assert missing_description_sections(small.description) == []
    assert small.openai_definition()["function"]["description"] == small.description
    for index in range(100):
        write_skill(
            user_dir, f"skill-{index:03d}", f"name: skill-{index:03d}\ndescription: {'x' * 500}"
        )
    many = SkillTool(workspace, user_dir)
    assert len(many.description) < MAX_LISTING_CHARS + 1500
    assert "more (ask for one by name)" in many.description
    assert "x" * 400 not in many.description  # each description is cut too
    assert missing_description_sections(many.description) == []


async def test_skill_added_mid_session_is_found(workspace: Path, user_dir: Path) -> None:
    h = skill_harness(workspace, user_dir)
    assert (await load(h, "late")).is_error
    write_skill(
        workspace / ".claude" / "skills", "late-skill", "description: Added later.", "Steps.\n"
    )
    result = await load(h, "late-skill")  # no name key: the folder's name is the skill's
    assert not result.is_error, result.text
    assert "Added later." in result.text and result.text.rstrip().endswith("Steps.")


def test_a_remote_workspace_still_has_the_users_skills(tmp_path: Path) -> None:
    """A workspace on an SSH host is not readable here: the user's own skills still are."""
    from tui.tools.builtin.catalog import builtin_tools

    user = tmp_path / "user-skills"
    (user / "deploy").mkdir(parents=True)
    (user / "deploy" / "SKILL.md").write_text("---\nname: deploy\ndescription: Ship\n---\nGo.\n")
    scan = list_skills(None, user)
    assert [s.name for s in scan.skills] == ["deploy"]
    assert "skill" in [tool.name for tool in builtin_tools(None, None)]
