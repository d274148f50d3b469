"""The ``python_repl`` driver: the program the tool sends to the target and runs there.

agent-tui never imports it. ``python_repl`` reads this file's text once and starts it on the
session's target with ``python3 -u -c <text> <nonce> <workdir>`` (locally, in a container or
over SSH), so it stays stdlib-only and within what an older python3 there can run (no
f-strings). The protocol is the one ``python_repl.py`` describes: framed JSON replies on a
private copy of stdout, length-prefixed JSON requests on a private copy of stdin, and fds 1 and
2 pumped into ``out`` frames, so nothing user code prints can pass for a frame.
"""

# Written so an older python3 on the target still runs it: no annotations, % formatting,
# io.open, and a request stream left open until the process ends.
# ruff: noqa: UP020, UP031, SIM115
# mypy: ignore-errors

import ast
import builtins
import codecs
import io
import json
import linecache
import os
import queue
import signal
import sys
import threading
import traceback
import types

MAX_REPR = 100000
SYNC = b"\x00\x01atui-sync:"
SYNC_LEN = len(SYNC) + 32 + 2
LOCK = threading.Lock()


def send(message):
    data = json.dumps(message).encode("ascii")
    frame = b"\n@@atui:" + NONCE + b":" + str(len(data)).encode("ascii") + b"\n" + data
    with LOCK:
        view = memoryview(frame)
        while view:
            view = view[os.write(PROTO, view) :]


class Pump(threading.Thread):
    def __init__(self, stream, fd):
        threading.Thread.__init__(self, daemon=True)
        self.stream = stream
        self.fd = fd
        read_end, write_end = os.pipe()
        os.dup2(write_end, fd)
        os.close(write_end)
        self.read_end = read_end
        self.decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self.cond = threading.Condition()
        self.expected = None
        self.seen = False

    def expect(self, token):
        with self.cond:
            self.expected = token
            self.seen = False

    def mark_seen(self):
        with self.cond:
            self.seen = True
            self.cond.notify_all()

    def wait_seen(self, timeout):
        with self.cond:
            return self.cond.wait_for(lambda: self.seen, timeout)

    def forward(self, data):
        text = self.decoder.decode(data)
        if text:
            send({"t": "out", "s": self.stream, "d": text})

    def run(self):
        pending = b""
        while True:
            try:
                data = os.read(self.read_end, 65536)
            except OSError:
                return
            if not data:
                return
            pending = self.scan(pending + data)

    def scan(self, pending):
        while True:
            at = pending.find(SYNC)
            if at < 0:
                keep = 0
                for size in range(min(len(pending), len(SYNC) - 1), 0, -1):
                    if pending.endswith(SYNC[:size]):
                        keep = size
                        break
                self.forward(pending[: len(pending) - keep])
                return pending[len(pending) - keep :]
            if len(pending) < at + SYNC_LEN:
                self.forward(pending[:at])
                return pending[at:]
            token = pending[at + len(SYNC) : at + SYNC_LEN - 2]
            closed = pending[at + SYNC_LEN - 2 : at + SYNC_LEN] == b"\x01\x00"
            with self.cond:
                ours = closed and token == self.expected
            if ours:
                self.forward(pending[:at])
                pending = pending[at + SYNC_LEN :]
                self.mark_seen()
            else:
                self.forward(pending[: at + 1])
                pending = pending[at + 1 :]


def shutdown():
    try:
        if os.getpgrp() == os.getpid():
            os.killpg(os.getpgrp(), signal.SIGKILL)
    finally:
        os._exit(0)


REQUEST_QUEUE = queue.Queue()


def read_requests():
    try:
        stream = io.open(REQUESTS, "rb")
        while True:
            line = stream.readline()
            if not line:
                break
            size = int(line)
            body = stream.read(size)
            if len(body) < size:
                break
            REQUEST_QUEUE.put(json.loads(body.decode("utf-8")))
    except BaseException:
        pass
    shutdown()


def safe_repr(value):
    try:
        text = repr(value)
    except BaseException as exc:
        text = "<repr() failed: %s: %s>" % (type(exc).__name__, exc)
    if len(text) > MAX_REPR:
        text = text[:MAX_REPR] + "... [repr cut: %d chars in all]" % len(text)
    return text


def format_error(exc):
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename == DRIVER_FILE:
        tb = tb.tb_next
    return "".join(traceback.format_exception(type(exc), exc, tb))


def run(request):
    code = request["code"]
    filename = "<python_repl-%d>" % request["id"]
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
    reply = {"t": "done", "status": "ok"}
    try:
        tree = compile(code, filename, "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
        last = None
        if tree.body and isinstance(tree.body[-1], ast.Expr):
            last = ast.Expression(tree.body.pop().value)
        if tree.body:
            exec(compile(tree, filename, "exec", dont_inherit=True), NAMESPACE)
        if last is not None:
            value = eval(compile(last, filename, "eval", dont_inherit=True), NAMESPACE)
            if value is not None:
                NAMESPACE["_"] = value
                reply["value"] = safe_repr(value)
    except SystemExit as exc:
        reply["status"] = "exit"
        reply["code"] = exc.code if exc.code is None or isinstance(exc.code, int) else str(exc.code)
    except BaseException as exc:
        reply["status"] = "error"
        reply["error"] = format_error(exc)
    finish(reply)


def finish(reply):
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            stream.flush()
        except BaseException:
            pass
    token = os.urandom(16).hex().encode("ascii")
    for pump in PUMPS:
        pump.expect(token)
        try:
            os.write(pump.fd, SYNC + token + b"\x01\x00")
        except OSError:
            pump.mark_seen()
    for pump in PUMPS:
        pump.wait_seen(5.0)
    send(reply)
    if reply["status"] == "exit":
        shutdown()


if __name__ == "__main__":
    NONCE = sys.argv[1].encode("ascii")
    WORKDIR = sys.argv[2] if len(sys.argv) > 2 else ""
    sys.argv[:] = [""]
    PROTO = os.dup(1)
    REQUESTS = os.dup(0)
    DRIVER_FILE = run.__code__.co_filename
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    PUMPS = [Pump("stdout", 1), Pump("stderr", 2)]
    for pump in PUMPS:
        pump.start()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.reconfigure(encoding="utf-8", errors="backslashreplace")
        except BaseException:
            pass
    if WORKDIR and os.path.isdir(WORKDIR):
        os.chdir(WORKDIR)
    MAIN = types.ModuleType("__main__")
    MAIN.__dict__["__builtins__"] = builtins
    DRIVER_MODULE = sys.modules["__main__"]
    sys.modules["__main__"] = MAIN
    NAMESPACE = MAIN.__dict__
    threading.Thread(target=read_requests, daemon=True).start()
    send(
        {
            "t": "ready",
            "pid": os.getpid(),
            "python": sys.version.split()[0],
            "executable": sys.executable,
        }
    )
    while True:
        request = REQUEST_QUEUE.get()
        if request.get("op") == "ping":
            send({"t": "pong"})
        elif request.get("op") == "exec":
            run(request)
