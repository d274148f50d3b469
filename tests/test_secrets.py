"""Secrets stay out of reach of the file tools, whatever path, link or search root names them.

Every call goes through the real dispatch (``ToolRegistry.execute``) with a real
``SecurityPolicy`` over a fake HOME full of credentials, and a workspace holding a symlink
and a hard link to the SSH key. The content of a secret must never appear in any result.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import pytest

from tests.conftest import Harness
from tui.events import ApprovalAnswer, ApprovalRequested
from tui.exec.local import LocalBackend
from tui.locations import config_dir
from tui.security.permissions import ApprovalMode
from tui.security.policy import SecurityPolicy
from tui.security.settings import SecuritySettings
from tui.tools.base import Tool
from tui.tools.builtin.files.tools import ListFilesTool, ReadFileTool, WriteFileTool
from tui.tools.builtin.notebook import notebook_tools
from tui.tools.builtin.search.glob_search import GlobSearchTool
from tui.tools.builtin.search.grep_search import GrepSearchTool
from tui.tools.builtin.search.ripgrep import SearchEngine
from tui.tools.builtin.skill import SkillTool
from tui.tools.registry import ToolRegistry

MARK = "SECRETMARK"

SECRETS = [
    ".ssh/id_rsa",
    ".config/gh/hosts.yml",
    ".npmrc",
    ".pypirc",
    ".vault-token",
    ".bash_history",
    ".zsh_history",
    ".aws/credentials",
    ".docker/config.json",
    ".kube/config",
    ".git-credentials",
    ".netrc",
]
SECRET_NAMES = ["id_rsa", "hosts.yml", ".npmrc", ".pypirc", ".vault-token", "credentials"]


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A HOME holding every kind of credential, each with its own marker line."""
    root = tmp_path / "home"
    for rel in SECRETS:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"{MARK}-{rel}\n")
    (root / ".ssh" / "id_rsa.pub").write_text(f"{MARK}-public\n")
    (root / "notes.txt").write_text("plain notes\n")
    monkeypatch.setenv("HOME", str(root))
    return root


@pytest.fixture
def links(home: Path, workspace: Path) -> Path:
    """A workspace with a symlink and a hard link to the key, beside an ordinary file."""
    (workspace / "readme.md").write_text("an ordinary file\n")
    (workspace / "key-link").symlink_to(home / ".ssh" / "id_rsa")
    os.link(home / ".ssh" / "id_rsa", workspace / "key-copy.txt")
    return workspace


def harness(
    workspace: Path,
    engine: SearchEngine = "auto",
    *,
    mode: ApprovalMode = ApprovalMode.FULL_AUTO,
    settings: SecuritySettings | None = None,
    approver: object | None = None,
) -> Harness:
    """The real registry and policy; built after HOME is set, so ``~`` means the fake home."""
    policy = SecurityPolicy(workspace, settings, approval_mode=mode, approver=approver)  # type: ignore[arg-type]
    backend = LocalBackend(default_cwd=str(workspace))
    list_engine: Literal["shell", "python"] = "python" if engine == "python" else "shell"
    tools: list[Tool[Any]] = [
        ReadFileTool(),
        WriteFileTool(),
        ListFilesTool(engine=list_engine),
        GlobSearchTool(engine=engine),
        GrepSearchTool(engine=engine),
        *notebook_tools(),
        SkillTool(workspace, workspace / "user-skills"),
    ]
    return Harness(workspace, policy, ToolRegistry(tools), backend)


class Approver:
    """Answers every request with ``answer`` and keeps what it was asked."""

    def __init__(self, answer: ApprovalAnswer) -> None:
        self.answer = answer
        self.requests: list[ApprovalRequested] = []

    async def __call__(self, request: ApprovalRequested) -> ApprovalAnswer:
        self.requests.append(request)
        return self.answer


ENGINES: list[SearchEngine] = ["rg", "python"]


def without_notes(text: str) -> str:
    """The result minus its ``note:`` lines (the withheld note names kinds of secrets)."""
    return "\n".join(line for line in text.split("\n") if not line.startswith("note: "))


@pytest.fixture
def other_process() -> Iterator[int]:
    """A second process whose environment holds a secret."""
    env = dict(os.environ, API_KEY=f"{MARK}-env")
    proc = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE, env=env
    )
    try:
        yield proc.pid
    finally:
        proc.kill()
        proc.wait()


# -- read_file -------------------------------------------------------------------------------


@pytest.mark.parametrize("rel", SECRETS)
async def test_read_file_refuses_every_secret(home: Path, workspace: Path, rel: str) -> None:
    h = harness(workspace)
    for path in (f"~/{rel}", str(home / rel)):
        result = await h.call("read_file", {"path": path})
        assert result.is_error, path
        assert MARK not in result.text
        assert "allowed_secret_paths" in result.text


@pytest.mark.parametrize("name", ["key-link", "key-copy.txt"])
async def test_read_file_refuses_a_symlink_or_hard_link_to_the_key(links: Path, name: str) -> None:
    result = await harness(links).call("read_file", {"path": name})
    assert result.is_error and MARK not in result.text
    assert "id_rsa" in result.text


async def test_read_file_refuses_process_environments(
    home: Path, workspace: Path, other_process: int
) -> None:
    h = harness(workspace)
    for path in (
        "/proc/self/environ",
        f"/proc/{other_process}/environ",
        f"/proc/{os.getpid()}/mem",
    ):
        result = await h.call("read_file", {"path": path})
        assert result.is_error and MARK not in result.text, path


async def test_read_file_refuses_agent_tuis_own_config(home: Path, workspace: Path) -> None:
    config = config_dir() / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(f'api_key = "{MARK}-config"\n')
    result = await harness(workspace).call("read_file", {"path": str(config)})
    assert result.is_error and MARK not in result.text


async def test_a_hard_link_made_after_the_first_check_is_caught(
    home: Path, workspace: Path
) -> None:
    (home / ".ssh" / "keys").mkdir()
    h = harness(workspace)
    # A multiply-linked ordinary file: the guard walks the secret places and keeps the index.
    (workspace / "a.txt").write_text("shared\n")
    os.link(workspace / "a.txt", workspace / "b.txt")
    assert not (await h.call("read_file", {"path": "b.txt"})).is_error
    fresh = home / ".ssh" / "keys" / "id_new"  # changes the mtime of keys/ only
    fresh.write_text(f"{MARK}-new-key\n")
    os.link(fresh, workspace / "later.txt")
    result = await h.call("read_file", {"path": "later.txt"})
    assert result.is_error and MARK not in result.text


# -- searching and listing -------------------------------------------------------------------


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("root", ["~", "HOME", "WORKSPACE"])
async def test_grep_never_returns_a_secret(links: Path, engine: SearchEngine, root: str) -> None:
    h = harness(links, engine)
    home = Path(os.environ["HOME"])
    path = {"~": "~", "HOME": str(home), "WORKSPACE": str(links)}[root]
    for mode in ("content", "files_with_matches", "count"):
        result = await h.call("grep_search", {"pattern": MARK, "path": path, "output_mode": mode})
        assert not result.is_error, result.text
        assert MARK not in result.text.replace(f"`{MARK}`", "")
        assert "withheld as secrets" in result.text
        for name in SECRET_NAMES:
            assert name not in without_notes(result.text), (mode, name)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("grep_search", {"pattern": MARK, "path": "~"}),
        ("glob_search", {"pattern": "**/*", "path": "~"}),
    ],
)
async def test_search_does_not_descend_into_secret_places(
    home: Path, engine: SearchEngine, tool: str, args: dict[str, str]
) -> None:
    """Twelve places are withheld whole: ripgrep is told not to enter them (without the
    exclusions it would return both files of ~/.ssh, and the count would be thirteen)."""
    result = await harness(home, engine).call(tool, args)
    assert "note: 12 entries withheld as secrets" in result.text, result.text


@pytest.mark.parametrize("engine", ENGINES)
async def test_grep_still_finds_ordinary_files(links: Path, engine: SearchEngine) -> None:
    result = await harness(links, engine).call("grep_search", {"pattern": "ordinary"})
    assert "readme.md" in result.text and "key-copy" not in result.text


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("root", ["~", "HOME", "WORKSPACE"])
async def test_glob_never_returns_a_secret(links: Path, engine: SearchEngine, root: str) -> None:
    h = harness(links, engine)
    home = Path(os.environ["HOME"])
    path = {"~": "~", "HOME": str(home), "WORKSPACE": str(links)}[root]
    result = await h.call("glob_search", {"pattern": "**/*", "path": path})
    assert not result.is_error, result.text
    assert "withheld as secrets" in result.text
    for name in [*SECRET_NAMES, "key-copy", ".bash_history", "config.json"]:
        assert name not in without_notes(result.text), name
    assert ("notes.txt" if root != "WORKSPACE" else "readme.md") in result.text


@pytest.mark.parametrize("engine", ["rg", "python"])
@pytest.mark.parametrize("root", ["~", "WORKSPACE"])
async def test_list_files_never_lists_a_secret(
    links: Path, engine: SearchEngine, root: str
) -> None:
    h = harness(links, engine)
    path = "~" if root == "~" else str(links)
    result = await h.call("list_files", {"path": path, "depth": 10})
    assert not result.is_error, result.text
    assert "withheld as secrets" in result.text
    for name in [*SECRET_NAMES, ".ssh", "key-link", "key-copy", ".zsh_history"]:
        assert name not in without_notes(result.text), name


async def test_listing_a_secret_place_itself_is_refused(home: Path, workspace: Path) -> None:
    h = harness(workspace)
    for call, args in [
        ("list_files", {"path": "~/.ssh"}),
        ("glob_search", {"pattern": "*", "path": "~/.aws"}),
        ("grep_search", {"pattern": MARK, "path": "~/.ssh"}),
    ]:
        result = await h.call(call, args)
        assert result.is_error and "allowed_secret_paths" in result.text, call
        assert MARK not in result.text.replace(f'"{MARK}"', "")


# -- writes ----------------------------------------------------------------------------------


async def test_secrets_are_never_written_even_when_approved(home: Path, workspace: Path) -> None:
    approver = Approver(ApprovalAnswer.allow_once())
    h = harness(workspace, mode=ApprovalMode.ASK, approver=approver)
    result = await h.call("write_file", {"path": "~/.npmrc", "content": "x"})
    assert result.is_error and "never write" in result.text
    notebook = await h.call(
        "notebook_edit",
        {"path": "~/.ssh/evil.ipynb", "action": "insert", "cell_index": 0, "source": "x"},
    )
    assert notebook.is_error
    assert (home / ".npmrc").read_text() == f"{MARK}-.npmrc\n"
    assert not (home / ".ssh" / "evil.ipynb").exists()
    assert approver.requests == []


# -- who may grant a read --------------------------------------------------------------------


@pytest.mark.parametrize("mode", [ApprovalMode.ASK, ApprovalMode.FULL_AUTO])
async def test_an_approved_secret_read_works_for_that_call_only(
    links: Path, mode: ApprovalMode
) -> None:
    approver = Approver(ApprovalAnswer.allow_once())
    h = harness(links, mode=mode, approver=approver)
    for path in ("~/.ssh/id_rsa", "key-link", "key-copy.txt"):
        result = await h.call("read_file", {"path": path})
        assert not result.is_error, result.text
        assert f"{MARK}-.ssh/id_rsa" in result.text
    assert len(approver.requests) == 3
    request = approver.requests[0]
    reasons = [reason for segment in request.segments for reason in segment.reasons]
    assert any(r.startswith("reads a secret: ") and "id_rsa" in r for r in reasons)
    assert request.risk == "high"
    listing = await h.call("list_files", {"path": "~/.ssh"})
    assert not listing.is_error and "id_rsa.pub" in listing.text
    assert len(approver.requests) == 4
    # The next call is asked again, and a "no" refuses it.
    approver.answer = ApprovalAnswer.deny()
    denied = await h.call("read_file", {"path": "~/.ssh/id_rsa"})
    assert denied.is_error and MARK not in denied.text
    assert len(approver.requests) == 5


async def test_allowed_secret_paths_reads_without_asking(home: Path, workspace: Path) -> None:
    approver = Approver(ApprovalAnswer.deny())
    settings = SecuritySettings(allowed_secret_paths=["~/.npmrc"])
    h = harness(workspace, mode=ApprovalMode.ASK, approver=approver, settings=settings)
    result = await h.call("read_file", {"path": "~/.npmrc"})
    assert not result.is_error and f"{MARK}-.npmrc" in result.text
    assert approver.requests == []
    other = await h.call("read_file", {"path": "~/.pypirc"})
    assert other.is_error and MARK not in other.text


async def test_read_only_mode_refuses_a_secret_read_without_asking(
    home: Path, workspace: Path
) -> None:
    approver = Approver(ApprovalAnswer.allow_once())
    h = harness(workspace, mode=ApprovalMode.READ_ONLY, approver=approver)
    result = await h.call("read_file", {"path": "~/.vault-token"})
    assert result.is_error and "allowed_secret_paths" in result.text
    assert MARK not in result.text and approver.requests == []


# -- skills ----------------------------------------------------------------------------------


async def test_a_skill_never_hands_over_a_secret(home: Path, workspace: Path) -> None:
    """A SKILL.md linked to a secret is not loaded; links to keys in a skill folder are not
    listed."""
    secret = home / ".aws" / "config"
    secret.write_text(f"---\nname: leak\ndescription: reads a key\n---\n{MARK}-aws\n")
    skills = workspace / ".agent-tui" / "skills"
    (skills / "leak").mkdir(parents=True)
    (skills / "leak" / "SKILL.md").symlink_to(secret)
    (skills / "tidy").mkdir()
    (skills / "tidy" / "SKILL.md").write_text(
        "---\nname: tidy\ndescription: tidy up\n---\nBe tidy\n"
    )
    (skills / "tidy" / "key").symlink_to(home / ".ssh" / "id_rsa")
    os.link(home / ".ssh" / "id_rsa", skills / "tidy" / "notes.txt")
    h = harness(workspace)
    leak = await h.call("skill", {"name": "leak"})
    assert leak.is_error and MARK not in leak.text
    tidy = await h.call("skill", {"name": "tidy"})
    assert not tidy.is_error and "Be tidy" in tidy.text
    assert "key" not in without_notes(tidy.text) and "notes.txt" not in tidy.text
    assert "withheld as secrets" in tidy.text


async def test_a_relative_extra_forbidden_path_names_a_place_in_the_workspace(
    home: Path, workspace: Path
) -> None:
    (workspace / ".env").write_text(f"TOKEN={MARK}-dotenv\n")
    (workspace / "app.py").write_text("print('hi')\n")
    settings = SecuritySettings(extra_forbidden_paths=[".env"])
    h = harness(workspace, settings=settings)
    assert (await h.call("read_file", {"path": ".env"})).is_error
    found = await h.call("grep_search", {"pattern": MARK})
    assert MARK not in found.text.replace(f"`{MARK}`", "") and "withheld" in found.text
    assert not (await h.call("read_file", {"path": "app.py"})).is_error
