"""Limits that stop work are errors: the model reads them, the person sees them, and a
headless run that met one does not exit 0 or say ``is_error: false``."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.test_headless_cli import Cli, ServerProcess, cli, headless, model_server, reason_lines
from tests.test_loop import answer, result_text, shell, tools_step

__all__ = ["cli", "model_server"]  # fixtures, used by name


def limited(cli: Cli, per_hour: int) -> None:
    config = Path(cli.env["AGENT_TUI_CONFIG_DIR"])
    config.mkdir(parents=True, exist_ok=True)
    (config / "config.toml").write_text(f"[security]\nmax_actions_per_hour = {per_hour}\n")


def test_the_hourly_action_limit_is_an_error_with_a_failing_exit(
    cli: Cli, model_server: Callable[[list[dict[str, Any]]], ServerProcess]
) -> None:
    limited(cli, 2)
    steps = [tools_step(shell(f"c{i}", f"echo {i} >> acted.log")) for i in range(4)]
    server = model_server([*steps, answer("finished what I could")])
    run = cli.run(*headless(server, "act four times", "--approval-mode", "full-auto"))
    assert run.returncode == 1, run.stderr
    assert (cli.workspace / "acted.log").read_text().split() == ["0", "1"]
    (reason,) = reason_lines(run.stderr)
    assert "2 calls were refused by a limit" in reason
    assert "rate limit reached: 2 acting calls per hour" in reason
    # The person saw each refusal as an error as it happened.
    assert run.stderr.count("error: run_shell refused: rate limit reached") == 2
    # The model read it as an error it can act on.
    last = server.requests()[-1]
    assert result_text(last, "c2").startswith("Error (LimitReached): rate limit reached")

    server = model_server([*steps, answer("finished what I could")])
    (cli.workspace / "acted.log").unlink()
    summary = cli.run(
        *headless(server, "again", "--approval-mode", "full-auto", "--output-format", "json")
    )
    assert summary.returncode == 1
    result = json.loads(summary.stdout)
    assert result["is_error"] is True and result["stop_reason"] == "completed"
    assert len(result["limits"]) == 2 and "refused by a limit" in result["error"]


def test_a_run_within_the_limit_exits_0(
    cli: Cli, model_server: Callable[[list[dict[str, Any]]], ServerProcess]
) -> None:
    limited(cli, 5)
    steps = [tools_step(shell(f"c{i}", "true")) for i in range(3)]
    server = model_server([*steps, answer("done")])
    run = cli.run(
        *headless(server, "act", "--approval-mode", "full-auto", "--output-format", "json")
    )
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout)
    assert result["is_error"] is False and result["limits"] == []


def test_the_tmux_tools_limits_are_limits_too() -> None:
    from tui.errors import LimitReached
    from tui.exec.tmux_pane import LimitReached as SessionLimit
    from tui.tools.builtin.tmux.common import failure

    error = failure(SessionLimit("at most 8 sessions"))
    assert isinstance(error, LimitReached) and "max_sessions" in str(error)
