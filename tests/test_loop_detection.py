"""Loop detection through the whole loop: a scripted model that ping-pongs or repeats itself
reads a note, then a refusal, the person sees notices, and the session stays usable."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests import test_loop
from tests.scripted_server import ScriptedServer
from tests.test_loop import (
    Api,
    answer,
    both_apis,
    call,
    open_session,
    result_text,
    shell,
    submit,
    tools_step,
    wire_results,
)
from tui.events import Notice

server = test_loop.server
"""The fixture: afterwards every request is checked for call/result pairing."""

POLL = "echo ran >> runs.log; echo not yet"


def runs(workspace: Path) -> int:
    log = workspace / "runs.log"
    return len(log.read_text().splitlines()) if log.exists() else 0


def loop_notices(rec: Any) -> list[str]:
    return [n.message for n in rec.of(Notice) if n.message.startswith("loop detected")]


@both_apis
async def test_a_repeating_model_is_told_then_refused_and_the_session_goes_on(
    api: Api, server: ScriptedServer, workspace: Path
) -> None:
    for index in range(4):
        server.add(tools_step(shell(f"poll_{index}", POLL)))
    server.add(answer("I will stop polling."))
    server.add(answer("Still here."))
    agent = {"loop_no_progress_repeats": 3, "loop_ping_pong_cycles": 0}
    async with open_session(api, server, workspace, agent=agent) as (session, rec):
        outcome = await submit(session, "wait for it")
        assert outcome.reason == "completed"
        assert runs(workspace) == 3  # the fourth was never run
        last = server.requests[4]
        assert "loop detected" not in result_text(last, "poll_1")
        assert "returned the same output 3 times" in result_text(last, "poll_2")
        refused = result_text(last, "poll_3")
        assert refused.startswith("Error (LoopDetected)") and "was not run" in refused
        if api == "anthropic":
            assert wire_results(last)["poll_3"]["is_error"] is True
        assert len(loop_notices(rec)) == 2
        assert (await submit(session, "still there?")).final_text == "Still here."


@both_apis
async def test_a_ping_ponging_model_is_told_then_refused(
    api: Api, server: ScriptedServer, workspace: Path
) -> None:
    (workspace / "state.txt").write_text("not ready\n")
    look = {"path": "state.txt"}
    steps = []
    for index in range(3):
        steps += [shell(f"ping_{index}", POLL), call(f"look_{index}", "read_file", look)]
    for step in steps:
        server.add(tools_step(step))
    server.add(answer("Giving up on that."))
    agent = {"loop_ping_pong_cycles": 2, "loop_no_progress_repeats": 0}
    async with open_session(api, server, workspace, agent=agent) as (session, rec):
        outcome = await submit(session, "wait for state")
    assert outcome.reason == "completed"
    last = server.requests[-1]
    assert "loop detected" not in result_text(last, "look_0")
    assert "run_shell and read_file have alternated 2 times" in result_text(last, "look_1")
    assert "LoopDetected" in result_text(last, "ping_2")
    assert runs(workspace) == 2
    assert any("alternated 2 times" in message for message in loop_notices(rec))


@both_apis
async def test_zero_turns_the_detectors_off(
    api: Api, server: ScriptedServer, workspace: Path
) -> None:
    for index in range(5):
        server.add(tools_step(shell(f"poll_{index}", POLL)))
    server.add(answer("done"))
    agent = {"loop_no_progress_repeats": 0, "loop_ping_pong_cycles": 0}
    async with open_session(api, server, workspace, agent=agent) as (session, rec):
        await submit(session, "poll")
    assert runs(workspace) == 5
    assert not loop_notices(rec)
    assert all("loop" not in result_text(server.requests[-1], f"poll_{i}") for i in range(5))


async def test_the_defaults_catch_a_repeat(server: ScriptedServer, workspace: Path) -> None:
    for index in range(6):
        server.add(tools_step(shell(f"poll_{index}", POLL)))
    server.add(answer("done"))
    async with open_session("openai", server, workspace) as (session, rec):
        await submit(session, "poll")
    assert runs(workspace) < 6 and loop_notices(rec)


@both_apis
async def test_a_batch_of_identical_calls_is_one_decision(
    api: Api, server: ScriptedServer, workspace: Path
) -> None:
    """Five runs of a flaky test sent at once, twice (each batch after seeing the last): two
    decisions, no loop. None of the ten runs is refused or noted, with the detector at 3."""
    flaky = "echo ran >> runs.log; echo 'FAILED test_x (flaky)'; exit 1"
    for batch in range(2):
        server.add(tools_step(*(shell(f"b{batch}_{i}", flaky) for i in range(5))))
    server.add(answer("It is flaky."))
    agent = {"loop_no_progress_repeats": 3, "loop_ping_pong_cycles": 2}
    async with open_session(api, server, workspace, agent=agent) as (session, rec):
        outcome = await submit(session, "run the flaky test five times at once")
    assert outcome.reason == "completed"
    assert runs(workspace) == 10
    last = server.requests[-1]
    for batch in range(2):
        for i in range(5):
            text = result_text(last, f"b{batch}_{i}")
            assert "FAILED test_x" in text and "not run" not in text and "loop" not in text
    assert not loop_notices(rec)


@both_apis
async def test_a_batch_of_identical_successes_counts_once(
    api: Api, server: ScriptedServer, workspace: Path
) -> None:
    for batch in range(3):
        server.add(tools_step(*(shell(f"b{batch}_{i}", POLL) for i in range(5))))
    server.add(answer("done"))
    agent = {"loop_no_progress_repeats": 3, "loop_ping_pong_cycles": 0}
    async with open_session(api, server, workspace, agent=agent) as (session, rec):
        await submit(session, "poll five at once")
    last = server.requests[-1]
    assert runs(workspace) == 15  # three decisions: nothing refused
    assert not any("not run" in result_text(last, f"b{b}_{i}") for b in range(3) for i in range(5))
    # The third decision completes the no-progress pattern: its result says so, once.
    noted = [
        i for i in range(5) if "returned the same output 3 times" in result_text(last, f"b2_{i}")
    ]
    assert len(noted) == 1
    assert len(loop_notices(rec)) == 1
