"""A small web site on loopback for the browser tool's tests and bench.

``Site`` serves the pages on 127.0.0.1; ``Site.forbidden`` is a second server on 127.0.0.2
that only counts the requests it gets, so a test can prove a blocked host was never reached
(not only that a message said so).
"""

from __future__ import annotations

import html
import threading
import urllib.parse
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

LOGIN_PAGE = b"""<!doctype html><html><head><title>Sign in</title></head><body>
<h1>Sign in</h1>
<form method="post" action="/login">
  <label>User <input name="user"></label>
  <label>Password <input name="password" type="password"></label>
  <label>Team <select name="team"><option value="ops">Operations</option>
  <option value="dev">Development</option></select></label>
  <button type="submit">Sign in</button>
</form></body></html>"""

JS_PAGE = b"""<!doctype html><html><head><title>Rendered</title></head><body>
<div id="out">loading</div>
<script>
fetch('/api/items').then(r => r.json()).then(items => {
  setTimeout(() => {
    document.getElementById('out').textContent = 'Items: ' + items.join(', ');
    const done = document.createElement('p'); done.id = 'done'; done.textContent = 'all rendered';
    document.body.appendChild(done);
    console.error('rendered with a warning: item list is short');
  }, 300);
});
</script></body></html>"""


class Site:
    """Two threaded HTTP servers; ``hits`` counts requests by path on the allowed one."""

    def __init__(self) -> None:
        self.hits: dict[str, int] = {}
        self.forbidden_hits: list[str] = []
        self.hanging = threading.Event()
        """Set once a request for ``/hang`` arrived."""
        self.release = threading.Event()
        """Set to let hanging requests end (teardown)."""
        self.main = ThreadingHTTPServer(("127.0.0.1", 0), self._handler(self._route))
        self.forbidden = ThreadingHTTPServer(("127.0.0.2", 0), self._handler(self._forbidden))
        for server in (self.main, self.forbidden):
            server.daemon_threads = True
            threading.Thread(target=server.serve_forever, daemon=True).start()

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.main.server_address[1]}"

    @property
    def blocked_base(self) -> str:
        return f"http://127.0.0.2:{self.forbidden.server_address[1]}"

    def close(self) -> None:
        self.release.set()
        for server in (self.main, self.forbidden):
            server.shutdown()
            server.server_close()

    def _handler(self, route: Callable[[Any], None]) -> type[BaseHTTPRequestHandler]:
        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body go out at once, no 40 ms stall

            def log_message(self, format: str, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                route(self)

            def do_POST(self) -> None:
                route(self)

        return Handler

    def _forbidden(self, request: Any) -> None:
        self.forbidden_hits.append(request.path)
        send(request, 200, b"secret", "text/plain")

    def _route(self, request: Any) -> None:
        parsed = urllib.parse.urlsplit(request.path)
        path = parsed.path
        self.hits[path] = self.hits.get(path, 0) + 1
        cookie = request.headers.get("Cookie") or ""
        if path == "/login" and request.command == "GET":
            send(request, 200, LOGIN_PAGE, "text/html")
        elif path == "/login":
            length = int(request.headers.get("Content-Length") or 0)
            form = urllib.parse.parse_qs(request.rfile.read(length).decode())
            user = form.get("user", [""])[0]
            ok = form.get("password", [""])[0] == "hunter2"
            if not ok:
                send(request, 200, b"<p>wrong password</p>", "text/html")
                return
            team = form.get("team", [""])[0]
            session = urllib.parse.quote(f"{user}:{team}")
            send(
                request,
                303,
                b"",
                "text/plain",
                Location="/home",
                **{"Set-Cookie": f"s={session}; Path=/"},
            )
        elif path == "/home":
            who = urllib.parse.unquote(cookie.partition("s=")[2]) or "nobody"
            body = f"<title>Home</title><h1>Welcome {html.escape(who)}</h1><a href='/login'>out</a>"
            send(request, 200, body.encode(), "text/html")
        elif path == "/js":
            send(request, 200, JS_PAGE, "text/html")
        elif path == "/api/items":
            send(request, 200, b'["alpha", "beta", "gamma"]', "application/json")
        elif path == "/chain":
            send(request, 302, b"", "text/plain", Location="/chain2")
        elif path == "/chain2":
            send(request, 301, b"", "text/plain", Location="/home")
        elif path == "/to-blocked":
            send(request, 302, b"", "text/plain", Location=f"{self.blocked_base}/secret")
        elif path == "/embeds-blocked":
            blocked = self.blocked_base
            # The same blocked host in three spellings: as written, IPv4-mapped IPv6, decimal.
            port = self.forbidden.server_address[1]
            body = (
                "<title>Embeds</title><h1>Page with embeds</h1>"
                f"<img src='{blocked}/pixel.png'>"
                f"<script src='http://[::ffff:127.0.0.2]:{port}/tracker.js'></script>"
                f"<iframe src='http://2130706434:{port}/frame'></iframe>"
                "<script>fetch('/api/items').then(r => r.json()).then(i => "
                "document.title = 'Embeds ' + i.length)</script>"
            )
            send(request, 200, body.encode(), "text/html")
        elif path == "/hang":
            self.hanging.set()
            request.send_response(200)
            request.send_header("Content-Type", "text/html")
            request.send_header("Content-Length", "100000")
            request.end_headers()
            request.wfile.write(b"<title>Never done</title><p>half a page")
            request.wfile.flush()
            self.release.wait(60)
        elif path == "/newtab":
            body = "<title>Opener</title><a href='/home' target='_blank'>elsewhere</a>"
            send(request, 200, body.encode(), "text/html")
        elif path == "/download":
            send(
                request,
                200,
                b"file body",
                "application/octet-stream",
                **{"Content-Disposition": "attachment; filename=report.bin"},
            )
        elif path == "/big":
            words = " ".join(f"word{i}" for i in range(20_000))
            send(
                request,
                200,
                f"<title>Big</title><p>{words}</p><p>THE END</p>".encode(),
                "text/html",
            )
        elif path == "/plain":
            send(
                request, 200, b"<title>Plain</title><h1>Hello</h1><p>A plain page.</p>", "text/html"
            )
        else:
            send(request, 404, b"<title>Missing</title><p>no such page</p>", "text/html")


def send(request: Any, status: int, body: bytes, content_type: str, **headers: str) -> None:
    request.send_response(status)
    request.send_header("Content-Type", content_type)
    request.send_header("Content-Length", str(len(body)))
    for key, value in headers.items():
        request.send_header(key, value)
    request.end_headers()
    request.wfile.write(body)
