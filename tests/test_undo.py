"""``/undo`` and ``/diff`` in the app: checkpoints in a shadow git store, files put back byte for
byte after an edit, a write and a delete — the real loop, real tools, the scripted model, a
Pilot. The workspace is a git repository of the person's own, whose history must not move."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import with_metadata
from tests.scripted_server import ScriptedServer
from tests.test_ui_app import send, until
from tui.agent.checkpoints import Checkpoints, store_for
from tui.config import load_settings
from tui.locations import data_dir
from tui.ui.app import AgentApp
from tui.ui.chat.panel import InfoBox
from tui.wiring import build_session

pytestmark = pytest.mark.timeout(90)

BINARY = bytes(range(256)) * 3 + b"\x00\xff tail"


def call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A scripted tool call carrying the safety metadata its tool requires."""
    return {"id": call_id, "name": name, "arguments": json.dumps(with_metadata(name, arguments))}


def git(workspace: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=workspace, capture_output=True, text=True, check=True)
    return done.stdout


@pytest.fixture
def repo(workspace: Path) -> Path:
    (workspace / "app.py").write_text("def answer():\n    return 41\n")
    (workspace / "data.bin").write_bytes(BINARY)
    (workspace / "data.bin").chmod(0o755)
    (workspace / ".gitignore").write_text("ignored/\n")
    (workspace / "ignored").mkdir()
    (workspace / "ignored" / "cache.txt").write_text("cached\n")
    git(workspace, "init", "-q")
    git(workspace, "-c", "user.name=t", "-c", "user.email=t@t", "add", "-A")
    git(workspace, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "mine")
    return workspace


def session_for(workspace: Path, server: ScriptedServer) -> Any:
    loaded = load_settings(
        workspace,
        overrides={
            "provider": {
                "name": "openai",
                "model": "scripted",
                "base_url": server.openai_base_url,
                "api_key": "test-key",
            },
            "approval": {"mode": "full-auto"},
        },
        env={},
    )
    return build_session(workspace, loaded, checkpoints=True)


def info_texts(app: AgentApp) -> list[str]:
    return [str(box.render()) for box in app.chat.query(InfoBox)]


async def test_undo_puts_back_an_edit_a_write_and_a_delete_byte_for_byte(repo: Path) -> None:
    head = git(repo, "rev-parse", "HEAD")
    status = git(repo, "status", "--porcelain")
    with ScriptedServer() as server:
        server.add(
            {
                "text": "",
                "tool_calls": [
                    call(
                        "c_edit",
                        "edit_file",
                        {"path": "app.py", "old_string": "41", "new_string": "42"},
                    ),
                    call("c_write", "write_file", {"path": "new/notes.md", "content": "hi\n"}),
                    call("c_rm", "run_shell", {"command": "rm data.bin; echo x > ignored/y"}),
                ],
            },
            {"text": "Changed three files."},
            {"text": "Second turn, nothing changed."},
        )
        session = session_for(repo, server)
        app = AgentApp(session, cursor_blink=False)
        async with app.run_test(size=(120, 40)) as pilot:
            await send(pilot, app, "change things")
            await until(pilot, lambda: len(server.requests) == 2, "the second request")
            await until(pilot, lambda: session._checkpoints.turns, "the turn's checkpoint")
            assert (repo / "app.py").read_text().endswith("return 42\n")
            assert (repo / "new" / "notes.md").exists() and not (repo / "data.bin").exists()
            await send(pilot, app, "say something")
            await until(pilot, lambda: len(server.requests) == 3, "the third request")
            await until(pilot, lambda: not session._loop.running, "the turn to end")
            assert len(session._checkpoints.turns) == 1  # a turn that changed nothing: no entry

            await send(pilot, app, "/diff")
            await until(pilot, lambda: "+++ b/new/notes.md" in chat_markdown(app), "the diff")
            diff = chat_markdown(app)
            assert "-    return 41" in diff and "+    return 42" in diff
            assert "data.bin" in diff and "ignored/y" not in diff

            await send(pilot, app, "/undo list")
            await until(pilot, lambda: any("change things" in t for t in info_texts(app)), "list")

            await send(pilot, app, "/undo")
            await until(pilot, lambda: any("undid turn 1" in t for t in info_texts(app)), "undo")
            report = next(t for t in info_texts(app) if "undid turn 1" in t)

    assert (repo / "app.py").read_bytes() == b"def answer():\n    return 41\n"
    assert (repo / "data.bin").read_bytes() == BINARY
    assert os.stat(repo / "data.bin").st_mode & 0o777 == 0o755
    assert not (repo / "new").exists()
    # What the command did outside the checkpointed files is named, not pretended restored.
    assert "not restorable" in report and "rm data.bin" in report
    assert (repo / "ignored" / "y").exists()
    # The person's own repository: same commit, same status, no shadow refs in it.
    assert git(repo, "rev-parse", "HEAD") == head
    assert git(repo, "status", "--porcelain") == status
    assert "agent-tui" not in git(repo, "for-each-ref")
    assert not list(repo.glob(".git/refs/agent-tui*"))


def chat_markdown(app: AgentApp) -> str:
    return "\n".join(getattr(w, "source", "") or "" for w in app.chat.children)


async def test_undo_n_rewinds_later_turns_too(workspace: Path) -> None:
    (workspace / "a.txt").write_text("one\n")
    with ScriptedServer() as server:
        server.add(
            {
                "text": "",
                "tool_calls": [call("c1", "write_file", {"path": "a.txt", "content": "two\n"})],
            },
            {"text": "1"},
            {
                "text": "",
                "tool_calls": [call("c2", "write_file", {"path": "b.txt", "content": "b\n"})],
            },
            {"text": "2"},
        )
        session = session_for(workspace, server)
        try:
            await session.submit("first")
            await session.submit("second")
            assert [t.number for t in session._checkpoints.turns] == [1, 2]
            assert "2. " in await session.undo("list")
            report = await session.undo("1")
        finally:
            await session.aclose()
    assert "undid turn 1 and the 1 after it" in report
    assert (workspace / "a.txt").read_text() == "one\n" and not (workspace / "b.txt").exists()


async def test_the_store_lives_in_the_data_folder_and_survives_a_resume(workspace: Path) -> None:
    (workspace / "a.txt").write_text("one\n")
    with ScriptedServer() as server:
        server.add(
            {
                "text": "",
                "tool_calls": [call("c1", "write_file", {"path": "a.txt", "content": "x\n"})],
            },
            {"text": "done"},
        )
        session = session_for(workspace, server)
        try:
            await session.submit("change a")
        finally:
            await session.aclose()
        folder = store_for(data_dir(), workspace.resolve())
        assert (folder / "store" / "HEAD").exists()
        assert not folder.is_relative_to(workspace)
        again = Checkpoints(workspace, folder, session.session_id)
        assert [t.changed for t in again.turns] == [["a.txt"]]
        assert "undid turn 1" in await again.undo()
    assert (workspace / "a.txt").read_text() == "one\n"


async def test_undo_with_nothing_to_undo_says_so(workspace: Path) -> None:
    with ScriptedServer() as server:
        session = session_for(workspace, server)
        try:
            assert "no turn of this session changed files" in await session.undo("")
            assert "usage" in await session.undo("soon")
            assert await session.session_diff() == ""
        finally:
            await session.aclose()
