"""What a ``-p`` run remembers of its first request, and whether that still holds.

One file per command (program, command line, folder, environment and day) in the data
folder's ``first-request/``: the request as sent with the prompt taken out and the API key
replaced by the name of the variable it came from, and the state of every file start-up read
or looked for. ``tui.agent.providers.ahead`` sends it ahead of start-up while those files are
as they were; nothing is trusted that another user could have written.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import stat
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FORMAT = 1
"""Bumped whenever what is remembered, or how, changes."""
FOLDER = "first-request"
"""Under the data folder; private to the user (0700, files 0600)."""
KEEP = 32
"""Remembered requests kept (one per command line, workspace and day); the oldest go first."""
KEY_MARK = "\0agent-tui-key\0"
"""Where the API key stands in a remembered header: the key itself is never written."""
VOLATILE = frozenset({"_", "OLDPWD", "SHLVL", "PWD"})
"""Variables a shell changes between two identical commands; nothing reads them."""
NEIGHBOURS = (".agent-tui.toml", "AGENTS.md", "CLAUDE.md", ".mcp.json")
"""Files a run may read from its folder or any folder above it, present or not."""
WORKSPACE_PARTS = (".agent-tui", ".claude", ".agents")
CONFIG_PARTS = ("config.toml", "AGENTS.md", "CLAUDE.md", "skills")
AUDITED = frozenset({"open", "os.listdir", "os.scandir", "sqlite3.connect"})
"""Audit events naming what start-up read: their paths join the remembered inputs."""


@dataclass
class Command:
    """The run as the memory knows it; ``reads`` fills in while it starts."""

    argv: list[str]
    cwd: str
    environ: dict[str, str]
    reads: Reads


@dataclass(frozen=True)
class Recalled:
    """A remembered first request with this run's prompt and key put back."""

    url: str
    body: Any
    headers: dict[str, str]
    timeout: tuple[float, float, float, float]
    tls: bool
    confirmed: bool
    """A later run built this very request: it may be sent ahead."""


SWITCH = "AGENT_TUI_AGENT__SEND_AHEAD"
"""``[agent] send_ahead`` as a variable: read here, before the settings are."""


def switched_off(environ: Mapping[str, str]) -> bool:
    """``AGENT_TUI_AGENT__SEND_AHEAD`` says no, as pydantic reads a false bool."""
    return environ.get(SWITCH, "").strip().lower() in ("0", "false", "f", "no", "n", "off")


def data_folder(environ: Mapping[str, str]) -> Path:
    """``tui.locations.data_dir`` without importing platformdirs when the variable is set."""
    override = environ.get("AGENT_TUI_DATA_DIR")
    if override:
        return Path(override)
    from tui.locations import data_dir

    return data_dir()


def config_folder(environ: Mapping[str, str]) -> Path:
    override = environ.get("AGENT_TUI_CONFIG_DIR")
    if override:
        return Path(override)
    from tui.locations import config_dir

    return config_dir()


def command_key(argv: Sequence[str], index: int, cwd: str, environ: Mapping[str, str]) -> str:
    """What identifies a run apart from its prompt (``argv[index]``): the program, the
    command line, the folder, the environment and the day (the system prompt names it)."""
    from tui import __version__

    words = [None if i == index else arg for i, arg in enumerate(argv)]
    facts = [
        FORMAT,
        __version__,
        sys.executable,
        cwd,
        words,
        sorted((k, v) for k, v in environ.items() if k not in VOLATILE),
        datetime.date.today().isoformat(),
    ]
    return hashlib.sha256(json.dumps(facts).encode("utf-8", "surrogatepass")).hexdigest()


def _look(path: str, *, content: bool = True) -> list[Any]:
    """A path's state as remembered: kind, and for content also size, times and inode."""
    try:
        found = os.stat(path)
    except (OSError, ValueError):
        return [path, None]
    if not content:
        return [path, stat.S_IFMT(found.st_mode)]
    return [path, found.st_mode, found.st_size, found.st_mtime_ns, found.st_ctime_ns, found.st_ino]


def _unchanged(inputs: Iterable[list[Any]]) -> bool:
    for entry in inputs:
        path, was = entry[0], entry[1:]
        now = _look(path, content=len(was) > 1)[1:]
        if now != was:
            return False
    return True


def stdin_quiet() -> bool:
    """Nothing can be piped in (``tui.cli_args.piped_input`` would add it to the prompt)."""
    try:
        if sys.stdin is None or sys.stdin.isatty():
            return True
        mode = os.fstat(sys.stdin.fileno()).st_mode
    except (OSError, ValueError, AttributeError):
        return True
    return not (stat.S_ISFIFO(mode) or stat.S_ISREG(mode) or stat.S_ISSOCK(mode))


def plain_prompt(text: str) -> bool:
    """A prompt sent as typed: not a command, a shell escape or a file mention."""
    return bool(text.strip()) and text == text.strip() and text[0] not in "/!-" and "@" not in text


# -- what start-up read ------------------------------------------------------------------------


class Reads:
    """The files and folders start-up read, from the interpreter's audit events (never the
    interpreter's own modules), until the first request is built."""

    def __init__(self) -> None:
        self.paths: dict[str, None] = {}
        self.on = True
        skip = {sys.prefix, sys.base_prefix, sys.exec_prefix, str(Path(__file__).parents[2])}
        skip.update(p for p in sys.path if "-packages" in p)
        self._skip = tuple(f"{p.rstrip('/')}/" for p in skip)
        self._skip_exactly = frozenset(p.rstrip("/") for p in sys.path if p)
        """Where modules are looked for (the import system lists them): not inputs."""

    def __call__(self, event: str, args: tuple[Any, ...]) -> None:
        if not self.on or event not in AUDITED or not args:
            return
        try:  # an audit hook that raises would fail the open it watches
            self._note(event, args)
        except Exception:
            pass

    def _note(self, event: str, args: tuple[Any, ...]) -> None:
        path = args[0]
        if isinstance(path, os.PathLike):
            path = os.fspath(path)
        if event == "open" and (
            len(args) < 3
            or not isinstance(args[2], int)
            or args[2] & (os.O_WRONLY | os.O_RDWR | os.O_CREAT)
        ):
            return  # written, not read: its own output is no input of the request
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        if not isinstance(path, str) or not path.startswith("/"):
            return
        if path.startswith(("/proc/", "/sys/", "/dev/", *self._skip)):
            return
        if path.endswith((".py", ".pyc", ".so", ".pth")) or path in self._skip_exactly:
            return
        if f"/{FOLDER}/" in path:
            return  # the memory itself
        self.paths[path] = None


# -- recalling and remembering -----------------------------------------------------------------


def recall(command: Command) -> Recalled | None:
    """The memory of this very command, if its files are unchanged and it is the user's own."""
    if not stdin_quiet():
        return None
    folder = data_folder(command.environ) / FOLDER
    for index, word in enumerate(command.argv):
        if not plain_prompt(word):
            continue
        path = folder / f"{command_key(command.argv, index, command.cwd, command.environ)}.json"
        try:
            with open(path, "rb") as file:
                if not _private(os.fstat(file.fileno())):
                    return None
                memory = json.loads(file.read())
        except (OSError, ValueError):
            continue
        if memory.get("format") != FORMAT or not _unchanged(memory["inputs"]):
            return None
        key = command.environ.get(memory["key_variable"])
        if not key:
            return None
        body = memory["body"]
        _place(body, memory["prompt_path"], word)
        headers = {
            name: value.replace(KEY_MARK, key) if isinstance(value, str) else value
            for name, value in memory["headers"].items()
        }
        connect, read, write, pool = memory["timeout"]
        return Recalled(
            memory["url"],
            body,
            headers,
            (connect, read, write, pool),
            memory["tls"],
            memory.get("confirmed") is True,
        )
    return None


def forget(command: Command) -> None:
    """Remove what is remembered of this command, whichever word is its prompt."""
    folder = data_folder(command.environ) / FOLDER
    for index in range(len(command.argv)):
        key = command_key(command.argv, index, command.cwd, command.environ)
        try:
            (folder / f"{key}.json").unlink(missing_ok=True)
        except OSError:
            pass  # a folder we cannot write holds nothing we wrote


def _private(found: os.stat_result) -> bool:
    """Written by this user and no one else can have changed it."""
    return found.st_uid == os.getuid() and not found.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def _place(body: Any, path: Sequence[str | int], value: str) -> None:
    here = body
    for step in path[:-1]:
        here = here[step]
    here[path[-1]] = value


@dataclass(frozen=True)
class Sent:
    """A first request as the provider sent it, for ``remember``."""

    url: str
    body: Mapping[str, Any]
    headers: Mapping[str, str]
    secrets: Sequence[str]
    """The API key (the provider's ``ApiInfo.secrets``)."""
    timeout: Sequence[float | None]
    """httpx's connect, read, write and pool limits."""
    tls: bool


def write(run: Command, sent: Sent, key_variables: Mapping[str, str], *, confirmed: bool) -> None:
    """Keep ``sent`` for the next run of this command (silently not, where it cannot be);
    ``confirmed``: it was built twice the same, so the next run may send it ahead."""
    if not stdin_quiet():
        return  # what was piped in is part of the prompt
    body, headers, secrets, timeout = sent.body, sent.headers, sent.secrets, sent.timeout
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages or len(messages) > 2:
        return  # history came first
    last = len(messages) - 1
    found = [
        (index, ["messages", last, *path])
        for index, word in enumerate(run.argv)
        if plain_prompt(word)
        for path in _occurrences(messages[last], word)
    ]
    if len(found) != 1:
        return  # the prompt is not one word of the command line
    index, prompt_path = found[0]
    if None in timeout:
        return
    key = secrets[0] if len(secrets) == 1 and len(secrets[0]) >= 8 else None
    names = [name for name, value in key_variables.items() if key and value == key]
    if key is None or len(names) != 1:
        return
    kept_headers = {name: value.replace(key, KEY_MARK) for name, value in headers.items()}
    if KEY_MARK not in "".join(kept_headers.values()):
        return
    memory = {
        "format": FORMAT,
        "url": sent.url,
        "headers": kept_headers,
        "key_variable": names[0],
        "timeout": list(timeout),
        "tls": sent.tls,
        "prompt_path": prompt_path,
        "body": _with(body, prompt_path, ""),
        "inputs": _inputs(run),
        "confirmed": confirmed,
    }
    text = json.dumps(memory)
    if key in text:
        return
    folder = data_folder(run.environ) / FOLDER
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    name = command_key(run.argv, index, run.cwd, run.environ)
    temporary = folder / f".{name}.{os.getpid()}"
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as file:
        file.write(text)
    os.replace(temporary, folder / f"{name}.json")
    _prune(folder)


def _occurrences(value: Any, text: str, path: list[str | int] | None = None) -> list[list[Any]]:
    path = path or []
    if isinstance(value, str):
        return [path] if value == text else []
    if isinstance(value, Mapping):
        items: Iterable[tuple[Any, Any]] = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    else:
        return []
    return [hit for key, item in items for hit in _occurrences(item, text, [*path, key])]


def _with(body: Mapping[str, Any], path: Sequence[str | int], value: str) -> Any:
    copy = json.loads(json.dumps(body))
    _place(copy, path, value)
    return copy


def _inputs(run: Command) -> list[list[Any]]:
    """Every path whose change may change the first request, as it is now."""
    seen: dict[str, bool] = dict.fromkeys(run.reads.paths, True)
    here = Path(run.cwd)
    # The workspace is the cwd, or a folder the command line names (--workspace DIR).
    named = (Path(here, word) for word in run.argv if word and not word.startswith("-"))
    workspaces = [here, *(path for path in named if path.is_dir())]
    for workspace in dict.fromkeys(path.resolve() for path in workspaces):
        for folder in (workspace, *workspace.parents):
            for name in NEIGHBOURS:
                seen.setdefault(str(folder / name), True)
            seen.setdefault(str(folder / ".git"), False)  # only whether it is there
        for name in WORKSPACE_PARTS:
            seen.setdefault(str(workspace / name), True)
    config = config_folder(run.environ)
    for name in CONFIG_PARTS:
        seen.setdefault(str(config / name), True)
    seen.setdefault(str(config), True)
    return [_look(path, content=content) for path, content in seen.items()]


def _prune(folder: Path) -> None:
    entries = sorted(folder.glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in entries[KEEP:]:
        old.unlink(missing_ok=True)
