"""OpenAPI operations as tools: one ``{api}__{operationId}`` tool per operation of a spec.

This module walks a spec's paths, applies the settings' filters (``tags``, ``operations``,
``path_prefixes``), picks each operation's server and a unique tool name, and builds one
``OpenApiOperationTool`` (in ``operation``) per operation. The call is made with httpx to the
configured ``base_url`` (or the spec's server), with the configured credentials read from the
environment at call time.

Operations this adapter cannot call (an external ``$ref``, a body only as multipart) are left
out with a reason in ``OpenApiToolset.skipped``, and the rest still work.
"""

from __future__ import annotations

import logging
import re
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tui.tools.adapters.openapi.arguments import SpecOperation
from tui.tools.adapters.openapi.names import MAX_NAME, operation_suffix, sanitize, unique_name
from tui.tools.adapters.openapi.operation import OpenApiOperationTool
from tui.tools.adapters.openapi.spec import (
    OpenApiSpecError,
    RefError,
    SpecResolver,
    check_document,
    is_url,
    load_spec,
)

if TYPE_CHECKING:
    from tui.config import OpenApiSpecSettings
    from tui.tools.base import Tool

__all__ = [
    "OpenApiToolset",
    "SkippedOperation",
    "build_openapi_tools",
    "build_openapi_toolset",
    "openapi_tools",
    "openapi_toolset",
]

log = logging.getLogger(__name__)

METHODS = ("get", "put", "post", "delete", "patch", "head", "options", "trace")


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
    prefix = sanitize(api_name) or "api"
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
            suffix = operation_suffix(operation.method, operation.path, operation_id)
            name = unique_name(f"{prefix}__{suffix}", taken, MAX_NAME)
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
) -> list[SpecOperation]:
    found: list[SpecOperation] = []
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
                found.append(SpecOperation(method, str(path), op, item))
    return found


def _matches(operation: SpecOperation, settings: OpenApiSpecSettings) -> bool:
    op = operation.op
    if settings.tags and not set(map(str, _list(op.get("tags")))) & set(settings.tags):
        return False
    if settings.operations:
        operation_id = op.get("operationId")
        names = {str(operation_id), sanitize(str(operation_id))} if operation_id else set()
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


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []
