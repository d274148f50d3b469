"""Making room in the conversation, cheapest first, losing as little of the work as possible.

Two stages, each only when the one before did not free enough:

1. **Stubs.** An old tool output becomes one line that names the file holding all of it (the
   one truncation already saved, or one saved now), so the model can read it again. Costs no
   request and keeps every call, argument and verdict visible.
2. **Summary.** The older turns are summarised by the model itself, in requests that each fit
   the window (long histories are summarised in chunks, each folding in the summary so far).
   Kept word for word beside the summary: every message the person wrote, the latest task
   list, the files touched, the last turns, and any call still waiting for its result. If the
   summary request fails, a plain list of the calls made stands in for it: compaction never
   loses the person's words and never blocks the session.

Only what is *sent* changes. The transcript keeps every original message; the compacted form
is recorded beside it so that a resumed session sends what the live one would have sent.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from tui.agent.context_window import CHARS_PER_TOKEN, estimate_tokens, message_chars
from tui.agent.providers.base import Message, ToolCall
from tui.safe_text import clean, dumps_or, loads_or
from tui.tools.truncation import envelope, save_full_output

SUMMARY_HEADER = (
    "[Summary of earlier work, written by the model when older turns were compacted to fit the "
    "context window. It is not the person's words: their messages are kept verbatim.]"
)
STUB_MARK = "removed from the conversation to save room"
KEEP_TURNS = 3
"""Model turns (an answer and its results) kept verbatim at the end."""
STUB_MIN_CHARS = 400
"""Shorter outputs cost less than the stub's own explanation: they stay."""
SUMMARY_MAX_CHARS = 12_000
FILES_MAX_CHARS = 3_000
"""The "Files touched" line keeps the newest paths that fit in this."""
FILE_TOOLS = frozenset({"read_file", "write_file", "edit_file", "notebook_edit"})
PATH_KEYS = ("path", "file_path", "filename", "file", "notebook_path")
_SAVED = re.compile(r"saved to (\S+?)\]")
_FILES_LINE = "Files touched: "
_TASKS_HEADER = "Task list (latest):"
_FOLDED_HEADER = "Earlier messages from the person (shortened to fit):"

SUMMARY_SYSTEM = (
    "You summarise an agent's working session so it can continue without the full history. "
    "Write plain text, at most about 600 words: the goal, what was done and found (commands, "
    "results, decisions, errors and how they were resolved), the current state, and what "
    "remains. Name files, functions and commands exactly. Do not invent anything. Do not "
    "address the user and do not call tools."
)

Summarise = Callable[[str, str], Awaitable[str]]
"""(system, prompt) → the model's text; raises ``ProviderError`` when the request fails."""


@dataclass
class Compaction:
    """What a compaction did, for the chat marker and the transcript."""

    messages: list[Message]
    stage: str
    """``stubs`` or ``summary``."""
    stubbed: int = 0
    summarized: int = 0
    kept_user: int = 0
    kept_recent: int = 0
    files: list[str] = field(default_factory=list)
    todo: bool = False
    summary_requests: int = 0
    fallback: bool = False
    """The model's summary failed; a list of the calls made stands in for it."""


def tokens_of(messages: list[Message], fixed_chars: int) -> int:
    return estimate_tokens(fixed_chars + sum(message_chars(m) for m in messages))


def recent_start(messages: list[Message], keep_turns: int) -> int:
    """Index where the last ``keep_turns`` model turns begin (0 when there are fewer)."""
    answers = [i for i, m in enumerate(messages) if m.role == "assistant"]
    if keep_turns <= 0:
        return len(messages)
    return answers[-keep_turns] if len(answers) >= keep_turns else 0


def _unwrap(content: str) -> str:
    """A tool result's own text, out of the harness envelope."""
    data = loads_or(content)
    if isinstance(data, dict) and "result" in data:
        result = data["result"]
        return result if isinstance(result, str) else dumps_or(result, ensure_ascii=False)
    return content


def stub_outputs(messages: list[Message], keep_from: int) -> tuple[list[Message], int]:
    """Stage 1: tool outputs before ``keep_from`` become one line naming their saved file.

    Blocking file writes: callers run this in a thread.
    """
    out: list[Message] = []
    count = 0
    for index, message in enumerate(messages):
        if (
            index >= keep_from
            or message.role != "tool"
            or message.tool_name == "todo_write"
            or len(message.content) < STUB_MIN_CHARS
            or STUB_MARK in message.content
        ):
            out.append(message)
            continue
        text = _unwrap(message.content)
        found = _SAVED.search(text)
        path = found.group(1) if found else None
        if path is None:
            # Ids can repeat across turns: the digest keeps two outputs from sharing a file.
            digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:12]
            path = save_full_output(f"{message.tool_call_id or 'call'}-{digest}", text)
        where = f"; full output in {path} (read it with read_file if needed)" if path else ""
        verdict = "error" if message.is_error else "output"
        stub = f"[{message.tool_name} {verdict} ({len(text)} chars) {STUB_MARK}{where}]"
        out.append(
            Message(
                role="tool",
                content=envelope(stub),
                tool_call_id=message.tool_call_id,
                tool_name=message.tool_name,
                is_error=message.is_error,
            )
        )
        count += 1
    return out, count


def _split(messages: list[Message], keep_turns: int) -> int:
    """Where the verbatim tail starts: the last turns, and any call still without a result."""
    cut = recent_start(messages, keep_turns)
    answered = {m.tool_call_id for m in messages if m.role == "tool"}
    for index, message in enumerate(messages[:cut]):
        if message.role == "assistant" and any(c.id not in answered for c in message.tool_calls):
            return index
    return cut


def _paths(call: ToolCall) -> list[str]:
    if call.name not in FILE_TOOLS:
        return []
    args = loads_or(call.arguments)
    if not isinstance(args, dict):
        return []
    return [clean(str(args[k]))[:300] for k in PATH_KEYS if isinstance(args.get(k), str)]


def _previous(summary: str) -> tuple[str, list[str], str]:
    """A summary message read back: its text, its files, its task list."""
    body = summary.removeprefix(SUMMARY_HEADER).strip()
    files: list[str] = []
    tasks = ""
    if _TASKS_HEADER in body:
        body, tasks = body.split(_TASKS_HEADER, 1)
        tasks = tasks.strip()
    lines = []
    for line in body.splitlines():
        if line.startswith(_FILES_LINE):
            files = [f for f in line.removeprefix(_FILES_LINE).split(", ") if f]
        else:
            lines.append(line)
    return "\n".join(lines).strip(), files, tasks


def _render(message: Message, limit: int = 1_500) -> str:
    if message.role == "user":
        return f"USER: {message.content}"
    if message.role == "assistant":
        calls = "; ".join(f"{c.name}({c.arguments[:300]})" for c in message.tool_calls)
        return f"ASSISTANT: {message.content}" + (f"\n  calls: {calls}" if calls else "")
    text = _unwrap(message.content)
    if len(text) > limit:
        text = text[: limit // 2] + f" …[{len(text) - limit} chars]… " + text[-limit // 2 :]
    flag = " (error)" if message.is_error else ""
    return f"RESULT of {message.tool_name}{flag}: {text}"


def _chunks(lines: list[str], limit: int) -> list[str]:
    chunks: list[str] = []
    current: list[str] = []
    size = 0
    for line in lines:
        line = line[:limit]
        if current and size + len(line) > limit:
            chunks.append("\n".join(current))
            current, size = [], 0
        current.append(line)
        size += len(line) + 1
    if current:
        chunks.append("\n".join(current))
    return chunks


def _fallback(previous: list[str], head: list[Message]) -> str:
    """The calls made, listed, standing in for a summary the model could not write.

    Bounded like a model's summary: it replaces the turns it lists, and the next failed
    compaction folds it into its own, so without a bound it grew by every compaction until
    it alone filled the window. What goes first is the oldest part of the earlier summary.
    """
    calls = [c for m in head if m.role == "assistant" for c in m.tool_calls]
    lines = [f"{len(calls)} earlier tool calls (no model summary could be made):"]
    lines += [f"- {c.name} {c.arguments[:120]}" for c in calls[-60:]]
    new = "\n".join(lines)
    old = "\n".join(previous).strip()
    room = SUMMARY_MAX_CHARS - len(new) - len(_OLDER_CUT) - 2
    if len(old) > room:
        old = _OLDER_CUT + old[len(old) - max(0, room) :].partition("\n")[2]
    return f"{old}\n{new}".strip()


_OLDER_CUT = "[an older part of this summary was dropped to keep it short]\n"


def _bounded_files(files: list[str]) -> list[str]:
    """The newest files touched, as many as ``FILES_MAX_CHARS`` allow."""
    kept: list[str] = []
    size = 0
    for path in reversed(files):
        size += len(path) + 2
        if size > FILES_MAX_CHARS:
            break
        kept.append(path)
    return kept[::-1]


def _keep_users(users: list[Message], budget: int) -> tuple[list[Message], list[str]]:
    """The person's messages to keep word for word within ``budget`` characters: the first
    (the task) and the newest; older ones are shortened into the summary instead (a session
    of a thousand steering messages must still fit the window)."""
    if sum(len(m.content) for m in users) <= budget or len(users) <= 1:
        return users, []
    kept = [users[0]]
    size = len(users[0].content)
    newest: list[Message] = []
    for message in reversed(users[1:]):
        if size + len(message.content) > budget:
            break
        newest.append(message)
        size += len(message.content)
    folded = users[1 : len(users) - len(newest)]
    lines = [f"- {' '.join(m.content.split())[:300]}" for m in folded[-40:]]
    return [*kept, *newest[::-1]], lines


async def summarise(
    messages: list[Message],
    *,
    window: int,
    summarise_fn: Summarise,
    focus: str = "",
    keep_turns: int = KEEP_TURNS,
) -> Compaction | None:
    """Stage 2: replace the turns before the last ones by a summary (``None``: nothing to do)."""
    cut = _split(messages, keep_turns)
    head, tail = messages[:cut], messages[cut:]
    if not any(m.role == "assistant" for m in head):
        return None
    summaries, files, tasks = [], [], ""
    users: list[Message] = []
    lines: list[str] = []
    for message in head:
        if message.role == "user" and message.content.startswith(SUMMARY_HEADER):
            text, old_files, old_tasks = _previous(message.content)
            summaries.append(text)
            files += old_files
            tasks = old_tasks or tasks
            continue
        if message.role == "user":
            users.append(message)
        if message.role == "assistant":
            for call in message.tool_calls:
                files += _paths(call)
        if message.role == "tool" and message.tool_name == "todo_write" and not message.is_error:
            tasks = _unwrap(message.content)
        lines.append(_render(message))
    files = _bounded_files(list(dict.fromkeys(files)))
    users, folded = _keep_users(users, max(4_000, window * CHARS_PER_TOKEN // 4))
    # Each summary request gets at most half the window, so it fits with room to answer.
    limit = max(2_000, window * CHARS_PER_TOKEN // 2 - len(SUMMARY_SYSTEM) - SUMMARY_MAX_CHARS)
    ask = "Summarise the session so far."
    if focus:
        ask += f" Pay most attention to: {focus}"
    summary = "\n".join(summaries)
    requests = 0
    fallback = False
    try:
        for chunk in _chunks(lines, limit):
            before = f"Summary so far:\n{summary}\n\n" if summary else ""
            prompt = f"{before}Conversation to summarise:\n{chunk}\n\n{ask}"
            requests += 1
            summary = clean(await summarise_fn(SUMMARY_SYSTEM, prompt))[:SUMMARY_MAX_CHARS]
    except Exception:  # any failure: the mechanical summary keeps the session going
        summary = _fallback(summaries, head)
        fallback = True
    parts = [SUMMARY_HEADER, summary.strip()]
    if folded:
        parts.append(_FOLDED_HEADER + "\n" + "\n".join(folded))
    if files:
        parts.append(_FILES_LINE + ", ".join(files))
    if tasks:
        parts.append(f"{_TASKS_HEADER}\n{tasks}")
    summary_message = Message(role="user", content="\n\n".join(parts))
    return Compaction(
        messages=[*users, summary_message, *tail],
        stage="summary",
        summarized=len(head) - len(users),
        kept_user=len(users),
        kept_recent=len(tail),
        files=files,
        todo=bool(tasks),
        summary_requests=requests,
        fallback=fallback,
    )
