"""What a ``browser`` call may ask for: the action and its arguments, checked before anything runs.

Kept apart from the browser itself so registering the tool (its JSON schema, its permissions)
costs one small pydantic model and never imports Playwright.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from tui.security.permissions import PermissionMode
from tui.tools.base import ToolParams

Action = Literal[
    "open",
    "read",
    "click",
    "type",
    "select",
    "press",
    "wait",
    "back",
    "screenshot",
    "console",
    "tabs",
    "switch",
    "close_tab",
    "eval",
]
TARGETED: frozenset[str] = frozenset({"click", "type", "select"})
"""Actions that need an element: by ``ref``, by ``role`` (and ``name``), or by ``selector``."""
ACTING: frozenset[str] = frozenset({"click", "type", "select", "press"})
"""Actions that can change what a site holds (submit a form, press a button)."""
MAX_TIMEOUT = 120.0


class BrowserParams(ToolParams):
    action: Action = Field(
        description="click/type/select take an element (ref, role or selector); press a key "
        "(element optional); wait for an element or a page state; console: errors since the "
        "last look; switch/close_tab: tab n; eval: JavaScript."
    )
    url: str | None = Field(default=None, description="open: the http(s) URL.")
    new_tab: bool | None = Field(default=None, description="open: in a new tab.")
    format: Literal["text", "tree"] | None = Field(
        default=None,
        description="read: text (default) or tree (with refs).",
    )
    ref: str | None = Field(default=None, description="Element ref from the latest tree.")
    role: str | None = Field(default=None, description="ARIA role: button, link, textbox…")
    name: str | None = Field(default=None, description="With role: accessible name (exact).")
    selector: str | None = Field(default=None, description="CSS (or Playwright) selector.")
    text: str | None = Field(default=None, description="type: the text.")
    submit: bool | None = Field(default=None, description="type: press Enter afterwards.")
    values: list[str] | None = Field(default=None, description="select: option values or labels.")
    key: str | None = Field(default=None, description="press: Enter, Escape, Control+A…")
    state: Literal["networkidle", "load", "domcontentloaded"] | None = Field(
        default=None,
        description="wait without element: page state (default networkidle).",
    )
    full_page: bool | None = Field(
        default=None, description="screenshot: whole page, not the viewport."
    )
    tab: int | None = Field(default=None, ge=1, description="switch/close_tab: tab number.")
    script: str | None = Field(
        default=None,
        description="eval: JavaScript expression or function; its JSON value returns.",
    )
    timeout: float | None = Field(
        default=None,
        gt=0,
        le=MAX_TIMEOUT,
        description="Seconds (default [browser] action_timeout, 30).",
    )

    @model_validator(mode="after")
    def _needs(self) -> BrowserParams:
        """Say at once what an action lacks, before any browser starts."""
        action = self.action
        if action == "open" and not (self.url and self.url.strip()):
            raise ValueError("action=open needs url")
        if action in TARGETED and self.target() is None:
            raise ValueError(f"action={action} needs an element: ref, role or selector")
        if action == "type" and self.text is None:
            raise ValueError("action=type needs text")
        if action == "select" and not self.values:
            raise ValueError("action=select needs values")
        if action == "press" and not self.key:
            raise ValueError("action=press needs key")
        if action == "switch" and self.tab is None:
            raise ValueError("action=switch needs tab")
        if action == "eval" and not (self.script and self.script.strip()):
            raise ValueError("action=eval needs script")
        if sum(x is not None for x in (self.ref, self.role, self.selector)) > 1:
            raise ValueError("give one of ref, role or selector, not several")
        if self.name is not None and self.role is None:
            raise ValueError("name goes with role")
        return self

    def target(self) -> str | None:
        """The element as the person reads it (``ref e12``, ``button "Save"``), or None."""
        if self.ref is not None:
            return f"ref {self.ref}"
        if self.role is not None:
            return f"{self.role} {self.name!r}" if self.name is not None else self.role
        if self.selector is not None:
            return f"selector {self.selector!r}"
        return None

    def permission(self) -> PermissionMode:
        if self.action == "eval":
            return PermissionMode.DANGER_FULL_ACCESS
        if self.action in ACTING:
            return PermissionMode.WORKSPACE_WRITE
        return PermissionMode.READ_ONLY

    def subject(self) -> str:
        """What ``browser(pattern)`` rules match: the URL, the script, or action and element."""
        if self.action == "open" and self.url:
            return self.url
        if self.action == "eval" and self.script:
            return self.script
        target = self.target()
        return f"{self.action} {target}" if target else self.action


__all__ = ["ACTING", "TARGETED", "Action", "BrowserParams"]
