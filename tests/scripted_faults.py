"""The ways a model server fails mid-answer, played on a real socket for all three wire formats.

A step ``{"fault": NAME, ...answer}`` streams that answer (text and tool calls, as any step)
and breaks it the way NAME says; the next step of the script is what the retry gets:

- ``drop_before_first_byte``: the connection closes before a byte of the response;
- ``drop_after_first_byte``: headers and the first event, then the connection drops;
- ``mid_tool_call``: the answer up to the middle of its first tool call's arguments, then a drop;
- ``overloaded``: the same, then an overload error event inside the 200 stream;
- ``close_without_length``: no length and no chunking (the body ends when the socket closes),
  closed in the middle of a line before the answer's end;
- ``close_without_length_after_finish``: the same framing, the whole answer sent, and the
  close cutting the very last line (usage / end marker) in half: a complete answer;
- ``malformed_line``: a ``data:`` line that is not JSON in the middle of the stream;
- ``stall``: a few events, then silence until the client goes away;
- ``keepalive_only``: keep-alive comments (and Anthropic ``ping`` events) for ever, no answer.
"""

from __future__ import annotations

import contextlib
import select
import socket
from collections.abc import Callable
from typing import Any

FAULTS = (
    "drop_before_first_byte",
    "drop_after_first_byte",
    "mid_tool_call",
    "overloaded",
    "close_without_length",
    "malformed_line",
    "stall",
    "keepalive_only",
)
"""Every fault after which the request must be asked again (``..._after_finish`` is not)."""

_ARGUMENT_MARKS = (b'"arguments"', b"input_json_delta", b"function_call_arguments.delta")


def first_argument_event(events: list[bytes]) -> int:
    """Index of the first event carrying a piece of a tool call's arguments."""
    for index, event in enumerate(events):
        if any(mark in event for mark in _ARGUMENT_MARKS) and b'"arguments":""' not in event:
            return index
    raise AssertionError("the step has no tool call arguments to cut")


def overload_event(api: str) -> bytes:
    if api == "anthropic":
        return (
            b"event: error\ndata: "
            b'{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n'
        )
    if api == "responses":
        return (
            b"event: error\ndata: "
            b'{"type":"error","code":"server_error","message":"The server is overloaded",'
            b'"param":null,"sequence_number":9}\n\n'
        )
    return b'data: {"error":{"message":"Overloaded","type":"overloaded_error","code":529}}\n\n'


def play_fault(handler: Any, api: str, fault: str, events: list[bytes]) -> None:
    """Break ``events`` (the answer's SSE events) on ``handler``'s connection as ``fault``."""
    write: Callable[[bytes], None] = handler._write
    if fault == "drop_before_first_byte":
        handler._cut()
        return
    middle = first_argument_event(events) + 1
    if fault in ("close_without_length", "close_without_length_after_finish"):
        _headers(handler, chunked=False)
        if fault == "close_without_length":
            body = b"".join(events[:middle]) + events[middle][: len(events[middle]) // 2]
        else:
            body = b"".join(events)
            body = body[: len(body) - len(events[-1]) // 2]
        write(body)
        _close_gracefully(handler)
        return
    _headers(handler, chunked=True)

    def chunk(data: bytes) -> None:
        write(b"%X\r\n%s\r\n" % (len(data), data))

    if fault == "drop_after_first_byte":
        chunk(events[0])
        handler._cut()
    elif fault == "mid_tool_call":
        for event in events[:middle]:
            chunk(event)
        handler._cut()
    elif fault == "overloaded":
        for event in events[:middle]:
            chunk(event)
        chunk(overload_event(api))
        write(b"0\r\n\r\n")
    elif fault == "malformed_line":
        for event in events[:2]:
            chunk(event)
        chunk(b'data: {"choices": [{"delta": {"content": "x"\n\n')
        for event in events[2:]:
            chunk(event)
        write(b"0\r\n\r\n")
    elif fault == "stall":
        for event in events[:middle]:
            chunk(event)
        handler._wait_for_disconnect()
    elif fault == "keepalive_only":
        beat = (
            b'event: ping\ndata: {"type": "ping"}\n\n'
            if api == "anthropic"
            else b": keep-alive\n\n"
        )
        scripted = handler.server.scripted
        while not scripted.stopping.wait(0.05):
            try:
                chunk(beat)
            except Exception:  # the client went away
                break
    else:
        raise ValueError(f"unknown fault {fault!r}")


def _headers(handler: Any, *, chunked: bool) -> None:
    handler.send_response(200)
    handler.send_header("Content-Type", "text/event-stream; charset=utf-8")
    handler.send_header("Cache-Control", "no-cache")
    if chunked:
        handler.send_header("Transfer-Encoding", "chunked")
    else:
        handler.send_header("Connection", "close")
    handler.end_headers()
    handler._write(b"")


def _close_gracefully(handler: Any) -> None:
    """End the body the only way this framing can: close (a FIN, not a reset)."""
    handler.close_connection = True
    with contextlib.suppress(OSError):
        handler.wfile.flush()
        handler.connection.shutdown(socket.SHUT_WR)
        # Let the client read to the end before the socket goes away.
        select.select([handler.connection], [], [], 1.0)


__all__ = ["FAULTS", "first_argument_event", "overload_event", "play_fault"]
