"""Sending one model request with retries, shared by every provider.

Model APIs fail in ordinary ways (overload, rate limits, a dropped connection, a stream cut
or garbled mid-answer, a server that goes quiet), and a retry a moment later usually works, so
a turn should not die on the first 529. Every such failure happens before the answer is whole,
and nothing runs before then (tools start after ``Completed``), so every one is retried: when
events of the failed attempt already reached the caller, the ``Retrying`` event that announces
the retry tells it to drop them (``discard``), since the next attempt starts the answer over.

Two clocks bound it. ``idle_timeout``: the longest wait for the server's next event, from
connecting to the last byte; keep-alive comments and pings do not count as events, so a stream
of keep-alives alone ends too. ``deadline``: no retry starts, and no pause is waited, past it;
an answer that keeps streaming is never cut by it. Each retry is announced before its pause
("retrying in 2 s (reason)"), so neither a person nor a script waits without knowing why.

Every message built here may reach the screen or a log, so none includes request headers,
and each passes through ``ApiInfo.scrub`` to remove the API key even if a server echoes it.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import logging
import random
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any

import httpx2 as httpx

from tui.agent.providers import ahead
from tui.agent.providers.base import ProviderError, ProviderEvent, Retrying, StreamInterrupted
from tui.agent.providers.context_errors import classify as classify_context_error
from tui.tools.tls import needs_tls, plain_context, prepare_plain, tls_context
from tui.tools.tls import prepare as prepare_tls

__all__ = [
    "DEFAULT_DEADLINE",
    "DEFAULT_IDLE_TIMEOUT",
    "DEFAULT_TIMEOUT",
    "ApiInfo",
    "ResponseParser",
    "RetryPolicy",
    "Transport",
    "error_message_from_body",
    "parse_retry_after",
    "stream_with_retries",
]

log = logging.getLogger(__name__)

DEFAULT_IDLE_TIMEOUT = 120.0
"""Seconds without an event from the model before an attempt is given up (``[provider]
idle_timeout``); keep-alives do not count."""
DEFAULT_DEADLINE = 600.0
"""Seconds after which no retry starts (``[provider] request_timeout``)."""

RETRYABLE_STATUSES = frozenset({408, 409, 429})
"""Besides every 5xx: timeouts, lock conflicts and rate limits, as the official SDKs do."""

ResponseParser = Callable[[httpx.Response], AsyncGenerator[ProviderEvent, None]]
"""Turns one successful response into events; raise ``StreamInterrupted`` for a cut stream."""


@dataclass(frozen=True)
class ApiInfo:
    """Who we are talking to, for messages a user can act on."""

    name: str
    """As shown in messages, e.g. ``"OpenAI API"``."""
    key_env: str
    """The variable to check on a 401, e.g. ``"OPENAI_API_KEY"``."""
    secrets: tuple[str, ...] = ()
    """Strings that must never appear in a message (the API key)."""
    key_set: bool = True
    """Whether a key was configured at all, so a 401 can say it is missing."""

    def scrub(self, text: str) -> str:
        for secret in self.secrets:
            if secret:
                text = text.replace(secret, "[redacted]")
        return text

    def __repr__(self) -> str:
        return f"ApiInfo(name={self.name!r}, key_env={self.key_env!r})"


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how patiently to retry; ``backoff_base`` is small in tests."""

    attempts: int = 4
    """Total tries, the first one included."""
    backoff_base: float = 0.5
    backoff_max: float = 20.0
    retry_after_cap: float = 60.0
    """A server asking for a longer pause gets this much; the user is waiting."""
    idle_timeout: float = DEFAULT_IDLE_TIMEOUT
    """The longest wait for the server's next event (keep-alives do not count)."""
    deadline: float = DEFAULT_DEADLINE
    """Seconds from the first attempt after which no retry starts and no pause is waited."""

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        """Seconds to wait after failed try number ``attempt`` (1-based).

        Exponential with jitter, so many clients hit by the same outage spread out; a
        ``Retry-After`` from the server wins, capped.
        """
        if retry_after is not None:
            return max(0.0, min(retry_after, self.retry_after_cap))
        ceiling = min(self.backoff_max, self.backoff_base * 2.0 ** (attempt - 1))
        return ceiling / 2 + random.uniform(0, ceiling / 2)


def parse_retry_after(headers: httpx.Headers, *, now: float | None = None) -> float | None:
    """Seconds the server asked us to wait: ``retry-after-ms``, or ``Retry-After`` in seconds
    or as an HTTP date; ``None`` when absent or unreadable."""
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    current = time.time() if now is None else now
    return max(0.0, when.timestamp() - current)


def error_message_from_body(body: bytes, fallback: str = "") -> str:
    """The provider's own words from an error body, in any of the usual JSON shapes."""
    text = body.decode("utf-8", errors="replace").strip()
    try:
        data: Any = json.loads(text) if text else None
    except ValueError:
        data = None
    message = _find_message(data)
    if message:
        return _shorten(message)
    if text and not text.lstrip().startswith("<"):
        return _shorten(text)
    return fallback


def _find_message(data: Any) -> str | None:
    if isinstance(data, list) and data:
        return _find_message(data[0])
    if not isinstance(data, dict):
        return None
    error = data.get("error")
    if isinstance(error, dict):
        found = _find_message(error)
        if found:
            return found
    if isinstance(error, str) and error:
        return error
    for key in ("message", "detail", "msg"):
        value = data.get(key)
        if isinstance(value, str) and value:
            return value
        if isinstance(value, list | dict):
            found = _find_message(value)
            if found:
                return found
    return None


def _shorten(text: str, limit: int = 500) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def status_error(api: ApiInfo, status: int, message: str, attempts: int) -> ProviderError:
    """The final error for an HTTP failure, worded so the user knows what to do next."""
    detail = f": {message}" if message else ""
    retryable = status in RETRYABLE_STATUSES or status >= 500
    if status == 401:
        check = f"Check {api.key_env}" if api.key_set else f"Set {api.key_env}: no key was sent"
        text = f"{api.name} returned 401 (unauthorized){detail}. {check}."
    elif status == 403:
        text = (
            f"{api.name} returned 403 (forbidden){detail}. "
            f"Check that the key in {api.key_env} may use this model."
        )
    elif status == 404:
        text = f"{api.name} returned 404 (not found){detail}. Check the model name and base URL."
    elif retryable:
        tries = "attempt" if attempts == 1 else "attempts"
        text = f"{api.name} returned {status} after {attempts} {tries}{detail}"
    else:
        text = f"{api.name} returned {status}{detail}"
    return ProviderError(api.scrub(text), status=status, retryable=retryable)


def _describe_transport(error: httpx.TransportError) -> str:
    detail = str(error).strip()
    name = type(error).__name__
    return f"{name}: {detail}" if detail else name


def _where(url: str) -> str:
    """Host and port only: a URL may carry credentials in userinfo or query."""
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError):
        return "the server"
    port = f":{parsed.port}" if parsed.port else ""
    return f"{parsed.host}{port}"


async def stream_with_retries(
    client: httpx.AsyncClient,
    *,
    url: str,
    body: dict[str, Any],
    headers: dict[str, str],
    parse: ResponseParser,
    api: ApiInfo,
    policy: RetryPolicy,
) -> AsyncGenerator[ProviderEvent, None]:
    """POST ``body`` and yield ``parse``'s events, retrying every failure before the answer
    is whole (see the module docstring).

    The response is opened and closed inside this generator, so cancelling the consumer (or
    closing the generator) closes the connection at once.
    """
    attempts = max(1, policy.attempts)
    started = time.monotonic()
    for attempt in range(1, attempts + 1):
        answering = False  # a 2xx status arrived: failures from here on cut a stream
        yielded = False
        retry_after: float | None = None
        detail: str | None = None
        failure: ProviderError
        try:
            request = client.build_request("POST", url, json=body, headers=headers)
            async with asyncio.timeout(policy.idle_timeout):
                early = await ahead.claim(request, client) if attempt == 1 else None
                response = early or await client.send(request, stream=True)
            if attempt == 1 and early is None:
                _remember(client, url, body, headers, api)
            try:
                if response.is_success:
                    answering = True
                    async with aclosing(parse(response)) as events:
                        while True:
                            async with asyncio.timeout(policy.idle_timeout):
                                try:
                                    event = await anext(events)
                                except StopAsyncIteration:
                                    break
                            yielded = True
                            yield event
                    return
                async with asyncio.timeout(policy.idle_timeout):
                    raw = await _read_error_body(response)
            finally:
                await response.aclose()
            message = api.scrub(error_message_from_body(raw, response.reason_phrase))
            too_long = classify_context_error(response.status_code, raw, message)
            if too_long is not None:  # retrying the same request cannot help
                raise too_long
            failure = status_error(api, response.status_code, message, attempt)
            if not failure.retryable:
                raise failure
            retry_after = parse_retry_after(response.headers)
        except TimeoutError:
            quiet = f"no word from the {api.name} for {policy.idle_timeout:g} s"
            failure = (
                StreamInterrupted(f"{quiet} mid-answer", retryable=True)
                if answering
                else ProviderError(f"{quiet} ({_where(url)})", retryable=True)
            )
        except httpx.TransportError as error:
            detail = _describe_transport(error)
            failure = _transport_failure(error, api, url, answering=answering, yielded=yielded)
        except ProviderError as error:
            if not error.retryable:
                raise _scrubbed(error, api) from None
            failure = _scrubbed(error, api)
        pause = policy.delay(attempt, retry_after)
        left = policy.deadline - (time.monotonic() - started)
        if attempt == attempts or pause > left:
            raise _final(failure, detail, api, attempt, deadline=pause > left) from None
        reason = api.scrub(failure.msg)
        log.info("%s request failed (%s); retrying in %.2fs", api.name, reason, pause)
        yield Retrying(reason, pause, attempt + 1, attempts, discard=yielded)
        await asyncio.sleep(pause)


def _remember(
    client: httpx.AsyncClient,
    url: str,
    body: dict[str, Any],
    headers: dict[str, str],
    api: ApiInfo,
) -> None:
    """A ``-p`` run's first request, kept so the same command can send it ahead next time."""
    from tui.security.own_environ import PROVIDER_KEY_VARIABLES, process_environ

    environ = process_environ()
    limits = client.timeout
    sent = ahead.Sent(
        url=url,
        body=body,
        headers=headers,
        secrets=api.secrets,
        timeout=(limits.connect, limits.read, limits.write, limits.pool),
        tls=needs_tls(url),
    )
    ahead.remember(
        sent, {name: environ[name] for name in PROVIDER_KEY_VARIABLES if name in environ}
    )


def _transport_failure(
    error: httpx.TransportError, api: ApiInfo, url: str, *, answering: bool, yielded: bool
) -> ProviderError:
    if yielded:
        return StreamInterrupted(
            api.scrub(
                f"the {api.name} stream was cut off mid-answer ({_describe_transport(error)})"
            ),
            retryable=True,
        )
    if answering:
        return StreamInterrupted(
            f"the {api.name} stream was cut off before any output", retryable=True
        )
    if isinstance(error, httpx.ConnectError | httpx.ConnectTimeout):
        return ProviderError(f"could not reach the {api.name} at {_where(url)}", retryable=True)
    return ProviderError(f"the {api.name} at {_where(url)} did not answer", retryable=True)


async def _read_error_body(response: httpx.Response, limit: int = 64 * 1024) -> bytes:
    """The start of an error body; a broken or endless one must not hide the status."""
    data = bytearray()
    try:
        async for chunk in response.aiter_bytes():
            data.extend(chunk)
            if len(data) >= limit:
                break
    except httpx.TransportError:
        pass
    return bytes(data[:limit])


def _scrubbed(error: ProviderError, api: ApiInfo) -> ProviderError:
    clean = api.scrub(error.msg)
    if clean != error.msg:
        error.msg = clean
        error.args = (clean,)
    return error


def _final(
    failure: ProviderError, detail: str | None, api: ApiInfo, attempts: int, *, deadline: bool
) -> ProviderError:
    """The last failure, reworded to say how many tries were made (and that the deadline,
    not the number of tries, ended them)."""
    ended = " (the request deadline, [provider] request_timeout, was reached)" if deadline else ""
    if failure.status is not None:  # status_error already counted the attempts
        text = api.scrub(failure.msg + ended)
    else:
        tries = "attempt" if attempts == 1 else "attempts"
        suffix = f": {detail}" if detail and detail not in failure.msg else ""
        text = api.scrub(f"{failure.msg} after {attempts} {tries}{suffix}{ended}")
    cls = StreamInterrupted if isinstance(failure, StreamInterrupted) else ProviderError
    return cls(text, status=failure.status, retryable=failure.retryable)


DEFAULT_TIMEOUT = httpx.Timeout(connect=15.0, read=DEFAULT_IDLE_TIMEOUT, write=60.0, pool=30.0)
"""httpx's own limits; the idle timeout above is the one that counts (keep-alives reset
``read``, not it)."""


class Transport:
    """The HTTP side both providers share: one client, one retry policy, key-safe errors.

    A client passed in belongs to the caller and is left open by ``aclose``.
    """

    def __init__(
        self,
        *,
        api: ApiInfo,
        policy: RetryPolicy,
        client: httpx.AsyncClient | None = None,
        timeout: float | httpx.Timeout = DEFAULT_TIMEOUT,
        base_url: str = "",
    ) -> None:
        self.api = api
        self.policy = policy
        self._owns_client = client is None
        self._client = client
        self._timeout = timeout
        self._tls = needs_tls(base_url)
        """False for a plain-http server with no https proxy: no CA bundle is loaded."""
        if client is None and self._tls:  # in a thread, while the session is built
            prepare_tls()
        elif client is None:
            prepare_plain()

    async def client(self) -> httpx.AsyncClient:
        """The client, made at the first request (on the shared TLS context, or on one
        without CAs for plain http)."""
        if self._client is None:
            try:
                verify = await (tls_context() if self._tls else plain_context())
            except OSError as error:  # ssl.SSLError too: SSL_CERT_FILE names no bundle, say
                raise ProviderError(
                    f"TLS to the {self.api.name} cannot be set up: the CA bundle could not "
                    f"be loaded ({error}; SSL_CERT_FILE and SSL_CERT_DIR name another)"
                ) from None
            if self._client is None:
                self._client = httpx.AsyncClient(timeout=self._timeout, verify=verify)
        return self._client

    async def stream(
        self,
        url: str,
        body: dict[str, Any],
        headers: dict[str, str],
        parse: ResponseParser,
    ) -> AsyncIterator[ProviderEvent]:
        events = stream_with_retries(
            await self.client(),
            url=url,
            body=body,
            headers=headers,
            parse=parse,
            api=self.api,
            policy=self.policy,
        )
        async with aclosing(events):  # closing this stream closes the response at once
            async for event in events:
                yield event

    async def aclose(self) -> None:
        if self._owns_client and self._client is not None:
            await self._client.aclose()

    def __repr__(self) -> str:
        return f"Transport(api={self.api!r}, policy={self.policy!r})"
