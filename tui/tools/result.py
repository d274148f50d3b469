"""What a tool returns: content for the model, details for the UI only."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ImageContent:
    """An image a tool hands back (a screenshot, a plot); base64 without a data: prefix."""

    data: str
    mime_type: str = "image/png"


ContentPart = str | ImageContent


@dataclass
class ToolResult:
    """The outcome of one tool call.

    ``content`` is what the model reads (after per-tool truncation in the envelope);
    ``details`` carries structured extras for the UI and transcript (a diff, an exit code,
    the untruncated output's path) and is never sent to the model.
    """

    content: str | list[ContentPart]
    details: dict[str, Any] = field(default_factory=dict)
    is_error: bool = False
    child_loop_id: str | None = None
    value: dict[str, Any] | None = None
    """What the model reads as the envelope's ``result`` when a seed's contract gives the
    result a shape (``run_shell``: Buddy's ``exit_code``/``stdout``/``stderr``); ``content``
    stays the text a person reads. None: the model reads ``text``."""

    def model_result(self) -> Any:
        """The envelope's ``result`` for this call."""
        return self.value if self.value is not None else self.text

    def noted(self, text: str, note: str) -> ToolResult:
        """This result with ``text`` as its content and ``note`` kept in its value too (a
        loop warning, a hook's feedback), so the model reads the note in either form."""
        value = None
        if self.value is not None:
            value = dict(self.value, notices=[*self.value.get("notices", []), note])
        return ToolResult(text, self.details, self.is_error, self.child_loop_id, value)

    @property
    def text(self) -> str:
        """All text parts joined; images are represented by a placeholder."""
        if isinstance(self.content, str):
            return self.content
        return "\n".join(
            part if isinstance(part, str) else f"[image {part.mime_type}]" for part in self.content
        )

    @property
    def images(self) -> list[ImageContent]:
        if isinstance(self.content, str):
            return []
        return [part for part in self.content if isinstance(part, ImageContent)]

    @classmethod
    def error(cls, kind: str, message: str, **details: Any) -> ToolResult:
        return cls(
            content=f"Error ({kind}): {message}",
            details={"error_type": kind, **details},
            is_error=True,
        )
