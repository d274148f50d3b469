"""The settings sections: one pydantic model per TOML table, grouped by topic in this package.

Every section forbids unknown keys (``max_turn = 5`` must fail, not be ignored), so they all
share one ``model_config``; the docstring under each field is its documentation, which the
dumper (``tui.config.dump``) reads from the source when it writes a config file. The root
model that gathers them is ``tui.config.settings``.
"""

from __future__ import annotations

from pydantic import ConfigDict

SECTION = ConfigDict(extra="forbid")
"""The ``model_config`` of every section: unknown keys are errors."""
