"""The HTTP request one call makes: the model's arguments placed and serialised by the spec.

Path values are percent-encoded one by one (a ``/`` in an id must not become a path
separator); query, header and cookie values follow the parameter's ``style`` and ``explode``;
the body is encoded as its media type says. Nothing here touches the network.
"""

from __future__ import annotations

import json
import urllib.parse
from dataclasses import dataclass
from typing import Any

from tui.errors import InvalidArguments
from tui.tools.adapters.openapi.arguments import OperationArguments, ParamBinding
from tui.tools.netguard import USER_AGENT


@dataclass
class HttpRequest:
    method: str
    url: str
    headers: dict[str, str]
    content: bytes | None


class RequestBuilder:
    """Builds the request of one operation from the model's arguments."""

    def __init__(
        self, *, tool_name: str, method: str, base_url: str, path: str, args: OperationArguments
    ) -> None:
        self.tool_name = tool_name
        self.method = method
        self.base_url = base_url
        self.path = path
        self.args = args

    def build(self, arguments: dict[str, Any]) -> HttpRequest:
        """The request for ``arguments``.

        Raises:
            InvalidArguments: An unknown argument, a missing path parameter, a header value
                with a line break, a form body that is not an object.
        """
        known = self.args.names
        unknown = sorted(set(arguments) - known)
        if unknown:
            raise InvalidArguments(
                f"unknown argument(s) for {self.tool_name}: {', '.join(unknown)}; "
                f"expected: {', '.join(sorted(known)) or 'none'}"
            )
        path = self.path
        query: list[tuple[str, str]] = []
        headers: dict[str, str] = {
            "User-Agent": USER_AGENT,
            "Accept": "application/json, */*;q=0.5",
        }
        cookies: list[str] = []
        for binding in self.args.bindings:
            if binding.prop not in arguments:
                if binding.location == "path":
                    raise InvalidArguments(
                        f"{self.tool_name} needs the path parameter {binding.prop!r}"
                    )
                continue
            value = arguments[binding.prop]
            if value is None and binding.location != "path":
                continue
            if binding.as_json:
                value = json.dumps(value, ensure_ascii=False)
            if binding.location == "path":
                path = path.replace("{" + binding.name + "}", _path_value(binding, value))
            elif binding.location == "query":
                query += _query_pairs(binding, value)
            elif binding.location == "header":
                text = _simple(value, binding.explode)
                if "\r" in text or "\n" in text:
                    raise InvalidArguments(f"header {binding.name!r} must not contain line breaks")
                headers[binding.name] = text
            else:
                cookies.append(f"{binding.name}={urllib.parse.quote(_simple(value, False))}")
        if cookies:
            headers["Cookie"] = "; ".join(cookies)
        content: bytes | None = None
        body = self.args.body
        if body is not None and "body" in arguments:
            content = self._encode_body(arguments["body"])
            headers["Content-Type"] = body.media_type
        url = self.base_url + path
        if query:
            url += ("&" if "?" in url else "?") + urllib.parse.urlencode(
                query, quote_via=urllib.parse.quote
            )
        return HttpRequest(self.method, url, headers, content)

    def _encode_body(self, value: Any) -> bytes:
        body = self.args.body
        assert body is not None
        if body.kind == "json":
            return json.dumps(value, ensure_ascii=False).encode("utf-8")
        if body.kind == "form":
            if not isinstance(value, dict):
                raise InvalidArguments(
                    f"body for {self.tool_name} must be an object of form fields"
                )
            pairs = [(str(key), _scalar(item)) for key, item in value.items()]
            return urllib.parse.urlencode(pairs).encode("ascii")
        return (value if isinstance(value, str) else json.dumps(value)).encode("utf-8")


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return str(value)


def _simple(value: Any, explode: bool) -> str:
    """The ``simple`` style: ``a,b`` for arrays, ``k,v`` (or ``k=v`` exploded) for objects."""
    if isinstance(value, list):
        return ",".join(_scalar(item) for item in value)
    if isinstance(value, dict):
        if explode:
            return ",".join(f"{key}={_scalar(item)}" for key, item in value.items())
        return ",".join(f"{key},{_scalar(item)}" for key, item in value.items())
    return _scalar(value)


def _path_value(binding: ParamBinding, value: Any) -> str:
    """Each value percent-encoded (a ``/`` in an id must not become a path separator)."""

    def quote(item: Any) -> str:
        return urllib.parse.quote(_scalar(item), safe="")

    if isinstance(value, list):
        joined = ",".join(quote(item) for item in value)
    elif isinstance(value, dict):
        sep = "=" if binding.explode else ","
        joined = ",".join(f"{quote(key)}{sep}{quote(item)}" for key, item in value.items())
    else:
        joined = quote(value)
    if binding.style == "label":
        return "." + joined
    if binding.style == "matrix":
        return f";{binding.name}={joined}"
    return joined


def _query_pairs(binding: ParamBinding, value: Any) -> list[tuple[str, str]]:
    name = binding.name
    if isinstance(value, list):
        items = [_scalar(item) for item in value]
        if binding.explode and binding.style == "form":
            return [(name, item) for item in items]
        sep = {"spaceDelimited": " ", "pipeDelimited": "|"}.get(binding.style, ",")
        return [(name, sep.join(items))]
    if isinstance(value, dict):
        if binding.style == "deepObject":
            return [(f"{name}[{key}]", _scalar(item)) for key, item in value.items()]
        if binding.explode:
            return [(str(key), _scalar(item)) for key, item in value.items()]
        return [(name, ",".join(f"{key},{_scalar(item)}" for key, item in value.items()))]
    return [(name, _scalar(value))]
