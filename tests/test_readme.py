"""The README's tool table is the user's catalogue: every tool that can exist is in it."""

from __future__ import annotations

import re
from pathlib import Path

from tui.agent.subagent import SubAgentTool
from tui.tools.builtin.catalog import builtin_tools
from tui.tools.builtin.config_tool import ConfigTool
from tui.tools.builtin.cron.store import CronStore
from tui.tools.builtin.cron.tools import cron_tools
from tui.tools.builtin.tmux import tmux_tools
from tui.tools.builtin.tool_search import ToolSearchTool
from tui.tools.structured_output import StructuredOutputTool

README = Path(__file__).resolve().parents[1] / "README.md"


def table_rows() -> dict[str, str]:
    """Tool name -> its row's permission cell, from the table under ``## Tools``."""
    section = README.read_text(encoding="utf-8").split("\n## Tools\n", 1)[1].split("\n## ", 1)[0]
    rows: dict[str, str] = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0].startswith("`"):
            for name in re.findall(r"`([^`]+)`", cells[0]):
                rows[name] = cells[1]
    return rows


def test_every_tool_has_a_row_with_its_permission(tmp_path: Path) -> None:
    names = [tool.name for tool in builtin_tools(None, tmp_path)]
    names += [tool.name for tool in tmux_tools()] + [t.name for t in cron_tools(CronStore())]
    names += [
        ConfigTool.name,
        StructuredOutputTool.name,
        ToolSearchTool.name,
        SubAgentTool.name,
        "SERVER__tool",
        "API__operationId",
    ]
    rows = table_rows()
    missing = [name for name in names if name not in rows]
    assert not missing, f"README.md's tool table lacks {missing}"
    permissions = ("read-only", "workspace-write", "danger-full-access", "as its tools")
    for name in names:
        assert any(word in rows[name] for word in permissions), (name, rows[name])
