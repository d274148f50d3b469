"""What a long session costs, on screen: the status bar's tokens, cache share, cost and window
share, and the model's thinking shown collapsed in the chat."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.scripted_server import ScriptedServer
from tests.test_ui_app import send, turn_done, until
from tui.config import load_settings
from tui.ui.app import AgentApp
from tui.ui.status.bar import StatusInfo, render_status
from tui.wiring import build_session

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as running:
        yield running


def app_with(workspace: Path, server: ScriptedServer, **provider: Any) -> AgentApp:
    settings = {
        "name": "anthropic",
        "model": "scripted",
        "base_url": server.base_url,
        "api_key": "test-key",
        **provider,
    }
    loaded = load_settings(
        workspace, overrides={"provider": settings, "approval": {"mode": "full-auto"}}, env={}
    )
    return AgentApp(build_session(workspace, loaded), cursor_blink=False)


def test_status_shows_cache_cost_and_window_share_only_when_known() -> None:
    info = StatusInfo(input_tokens=12_000, cached_tokens=8_000, output_tokens=450)
    plain = render_status(info).plain
    assert "12.0k in (8.0k cached) · 450 out" in plain
    assert "$" not in plain and "ctx" not in plain  # no price, no window: tokens only
    info.cost_usd, info.context_tokens, info.context_window = 0.0412, 40_000, 128_000
    plain = render_status(info).plain
    assert "$0.04" in plain and "31% ctx" in plain
    info.cost_usd = 0.0031
    assert "$0.0031" in render_status(info).plain  # early cents are not rounded away
    info.context_tokens, info.context_window = 2_000, 1_000_000
    assert "<1% ctx" in render_status(info).plain


async def test_usage_and_thinking_reach_the_screen(workspace: Path, server: ScriptedServer) -> None:
    server.add(
        {
            "thinking": [{"type": "thinking", "thinking": "Plan: say hi.", "signature": "c2ln"}],
            "text": "hi",
            "usage": {"input_tokens": 5_000, "output_tokens": 40, "cached_tokens": 3_000},
        }
    )
    app = app_with(workspace, server, model="claude-sonnet-4-5", thinking_budget=1024)
    async with app.run_test(size=(160, 40)) as pilot:
        await send(pilot, app, "hello")
        await turn_done(pilot, app, 1, server)
        await until(pilot, lambda: "cached" in app.status.plain, "the usage in the status bar")
        plain = app.status.plain
        assert "5.0k in (3.0k cached) · 40 out" in plain
        assert "$" in plain  # a known model is priced
        assert "2% ctx" in plain  # 5,000 of claude's 200,000, from the loop's context meter
        (box,) = app.chat.query(".thinking")
        assert box.collapsed  # type: ignore[attr-defined]
        assert "thinking" in str(box.title)  # type: ignore[attr-defined]
