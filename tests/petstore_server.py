"""A Petstore API on a loopback port: the operations of the OpenAPI fixtures, in memory.

One server covers every auth mode by serving the same API under three prefixes: ``/open``
(no credentials), ``/bearer`` (``Authorization: Bearer <token>``) and ``/key``
(``X-API-Key: <key>``); a wrong or missing credential gets 401. Beside the pets:

- ``/specs/<name>``: spec documents, so a spec can be loaded from a URL;
- ``<prefix>/echo/<anything>``: any method, answers with what it received (raw path, query
  pairs, headers, body), to check how arguments are put on the wire;
- ``<prefix>/hostile/huge`` (50 MB of JSON), ``/hostile/hang`` (never answers),
  ``/hostile/binary`` (a PNG), ``/hostile/long`` (a long but finite JSON list),
  ``/hostile/redirect`` (302 to another path).

Run it alone with ``python -m tests.petstore_server`` to try the API by hand.
"""

from __future__ import annotations

import json
import threading
import urllib.parse
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

HUGE_BYTES = 50 * 1024 * 1024
DEFAULT_TOKEN = "petstore-bearer-token-s3cret"
DEFAULT_API_KEY = "petstore-api-key-k3y"
PREFIXES = ("open", "bearer", "key")


class PetstoreServer:
    """The server and its in-memory store; ``start()`` returns the base URL."""

    def __init__(
        self,
        *,
        token: str = DEFAULT_TOKEN,
        api_key: str = DEFAULT_API_KEY,
        specs: Mapping[str, bytes] | None = None,
    ) -> None:
        self.token = token
        self.api_key = api_key
        self.specs: dict[str, bytes] = dict(specs or {})
        self.pets: dict[int, dict[str, Any]] = {}
        self.next_id = 1
        self.lock = threading.Lock()
        self.requests: list[tuple[str, str]] = []
        """(method, raw path with query) of every request, in order."""
        self.huge_sent = 0
        self.hang_started = threading.Event()
        self.release = threading.Event()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        assert self._httpd is not None
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def start(self) -> str:
        self._httpd = _HTTPServer(("127.0.0.1", 0), _Handler)
        self._httpd.store = self
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()
        return self.url

    def stop(self) -> None:
        self.release.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def add(self, name: str, tag: str | None = None, pet_id: int | None = None) -> dict[str, Any]:
        with self.lock:
            if pet_id is None:
                while self.next_id in self.pets:
                    self.next_id += 1
                pet_id = self.next_id
            pet: dict[str, Any] = {"id": pet_id, "name": name}
            if tag is not None:
                pet["tag"] = tag
            self.pets[pet_id] = pet
            return pet


class _HTTPServer(ThreadingHTTPServer):
    store: PetstoreServer


def _error(code: int, message: str) -> dict[str, Any]:
    return {"code": code, "message": message}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out in separate writes: with Nagle on, a kept-alive connection
    # waits out the client's delayed ACK (40 ms) before every body.
    disable_nagle_algorithm = True
    server: _HTTPServer

    def log_message(self, format: str, *args: object) -> None:
        pass

    # -- plumbing -------------------------------------------------------------------------

    @property
    def store(self) -> PetstoreServer:
        return self.server.store

    def _send(self, status: int, body: bytes, content_type: str, **headers: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for key, value in headers.items():
            self.send_header(key.replace("_", "-"), value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, status: int, payload: Any, **headers: str) -> None:
        self._send(status, json.dumps(payload).encode(), "application/json", **headers)

    def _body(self) -> bytes:
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _handle(self) -> None:
        self.store.requests.append((self.command, self.path))
        raw_path, _, query = self.path.partition("?")
        if raw_path.startswith("/specs/"):
            self._spec(raw_path.removeprefix("/specs/"))
            return
        prefix, _, rest = raw_path.lstrip("/").partition("/")
        if prefix not in PREFIXES:
            self._json(404, _error(404, f"no such API prefix {prefix!r}"))
            return
        denied = self._auth_problem(prefix)
        if denied:
            self._body()
            self._json(401, _error(401, denied))
            return
        route = "/" + rest
        if route.startswith("/echo"):
            self._echo(route, query)
        elif route.startswith("/hostile/"):
            self._hostile(route.removeprefix("/hostile/"))
        elif route == "/pets":
            self._pets(query)
        elif route.startswith("/pets/"):
            self._pet(urllib.parse.unquote(route.removeprefix("/pets/")))
        else:
            self._body()
            self._json(404, _error(404, f"no route {route}"))

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _handle

    def _auth_problem(self, prefix: str) -> str | None:
        if prefix == "bearer":
            got = self.headers.get("Authorization")
            if got != f"Bearer {self.store.token}":
                # Echoing what was sent is what careless servers do; the client must redact it.
                return f"invalid bearer token: got Authorization {got!r}"
        if prefix == "key":
            got = self.headers.get("X-API-Key")
            if got != self.store.api_key:
                return f"invalid API key: got X-API-Key {got!r}"
        return None

    # -- routes ---------------------------------------------------------------------------

    def _spec(self, name: str) -> None:
        body = self.store.specs.get(name)
        if body is None:
            self._json(404, _error(404, f"no spec named {name}"))
        else:
            kind = "application/json" if name.endswith(".json") else "application/yaml"
            self._send(200, body, kind)

    def _pets(self, query: str) -> None:
        if self.command == "GET":
            params = urllib.parse.parse_qs(query)
            limit = 100
            if "limit" in params:
                try:
                    limit = int(params["limit"][0])
                except ValueError:
                    self._json(400, _error(400, "limit must be an integer"))
                    return
                if not 0 < limit <= 100:
                    self._json(400, _error(400, "limit must be between 1 and 100"))
                    return
            tags = set(params.get("tags", []))
            with self.store.lock:
                pets = [p for p in self.store.pets.values() if not tags or p.get("tag") in tags]
            headers = {"x_next": f"/pets?offset={limit}"} if len(pets) > limit else {}
            self._json(200, pets[:limit], **headers)
        elif self.command == "POST":
            try:
                data = json.loads(self._body() or b"null")
            except ValueError:
                self._json(400, _error(400, "body is not JSON"))
                return
            if not isinstance(data, dict) or not isinstance(data.get("name"), str):
                self._json(400, _error(400, "a pet needs a string name"))
                return
            pet_id = data.get("id")
            if pet_id is not None and not isinstance(pet_id, int):
                self._json(400, _error(400, "id must be an integer"))
                return
            pet = self.store.add(data["name"], data.get("tag"), pet_id)
            self._json(201, pet)
        else:
            self._json(405, _error(405, f"{self.command} not allowed on /pets"))

    def _pet(self, raw_id: str) -> None:
        try:
            pet_id = int(raw_id)
        except ValueError:
            self._json(404, _error(404, f"no pet with id {raw_id!r}"))
            return
        with self.store.lock:
            pet = self.store.pets.get(pet_id)
            if pet is not None and self.command == "DELETE":
                del self.store.pets[pet_id]
        if pet is None:
            self._json(404, _error(404, f"no pet with id {raw_id!r}"))
        elif self.command == "DELETE":
            self.send_response(204)
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif self.command in ("GET", "HEAD"):
            self._json(200, pet)
        else:
            self._json(405, _error(405, f"{self.command} not allowed on /pets/{{id}}"))

    def _echo(self, route: str, query: str) -> None:
        raw = self._body()
        body: Any = None
        if raw:
            try:
                body = json.loads(raw)
            except ValueError:
                body = raw.decode("utf-8", errors="replace")
        wanted = ("x-request-id", "x-trace", "id", "cookie", "content-type", "x-api-key", "accept")
        self._json(
            200,
            {
                "method": self.command,
                "raw_path": route,
                "query": urllib.parse.parse_qsl(query, keep_blank_values=True),
                "raw_query": query,
                "headers": {k.lower(): v for k, v in self.headers.items() if k.lower() in wanted},
                "body": body,
            },
        )

    def _hostile(self, what: str) -> None:
        if what == "huge":
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(HUGE_BYTES))
            self.end_headers()
            chunk = b"[" + b'"xxxxxxxxxxxxxx",' * 3854 + b'"x"]\n'
            chunk = chunk[: 64 * 1024]
            try:
                while self.store.huge_sent < HUGE_BYTES:
                    piece = chunk[: HUGE_BYTES - self.store.huge_sent]
                    self.wfile.write(piece)
                    self.store.huge_sent += len(piece)
            except OSError:
                self.close_connection = True
        elif what == "hang":
            self.store.hang_started.set()
            self.store.release.wait(timeout=60)
            self.close_connection = True
        elif what == "binary":
            self._send(200, b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 40, "image/png")
        elif what == "redirect":
            # Following it would carry the credential headers along; the client must not.
            self._json(302, _error(302, "moved"), Location="/open/pets")
        elif what == "long":
            self._json(200, [{"index": i, "word": "lorem ipsum"} for i in range(5000)])
        else:
            self._json(404, _error(404, f"no hostile route {what}"))


if __name__ == "__main__":
    server = PetstoreServer()
    print(f"Petstore on {server.start()} (prefixes: /open, /bearer, /key); Ctrl-C stops it")
    print(f"bearer token: {server.token}  api key: {server.api_key}")
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        server.stop()
