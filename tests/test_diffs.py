"""Diffs of file changes: the pure module, and the diff an approval and a result carry."""

from __future__ import annotations

import io
from collections.abc import Mapping
from pathlib import Path

from tests.conftest import make_harness
from tui.diffs import (
    bounded_diff,
    counts,
    creation_diff,
    fold,
    parse,
    plain,
    unified_diff,
)
from tui.events import ApprovalAnswer, ApprovalRequested, ToolCallCompleted
from tui.headless import HeadlessPrinter, TerminalApprover, terminal_diff
from tui.security.approval import CallbackApprover
from tui.security.permissions import ApprovalMode
from tui.security.settings import SecuritySettings

# -- the pure module -------------------------------------------------------------------------


def test_lines_are_numbered_in_the_old_and_the_new_file() -> None:
    old = "".join(f"line {n}\n" for n in range(1, 21))
    new = old.replace("line 10\n", "line ten\nline ten and a half\n")
    diff, added, removed = unified_diff(old, new, "src/a.py")

    assert (added, removed) == (2, 1) == (counts(diff)[0], counts(diff)[1])
    lines = parse(diff)
    assert [line.kind for line in lines[:3]] == ["header", "header", "hunk"]
    assert lines[2].text == "@@ -7,7 +7,8 @@"  # trimmed head shifted back to real numbers
    changed = [(line.kind, line.text, line.old, line.new) for line in lines[3:]]
    assert ("remove", "line 10", 10, None) in changed
    assert ("add", "line ten", None, 10) in changed
    assert ("add", "line ten and a half", None, 11) in changed
    assert ("context", "line 11", 11, 12) in changed
    assert plain(diff).splitlines()[1] == " 7  7  line 7"


def test_a_removed_line_starting_with_dashes_is_not_a_header() -> None:
    diff, _, _ = unified_diff("a\n-- x\nb\n", "a\nb\n", "notes.sql")
    assert "--- x" in diff
    kinds = [(line.kind, line.text) for line in parse(diff)]
    assert ("remove", "-- x") in kinds
    assert sum(kind == "header" for kind, _ in kinds) == 2


def test_a_new_file_is_all_added() -> None:
    diff, added = creation_diff("one\ntwo\nthree", "new.py")
    assert added == 3
    assert diff.startswith("--- /dev/null\n+++ b/new.py\n@@ -0,0 +1,3 @@\n")
    assert [line.new for line in parse(diff) if line.kind == "add"] == [1, 2, 3]
    assert parse(diff)[-1].kind == "note"  # "\ No newline at end of file"


def test_a_large_diff_folds_with_a_count_and_is_bounded() -> None:
    old = "".join(f"{n}\n" for n in range(1000))
    new = "".join(f"{n}!\n" for n in range(1000))
    diff, added, removed = unified_diff(old, new, "big.txt")
    folded = fold(parse(diff), 60)
    assert len(folded.lines) == 60
    assert folded.hidden == added + removed + 1 - 60  # one hunk header, no file headers
    shown = plain(diff, 60, key="o")
    assert shown.endswith(f"… {folded.hidden:,} more lines — o opens the whole diff")
    assert "… " not in plain(diff, None)

    cut = bounded_diff(diff, 1000)
    assert len(cut) < 1100 and cut.endswith("more chars]\n")
    assert cut.split("\n")[-3] in diff.split("\n")  # cut at a line end, never mid-line


# -- the diff an approval and a result carry --------------------------------------------------


async def asked(
    workspace: Path,
    tool: str,
    arguments: dict[str, object],
    settings: SecuritySettings | None = None,
) -> tuple[list[ApprovalRequested], ToolCallCompleted]:
    """Run one call in ask mode, answering yes: what the person was shown, and the end."""
    requests: list[ApprovalRequested] = []

    async def yes(request: ApprovalRequested) -> ApprovalAnswer:
        requests.append(request)
        return ApprovalAnswer.allow_once()

    harness = make_harness(
        workspace, mode=ApprovalMode.ASK, settings=settings, approver=CallbackApprover(yes)
    )
    await harness.call(tool, arguments)
    [completed] = [e for e in harness.events if isinstance(e, ToolCallCompleted)]
    return requests, completed


async def test_edit_approval_shows_the_diff_of_the_file_read_when_asking(workspace: Path) -> None:
    (workspace / "app.py").write_text("def f():\n    retries = 3\n    return retries\n")
    requests, completed = await asked(
        workspace,
        "edit_file",
        {"path": "app.py", "old_string": "retries = 3", "new_string": "retries = 5"},
    )

    [request] = requests
    assert request.diff is not None
    assert "-    retries = 3\n+    retries = 5\n" in request.diff
    assert request.diff.startswith("--- a/app.py\n+++ b/app.py\n@@ -1,3 +1,3 @@")
    assert completed.diff == request.diff  # what was approved is what was done
    assert (workspace / "app.py").read_text().count("retries = 5") == 1


async def test_write_over_an_existing_file_shows_what_it_replaces(workspace: Path) -> None:
    (workspace / "conf.toml").write_text("[a]\nx = 1\ny = 2\n")
    requests, completed = await asked(
        workspace, "write_file", {"path": "conf.toml", "content": "[a]\nx = 9\n"}
    )

    [request] = requests
    assert request.diff is not None
    assert "-x = 1\n-y = 2\n+x = 9\n" in request.diff
    assert completed.diff == request.diff
    assert completed.summary.startswith("Overwrote conf.toml")


async def test_write_of_a_new_file_shows_its_content_as_added(workspace: Path) -> None:
    requests, _ = await asked(workspace, "write_file", {"path": "pkg/new.py", "content": "A=1\n"})
    [request] = requests
    assert request.diff == "--- /dev/null\n+++ b/pkg/new.py\n@@ -0,0 +1 @@\n+A=1\n"


async def test_an_edit_that_does_not_match_asks_without_a_diff(workspace: Path) -> None:
    (workspace / "a.txt").write_text("hello\n")
    requests, _ = await asked(
        workspace, "edit_file", {"path": "a.txt", "old_string": "absent", "new_string": "x"}
    )
    [request] = requests
    assert request.diff is None  # the call itself then reports why it did not match
    assert "old_string" in request.arguments


async def test_a_secret_file_is_never_read_into_an_approval(workspace: Path) -> None:
    """A write into a secret place is refused before anyone is asked: no prompt, and no
    event (printed, mirrored, saved in the transcript) carries the secret's content."""
    (workspace / ".env").write_text("API_KEY=sk-live-very-secret\n")
    settings = SecuritySettings(extra_forbidden_paths=[".env"])
    requests, completed = await asked(
        workspace, "edit_file", {"path": ".env", "old_string": "API", "new_string": "X"}, settings
    )
    assert requests == []
    assert completed.is_error and completed.error_type == "PermissionDenied"
    assert completed.diff is None


async def changed_while_asking(
    workspace: Path, tool: str, arguments: Mapping[str, object], meanwhile: str
) -> tuple[list[ApprovalRequested], ToolCallCompleted]:
    """Someone rewrites the file while the person reads the prompt; then the person says yes."""
    requests: list[ApprovalRequested] = []

    async def yes_after_a_change(request: ApprovalRequested) -> ApprovalAnswer:
        requests.append(request)
        (workspace / str(arguments["path"])).write_text(meanwhile)
        return ApprovalAnswer.allow_once()

    approver = CallbackApprover(yes_after_a_change)
    harness = make_harness(workspace, mode=ApprovalMode.ASK, approver=approver)
    await harness.call(tool, dict(arguments))
    [completed] = [e for e in harness.events if isinstance(e, ToolCallCompleted)]
    return requests, completed


async def test_an_edit_whose_file_changed_after_the_approval_writes_nothing(
    workspace: Path,
) -> None:
    (workspace / "a.py").write_text("x = 1\ny = 2\n")
    edit = {"path": "a.py", "old_string": "x = 1", "new_string": "x = 10"}
    meanwhile = "x = 1\ny = 2\nimport shutil; shutil.rmtree('/')\n"
    [request], completed = await changed_while_asking(workspace, "edit_file", edit, meanwhile)

    assert request.diff is not None and "rmtree" not in request.diff
    assert completed.is_error and completed.error_type == "ExecutionFailed"
    assert "changed after the approval was asked" in completed.summary
    assert (workspace / "a.py").read_text() == meanwhile  # not the unapproved change


async def test_a_write_over_a_file_changed_after_the_approval_writes_nothing(
    workspace: Path,
) -> None:
    (workspace / "cfg.ini").write_text("a=1\n")
    write = {"path": "cfg.ini", "content": "a=2\n"}
    [request], completed = await changed_while_asking(workspace, "write_file", write, "b=9\n")

    assert request.diff == "--- a/cfg.ini\n+++ b/cfg.ini\n@@ -1 +1 @@\n-a=1\n+a=2\n"
    assert completed.is_error and "changed after the approval was asked" in completed.summary
    assert (workspace / "cfg.ini").read_text() == "b=9\n"


# -- headless text output -------------------------------------------------------------------


def test_headless_text_prints_the_diff_plain_with_controls_spelled_out() -> None:
    diff, _, _ = unified_diff("a\nold\n", "a\nnew \x1b]0;pwned\x07\n", "x.txt")
    out, err = io.StringIO(), io.StringIO()
    printer = HeadlessPrinter("text", stdout=out, stderr=err)
    printer(
        ToolCallCompleted(
            tool_call_id="c1",
            tool_name="edit_file",
            is_error=False,
            duration_ms=3,
            summary="Edited x.txt: +1 -1 lines.",
            diff=diff,
        )
    )
    text = err.getvalue()
    assert out.getvalue() == ""  # stdout stays the answer alone
    assert "✓ edit_file: Edited x.txt: +1 -1 lines." in text
    assert " 2    -old\n    2 +new \\x1b]0;pwned\\x07\n" in text
    assert "\x1b" not in text  # no colour for a file, no escape from the file


def test_headless_colours_only_a_terminal() -> None:
    diff, _, _ = unified_diff("a\n", "b\n", "x.txt")
    assert "\x1b[32m" in terminal_diff(diff, colour=True)
    assert "\x1b" not in terminal_diff(diff)


def test_terminal_approval_shows_the_change_instead_of_the_raw_strings() -> None:
    diff, _, _ = unified_diff("a\nretries = 3\n", "a\nretries = 5\n", "app.py")
    request = ApprovalRequested(
        request_id="r1",
        tool_call_id="c1",
        tool_name="edit_file",
        arguments={"path": "app.py", "old_string": "retries = 3", "new_string": "retries = 5"},
        diff=diff,
    )
    shown = TerminalApprover().describe(request)
    assert '    path: "app.py"\n' in shown and "old_string" not in shown  # one line an argument
    assert "  change:\n" in shown
    assert "     2    -retries = 3\n        2 +retries = 5\n" in shown
