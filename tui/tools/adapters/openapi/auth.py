"""The credential an OpenAPI tool adds to its requests, and keeping it out of what it returns.

The credential is read from the environment at call time (never stored in settings or shown
to the model); whatever a call returns is scrubbed of it, because servers echo headers back in
error pages and redirect targets.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from tui.errors import ExecutionFailed

if TYPE_CHECKING:
    from tui.config import OpenApiSpecSettings


def credential_header_names(settings: OpenApiSpecSettings) -> set[str]:
    """Lower-case header names the credential fills, so no argument may set them."""
    if settings.auth == "api_key":
        return {settings.api_key_header.lower()}
    return set()


class Credentials:
    """One API's configured credential: ``bearer``, ``api_key`` (a header) or ``none``."""

    def __init__(
        self,
        settings: OpenApiSpecSettings,
        env: Mapping[str, str],
        *,
        tool_name: str,
        api_name: str,
    ) -> None:
        self.settings = settings
        self._env = env
        self._tool_name = tool_name
        self._api_name = api_name

    def authorize(self, headers: dict[str, str]) -> list[str]:
        """Add the credential to ``headers``; the returned secrets are scrubbed from anything
        we return.

        Raises:
            ExecutionFailed: The environment variable that holds the credential is not set.
        """
        if self.settings.auth == "none":
            return []
        variable = self.settings.token_env or ""
        token = self._env.get(variable, "")
        if not token:
            raise ExecutionFailed(
                f"{self._tool_name} needs a credential from the environment variable "
                f"{variable}, which is not set; set {variable} before starting agent-tui "
                f"(configured in [openapi.{self._api_name}] token_env)"
            )
        if self.settings.auth == "bearer":
            headers["Authorization"] = f"Bearer {token}"
        else:
            headers[self.settings.api_key_header] = token
        return [token]


def redact(text: str, secrets: list[str]) -> str:
    """``text`` with every secret replaced by ``[redacted]``."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, "[redacted]")
    return text
