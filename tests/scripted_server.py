"""A real model server on 127.0.0.1 that plays a script, for tests of everything above HTTP.

Mocking httpx would test our assumptions about the wire; this server puts real bytes on a real
socket in both wire formats (``POST /v1/chat/completions`` and ``POST /v1/messages``), shaped
like the recorded streams in ``tests/fixtures`` and checked against the official SDKs in
``test_wire_format_sdks.py``. It can also fail the ways real servers fail: error statuses,
``Retry-After``, a connection cut mid-stream, a stream that never ends.

Script: a JSON list of steps, one consumed per request, in order. When it runs out every request
gets the text ``(script exhausted)``. A step is one of:

- an answer: ``{"text": "...", "tool_calls": [{"id": "call_1", "name": "run_shell",
  "arguments": "{\\"command\\": \\"ls\\"}"}]}``; optional ``stop_reason`` (``end_turn``,
  ``tool_use``, ``max_tokens``; inferred by default), ``usage`` (``{"input_tokens": N,
  "output_tokens": N}``, optionally ``cached_tokens``, ``cache_write_tokens``,
  ``reasoning_tokens``; ``input_tokens`` is the whole prompt, as agent-tui counts it, and each
  API gets its own split). Text and arguments are split into several deltas. ``thinking``: a
  list of Anthropic thinking / redacted_thinking blocks, streamed before the text as the API
  does (thinking_delta pieces, then one signature_delta). ``reasoning``: Responses API
  reasoning items (see ``tests/scripted_responses.py``, which serves ``POST /v1/responses``).
- a failure: ``{"status": 500}`` with optional ``body`` (JSON, sent as is; by default an
  error object in the endpoint's own shape with ``message``), ``retry_after`` (seconds or an
  HTTP date, sent as ``Retry-After``) and ``headers``.
- ``{"hang": true}``: headers, then nothing until the client disconnects.
- ``{"raw_file": "x.sse"}``: that file's bytes as the body, byte for byte (``content_type``,
  ``chunk_size``); a relative path is taken from the script file's folder.
- ``{"stream_error": {"type": "overloaded_error", "message": "Overloaded"}, "after_events": 1}``:
  an error event inside a 200 stream.

- ``{"fault": "mid_tool_call", ...answer}``: that answer's stream broken one of the ways
  listed in ``tests/scripted_faults.py`` (drops, an overload event, a close with no length,
  a malformed line, a stall, keep-alives only).

Options on answers: ``cut_after_events: N`` (send N events, then close the socket with the body
unfinished; with ``"end_body": true`` finish the HTTP body cleanly but still without the end
marker) and ``delay_between_events`` (seconds).

A window (``ScriptedServer(window_tokens=N)``): a request whose body is over ``N`` tokens (body
bytes / 4) is refused, without consuming a step, with the context-length error a real server
sends (``window_error``: ``auto`` is the endpoint's own API; also ``responses`` (its 400),
``vllm``, ``llamacpp`` and ``ollama``; see ``context_error``), and answers report that count as
their prompt usage. The Responses API refuses a streamed request in its stream, with a
``response.failed`` event (``error.code = "context_length_exceeded"``), as OpenAI does.
``summary_text``: a request without tools (a compaction's summary request) gets this text,
also without consuming a step; ``summary_requests`` counts them. ``summary_status``: such a
request fails with this HTTP status instead (summaries that never work).

In-process: ``with ScriptedServer([...]) as server:`` then ``server.base_url``,
``server.requests``. As a subprocess:
``python -m tests.scripted_server --script FILE.json --port-file F [--log REQUESTS.jsonl]``.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import math
import os
import select
import signal
import socket
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from tests.scripted_faults import play_fault
from tests.scripted_responses import response_object, responses_error_event, responses_events
from tests.scripted_windows import refusal

Step = dict[str, Any]

EXHAUSTED: Step = {"text": "(script exhausted)"}

_OPENAI_FINISH = {"end_turn": "stop", "tool_use": "tool_calls", "max_tokens": "length"}


@dataclass(frozen=True)
class RecordedRequest:
    """What a client sent; ``headers`` keys are lower-case."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    received_at: float
    raw: str = ""
    """The body exactly as sent, for byte-level checks (prefix caching)."""


def pieces(text: str, parts: int = 3) -> list[str]:
    """``text`` in up to ``parts`` pieces, so clients must join deltas."""
    if not text:
        return []
    size = max(1, math.ceil(len(text) / parts))
    return [text[i : i + size] for i in range(0, len(text), size)]


def _sse(data: Any, event: str | None = None) -> bytes:
    payload = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {payload}\n\n".encode()


def _usage(step: Step) -> tuple[int, int]:
    usage = step.get("usage") or {}
    return int(usage.get("input_tokens", 12)), int(usage.get("output_tokens", 7))


def _extra_usage(step: Step, key: str) -> int:
    return int((step.get("usage") or {}).get(key, 0))


def _openai_usage(step: Step) -> dict[str, Any]:
    prompt, completion = _usage(step)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {
            "cached_tokens": _extra_usage(step, "cached_tokens"),
            "cache_write_tokens": _extra_usage(step, "cache_write_tokens"),
        },
        "completion_tokens_details": {"reasoning_tokens": _extra_usage(step, "reasoning_tokens")},
    }


def _anthropic_usage(step: Step, *, output: int) -> dict[str, Any]:
    """Anthropic's ``input_tokens`` leave out cache reads and writes."""
    prompt, _ = _usage(step)
    read = _extra_usage(step, "cached_tokens")
    write = _extra_usage(step, "cache_write_tokens")
    return {
        "input_tokens": prompt - read - write,
        "cache_creation_input_tokens": write,
        "cache_read_input_tokens": read,
        "output_tokens": output,
    }


def _stop_reason(step: Step) -> str:
    if step.get("stop_reason"):
        return str(step["stop_reason"])
    return "tool_use" if step.get("tool_calls") else "end_turn"


def _call_id(call: dict[str, Any], i: int, prefix: str) -> str:
    return str(call.get("id") or f"{prefix}{i + 1}")


# -- OpenAI Chat Completions ---------------------------------------------------------------


def openai_events(step: Step, *, model: str, response_id: str, usage_chunk: bool) -> list[bytes]:
    """Chunks shaped like ``openai_chat_stream_parallel_tool_calls.sse``."""
    created = int(time.time())

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        return _sse(
            {
                "id": response_id,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "system_fingerprint": "fp_scripted",
                "choices": [
                    {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
                ],
            }
        )

    events = [chunk({"role": "assistant", "content": "", "refusal": None})]
    events += [chunk({"content": piece}) for piece in pieces(str(step.get("text") or ""))]
    for i, call in enumerate(step.get("tool_calls") or []):
        first = {
            "index": i,
            "id": _call_id(call, i, "call_scripted_"),
            "type": "function",
            "function": {"name": call["name"], "arguments": ""},
        }
        events.append(chunk({"tool_calls": [first]}))
        for piece in pieces(str(call.get("arguments") or "")):
            events.append(chunk({"tool_calls": [{"index": i, "function": {"arguments": piece}}]}))
    reason = _stop_reason(step)
    events.append(chunk({}, _OPENAI_FINISH.get(reason, reason)))
    if usage_chunk:
        events.append(
            _sse(
                {
                    "id": response_id,
                    "object": "chat.completion.chunk",
                    "created": created,
                    "model": model,
                    "system_fingerprint": "fp_scripted",
                    "choices": [],
                    "usage": _openai_usage(step),
                }
            )
        )
    events.append(_sse("[DONE]"))
    return events


def openai_completion(step: Step, *, model: str, response_id: str) -> dict[str, Any]:
    calls = [
        {
            "id": _call_id(call, i, "call_scripted_"),
            "type": "function",
            "function": {"name": call["name"], "arguments": str(call.get("arguments") or "")},
        }
        for i, call in enumerate(step.get("tool_calls") or [])
    ]
    message: dict[str, Any] = {
        "role": "assistant",
        "content": step.get("text") or None,
        "refusal": None,
    }
    if calls:
        message["tool_calls"] = calls
    reason = _stop_reason(step)
    return {
        "id": response_id,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "system_fingerprint": "fp_scripted",
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": _OPENAI_FINISH.get(reason, reason),
            }
        ],
        "usage": _openai_usage(step),
    }


# -- Anthropic Messages --------------------------------------------------------------------


def anthropic_events(step: Step, *, model: str, response_id: str) -> list[bytes]:
    """Events shaped like ``anthropic_messages_stream_tool_use.sse``."""
    _, completion = _usage(step)
    events = [
        _sse(
            {
                "type": "message_start",
                "message": {
                    "id": response_id,
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {
                        **_anthropic_usage(step, output=1),
                        "service_tier": "standard",
                    },
                },
            },
            "message_start",
        )
    ]
    index = 0
    pinged = False

    def start(block: dict[str, Any]) -> None:
        nonlocal pinged
        events.append(
            _sse(
                {"type": "content_block_start", "index": index, "content_block": block},
                "content_block_start",
            )
        )
        if not pinged:  # the real API pings once, after the first block starts
            events.append(_sse({"type": "ping"}, "ping"))
            pinged = True

    def delta(body: dict[str, Any]) -> None:
        events.append(
            _sse(
                {"type": "content_block_delta", "index": index, "delta": body},
                "content_block_delta",
            )
        )

    def stop() -> None:
        events.append(_sse({"type": "content_block_stop", "index": index}, "content_block_stop"))

    for block in step.get("thinking") or []:
        if block.get("type") == "redacted_thinking":
            start(dict(block))
        else:
            start({"type": "thinking", "thinking": "", "signature": ""})
            for piece in pieces(str(block.get("thinking") or "")):
                delta({"type": "thinking_delta", "thinking": piece})
            delta({"type": "signature_delta", "signature": block.get("signature", "")})
        stop()
        index += 1
    text = str(step.get("text") or "")
    if text:
        start({"type": "text", "text": ""})
        for piece in pieces(text):
            delta({"type": "text_delta", "text": piece})
        stop()
        index += 1
    for i, call in enumerate(step.get("tool_calls") or []):
        start(
            {
                "type": "tool_use",
                "id": _call_id(call, i, "toolu_scripted_"),
                "name": call["name"],
                "input": {},
            }
        )
        delta({"type": "input_json_delta", "partial_json": ""})
        for piece in pieces(str(call.get("arguments") or "")):
            delta({"type": "input_json_delta", "partial_json": piece})
        stop()
        index += 1
    events.append(
        _sse(
            {
                "type": "message_delta",
                "delta": {"stop_reason": _stop_reason(step), "stop_sequence": None},
                "usage": {"output_tokens": completion},
            },
            "message_delta",
        )
    )
    events.append(_sse({"type": "message_stop"}, "message_stop"))
    return events


def _json_input(arguments: str) -> Any:
    try:
        value = json.loads(arguments) if arguments.strip() else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def anthropic_message(step: Step, *, model: str, response_id: str) -> dict[str, Any]:
    content: list[dict[str, Any]] = [dict(block) for block in step.get("thinking") or []]
    if step.get("text"):
        content.append({"type": "text", "text": step["text"]})
    for i, call in enumerate(step.get("tool_calls") or []):
        content.append(
            {
                "type": "tool_use",
                "id": _call_id(call, i, "toolu_scripted_"),
                "name": call["name"],
                "input": _json_input(str(call.get("arguments") or "")),
            }
        )
    _, completion = _usage(step)
    return {
        "id": response_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": _stop_reason(step),
        "stop_sequence": None,
        "usage": _anthropic_usage(step, output=completion),
    }


def _error_body(api: str, status: int, message: str) -> dict[str, Any]:
    if api == "anthropic":
        kind = {
            400: "invalid_request_error",
            401: "authentication_error",
            403: "permission_error",
            404: "not_found_error",
            429: "rate_limit_error",
            529: "overloaded_error",
        }.get(status, "api_error")
        return {"type": "error", "error": {"type": kind, "message": message}}
    kind = {401: "invalid_request_error", 429: "rate_limit_exceeded"}.get(status, "server_error")
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}


def _stream_error_event(api: str, error: dict[str, Any]) -> bytes:
    if api == "anthropic":
        return _sse({"type": "error", "error": error}, "error")
    if api == "responses":
        return _sse(responses_error_event(error), "error")
    return _sse({"error": {"message": error.get("message", ""), "type": error.get("type")}})


# -- the server ----------------------------------------------------------------------------


class _ClientGone(Exception):
    """The client closed the connection while we were writing."""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def setup(self) -> None:
        super().setup()
        # Real API servers flush each small SSE write at once; without this, Nagle's algorithm
        # holds the final chunk back until the client's delayed ACK (about 40 ms).
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: pytest shows failures; the request log is ``ScriptedServer.requests``."""

    def do_GET(self) -> None:
        self._send_json(404, {"error": {"message": f"no route for GET {self.path}"}})

    def do_POST(self) -> None:
        scripted = self.server.scripted
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        if len(raw) < length:
            # The client went away mid-body (a killed agent-tui): as for a real server, no
            # request arrived, so none is recorded and no step is spent on it.
            self.close_connection = True
            return
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        path = self.path.split("?", 1)[0].rstrip("/")
        kept = body
        if not scripted.record_bodies and isinstance(body, dict):
            # Bodies are not kept (a long bench would hold gigabytes): their size, and how
            # much of each repeats the start of the previous one (what a prefix cache serves).
            kept = {
                "bytes": len(raw),
                "tools": bool(body.get("tools")),
                "shared_prefix": scripted.shared_prefix(raw),
            }
        scripted.record(
            RecordedRequest(
                method="POST",
                path=path,
                headers={k.lower(): v for k, v in self.headers.items()},
                body=kept,
                received_at=time.monotonic(),
                raw=raw.decode("utf-8", "replace") if scripted.record_bodies else "",
            )
        )
        if path.endswith("/chat/completions"):
            api = "openai"
        elif path.endswith("/v1/messages") or path == "/messages":
            api = "anthropic"
        elif path.endswith("/responses"):
            api = "responses"
        else:
            self._send_json(404, {"error": {"message": f"no route for POST {self.path}"}})
            return
        request = body if isinstance(body, dict) else {}
        tokens = len(raw) // 4
        window = scripted.window_tokens
        if window is not None and tokens > window:
            self._refuse(api, request, tokens, window)
            return
        if scripted.summary_status is not None and not request.get("tools"):
            step: Step = {"status": scripted.summary_status, "message": "summaries are down"}
            scripted.note_summary()
        elif scripted.summary_text is not None and not request.get("tools"):
            step = {"text": scripted.summary_text}
            scripted.note_summary()
        else:
            step = scripted.next_step()
        if window is not None and "usage" not in step:
            said = str(step.get("text") or "") + "".join(
                str(c.get("arguments") or "") for c in step.get("tool_calls") or []
            )
            step = {**step, "usage": {"input_tokens": tokens, "output_tokens": len(said) // 4}}
        try:
            self._play(api, request, step)
        except (_ClientGone, BrokenPipeError, ConnectionResetError):
            scripted.note_disconnect()
            self.close_connection = True

    def _refuse(self, api: str, request: dict[str, Any], tokens: int, window: int) -> None:
        scripted = self.server.scripted
        how, answer = refusal(
            scripted.window_error, api, request, tokens, window, new_id=scripted.new_id, sse=_sse
        )
        scripted.note_rejected(how)
        if isinstance(answer, list):
            self._send_stream(answer, "text/event-stream; charset=utf-8")
        else:
            self._send_json(400, answer)

    # -- steps ----------------------------------------------------------------------------

    def _play(self, api: str, request: dict[str, Any], step: Step) -> None:
        scripted = self.server.scripted
        streaming = request.get("stream") is True
        model = str(request.get("model") or "scripted-model")
        if "status" in step:
            status = int(step["status"])
            body = step.get("body")
            if body is None:
                body = _error_body(api, status, str(step.get("message") or "scripted failure"))
            headers = dict(step.get("headers") or {})
            if "retry_after" in step:
                headers["Retry-After"] = str(step["retry_after"])
            self._send_json(status, body, headers)
            return
        if step.get("hang"):
            self.send_response(200)
            if streaming:
                self.send_header("Content-Type", "text/event-stream; charset=utf-8")
                self.send_header("Transfer-Encoding", "chunked")
            else:
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", "100000")
            self.end_headers()
            self.wfile.flush()
            scripted.hang_started.set()
            self._wait_for_disconnect()
            return
        delay = float(step.get("delay_between_events") or 0)
        if "raw_file" in step:
            data = scripted.resolve(step["raw_file"]).read_bytes()
            size = int(step.get("chunk_size") or len(data) or 1)
            chunks = [data[i : i + size] for i in range(0, len(data), size)]
            content_type = str(step.get("content_type") or "text/event-stream; charset=utf-8")
            self._send_stream(chunks, content_type, delay=delay)
            return
        prefix = {"openai": "chatcmpl-scripted", "responses": "resp_scripted"}
        response_id = scripted.new_id(prefix.get(api, "msg_scripted"))
        if "fault" in step:  # a stream broken one of the ways in tests/scripted_faults.py
            events = self._events(api, step, model, response_id, request)
            play_fault(self, api, str(step["fault"]), events)
            return
        if "stream_error" in step:
            events = self._events(api, {"text": "partial answer"}, model, response_id, request)
            events = events[: int(step.get("after_events") or 0)]
            events.append(_stream_error_event(api, dict(step["stream_error"])))
            self._send_stream(events, "text/event-stream; charset=utf-8", delay=delay)
            return
        cut = step.get("cut_after_events")
        if not streaming:
            if api == "openai":
                payload = openai_completion(step, model=model, response_id=response_id)
            elif api == "responses":
                payload = response_object(
                    step, model=model, response_id=response_id, request=request, final=True
                )
            else:
                payload = anthropic_message(step, model=model, response_id=response_id)
            if cut is not None:
                encoded = json.dumps(payload).encode()
                self._send_json(200, payload, cut_at=len(encoded) // 2)
            else:
                self._send_json(200, payload)
            return
        events = self._events(api, step, model, response_id, request)
        self._send_stream(
            events,
            "text/event-stream; charset=utf-8",
            delay=delay,
            cut_after=None if cut is None else int(cut),
            end_body=bool(step.get("end_body")),
        )

    @staticmethod
    def _events(
        api: str, step: Step, model: str, response_id: str, request: dict[str, Any]
    ) -> list[bytes]:
        if api == "openai":
            options = request.get("stream_options")
            usage = isinstance(options, dict) and options.get("include_usage") is True
            return openai_events(step, model=model, response_id=response_id, usage_chunk=usage)
        if api == "responses":
            return responses_events(
                step, model=model, response_id=response_id, request=request, pieces=pieces, sse=_sse
            )
        return anthropic_events(step, model=model, response_id=response_id)

    # -- writing --------------------------------------------------------------------------

    def _send_json(
        self,
        status: int,
        body: Any,
        headers: dict[str, str] | None = None,
        *,
        cut_at: int | None = None,
    ) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        if cut_at is not None:
            self._write(data[:cut_at])
            self._cut()
            return
        self._write(data)

    def _send_stream(
        self,
        chunks: list[bytes],
        content_type: str,
        *,
        delay: float = 0.0,
        cut_after: int | None = None,
        end_body: bool = False,
    ) -> None:
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self._write(b"")
        for sent, chunk in enumerate(chunks):
            if cut_after is not None and sent >= cut_after:
                break
            if sent and delay:
                self.server.scripted.stopping.wait(delay)
            self._write(b"%X\r\n%s\r\n" % (len(chunk), chunk))
        if cut_after is not None and not end_body and cut_after < len(chunks):
            self._cut()
            return
        self._write(b"0\r\n\r\n")

    def _write(self, data: bytes) -> None:
        try:
            self.wfile.write(data)
            self.wfile.flush()
        except OSError as error:
            raise _ClientGone from error

    def _cut(self) -> None:
        """Close the socket mid-body, the way a dropped connection looks to the client."""
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)

    def _wait_for_disconnect(self) -> None:
        scripted = self.server.scripted
        self.close_connection = True
        while not scripted.stopping.is_set():
            try:
                readable, _, _ = select.select([self.connection], [], [], 0.05)
                if readable and not self.connection.recv(1, socket.MSG_PEEK):
                    break
            except OSError:
                break
        else:
            return
        scripted.note_disconnect()


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True
    scripted: ScriptedServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client dropping its connection is routine here (cuts, cancels); anything else
        is a bug in this server and is printed."""
        error = sys.exc_info()[1]
        if isinstance(error, ConnectionError | TimeoutError):
            return
        super().handle_error(request, client_address)


class ScriptedServer:
    """Plays ``script`` to whoever connects; thread-safe, usable from sync and async tests."""

    def __init__(
        self,
        script: list[Step] | None = None,
        *,
        port: int = 0,
        log_path: Path | None = None,
        base_dir: Path | None = None,
        window_tokens: int | None = None,
        window_error: str = "auto",
        summary_text: str | None = None,
        summary_status: int | None = None,
        record_bodies: bool = True,
    ) -> None:
        self._steps: list[Step] = list(script or [])
        self.window_tokens = window_tokens
        self.window_error = window_error
        self.summary_text = summary_text
        self.summary_status = summary_status
        self.record_bodies = record_bodies
        self._last_raw = b""
        """False keeps only each body's size and whether it had tools (long benchmarks)."""
        self.rejected = 0
        """Requests refused as over the window."""
        self.refusals: list[str] = []
        """How each was refused: ``400``, or ``response.failed`` inside a 200 stream."""
        self.summary_requests = 0
        self._lock = threading.Condition()
        self._ids = itertools.count(1)
        self.requests: list[RecordedRequest] = []
        self.disconnects = 0
        self.hang_started = threading.Event()
        self.stopping = threading.Event()
        self.log_path = log_path
        self.base_dir = base_dir or Path.cwd()
        self._httpd = _HTTPServer(("127.0.0.1", port), _Handler)
        self._httpd.scripted = self
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        """For Anthropic clients (they add ``/v1/messages``)."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def openai_base_url(self) -> str:
        """For OpenAI clients (they add ``/chat/completions``)."""
        return f"{self.base_url}/v1"

    def headless_args(self, prompt: str, *extra: str) -> list[str]:
        """``agent-tui``'s arguments for a ``-p`` run against this server in full-auto."""
        return [
            "-p",
            prompt,
            "--base-url",
            self.openai_base_url,
            "--model",
            "scripted",
            "--approval-mode",
            "full-auto",
            *extra,
        ]

    def add(self, *steps: Step) -> None:
        with self._lock:
            self._steps.extend(steps)

    def next_step(self) -> Step:
        with self._lock:
            return self._steps.pop(0) if self._steps else dict(EXHAUSTED)

    def shared_prefix(self, raw: bytes) -> int:
        """Bytes at the start of ``raw`` equal to the previous request's; remembers ``raw``."""
        with self._lock:
            last, self._last_raw = self._last_raw, raw
        low, high = 0, min(len(last), len(raw))
        while low < high:  # binary search on slices: C-speed compares, not a Python loop
            middle = (low + high + 1) // 2
            if raw[:middle] == last[:middle]:
                low = middle
            else:
                high = middle - 1
        return low

    def new_id(self, prefix: str) -> str:
        with self._lock:
            return f"{prefix}{next(self._ids):04d}"

    def resolve(self, path: str) -> Path:
        candidate = Path(path)
        return candidate if candidate.is_absolute() else self.base_dir / candidate

    def record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)
            if self.log_path is not None:
                with self.log_path.open("a", encoding="utf-8") as log:
                    log.write(json.dumps(asdict(request)) + "\n")
            self._lock.notify_all()

    def note_rejected(self, how: str) -> None:
        with self._lock:
            self.rejected += 1
            self.refusals.append(how)

    def note_summary(self) -> None:
        with self._lock:
            self.summary_requests += 1

    def note_disconnect(self) -> None:
        with self._lock:
            self.disconnects += 1
            self._lock.notify_all()

    def wait_for_requests(self, count: int, timeout: float = 5.0) -> bool:
        """Block until ``count`` requests arrived; from async code use ``asyncio.to_thread``."""
        with self._lock:
            return self._lock.wait_for(lambda: len(self.requests) >= count, timeout)

    def wait_for_disconnects(self, count: int = 1, timeout: float = 5.0) -> bool:
        with self._lock:
            return self._lock.wait_for(lambda: self.disconnects >= count, timeout)

    def start(self) -> ScriptedServer:
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.01},
            name=f"scripted-server-{self.port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self._httpd.server_close()

    def __enter__(self) -> ScriptedServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def load_script(path: Path) -> list[Step]:
    data = json.loads(path.read_text(encoding="utf-8"))
    steps = data.get("steps") if isinstance(data, dict) else data
    if not isinstance(steps, list):
        raise SystemExit(f"{path}: expected a JSON list of steps (or {{'steps': [...]}})")
    return steps


@contextlib.contextmanager
def _signals_stop(done: threading.Event) -> Iterator[None]:
    previous = {sig: signal.signal(sig, lambda *_: done.set()) for sig in _STOP_SIGNALS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--script", type=Path, required=True, help="JSON list of steps")
    parser.add_argument("--port-file", type=Path, help="write the port here once listening")
    parser.add_argument("--log", type=Path, help="append each request as a JSON line")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    args = parser.parse_args(argv)
    server = ScriptedServer(
        load_script(args.script),
        port=args.port,
        log_path=args.log,
        base_dir=args.script.resolve().parent,
    )
    done = threading.Event()
    with _signals_stop(done):
        server.start()
        if args.port_file is not None:
            partial = args.port_file.with_name(args.port_file.name + ".partial")
            partial.write_text(str(server.port), encoding="utf-8")
            os.replace(partial, args.port_file)  # readers never see a half-written port
        print(f"scripted server listening on {server.base_url}", flush=True)
        try:
            while not done.wait(0.2):
                pass
        finally:
            server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
