"""OpenAPI operations as tools, called through the real registry against a real Petstore server."""

from __future__ import annotations

import asyncio
import json
import re
import socket
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Harness, make_harness
from tests.petstore_server import DEFAULT_API_KEY, DEFAULT_TOKEN, HUGE_BYTES, PetstoreServer
from tui.config import OpenApiSpecSettings
from tui.security.permissions import PermissionMode
from tui.security.settings import SecuritySettings
from tui.tools.adapters.openapi.spec import OpenApiSpecError, load_spec
from tui.tools.adapters.openapi.tools import (
    OpenApiToolset,
    build_openapi_tools,
    build_openapi_toolset,
    openapi_tools,
    openapi_toolset,
)
from tui.tools.base import missing_description_sections
from tui.tools.schema_tool import RawParams

FIXTURES = Path(__file__).parent / "fixtures"
PETSTORE = "openapi_petstore_v3.0.yaml"
EXPANDED = "openapi_petstore_expanded_v3.0.yaml"

ECHO_SPEC = """
openapi: 3.0.3
info: {title: Echo, version: "1"}
paths:
  /echo/{name}:
    parameters:
      - {name: name, in: path, required: true, schema: {type: string}}
      - {name: id, in: query, schema: {type: integer}}
    get:
      operationId: echoGet
      parameters:
        - {name: name, in: path, required: true, schema: {type: string}, description: shadowed}
        - {name: id, in: header, schema: {type: integer}}
        - {name: ghost, in: path, required: true, schema: {type: string}}
        - {name: ids, in: query, style: form, explode: false,
           schema: {type: array, items: {type: integer}}}
        - {name: tags, in: query, schema: {type: array, items: {type: string}}}
        - {name: filter, in: query, style: deepObject, explode: true,
           schema: {type: object, properties: {color: {type: string}}}}
        - {name: flag, in: query, schema: {type: boolean}}
        - {name: X-Request-Id, in: header, required: true, schema: {type: string}}
        - {name: Authorization, in: header, schema: {type: string}}
        - {name: session, in: cookie, schema: {type: string}}
        - {name: q, in: query, schema: {type: string, nullable: true, maxLength: 20}}
        - {name: ratio, in: query,
           schema: {type: number, maximum: 1, exclusiveMaximum: true}}
    post:
      requestBody:
        required: true
        content:
          application/json:
            schema: {$ref: '#/components/schemas/Payload'}
      responses: {'200': {description: ok}}
  /echo/form/{name}:
    put:
      operationId: echoForm
      parameters:
        - {name: name, in: path, required: true, schema: {type: string}}
      requestBody:
        content:
          application/x-www-form-urlencoded:
            schema: {type: object, properties: {a: {type: string}, b: {type: integer}}}
components:
  schemas:
    Payload:
      type: object
      required: [name]
      properties:
        id: {type: integer, readOnly: true}
        name: {type: string}
        kind: {type: string, enum: [a, b], nullable: true}
"""

SPEC_31 = """
openapi: 3.1.0
info: {title: Echo 3.1, version: "1"}
paths:
  /echo/v31:
    post:
      operationId: post31
      parameters:
        - {name: mode, in: query, required: true, schema: {const: fast}}
        - {name: note, in: query, schema: {type: [string, "null"]}}
      requestBody:
        required: false
        content:
          application/merge-patch+json:
            schema:
              type: object
              properties:
                level: {type: [integer, "null"], minimum: 0}
      responses: {'200': {description: ok}}
"""

HOSTILE_SPEC = """
openapi: 3.0.0
info: {title: Hostile, version: "1"}
paths:
  /hostile/huge: {get: {operationId: huge, responses: {'200': {description: ok}}}}
  /hostile/hang: {get: {operationId: hang, responses: {'200': {description: ok}}}}
  /hostile/binary: {get: {operationId: binary, responses: {'200': {description: ok}}}}
  /hostile/long: {get: {operationId: long, responses: {'200': {description: ok}}}}
  /hostile/redirect: {get: {operationId: redirect, responses: {'302': {description: moved}}}}
"""

REFS_SPEC = """
openapi: 3.0.1
info: {title: Refs, version: "1"}
paths:
  /echo/good:
    post:
      operationId: good
      requestBody:
        content: {application/json: {schema: {$ref: '#/components/schemas/Node'}}}
      responses: {'200': {description: ok}}
  /echo/mutual:
    post:
      operationId: mutual
      parameters: [{$ref: '#/components/parameters/Trace'}]
      requestBody: {$ref: '#/components/requestBodies/A'}
      responses: {'200': {description: ok}}
  /echo/broken:
    post:
      operationId: broken
      requestBody:
        content: {application/json: {schema: {$ref: '#/components/schemas/Nope'}}}
      responses: {'200': {description: ok}}
  /echo/external:
    get:
      operationId: external
      parameters: [{$ref: 'common.yaml#/components/parameters/Page'}]
      responses: {'200': {description: ok}}
components:
  parameters:
    Trace: {name: X-Trace, in: header, schema: {type: string}}
  requestBodies:
    A:
      required: true
      content: {application/json: {schema: {$ref: '#/components/schemas/A'}}}
  schemas:
    Node:
      type: object
      properties:
        name: {type: string}
        children: {type: array, items: {$ref: '#/components/schemas/Node'}}
    A:
      type: object
      properties: {b: {$ref: '#/components/schemas/B'}, label: {type: string}}
    B:
      type: object
      properties: {a: {$ref: '#/components/schemas/A'}}
"""


# --------------------------------------------------------------------------- fixtures


@pytest.fixture
def petstore() -> Iterator[PetstoreServer]:
    specs = {
        "petstore.yaml": (FIXTURES / PETSTORE).read_bytes(),
        "relative.yaml": (FIXTURES / PETSTORE)
        .read_bytes()
        .replace(b"http://petstore.swagger.io/v1", b"/open"),
    }
    server = PetstoreServer(specs=specs)
    server.start()
    yield server
    server.stop()


def settings(spec: str, base_url: str | None = None, **kwargs: Any) -> OpenApiSpecSettings:
    return OpenApiSpecSettings(spec=spec, base_url=base_url, **kwargs)


async def register(
    harness: Harness,
    spec: str,
    base_url: str | None = None,
    *,
    name: str = "pet",
    env: dict[str, str] | None = None,
    **kwargs: Any,
) -> OpenApiToolset:
    toolset = await build_openapi_toolset(
        name, settings(spec, base_url, **kwargs), base_dir=FIXTURES, env=env or {}
    )
    for tool in toolset.tools:
        harness.registry.register(tool)
    return toolset


def body_json(text: str) -> Any:
    """The JSON body of a result: what follows the status and content-type lines."""
    return json.loads(text.split("\n\n", 1)[1])


# --------------------------------------------------------------------------- building


async def test_petstore_spec_becomes_one_tool_per_operation(harness: Harness) -> None:
    toolset = await register(harness, PETSTORE, "http://127.0.0.1:9/open")
    assert [t.name for t in toolset.tools] == [
        "pet__listPets",
        "pet__createPets",
        "pet__showPetById",
    ]
    assert toolset.skipped == [] and toolset.filtered_out == 0
    tools = {t.name: t for t in toolset.tools}
    limit = tools["pet__listPets"].parameters_schema()["properties"]["limit"]
    assert limit["type"] == "integer" and limit["maximum"] == 100
    show = tools["pet__showPetById"].parameters_schema()
    assert show["required"] == ["petId"] and show["additionalProperties"] is False
    create = tools["pet__createPets"].parameters_schema()
    assert create["required"] == ["body"]
    assert create["properties"]["body"]["required"] == ["id", "name"]
    for tool in toolset.tools:
        assert missing_description_sections(tool.description) == [], tool.name
        assert "/pets" in tool.description
    assert 'Examples: {"petId": "string"}' in tools["pet__showPetById"].description
    definitions = harness.registry.definitions("anthropic")
    assert any(d["name"] == "pet__createPets" for d in definitions)


async def test_access_is_read_only_for_get_and_acting_for_writes(harness: Harness) -> None:
    toolset = await register(harness, EXPANDED, "http://api.test/v2")
    tools = {t.name: t for t in toolset.tools}
    get = tools["pet__find_pet_by_id"].access(RawParams.model_validate({"id": 1}))
    delete = tools["pet__deletePet"].access(RawParams.model_validate({"id": 1}))
    post = tools["pet__addPet"].access(RawParams.model_validate({"body": {"name": "x"}}))
    assert get.permission is PermissionMode.READ_ONLY and not get.is_acting
    assert get.subject == "GET http://api.test/v2/pets/{id}"
    assert delete.permission is PermissionMode.WORKSPACE_WRITE and delete.is_acting
    assert delete.subject == "DELETE http://api.test/v2/pets/{id}"
    assert post.permission is PermissionMode.WORKSPACE_WRITE and post.acting is True


async def test_read_only_mode_refuses_writes_but_runs_reads(
    workspace: Path, petstore: PetstoreServer
) -> None:
    from tui.security.permissions import ApprovalMode

    harness = make_harness(workspace, mode=ApprovalMode.READ_ONLY)
    await register(harness, PETSTORE, f"{petstore.url}/open")
    listed = await harness.call("pet__listPets", {})
    assert not listed.is_error, listed.text
    created = await harness.call("pet__createPets", {"body": {"id": 1, "name": "Rex"}})
    assert created.is_error and "PermissionDenied" in created.text
    assert ("POST", "/open/pets") not in petstore.requests


def test_names_are_sanitised_bounded_and_unique() -> None:
    spec = {
        "openapi": "3.0.0",
        "paths": {
            "/a": {
                "get": {"operationId": "x" * 80},
                "post": {"operationId": "x" * 80},
                "put": {"operationId": "same"},
                "patch": {"operationId": "same"},
            },
            "/b/{id}/c.d": {"delete": {}},
        },
    }
    tools = openapi_tools("my.api", spec, settings("-", "http://h"), env={})
    names = [t.name for t in tools]
    assert len(set(names)) == len(names) == 5
    assert all(len(n) <= 64 and n.replace("_", "").replace("-", "").isalnum() for n in names)
    # operations come in the order get, put, post, delete, patch within a path
    assert names[1::2] == ["my_api__same", "my_api__same_2"]
    assert names[0].startswith("my_api__xxx") and names[2].endswith("_2")
    assert len(names[0]) == len(names[2]) == 64 and names[4] == "my_api__delete_b_id_c_d"


# --------------------------------------------------------------------------- calls


async def test_create_list_show_and_404(harness: Harness, petstore: PetstoreServer) -> None:
    await register(harness, PETSTORE, f"{petstore.url}/open")
    created = await harness.call(
        "pet__createPets", {"body": {"id": 7, "name": "Rex", "tag": "dog"}}
    )
    assert not created.is_error, created.text
    assert created.text.startswith("HTTP 201 Created\nContent-Type: application/json")
    assert created.details["status"] == 201
    await harness.call("pet__createPets", {"body": {"id": 8, "name": "Tom", "tag": "cat"}})

    listed = await harness.call("pet__listPets", {"limit": 1})
    assert not listed.is_error, listed.text
    assert body_json(listed.text) == [{"id": 7, "name": "Rex", "tag": "dog"}]
    assert '[\n  {\n    "id": 7,' in listed.text  # pretty-printed
    assert ("GET", "/open/pets?limit=1") in petstore.requests

    shown = await harness.call("pet__showPetById", {"petId": "8"})
    assert body_json(shown.text) == {"id": 8, "name": "Tom", "tag": "cat"}

    missing = await harness.call("pet__showPetById", {"petId": "a/b c?"})
    assert missing.is_error and missing.details["status"] == 404
    assert "HTTP 404 Not Found" in missing.text and "no pet with id 'a/b c?'" in missing.text
    assert ("GET", "/open/pets/a%2Fb%20c%3F") in petstore.requests


async def test_schema_checks_arguments_before_any_request(
    harness: Harness, petstore: PetstoreServer
) -> None:
    await register(harness, PETSTORE, f"{petstore.url}/open")
    cases: list[tuple[dict[str, Any], str]] = [
        ({"limit": "ten"}, "limit: 'ten' is not of type 'integer'"),
        ({"limit": 500}, "limit: 500 is greater than the maximum of 100"),
        ({"limt": 5}, "Additional properties are not allowed"),
    ]
    for args, fragment in cases:
        result = await harness.call("pet__listPets", args)
        assert result.is_error and "InvalidArguments" in result.text, result.text
        assert fragment in result.text
    bad_body = await harness.call("pet__createPets", {"body": {"name": "x"}})
    assert bad_body.is_error and "'id' is a required property" in bad_body.text
    assert petstore.requests == []


async def test_expanded_spec_find_add_get_delete(
    harness: Harness, petstore: PetstoreServer
) -> None:
    toolset = await register(harness, EXPANDED, f"{petstore.url}/open")
    assert [t.name for t in toolset.tools] == [
        "pet__findPets",
        "pet__addPet",
        "pet__find_pet_by_id",
        "pet__deletePet",
    ]
    for name, tag in [("Rex", "dog"), ("Tom", "cat"), ("Nemo", "fish")]:
        added = await harness.call("pet__addPet", {"body": {"name": name, "tag": tag}})
        assert not added.is_error, added.text
    found = await harness.call("pet__findPets", {"tags": ["cat", "dog"], "limit": 5})
    assert sorted(p["name"] for p in body_json(found.text)) == ["Rex", "Tom"]
    assert ("GET", "/open/pets?tags=cat&tags=dog&limit=5") in petstore.requests

    nemo = await harness.call("pet__find_pet_by_id", {"id": 3})
    assert body_json(nemo.text)["name"] == "Nemo"
    deleted = await harness.call("pet__deletePet", {"id": 3})
    assert not deleted.is_error, deleted.text
    assert deleted.text.startswith("HTTP 204 No Content") and "(empty body)" in deleted.text
    gone = await harness.call("pet__find_pet_by_id", {"id": 3})
    assert gone.is_error and "404" in gone.text
    again = await harness.call("pet__deletePet", {"id": 3})
    assert again.is_error and "no pet with id '3'" in again.text


async def test_parameters_are_serialised_per_their_style(
    harness: Harness, petstore: PetstoreServer
) -> None:
    toolset = await register(harness, ECHO_SPEC, f"{petstore.url}/open", name="echo")
    tools = {t.name: t for t in toolset.tools}
    assert set(tools) == {"echo__echoGet", "echo__post_echo_name", "echo__echoForm"}
    schema = tools["echo__echoGet"].parameters_schema()
    props = schema["properties"]
    # the operation's `name` replaces the path item's; `id` in query and in header are two
    assert props["name"]["description"] == "shadowed (path parameter name)"
    assert props["id"]["type"] == props["header_id"]["type"] == "integer"
    assert "ghost" not in props  # a path parameter the path template does not use
    assert "Authorization" not in props  # the spec says such header parameters are ignored
    assert props["q"]["type"] == ["string", "null"]
    assert props["ratio"] == {
        "type": "number",
        "exclusiveMaximum": 1,
        "description": "(query parameter ratio)",
    }
    assert set(schema["required"]) == {"name", "X-Request-Id"}

    result = await harness.call(
        "echo__echoGet",
        {
            "name": "a/b c",
            "id": 9,
            "header_id": 5,
            "ids": [1, 2, 3],
            "tags": ["x y", "z&"],
            "filter": {"color": "red"},
            "flag": True,
            "X-Request-Id": "req-1",
            "session": "s 1",
            "q": None,
        },
    )
    assert not result.is_error, result.text
    echoed = body_json(result.text)
    assert echoed["raw_path"] == "/echo/a%2Fb%20c"
    assert echoed["query"] == [
        ["id", "9"],
        ["ids", "1,2,3"],
        ["tags", "x y"],
        ["tags", "z&"],
        ["filter[color]", "red"],
        ["flag", "true"],
    ]
    assert echoed["headers"]["x-request-id"] == "req-1" and echoed["headers"]["id"] == "5"
    assert echoed["headers"]["cookie"] == "session=s%201"

    too_long = await harness.call("echo__echoGet", {"name": "n", "X-Request-Id": "r", "ratio": 1})
    assert too_long.is_error and "ratio: 1 is greater than or equal to the maximum" in (
        too_long.text
    )
    bad_header = await harness.call(
        "echo__echoGet", {"name": "n", "X-Request-Id": "a\r\nX-Evil: 1"}
    )
    assert bad_header.is_error and "line breaks" in bad_header.text


async def test_json_and_form_bodies(harness: Harness, petstore: PetstoreServer) -> None:
    toolset = await register(harness, ECHO_SPEC, f"{petstore.url}/open", name="echo")
    post = next(t for t in toolset.tools if t.name == "echo__post_echo_name")
    body_schema = post.parameters_schema()["properties"]["body"]
    assert "id" not in body_schema["properties"]  # readOnly: the server sets it
    assert body_schema["properties"]["kind"]["enum"] == ["a", "b", None]
    sent = {"name": "n", "kind": None}
    result = await harness.call("echo__post_echo_name", {"name": "x", "body": sent})
    echoed = body_json(result.text)
    assert echoed["method"] == "POST" and echoed["body"] == sent
    assert echoed["headers"]["content-type"] == "application/json"
    rejected = await harness.call("echo__post_echo_name", {"name": "x", "body": {"kind": "c"}})
    assert rejected.is_error and "'name' is a required property" in rejected.text

    form = await harness.call("echo__echoForm", {"name": "f", "body": {"a": "x y", "b": 2}})
    echoed = body_json(form.text)
    assert echoed["method"] == "PUT" and echoed["body"] == "a=x+y&b=2"
    assert echoed["headers"]["content-type"] == "application/x-www-form-urlencoded"


async def test_openapi_31_type_lists_and_const(harness: Harness, petstore: PetstoreServer) -> None:
    toolset = await register(harness, SPEC_31, f"{petstore.url}/open", name="v31")
    schema = toolset.tools[0].parameters_schema()
    assert schema["properties"]["mode"]["const"] == "fast"
    assert schema["properties"]["body"]["properties"]["level"]["type"] == ["integer", "null"]
    assert schema["required"] == ["mode"]
    wrong = await harness.call("v31__post31", {"mode": "slow"})
    assert wrong.is_error and "'fast' was expected" in wrong.text
    ok = await harness.call("v31__post31", {"mode": "fast", "note": None, "body": {"level": None}})
    echoed = body_json(ok.text)
    assert echoed["query"] == [["mode", "fast"]] and echoed["body"] == {"level": None}
    assert echoed["headers"]["content-type"] == "application/merge-patch+json"


# --------------------------------------------------------------------------- loading


async def test_spec_from_file_url_and_inline_text_are_the_same(petstore: PetstoreServer) -> None:
    from_file = await load_spec(PETSTORE, base_dir=FIXTURES)
    from_abs = await load_spec(str(FIXTURES / PETSTORE), base_dir=Path("/nonexistent"))
    from_url = await load_spec(f"{petstore.url}/specs/petstore.yaml", base_dir=FIXTURES)
    text = (FIXTURES / PETSTORE).read_text()
    from_text = await load_spec(text, base_dir=FIXTURES)
    from_json = await load_spec(json.dumps(from_file), base_dir=FIXTURES)
    assert from_file == from_abs == from_url == from_text == from_json
    assert from_file["info"]["title"] == "Swagger Petstore"
    assert set(from_file["paths"]) == {"/pets", "/pets/{petId}"}


async def test_relative_server_url_resolves_against_the_spec_url(
    harness: Harness, petstore: PetstoreServer
) -> None:
    await register(harness, f"{petstore.url}/specs/relative.yaml")
    result = await harness.call("pet__listPets", {})
    assert not result.is_error, result.text
    assert result.details["url"] == f"{petstore.url}/open/pets"
    relative = (FIXTURES / PETSTORE).read_text().replace("http://petstore.swagger.io/v1", "/v1")
    with pytest.raises(OpenApiSpecError, match=re.escape("set base_url in [openapi.pet]")):
        await build_openapi_tools("pet", settings(relative), base_dir=FIXTURES, env={})


async def test_server_variables_take_their_defaults(
    harness: Harness, petstore: PetstoreServer
) -> None:
    port = petstore.url.rsplit(":", 1)[1]
    spec = f"""
openapi: 3.0.0
info: {{title: Vars, version: "1"}}
servers:
  - url: "http://127.0.0.1:{{port}}/{{prefix}}"
    variables:
      port: {{default: "{port}"}}
      prefix: {{default: open, enum: [open, bearer]}}
paths:
  /pets: {{get: {{operationId: listPets, responses: {{'200': {{description: ok}}}}}}}}
"""
    await register(harness, spec)
    result = await harness.call("pet__listPets", {})
    assert not result.is_error, result.text
    assert ("GET", "/open/pets") in petstore.requests


@pytest.mark.parametrize(
    ("source", "fragment"),
    [
        ("openapi: [unclosed\n  x: y", "not valid YAML or JSON"),
        ('{"hello": 1, "paths": {}}', "no 'openapi' version field"),
        ('{"swagger": "2.0", "paths": {}}', "Swagger 2.0 (OpenAPI 2)"),
        ("openapi: 4.0.0\npaths: {}", "only OpenAPI 3.0.x and 3.1.x"),
        ("openapi: 3.1.0\ninfo: {title: t, version: '1'}", "has no 'paths'"),
        ("openapi: 3.0.0\npaths: [a, b]", "'paths' of type list"),
        ("just some\nprose text", "expected a mapping"),
        ("openapi: 3.0.0\npaths: &p\n  /x: *p", "refers to itself"),
        ("no_such_spec.yaml", "spec file not found"),
        ("   ", "source is empty"),
    ],
)
async def test_invalid_specs_fail_with_a_clear_message(source: str, fragment: str) -> None:
    with pytest.raises(OpenApiSpecError) as info:
        await load_spec(source, base_dir=FIXTURES)
    assert fragment in info.value.msg


async def test_spec_url_failures(petstore: PetstoreServer) -> None:
    with pytest.raises(OpenApiSpecError, match="HTTP 404"):
        await load_spec(f"{petstore.url}/specs/missing.yaml", base_dir=FIXTURES)
    with pytest.raises(OpenApiSpecError, match="could not fetch"):
        await load_spec(f"http://127.0.0.1:{free_port()}/spec.yaml", base_dir=FIXTURES)


async def test_yaml_alias_bomb_stays_small() -> None:
    lines = ["openapi: 3.0.0", "a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)]
    lines.append("paths: {}")
    start = time.monotonic()
    spec = await load_spec("\n".join(lines), base_dir=FIXTURES)
    assert spec["paths"] == {} and time.monotonic() - start < 2


async def test_broken_and_external_refs_skip_only_their_operation(
    harness: Harness, petstore: PetstoreServer
) -> None:
    toolset = await register(harness, REFS_SPEC, f"{petstore.url}/open", name="refs")
    assert [t.name for t in toolset.tools] == ["refs__good", "refs__mutual"]
    reasons = {s.operation_id: s.reason for s in toolset.skipped}
    assert "broken $ref '#/components/schemas/Nope'" in reasons["broken"]
    assert "external $ref 'common.yaml#/components/parameters/Page'" in reasons["external"]
    assert str(toolset.skipped[0]).startswith("POST /echo/broken (broken): ")
    result = await harness.call("refs__good", {"body": {"name": "root"}})
    assert not result.is_error, result.text


async def test_recursive_schemas_are_cut_not_looped(
    harness: Harness, petstore: PetstoreServer
) -> None:
    toolset = await register(harness, REFS_SPEC, f"{petstore.url}/open", name="refs")
    tools = {t.name: t for t in toolset.tools}
    node = tools["refs__good"].parameters_schema()["properties"]["body"]
    text = json.dumps(node)
    assert len(text) < 3000 and "recursive Node, not expanded further" in text
    mutual = tools["refs__mutual"].parameters_schema()
    assert "recursive A" in json.dumps(mutual) and mutual["required"] == ["body"]
    assert "X-Trace" in mutual["properties"]  # a parameter given as a $ref

    deep: dict[str, Any] = {"name": "leaf"}
    for level in range(6):
        deep = {"name": f"level{level}", "children": [deep]}
    result = await harness.call("refs__good", {"body": deep})
    assert not result.is_error, result.text
    assert body_json(result.text)["body"] == deep
    cycle = await harness.call(
        "refs__mutual", {"X-Trace": "t1", "body": {"b": {"a": {"b": {"a": {"label": 1}}}}}}
    )
    assert not cycle.is_error, cycle.text
    assert body_json(cycle.text)["headers"]["x-trace"] == "t1"


# --------------------------------------------------------------------------- filters


@pytest.mark.parametrize(
    ("spec", "filters", "expected"),
    [
        (PETSTORE, {"tags": ["pets"]}, ["listPets", "createPets", "showPetById"]),
        (PETSTORE, {"tags": ["nope"]}, []),
        (PETSTORE, {"operations": ["showPetById"]}, ["showPetById"]),
        (
            EXPANDED,
            {"operations": ["find pet by id", "deletePet"]},
            ["find_pet_by_id", "deletePet"],
        ),
        (EXPANDED, {"operations": ["find_pet_by_id"]}, ["find_pet_by_id"]),
        (PETSTORE, {"path_prefixes": ["/pets/"]}, ["showPetById"]),
        (PETSTORE, {"tags": ["pets"], "operations": ["listPets"]}, ["listPets"]),
        (PETSTORE, {"tags": ["other"], "operations": ["listPets"]}, []),
        (EXPANDED, {"tags": ["pets"]}, []),  # the expanded spec has no tags at all
    ],
)
async def test_filters_all_must_match(
    spec: str, filters: dict[str, list[str]], expected: list[str]
) -> None:
    loaded = await load_spec(spec, base_dir=FIXTURES)
    toolset = openapi_toolset("pet", loaded, settings(spec, "http://h", **filters), env={})
    assert [t.name.removeprefix("pet__") for t in toolset.tools] == expected
    assert toolset.filtered_out == len(loaded_operations(loaded)) - len(expected)


def loaded_operations(spec: dict[str, Any]) -> list[str]:
    return [m for item in spec["paths"].values() for m in item if m in ("get", "post", "delete")]


async def test_disabled_settings_build_nothing() -> None:
    tools = await build_openapi_tools(
        "pet", settings("no_such_file.yaml", enabled=False), base_dir=FIXTURES, env={}
    )
    assert tools == []


# --------------------------------------------------------------------------- auth


async def test_bearer_token_from_env(harness: Harness, petstore: PetstoreServer) -> None:
    env = {"PETSTORE_TOKEN": DEFAULT_TOKEN}
    await register(
        harness,
        PETSTORE,
        f"{petstore.url}/bearer",
        env=env,
        auth="bearer",
        token_env="PETSTORE_TOKEN",
    )
    ok = await harness.call("pet__listPets", {})
    assert not ok.is_error, ok.text
    env["PETSTORE_TOKEN"] = "wrong-token-123"  # read at call time, not at build time
    denied = await harness.call("pet__listPets", {})
    assert denied.is_error and denied.details["status"] == 401
    assert "invalid bearer token" in denied.text
    assert "wrong-token-123" not in denied.text and "[redacted]" in denied.text
    assert "wrong-token-123" not in json.dumps(denied.details)


async def test_api_key_header(harness: Harness, petstore: PetstoreServer) -> None:
    spec = (
        (FIXTURES / PETSTORE)
        .read_text()
        .replace(
            "      parameters:\n        - name: limit",
            "      parameters:\n        - {name: X-API-Key, in: header, required: true,"
            " schema: {type: string}}\n        - name: limit",
        )
    )
    toolset = await register(
        harness,
        spec,
        f"{petstore.url}/key",
        env={"PET_KEY": DEFAULT_API_KEY},
        auth="api_key",
        token_env="PET_KEY",
    )
    listed = next(t for t in toolset.tools if t.name == "pet__listPets")
    assert "X-API-Key" not in listed.parameters_schema()["properties"]  # we send it ourselves
    created = await harness.call("pet__createPets", {"body": {"id": 3, "name": "Kit"}})
    assert not created.is_error, created.text
    result = await harness.call("pet__listPets", {})
    assert body_json(result.text) == [{"id": 3, "name": "Kit"}]


async def test_wrong_auth_gets_401_without_credentials(
    harness: Harness, petstore: PetstoreServer
) -> None:
    await register(harness, PETSTORE, f"{petstore.url}/key")
    result = await harness.call("pet__listPets", {})
    assert result.is_error and "HTTP 401" in result.text and "got X-API-Key None" in result.text


async def test_missing_token_env_var_is_named_and_nothing_is_sent(
    harness: Harness, petstore: PetstoreServer
) -> None:
    await register(
        harness, PETSTORE, f"{petstore.url}/bearer", auth="bearer", token_env="PETSTORE_NO_TOKEN"
    )
    result = await harness.call("pet__showPetById", {"petId": "1"})
    assert result.is_error and "ExecutionFailed" in result.text
    assert "environment variable PETSTORE_NO_TOKEN, which is not set" in result.text
    assert petstore.requests == []


async def test_auth_without_token_env_is_a_config_error() -> None:
    spec = await load_spec(PETSTORE, base_dir=FIXTURES)
    with pytest.raises(OpenApiSpecError, match="needs token_env"):
        openapi_tools("pet", spec, settings(PETSTORE, "http://h", auth="bearer"), env={})


# --------------------------------------------------------------------------- hostile servers


def free_port() -> int:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port: int = sock.getsockname()[1]
    sock.close()
    return port


async def test_huge_response_is_capped_and_memory_bounded(
    harness: Harness, petstore: PetstoreServer
) -> None:
    await register(harness, HOSTILE_SPEC, f"{petstore.url}/open", max_response_chars=2000)
    tracemalloc.start()
    try:
        start = time.monotonic()
        result = await harness.call("pet__huge", {})
        elapsed = time.monotonic() - start
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert not result.is_error, result.text[:500]
    assert f"of {HUGE_BYTES}; the rest of the response was not read" in result.text
    assert "[response cut at 2000 characters" in result.text
    assert len(result.text) < 3000 and result.details["truncated_chars"] > 0
    assert peak < 16 * 1024 * 1024, f"peak {peak} bytes"
    assert petstore.huge_sent < HUGE_BYTES // 2  # the client stopped reading early
    assert elapsed < 10


async def test_long_body_is_cut_with_the_full_text_saved(
    harness: Harness, petstore: PetstoreServer
) -> None:
    await register(harness, HOSTILE_SPEC, f"{petstore.url}/open", max_response_chars=1000)
    result = await harness.call("pet__long", {})
    assert not result.is_error
    cut = result.details["truncated_chars"]
    assert f"[response cut at 1000 characters: {cut} more not shown" in result.text
    saved = Path(result.details["full_output_path"])
    assert saved.is_file() and '"index": 4999' in saved.read_text()
    assert "download stopped" not in result.text


async def test_binary_body_is_not_dumped(harness: Harness, petstore: PetstoreServer) -> None:
    await register(harness, HOSTILE_SPEC, f"{petstore.url}/open")
    result = await harness.call("pet__binary", {})
    assert not result.is_error and "[binary body: image/png, 10248 bytes, not shown]" in result.text


async def test_redirects_are_reported_not_followed(
    harness: Harness, petstore: PetstoreServer
) -> None:
    await register(
        harness,
        HOSTILE_SPEC,
        f"{petstore.url}/key",
        env={"KEY": DEFAULT_API_KEY},
        auth="api_key",
        token_env="KEY",
    )
    result = await harness.call("pet__redirect", {})
    assert result.is_error and "HTTP 302 Found" in result.text
    assert "Location: /open/pets" in result.text
    assert [path for _, path in petstore.requests] == ["/key/hostile/redirect"]


async def test_hung_server_times_out(harness: Harness, petstore: PetstoreServer) -> None:
    await register(harness, HOSTILE_SPEC, f"{petstore.url}/open", timeout=1)
    start = time.monotonic()
    result = await harness.call("pet__hang", {})
    assert time.monotonic() - start < 4
    assert result.is_error and "timed out after 1s" in result.text


async def test_cancel_stops_a_hung_call_promptly(
    harness: Harness, petstore: PetstoreServer
) -> None:
    await register(harness, HOSTILE_SPEC, f"{petstore.url}/open", timeout=30)
    ctx = harness.context("pet__hang")
    call = asyncio.create_task(harness.call("pet__hang", {}, ctx))
    assert await asyncio.to_thread(petstore.hang_started.wait, 5)
    start = time.monotonic()
    ctx.cancel.set()
    result = await asyncio.wait_for(call, 5)
    assert time.monotonic() - start < 1
    assert result.is_error and "Cancelled" in result.text and "was cancelled" in result.text


async def test_connection_refused_is_clear(harness: Harness) -> None:
    await register(harness, PETSTORE, f"http://127.0.0.1:{free_port()}/open", timeout=5)
    start = time.monotonic()
    result = await harness.call("pet__listPets", {})
    assert time.monotonic() - start < 4
    assert result.is_error and "could not connect" in result.text
    assert "base_url" in result.text


# --------------------------------------------------------------------------- host policy


@pytest.mark.parametrize(
    "security",
    [
        SecuritySettings(blocked_hosts=["127.0.0.1"]),
        SecuritySettings(allowed_hosts=["api.example.com"]),
    ],
)
async def test_host_lists_refuse_before_any_request(
    workspace: Path, petstore: PetstoreServer, security: SecuritySettings
) -> None:
    harness = make_harness(workspace, settings=security)
    await register(harness, PETSTORE, f"{petstore.url}/open")
    result = await harness.call("pet__listPets", {})
    assert result.is_error and "PermissionDenied" in result.text
    assert "127.0.0.1 is" in result.text and "[security]" in result.text
    assert petstore.requests == []


async def test_allowed_host_passes(workspace: Path, petstore: PetstoreServer) -> None:
    harness = make_harness(workspace, settings=SecuritySettings(allowed_hosts=["127.0.0.1"]))
    await register(harness, PETSTORE, f"{petstore.url}/open")
    assert not (await harness.call("pet__listPets", {})).is_error
