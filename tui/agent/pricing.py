"""What a response cost in US dollars, from a maintained price table.

Prices change every few months and differ for cache reads and writes, so they come from
``genai-prices`` (pydantic's table, the one Logfire and pydantic-ai use), never from numbers
written here. The library takes ~0.3 s to import, so it is loaded on first use, and ``warm``
lets the loop load it in a thread while the first request is under way: start-up and the
event loop never wait for it. A model the table does not know costs ``None`` (shown as
tokens only), never a guess.
"""

from __future__ import annotations

import asyncio
import logging
from decimal import Decimal
from functools import cache
from types import ModuleType

from tui.agent.providers.base import UsageReport
from tui.events import Usage

__all__ = ["add_cost", "cost_usd", "usage_event", "warm", "warm_now"]

log = logging.getLogger(__name__)

_PROVIDER_IDS = {"openai": "openai", "openai-responses": "openai", "anthropic": "anthropic"}
"""Our provider names to the table's; the Responses API bills like Chat Completions."""


@cache
def _library() -> ModuleType | None:
    try:
        import genai_prices
        from genai_prices.data_snapshot import get_snapshot
    except ImportError:  # pragma: no cover - a broken install shows tokens only
        log.warning("genai-prices is not installed: costs are not shown")
        return None
    # The table itself (``genai_prices.data``, most of the import's cost) loads on the first
    # price asked for: load it here too, so that first price does not stall the loop.
    get_snapshot()
    return genai_prices


async def warm() -> None:
    """Import the price table in a thread, so the first ``cost_usd`` does not block."""
    await asyncio.to_thread(_library)


def warm_now() -> None:
    """Import the price table here and now (a warm process, before it serves runs)."""
    _library()


def cost_usd(usage: UsageReport, *, model: str, provider: str) -> float | None:
    """The price of one response, cache reads and writes at their own rates; ``None`` for
    a model (or provider) the table does not know, or a response without tokens."""
    if not (usage.input_tokens or usage.output_tokens):
        return None
    library = _library()
    if library is None:
        return None
    try:
        price = library.calc_price(
            library.Usage(
                input_tokens=usage.input_tokens,
                cache_read_tokens=usage.cache_read_tokens or None,
                cache_write_tokens=usage.cache_write_tokens or None,
                output_tokens=usage.output_tokens,
            ),
            model,
            provider_id=_PROVIDER_IDS.get(provider, provider),
        )
    except (LookupError, ValueError) as error:
        log.debug("no price for %s/%s: %s", provider, model, error)
        return None
    total = price.total_price
    return float(total) if isinstance(total, Decimal | int | float) else None


def add_cost(total: float | None, cost: float | None) -> float | None:
    """A running total that stays ``None`` until some response had a price."""
    if cost is None:
        return total
    return (total or 0.0) + cost


def usage_event(usage: UsageReport, cost: float | None) -> Usage:
    """One response's usage as the bus carries it."""
    return Usage(
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cached_tokens=usage.cache_read_tokens,
        cache_write_tokens=usage.cache_write_tokens,
        reasoning_tokens=usage.reasoning_tokens,
        cost_usd=cost,
    )
