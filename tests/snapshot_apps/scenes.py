"""Deterministic scenes of the app, for snapshot tests and the README screenshots.

Each scene is an ``AgentApp`` on a real session (real bus, policy, grants) with a frozen
clock, fed hand-written bus events with fixed timestamps — the same events the loop and the
backends publish — so every frame is the same on every run. No model, tmux or network runs.

    python -m tests.snapshot_apps.scenes working     # look at one scene in your terminal
"""

from __future__ import annotations

import dataclasses
import json
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from textual.pilot import Pilot

from tests.fake_tmux_pane import FakeTmuxPane
from tests.snapshot_apps import diff_scenes
from tests.snapshot_apps.truth_scenes import TRUTH_SCENES, truth_scene
from tests.waiting import until
from tui.config import load_settings
from tui.events import (
    AgentNotice,
    ApprovalRequested,
    AssistantMessage,
    AssistantTextDelta,
    Event,
    PaneSnapshot,
    RiskSegmentView,
    ScheduledJobFinished,
    TodoItem,
    TodoListUpdated,
    ToolCallCompleted,
    ToolCallRequested,
    ToolCallStarted,
    ToolOutputChunk,
    TurnEnded,
    TurnStarted,
    Usage,
    UserMessage,
)
from tui.security.confinement import SandboxFacts
from tui.security.rules import Rule
from tui.session import AgentSession
from tui.ui.app import AgentApp
from tui.ui.tools.block import ToolBlock
from tui.wiring import build_session

SANDBOXED = "sandbox: workspace, no network"
"""Where the demo's approved commands run (a host with its own bubblewrap)."""

NOW = 1_790_000_000.0
"""The frozen wall clock of every scene (seconds)."""
NOW_MS = int(NOW * 1000)
SIZE = (120, 40)
ESC = "\x1b"


def inner(app: AgentApp) -> AgentSession:
    """The app's session as the object it is, for a scene that sets up its parts."""
    session = app.session
    assert isinstance(session, AgentSession)
    return session


def workspace() -> Path:
    path = Path(tempfile.gettempdir()) / "agent-tui-demo" / "webapp"
    path.mkdir(parents=True, exist_ok=True)
    return path


class DemoTmux(FakeTmuxPane):
    """Looks tmux-capable to the UI (a remote pane, say); nothing runs behind it."""

    def __init__(self, actor: str = "ssh:staging-1/tmux:%3") -> None:
        super().__init__(workspace(), actor)


def make_session(*, provider: bool = True, backend: Any = None) -> AgentSession:
    from tui.agent.providers.openai import OpenAIProvider

    ws = workspace()
    loaded = load_settings(
        ws, overrides={"provider": {"name": "openai", "model": "gpt-4.1"}}, env={}
    )
    model = OpenAIProvider("gpt-4.1", api_key="demo", base_url="http://127.0.0.1:9/v1")
    session = build_session(ws, loaded, backend=backend, provider=model)
    # The demo host has its own bubblewrap (what the app says of such a host); no real
    # sandbox is started for a picture.
    session._policy.sandbox = SandboxFacts(active=True, network=False)
    if not provider:
        # The banner names the config file: the same path in every run of the picture.
        shown = Path("/home/me/.config/agent-tui/config.toml")
        session._loaded = dataclasses.replace(session._loaded, user_config_path=shown)
        session._provider = None
        session._loop = None
        session._provider_error = (
            "OPENAI_API_KEY is not set. Export it, or set OPENAI_BASE_URL to a server that "
            "needs no key."
        )
    return session


class SceneClock:
    """A monotonic clock that moves only when a scene moves it."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def make_app(*, provider: bool = True, backend: Any = None) -> AgentApp:
    return AgentApp(
        make_session(provider=provider, backend=backend),
        clock=lambda: NOW,
        monotonic=SceneClock(),
        cursor_blink=False,
    )


async def open_gate(pilot: Pilot[int], asked: bool = True) -> None:
    """Let the approval modal, just asked for, pass its wait for answers (a second on the
    scene's clock; without ``asked``, only the second passes).

    The wait counts from the question's first frame, which a loaded machine may draw late
    (after the modal is pushed, after it is mounted): the clock moves only once it is on
    screen, or the first frame would start the wait at the moved time."""
    from tui.ui.approval.modal import ApprovalScreen

    app: AgentApp = pilot.app  # type: ignore[assignment]
    clock = app.monotonic
    assert isinstance(clock, SceneClock)

    def shown() -> ApprovalScreen | None:
        screen = app.screen
        if isinstance(screen, ApprovalScreen) and screen.gate.opened is not None:
            return screen
        return None

    screen = await until(shown, "the question on screen", nap=pilot.pause) if asked else None
    clock.now += 1.0
    if screen is not None:
        screen.refresh_gate()
    await pilot.pause()


# -- event helpers ---------------------------------------------------------------------------


def at(seconds_ago: float) -> int:
    return NOW_MS - int(seconds_ago * 1000)


def shell_call(
    call_id: str,
    command: str,
    output: list[tuple[str, str]],
    *,
    ago: float,
    actor: str = "ssh:staging-1/tmux:%3",
    risk: str = "low",
    exit_code: int | None = 0,
    duration_ms: float = 40.0,
    loop_id: str = "main",
    tool: str = "run_shell",
    arguments: dict[str, Any] | None = None,
    summary: str = "",
    error_type: str | None = None,
) -> list[Event]:
    args = arguments if arguments is not None else {"command": command}
    events: list[Event] = [
        ToolCallRequested(
            tool_call_id=call_id,
            tool_name=tool,
            arguments=json.dumps(args),
            ts=at(ago),
            loop_id=loop_id,
        ),
        ToolCallStarted(
            tool_call_id=call_id,
            tool_name=tool,
            arguments=args,
            command=command if tool == "run_shell" else None,
            actor=actor,
            risk=risk if tool == "run_shell" else None,
            sandbox=SANDBOXED if tool == "run_shell" else None,
            ts=at(ago),
            loop_id=loop_id,
        ),
    ]
    for stream, text in output:
        events.append(
            ToolOutputChunk(
                tool_call_id=call_id,
                tool_name=tool,
                stream=stream,  # type: ignore[arg-type]
                text=text,
                ts=at(ago),
                loop_id=loop_id,
            )
        )
    if exit_code is not None or error_type is not None:
        events.append(
            ToolCallCompleted(
                tool_call_id=call_id,
                tool_name=tool,
                is_error=bool(exit_code) or error_type is not None,
                duration_ms=duration_ms,
                exit_code=exit_code if tool == "run_shell" else None,
                error_type=error_type,
                summary=summary,
                ts=at(ago - duration_ms / 1000),
                loop_id=loop_id,
            )
        )
    return events


def deltas(text: str, *, ago: float, pieces: int = 4) -> list[Event]:
    size = max(1, len(text) // pieces + 1)
    return [
        AssistantTextDelta(text=text[i : i + size], ts=at(ago)) for i in range(0, len(text), size)
    ]


FIRST_ANSWER = "I'll look at the latest commits and run the API tests on staging first."
DIAGNOSIS = """The health check fails because **`DATABASE_URL`** is no longer set: commit
`a41f9c2` moved it from `.env` to `config/staging.toml`, but the service still reads the
environment.

Plan:

1. read `config/staging.toml` for the new name
2. export it in the unit file
3. rebuild and restart the service
"""

PYTEST_OUTPUT = (
    f"{ESC}[32m....{ESC}[0m{ESC}[31mF{ESC}[0m{ESC}[32m..{ESC}[0m"
    f"                                                  [100%]\n"
    f"{ESC}[31m{ESC}[1m_____________________ test_health ______________________{ESC}[0m\n"
    "    def test_health(client):\n"
    ">       url = os.environ['DATABASE_URL']\n"
    f"{ESC}[31mE       KeyError: 'DATABASE_URL'{ESC}[0m\n"
    f"{ESC}[31mFAILED{ESC}[0m tests/test_api.py::test_health - KeyError: 'DATABASE_URL'\n"
    f"{ESC}[31m1 failed{ESC}[0m, {ESC}[32m6 passed{ESC}[0m in 0.42s\n"
)

BUILD_LINES = [
    "> webapp@3.2.0 build",
    "> vite build --mode staging",
    "",
    f"{ESC}[36mvite v5.4.2{ESC}[0m {ESC}[32mbuilding for staging...{ESC}[0m",
    "transforming (412) src/routes/health.ts",
    f"{ESC}[32m✓{ESC}[0m 1284 modules transformed.",
    "rendering chunks (18)...",
    f"dist/assets/index-4f2a9c1e.js   {ESC}[1m412.31 kB{ESC}[0m │ gzip: 131.02 kB",
]


def working_events() -> list[Event]:
    """A turn well under way: two calls done, a sub-agent, a build streaming."""
    events: list[Event] = [
        Usage(input_tokens=18342, output_tokens=1207, ts=at(30)),
        UserMessage(
            text="The staging deploy fails since this morning. Find out why and fix it.",
            ts=at(30),
        ),
        TurnStarted(turn=1, ts=at(30)),
        *deltas(FIRST_ANSWER, ago=29),
        AssistantMessage(text=FIRST_ANSWER, tool_call_ids=["call_1", "call_2"], ts=at(28)),
    ]
    events += shell_call(
        "call_1",
        "git log --oneline -4",
        [
            (
                "stdout",
                f"{ESC}[33ma41f9c2{ESC}[0m move settings to config/staging.toml\n"
                f"{ESC}[33m9b03e11{ESC}[0m bump vite to 5.4\n"
                f"{ESC}[33m77d2a40{ESC}[0m health endpoint reports the db\n"
                f"{ESC}[33m3c9e8f5{ESC}[0m release 3.1.9\n",
            )
        ],
        ago=27,
        duration_ms=38,
    )
    events += shell_call(
        "call_2",
        "pytest -q tests/test_api.py",
        [("stdout", PYTEST_OUTPUT)],
        ago=26,
        exit_code=1,
        duration_ms=1930,
    )
    events.append(
        TodoListUpdated(
            items=[
                TodoItem(content="Find the failing check", status="completed"),
                TodoItem(
                    content="Fix the staging database URL",
                    status="in_progress",
                    active_form="Fixing the staging database URL",
                ),
                TodoItem(content="Rebuild and redeploy staging"),
            ],
            ts=at(23),
        )
    )
    events += [
        Usage(input_tokens=9120, output_tokens=642, ts=at(22)),
        *deltas(DIAGNOSIS, ago=21),
        AssistantMessage(text=DIAGNOSIS, tool_call_ids=["call_3", "call_5"], ts=at(20)),
    ]
    events += shell_call(
        "call_3",
        "",
        [],
        ago=19,
        tool="agent",
        arguments={"task": "Find every place that reads DATABASE_URL and how it is set"},
        exit_code=None,
    )
    events += shell_call(
        "call_4",
        "",
        [
            (
                "stdout",
                "src/db.ts:12: const url = process.env.DATABASE_URL\n"
                "deploy/webapp.service:9: EnvironmentFile=/srv/app/.env\n",
            )
        ],
        ago=18,
        tool="grep_search",
        arguments={"pattern": "DATABASE_URL", "path": "."},
        loop_id="main.child-1",
        duration_ms=21,
        exit_code=None,
        actor="ssh:staging-1",
    )
    events.append(
        ToolCallCompleted(
            tool_call_id="call_4",
            tool_name="grep_search",
            is_error=False,
            duration_ms=21,
            ts=at(18),
            loop_id="main.child-1",
        )
    )
    events.append(
        ToolCallCompleted(
            tool_call_id="call_3",
            tool_name="agent",
            is_error=False,
            duration_ms=2400,
            child_loop_id="main.child-1",
            ts=at(16.6),
        )
    )
    events += shell_call(
        "call_5",
        "cd /srv/app && npm run build -- --mode staging",
        [("stdout", "\n".join(BUILD_LINES) + "\n"), ("stderr", "(!) chunk size warning\n")],
        ago=4.2,
        risk="medium",
        exit_code=None,
    )
    events.append(Usage(input_tokens=4410, output_tokens=233, ts=at(4)))
    return events


ADAPTERS_ANSWER = """The pet store API answers: 3 pets listed in 41 ms. It is 18:04 in Tokyo.
I scheduled `curl -fsS http://127.0.0.1:8080/v1/pets?limit=1` every hour; each result will show
here while agent-tui is open."""


def local_call(
    call_id: str, tool: str, arguments: dict[str, Any], stdout: str, *, ago: float, ms: float
) -> list[Event]:
    """A finished call of a non-shell tool on this machine, with its output."""
    return shell_call(
        call_id,
        "",
        [("stdout", stdout)],
        ago=ago,
        tool=tool,
        arguments=arguments,
        actor="local",
        duration_ms=ms,
    )


def adapters_events() -> list[Event]:
    """A turn that uses MCP, OpenAPI and cron tools: the tool set beyond the built-ins."""
    ask = "Is the pet store API up, and what time is it in Tokyo? Then check the API hourly."
    note = "The API and the clock both answered; scheduling the check."
    pets = (
        'HTTP 200 OK · application/json\n[\n  {"id": 1, "name": "Rex", "tag": "dog"},\n'
        '  {"id": 2, "name": "Tom", "tag": "cat"},\n  {"id": 3, "name": "Polly"}\n]\n'
    )
    tokyo = (
        '{\n  "timezone": "Asia/Tokyo",\n  "datetime": "2026-11-23T18:04:12+09:00",\n'
        '  "is_dst": false\n}\n'
    )
    check = "curl -fsS http://127.0.0.1:8080/v1/pets?limit=1"
    return [
        Usage(input_tokens=6120, output_tokens=311, ts=at(40)),
        UserMessage(text=ask, ts=at(40)),
        TurnStarted(turn=1, ts=at(40)),
        AssistantMessage(text="", tool_call_ids=["s1"], ts=at(39)),
        *local_call(
            "s1",
            "tool_search",
            {"query": "pets list time zone"},
            "Loaded 2 tool(s); call them from your next step:\n- petstore__listPets\n"
            "- time__get_current_time\n",
            ago=39,
            ms=2,
        ),
        AssistantMessage(text="", tool_call_ids=["p1", "t1"], ts=at(37)),
        *local_call("p1", "petstore__listPets", {"limit": 3}, pets, ago=37, ms=41),
        *local_call(
            "t1", "time__get_current_time", {"timezone": "Asia/Tokyo"}, tokyo, ago=37, ms=3
        ),
        AssistantMessage(text="", tool_call_ids=["c1", "m1"], ts=at(35)),
        *local_call(
            "c1",
            "cron_add",
            {"name": "pets-health", "command": check, "every_seconds": 3600},
            "Scheduled job 7f3a (every 3600 s); next run 19:04 local, 10:04 UTC.\n",
            ago=35,
            ms=6,
        ),
        AgentNotice(message=note, ts=at(35)),
        *local_call(
            "m1", "send_user_message", {"message": note}, "Shown to the person.", ago=35, ms=1
        ),
        *deltas(ADAPTERS_ANSWER, ago=33),
        AssistantMessage(text=ADAPTERS_ANSWER, ts=at(32)),
        TurnEnded(reason="completed", final_text=ADAPTERS_ANSWER, ts=at(32)),
        ScheduledJobFinished(
            job_id="7f3a",
            name="pets-health",
            output='exit code: 0\n[{"id": 1, "name": "Rex"}]',
            next_run=NOW + 3600,
            ts=at(2),
        ),
    ]


def pane_lines() -> list[str]:
    prompt = f"{ESC}[1;32mdeploy@staging-1{ESC}[0m:{ESC}[1;34m/srv/app{ESC}[0m$ "
    return [
        prompt + "git log --oneline -4",
        f"{ESC}[33ma41f9c2{ESC}[0m move settings to config/staging.toml",
        f"{ESC}[33m9b03e11{ESC}[0m bump vite to 5.4",
        prompt + "pytest -q tests/test_api.py",
        f"{ESC}[32m....{ESC}[0m{ESC}[31mF{ESC}[0m{ESC}[32m..{ESC}[0m   [100%]",
        f"{ESC}[31m1 failed{ESC}[0m, {ESC}[32m6 passed{ESC}[0m in 0.42s",
        prompt + "npm run build -- --mode staging",
        *BUILD_LINES,
        f"{ESC}[33m(!) chunk size warning{ESC}[0m",
        "",
    ]


def snapshot_event(lines: list[str] | None = None) -> PaneSnapshot:
    shown = lines if lines is not None else pane_lines()
    return PaneSnapshot(
        pane_id="%3",
        actor="ssh:staging-1/tmux:%3",
        lines=shown,
        cursor_x=0,
        cursor_y=len(shown) - 1,
        width=80,
        height=len(shown),
        sandbox="sandbox: read-only, no network",
        ts=at(1),
    )


LONG_COMMAND = (
    "cd /srv/app && git pull --rebase origin main && "
    "sed -i 's/^EnvironmentFile=.*/EnvironmentFile=\\/srv\\/app\\/config\\/staging.env/' "
    "deploy/webapp.service && sudo cp deploy/webapp.service /etc/systemd/system/ && "
    "rm -rf node_modules/.vite dist && npm ci --no-audit && npm run build -- --mode staging "
    "&& sudo systemctl daemon-reload && sudo systemctl restart webapp.service && "
    "curl -fsS http://127.0.0.1:8080/health | jq .db"
)


def approval_event() -> ApprovalRequested:
    segments = [
        ("cd /srv/app", "low", []),
        ("git pull --rebase origin main", "medium", ["network access", "changes files"]),
        (
            "sed -i 's/^EnvironmentFile=.*/EnvironmentFile=\\/srv\\/app\\/config\\/staging.env/' "
            "deploy/webapp.service",
            "medium",
            ["edits a file in place"],
        ),
        (
            "sudo cp deploy/webapp.service /etc/systemd/system/",
            "high",
            ["sudo: runs as root", "writes outside the workspace (/etc/systemd/system)"],
        ),
        ("rm -rf node_modules/.vite dist", "high", ["recursive delete"]),
        ("npm ci --no-audit", "medium", ["installs packages", "network access"]),
        ("npm run build -- --mode staging", "medium", ["runs project scripts"]),
        ("sudo systemctl daemon-reload", "high", ["sudo: runs as root"]),
        (
            "sudo systemctl restart webapp.service",
            "high",
            ["sudo: runs as root", "restarts a service"],
        ),
        ("curl -fsS http://127.0.0.1:8080/health", "medium", ["network access"]),
        ("jq .db", "low", []),
    ]
    return ApprovalRequested(
        request_id="approval-demo",
        tool_call_id="call_6",
        tool_name="run_shell",
        arguments={"command": LONG_COMMAND},
        command=LONG_COMMAND,
        risk="high",
        segments=[RiskSegmentView(text=t, risk=r, reasons=w) for t, r, w in segments],  # type: ignore[arg-type]
        claimed_risk="medium",
        why="point the unit at the new env file, rebuild, restart and check the health endpoint",
        actor="ssh:staging-1/tmux:%3",
        sandbox=SANDBOXED,
        suggested_pattern="run_shell(cd /srv/app && git pull --rebase origin main && …)",
        ts=at(0.5),
    )


# -- playing a scene -------------------------------------------------------------------------


async def publish(pilot: Pilot[int], app: AgentApp, events: list[Event]) -> None:
    """Publish on the real bus and wait until the UI has applied every event."""
    await app.session_ready.wait()
    adapter = app.link.adapter
    assert adapter is not None
    target = adapter.events + len(events)
    for event in events:
        inner(app)._bus.publish(event)
    for _ in range(400):
        if adapter.events >= target and adapter._consumed.is_set():
            break
        await pilot.pause(0.01)
    await pilot.pause(0.05)
    await pilot.wait_for_scheduled_animations()
    await pilot.pause()


async def settle(pilot: Pilot[int]) -> None:
    await pilot.pause(0.1)
    await pilot.wait_for_scheduled_animations()
    await pilot.pause()


Scene = tuple[Callable[[], AgentApp], Callable[[Pilot[int]], Awaitable[None]]]


def scene(name: str) -> Scene:
    """``(make_app, run_before)`` for one named scene."""
    if name == "idle":

        def make() -> AgentApp:
            return make_app()

        async def play(pilot: Pilot[int]) -> None:
            await settle(pilot)

        return make, play

    if name == "streaming":

        def make() -> AgentApp:
            return make_app()

        async def play(pilot: Pilot[int]) -> None:
            app: AgentApp = pilot.app  # type: ignore[assignment]
            half = DIAGNOSIS[: len(DIAGNOSIS) * 2 // 3]
            await publish(
                pilot,
                app,
                [
                    UserMessage(text="Why does the staging health check fail?", ts=at(5)),
                    TurnStarted(turn=1, ts=at(5)),
                    Usage(input_tokens=2310, output_tokens=88, ts=at(4)),
                    *deltas(half, ago=3, pieces=8),
                ],
            )
            await settle(pilot)

        return make, play

    if name == "running_tool":

        def make() -> AgentApp:
            return make_app(backend=DemoTmux())

        async def play(pilot: Pilot[int]) -> None:
            app: AgentApp = pilot.app  # type: ignore[assignment]
            events: list[Event] = [
                UserMessage(text="Rebuild the frontend for staging.", ts=at(6)),
                TurnStarted(turn=1, ts=at(6)),
                *deltas("Building it now; the output streams on the right.", ago=5),
                AssistantMessage(
                    text="Building it now; the output streams on the right.",
                    tool_call_ids=["call_5"],
                    ts=at(5),
                ),
            ]
            events += shell_call(
                "call_5",
                "cd /srv/app && npm run build -- --mode staging",
                [
                    ("stdout", "\n".join(BUILD_LINES) + "\n"),
                    ("stderr", "(!) chunk size warning\n"),
                ],
                ago=4.2,
                risk="medium",
                exit_code=None,
            )
            events.append(snapshot_event())
            await publish(pilot, app, events)
            await settle(pilot)

        return make, play

    if name in ("working", "approval", "always", "mirror", "takeover"):

        def make() -> AgentApp:
            return make_app(backend=DemoTmux())

        async def play(pilot: Pilot[int]) -> None:
            app: AgentApp = pilot.app  # type: ignore[assignment]
            await publish(pilot, app, [*working_events(), snapshot_event()])
            if name in ("approval", "always"):
                await publish(pilot, app, [approval_event()])
                await open_gate(pilot)
            if name == "always":
                await pilot.press("a")
            elif name == "takeover":
                await pilot.press("ctrl+t")
            elif name == "mirror":
                app.query_one("#pane-mirror").focus()
            await settle(pilot)

        return make, play

    if name in ("pager", "pager_search"):

        def make() -> AgentApp:
            return make_app(backend=DemoTmux())

        async def play(pilot: Pilot[int]) -> None:
            app: AgentApp = pilot.app  # type: ignore[assignment]
            failure = "ERROR  db connection refused: DATABASE_URL is empty"
            log = "".join(
                f"2026-09-21T13:{i // 60 % 60:02d}:{i % 60:02d}Z  worker-{i % 4}  "
                + (failure if i % 97 == 0 else f"INFO   processed job {i}")
                + "\n"
                for i in range(1, 5001)
            )
            events: list[Event] = [
                UserMessage(text="Show me the service log.", ts=at(8)),
                TurnStarted(turn=1, ts=at(8)),
            ]
            events += shell_call(
                "call_7",
                "journalctl -u webapp --since today --no-pager",
                [("stdout", log)],
                ago=6,
                duration_ms=812,
            )
            await publish(pilot, app, events)
            from tui.ui.tools.pager import LinesView, OutputPager

            if name == "pager":
                await pilot.press("ctrl+l")
            else:  # the same text, without the saved file's path (it names a temp dir)
                title = "run_shell · journalctl -u webapp --since today --no-pager"
                app.push_screen(OutputPager(title, log, None, "the whole stream"))

            for _ in range(200):
                if app.screen.query(LinesView) and app.screen.query_one(LinesView).source.done:
                    break
                await pilot.pause(0.02)
            await settle(pilot)
            if name == "pager_search":
                await pilot.press("slash", *"job 29", "enter")
                for _ in range(200):
                    if app.screen.match is not None:  # type: ignore[attr-defined]
                        break
                    await pilot.pause(0.02)
                await pilot.press("n", "n", "n")
                await settle(pilot)

        return make, play

    if name == "grants":

        def make() -> AgentApp:
            app = make_app()
            grants = inner(app)._policy.grants
            for rule, scope in (
                ("run_shell(git status)", "session"),
                ("run_shell(npm run build:*)", "session"),
                ("run_shell(pytest -q:*)", "session"),
                ("edit_file(src/)", "session"),
            ):
                grants.add(Rule.parse(rule), scope)  # type: ignore[arg-type]
            for grant in grants.list():
                grant.created = NOW - 3600
            app.format_time = lambda created: time.strftime(
                "%Y-%m-%d %H:%M UTC", time.gmtime(created)
            )
            return app

        async def play(pilot: Pilot[int]) -> None:
            await pilot.press("ctrl+g")
            await settle(pilot)

        return make, play

    if name == "adapters":

        def make() -> AgentApp:
            return make_app()

        async def play(pilot: Pilot[int]) -> None:
            app: AgentApp = pilot.app  # type: ignore[assignment]
            await publish(pilot, app, adapters_events())
            await settle(pilot)

        return make, play

    if name == "trust":

        def make() -> AgentApp:
            return make_app()

        async def play(pilot: Pilot[int]) -> None:
            from tui.ui.trust.screen import TrustScreen

            app: AgentApp = pilot.app  # type: ignore[assignment]
            app.push_screen(TrustScreen(cloned_repo_trust()))
            await settle(pilot)

        return make, play

    if name in ("diff_approval", "diff_result"):

        def make() -> AgentApp:
            return make_app()

        async def play(pilot: Pilot[int]) -> None:
            app: AgentApp = pilot.app  # type: ignore[assignment]
            made = diff_scenes.approval if name == "diff_approval" else diff_scenes.result
            await publish(pilot, app, made(at))
            await open_gate(pilot, asked=name == "diff_approval")
            if name == "diff_result":
                app.query_one(ToolBlock).focus()
            await settle(pilot)

        return make, play

    if name == "no_provider":

        def make() -> AgentApp:
            return make_app(provider=False)

        async def play(pilot: Pilot[int]) -> None:
            await settle(pilot)

        return make, play

    if name == "completion":
        from tests.snapshot_apps.completion_scene import completion_scene

        return completion_scene(make_app, settle)

    if name in TRUTH_SCENES:
        return truth_scene(name, make_app, publish, open_gate, settle, at)

    raise KeyError(name)


SCENES: tuple[str, ...] = (
    "idle",
    "streaming",
    "running_tool",
    "working",
    "approval",
    "always",
    "mirror",
)
SCENES += ("takeover",)
SCENES += ("grants", "no_provider", "pager", "pager_search", "adapters", "trust")
SCENES += ("completion",)
SCENES += ("diff_approval", "diff_result")
SCENES += TRUTH_SCENES

CLONED_REPO_CONFIG = """\
[approval]
mode = "full-auto"

[security]
allow = ["run_shell(curl:*)"]
deny = ["run_shell(rm -rf:*)"]

[provider]
model = "gpt-4.1"
base_url = "https://llm-proxy.example.net/v1"

[[hooks.pre_tool_use]]
command = "./scripts/check.sh"

[mcp]
trusted_projects = ["."]
"""


def cloned_repo_trust() -> Any:
    """What a freshly cloned repository's files would change (the trust screen's scene)."""
    repo = Path(tempfile.gettempdir()) / "agent-tui-demo" / "cloned-repo"
    repo.mkdir(parents=True, exist_ok=True)
    (repo / ".agent-tui.toml").write_text(CLONED_REPO_CONFIG, encoding="utf-8")
    (repo / ".mcp.json").write_text(
        '{"mcpServers": {"db": {"command": "npx", "args": ["-y", "db-mcp-server"]}}}',
        encoding="utf-8",
    )
    return load_settings(repo, env={}, trust=False).trust


async def _play_live(app: AgentApp, play: Callable[[Pilot[int]], Awaitable[None]]) -> None:
    await play(Pilot(app))


if __name__ == "__main__":
    make, play = scene(sys.argv[1] if len(sys.argv) > 1 else "working")
    demo = make()
    demo.call_later(lambda: demo.run_worker(_play_live(demo, play)))
    demo.run()
