"""The settings sections: one pydantic model per TOML table, grouped by topic in this package.

Every section forbids unknown keys (``max_turn = 5`` must fail, not be ignored) and reads the
docstring under each field as its description (which ``agent-tui config`` prints), so they all
share one ``model_config``. The root model that gathers them is ``tui.config.settings``.
"""

from __future__ import annotations

from pydantic import ConfigDict

SECTION = ConfigDict(extra="forbid", use_attribute_docstrings=True)
"""The ``model_config`` of every section: unknown keys are errors, field docstrings are docs."""
