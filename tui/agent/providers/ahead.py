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

import os
import sys
import threading
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tui.agent.providers.ahead_memory import (
    Command,
    Reads,
    Recalled,
    Sent,
    forget,
    recall,
    switched_off,
    write,
)
from tui.warm.flags import headless

if TYPE_CHECKING:
    import asyncio
    import ssl

    import httpx2 as httpx

__all__ = ["Sent", "claim", "hold_back", "remember", "send_ahead", "turn_off"]

SENT_WAIT = 0.1
"""Seconds the launcher waits for the early request to be written to the socket (the lock
is free for it meanwhile); on a slow network start-up goes on beside it."""


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
            try:
                wake()
            except RuntimeError:  # the loop is closed: nobody reads any more
                self.closed = True

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
    command: Command
    early: _Early | None = None
    held_back: str | None = None
    asked: bool = False
    """``claim`` was called: the run's first request is built."""
    recalled: Recalled | None = None
    """The memory of this command, sent ahead only once confirmed."""
    confirmed: bool = False
    """The real first request was the remembered one: the next run may send it ahead."""


_run: _Run | None = None


def send_ahead(argv: Sequence[str], environ: Mapping[str, str] | None = None) -> bool:
    """Called first by the ``agent-tui`` command: for a ``-p`` run, note what start-up reads,
    and send the remembered first request if this very run was remembered. True if sent.

    Never raises: a problem here only means the run starts the ordinary way.
    """
    global _run
    if not headless(list(argv)):
        return False
    environ = dict(os.environ if environ is None else environ)
    if switched_off(environ):
        return False
    try:
        cwd = os.getcwd()
    except OSError:
        return False
    reads = Reads()
    sys.addaudithook(reads)
    _run = run = _Run(Command(list(argv), cwd, environ, reads))
    try:
        run.recalled = recalled = recall(run.command)
        if recalled is None or not recalled.confirmed:
            return False
        run.early = _start(recalled)
    except Exception:  # a damaged memory, an odd URL: the ordinary start sends it
        return False
    run.early.sent.wait(SENT_WAIT)
    return True


def _start(recalled: Recalled) -> _Early:
    import httpx2 as httpx

    context = _context(recalled.tls)
    connect, read, write_, pool = recalled.timeout
    client = httpx.Client(
        timeout=httpx.Timeout(connect=connect, read=read, write=write_, pool=pool),
        verify=context,
    )
    request = client.build_request(
        "POST", recalled.url, json=recalled.body, headers=recalled.headers
    )
    early = _Early(client, request)
    threading.Thread(target=early.pump, name="first-request", daemon=True).start()
    return early


def _context(tls: bool) -> ssl.SSLContext:
    """The context the provider's own client would use (``tui.tools.tls``), made once."""
    from tui.tools import tls as shared

    return shared.adopt_now(tls=tls)


def turn_off() -> None:
    """``[agent] send_ahead = false``: nothing of this command is remembered any more."""
    hold_back("[agent] send_ahead is off")
    if _run is not None:
        forget(_run.command)


def hold_back(reason: str) -> None:
    """This run must not be remembered (a remote target, MCP or OpenAPI servers): whatever
    was sent ahead is dropped when the real request comes."""
    if _run is not None and _run.held_back is None:
        _run.held_back = reason


async def claim(request: httpx.Request, client: httpx.AsyncClient) -> httpx.Response | None:
    """The early answer for ``request``, if it was sent ahead as these very bytes; else
    None, and the early request (if any) is closed unread. Only the run's first request is
    ever answered from here.

    A memory is sent ahead only once confirmed: once a run built the very request it holds
    (checked here, with ``client`` building the remembered one). So a command whose first
    request differs every time (a clock in an instruction file, say) is never sent ahead
    twice in vain.

    An early request that failed before its answer began (a connection refused a moment
    ago) is forgotten: the real one goes out at once, as if none had been sent.
    """
    import asyncio

    global _run
    run = _run
    if run is None or run.asked:
        return None
    run.asked = True
    run.command.reads.on = False
    early, run.early = run.early, None
    if early is None:
        recalled = run.recalled
        if recalled is not None and run.held_back is None:
            again = client.build_request(
                "POST", recalled.url, json=recalled.body, headers=recalled.headers
            )
            run.confirmed = _signature(again) == _signature(request)
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
        run.confirmed = True  # the right request, failed to go out: the real send goes now
        return None
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


def remember(sent: Sent, key_variables: Mapping[str, str]) -> None:
    """After the run's first request went out the ordinary way: keep it for the next run
    with the same command line, unless this run is one never sent ahead.

    ``key_variables``: the provider key variables by name, to find the one the key came
    from (a key read from a file is not remembered: it would have to be written down).
    """
    global _run
    run, _run = _run, None
    if run is None or not run.asked or run.held_back is not None:
        return
    try:
        write(run.command, sent, key_variables, confirmed=run.confirmed)
    except (OSError, ValueError, TypeError):
        pass  # the next run starts the ordinary way
