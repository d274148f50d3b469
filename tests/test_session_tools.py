"""The tools that talk to the session rather than the world: todo_write, send_user_message,
config, structured_output and tool_search, driven through real sessions against the loopback
model server (what the model was sent is read back from the recorded requests)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

from tests.conftest import Harness
from tests.scripted_server import ScriptedServer
from tests.test_loop import (
    Api,
    answer,
    both_apis,
    call,
    check_request,
    open_session,
    result_text,
    submit,
    tool_names_of,
    tools_step,
)
from tui.events import AgentNotice, TodoListUpdated
from tui.security.permissions import PermissionMode
from tui.tools.base import ToolAccess
from tui.tools.builtin.tool_search import ToolSearchTool
from tui.tools.context import ToolContext
from tui.tools.result import ToolResult
from tui.tools.schema_tool import RawParams, SchemaTool
from tui.tools.structured_output import JsonSchemaError, load_json_schema


@pytest.fixture
def model() -> Iterator[ScriptedServer]:
    """The loopback model server; every request it got is checked for call/result pairing."""
    with ScriptedServer() as running:
        yield running
    for request in running.requests:
        check_request(request)


# ------------------------------------------------------------------ todo_write, send_user_message


async def test_todo_write_publishes_the_whole_list(harness: Harness) -> None:
    todos = [
        {"content": "Reproduce", "status": "completed"},
        {"content": "Fix", "status": "in_progress", "active_form": "Fixing"},
        {"content": "Test"},
    ]
    result = await harness.call("todo_write", {"todos": todos})
    assert not result.is_error, result.text
    assert "1/3 completed" in result.text and "[>] Fix" in result.text
    (event,) = [e for e in harness.events if isinstance(e, TodoListUpdated)]
    assert [(i.content, i.status) for i in event.items] == [
        ("Reproduce", "completed"),
        ("Fix", "in_progress"),
        ("Test", "pending"),
    ]


async def test_todo_write_refuses_two_items_in_progress(harness: Harness) -> None:
    todos = [{"content": "A", "status": "in_progress"}, {"content": "B", "status": "in_progress"}]
    result = await harness.call("todo_write", {"todos": todos})
    assert result.is_error and "exactly one in progress" in result.text
    assert not any(isinstance(e, TodoListUpdated) for e in harness.events)


async def test_send_user_message_is_a_notice_not_a_turn(harness: Harness) -> None:
    result = await harness.call("send_user_message", {"message": "Build takes 10 min"})
    assert not result.is_error
    (notice,) = [e for e in harness.events if isinstance(e, AgentNotice)]
    assert notice.message == "Build takes 10 min" and notice.tool_call_id
    blank = await harness.call("send_user_message", {"message": "   "})
    assert blank.is_error


# ------------------------------------------------------------------ config


@both_apis
async def test_config_tool_reads_sets_and_refuses_guards(
    api: Api, model: ScriptedServer, workspace: Path
) -> None:
    model.add(
        tools_step(
            call("c1", "config", {"action": "get", "key": "agent.strategy"}),
            call("c2", "config", {"action": "set", "key": "agent.strategy", "value": "batched"}),
            call("c3", "config", {"action": "set", "key": "approval.mode", "value": "full-auto"}),
            call("c4", "config", {"action": "get", "key": "provider.api_key"}),
            call("c5", "config", {"action": "set", "key": "tools.web_search", "value": False}),
            call("c6", "config", {"action": "set", "key": "agent.max_turns", "value": "zero"}),
        )
    )
    model.add(answer("done"))
    async with open_session(api, model, workspace) as (session, _):
        outcome = await submit(session, "tune yourself")
        assert session._loop is not None
        assert session._loop.settings.plan.strategy == "batched"
        assert session._loaded.settings.approval.mode.value == "full-auto"  # the test's own mode
        assert "web_search" not in session._registry

    assert outcome.reason == "completed"
    text = {i: result_text(model.requests[1], i) for i in ("c1", "c2", "c3", "c4", "c5", "c6")}
    assert text["c1"] == 'agent.strategy = "parallel"'
    assert "'parallel' -> 'batched'" in text["c2"]
    assert "only the person can" in text["c3"]
    assert "test-key-not-secret" not in text["c4"] and "****" in text["c4"]
    assert "on -> off" in text["c5"]
    assert "must be" in text["c6"]
    # The next request no longer offers the switched-off tool.
    assert "web_search" in tool_names_of(model.requests[0])
    assert "web_search" not in tool_names_of(model.requests[1])


async def test_config_tool_never_reenables_a_tool_the_config_switched_off(
    model: ScriptedServer, workspace: Path
) -> None:
    (workspace / ".agent-tui.toml").write_text("[tools]\nweb_search = false\n")
    model.add(
        tools_step(call("c1", "config", {"action": "set", "key": "tools.web_search", "value": 1}))
    )
    model.add(answer("ok"))
    async with open_session("openai", model, workspace) as (session, _):
        await submit(session, "turn web search on")
        assert "web_search" not in session._registry
    assert "switched off in the config files" in result_text(model.requests[1], "c1")


# ------------------------------------------------------------------ structured_output

SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "temp_c": {"type": "number"}},
    "required": ["city", "temp_c"],
    "additionalProperties": False,
}


@both_apis
async def test_structured_output_validates_then_ends_the_turn(
    api: Api, model: ScriptedServer, workspace: Path, tmp_path: Path
) -> None:
    schema_file = tmp_path / "answer.schema.json"
    schema_file.write_text(json.dumps(SCHEMA))
    model.add(tools_step(call("s1", "structured_output", {"city": "Oslo", "temp_c": "cold"})))
    model.add(tools_step(call("s2", "structured_output", {"city": "Oslo", "temp_c": -3.5})))
    model.add(answer("never requested"))
    agent = {"json_schema": str(schema_file)}
    async with open_session(api, model, workspace, agent=agent) as (session, _):
        outcome = await submit(session, "weather as JSON")

    assert outcome.reason == "completed"
    assert outcome.structured_output == {"city": "Oslo", "temp_c": -3.5}
    assert json.loads(outcome.final_text) == outcome.structured_output
    assert len(model.requests) == 2  # the accepted answer ended the turn
    rejected = result_text(model.requests[1], "s1")
    assert "temp_c" in rejected and "not of type 'number'" in rejected
    assert "structured_output" in tool_names_of(model.requests[0])


async def test_answering_in_text_gets_reminded_then_fails(
    model: ScriptedServer, workspace: Path, tmp_path: Path
) -> None:
    schema_file = tmp_path / "s.json"
    schema_file.write_text(json.dumps({"type": "array", "items": {"type": "integer"}}))
    for _ in range(3):
        model.add(answer("here you go: 1, 2, 3"))
    async with open_session(
        "openai", model, workspace, agent={"json_schema": str(schema_file)}
    ) as (session, _):
        outcome = await submit(session, "numbers")
    assert outcome.reason == "error" and "structured_output" in (outcome.error or "")
    assert len(model.requests) == 3
    last_user = model.requests[2].body["messages"][-1]
    assert "call it now" in json.dumps(last_user)


async def test_non_object_schema_is_wrapped_under_value(
    model: ScriptedServer, workspace: Path, tmp_path: Path
) -> None:
    schema_file = tmp_path / "s.json"
    schema_file.write_text(json.dumps({"type": "array", "items": {"type": "integer"}}))
    model.add(tools_step(call("s1", "structured_output", {"value": [1, 2, 3]})))
    async with open_session(
        "anthropic", model, workspace, agent={"json_schema": str(schema_file)}
    ) as (session, _):
        outcome = await submit(session, "numbers")
    assert outcome.structured_output == [1, 2, 3] and outcome.final_text == "[1, 2, 3]"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "does not exist"),
        ("{not json", "not valid JSON"),
        ("[1, 2]", "must hold a JSON object"),
        ('{"type": "nonsense"}', "not a valid JSON Schema"),
    ],
)
def test_bad_schema_files_are_one_clear_error(
    tmp_path: Path, content: str | None, message: str
) -> None:
    path = tmp_path / "schema.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(JsonSchemaError, match=message):
        load_json_schema(path)


# ------------------------------------------------------------------ tool_search


class ServiceTool(SchemaTool[RawParams]):
    """A run-time tool like the ones MCP and OpenAPI adapters make: it reports its arguments."""

    calls: ClassVar[list[dict[str, Any]]] = []

    def __init__(self, name: str, description: str) -> None:
        super().__init__(
            {"type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]}
        )
        self.name = name  # type: ignore[misc]  # named at run time, as the adapters' tools are
        self.label = name  # type: ignore[misc]
        self.description = description  # type: ignore[misc]

    def access(self, params: RawParams) -> ToolAccess:
        return ToolAccess(permission=PermissionMode.READ_ONLY)

    async def execute(self, params: RawParams, ctx: ToolContext) -> ToolResult:
        return ToolResult(f"{self.name} got {params.arguments()}")


@both_apis
async def test_tool_search_activates_deferred_tools_for_the_next_request(
    api: Api, model: ScriptedServer, workspace: Path
) -> None:
    model.add(tools_step(call("t1", "tool_search", {"query": "create issue"})))
    model.add(tools_step(call("t2", "tracker__create_issue", {"title": "bug"})))
    model.add(answer("filed"))
    async with open_session(api, model, workspace) as (session, _):
        session._registry.register(
            ServiceTool("tracker__create_issue", "Create an issue in the tracker."),
            deferred=True,
        )
        session._registry.register(
            ServiceTool("petstore__list_pets", "List pets in the store."), deferred=True
        )
        session._registry.register(ToolSearchTool(session._registry))
        outcome = await submit(session, "file a bug")

    assert outcome.reason == "completed"
    first, second, third = (tool_names_of(r) for r in model.requests)
    assert "tracker__create_issue" not in first and "petstore__list_pets" not in first
    assert "tool_search" in first
    assert "tracker__create_issue" in second and "petstore__list_pets" not in second
    found = result_text(model.requests[1], "t1")
    assert "tracker__create_issue" in found and '"title"' in found
    assert "got {'title': 'bug'}" in result_text(model.requests[2], "t2")
    assert third == second


async def test_tool_search_select_and_no_match(harness: Harness) -> None:
    harness.registry.register(ServiceTool("svc__alpha", "Alpha thing."), deferred=True)
    harness.registry.register(ServiceTool("svc__beta", "Beta thing."), deferred=True)
    search = ToolSearchTool(harness.registry)
    harness.registry.register(search)
    assert search.exclusive
    assert "2 more tools" in search.description and "svc (2)" in search.description
    before = {d["function"]["name"] for d in harness.registry.definitions()}
    assert "svc__alpha" not in before

    result = await harness.call("tool_search", {"query": "select:svc__beta,run_shell,nope"})
    assert result.details["activated"] == ["svc__beta"]
    assert "Already loaded: run_shell" in result.text and "No such tools: nope" in result.text
    none = await harness.call("tool_search", {"query": "kubernetes"})
    assert "No deferred tool matches" in none.text and "1 remain" in none.text
    after = {d["function"]["name"] for d in harness.registry.definitions()}
    assert "svc__beta" in after and "svc__alpha" not in after


async def test_a_relative_schema_path_is_read_beside_its_config_file(
    model: ScriptedServer, workspace: Path
) -> None:
    (workspace / "schemas").mkdir()
    (workspace / "schemas" / "a.json").write_text(json.dumps(SCHEMA))
    (workspace / "sub").mkdir()
    (workspace / ".agent-tui.toml").write_text('[agent]\njson_schema = "schemas/a.json"\n')
    model.add(tools_step(call("s1", "structured_output", {"city": "Lima", "temp_c": 19})))
    # The session's workspace is a subfolder: the file is found beside the config, not in it.
    # A workspace file's json_schema is read and sent with every request: it waits for trust.
    async with open_session("openai", model, workspace / "sub", trust=True) as (session, _):
        outcome = await submit(session, "weather")
    assert outcome.structured_output == {"city": "Lima", "temp_c": 19}


async def test_closing_the_session_stops_a_repl_even_after_it_was_switched_off(
    model: ScriptedServer, workspace: Path
) -> None:
    model.add(tools_step(call("r1", "python_repl", {"code": "import os\nos.getpid()"})))
    model.add(
        tools_step(call("c1", "config", {"action": "set", "key": "tools.python_repl", "value": 0}))
    )
    model.add(answer("done"))
    async with open_session("openai", model, workspace) as (session, _):
        await submit(session, "pid?")
        assert "python_repl" not in session._registry
    pid = int(result_text(model.requests[1], "r1").rsplit("Out[1]: ", 1)[1].split()[0])
    assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text()
