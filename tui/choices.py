"""The closed sets of names the command line, the settings and the code share.

Kept on the ground floor and free of imports, so the flags' choice lists are read from the
same types the settings validate and the code checks against, without ``--help`` or
``--version`` loading pydantic or a provider (``tui.cli_args``). The approval modes are
``tui.security.permissions.ApprovalMode``.
"""

from __future__ import annotations

from typing import Literal

ProviderName = Literal["openai", "openai-responses", "anthropic"]
"""The model APIs agent-tui speaks (``--provider``, ``[provider] name``)."""

OutputFormat = Literal["text", "json", "stream-json", "agent-tui-json"]
"""What a headless run prints (``--output-format``)."""
