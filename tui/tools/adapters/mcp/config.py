"""Reading a project's ``.mcp.json``: the server list other MCP clients share.

The common format is ``{"mcpServers": {NAME: ENTRY}}`` where an entry is either a program to
start (``command``, ``args``, ``env``, optionally ``cwd``) or a streamable-HTTP endpoint
(``"type": "http"`` or ``"streamable-http"`` with ``url`` and ``headers``). A repository's file
is not ours to fix, so every problem becomes one readable line naming the file, the server and
what is wrong, and the good entries are still used.

``${VAR}`` and ``${VAR:-default}`` in ``command``, ``args``, ``env``, ``url`` and ``headers``
are filled from the person's environment, as other clients do, so a shared file names a token
without holding it — but only once the workspace is trusted (``expand``): until then the
entries keep the variables as written, so nothing of the person's environment (their model
key, say) is read into a server that a cloned repository described.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from tui.config import McpServerSettings
from tui.security.own_environ import process_environ

PROJECT_FILE = ".mcp.json"
MAX_FILE_BYTES = 1024 * 1024
"""A server list is a few hundred bytes; anything near this is not one."""

_STDIO_TYPES = (None, "stdio")
_HTTP_TYPES = ("http", "streamable-http", "streamable_http", "streamableHttp")
_ENTRY_KEYS = ("command", "args", "env", "cwd", "url", "headers")


_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def expand_variables(value: Any, env: Mapping[str, str], missing: list[str]) -> Any:
    """``value`` with ``${VAR}`` / ``${VAR:-default}`` filled in, through lists and objects;
    variables that are unset and have no default are added to ``missing``."""
    if isinstance(value, str):

        def fill(match: re.Match[str]) -> str:
            name, default = match.group(1), match.group(2)
            if name in env:
                return env[name]
            if default is not None:
                return default
            missing.append(name)
            return ""

        return _VARIABLE.sub(fill, value)
    if isinstance(value, list):
        return [expand_variables(item, env, missing) for item in value]
    if isinstance(value, dict):
        return {key: expand_variables(item, env, missing) for key, item in value.items()}
    return value


def load_project_servers(
    workspace: Path, env: Mapping[str, str] | None = None, *, expand: bool = True
) -> tuple[dict[str, McpServerSettings], list[str]]:
    """The servers ``workspace/.mcp.json`` declares, and a line for each problem in it.

    Never raises: a missing file is ``({}, [])``, a broken file is ``({}, [problem])`` and a
    bad entry is skipped with a problem naming it. ``expand`` False (an untrusted workspace)
    leaves every ``${VAR}`` as written.
    """
    path = workspace / PROJECT_FILE
    if not path.exists():
        return {}, []
    data, problem = _read_json(path)
    if problem is not None:
        return {}, [problem]
    if not isinstance(data, dict):
        return {}, [
            f'{path}: the top level must be an object like {{"mcpServers": {{...}}}}, '
            f"not {_json_type(data)}"
        ]
    entries = data.get("mcpServers")
    if entries is None:
        return {}, [f'{path}: no "mcpServers" object; expected {{"mcpServers": {{NAME: {{...}}}}}}']
    if not isinstance(entries, dict):
        return {}, [f'{path}: "mcpServers" must be an object of servers, not {_json_type(entries)}']
    servers: dict[str, McpServerSettings] = {}
    problems: list[str] = []
    for name, entry in entries.items():
        environment = (process_environ() if env is None else env) if expand else None
        settings, problem = _parse_entry(name, entry, environment)
        if settings is not None:
            servers[name] = settings
        else:
            problems.append(f"{path}: server `{name}`: {problem}")
    return servers, problems


def _read_json(path: Path) -> tuple[Any, str | None]:
    try:
        if not path.is_file():
            return None, f"{path}: not a regular file"
        if path.stat().st_size > MAX_FILE_BYTES:
            return None, f"{path}: larger than {MAX_FILE_BYTES // 1024} KiB; not a server list"
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return None, f"{path}: not UTF-8 text"
    except OSError as exc:
        return None, f"{path}: cannot be read ({exc.strerror or exc})"
    try:
        return json.loads(text), None
    except json.JSONDecodeError as exc:
        return None, f"{path}: not valid JSON (line {exc.lineno} column {exc.colno}: {exc.msg})"
    except RecursionError:
        return None, f"{path}: not valid JSON (nested too deeply)"


def _parse_entry(
    name: str, entry: Any, env: Mapping[str, str] | None
) -> tuple[McpServerSettings | None, str]:
    if not name.strip():
        return None, "the server name is empty"
    if not isinstance(entry, dict):
        return None, f"must be an object with `command` or `url`, not {_json_type(entry)}"
    kind = entry.get("type")
    if kind == "sse":
        return None, (
            'the legacy "sse" transport is not supported; use the server\'s streamable-HTTP '
            'endpoint with "type": "http"'
        )
    if kind not in _STDIO_TYPES and kind not in _HTTP_TYPES:
        return None, f'unknown "type" {kind!r}; use "stdio" (or omit it) or "http"'
    if kind in _HTTP_TYPES and "url" not in entry:
        return None, f'"type": "{kind}" needs a "url"'
    if kind == "stdio" and "command" not in entry:
        return None, '"type": "stdio" needs a "command"'
    missing: list[str] = []
    fields = {
        key: entry[key] if env is None else expand_variables(entry[key], env, missing)
        for key in _ENTRY_KEYS
        if key in entry
    }
    if missing:
        names = ", ".join(dict.fromkeys(missing))
        return None, f"needs the environment variable(s) {names}, which are not set"
    try:
        return McpServerSettings.model_validate(fields), ""
    except ValidationError as exc:
        return None, _describe(exc)


def _describe(error: ValidationError) -> str:
    problems = []
    for item in error.errors(include_url=False):
        where = ".".join(str(part) for part in item["loc"])
        message = item["msg"].removeprefix("Value error, ")
        problems.append(f"{where}: {message}" if where else message)
    return "; ".join(problems)


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"
