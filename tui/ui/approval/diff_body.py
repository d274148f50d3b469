"""The approval body of a file tool that brings a diff: its other arguments, then the change.

The diff replaces the raw ``old_string`` / ``new_string`` / ``content`` arguments it was
computed from, so a person reads what the file will become instead of working it out; every
other argument (the path, ``replace_all``) is shown as before.
"""

from __future__ import annotations

from rich.text import Text

from tui.diffs import DIFF_REPLACES, counts
from tui.events import ApprovalRequested
from tui.ui.diff_view import diff_text


def diff_summary(diff: str) -> str:
    added, removed = counts(diff)
    return f"+{added} -{removed} lines"


def approval_diff_body(request: ApprovalRequested, arguments: Text) -> Text:
    """``arguments`` (already without the replaced ones) above the coloured diff.

    One ``Text``, not a ``Group`` of them: a group whose last part ends without a newline
    was measured a line short, and the diff's last line (or its "… more lines" notice) was
    never drawn.
    """
    assert request.diff is not None
    path = str(request.arguments.get("path", ""))
    heading = Text("change ", "bold")
    heading.append(diff_summary(request.diff), "dim")
    parts: list[Text] = [arguments, heading, diff_text(request.diff, path=path)]
    return Text("\n").join(part for part in parts if part.plain)


def shown_arguments(request: ApprovalRequested) -> dict[str, object]:
    """The arguments still shown beside the diff."""
    if request.diff is None:
        return dict(request.arguments)
    return {k: v for k, v in request.arguments.items() if k not in DIFF_REPLACES}
