"""OpenAPI operations as tools: one ``{api}__{operationId}`` tool per operation of a spec.

A tool's arguments are the operation's path, query, header and cookie parameters as top-level
properties, plus the request body under ``body``. The call is made with httpx to the configured
``base_url`` (or the spec's server), with the configured credentials read from the
environment at call time. The response comes back as a status line, the content type and the
body (JSON pretty-printed), read with a byte cap and cut at ``max_response_chars``.

Operations this adapter cannot call (an external ``$ref``, a body only as multipart) are left
out with a reason in ``OpenApiToolset.skipped``, and the rest still work.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import re
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from tui.errors import Cancelled, ExecutionFailed, InvalidArguments
from tui.security.permissions import PermissionMode
from tui.tools.adapters.openapi.spec import (
    OpenApiSpecError,
    RefError,
    SpecResolver,
    check_document,
    is_url,
    load_spec,
)
from tui.tools.base import ToolAccess
from tui.tools.html_text import html_to_text
from tui.tools.netguard import USER_AGENT, guarded_client
from tui.tools.result import ToolResult
from tui.tools.schema_tool import RawParams, SchemaTool
from tui.tools.truncation import TruncationRule, save_full_output

if TYPE_CHECKING:
    from tui.config import OpenApiSpecSettings
    from tui.security.hosts import HostPolicy
    from tui.tools.base import Tool
    from tui.tools.context import ToolContext

__all__ = [
    "OpenApiOperationTool",
    "OpenApiSpecError",
    "OpenApiToolset",
    "SkippedOperation",
    "build_openapi_tools",
    "build_openapi_toolset",
    "load_spec",
    "openapi_tools",
    "openapi_toolset",
]

log = logging.getLogger(__name__)

METHODS = ("get", "put", "post", "delete", "patch", "head", "options", "trace")
READ_METHODS = {"GET", "HEAD", "OPTIONS"}
MAX_NAME = 64
MAX_PROPERTY_NAME = 64
MIN_BODY_BYTES = 1024 * 1024
MAX_BODY_BYTES = 32 * 1024 * 1024
"""Bytes of a response read at most; the rest is never downloaded."""
CONNECT_TIMEOUT = 10.0
MAX_SPEC_DESCRIPTION = 1200
IGNORED_HEADERS = {"accept", "content-type", "authorization"}
"""The OpenAPI spec says header parameters with these names are ignored."""


# --------------------------------------------------------------------------- the plan


@dataclass(frozen=True)
class ParamBinding:
    """Where one tool argument goes in the request."""

    prop: str
    """The argument name in the tool's schema."""
    name: str
    location: str
    """``path``, ``query``, ``header`` or ``cookie``."""
    style: str
    explode: bool
    as_json: bool = False
    """Parameters described by ``content`` instead of ``schema`` are sent as JSON text."""


@dataclass(frozen=True)
class BodyBinding:
    media_type: str
    kind: str
    """``json``, ``form`` or ``text``."""
    required: bool


@dataclass(frozen=True)
class SkippedOperation:
    """An operation left out, and why (for a notice to the person)."""

    method: str
    path: str
    operation_id: str | None
    reason: str

    def __str__(self) -> str:
        label = f" ({self.operation_id})" if self.operation_id else ""
        return f"{self.method.upper()} {self.path}{label}: {self.reason}"


@dataclass
class OpenApiToolset:
    """What one spec gave: the tools, and the operations that could not become tools."""

    tools: list[Tool[Any]] = field(default_factory=list)
    skipped: list[SkippedOperation] = field(default_factory=list)
    filtered_out: int = 0
    """Operations the ``tags`` / ``operations`` / ``path_prefixes`` filters left out."""


@dataclass
class _Operation:
    method: str
    path: str
    op: dict[str, Any]
    path_item: dict[str, Any]


# --------------------------------------------------------------------------- names


def _sanitize(text: str) -> str:
    cleaned = re.sub(r"[^A-Za-z0-9_-]+", "_", text)
    return re.sub(r"_{2,}", "_", cleaned).strip("_")


def _fit(name: str, limit: int) -> str:
    if len(name) <= limit:
        return name
    digest = hashlib.sha1(name.encode()).hexdigest()[:8]
    return f"{name[: limit - 9]}_{digest}"


def _unique(name: str, taken: set[str], limit: int) -> str:
    candidate = _fit(name, limit)
    number = 2
    while candidate in taken:
        suffix = f"_{number}"
        candidate = _fit(name, limit - len(suffix)) + suffix
        number += 1
    taken.add(candidate)
    return candidate


def _operation_suffix(method: str, path: str, operation_id: Any) -> str:
    if isinstance(operation_id, str) and _sanitize(operation_id):
        return _sanitize(operation_id)
    return _sanitize(f"{method}_{path.replace('{', '').replace('}', '')}") or method


# --------------------------------------------------------------------------- building


def openapi_toolset(
    api_name: str,
    spec: dict[str, Any],
    settings: OpenApiSpecSettings,
    *,
    env: Mapping[str, str],
) -> OpenApiToolset:
    """Tools for every operation of ``spec`` that passes the settings' filters.

    Raises:
        OpenApiSpecError: The settings cannot work with this spec at all (no usable server
            URL, credentials configured without ``token_env``).
    """
    if settings.auth != "none" and not settings.token_env:
        raise OpenApiSpecError(
            f"[openapi.{api_name}] auth = {settings.auth!r} needs token_env: the name of the "
            "environment variable that holds the credential"
        )
    check_document(spec, f"the spec of [openapi.{api_name}]")
    resolver = SpecResolver(spec)
    prefix = _sanitize(api_name) or "api"
    root_servers = spec.get("servers")
    root_base = _server_url(root_servers, settings)
    result = OpenApiToolset()
    taken: set[str] = set()
    no_server: str | None = None
    title = str(_mapping(spec.get("info")).get("title") or api_name)
    for operation in _operations(spec, resolver, result):
        operation_id = operation.op.get("operationId")
        if not _matches(operation, settings):
            result.filtered_out += 1
            continue
        try:
            base = root_base
            for servers in (operation.op.get("servers"), operation.path_item.get("servers")):
                if servers:
                    base = _server_url(servers, settings)
                    break
            if base is None:
                no_server = (
                    "the spec gives no absolute server URL"
                    + (" (its servers are relative)" if root_servers else "")
                    + f" and it was not loaded from a URL; set base_url in [openapi.{api_name}]"
                )
                raise RefError(no_server)
            suffix = _operation_suffix(operation.method, operation.path, operation_id)
            name = _unique(f"{prefix}__{suffix}", taken, MAX_NAME)
            tool = OpenApiOperationTool(
                name=name,
                api_name=api_name,
                api_title=title,
                operation=operation,
                base_url=base,
                resolver=resolver,
                settings=settings,
                env=env,
            )
        except (RefError, RecursionError) as exc:
            reason = exc.reason if isinstance(exc, RefError) else "its schemas nest too deeply"
            result.skipped.append(
                SkippedOperation(
                    operation.method,
                    operation.path,
                    operation_id if isinstance(operation_id, str) else None,
                    reason,
                )
            )
            continue
        result.tools.append(tool)
    if no_server and not result.tools:
        raise OpenApiSpecError(f"[openapi.{api_name}]: {no_server}")
    for skipped in result.skipped:
        log.warning("openapi %s: skipped %s", api_name, skipped)
    return result


def openapi_tools(
    api_name: str,
    spec: dict[str, Any],
    settings: OpenApiSpecSettings,
    *,
    env: Mapping[str, str],
) -> list[Tool[Any]]:
    """The tools of ``openapi_toolset`` (skipped operations are logged)."""
    return openapi_toolset(api_name, spec, settings, env=env).tools


async def build_openapi_toolset(
    api_name: str,
    settings: OpenApiSpecSettings,
    *,
    base_dir: Path,
    env: Mapping[str, str],
) -> OpenApiToolset:
    """Load ``settings.spec`` and build its tools (nothing at all when disabled).

    Raises:
        OpenApiSpecError: The spec cannot be loaded or used.
    """
    if not settings.enabled:
        return OpenApiToolset()
    spec = await load_spec(settings.spec, base_dir=base_dir, timeout=settings.timeout)
    return openapi_toolset(api_name, spec, settings, env=env)


async def build_openapi_tools(
    api_name: str,
    settings: OpenApiSpecSettings,
    *,
    base_dir: Path,
    env: Mapping[str, str],
) -> list[Tool[Any]]:
    """Load ``settings.spec`` and build its tools.

    Raises:
        OpenApiSpecError: The spec cannot be loaded or used.
    """
    toolset = await build_openapi_toolset(api_name, settings, base_dir=base_dir, env=env)
    return toolset.tools


def _operations(
    spec: dict[str, Any], resolver: SpecResolver, result: OpenApiToolset
) -> list[_Operation]:
    found: list[_Operation] = []
    for path, raw_item in spec["paths"].items():
        try:
            item = resolver.deref(raw_item)
        except RefError as exc:
            result.skipped.append(SkippedOperation("*", str(path), None, exc.reason))
            continue
        if not isinstance(item, dict):
            continue
        for method in METHODS:
            op = item.get(method)
            if isinstance(op, dict):
                found.append(_Operation(method, str(path), op, item))
    return found


def _matches(operation: _Operation, settings: OpenApiSpecSettings) -> bool:
    op = operation.op
    if settings.tags and not set(map(str, _list(op.get("tags")))) & set(settings.tags):
        return False
    if settings.operations:
        operation_id = op.get("operationId")
        names = {str(operation_id), _sanitize(str(operation_id))} if operation_id else set()
        if not names & set(settings.operations):
            return False
    return not settings.path_prefixes or any(
        operation.path.startswith(prefix) for prefix in settings.path_prefixes
    )


def _server_url(servers: Any, settings: OpenApiSpecSettings) -> str | None:
    """The base URL calls go to: ``base_url``, else the first server with its variables'
    defaults, made absolute against the spec's own URL when the spec came from one."""
    if settings.base_url:
        return settings.base_url.rstrip("/")
    url = "/"
    if isinstance(servers, list) and servers and isinstance(servers[0], dict):
        server = servers[0]
        url = str(server.get("url") or "/")
        for name, variable in _mapping(server.get("variables")).items():
            default = variable.get("default") if isinstance(variable, dict) else None
            if default is not None:
                url = url.replace("{" + str(name) + "}", str(default))
    if not re.match(r"^https?://", url, re.IGNORECASE):
        if not is_url(settings.spec):
            return None
        url = urllib.parse.urljoin(settings.spec.strip(), url)
    return url.rstrip("/")


# --------------------------------------------------------------------------- the tool


class OpenApiOperationTool(SchemaTool[RawParams]):
    """One API operation: its parameters and body as arguments, one HTTP request per call."""

    honours_cancel = True

    def __init__(
        self,
        *,
        name: str,
        api_name: str,
        api_title: str,
        operation: _Operation,
        base_url: str,
        resolver: SpecResolver,
        settings: OpenApiSpecSettings,
        env: Mapping[str, str],
    ) -> None:
        """Raises RefError when the operation cannot become a tool."""
        self.api_name = api_name
        self.method = operation.method.upper()
        self.path = operation.path
        self.base_url = base_url
        self.settings = settings
        self._env = env
        self.operation_id = operation.op.get("operationId")
        self.bindings: list[ParamBinding] = []
        self.body: BodyBinding | None = None
        schema = self._build_schema(operation, resolver)
        super().__init__(schema)
        # SchemaTool's attributes are per instance: each operation is its own tool.
        self.name = name  # type: ignore[misc]
        self.label = f"{api_name}: {self.method} {self.path}"  # type: ignore[misc]
        self.permission = (  # type: ignore[misc]
            PermissionMode.READ_ONLY
            if self.method in READ_METHODS
            else PermissionMode.WORKSPACE_WRITE
        )
        limit = settings.max_response_chars + 2000
        self.truncation = TruncationRule.head(limit)  # type: ignore[misc]
        self.description = _describe(self, operation.op, api_title, schema)  # type: ignore[misc]

    # -- schema ---------------------------------------------------------------------------

    def _build_schema(self, operation: _Operation, resolver: SpecResolver) -> dict[str, Any]:
        params: dict[tuple[str, str], dict[str, Any]] = {}
        for source in (operation.path_item.get("parameters"), operation.op.get("parameters")):
            for raw in source if isinstance(source, list) else []:
                param = resolver.deref(raw)
                if not isinstance(param, dict) or not param.get("name") or not param.get("in"):
                    continue
                params[(str(param["name"]), str(param["in"]))] = param
        placeholders = re.findall(r"\{([^{}]+)\}", self.path)
        for name, where in list(params):
            if where == "path" and name not in placeholders:
                del params[(name, where)]  # the URL has no place for it
        for placeholder in placeholders:
            if (placeholder, "path") not in params:
                params[(placeholder, "path")] = {
                    "name": placeholder,
                    "in": "path",
                    "required": True,
                    "schema": {"type": "string"},
                    "description": "(path parameter the spec does not describe)",
                }
        properties: dict[str, Any] = {}
        required: list[str] = []
        taken: set[str] = set()
        body_schema, self.body = self._body(operation.op, resolver)
        if self.body is not None:
            taken.add("body")
        for (name, location), param in params.items():
            if location not in ("path", "query", "header", "cookie"):
                continue
            if location == "header" and name.lower() in IGNORED_HEADERS | self._auth_headers():
                continue
            schema, as_json = self._param_schema(param, resolver)
            prop = _sanitize_property(name)
            if prop in taken:
                prop = _sanitize_property(f"{location}_{name}")
            prop = _unique(prop, taken, MAX_PROPERTY_NAME)
            default_style = {"query": "form", "cookie": "form"}.get(location, "simple")
            style = str(param.get("style") or default_style)
            explode = param.get("explode")
            self.bindings.append(
                ParamBinding(
                    prop=prop,
                    name=name,
                    location=location,
                    style=style,
                    explode=bool(explode) if explode is not None else style == "form",
                    as_json=as_json,
                )
            )
            properties[prop] = schema
            if location == "path" or param.get("required") is True:
                required.append(prop)
        if self.body is not None:
            properties["body"] = body_schema
            if self.body.required:
                required.append("body")
        result: dict[str, Any] = {
            "type": "object",
            "properties": properties,
            "additionalProperties": False,
        }
        if required:
            result["required"] = required
        return result

    def _auth_headers(self) -> set[str]:
        if self.settings.auth == "api_key":
            return {self.settings.api_key_header.lower()}
        return set()

    def _param_schema(
        self, param: dict[str, Any], resolver: SpecResolver
    ) -> tuple[dict[str, Any], bool]:
        as_json = False
        raw = param.get("schema")
        if raw is None and isinstance(param.get("content"), dict) and param["content"]:
            media = next(iter(param["content"].values()))
            raw = media.get("schema") if isinstance(media, dict) else None
            as_json = True
        schema = resolver.schema(raw if raw is not None else {})
        if not isinstance(schema, dict):
            schema = {} if schema is True else {"not": {}}
        text = " ".join(
            part
            for part in (
                str(param.get("description") or "").strip(),
                f"({param['in']} parameter {param['name']})",
                "Deprecated." if param.get("deprecated") else "",
            )
            if part
        )
        if not schema.get("description"):
            schema = {**schema, "description": text}
        if "example" in param and "examples" not in schema:
            schema["examples"] = [param["example"]]
        return schema, as_json

    def _body(self, op: dict[str, Any], resolver: SpecResolver) -> tuple[Any, BodyBinding | None]:
        raw = op.get("requestBody")
        if raw is None:
            return None, None
        body = resolver.deref(raw)
        if not isinstance(body, dict):
            return None, None
        required = body.get("required") is True
        content = _mapping(body.get("content"))
        chosen: tuple[str, str] | None = None
        for media_type in content:
            mime = media_type.split(";")[0].strip().lower()
            if mime == "application/json" or mime.endswith("+json") or mime == "*/*":
                chosen = (media_type, "json")
                break
            if chosen is None and mime == "application/x-www-form-urlencoded":
                chosen = (media_type, "form")
            elif chosen is None and mime.startswith("text/"):
                chosen = (media_type, "text")
        if chosen is None:
            kinds = ", ".join(content) or "no media type"
            if required:
                raise RefError(f"its request body is only sent as {kinds}, which is not supported")
            return None, None
        media_type, kind = chosen
        media = _mapping(content[media_type])
        raw_schema = media.get("schema", {}) if kind != "text" else {"type": "string"}
        schema = resolver.schema(raw_schema, request=True)
        if not isinstance(schema, dict):
            schema = {} if schema is True else {"not": {}}
        label = {"json": "JSON", "form": "form fields", "text": "text"}[kind]
        text = str(body.get("description") or "").strip().rstrip(".")
        note = f"Request body ({label}, sent as {media_type.split(';')[0]})."
        schema = {**schema, "description": f"{text}. {note}" if text else note}
        return schema, BodyBinding(media_type, kind, required)

    # -- policy ---------------------------------------------------------------------------

    @property
    def url_template(self) -> str:
        return self.base_url + self.path

    def access(self, params: RawParams) -> ToolAccess:
        subject = f"{self.method} {self.url_template}"
        if self.method in READ_METHODS:
            return ToolAccess(permission=PermissionMode.READ_ONLY, subject=subject)
        return ToolAccess(permission=PermissionMode.WORKSPACE_WRITE, subject=subject, acting=True)

    # -- the call -------------------------------------------------------------------------

    async def execute(self, params: RawParams, ctx: ToolContext) -> ToolResult:
        if ctx.cancel.is_set():
            raise Cancelled(f"{self.name} was cancelled before it started")
        request = self._request(params.arguments())
        # Redirects are not followed, so this one check covers every host the call reaches.
        ctx.policy.check_url(request.url)
        secrets = self._authorize(request)
        task = asyncio.ensure_future(self._send(request, secrets, ctx.policy.hosts))
        waiter = asyncio.ensure_future(ctx.cancel.wait())
        try:
            await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            raise
        finally:
            waiter.cancel()
        if task.done():
            return task.result()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        sent = "" if self.method in READ_METHODS else " (the server may already have acted)"
        raise Cancelled(f"{self.name} was cancelled while waiting for {request.url}{sent}")

    def _request(self, arguments: dict[str, Any]) -> _Request:
        known = {binding.prop for binding in self.bindings} | ({"body"} if self.body else set())
        unknown = sorted(set(arguments) - known)
        if unknown:
            raise InvalidArguments(
                f"unknown argument(s) for {self.name}: {', '.join(unknown)}; "
                f"expected: {', '.join(sorted(known)) or 'none'}"
            )
        path = self.path
        query: list[tuple[str, str]] = []
        headers: dict[str, str] = {
            "User-Agent": USER_AGENT,
            "Accept": "application/json, */*;q=0.5",
        }
        cookies: list[str] = []
        for binding in self.bindings:
            if binding.prop not in arguments:
                if binding.location == "path":
                    raise InvalidArguments(f"{self.name} needs the path parameter {binding.prop!r}")
                continue
            value = arguments[binding.prop]
            if value is None and binding.location != "path":
                continue
            if binding.as_json:
                value = json.dumps(value, ensure_ascii=False)
            if binding.location == "path":
                path = path.replace("{" + binding.name + "}", _path_value(binding, value))
            elif binding.location == "query":
                query += _query_pairs(binding, value)
            elif binding.location == "header":
                text = _simple(value, binding.explode)
                if "\r" in text or "\n" in text:
                    raise InvalidArguments(f"header {binding.name!r} must not contain line breaks")
                headers[binding.name] = text
            else:
                cookies.append(f"{binding.name}={urllib.parse.quote(_simple(value, False))}")
        if cookies:
            headers["Cookie"] = "; ".join(cookies)
        content: bytes | None = None
        if self.body is not None and "body" in arguments:
            content = self._encode_body(arguments["body"])
            headers["Content-Type"] = self.body.media_type
        url = self.base_url + path
        if query:
            url += ("&" if "?" in url else "?") + urllib.parse.urlencode(
                query, quote_via=urllib.parse.quote
            )
        return _Request(self.method, url, headers, content)

    def _encode_body(self, value: Any) -> bytes:
        assert self.body is not None
        if self.body.kind == "json":
            return json.dumps(value, ensure_ascii=False).encode("utf-8")
        if self.body.kind == "form":
            if not isinstance(value, dict):
                raise InvalidArguments(f"body for {self.name} must be an object of form fields")
            pairs = [(str(key), _scalar(item)) for key, item in value.items()]
            return urllib.parse.urlencode(pairs).encode("ascii")
        return (value if isinstance(value, str) else json.dumps(value)).encode("utf-8")

    def _authorize(self, request: _Request) -> list[str]:
        """Add the credential; the returned secrets are scrubbed from anything we return."""
        if self.settings.auth == "none":
            return []
        variable = self.settings.token_env or ""
        token = self._env.get(variable, "")
        if not token:
            raise ExecutionFailed(
                f"{self.name} needs a credential from the environment variable {variable}, "
                f"which is not set; set {variable} before starting agent-tui "
                f"(configured in [openapi.{self.api_name}] token_env)"
            )
        if self.settings.auth == "bearer":
            request.headers["Authorization"] = f"Bearer {token}"
        else:
            request.headers[self.settings.api_key_header] = token
        return [token]

    async def _send(self, request: _Request, secrets: list[str], hosts: HostPolicy) -> ToolResult:
        timeout = self.settings.timeout
        limits = httpx.Timeout(timeout, connect=min(timeout, CONNECT_TIMEOUT))
        cap = min(MAX_BODY_BYTES, max(MIN_BODY_BYTES, 8 * self.settings.max_response_chars))
        where = f"{request.method} {request.url}"
        try:
            async with (
                asyncio.timeout(timeout),
                # The connection is judged again on the addresses it dials (DNS included).
                await guarded_client(hosts, follow_redirects=False, timeout=limits) as client,
                client.stream(
                    request.method, request.url, headers=request.headers, content=request.content
                ) as response,
            ):
                chunks: list[bytes] = []
                size = 0
                cut = False
                if request.method != "HEAD":
                    async for chunk in response.aiter_bytes():
                        if size + len(chunk) > cap:
                            chunks.append(chunk[: cap - size])
                            size = cap
                            cut = True
                            break
                        chunks.append(chunk)
                        size += len(chunk)
                body = b"".join(chunks)
                status, reason = response.status_code, response.reason_phrase
                response_headers = response.headers
        except TimeoutError:
            raise ExecutionFailed(
                f"{self.name} timed out after {timeout:g}s waiting for {where}; the server did "
                "not answer in time (raise timeout in the [openapi] settings if it is slow)"
            ) from None
        except httpx.TimeoutException as exc:
            raise ExecutionFailed(
                f"{self.name} timed out after {timeout:g}s waiting for {where} "
                f"({type(exc).__name__})"
            ) from None
        except httpx.ConnectError as exc:
            detail = _redact(str(exc) or type(exc).__name__, secrets)
            raise ExecutionFailed(
                f"could not connect to {request.url}: {detail}; is the API server running "
                "and base_url right?"
            ) from None
        except (httpx.HTTPError, httpx.StreamError) as exc:
            detail = _redact(f"{type(exc).__name__}: {exc}", secrets)
            raise ExecutionFailed(f"{where} failed: {detail}") from None
        except (ValueError, UnicodeError) as exc:
            raise InvalidArguments(
                f"could not build the request {where}: {_redact(str(exc), secrets)}"
            ) from None
        return await self._result(
            request, status, reason, response_headers, body, cut, cap, secrets
        )

    async def _result(
        self,
        request: _Request,
        status: int,
        reason: str,
        headers: httpx.Headers,
        body: bytes,
        cut: bool,
        cap: int,
        secrets: list[str],
    ) -> ToolResult:
        content_type = headers.get("content-type", "")
        text = _render_body(body, content_type, cut=cut)
        text = _redact(text, secrets)
        limit = self.settings.max_response_chars
        details: dict[str, Any] = {
            "status": status,
            "method": request.method,
            "url": request.url,
            "bytes": len(body),
            "truncated_chars": 0,
        }
        notes: list[str] = []
        if cut:
            length = headers.get("content-length")
            total = f" of {length}" if length and length.isdigit() else ""
            notes.append(
                f"[download stopped after {cap} bytes{total}; the rest of the response was "
                "not read]"
            )
            details["download_cut"] = True
        if len(text) > limit:
            missing = len(text) - limit
            path = await asyncio.to_thread(
                save_full_output, f"{self.name}-{status}-{len(text)}", text
            )
            where = f"; the {len(text)} characters read are saved to {path}" if path else ""
            text = text[:limit]
            notes.append(f"[response cut at {limit} characters: {missing} more not shown{where}]")
            details["truncated_chars"] = missing
            if path:
                details["full_output_path"] = path
        lines = [f"HTTP {status} {reason}".rstrip()]
        lines.append(f"Content-Type: {content_type or '(none)'}")
        location = headers.get("location")
        if location:
            lines.append(f"Location: {_redact(location, secrets)}")
        rendered = "\n".join(lines) + "\n\n" + text + "".join("\n" + note for note in notes)
        if 200 <= status < 300:
            return ToolResult(rendered, details)
        return ToolResult(
            f"Error (HttpStatus): {request.method} {self.path} answered {rendered}",
            {**details, "error_type": "HttpStatus"},
            is_error=True,
        )


@dataclass
class _Request:
    method: str
    url: str
    headers: dict[str, str]
    content: bytes | None


# --------------------------------------------------------------------------- serialising


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return str(value)


def _simple(value: Any, explode: bool) -> str:
    """The ``simple`` style: ``a,b`` for arrays, ``k,v`` (or ``k=v`` exploded) for objects."""
    if isinstance(value, list):
        return ",".join(_scalar(item) for item in value)
    if isinstance(value, dict):
        if explode:
            return ",".join(f"{key}={_scalar(item)}" for key, item in value.items())
        return ",".join(f"{key},{_scalar(item)}" for key, item in value.items())
    return _scalar(value)


def _path_value(binding: ParamBinding, value: Any) -> str:
    """Each value percent-encoded (a ``/`` in an id must not become a path separator)."""

    def quote(item: Any) -> str:
        return urllib.parse.quote(_scalar(item), safe="")

    if isinstance(value, list):
        joined = ",".join(quote(item) for item in value)
    elif isinstance(value, dict):
        sep = "=" if binding.explode else ","
        joined = ",".join(f"{quote(key)}{sep}{quote(item)}" for key, item in value.items())
    else:
        joined = quote(value)
    if binding.style == "label":
        return "." + joined
    if binding.style == "matrix":
        return f";{binding.name}={joined}"
    return joined


def _query_pairs(binding: ParamBinding, value: Any) -> list[tuple[str, str]]:
    name = binding.name
    if isinstance(value, list):
        items = [_scalar(item) for item in value]
        if binding.explode and binding.style == "form":
            return [(name, item) for item in items]
        sep = {"spaceDelimited": " ", "pipeDelimited": "|"}.get(binding.style, ",")
        return [(name, sep.join(items))]
    if isinstance(value, dict):
        if binding.style == "deepObject":
            return [(f"{name}[{key}]", _scalar(item)) for key, item in value.items()]
        if binding.explode:
            return [(str(key), _scalar(item)) for key, item in value.items()]
        return [(name, ",".join(f"{key},{_scalar(item)}" for key, item in value.items()))]
    return [(name, _scalar(value))]


def _sanitize_property(name: str) -> str:
    """Providers accept argument names matching ``[A-Za-z0-9_.-]{1,64}``."""
    cleaned = re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_")
    return cleaned or "param"


def _redact(text: str, secrets: list[str]) -> str:
    for secret in secrets:
        if secret:
            text = text.replace(secret, "[redacted]")
    return text


# --------------------------------------------------------------------------- rendering


def _is_text(mime: str) -> bool:
    return (
        mime.startswith("text/")
        or mime.endswith(("+json", "+xml", "/json", "/xml"))
        or mime
        in (
            "application/javascript",
            "application/x-www-form-urlencoded",
            "application/x-ndjson",
            "application/yaml",
            "application/problem+json",
        )
    )


def _render_body(body: bytes, content_type: str, *, cut: bool) -> str:
    if not body:
        return "(empty body)"
    mime = content_type.split(";")[0].strip().lower()
    if (mime and not _is_text(mime)) or (not mime and b"\x00" in body[:4096]):
        more = "+" if cut else ""
        kind = content_type or "unknown type"
        return f"[binary body: {kind}, {len(body)}{more} bytes, not shown]"
    match = re.search(r"charset=[\"']?([\w.:-]+)", content_type, re.IGNORECASE)
    charset = match.group(1) if match else "utf-8"
    try:
        text = body.decode(charset, errors="replace")
    except LookupError:
        text = body.decode("utf-8", errors="replace")
    if mime.endswith("json") and not cut:
        try:
            return json.dumps(json.loads(text), indent=2, ensure_ascii=False)
        except (ValueError, RecursionError):
            return text
    if mime in ("text/html", "application/xhtml+xml"):
        return html_to_text(text)
    return text


# --------------------------------------------------------------------------- description


def _describe(
    tool: OpenApiOperationTool, op: dict[str, Any], api_title: str, schema: dict[str, Any]
) -> str:
    summary = " ".join(str(op.get("summary") or "").split())
    details = str(op.get("description") or "").strip()
    if len(details) > MAX_SPEC_DESCRIPTION:
        details = details[: MAX_SPEC_DESCRIPTION - 1].rstrip() + "…"
    first_line = details.split("\n", 1)[0].strip()
    parts = [summary] if summary else []
    if details:
        parts.append(details)
    if not parts:
        parts.append(f"{tool.method} {tool.path}")
    effect = (
        "reads only"
        if tool.method in READ_METHODS
        else "changes remote state and needs write permission"
    )
    deprecated = " Deprecated in the spec." if op.get("deprecated") else ""
    parts.append(
        f"Calls {tool.method} {tool.path} on the {tool.api_name} API ({api_title}); "
        f"it {effect}.{deprecated}"
    )
    purpose = (summary or first_line[:160] or f"{tool.method} {tool.path}").rstrip(".")
    sibling = f"{tool.name.split('__', 1)[0]}__*"
    argument_note = (
        "path, query and header parameters are top-level arguments"
        + ("; the request body goes under `body`" if tool.body else "")
        + "; credentials are added for you, never pass them."
    )
    example = json.dumps(_example_arguments(schema), ensure_ascii=False)
    if len(example) > 300:
        example = json.dumps(
            {key: value for key, value in _example_arguments(schema).items() if key != "body"}
        )
    parts.append(
        f"When to use: {purpose} through the {tool.api_name} API.\n"
        f"When NOT to use: for other endpoints of this API (see the other {sibling} tools); "
        "for arbitrary URLs (use http_request or fetch_url).\n"
        f"Disambiguation: {argument_note}\n"
        f"Examples: {example}"
    )
    return "\n\n".join(parts)


def _example_arguments(schema: dict[str, Any]) -> dict[str, Any]:
    properties = schema.get("properties") or {}
    required = schema.get("required") or []
    names = [name for name in properties if name in required] or list(properties)[:1]
    return {name: _example_value(properties[name], 0) for name in names}


def _example_value(schema: Any, depth: int) -> Any:
    if not isinstance(schema, dict) or depth > 4:
        return "..."
    for key in ("const", "default"):
        if key in schema:
            return schema[key]
    if isinstance(schema.get("examples"), list) and schema["examples"]:
        return schema["examples"][0]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    for key in ("allOf", "anyOf", "oneOf"):
        if isinstance(schema.get(key), list) and schema[key]:
            if key == "allOf":
                merged: dict[str, Any] = {}
                for part in schema[key]:
                    value = _example_value(part, depth + 1)
                    if isinstance(value, dict):
                        merged.update(value)
                return merged
            return _example_value(schema[key][0], depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object" or "properties" in schema:
        properties = schema.get("properties") or {}
        required = schema.get("required") or list(properties)[:2]
        return {
            name: _example_value(properties[name], depth + 1)
            for name in required
            if name in properties
        }
    if kind == "array":
        return [_example_value(schema.get("items"), depth + 1)]
    return {"integer": 1, "number": 1.5, "boolean": True, "null": None}.get(str(kind), "string")
