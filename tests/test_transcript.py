"""Transcripts on real files, and a real writer process killed with SIGKILL."""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tui.agent.providers.base import ImagePart, Message, ToolCall
from tui.agent.transcript import (
    SessionNotFound,
    SessionStore,
    TranscriptError,
    format_session_table,
    message_from_json,
    message_to_json,
    new_session_id,
    workspace_key,
)
from tui.errors import AgentTuiError
from tui.events import (
    ApprovalRequested,
    RiskSegmentView,
    ToolCallCompleted,
    ToolCallStarted,
    ToolOutputChunk,
    TurnEnded,
    TurnStarted,
    UserMessage,
    parse_event,
)
from tui.locations import data_dir

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def own_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Independent of conftest: never write into the real user's data folder."""
    monkeypatch.setenv("AGENT_TUI_CONFIG_DIR", str(tmp_path / "user-config"))
    monkeypatch.setenv("AGENT_TUI_DATA_DIR", str(tmp_path / "user-data"))


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "work" / "myproj"
    root.mkdir(parents=True)
    return root.resolve()


@pytest.fixture
def store() -> SessionStore:
    return SessionStore()


def conversation() -> list[Message]:
    return [
        Message(
            role="user", content="fix the\nbuild ✓", images=[ImagePart("aGVsbG8=", "image/jpeg")]
        ),
        Message(
            role="assistant",
            content="Looking.",
            tool_calls=[
                ToolCall("call_1", "run_shell", '{"command": "make"}'),
                ToolCall("call_2", "read_file", '{"path": "Makefile"}'),
            ],
        ),
        Message(
            role="tool", content='{"result": "ok"}', tool_call_id="call_1", tool_name="run_shell"
        ),
        Message(
            role="tool",
            content="denied",
            tool_call_id="call_2",
            tool_name="read_file",
            is_error=True,
        ),
        Message(role="assistant", content="Done."),
    ]


def events() -> list[object]:
    return [
        UserMessage(text="fix the build"),
        TurnStarted(turn=1),
        ToolCallStarted(
            tool_call_id="call_1",
            tool_name="run_shell",
            arguments={"command": "make", "nested": {"a": [1, 2]}},
            command="make",
        ),
        ToolOutputChunk(
            tool_call_id="call_1",
            tool_name="run_shell",
            stream="stdout",
            text="a\nb\r\n\u2028c\x85d",
        ),
        ToolCallCompleted(
            tool_call_id="call_1",
            tool_name="run_shell",
            is_error=False,
            duration_ms=12.5,
            exit_code=0,
        ),
        ApprovalRequested(
            request_id="r1",
            tool_call_id="call_2",
            tool_name="run_shell",
            arguments={"command": "rm -rf build"},
            risk="high",
            segments=[RiskSegmentView(text="rm -rf build", risk="high", reasons=["deletes"])],
        ),
        TurnEnded(reason="completed", final_text="Done."),
    ]


# ------------------------------------------------------------------ layout and round trips


def test_file_layout_and_header(store: SessionStore, ws: Path) -> None:
    with store.create(ws, "openai", "gpt-4.1") as transcript:
        transcript.append_message(Message(role="user", content="hi"))
    assert re.fullmatch(r"\d{8}-\d{6}-[0-9a-f]{6}", transcript.id)
    folder = transcript.path.parent
    assert folder.parent == data_dir() / "sessions"
    assert re.fullmatch(r"myproj-[0-9a-f]{8}", folder.name) and folder.name == workspace_key(ws)
    assert transcript.path.name == f"{transcript.id}.jsonl"
    raw = transcript.path.read_bytes()
    assert raw.endswith(b"\n") and raw.count(b"\n") == 2
    header = json.loads(raw.split(b"\n")[0])
    created = header.pop("created")
    assert header == {
        "type": "session",
        "id": transcript.id,
        "workspace": str(ws),
        "provider": "openai",
        "model": "gpt-4.1",
        "version": 1,
    }
    assert dt.datetime.fromisoformat(created).tzinfo is not None
    assert transcript.path.stat().st_mode & 0o077 == 0, "transcripts may hold secrets"


def test_messages_round_trip(store: SessionStore, ws: Path) -> None:
    with store.create(ws, "anthropic", "claude-sonnet-4-5") as transcript:
        for message in conversation():
            transcript.append_message(message)
    assert store.load_messages(transcript.id) == conversation()
    for message in conversation():
        assert message_from_json(json.loads(json.dumps(message_to_json(message)))) == message


def test_message_from_json_ignores_keys_a_newer_writer_added() -> None:
    data = message_to_json(conversation()[1])
    data["reasoning"] = "hmm"
    data["tool_calls"][0]["index"] = 0
    assert message_from_json(data) == conversation()[1]


def test_events_round_trip_via_parse_event(store: SessionStore, ws: Path) -> None:
    written = events()
    with store.create(ws, "openai", "gpt-4.1") as transcript:
        for event in written:
            transcript.append_event(event)  # type: ignore[arg-type]
    assert store.load_events(transcript.id) == written
    lines = transcript.path.read_bytes().split(b"\n")[1:-1]
    assert len(lines) == len(written), "every record is exactly one line"
    parsed = [parse_event(json.dumps(json.loads(line)["event"])) for line in lines]
    assert parsed == written


def test_records_are_interleaved_in_order(store: SessionStore, ws: Path) -> None:
    with store.create(ws, "openai", "gpt-4.1") as transcript:
        transcript.append_event(UserMessage(text="one"))
        transcript.append_message(Message(role="user", content="one"))
        transcript.append_event(TurnEnded(reason="completed"))
        transcript.append_message(Message(role="assistant", content="two"))
    records = store.read(transcript.id)
    assert [m.content for m in records.messages] == ["one", "two"]
    assert [e.kind for e in records.events] == ["user_message", "turn_ended"]
    assert records.skipped == 0 and records.header["id"] == transcript.id


# ------------------------------------------------------------------ listing


def test_list_and_latest_keep_workspaces_apart(store: SessionStore, tmp_path: Path) -> None:
    first = (tmp_path / "a" / "app").resolve()
    second = (tmp_path / "b" / "app").resolve()
    first.mkdir(parents=True)
    second.mkdir(parents=True)
    assert workspace_key(first) != workspace_key(second), "same basename, different folders"

    made = {}
    for name, workspace, prompt in [
        ("old", first, "first task"),
        ("new", first, "second task that is quite a lot longer than sixty characters in all"),
        ("other", second, "elsewhere"),
    ]:
        with store.create(workspace, "openai", "gpt-4.1") as transcript:
            transcript.append_event(UserMessage(text=prompt))
            transcript.append_message(Message(role="user", content=prompt))
            transcript.append_message(Message(role="assistant", content="ok"))
        made[name] = transcript
    os.utime(made["old"].path, (1_000_000, 1_000_000))
    os.utime(made["new"].path, (2_000_000, 2_000_000))

    infos = store.list(first)
    assert [i.id for i in infos] == [made["new"].id, made["old"].id]
    assert all(i.workspace == str(first) and i.message_count == 2 for i in infos)
    assert infos[1].preview == "first task"
    assert infos[0].preview.endswith("…") and len(infos[0].preview) == 60
    assert infos[0].updated == dt.datetime.fromtimestamp(2_000_000, dt.UTC)
    latest = store.latest(first)
    assert latest is not None and latest.id == made["new"].id
    assert [i.id for i in store.list(second)] == [made["other"].id]
    assert {i.id for i in store.list()} == {t.id for t in made.values()}
    assert store.latest(tmp_path) is None


def test_preview_skips_non_user_messages(store: SessionStore, ws: Path) -> None:
    with store.create(ws, "openai", "gpt-4.1") as transcript:
        transcript.append_message(Message(role="assistant", content="hello from the model"))
        transcript.append_message(Message(role="user", content="  deploy\n  please "))
    info = store.list(ws)[0]
    assert info.preview == "deploy please" and info.message_count == 2


def test_list_skips_files_that_are_not_transcripts(store: SessionStore, ws: Path) -> None:
    with store.create(ws, "openai", "gpt-4.1") as transcript:
        pass
    (transcript.path.parent / "junk.jsonl").write_text("not json\n")
    assert [i.id for i in store.list(ws)] == [transcript.id]
    with pytest.raises(TranscriptError):
        store.read("junk")


def test_session_table(store: SessionStore, ws: Path) -> None:
    assert format_session_table([]) == "no sessions"
    with store.create(ws, "openai", "gpt-4.1") as transcript:
        transcript.append_message(Message(role="user", content="tidy the logs"))
    table = format_session_table(store.list(ws)).splitlines()
    assert table[0].split() == ["ID", "UPDATED", "MSGS", "FIRST", "MESSAGE"]
    assert table[1].startswith(transcript.id) and table[1].endswith("1  tidy the logs")


def test_ids_sort_by_time() -> None:
    moments = [
        dt.datetime(2025, 12, 31, 23, 59, 59, tzinfo=dt.UTC),
        dt.datetime(2026, 1, 1, 0, 0, 0, tzinfo=dt.UTC),
        dt.datetime(2026, 1, 1, 1, 0, 1, tzinfo=dt.timezone(dt.timedelta(hours=2))),
        dt.datetime(2026, 1, 1, 0, 0, 2, tzinfo=dt.UTC),
    ]
    ids = [new_session_id(moment) for moment in moments]
    # 01:00:01+02:00 is 23:00:01 UTC the day before: the earliest of the four.
    assert ids[2].startswith("20251231-230001-")
    assert sorted(ids) == [ids[2], ids[0], ids[1], ids[3]]


# ------------------------------------------------------------------ resume and damage


def test_resume_appends_to_the_same_file(store: SessionStore, ws: Path) -> None:
    with store.create(ws, "openai", "gpt-4.1") as first:
        first.append_message(Message(role="user", content="before"))
    with store.open(first.id) as resumed:
        assert resumed.path == first.path and resumed.id == first.id
        assert resumed.header["model"] == "gpt-4.1"
        resumed.append_message(Message(role="user", content="after"))
    assert [m.content for m in store.load_messages(first.id)] == ["before", "after"]
    assert first.path.read_text().count('"type":"session"') == 1
    assert len(list(first.path.parent.iterdir())) == 1


def test_truncated_last_line_is_skipped_counted_and_repaired(store: SessionStore, ws: Path) -> None:
    with store.create(ws, "openai", "gpt-4.1") as transcript:
        transcript.append_message(Message(role="user", content="kept"))
        transcript.append_event(TurnStarted(turn=1))
        transcript.append_message(Message(role="assistant", content="cut off " * 20))
    size = transcript.path.stat().st_size
    last = transcript.path.read_bytes().rstrip(b"\n").rsplit(b"\n", 1)[1]
    os.truncate(transcript.path, size - len(last) // 2)  # a writer killed mid-line

    records = store.read(transcript.id)
    assert [m.content for m in records.messages] == ["kept"]
    assert records.skipped == 1 and records.skipped_lines == [4]
    assert store.load_events(transcript.id) == [records.events[0]]
    assert store.list(ws)[0].message_count == 1

    with store.open(transcript.id) as resumed:
        resumed.append_message(Message(role="user", content="resumed"))
    records = store.read(transcript.id)
    assert [m.content for m in records.messages] == ["kept", "resumed"]
    assert records.skipped == 1, "the half line must not swallow the next record"


def test_corrupt_lines_anywhere_are_skipped(store: SessionStore, ws: Path) -> None:
    with store.create(ws, "openai", "gpt-4.1") as transcript:
        transcript.append_message(Message(role="user", content="a"))
    with transcript.path.open("ab") as file:
        file.write(b'{"type":"event","event":{"kind":"from_the_future"}}\n')
        file.write(b'{"type":"mystery"}\n')
        file.write(b"\xff\xfe garbage\n")
        file.write(b'{"type":"message","message":{"content":"no role"}}\n')
    with store.open(transcript.id) as resumed:
        resumed.append_message(Message(role="user", content="b"))
    records = store.read(transcript.id)
    assert [m.content for m in records.messages] == ["a", "b"]
    assert records.skipped == 4 and records.skipped_lines == [3, 4, 5, 6]


KILLED_WRITER = """
import sys
from pathlib import Path
from tui.agent.providers.base import Message
from tui.agent.transcript import SessionStore
from tui.events import ToolOutputChunk

transcript = SessionStore(Path(sys.argv[1])).create(Path(sys.argv[2]), "openai", "gpt-4.1")
for i in range(40):
    transcript.append_message(Message(role="user", content=f"message {i}"))
    transcript.append_event(
        ToolOutputChunk(tool_call_id="c", tool_name="run_shell", stream="stdout", text=f"{i}\\n")
    )
print(transcript.id, flush=True)
sys.stdin.read()  # hold the file open until killed
"""


def test_sigkilled_writer_loses_nothing_it_appended(tmp_path: Path, ws: Path) -> None:
    root = tmp_path / "sessions"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    with subprocess.Popen(
        [sys.executable, "-c", KILLED_WRITER, str(root), str(ws)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
        cwd=REPO,
        text=True,
    ) as writer:
        assert writer.stdout is not None
        session_id = writer.stdout.readline().strip()
        writer.send_signal(signal.SIGKILL)
        assert writer.wait(timeout=30) == -signal.SIGKILL
    store = SessionStore(root)
    records = store.read(session_id)
    assert [m.content for m in records.messages] == [f"message {i}" for i in range(40)]
    assert [e.text for e in records.events] == [f"{i}\n" for i in range(40)]  # type: ignore[union-attr]
    assert records.skipped == 0


# ------------------------------------------------------------------ errors and lifecycle


def test_session_not_found_lists_recent_ids(store: SessionStore, ws: Path) -> None:
    with pytest.raises(SessionNotFound) as empty:
        store.find("20990101-000000-abcdef")
    assert "no saved sessions" in str(empty.value)

    made = []
    for _ in range(2):
        with store.create(ws, "openai", "gpt-4.1") as transcript:
            made.append(transcript.id)
    with pytest.raises(SessionNotFound) as missing:
        store.load_messages("20990101-000000-abcdef")
    message = str(missing.value)
    assert isinstance(missing.value, AgentTuiError)
    assert "20990101-000000-abcdef" in message and all(i in message for i in made)
    assert "agent-tui sessions" in message


def test_find_by_unique_prefix_and_refuses_paths(store: SessionStore, ws: Path) -> None:
    with store.create(ws, "openai", "gpt-4.1") as transcript:
        pass
    assert store.find(transcript.id) == transcript.path
    assert store.find(transcript.id[:-2]) == transcript.path
    for bad in ["../x", "*", "", f"{workspace_key(ws)}/{transcript.id}"]:
        with pytest.raises(SessionNotFound):
            store.find(bad)


def test_ambiguous_prefix(store: SessionStore, ws: Path) -> None:
    folder = store.workspace_dir(ws)
    folder.mkdir(parents=True)
    for suffix in ("aaaaaa", "bbbbbb"):
        header = {"type": "session", "id": f"20260101-000000-{suffix}", "version": 1}
        (folder / f"20260101-000000-{suffix}.jsonl").write_text(json.dumps(header) + "\n")
    with pytest.raises(SessionNotFound, match="ambiguous"):
        store.find("20260101-000000")
    assert store.find("20260101-000000-b").stem.endswith("bbbbbb")


async def test_closed_transcript_refuses_appends(store: SessionStore, ws: Path) -> None:
    transcript = store.create(ws, "openai", "gpt-4.1")
    transcript.append_event(TurnStarted(turn=1))
    await transcript.aclose()
    assert transcript.closed
    with pytest.raises(TranscriptError, match="closed"):
        transcript.append_event(TurnStarted(turn=2))
    assert len(store.load_events(transcript.id)) == 1


def test_append_is_cheap(store: SessionStore, ws: Path) -> None:
    """Appends happen on the event loop: they must stay far below a frame (~16 ms)."""
    event = ToolOutputChunk(
        tool_call_id="c", tool_name="run_shell", stream="stdout", text="x" * 200
    )
    with store.create(ws, "openai", "gpt-4.1") as transcript:
        start = time.perf_counter()
        for _ in range(2000):
            transcript.append_event(event)
        per_append = (time.perf_counter() - start) / 2000
    assert per_append < 500e-6, f"{per_append * 1e6:.1f} µs per append"
