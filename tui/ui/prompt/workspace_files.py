"""The workspace's files for ``@`` completion: listed once per prompt, never naming a secret.

The session lists them on its target, through the policy's path guard
(``SessionAPI.list_workspace_files``); this cache keeps one listing while the person types a
prompt, so each ``@`` completes at once, and drops it after each send.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

FileLister = Callable[[], Awaitable[list[str]]]
"""Lists the workspace's files (workspace-relative, secrets left out; empty on failure)."""


@dataclass
class FileCache:
    """One listing per prompt session: taken on the first ``@``, dropped after each send."""

    list_files: FileLister
    _task: asyncio.Task[list[str]] | None = field(default=None, repr=False)

    async def files(self) -> list[str]:
        if self._task is None:
            self._task = asyncio.ensure_future(self.list_files())
        return await asyncio.shield(self._task)

    def forget(self) -> None:
        """The next ``@`` lists again (files come and go between prompts)."""
        self._task = None
