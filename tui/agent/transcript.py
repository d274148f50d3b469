"""Session transcripts: one append-only JSONL file per session, written as things happen.

Why JSONL and append-only: a session must survive the process dying at any moment. Each
record is one line, written and flushed the moment it is appended, so a ``kill -9`` loses
nothing already shown; at worst the record being written is left as half a line, which readers
skip and count instead of failing on. Appending a small line costs microseconds, so the event
loop writes synchronously rather than paying for a thread hop per record.

Why a folder per workspace: ``agent-tui --continue`` wants "the latest session *here*", and
listing one folder is cheaper and simpler than reading every header. The folder name carries
the workspace's basename for people and a hash of its canonical path for uniqueness.

Three kinds of record follow the header: ``event`` (what the UI showed, for replay and audit),
``message`` (the neutral conversation, which is what resuming feeds back to the model) and
``compaction`` (the conversation as sent after it was compacted: every message before it stays
in the file, and resuming starts from this form, then adds the messages recorded after it).
"""

from __future__ import annotations

import builtins
import dataclasses
import datetime as dt
import hashlib
import json
import logging
import re
import secrets
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

from pydantic import ValidationError

from tui.agent.admission import admit_message
from tui.agent.providers.base import ImagePart, Message, ReasoningItem, ToolCall
from tui.agent.record_file import RecordFile
from tui.errors import AgentTuiError
from tui.events import AnyEvent, Event, event_adapter
from tui.locations import data_dir
from tui.views import SessionInfo

log = logging.getLogger(__name__)

FORMAT_VERSION = 1
SUFFIX = ".jsonl"
_MESSAGE_PREFIX = b'{"type":"message"'
_EVENT_PREFIX = b'{"type":"event"'
_SAFE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]*$")
_PREVIEW_CHARS = 60


class SessionNotFound(AgentTuiError):
    """The id names no session file; the message lists recent ones to pick from."""

    title = "Session not found"


class TranscriptError(AgentTuiError):
    """A file in the sessions folder is not a transcript this version can read."""

    title = "Unreadable transcript"


# --------------------------------------------------------------------------- messages


def message_to_json(message: Message) -> dict[str, Any]:
    """Every field, nested tool calls and images included, so a resume loses nothing."""
    return dataclasses.asdict(message)


def message_from_json(data: Mapping[str, Any]) -> Message:
    """The inverse of ``message_to_json``; unknown keys (a newer writer) are ignored."""
    fields = _known_fields(Message, data)
    fields["tool_calls"] = [
        ToolCall(**_known_fields(ToolCall, call)) for call in data.get("tool_calls") or []
    ]
    fields["images"] = [
        ImagePart(**_known_fields(ImagePart, image)) for image in data.get("images") or []
    ]
    fields["reasoning"] = [
        ReasoningItem(**_known_fields(ReasoningItem, item))
        for item in data.get("reasoning") or []
        if isinstance(item, Mapping)
        and isinstance(item.get("data"), dict)
        and item.get("api") in ("anthropic", "responses")
    ]
    return admit_message(Message(**fields))


def _known_fields(cls: type, data: Mapping[str, Any]) -> dict[str, Any]:
    names = {f.name for f in dataclasses.fields(cls)}
    return {key: value for key, value in data.items() if key in names}


def _encode(record: Mapping[str, Any]) -> bytes:
    """One line: compact, ``type`` first (listing counts messages by that prefix without
    parsing), and JSON escapes every newline inside strings, so a record is always one line."""
    return (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode()


# --------------------------------------------------------------------------- transcript


_HELD: dict[Path, Transcript] = {}
"""The transcript of each session file this process has open: another process is refused
the file (its lock), but this one may hand it to a new session object (``/trust`` restarts
the same conversation), and then the old object writes no more."""


class Transcript:
    """One open session file. Each append is written before it returns, or waits in order
    for a disk with room (``tui.agent.record_file``); the file is locked while open."""

    def __init__(self, path: Path, header: Mapping[str, Any], file: RecordFile) -> None:
        self.path = path
        self.header = dict(header)
        self.id: str = str(header["id"])
        self._file = file
        self._handed_over = False
        _HELD[path] = self

    @property
    def closed(self) -> bool:
        return self._handed_over or self._file.closed

    def _hand_over(self) -> RecordFile:
        """Give the open file to a new session object of this process; this one is done."""
        self._handed_over = True
        return self._file

    @property
    def unsaved(self) -> int:
        """Records waiting for room on the disk (0 when the file is whole)."""
        return self._file.unsaved

    @property
    def problem(self) -> str | None:
        """Why records are waiting (``No space left on device``); None while none are."""
        return self._file.problem

    @property
    def dropped(self) -> int:
        """Screen-only records let go while the disk had no room (never a message)."""
        return self._file.dropped

    def on_trouble(self, callback: Callable[[str], None]) -> None:
        """``callback(reason)`` when records start waiting, ``callback("")`` when caught up."""
        self._file.on_trouble = callback

    def append_event(self, event: Event) -> None:
        self._write({"type": "event", "event": event.model_dump(mode="json")}, droppable=True)

    def append_message(self, message: Message) -> None:
        self._write({"type": "message", "message": message_to_json(message)})

    def append_compaction(self, messages: list[Message]) -> None:
        """The conversation as it is sent from now on; the originals stay recorded."""
        self._write({"type": "compaction", "messages": [message_to_json(m) for m in messages]})

    def _write(self, record: Mapping[str, Any], *, droppable: bool = False) -> None:
        if self.closed:
            raise TranscriptError(f"transcript {self.id} is closed; nothing more can be recorded")
        self._file.append(_encode(record), droppable=droppable)

    def close(self) -> bool:
        """Close (and unlock); False when records could not be written (the disk is full)."""
        if self._handed_over:
            return True  # the file lives on in the session it was handed to
        if _HELD.get(self.path) is self:
            del _HELD[self.path]
        return self._file.close()

    async def aclose(self) -> None:
        """Closing a file whose every write is already done is instant: no thread needed."""
        self.close()

    def __enter__(self) -> Transcript:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


# --------------------------------------------------------------------------- reading


@dataclass
class SessionRecords:
    """Everything in one file, with how many lines could not be read."""

    header: dict[str, Any]
    messages: list[Message] = field(default_factory=list)
    """The conversation to send on resume: the last compaction's form, then what followed."""
    saved_messages: list[Message] = field(default_factory=list)
    """Every message ever recorded, compacted away or not."""
    compactions: int = 0
    events: list[AnyEvent] = field(default_factory=list)
    skipped: int = 0
    """Corrupt, partial or unknown lines left out (a killed writer leaves half a line)."""
    skipped_lines: list[int] = field(default_factory=list)
    """Their 1-based line numbers."""


def _read_header(path: Path) -> dict[str, Any]:
    with path.open("rb") as file:
        first = file.readline()
    try:
        header = json.loads(first)
    except (json.JSONDecodeError, UnicodeDecodeError):
        header = None
    if not isinstance(header, dict) or header.get("type") != "session" or "id" not in header:
        raise TranscriptError(f"{path} does not start with a session header")
    if header.get("version", FORMAT_VERSION) > FORMAT_VERSION:
        raise TranscriptError(
            f"{path} was written by a newer agent-tui (format {header['version']})"
        )
    return header


def read_records(path: Path, *, events: bool = True) -> SessionRecords:
    """Parse a transcript, skipping (and counting) every line that cannot be read.

    Read a line at a time, never the whole file at once. ``events=False`` (what a resume
    needs) skips event lines unparsed, so a file of any size resumes in the time its messages
    take to read.
    """
    records = SessionRecords(header=_read_header(path))
    for number, raw in _lines(path):
        if not raw.strip():
            continue
        if not events and raw.startswith(_EVENT_PREFIX):
            continue
        if not _take(records, raw):
            records.skipped += 1
            records.skipped_lines.append(number)
    if records.skipped:
        log.warning(
            "%s: skipped %d unreadable line(s) %s", path, records.skipped, records.skipped_lines
        )
    return records


def _lines(path: Path) -> Iterator[tuple[int, bytes]]:
    """(line number, bytes) after the header; a line is never assumed to fit a chunk."""
    with path.open("rb") as file:
        file.readline()
        yield from enumerate(file, start=2)


def _take(records: SessionRecords, raw: bytes) -> bool:
    """Add one line's record; False when it is corrupt or of a kind this version lacks."""
    try:
        record = json.loads(raw)
        if record["type"] == "message":
            message = message_from_json(record["message"])
            records.messages.append(message)
            records.saved_messages.append(message)
        elif record["type"] == "compaction":
            records.messages = [message_from_json(m) for m in record["messages"]]
            records.compactions += 1
        elif record["type"] == "event":
            records.events.append(event_adapter().validate_python(record["event"]))
        else:
            return False
    except (ValueError, KeyError, TypeError, AttributeError, ValidationError):
        return False
    return True


def _scan_info(path: Path) -> SessionInfo:
    """Header, message count and first user message, parsing only the lines it needs."""
    header = _read_header(path)
    count, preview = 0, ""
    with path.open("rb") as file:
        file.readline()
        for raw in file:
            if not (raw.startswith(_MESSAGE_PREFIX) and raw.endswith(b"\n")):
                continue
            count += 1
            if not preview:
                preview = _user_preview(raw)
    return SessionInfo(
        id=str(header["id"]),
        workspace=str(header.get("workspace", "")),
        created=_parse_time(header.get("created")),
        updated=dt.datetime.fromtimestamp(path.stat().st_mtime, dt.UTC),
        preview=preview,
        message_count=count,
        path=path,
        provider=str(header.get("provider", "")),
        model=str(header.get("model", "")),
    )


def _user_preview(raw: bytes) -> str:
    try:
        message = json.loads(raw)["message"]
    except (ValueError, KeyError, TypeError):
        return ""
    if message.get("role") != "user":
        return ""
    text = " ".join(str(message.get("content", "")).split())
    return text if len(text) <= _PREVIEW_CHARS else text[: _PREVIEW_CHARS - 1] + "…"


def _parse_time(value: Any) -> dt.datetime:
    try:
        return dt.datetime.fromisoformat(str(value))
    except ValueError:
        return dt.datetime.fromtimestamp(0, dt.UTC)


# --------------------------------------------------------------------------- the store


def workspace_key(workspace: Path) -> str:
    """``myproj-1a2b3c4d``: readable, and unique per canonical path (two ``app`` folders
    in different places never share a folder)."""
    canonical = workspace.resolve()
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", canonical.name).strip("._")[:40] or "root"
    digest = hashlib.sha256(str(canonical).encode()).hexdigest()[:8]
    return f"{name}-{digest}"


def new_session_id(now: dt.datetime | None = None) -> str:
    """``20261122-150102-ab12cd``: UTC so ids sort by time across DST and time zones."""
    moment = (now or dt.datetime.now(dt.UTC)).astimezone(dt.UTC)
    return f"{moment:%Y%m%d-%H%M%S}-{secrets.token_hex(3)}"


class SessionStore:
    """The sessions folder: creates, finds, lists and reads transcripts."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = root if root is not None else data_dir() / "sessions"

    def workspace_dir(self, workspace: Path) -> Path:
        return self.root / workspace_key(workspace)

    def create(self, workspace: Path, provider: str, model: str) -> Transcript:
        """Start a new session file with its header already on disk."""
        folder = self.workspace_dir(workspace)
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        now = dt.datetime.now(dt.UTC)
        while True:
            session_id = new_session_id(now)
            path = folder / f"{session_id}{SUFFIX}"
            try:  # exclusive: two sessions started in the same second never share a file
                file = RecordFile.open(path, create=True)
            except FileExistsError:
                continue
            except OSError as error:
                raise TranscriptError(
                    f"cannot create a session file in {folder}: {error.strerror or error}"
                ) from None
            break
        header = {
            "type": "session",
            "id": session_id,
            "workspace": str(workspace.resolve()),
            "created": now.isoformat(timespec="seconds"),
            "provider": provider,
            "model": model,
            "version": FORMAT_VERSION,
        }
        transcript = Transcript(path, header, file)
        transcript._write(header)
        return transcript

    def open(self, session_id: str) -> Transcript:
        """Reopen a session to append to it (resume). A half line left by a killed writer is
        ended first, so it cannot swallow the next record.

        Raises:
            SessionNotFound: no such session.
            SessionBusy: another agent-tui has it open.
            TranscriptError: it cannot be read or written.
        """
        path = self.find(session_id)
        header = _read_header(path)
        held = _HELD.get(path)
        if held is not None and not held.closed:
            return Transcript(path, header, held._hand_over())
        try:
            file = RecordFile.open(path, create=False)
        except OSError as error:
            raise TranscriptError(f"cannot open {path}: {error.strerror or error}") from None
        if not _ends_with_newline(path):
            file.append(b"\n")
        return Transcript(path, header, file)

    def find(self, session_id: str) -> Path:
        """The file of ``session_id`` (or of the one session whose id starts with it)."""
        if _SAFE_ID.match(session_id):
            exact = sorted(self.root.glob(f"*/{session_id}{SUFFIX}"))
            if exact:
                return exact[0]
            prefixed = sorted(self.root.glob(f"*/{session_id}*{SUFFIX}"))
            if len(prefixed) == 1:
                return prefixed[0]
            if prefixed:
                ids = ", ".join(p.stem for p in prefixed[:5])
                raise SessionNotFound(f"session id {session_id!r} is ambiguous: it starts {ids}")
        raise SessionNotFound(self._not_found_message(session_id))

    def _not_found_message(self, session_id: str) -> str:
        recent = sorted(self._files(None), key=_mtime, reverse=True)[:5]
        if not recent:
            return f"no session {session_id!r}: there are no saved sessions in {self.root}"
        ids = ", ".join(path.stem for path in recent)
        return (
            f"no session {session_id!r} in {self.root}. Recent sessions: {ids} "
            "(`agent-tui sessions` lists them all)"
        )

    def list(self, workspace: Path | None = None) -> builtins.list[SessionInfo]:
        """Sessions of one workspace (or all), most recently updated first."""
        infos = []
        for path in self._files(workspace):
            try:
                infos.append(_scan_info(path))
            except (OSError, TranscriptError) as exc:
                log.warning("skipping %s: %s", path, exc)
        return sorted(infos, key=lambda info: (info.updated, info.id), reverse=True)

    def latest(self, workspace: Path) -> SessionInfo | None:
        infos = self.list(workspace)
        return infos[0] if infos else None

    def read(self, session_id: str) -> SessionRecords:
        return read_records(self.find(session_id))

    def load_messages(self, session_id: str) -> builtins.list[Message]:
        """The conversation to hand back to the model when resuming (events left unread)."""
        return read_records(self.find(session_id), events=False).messages

    def load_events(self, session_id: str) -> builtins.list[AnyEvent]:
        """The events to replay into the UI; unreadable lines are skipped (``read`` counts
        them)."""
        return self.read(session_id).events

    def _files(self, workspace: Path | None) -> builtins.list[Path]:
        pattern = f"*{SUFFIX}" if workspace is not None else f"*/*{SUFFIX}"
        base = self.workspace_dir(workspace) if workspace is not None else self.root
        return [path for path in base.glob(pattern) if path.is_file()] if base.is_dir() else []


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def _ends_with_newline(path: Path) -> bool:
    with path.open("rb") as file:
        file.seek(0, 2)
        if file.tell() == 0:
            return True
        file.seek(-1, 2)
        return file.read(1) == b"\n"


# --------------------------------------------------------------------------- display


def format_session_table(infos: list[SessionInfo]) -> str:
    """A plain table for ``agent-tui sessions``: id, local update time, messages, preview."""
    if not infos:
        return "no sessions"
    rows = [("ID", "UPDATED", "MSGS", "FIRST MESSAGE")]
    for info in infos:
        updated = info.updated.astimezone().strftime("%Y-%m-%d %H:%M")
        rows.append((info.id, updated, str(info.message_count), info.preview or "-"))
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    lines = []
    for row in rows:
        cells = [row[0].ljust(widths[0]), row[1].ljust(widths[1]), row[2].rjust(widths[2])]
        lines.append("  ".join([*cells, row[3]]).rstrip())
    return "\n".join(lines)
