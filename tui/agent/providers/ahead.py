"""The first request of a ``-p`` run, sent while the rest of agent-tui is still loading.

Why: a headless run spends most of its first half second importing and validating (the
settings' pydantic models, the tools, the policy) before it can say anything to the model, and
asyncio, pydantic and httpx alone already cost 1.7 times a bare ``httpx`` request. The request
itself is almost always the one the same command sent last time, with a new prompt: the same
settings, instructions and tool schemas. So each run remembers its first request (the prompt
left out, the key never written), and the next run with the same command line, environment
and input files sends it from that memory before anything else is imported
(``send_ahead``, called first thing by ``tui.launch``).

Nothing the model says is used on trust: the full start-up then builds its own first request
as always, and ``claim`` hands it the early answer only if the two are the same bytes, to the
same URL, with the same headers. Anything else (an input file changed in a way the memory did
not see, a newer agent-tui) closes the early request unread and sends the real one, so the
worst a stale memory costs is one discarded request. Runs that a person or a program could
still stop before their first request (a prompt piped in or expanded, an MCP or OpenAPI
server, a remote target) are never remembered, so never sent ahead.

Import-light: the standard library only, and httpx once there is something to send.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import stat
import sys
import threading
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import asyncio
    import ssl

    import httpx2 as httpx

FORMAT = 1
"""Bumped whenever what is remembered, or how, changes."""
FOLDER = "first-request"
"""Under the data folder; private to the user (0700, files 0600)."""
KEEP = 32
"""Remembered requests kept (one per command line, workspace and day); the oldest go first."""
KEY_MARK = "\0agent-tui-key\0"
"""Where the API key stands in a remembered header: the key itself is never written."""
SENT_WAIT = 0.1
"""Seconds the launcher waits for the early request to be written to the socket (the lock
is free for it meanwhile); on a slow network start-up goes on beside it."""
VOLATILE = frozenset({"_", "OLDPWD", "SHLVL", "PWD"})
"""Variables a shell changes between two identical commands; nothing reads them."""
NEIGHBOURS = (".agent-tui.toml", "AGENTS.md", "CLAUDE.md", ".mcp.json")
"""Files a run may read from its folder or any folder above it, present or not."""
WORKSPACE_PARTS = (".agent-tui", ".claude", ".agents")
CONFIG_PARTS = ("config.toml", "AGENTS.md", "CLAUDE.md", "skills")
AUDITED = frozenset({"open", "os.listdir", "os.scandir", "sqlite3.connect"})
"""Audit events naming what start-up read: their paths join the remembered inputs."""


def _prompt_flag(arg: str) -> bool:
    return arg in ("-p", "--prompt") or arg.startswith(("--prompt=", "-p"))


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


def _stdin_quiet() -> bool:
    """Nothing can be piped in (``tui.cli_args.piped_input`` would add it to the prompt)."""
    try:
        if sys.stdin is None or sys.stdin.isatty():
            return True
        mode = os.fstat(sys.stdin.fileno()).st_mode
    except (OSError, ValueError, AttributeError):
        return True
    return not (stat.S_ISFIFO(mode) or stat.S_ISREG(mode) or stat.S_ISSOCK(mode))


def _plain_prompt(text: str) -> bool:
    """A prompt sent as typed: not a command, a shell escape or a file mention."""
    return bool(text.strip()) and text == text.strip() and text[0] not in "/!-" and "@" not in text


# -- what start-up read ------------------------------------------------------------------------


class _Reads:
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


# -- the early request -------------------------------------------------------------------------


_END = object()


@dataclass
class _Early:
    """One request sent ahead: its signature, and its answer as it arrives."""

    client: httpx.Client
    request: httpx.Request
    sent: threading.Event = field(default_factory=threading.Event)
    head: Any = None
    """The response once its headers arrived, or the exception that ended the attempt."""
    headed: threading.Event = field(default_factory=threading.Event)
    chunks: deque[Any] = field(default_factory=deque)
    lock: threading.Lock = field(default_factory=threading.Lock)
    wake: Any = None
    """Set by ``claim``: called (thread-safe) when a chunk arrives."""
    closed: bool = False

    def signature(self) -> tuple[Any, ...]:
        return _signature(self.request)

    def pump(self) -> None:
        def trace(name: str, info: Mapping[str, Any]) -> None:
            if name in ("http11.send_request_body.complete", "http2.send_request_body.complete"):
                self.sent.set()

        self.request.extensions["trace"] = trace
        try:
            response = self.client.send(self.request, stream=True)
        except BaseException as error:  # handed to the claimer: a send that failed
            self.head = error
            self.sent.set()
            self.headed.set()
            return
        self.head = response
        self.sent.set()
        self.headed.set()
        try:
            for chunk in response.iter_raw():
                self._put(chunk)
                if self.closed:
                    break
            self._put(_END)
        except BaseException as error:
            self._put(error)
        finally:
            response.close()
            self.client.close()

    def _put(self, item: Any) -> None:
        with self.lock:
            self.chunks.append(item)
            wake = self.wake
        if wake is not None:
            wake()

    def close(self) -> None:
        self.closed = True
        head = self.head
        if head is not None and not isinstance(head, BaseException):
            try:
                head.close()
            except Exception:  # closing from the loop's thread while the pump reads: best effort
                pass


def _signature(request: httpx.Request) -> tuple[Any, ...]:
    return (
        request.method,
        str(request.url),
        sorted((k.lower(), v) for k, v in request.headers.multi_items()),
        request.content,
    )


# -- the run's state ---------------------------------------------------------------------------


@dataclass
class _Run:
    argv: list[str]
    cwd: str
    environ: dict[str, str]
    reads: _Reads
    early: _Early | None = None
    held_back: str | None = None
    asked: bool = False
    """``claim`` was called: the run's first request is built."""


_run: _Run | None = None


def send_ahead(argv: Sequence[str], environ: Mapping[str, str] | None = None) -> bool:
    """Called first by the ``agent-tui`` command: for a ``-p`` run, note what start-up reads,
    and send the remembered first request if this very run was remembered. True if sent.

    Never raises: a problem here only means the run starts the ordinary way.
    """
    global _run
    if not any(_prompt_flag(arg) for arg in argv):
        return False
    environ = dict(os.environ if environ is None else environ)
    try:
        cwd = os.getcwd()
    except OSError:
        return False
    reads = _Reads()
    sys.addaudithook(reads)
    _run = _Run(list(argv), cwd, environ, reads)
    try:
        return _send_remembered(_run)
    except Exception:  # a damaged memory, an odd URL: the ordinary start sends it
        return False


def _send_remembered(run: _Run) -> bool:
    if not _stdin_quiet():
        return False
    folder = data_folder(run.environ) / FOLDER
    for index, word in enumerate(run.argv):
        if not _plain_prompt(word):
            continue
        path = folder / f"{command_key(run.argv, index, run.cwd, run.environ)}.json"
        try:
            with open(path, "rb") as file:
                if not _private(os.fstat(file.fileno())):
                    return False
                memory = json.loads(file.read())
        except (OSError, ValueError):
            continue
        if memory.get("format") != FORMAT or not _unchanged(memory["inputs"]):
            return False
        key = run.environ.get(memory["key_variable"])
        if not key:
            return False
        body = memory["body"]
        _place(body, memory["prompt_path"], word)
        headers = {
            name: value.replace(KEY_MARK, key) if isinstance(value, str) else value
            for name, value in memory["headers"].items()
        }
        early = _start(memory["url"], body, headers, memory["timeout"], tls=memory["tls"])
        run.early = early
        early.sent.wait(SENT_WAIT)
        return True
    return False


def _private(found: os.stat_result) -> bool:
    """Written by this user and no one else can have changed it."""
    return found.st_uid == os.getuid() and not found.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def _place(body: Any, path: Sequence[str | int], value: str) -> None:
    here = body
    for step in path[:-1]:
        here = here[step]
    here[path[-1]] = value


def _start(
    url: str, body: Any, headers: dict[str, str], timeout: Sequence[float], *, tls: bool
) -> _Early:
    import httpx2 as httpx

    context = _context(tls)
    connect, read, write, pool = timeout
    client = httpx.Client(
        timeout=httpx.Timeout(connect=connect, read=read, write=write, pool=pool), verify=context
    )
    request = client.build_request("POST", url, json=body, headers=headers)
    early = _Early(client, request)
    threading.Thread(target=early.pump, name="first-request", daemon=True).start()
    return early


def _context(tls: bool) -> ssl.SSLContext:
    """The context the provider's own client would use (``tui.tools.tls``), made once."""
    from tui.tools import tls as shared

    return shared.adopt_now(tls=tls)


def hold_back(reason: str) -> None:
    """This run must not be remembered (a remote target, MCP or OpenAPI servers): whatever
    was sent ahead is dropped when the real request comes."""
    if _run is not None and _run.held_back is None:
        _run.held_back = reason


async def claim(request: httpx.Request) -> httpx.Response | None:
    """The early answer for ``request``, if it was sent ahead as these very bytes; else
    None, and the early request (if any) is closed unread. Only the run's first request is
    ever answered from here.

    An early request that failed before its answer began (a connection refused a moment
    ago) is forgotten: the real one goes out at once, as if none had been sent.
    """
    import asyncio

    global _run
    run = _run
    if run is None or run.asked:
        return None
    run.asked = True
    run.reads.on = False
    early, run.early = run.early, None
    if early is None:
        return None  # the run stays, for ``remember``
    if run.held_back is not None or early.signature() != _signature(request):
        early.close()
        import logging

        logging.getLogger(__name__).warning(
            "the first request sent ahead of start-up was not this run's (%s): closed "
            "unread, and the real one sent",
            run.held_back or "its settings, instructions or tools changed since remembered",
        )
        return None
    try:
        await asyncio.to_thread(early.headed.wait)
    except BaseException:  # cancelled while the model had not answered yet
        early.close()
        raise
    if isinstance(early.head, BaseException):
        return None  # it failed to go out: the real send goes now, the run stays to remember
    _run = None  # answered from memory: the memory is current
    return _adopted(early, request, asyncio.get_running_loop())


def _adopted(
    early: _Early, request: httpx.Request, loop: asyncio.AbstractEventLoop
) -> httpx.Response:
    import asyncio

    import httpx2 as httpx

    arrived = asyncio.Event()

    class Chunks(httpx.AsyncByteStream):
        async def __aiter__(self) -> Any:
            while True:
                with early.lock:
                    item = early.chunks.popleft() if early.chunks else None
                    if item is None:
                        arrived.clear()
                if item is None:
                    await arrived.wait()
                    continue
                if item is _END:
                    return
                if isinstance(item, BaseException):
                    raise item
                yield item

        async def aclose(self) -> None:
            early.close()

    with early.lock:
        early.wake = lambda: loop.call_soon_threadsafe(arrived.set)
    head = early.head
    return httpx.Response(
        head.status_code,
        headers=head.headers.raw,
        stream=Chunks(),
        request=request,
        extensions={
            key: value
            for key, value in head.extensions.items()
            if key in ("http_version", "reason_phrase")
        },
    )


def remember(
    request: httpx.Request,
    *,
    url: str,
    body: Mapping[str, Any],
    headers: Mapping[str, str],
    secrets: Sequence[str],
    timeout: Sequence[float | None],
    tls: bool,
    key_variables: Mapping[str, str],
) -> None:
    """After the run's first request went out the ordinary way: keep it for the next run
    with the same command line, unless this run is one never sent ahead.

    ``key_variables``: the provider key variables by name, to find the one the key came
    from (a key read from a file is not remembered: it would have to be written down).
    """
    global _run
    run, _run = _run, None
    if run is None or not run.asked or run.held_back is not None or not _stdin_quiet():
        return
    try:
        _write(run, request, url, body, headers, secrets, timeout, tls, key_variables)
    except (OSError, ValueError, TypeError):
        pass  # the next run starts the ordinary way


def _write(
    run: _Run,
    request: httpx.Request,
    url: str,
    body: Mapping[str, Any],
    headers: Mapping[str, str],
    secrets: Sequence[str],
    timeout: Sequence[float | None],
    tls: bool,
    key_variables: Mapping[str, str],
) -> None:
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages or len(messages) > 2:
        return  # history came first
    last = len(messages) - 1
    found = [
        (index, ["messages", last, *path])
        for index, word in enumerate(run.argv)
        if _plain_prompt(word)
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
        "url": url,
        "headers": kept_headers,
        "key_variable": names[0],
        "timeout": list(timeout),
        "tls": tls,
        "prompt_path": prompt_path,
        "body": _with(body, prompt_path, ""),
        "inputs": _inputs(run),
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


def _inputs(run: _Run) -> list[list[Any]]:
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
