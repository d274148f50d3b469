"""Buddy's tool contracts (0xfe/buddy), exactly: a model trained on Buddy's schemas gets what
it expects.

One test per behaviour, named after it; Buddy's own example calls (the capture example, the
``run_shell`` examples of its tool description, its ``wait`` forms, its denial words) run
verbatim. Everything goes through the real registry and policy, on a real tmux server on a
private socket where the behaviour is a tmux one.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import METADATA_TOOLS, Harness, make_harness
from tests.test_policy import ScriptedApprover
from tests.test_tmux_tools import tmux_backend
from tests.tmux_helpers import kill_server, needs_tmux, new_socket_name, tmux
from tests.waiting import until
from tui.events import ApprovalAnswer
from tui.exec.tmux.backend import TmuxBackend
from tui.security.permissions import ApprovalMode
from tui.tools.builtin.catalog import builtin_tools
from tui.tools.builtin.shell.tools import parse_wait
from tui.tools.unchanged import UNCHANGED

pytestmark = needs_tmux

META: dict[str, Any] = {"risk": "low", "mutation": False, "privesc": False}
"""Buddy's metadata for a harmless call; each test adds its own ``why``."""


@pytest.fixture
def socket_name() -> Iterator[str]:
    name = new_socket_name()
    try:
        yield name
    finally:
        kill_server(name)


@pytest.fixture
async def tmux_harness(socket_name: str, workspace: Path) -> AsyncIterator[Harness]:
    backend = tmux_backend(socket_name, workspace)
    harness = make_harness(workspace, backend=backend)
    await backend.start()
    yield harness
    await backend.close()


async def call(h: Harness, name: str, arguments: dict[str, Any] | str) -> Any:
    """A call sent exactly as written (no metadata added: these are Buddy's own calls)."""
    return await h.call(name, arguments, metadata=False)


def shared_pane(h: Harness) -> str:
    backend = h.backend
    assert isinstance(backend, TmuxBackend) and backend.default_pane
    return backend.default_pane


# -- tmux_capture_pane -----------------------------------------------------------------------


async def test_buddy_capture_example_call_runs_verbatim(tmux_harness: Harness) -> None:
    await call(tmux_harness, "run_shell", {"command": "echo seen-in-history", **META, "why": "x"})
    result = await call(
        tmux_harness,
        "tmux_capture_pane",
        json.loads('{"delay": "2s", "start": "-", "end": "-", "join_wrapped_lines": true}'),
    )
    assert not result.is_error, result.text
    assert "seen-in-history" in result.text
    assert result.text.startswith(f"pane {shared_pane(tmux_harness)} ")


async def test_buddy_capture_takes_the_seed_field_names_and_the_old_ones(
    tmux_harness: Harness,
) -> None:
    long_line = "w" * 300  # wider than the pane: the terminal wraps it
    await call(
        tmux_harness,
        "run_shell",
        {"command": f"printf '\\033[31mred\\033[0m\\n'; echo {long_line}", **META, "why": "x"},
    )
    joined = await call(tmux_harness, "tmux_capture_pane", {"why": "look"})
    assert long_line in joined.text  # join_wrapped_lines defaults to true, as in Buddy
    split = await call(tmux_harness, "tmux_capture_pane", {"join_wrapped_lines": False})
    assert long_line not in split.text and "w" * 50 in split.text
    for fields in (
        {"include_escape_sequences": True, "preserve_trailing_spaces": True},
        {"escape_sequences": True},  # today's name, kept as an alias
    ):
        coloured = await call(tmux_harness, "tmux_capture_pane", fields)
        assert not coloured.is_error, coloured.text
        assert "\x1b[31mred" in coloured.text
    for fields in (
        {"include_alternate_screen": True, "escape_non_printable": True},
        {"alternate_screen": True, "join_wrapped": True},
    ):
        result = await call(tmux_harness, "tmux_capture_pane", fields)
        assert not result.is_error, result.text
    schema = tmux_harness.registry.get("tmux_capture_pane").parameters_schema()  # type: ignore[union-attr]
    for name in (
        "join_wrapped_lines",
        "preserve_trailing_spaces",
        "include_escape_sequences",
        "escape_non_printable",
        "include_alternate_screen",
    ):
        assert name in schema["properties"], name
    assert schema["properties"]["join_wrapped_lines"]["default"] is True


async def test_buddy_capture_missing_managed_selector_falls_back_with_notice(
    tmux_harness: Harness,
) -> None:
    made = await call(
        tmux_harness,
        "tmux_create_pane",
        {"name": "worker", **META, "mutation": True, "why": "a pane to lose"},
    )
    assert not made.is_error, made.text
    killed = await call(tmux_harness, "tmux_kill_pane", {"pane": "worker", **META, "why": "done"})
    assert not killed.is_error, killed.text
    await call(
        tmux_harness, "run_shell", {"command": "echo on-the-shared-pane", **META, "why": "x"}
    )
    for selector, label in (
        ({"pane": "worker"}, "(pane=worker)"),
        ({"session": "gone", "pane": "nope"}, "(session=gone, pane=nope)"),
    ):
        result = await call(tmux_harness, "tmux_capture_pane", selector)
        assert not result.is_error, result.text
        assert result.text.startswith(
            f"note: Requested managed tmux target {label} was not found (it was likely killed "
            "or closed). Using the default shared pane instead."
        ), result.text
        assert f"pane {shared_pane(tmux_harness)} " in result.text
        assert "on-the-shared-pane" in result.text
    # Keys are never retargeted: a missing pane is an error there.
    keys = await call(tmux_harness, "tmux_send_keys", {"pane": "worker", "keys": ["q"], **META})
    assert keys.is_error


async def test_buddy_capture_alternate_screen_inactive_falls_back_with_notice(
    tmux_harness: Harness,
) -> None:
    await call(tmux_harness, "run_shell", {"command": "echo main-screen", **META, "why": "x"})
    result = await call(tmux_harness, "tmux_capture_pane", {"include_alternate_screen": True})
    assert not result.is_error, result.text
    assert "alternate screen was not active; captured main pane instead" in result.text
    assert "main-screen" in result.text


async def test_buddy_capture_polling_an_unchanged_pane_is_deduplicated(
    tmux_harness: Harness, socket_name: str
) -> None:
    await call(tmux_harness, "run_shell", {"command": "echo first", **META, "why": "x"})
    pane = shared_pane(tmux_harness)

    async def prompt_back() -> bool:
        """The next prompt is on the screen (it may follow the command's end a moment later,
        and a screen that changes between two polls is rightly not "unchanged")."""
        screen = await tmux(socket_name, "capture-pane", "-p", "-t", pane)
        rows = [row for row in screen.splitlines() if row.strip()]
        return len(rows) >= 2 and rows[-2] == "first"

    await until(prompt_back, "the prompt after the command")
    first = await call(tmux_harness, "tmux_capture_pane", {"why": "poll"})
    assert "first" in first.text
    # Same pane and range (Buddy's key leaves out why and delay): the notice, not the screen.
    again = await call(tmux_harness, "tmux_capture_pane", {"delay": "10ms", "why": "poll again"})
    assert not again.is_error and again.text == UNCHANGED
    assert again.details["unchanged"] is True
    streamed = [e for e in tmux_harness.events if getattr(e, "stream", None) == "stdout"]
    assert "first" in streamed[-1].text  # type: ignore[attr-defined]  # the person sees it all
    # Another range is another look.
    other = await call(tmux_harness, "tmux_capture_pane", {"start": "-", "end": "-"})
    assert "first" in other.text
    # A command in between may change the pane: the next capture is whole again.
    await call(tmux_harness, "run_shell", {"command": "echo second", **META, "why": "x"})
    after = await call(tmux_harness, "tmux_capture_pane", {"why": "poll"})
    assert "second" in after.text and after.text != UNCHANGED


# -- the safety metadata -----------------------------------------------------------------------


async def test_buddy_safety_metadata_is_required_in_the_schemas(tmux_harness: Harness) -> None:
    tools = {tool.name: tool for tool in builtin_tools(tmux_harness.backend)}
    assert set(METADATA_TOOLS) <= set(tools)
    for name in sorted(METADATA_TOOLS):
        for fmt in ("openai", "anthropic"):
            definition = getattr(tools[name], f"{fmt}_definition")()
            schema = (
                definition["function"]["parameters"]
                if fmt == "openai"
                else definition["input_schema"]
            )
            required = set(schema["required"])
            assert {"risk", "mutation", "privesc", "why"} <= required, (name, required)
            assert schema["properties"]["risk"]["enum"] == ["low", "medium", "high"]


async def test_buddy_missing_safety_metadata_is_invalid_arguments_naming_the_field(
    tmux_harness: Harness, workspace: Path, socket_name: str
) -> None:
    complete: dict[str, dict[str, Any]] = {
        "run_shell": {"command": "touch ran"},
        "tmux_send_keys": {"literal_text": "touch ran", "enter": True},
        "tmux_create_session": {"name": "ran"},
        "tmux_kill_session": {"name": "ran"},
        "tmux_create_pane": {"name": "ran"},
        "tmux_kill_pane": {"pane": "ran"},
    }
    meta = {**META, "why": "checking the contract"}
    for name, arguments in complete.items():
        for missing in ("risk", "mutation", "privesc", "why"):
            sent = {**arguments, **{k: v for k, v in meta.items() if k != missing}}
            result = await call(tmux_harness, name, sent)
            assert result.is_error and result.details["error_type"] == "InvalidArguments"
            assert f"{missing}: required argument missing" in result.text, result.text
        blank = await call(tmux_harness, name, {**arguments, **meta, "why": "  "})
        assert blank.is_error and "why:" in blank.text, blank.text
    assert not (workspace / "ran").exists()
    sessions = await tmux(socket_name, "list-sessions", "-F", "#S")
    assert "ran" not in sessions


async def test_buddy_claimed_risk_never_replaces_the_computed_one(workspace: Path) -> None:
    approver = ScriptedApprover(ApprovalAnswer.deny())
    h = make_harness(workspace, mode=ApprovalMode.ASK, approver=approver)
    (workspace / "build").mkdir()
    await call(h, "run_shell", {"command": "rm -rf build", **META, "why": "tidy up"})
    request = approver.requests[0]
    assert request.risk == "high" and request.claimed_risk == "low"
    assert request.why == "tidy up"
    assert (workspace / "build").exists()


# -- run_shell ---------------------------------------------------------------------------------


async def test_buddy_run_shell_examples_run_verbatim(
    tmux_harness: Harness, workspace: Path
) -> None:
    (workspace / "listed.txt").write_text("x")
    listed = await call(
        tmux_harness,
        "run_shell",
        '{"command":"ls -la","risk":"low","mutation":false,"privesc":false,'
        '"why":"List working directory"}',
    )
    assert not listed.is_error, listed.text
    assert listed.value["exit_code"] == 0 and "listed.txt" in listed.value["stdout"]
    started = await call(
        tmux_harness,
        "run_shell",
        '{"command":"npm run build","wait":false,"risk":"low","mutation":false,"privesc":false,'
        '"why":"Start long build and poll with tmux_capture_pane"}',
    )
    assert not started.is_error, started.text
    assert "tmux_capture_pane" in started.text


@pytest.mark.parametrize(
    ("wait", "meaning"),
    [(True, True), (False, False), ("30s", 30.0), ("10m", 600.0), ("1h", 3600.0),
     ("500ms", 0.5), (500, 500.0), ("1d", 86400.0)],
)  # fmt: skip
def test_buddy_run_shell_wait_forms(wait: object, meaning: object) -> None:
    assert parse_wait(wait) == meaning


async def test_buddy_run_shell_wait_duration_that_runs_out_is_an_error_result(
    tmux_harness: Harness, workspace: Path
) -> None:
    # Buddy's own test: `sleep 1` with wait "1ms" times out.
    result = await call(
        tmux_harness, "run_shell", {"command": "sleep 1", "wait": "1ms", **META, "why": "x"}
    )
    assert result.is_error and result.details["error_type"] == "ExecutionFailed"
    assert "timed out waiting for command completion after 1ms" in result.text
    assert "still running in its pane (not killed)" in result.text
    # Without tmux the command is killed instead (nothing is left to look at).
    local = make_harness(workspace)
    killed = await call(
        local, "run_shell", {"command": "sleep 5; touch late", "wait": "300ms", **META, "why": "x"}
    )
    assert killed.is_error and "timed out waiting for command completion after 300ms" in killed.text
    assert "process group was killed" in killed.text


async def test_buddy_run_shell_finished_command_has_the_seed_result_shape(workspace: Path) -> None:
    h = make_harness(workspace)
    meta = {**META, "why": "check the shape"}
    hello = await call(h, "run_shell", {"command": "echo hello", **meta})
    assert hello.model_result() == {"exit_code": 0, "stdout": "hello\n", "stderr": ""}
    failing = await call(h, "run_shell", {"command": "echo err >&2; exit 42", **meta})
    assert not failing.is_error  # a non-zero exit is a result, as in Buddy
    assert failing.model_result() == {"exit_code": 42, "stdout": "", "stderr": "err\n"}
    assert failing.text.startswith("exit code: 42")  # the person's form is unchanged


async def test_buddy_denial_text_reaches_the_model_verbatim(workspace: Path) -> None:
    h = make_harness(
        workspace, mode=ApprovalMode.ASK, approver=ScriptedApprover(ApprovalAnswer.deny())
    )
    result = await call(h, "run_shell", {"command": "touch denied", **META, "why": "x"})
    assert result.is_error
    assert result.model_result().endswith("Command execution denied by user.")
    assert not (workspace / "denied").exists()


# -- the shared shell's guardrails -------------------------------------------------------------


@pytest.mark.parametrize("command", ["setopt errexit", "setopt ERR_EXIT", "set -e"])
async def test_buddy_shared_shell_refuses_errexit_in_every_spelling(
    tmux_harness: Harness, command: str
) -> None:
    result = await call(tmux_harness, "run_shell", {"command": command, **META, "why": "x"})
    assert result.is_error and result.details["error_type"] == "PermissionDenied"
    assert "would make the next failing command close the shared shell" in result.text
    typed = await call(
        tmux_harness, "tmux_send_keys", {"literal_text": command, "enter": True, **META, "why": "x"}
    )
    assert typed.is_error and "close the shared shell" in typed.text
    alive = await call(
        tmux_harness, "run_shell", {"command": "false; echo alive", **META, "why": "x"}
    )
    assert "alive" in alive.text


@pytest.mark.parametrize("command", ["tmux new-window", "tmux split-window -h", "tmux splitw"])
async def test_buddy_shared_shell_refuses_raw_new_window_and_split_window(
    tmux_harness: Harness, socket_name: str, command: str
) -> None:
    before = await tmux(socket_name, "list-panes", "-a", "-F", "#D")
    result = await call(tmux_harness, "run_shell", {"command": command, **META, "why": "x"})
    assert result.is_error and result.details["error_type"] == "PermissionDenied"
    assert "Use the managed-pane tools instead: tmux_create_pane" in result.text
    after = await tmux(socket_name, "list-panes", "-a", "-F", "#D")
    assert after == before


async def test_buddy_examples_in_the_tool_descriptions_are_valid_calls(
    tmux_harness: Harness,
) -> None:
    """What a model copies must pass the schema it is copied into (metadata included)."""
    decoder = json.JSONDecoder()
    for name in sorted(METADATA_TOOLS | {"tmux_capture_pane"}):
        tool = tmux_harness.registry.get(name)
        assert tool is not None
        examples = " ".join(tool.description.split("Examples:", 1)[1].split())
        found = 0
        for start, char in enumerate(examples):
            if char != "{" or (start and examples[start - 1] not in " :;"):
                continue
            example, _ = decoder.raw_decode(examples, start)
            tmux_harness.registry.parse_arguments(tool, json.dumps(example))
            found += 1
        assert found >= 2, name
