"""What the person does with a tool block: expand it, read its full output, copy from it.

The keys act on the focused block, else the latest one; a block's own buttons send a
``ToolBlockAction``. The full output opens in the pager, after any output still queued for
its spill file is written.
"""

from __future__ import annotations

import asyncio
from functools import partial
from typing import TYPE_CHECKING

from tui.safe_text import dumps_or
from tui.ui.tools.block import ToolBlock
from tui.ui.tools.output import SPILL

if TYPE_CHECKING:
    from textual.widget import Widget
    from textual.worker import Worker

    from tui.ui.attention import Attention
    from tui.ui.host import AppHost


class BlockActions:
    """Acts on the tool panel's blocks.

    Args:
        host: The app (its tool panel, screens and workers).
        attention: Copies a block's command or output to the clipboard.
    """

    def __init__(self, host: AppHost, attention: Attention) -> None:
        self.host = host
        self.attention = attention

    def target(self, focused: Widget | None) -> ToolBlock | None:
        """The focused block, else the latest one."""
        if isinstance(focused, ToolBlock):
            return focused
        return self.host.tools.latest()

    def toggle(self, focused: Widget | None) -> None:
        block = self.target(focused)
        if block is not None:
            block.expanded = not block.expanded
            block.scroll_visible()

    def open_output(self, focused: Widget | None) -> None:
        block = self.target(focused)
        if block is not None:
            self.open_pager(block.state.call_id)

    async def act(self, call_id: str, action: str) -> None:
        """A block's own button: copy its command or output, or open its output."""
        block = self.host.tools.blocks.get(call_id)
        if action.startswith("copy_") and block is not None:
            await self.attention.copy_block(block, action)
        else:
            self.open_pager(call_id)

    def open_pager(self, call_id: str) -> Worker[None]:
        return self.host.run_worker(
            partial(self._open_pager, call_id),
            name="open_pager",
            group="pager",
            exclusive=True,
            exit_on_error=False,
            description="open the pager",
        )

    async def _open_pager(self, call_id: str) -> None:
        block = self.host.tools.blocks.get(call_id)
        if block is None:
            return
        if block.state.output.spilling:
            await asyncio.to_thread(SPILL.flush)
        text, path, description = block.output_source()
        state = block.state
        title = f"{state.tool_name} · {state.command or dumps_or(state.arguments)[:200]}"
        from tui.ui.tools.pager import OutputPager

        await self.host.push_screen(OutputPager(title, text, path, description))
