"""What every HTTP model provider shares: one transport with retries, and a key never shown.

The three wire formats differ in bodies, headers and stream parsing; how they hold their
connection, retry, close and describe themselves (``repr`` never shows the key) is one thing.
"""

from __future__ import annotations

from typing import Any, ClassVar

import httpx2 as httpx

from tui.agent.providers.base import Provider
from tui.agent.providers.retry import (
    DEFAULT_DEADLINE,
    DEFAULT_IDLE_TIMEOUT,
    ApiInfo,
    RetryPolicy,
    Transport,
)
from tui.agent.providers.wire_json import load_object


class HttpProvider(Provider):
    """A provider over httpx; subclasses call ``_connect`` from their ``__init__``."""

    api_name: ClassVar[str]
    """How errors name the API ("OpenAI API")."""
    key_env: ClassVar[str]
    """The variable a 401 tells the person to check."""

    def _connect(
        self,
        model: str,
        *,
        api_key: str | None,
        base_url: str,
        stream: bool,
        client: httpx.AsyncClient | None,
        max_retries: int,
        timeout: float | httpx.Timeout | None,
        backoff_base: float,
        idle_timeout: float = DEFAULT_IDLE_TIMEOUT,
        deadline: float = DEFAULT_DEADLINE,
    ) -> None:
        """``timeout``: httpx's own (None: from ``idle_timeout``); ``idle_timeout`` and
        ``deadline`` bound waits and retries (``RetryPolicy``)."""
        if not stream:
            # Nothing comes back before the whole answer: only the deadline can bound it.
            idle_timeout = max(idle_timeout, deadline)
        if timeout is None:
            timeout = httpx.Timeout(connect=15.0, read=idle_timeout, write=60.0, pool=30.0)
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.streaming = stream
        self._api_key = api_key or None
        self._transport = Transport(
            api=ApiInfo(
                name=self.api_name,
                key_env=self.key_env,
                secrets=(api_key,) if api_key else (),
                key_set=bool(api_key),
            ),
            policy=RetryPolicy(
                attempts=max_retries,
                backoff_base=backoff_base,
                idle_timeout=idle_timeout,
                deadline=deadline,
            ),
            client=client,
            timeout=timeout,
            base_url=self.base_url,
        )

    def _accept(self) -> dict[str, str]:
        return {"Accept": "text/event-stream" if self.streaming else "application/json"}

    def _load(self, raw: bytes | str, what: str, *, stream: bool = False) -> dict[str, Any]:
        """``raw`` as a JSON object, errors naming this API; a malformed stream event is
        retried like a cut stream (``load_object``)."""
        return load_object(raw, what, self.api_name, retryable=stream)

    @staticmethod
    def _answered_json(response: httpx.Response) -> bool:
        """A whole JSON answer where a stream was asked for (a server that ignored
        ``"stream": true``)."""
        return "json" in response.headers.get("content-type", "").lower()

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(model={self.model!r}, base_url={self.base_url!r}, "
            f"stream={self.streaming!r}, api_key={'set' if self._api_key else 'none'})"
        )

    async def aclose(self) -> None:
        await self._transport.aclose()
