"""The app's view of a session is ``SessionAPI``, and nothing more.

What holds it: the protocol hands out no part (only plain values, the records of
``tui.views`` and its own); every name the UI reads off a session is one of the protocol's;
``AgentSession`` keeps its parts private; the model has one writer, so a ``/model`` choice
outlives ``/clear``; every session of a run is opened in one place; the flags' choice lists
are the types the settings and the code use.
"""

from __future__ import annotations

import ast
import types
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any, get_args

import pytest

import tui.ui
from tests.scripted_server import ScriptedServer
from tests.test_ui_app import make_session, send, turn_done, until
from tui import session_api
from tui.choices import OutputFormat, ProviderName
from tui.cli_args import build_parser
from tui.config.sections.provider import ProviderSettings
from tui.security.permissions import ApprovalMode
from tui.session import AgentSession
from tui.session_api import SessionAPI
from tui.ui.app import AgentApp
from tui.wiring import build_session

REPO = Path(__file__).resolve().parents[1]
PLAIN = {str, int, float, bool, bytes, type(None), Path, list, tuple, dict, object}
"""What a question may answer besides the records of ``tui.views``, ``tui.events``,
``tui.bus`` and ``tui.session_api``: no part of the session is any of these."""
RECORD_MODULES = ("tui.views", "tui.events", "tui.bus", "tui.session_api")


def members() -> dict[str, object]:
    return {
        name: value
        for name, value in vars(SessionAPI).items()
        if not name.startswith("_") and (callable(value) or isinstance(value, property))
    }


def hints(function: Any) -> dict[str, Any]:
    import tui.bus
    import tui.events
    import tui.views

    names = {**vars(tui.views), **vars(tui.events), **vars(tui.bus), **vars(session_api)}
    return typing.get_type_hints(function, globalns=names)


def flatten(annotation: Any) -> Iterator[Any]:
    origin = typing.get_origin(annotation)
    if origin is None:
        yield annotation
        return
    if origin not in (typing.Union, types.UnionType):
        yield origin
    for argument in typing.get_args(annotation):
        yield from flatten(argument)


def test_the_protocol_is_methods_only_and_hands_out_no_part() -> None:
    assert not getattr(SessionAPI, "__annotations__", {}), "a data attribute: a part"
    found = members()
    assert {"submit", "has_pane", "send_to_pane", "model_choices", "mcp_servers"} <= set(found)
    for name, member in found.items():
        function = member.fget if isinstance(member, property) else member
        answer = hints(function).get("return")
        for kind in flatten(answer):
            plain = kind in PLAIN or getattr(kind, "__module__", "") in RECORD_MODULES
            assert plain, f"SessionAPI.{name} answers {kind!r}: a part of the session"


def test_agent_session_offers_all_of_it_and_keeps_its_parts_private(workspace: Path) -> None:
    session = make_session(workspace, None)
    for name in members():
        assert hasattr(type(session), name), f"AgentSession lacks {name}"
    public = [name for name in vars(session) if not name.startswith("_")]
    assert public == [], f"parts in the open: {public}"


def session_reads(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """``X.session.NAME`` and ``session.NAME``: every name read off a session."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute):
            continue
        owner = node.value
        named = isinstance(owner, ast.Name) and owner.id in ("session", "old", "new")
        held = isinstance(owner, ast.Attribute) and owner.attr in ("session", "_session")
        if named or held:
            yield node.lineno, node.attr


def test_the_ui_asks_a_session_only_what_the_protocol_offers() -> None:
    allowed = set(members())
    package = Path(tui.ui.__file__).parent
    strays = []
    for path in sorted(package.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for line, name in session_reads(tree):
            if name not in allowed:
                strays.append(f"{path.relative_to(REPO)}:{line} .{name}")
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and getattr(node.func, "id", "") == "getattr"):
                continue
            if "session" in ast.unparse(node.args[0]):
                strays.append(f"{path.relative_to(REPO)}:{node.lineno} getattr on a session")
    assert strays == []


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as running:
        yield running


async def test_a_model_choice_outlives_clear_as_a_config_change_does(
    workspace: Path, server: ScriptedServer
) -> None:
    server.add({"text": "after the clear"})
    session = make_session(workspace, server)
    live = session._live
    assert live is not None
    live.set("provider.model", "from-config")  # the config tool's way
    assert session.model == "from-config"

    def factory(resume: str | None) -> AgentSession:
        return build_session(workspace, session._loaded, resume=resume, backend=session._backend)

    app = AgentApp(session, session_factory=factory, cursor_blink=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await send(pilot, app, "/model chosen-model")
        first = app.session.session_id
        await send(pilot, app, "/clear")
        await until(pilot, lambda: app.session.session_id != first, "a new session")
        assert app.session.model == "chosen-model"
        await send(pilot, app, "hello again")
        await turn_done(pilot, app, 1, server)
    assert server.requests[0].body["model"] == "chosen-model"


def calls_in(path: Path, names: set[str]) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
            if name in names:
                found.append(name)
    return found


def test_every_run_opens_its_session_and_chooses_its_target_in_one_place() -> None:
    """The app, ``-p`` and ``agent-tui tool``: one opener builds the session, one function
    reads the target from the flags, one type knows whether it is remote."""
    builders: dict[str, list[str]] = {}
    for path in sorted((REPO / "tui").rglob("*.py")):
        found = calls_in(path, {"build_session", "open_chosen", "open_target", "open_fleet"})
        if found:
            builders[path.relative_to(REPO).as_posix()] = sorted(set(found))
    assert builders == {
        "tui/opening.py": ["build_session", "open_chosen"],
        "tui/fleet_target.py": ["open_fleet", "open_target"],
    }
    chosen = {
        path.relative_to(REPO).as_posix()
        for path in (REPO / "tui").rglob("*.py")
        if calls_in(path, {"TargetChoice"})
    }
    assert chosen == {"tui/targets.py"}
    assert "def is_remote" not in (REPO / "tui" / "cli_args.py").read_text(encoding="utf-8")


def test_the_flags_choice_lists_are_the_shared_types() -> None:
    parser = build_parser()
    choices = {
        option: list(action.choices)
        for action in parser._actions
        for option in action.option_strings
        if action.choices
    }
    assert choices["--provider"] == list(get_args(ProviderName))
    assert choices["--approval-mode"] == [mode.value for mode in ApprovalMode]
    assert choices["--output-format"] == list(get_args(OutputFormat))
    annotation: object = ProviderSettings.model_fields["name"].annotation
    assert annotation == ProviderName
    source = (REPO / "tui" / "cli_args.py").read_text(encoding="utf-8")
    assert '"openai"' not in source and '"full-auto"' not in source and '"json"' not in source
