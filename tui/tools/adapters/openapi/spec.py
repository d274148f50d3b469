"""Reading an OpenAPI 3.0 / 3.1 description and turning its schemas into plain JSON Schema.

A spec comes from a file, an http(s) URL or the text itself, as YAML or JSON. It is checked to
be OpenAPI 3.0.x or 3.1.x before anything is built from it, so a wrong file fails with one
message naming what is wrong rather than with a tool set that quietly does nothing.

Local ``$ref``s (``#/components/...``) are inlined. Recursive schemas are expanded a bounded
number of times and then left permissive, and every converted schema has a node budget, so a
hostile or merely huge spec cannot make the converter loop or explode. External refs (other
files, URLs) are not fetched: ``RefError`` says so, and the caller skips that one operation.
"""

from __future__ import annotations

import asyncio
import copy
import datetime
import json
import re
import urllib.parse
from pathlib import Path
from typing import Any

import httpx2 as httpx
import yaml  # type: ignore[import-untyped]

from tui.errors import AgentTuiError
from tui.tools.netguard import proxy_for
from tui.tools.tls import tls_context

MAX_SPEC_BYTES = 10 * 1024 * 1024
"""A spec larger than this is refused (the biggest public API descriptions are ~8 MB)."""
MAX_REF_REPEATS = 2
"""How many times one ``$ref`` may appear on the expansion path before it is cut."""
MAX_SCHEMA_DEPTH = 40
MAX_SCHEMA_NODES = 4000
"""Schema objects one operation's tool schema may hold; past it the rest is permissive."""
SUPPORTED_VERSION = re.compile(r"^3\.[01](\.\d+)?([-.].*)?$")

_SUBSCHEMA = {"items", "not", "if", "then", "else", "contains", "propertyNames"}
_SUBSCHEMA_OR_BOOL = {"additionalProperties", "unevaluatedProperties", "unevaluatedItems"}
_SUBSCHEMA_LIST = {"allOf", "anyOf", "oneOf", "prefixItems"}
_SUBSCHEMA_MAP = {"properties", "patternProperties", "dependentSchemas"}
_DROPPED = {
    "discriminator", "xml", "externalDocs", "nullable", "$id", "$schema", "$anchor",
    "$dynamicAnchor", "$dynamicRef", "$comment", "$defs", "definitions", "example",
}  # fmt: skip
"""OpenAPI-only keywords a JSON Schema validator does not know, and keywords that only made
sense where the schema used to live (its own ids and definitions, now inlined)."""


class OpenApiSpecError(AgentTuiError):
    """The OpenAPI description cannot be loaded or used; the message says what is wrong."""

    title = "OpenAPI spec error"


class RefError(Exception):
    """One ``$ref`` cannot be followed; the operation using it is skipped with this reason."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


# --------------------------------------------------------------------------- loading


def is_url(source: str) -> bool:
    text = source.strip()
    return bool(re.match(r"^https?://\S+$", text, re.IGNORECASE))


def _is_inline(source: str) -> bool:
    text = source.lstrip()
    return "\n" in text.strip() or text.startswith(("{", "openapi:", '"openapi"', "swagger:"))


async def load_spec(source: str, *, base_dir: Path, timeout: float = 30) -> dict[str, Any]:
    """The checked spec document from a file path, an http(s) URL or inline YAML/JSON text.

    Args:
        source: ``[openapi.NAME] spec``: a path (relative to ``base_dir``), a URL, or the text.
        base_dir: Where relative paths are looked up (the config file's folder).
        timeout: Seconds to wait for a URL.

    Raises:
        OpenApiSpecError: Unreadable, unparsable, or not an OpenAPI 3.0/3.1 document.
    """
    if not source.strip():
        raise OpenApiSpecError("the OpenAPI spec source is empty; give a path, a URL or the text")
    if is_url(source):
        where = source.strip()
        text = await _fetch(where, timeout)
    elif _is_inline(source):
        where = "the inline spec text"
        text = source
    else:
        path = await asyncio.to_thread(_spec_path, source, base_dir)
        where = str(path)
        text = await asyncio.to_thread(_read_file, path)
    document = await asyncio.to_thread(parse_spec_text, text, where)
    check_document(document, where)
    return document


def _spec_path(source: str, base_dir: Path) -> Path:
    path = Path(source.strip()).expanduser()
    return path if path.is_absolute() else base_dir / path


def _read_file(path: Path) -> str:
    try:
        size = path.stat().st_size
        if size > MAX_SPEC_BYTES:
            raise OpenApiSpecError(
                f"OpenAPI spec {path} is {size} bytes, above the {MAX_SPEC_BYTES} byte limit"
            )
        return path.read_bytes().decode("utf-8-sig", errors="replace")
    except FileNotFoundError:
        raise OpenApiSpecError(f"OpenAPI spec file not found: {path}") from None
    except IsADirectoryError:
        raise OpenApiSpecError(f"OpenAPI spec path is a folder, not a file: {path}") from None
    except OSError as exc:
        raise OpenApiSpecError(f"cannot read OpenAPI spec {path}: {exc.strerror or exc}") from None


async def _fetch(url: str, timeout: float) -> str:
    limits = httpx.Timeout(timeout, connect=min(timeout, 10.0))
    try:
        async with (
            asyncio.timeout(timeout),
            httpx.AsyncClient(
                follow_redirects=True,
                max_redirects=5,
                timeout=limits,
                trust_env=False,  # no .netrc credentials sent along
                verify=await tls_context(),  # the system's CAs
                proxy=proxy_for(httpx.URL(url)),  # the environment's proxy, as curl reads it
            ) as client,
            client.stream(
                "GET", url, headers={"Accept": "application/yaml, application/json"}
            ) as response,
        ):
            if not 200 <= response.status_code < 300:
                raise OpenApiSpecError(
                    f"fetching the OpenAPI spec {url} failed: HTTP {response.status_code} "
                    f"{response.reason_phrase}"
                )
            chunks: list[bytes] = []
            size = 0
            async for chunk in response.aiter_bytes():
                size += len(chunk)
                if size > MAX_SPEC_BYTES:
                    raise OpenApiSpecError(
                        f"the OpenAPI spec at {url} is larger than {MAX_SPEC_BYTES} bytes"
                    )
                chunks.append(chunk)
            return b"".join(chunks).decode(response.encoding or "utf-8", errors="replace")
    except TimeoutError:
        raise OpenApiSpecError(f"timed out after {timeout:g}s fetching the spec {url}") from None
    except httpx.TimeoutException:
        raise OpenApiSpecError(f"timed out after {timeout:g}s fetching the spec {url}") from None
    except httpx.HTTPError as exc:
        raise OpenApiSpecError(
            f"could not fetch the OpenAPI spec {url}: {type(exc).__name__}: {exc}"
        ) from None


def parse_spec_text(text: str, where: str = "the spec") -> dict[str, Any]:
    """YAML or JSON text to a document of plain JSON values (string keys, no dates).

    Raises:
        OpenApiSpecError: Not YAML/JSON, not a mapping, too deeply nested, or self-referencing.
    """
    if len(text) > MAX_SPEC_BYTES:
        raise OpenApiSpecError(f"{where} is longer than {MAX_SPEC_BYTES} characters")
    try:
        data: Any
        if text.lstrip().startswith("{"):
            try:
                data = json.loads(text)
            except json.JSONDecodeError:
                data = yaml.safe_load(text)
        else:
            data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        detail = " ".join(str(exc).split())
        raise OpenApiSpecError(f"{where} is not valid YAML or JSON: {detail[:300]}") from None
    except RecursionError:
        raise OpenApiSpecError(f"{where} is nested too deeply to read") from None
    if not isinstance(data, dict):
        raise OpenApiSpecError(
            f"{where} is not an OpenAPI document: expected a mapping with an 'openapi' field, "
            f"got {type(data).__name__}"
        )
    return _plain(data, where)


def _plain(data: dict[str, Any], where: str) -> dict[str, Any]:
    """JSON-compatible values: YAML may give int keys, dates and shared (aliased) nodes.

    Aliased nodes stay shared (a "billion laughs" document stays small); an alias that
    contains itself is refused.
    """
    done: dict[int, Any] = {}
    active: set[int] = set()

    def walk(node: Any, depth: int) -> Any:
        if depth > 500:
            raise OpenApiSpecError(f"{where} is nested too deeply to use")
        if isinstance(node, dict | list):
            key = id(node)
            if key in done:
                return done[key]
            if key in active:
                raise OpenApiSpecError(f"{where} contains a YAML alias that refers to itself")
            active.add(key)
            out: Any
            if isinstance(node, dict):
                out = {str(k): walk(v, depth + 1) for k, v in node.items()}
            else:
                out = [walk(v, depth + 1) for v in node]
            active.discard(key)
            done[key] = out
            return out
        if isinstance(node, datetime.date | datetime.datetime):
            return node.isoformat()
        if isinstance(node, bytes):
            return node.decode("utf-8", errors="replace")
        if isinstance(node, set):
            return sorted(str(item) for item in node)
        return node

    result: dict[str, Any] = walk(data, 0)
    return result


def check_document(document: dict[str, Any], where: str = "the spec") -> None:
    """Raise OpenApiSpecError unless this is an OpenAPI 3.0.x / 3.1.x document with paths."""
    if "swagger" in document and "openapi" not in document:
        raise OpenApiSpecError(
            f"{where} is Swagger {document.get('swagger')} (OpenAPI 2); only OpenAPI 3.0 and 3.1 "
            "are supported: convert it first (for example with swagger2openapi)"
        )
    version = document.get("openapi")
    if version is None:
        keys = ", ".join(sorted(document)[:8]) or "none"
        raise OpenApiSpecError(
            f"{where} is not an OpenAPI document: it has no 'openapi' version field "
            f"(top-level keys: {keys})"
        )
    if not SUPPORTED_VERSION.match(str(version)):
        raise OpenApiSpecError(
            f"{where} declares openapi {version!s}; only OpenAPI 3.0.x and 3.1.x are supported"
        )
    paths = document.get("paths")
    if paths is None:
        raise OpenApiSpecError(f"{where} has no 'paths': there are no operations to call")
    if not isinstance(paths, dict):
        raise OpenApiSpecError(
            f"{where} has 'paths' of type {type(paths).__name__}; it must be a mapping"
        )


# --------------------------------------------------------------------------- $ref and schemas


class SpecResolver:
    """Follows local ``$ref``s in one document and converts schemas to JSON Schema 2020-12."""

    def __init__(self, document: dict[str, Any]) -> None:
        self.document = document

    def lookup(self, ref: Any) -> Any:
        """The node a ``$ref`` points at.

        Raises:
            RefError: External, malformed or broken reference.
        """
        if not isinstance(ref, str):
            raise RefError(f"$ref must be a string, got {type(ref).__name__}")
        if not ref.startswith("#"):
            raise RefError(f"external $ref {ref!r} is not fetched (only #/... refs are followed)")
        pointer = urllib.parse.unquote(ref[1:])
        if pointer == "":
            return self.document
        if not pointer.startswith("/"):
            raise RefError(f"$ref {ref!r} is not a JSON pointer")
        node: Any = self.document
        for raw in pointer[1:].split("/"):
            token = raw.replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and token in node:
                node = node[token]
            elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
                node = node[int(token)]
            else:
                raise RefError(f"broken $ref {ref!r}: nothing at that location in the spec")
        return node

    def deref(self, node: Any) -> Any:
        """A parameter, request body or path item with its ``$ref`` chain followed.

        Keys beside a ``$ref`` (a local ``description``) win over the target's.
        """
        seen: set[str] = set()
        while isinstance(node, dict) and "$ref" in node:
            ref = node["$ref"]
            if isinstance(ref, str) and ref in seen:
                raise RefError(f"$ref {ref!r} refers to itself")
            seen.add(str(ref))
            target = self.lookup(ref)
            siblings = {key: value for key, value in node.items() if key != "$ref"}
            node = {**target, **siblings} if isinstance(target, dict) and siblings else target
        return node

    def schema(self, schema: Any, *, request: bool = True) -> Any:
        """``schema`` as self-contained JSON Schema 2020-12.

        3.0's ``nullable: true`` becomes a type list, boolean ``exclusiveMaximum`` becomes the
        2020-12 number form, ``readOnly`` properties leave request schemas. 3.1 keywords (type
        lists, ``const``) pass through.

        Raises:
            RefError: A ``$ref`` inside is external or broken.
        """
        return _SchemaConverter(self, request=request).convert(schema, (), 0)


class _SchemaConverter:
    def __init__(self, resolver: SpecResolver, *, request: bool) -> None:
        self.resolver = resolver
        self.request = request
        self.nodes = 0

    def permissive(self, why: str) -> dict[str, Any]:
        return {"description": f"({why}; any JSON value is accepted here)"}

    def convert(self, schema: Any, stack: tuple[str, ...], depth: int) -> Any:
        if isinstance(schema, bool):
            return schema
        if not isinstance(schema, dict):
            return {}
        self.nodes += 1
        if self.nodes > MAX_SCHEMA_NODES:
            return self.permissive("schema too large to show in full")
        if depth > MAX_SCHEMA_DEPTH:
            return self.permissive("schema nested too deeply to show")
        if "$ref" in schema:
            ref = schema["$ref"]
            target = self.resolver.lookup(ref)
            if stack.count(ref) >= MAX_REF_REPEATS:
                name = str(ref).rsplit("/", 1)[-1]
                return self.permissive(f"recursive {name}, not expanded further")
            siblings = {key: value for key, value in schema.items() if key != "$ref"}
            merged = {**target, **siblings} if isinstance(target, dict) else target
            return self.convert(merged, (*stack, ref), depth + 1)
        out: dict[str, Any] = {}
        for key, value in schema.items():
            if key in _DROPPED or key.startswith("x-"):
                continue
            if key in _SUBSCHEMA or (key in _SUBSCHEMA_OR_BOOL and isinstance(value, dict)):
                out[key] = self.convert(value, stack, depth + 1)
            elif key in _SUBSCHEMA_LIST and isinstance(value, list):
                out[key] = [self.convert(item, stack, depth + 1) for item in value]
            elif key in _SUBSCHEMA_MAP and isinstance(value, dict):
                out[key] = {
                    str(name): self.convert(sub, stack, depth + 1) for name, sub in value.items()
                }
            else:
                out[key] = copy.deepcopy(value)
        if "example" in schema and "examples" not in out:
            out["examples"] = [copy.deepcopy(schema["example"])]
        _exclusive_bounds(out)
        if self.request:
            _drop_read_only(out)
        if schema.get("nullable") is True:
            out = _nullable(out)
        return out


def _exclusive_bounds(out: dict[str, Any]) -> None:
    """3.0 says ``maximum: 5, exclusiveMaximum: true``; 2020-12 says ``exclusiveMaximum: 5``."""
    for flag, bound in (("exclusiveMaximum", "maximum"), ("exclusiveMinimum", "minimum")):
        value = out.get(flag)
        if isinstance(value, bool):
            del out[flag]
            if value and bound in out:
                out[flag] = out.pop(bound)


def _drop_read_only(out: dict[str, Any]) -> None:
    """A server sets readOnly properties itself; asking the model for them only confuses it."""
    properties = out.get("properties")
    if not isinstance(properties, dict):
        return
    gone = [
        name
        for name, sub in properties.items()
        if isinstance(sub, dict) and sub.get("readOnly") is True
    ]
    for name in gone:
        del properties[name]
    if gone and isinstance(out.get("required"), list):
        out["required"] = [name for name in out["required"] if name not in gone]
        if not out["required"]:
            del out["required"]


def _nullable(out: dict[str, Any]) -> dict[str, Any]:
    kind = out.get("type")
    if kind is not None:
        kinds = list(kind) if isinstance(kind, list) else [kind]
        if "null" not in kinds:
            kinds.append("null")
        out["type"] = kinds
        if isinstance(out.get("enum"), list) and None not in out["enum"]:
            out["enum"] = [*out["enum"], None]
        return out
    if isinstance(out.get("enum"), list):
        if None not in out["enum"]:
            out["enum"] = [*out["enum"], None]
        return out
    return {"anyOf": [out, {"type": "null"}]}
