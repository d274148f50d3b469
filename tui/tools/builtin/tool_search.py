"""``tool_search``: find and switch on deferred tools.

Large MCP and OpenAPI tool sets would cost thousands of tokens on every request and crowd the
model's choice; they are registered deferred instead, and the model pulls in what it needs.
The tool is exclusive, so the tool set only changes while nothing else runs, and activated
tools are sent from the next request on.
"""

from __future__ import annotations

import bisect
import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import Field

from tui.security.permissions import PermissionMode
from tui.tools.base import Tool, ToolAccess, ToolParams
from tui.tools.context import ToolContext
from tui.tools.result import ToolResult

if TYPE_CHECKING:
    from tui.tools.registry import ToolRegistry

MAX_LISTED_SOURCES = 12
_WORD = re.compile(r"[a-z0-9]+")


class ToolSearchParams(ToolParams):
    query: str = Field(
        min_length=1,
        max_length=500,
        description='Keywords ("github issue create"), or "select:name1,name2" for exact names.',
    )
    max_results: int = Field(default=5, ge=1, le=20, description="How many tools to activate.")


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


@dataclass(frozen=True)
class ToolWords:
    """A tool's words, sorted so a prefix match is a binary search, not a scan."""

    name: tuple[str, ...]
    text: tuple[str, ...]

    @classmethod
    def of(cls, tool: Tool[Any]) -> ToolWords:
        name = _words(tool.name.replace("__", " ").replace("_", " "))
        return cls(tuple(sorted(name)), tuple(sorted(_words(tool.description[:2000]))))


def _has(words: tuple[str, ...], word: str) -> bool:
    at = bisect.bisect_left(words, word)
    return at < len(words) and words[at] == word


def _has_prefix(words: tuple[str, ...], prefix: str) -> bool:
    at = bisect.bisect_left(words, prefix)
    return at < len(words) and words[at].startswith(prefix)


def score(words: ToolWords, query: set[str]) -> float:
    """Name words weigh most, then description words; a prefix match counts half."""
    total = 0.0
    for word in query:
        if _has(words.name, word):
            total += 3
        elif _has_prefix(words.name, word):
            total += 1.5
        if _has(words.text, word):
            total += 1
        elif len(word) >= 4 and _has_prefix(words.text, word):
            total += 0.5
    return total


class ToolSearchTool(Tool[ToolSearchParams]):
    name = "tool_search"
    label = "Find tools"
    Params = ToolSearchParams
    permission = PermissionMode.READ_ONLY
    exclusive = True

    def __init__(self, registry: ToolRegistry) -> None:
        self.registry = registry
        self._words: dict[str, tuple[Tool[Any], ToolWords]] = {}

    def _words_of(self, tool: Tool[Any]) -> ToolWords:
        cached = self._words.get(tool.name)
        if cached is None or cached[0] is not tool:
            cached = (tool, ToolWords.of(tool))
            self._words[tool.name] = cached
        return cached[1]

    @property
    def description(self) -> str:  # type: ignore[override]
        """Built when the definitions are: the loop rebuilds those whenever the set of loaded
        tools changes, so the count and sources it names stay current."""
        sources: dict[str, int] = {}
        for tool in self.registry.deferred_tools():
            source = tool.name.split("__", 1)[0] if "__" in tool.name else "other"
            sources[source] = sources.get(source, 0) + 1
        listed = ", ".join(
            f"{name} ({count})" for name, count in list(sources.items())[:MAX_LISTED_SOURCES]
        )
        if len(sources) > MAX_LISTED_SOURCES:
            listed += f", and {len(sources) - MAX_LISTED_SOURCES} more sources"
        return f"""Find tools that are available but not loaded yet, and load them.

{len(self.registry.deferred_tools())} more tools exist beyond the ones you see, from: {
            listed or "(none right now)"
        }. Tool names are SOURCE__tool. Matching tools are loaded and can be called
from your next step on; the result shows their parameters.
When to use: the task needs a capability none of your current tools has (an API, a service
named above); before calling a SOURCE__tool you have not seen the parameters of.
When NOT to use: a loaded tool already does the job.
Disambiguation: searches tool names and descriptions, not files or the web.
Examples: {{"query": "create issue github"}}; {{"query": "select:petstore__getPetById"}}"""

    def access(self, params: ToolSearchParams) -> ToolAccess:
        return ToolAccess(permission=PermissionMode.READ_ONLY, acting=False)

    async def execute(self, params: ToolSearchParams, ctx: ToolContext) -> ToolResult:
        deferred = {tool.name: tool for tool in self.registry.deferred_tools()}
        query = params.query.strip()
        if query.lower().startswith("select:"):
            wanted = [n.strip() for n in query[len("select:") :].split(",") if n.strip()]
            found = [deferred[n] for n in wanted if n in deferred]
            already = [n for n in wanted if n not in deferred and n in self.registry]
            unknown = [n for n in wanted if n not in deferred and n not in self.registry]
        else:
            words = _words(query)
            ranked = sorted(
                ((score(self._words_of(tool), words), tool) for tool in deferred.values()),
                key=lambda pair: -pair[0],
            )
            found = [tool for points, tool in ranked if points > 0][: params.max_results]
            already, unknown = [], []
        activated = self.registry.activate(tool.name for tool in found)
        parts: list[str] = []
        for tool in found:
            schema = json.dumps(tool.parameters_schema(), separators=(",", ":"))
            first_line = tool.description.strip().split("\n", 1)[0][:300]
            parts.append(f"- {tool.name}: {first_line}\n  parameters: {schema}")
        if already:
            parts.append("Already loaded: " + ", ".join(already))
        if unknown:
            parts.append("No such tools: " + ", ".join(unknown))
        if not found and not already:
            parts.append(
                f"No deferred tool matches {query!r}"
                + (f"; {len(deferred)} remain, try other words." if deferred else ".")
            )
        else:
            parts.insert(0, f"Loaded {len(activated)} tool(s); call them from your next step:")
        return ToolResult("\n".join(parts), {"activated": activated})
