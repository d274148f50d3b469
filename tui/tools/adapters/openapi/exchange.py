"""One HTTP exchange of an OpenAPI tool: send the request, read the response with a byte cap.

Redirects are not followed (the host policy judged the one URL the call names), the client
judges the addresses it dials again (DNS included), and a response is read only up to a cap,
so a huge body is never downloaded. Transport failures become tool errors worded for the
model, with the credential scrubbed from them.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING

import httpx2 as httpx

from tui.errors import ExecutionFailed, InvalidArguments
from tui.tools.adapters.openapi.auth import redact
from tui.tools.adapters.openapi.request import HttpRequest
from tui.tools.netguard import guarded_client

if TYPE_CHECKING:
    from tui.config import OpenApiSpecSettings
    from tui.security.hosts import HostPolicy

MIN_BODY_BYTES = 1024 * 1024
MAX_BODY_BYTES = 32 * 1024 * 1024
"""Bytes of a response read at most; the rest is never downloaded."""
CONNECT_TIMEOUT = 10.0


@dataclass(frozen=True)
class HttpResponse:
    """What came back: the status, the headers and the body as far as it was read."""

    status: int
    reason: str
    headers: httpx.Headers
    body: bytes
    cut: bool
    """The body went on past ``cap`` bytes; the rest was not read."""
    cap: int


async def exchange(
    request: HttpRequest,
    *,
    tool_name: str,
    settings: OpenApiSpecSettings,
    secrets: list[str],
    hosts: HostPolicy,
) -> HttpResponse:
    """Send ``request`` and read its response.

    Raises:
        ExecutionFailed: A timeout, a refused connection, a failed transfer.
        InvalidArguments: The request cannot be built (a bad header value, say).
    """
    timeout = settings.timeout
    limits = httpx.Timeout(timeout, connect=min(timeout, CONNECT_TIMEOUT))
    cap = min(MAX_BODY_BYTES, max(MIN_BODY_BYTES, 8 * settings.max_response_chars))
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
            return HttpResponse(
                response.status_code,
                response.reason_phrase,
                response.headers,
                b"".join(chunks),
                cut,
                cap,
            )
    except TimeoutError:
        raise ExecutionFailed(
            f"{tool_name} timed out after {timeout:g}s waiting for {where}; the server did "
            "not answer in time (raise timeout in the [openapi] settings if it is slow)"
        ) from None
    except httpx.TimeoutException as exc:
        raise ExecutionFailed(
            f"{tool_name} timed out after {timeout:g}s waiting for {where} ({type(exc).__name__})"
        ) from None
    except httpx.ConnectError as exc:
        detail = redact(str(exc) or type(exc).__name__, secrets)
        raise ExecutionFailed(
            f"could not connect to {request.url}: {detail}; is the API server running "
            "and base_url right?"
        ) from None
    except (httpx.HTTPError, httpx.StreamError) as exc:
        detail = redact(f"{type(exc).__name__}: {exc}", secrets)
        raise ExecutionFailed(f"{where} failed: {detail}") from None
    except (ValueError, UnicodeError) as exc:
        raise InvalidArguments(
            f"could not build the request {where}: {redact(str(exc), secrets)}"
        ) from None
