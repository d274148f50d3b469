"""read_file, write_file, edit_file and list_files through the real registry, policy and backend.

Every test works on real files in a temporary workspace; hostile inputs (escapes, symlinks,
NUL bytes, huge files) go through exactly the path a model's call takes.
"""

from __future__ import annotations

import base64
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import Harness, make_harness
from tui.security.permissions import ApprovalMode
from tui.security.settings import SecuritySettings
from tui.tools.builtin.files.listing import Entry, Scan, render_listing
from tui.tools.builtin.files.reads import page_text
from tui.tools.builtin.files.tools import ListFilesTool
from tui.tools.result import ImageContent

PNG_1X1 = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


@pytest.fixture
def fake_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A HOME with a fake ~/.ssh; harnesses must be built after this (paths expand then)."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE KEY")
    (home / "notes.txt").write_text("from home\n")
    monkeypatch.setenv("HOME", str(home))
    return home


def lines_of(count: int, width: int = 0) -> str:
    return "".join(f"line {i}{'x' * width}\n" for i in range(1, count + 1))


# -- read_file -------------------------------------------------------------------------------


async def test_read_numbers_lines_and_gives_the_total(harness: Harness, workspace: Path) -> None:
    (workspace / "a.txt").write_text("alpha\nbeta\n\tgamma\n")
    result = await harness.call("read_file", {"path": "a.txt"})
    assert not result.is_error, result.text
    assert result.text == (
        "     1\talpha\n     2\tbeta\n     3\t\tgamma\n[end of file: lines 1-3 of 3]"
    )
    assert result.details["total_lines"] == 3 and result.details["next_offset"] is None


async def test_read_pages_with_offset_and_limit(harness: Harness, workspace: Path) -> None:
    (workspace / "a.txt").write_text(lines_of(50))
    result = await harness.call("read_file", {"path": "a.txt", "offset": 10, "limit": 5})
    assert "    10\tline 10\n" in result.text and "    14\tline 14\n" in result.text
    assert "line 9\n" not in result.text and "line 15" not in result.text
    assert "[lines 10-14 of 50 shown. Next page: offset=15]" in result.text
    last = await harness.call("read_file", {"path": "a.txt", "offset": 48})
    assert last.text.endswith("[end of file: lines 48-50 of 50]")


async def test_read_a_10_mb_file_pages_and_says_what_was_cut(
    harness: Harness, workspace: Path
) -> None:
    big = workspace / "big.log"
    big.write_text(lines_of(200_000, width=45))
    assert big.stat().st_size > 10 * 1024 * 1024
    first = await harness.call("read_file", {"path": "big.log"})
    assert not first.is_error
    assert len(first.text) <= 8000
    shown = first.details["last_line"]
    assert 50 < shown < 2000
    assert first.details["truncated_chars"] > 0
    assert (
        f"[lines 1-{shown} of 200000 shown: the 7600-character output limit cut the other "
        f"{2000 - shown} requested lines" in first.text
    )
    assert f"Next page: offset={shown + 1}]" in first.text
    # The next page starts exactly where the last one stopped.
    second = await harness.call("read_file", {"path": "big.log", "offset": shown + 1})
    assert second.text.startswith(f"{shown + 1:6d}\tline {shown + 1}x")
    deep = await harness.call("read_file", {"path": "big.log", "offset": 150_000, "limit": 3})
    assert deep.text.splitlines()[0] == f"150000\tline 150000{'x' * 45}"
    assert "[lines 150000-150002 of 200000 shown. Next page: offset=150003]" in deep.text


async def test_read_cuts_long_lines_with_a_marker(harness: Harness, workspace: Path) -> None:
    (workspace / "min.js").write_text("a" * 5000 + "\nshort\n")
    result = await harness.call("read_file", {"path": "min.js"})
    assert "a" * 2000 + " … [line cut: 3000 more chars]" in result.text
    assert "     2\tshort" in result.text


async def test_read_past_the_end_and_empty_files(harness: Harness, workspace: Path) -> None:
    (workspace / "a.txt").write_text("one\ntwo\n")
    (workspace / "empty.txt").write_text("")
    past = await harness.call("read_file", {"path": "a.txt", "offset": 5})
    assert past.is_error and "offset 5 is past the end of a.txt, which has 2 lines" in past.text
    empty = await harness.call("read_file", {"path": "empty.txt"})
    assert not empty.is_error and "empty: 0 lines" in empty.text


async def test_read_binary_is_described_not_dumped(harness: Harness, workspace: Path) -> None:
    (workspace / "blob.bin").write_bytes(b"\x7fELF\x00\x01\x02" + bytes(range(256)) * 10)
    result = await harness.call("read_file", {"path": "blob.bin"})
    assert not result.is_error
    assert "binary file" in result.text and "2567 bytes" in result.text
    assert "ELF" not in result.text


async def test_read_image_returns_image_content(harness: Harness, workspace: Path) -> None:
    (workspace / "dot.png").write_bytes(PNG_1X1)
    result = await harness.call("read_file", {"path": "dot.png"})
    assert not result.is_error
    [image] = result.images
    assert isinstance(image, ImageContent) and image.mime_type == "image/png"
    assert base64.b64decode(image.data) == PNG_1X1


async def test_read_unicode_and_crlf(harness: Harness, workspace: Path) -> None:
    (workspace / "u.txt").write_bytes("héllo wörld ✓ 🚀\r\nπ\r\n".encode())
    result = await harness.call("read_file", {"path": "u.txt"})
    assert "     1\théllo wörld ✓ 🚀\n     2\tπ\n" in result.text
    assert "\r" not in result.text


async def test_read_invalid_utf8_is_replaced_not_fatal(harness: Harness, workspace: Path) -> None:
    (workspace / "latin.txt").write_bytes(b"caf\xe9\n")
    result = await harness.call("read_file", {"path": "latin.txt"})
    assert not result.is_error and "caf\ufffd" in result.text


async def test_read_refuses_devices_fifos_and_huge_files(harness: Harness, workspace: Path) -> None:
    zero = await harness.call("read_file", {"path": "/dev/zero"})
    assert zero.is_error and "not a regular file" in zero.text
    os.mkfifo(workspace / "pipe")
    fifo = await harness.call("read_file", {"path": "pipe"})
    assert fifo.is_error and "not a regular file" in fifo.text
    with open(workspace / "sparse.img", "wb") as handle:
        handle.truncate(300 * 1024 * 1024)
    huge = await harness.call("read_file", {"path": "sparse.img"})
    assert huge.is_error and "above the 256.0 MB read_file limit" in huge.text


async def test_read_missing_file_names_the_closest(harness: Harness, workspace: Path) -> None:
    (workspace / "config.yaml").write_text("x")
    (workspace / "README.md").write_text("x")
    result = await harness.call("read_file", {"path": "config.yml"})
    assert result.is_error and "Error (NotFound)" in result.text
    assert "config.yml: no such file" in result.text and "config.yaml" in result.text
    cased = await harness.call("read_file", {"path": "readme.md"})
    assert "README.md" in cased.text
    nested = await harness.call("read_file", {"path": "nope/x.txt"})
    assert nested.is_error and "The folder nope does not exist either" in nested.text


async def test_read_a_directory_points_to_list_files(harness: Harness, workspace: Path) -> None:
    (workspace / "src").mkdir()
    result = await harness.call("read_file", {"path": "src"})
    assert result.is_error and "Error (InvalidArguments)" in result.text
    assert "is a directory" in result.text and "list_files" in result.text


async def test_unknown_and_bad_arguments_are_rejected(harness: Harness, workspace: Path) -> None:
    (workspace / "a").write_text("x")
    result = await harness.call("read_file", {"path": "a", "bogus": 1})
    assert result.is_error and "bogus: unknown argument" in result.text
    zero = await harness.call("read_file", {"path": "a", "offset": 0})
    assert zero.is_error and "offset" in zero.text
    missing = await harness.call("write_file", {"path": "a"})
    assert missing.is_error and "content: required argument missing" in missing.text
    aliased = await harness.call("read_file", {"file_path": "a"})
    assert not aliased.is_error


# -- hostile paths ---------------------------------------------------------------------------


async def test_dotdot_escape_is_refused_in_workspace_only_mode(
    workspace: Path, tmp_path: Path
) -> None:
    (tmp_path / "secret.txt").write_text("outside")
    h = make_harness(workspace, settings=SecuritySettings(workspace_only=True))
    calls = [
        ("read_file", {"path": "../secret.txt"}),
        ("write_file", {"path": "../evil.txt", "content": "x"}),
        ("edit_file", {"path": "../secret.txt", "old_string": "outside", "new_string": "x"}),
        ("list_files", {"path": ".."}),
        ("read_file", {"path": str(tmp_path / "secret.txt")}),
    ]
    for name, args in calls:
        result = await h.call(name, args)
        assert result.is_error and "Error (PermissionDenied)" in result.text, (name, args)
        # `..` is refused by the path-traversal rule before the workspace is even asked.
        why = "`..` component" if ".." in str(args["path"]) else "outside the workspace"
        assert why in result.text, (name, args)
    assert (tmp_path / "secret.txt").read_text() == "outside"
    assert not (tmp_path / "evil.txt").exists()


async def test_symlink_out_of_the_workspace(workspace: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "data.txt").write_text("out there\n")
    (workspace / "link").symlink_to(outside)
    strict = make_harness(workspace, settings=SecuritySettings(workspace_only=True))
    refused = await strict.call("read_file", {"path": "link/data.txt"})
    assert refused.is_error and "via a symlink" in refused.text
    write = await strict.call("write_file", {"path": "link/new.txt", "content": "x"})
    assert write.is_error and not (outside / "new.txt").exists()
    # Without workspace-only, reading through it works; writing outside the workspace needs
    # danger-full-access, which auto-edit asks about, and with nobody to ask it is refused.
    relaxed = make_harness(workspace, mode=ApprovalMode.AUTO_EDIT)
    assert "out there" in (await relaxed.call("read_file", {"path": "link/data.txt"})).text
    asked = await relaxed.call("write_file", {"path": "link/new.txt", "content": "x"})
    assert asked.is_error and "--approval-mode" in asked.text
    assert not (outside / "new.txt").exists()


async def test_symlink_to_a_protected_path(workspace: Path, fake_home: Path) -> None:
    h = make_harness(workspace)
    (workspace / "innocent").symlink_to(fake_home / ".ssh")
    calls = [
        ("read_file", {"path": "innocent/id_ed25519"}),
        ("read_file", {"path": "~/.ssh/id_ed25519"}),
        ("write_file", {"path": "innocent/authorized_keys", "content": "ssh-ed25519 AAAA"}),
        ("edit_file", {"path": "innocent/id_ed25519", "old_string": "PRIVATE", "new_string": ""}),
        ("list_files", {"path": "innocent"}),
    ]
    for name, args in calls:
        result = await h.call(name, args)
        assert result.is_error and "protected path" in result.text, (name, args)
        assert "PRIVATE KEY" not in result.text
    assert (fake_home / ".ssh" / "id_ed25519").read_text() == "PRIVATE KEY"
    assert not (fake_home / ".ssh" / "authorized_keys").exists()


async def test_nul_bytes_in_paths_are_refused(harness: Harness, workspace: Path) -> None:
    for name, args in [
        ("read_file", {"path": "a\x00b"}),
        ("write_file", {"path": "a\x00b", "content": "x"}),
        ("list_files", {"path": "a\x00"}),
    ]:
        result = await harness.call(name, args)
        assert result.is_error and "NUL byte" in result.text, name


async def test_tilde_expands_to_home(workspace: Path, fake_home: Path) -> None:
    h = make_harness(workspace)
    result = await h.call("read_file", {"path": "~/notes.txt"})
    assert not result.is_error and "from home" in result.text
    strict = make_harness(workspace, settings=SecuritySettings(workspace_only=True))
    refused = await strict.call("read_file", {"path": "~/notes.txt"})
    assert refused.is_error and "outside the workspace" in refused.text


async def test_ask_mode_without_approver_refuses_writes_but_reads(workspace: Path) -> None:
    (workspace / "a.txt").write_text("keep\n")
    h = make_harness(workspace, mode=ApprovalMode.ASK)
    write = await h.call("write_file", {"path": "b.txt", "content": "x"})
    assert write.is_error and "Error (PermissionDenied)" in write.text
    assert "--approval-mode" in write.text
    edit = await h.call("edit_file", {"path": "a.txt", "old_string": "keep", "new_string": "x"})
    assert edit.is_error and "--approval-mode" in edit.text
    assert not (workspace / "b.txt").exists() and (workspace / "a.txt").read_text() == "keep\n"
    read = await h.call("read_file", {"path": "a.txt"})
    assert not read.is_error and "keep" in read.text
    assert not (await h.call("list_files", {})).is_error


async def test_read_only_mode_refuses_writes(workspace: Path) -> None:
    h = make_harness(workspace, mode=ApprovalMode.READ_ONLY)
    result = await h.call("write_file", {"path": "b.txt", "content": "x"})
    assert result.is_error and "workspace-write" in result.text
    assert not (workspace / "b.txt").exists()


# -- write_file ------------------------------------------------------------------------------


async def test_write_creates_nested_parents(harness: Harness, workspace: Path) -> None:
    result = await harness.call(
        "write_file", {"path": "a/b/c/new.py", "content": "print('hi')\nx = 1\n"}
    )
    assert not result.is_error, result.text
    assert result.text == "Created a/b/c/new.py (18 bytes, 2 lines)."
    assert result.details["created"] is True
    # A new file's diff is all of it added (for the block; the model reads only the summary).
    assert result.details["diff"].startswith("--- /dev/null\n+++ b/a/b/c/new.py\n@@ -0,0 +1,2 @@")
    assert (workspace / "a/b/c/new.py").read_text() == "print('hi')\nx = 1\n"


async def test_write_overwrite_reports_a_diff(harness: Harness, workspace: Path) -> None:
    (workspace / "f.txt").write_text("one\ntwo\nthree\n")
    result = await harness.call("write_file", {"path": "f.txt", "content": "one\nTWO\nthree\n"})
    assert not result.is_error
    assert result.text.startswith("Overwrote f.txt (14 bytes, 3 lines; was 14 bytes): +1 -1")
    diff = result.details["diff"]
    assert diff.startswith("--- a/f.txt\n+++ b/f.txt\n@@ -1,3 +1,3 @@\n")
    assert "-two\n+TWO\n" in diff
    assert (workspace / "f.txt").read_text() == "one\nTWO\nthree\n"


async def test_write_same_content_and_unicode(harness: Harness, workspace: Path) -> None:
    text = "naïve café ✓ 🚀\n"
    first = await harness.call("write_file", {"path": "u.txt", "content": text})
    assert (workspace / "u.txt").read_bytes() == text.encode()
    assert f"({len(text.encode())} bytes" in first.text
    again = await harness.call("write_file", {"path": "u.txt", "content": text})
    assert "nothing written" in again.text and again.details["changed"] is False


async def test_write_to_a_directory_or_under_a_file_fails(
    harness: Harness, workspace: Path
) -> None:
    (workspace / "d").mkdir()
    (workspace / "f").write_text("x")
    onto_dir = await harness.call("write_file", {"path": "d", "content": "x"})
    assert onto_dir.is_error and "is a directory" in onto_dir.text
    under_file = await harness.call("write_file", {"path": "f/x.txt", "content": "x"})
    assert under_file.is_error and "existing file" in under_file.text


async def test_write_diff_for_a_big_file_keeps_true_line_numbers(
    harness: Harness, workspace: Path
) -> None:
    original = lines_of(100_000)
    (workspace / "big.txt").write_text(original)
    changed = original.replace("line 77777\n", "line seventy\n")
    result = await harness.call("write_file", {"path": "big.txt", "content": changed})
    assert "@@ -77774,7 +77774,7 @@" in result.details["diff"]
    assert "-line 77777\n+line seventy\n" in result.details["diff"]


# -- edit_file -------------------------------------------------------------------------------


async def test_edit_replaces_a_unique_match(harness: Harness, workspace: Path) -> None:
    (workspace / "app.py").write_text("def f():\n    retries = 3\n    return retries\n")
    result = await harness.call(
        "edit_file",
        {"path": "app.py", "old_string": "    retries = 3\n", "new_string": "    retries = 5\n"},
    )
    assert not result.is_error, result.text
    assert (workspace / "app.py").read_text() == "def f():\n    retries = 5\n    return retries\n"
    assert result.text.startswith("Edited app.py: replaced 1 occurrence (first at line 2); +1 -1")
    assert "     2\t    retries = 5" in result.text
    assert "-    retries = 3\n+    retries = 5\n" in result.details["diff"]


async def test_edit_not_found_hints_at_whitespace(harness: Harness, workspace: Path) -> None:
    (workspace / "app.py").write_text("def f():\n\treturn 1\n")
    result = await harness.call(
        "edit_file", {"path": "app.py", "old_string": "    return 1", "new_string": "return 2"}
    )
    assert result.is_error and "Error (InvalidArguments)" in result.text
    assert "old_string was not found in app.py" in result.text
    assert "indentation" in result.text and "at line 2" in result.text
    close = await harness.call(
        "edit_file", {"path": "app.py", "old_string": "def g():", "new_string": "def h():"}
    )
    assert "The closest line is line 1: 'def f():'" in close.text
    assert (workspace / "app.py").read_text() == "def f():\n\treturn 1\n"


async def test_edit_ambiguous_match_is_refused(harness: Harness, workspace: Path) -> None:
    (workspace / "a.txt").write_text("x = 1\ny = 2\nx = 1\nx = 1\n")
    result = await harness.call(
        "edit_file", {"path": "a.txt", "old_string": "x = 1", "new_string": "x = 9"}
    )
    assert result.is_error and "occurs 3 times" in result.text
    assert "at lines 1, 3, 4" in result.text and "replace_all" in result.text
    assert (workspace / "a.txt").read_text() == "x = 1\ny = 2\nx = 1\nx = 1\n"


async def test_edit_replace_all(harness: Harness, workspace: Path) -> None:
    (workspace / "a.txt").write_text("colour, colour\ncolour\n")
    result = await harness.call(
        "edit_file",
        {"path": "a.txt", "old_string": "colour", "new_string": "color", "replace_all": True},
    )
    assert not result.is_error and "replaced 3 occurrences" in result.text
    assert (workspace / "a.txt").read_text() == "color, color\ncolor\n"
    assert result.details["replacements"] == 3


async def test_edit_identical_or_empty_strings(harness: Harness, workspace: Path) -> None:
    (workspace / "a.txt").write_text("x\n")
    same = await harness.call("edit_file", {"path": "a.txt", "old_string": "x", "new_string": "x"})
    assert same.is_error and "identical" in same.text
    empty = await harness.call("edit_file", {"path": "a.txt", "old_string": "", "new_string": "y"})
    assert empty.is_error and "write_file" in empty.text


async def test_edit_keeps_crlf_and_final_newline(harness: Harness, workspace: Path) -> None:
    path = workspace / "win.txt"
    path.write_bytes(b"first\r\nsecond\r\nthird\r\n")
    result = await harness.call(
        "edit_file",
        {"path": "win.txt", "old_string": "second\nthird\n", "new_string": "2nd\nthree\nfour"},
    )
    assert not result.is_error, result.text
    assert path.read_bytes() == b"first\r\n2nd\r\nthree\r\nfour\r\n"
    assert "CRLF line endings kept" in result.text
    lf = workspace / "unix.txt"
    lf.write_bytes(b"a\nb\n")
    await harness.call("edit_file", {"path": "unix.txt", "old_string": "b\n", "new_string": "c"})
    assert lf.read_bytes() == b"a\nc\n"
    bare = workspace / "bare.txt"
    bare.write_bytes(b"no newline")
    await harness.call("edit_file", {"path": "bare.txt", "old_string": "no", "new_string": "a"})
    assert bare.read_bytes() == b"a newline"


async def test_edit_unicode_and_odd_bytes(harness: Harness, workspace: Path) -> None:
    path = workspace / "mixed.txt"
    path.write_bytes("ünïcode ✓\n".encode() + b"latin \xe9 byte\n")
    result = await harness.call(
        "edit_file", {"path": "mixed.txt", "old_string": "ünïcode ✓", "new_string": "🚀 done"}
    )
    assert not result.is_error, result.text
    assert path.read_bytes() == "🚀 done\n".encode() + b"latin \xe9 byte\n"


async def test_edit_missing_or_binary_file(harness: Harness, workspace: Path) -> None:
    missing = await harness.call(
        "edit_file", {"path": "nope.py", "old_string": "a", "new_string": "b"}
    )
    assert missing.is_error and "Error (NotFound)" in missing.text
    assert "use write_file" in missing.text
    (workspace / "b.bin").write_bytes(b"a\x00b")
    binary = await harness.call(
        "edit_file", {"path": "b.bin", "old_string": "a", "new_string": "c"}
    )
    assert binary.is_error and "binary" in binary.text


async def test_edit_keeps_the_file_mode(harness: Harness, workspace: Path) -> None:
    script = workspace / "run.sh"
    script.write_text("echo hi\n")
    script.chmod(0o755)
    await harness.call("edit_file", {"path": "run.sh", "old_string": "hi", "new_string": "yo"})
    assert script.read_text() == "echo yo\n" and os.stat(script).st_mode & 0o777 == 0o755


# -- list_files ------------------------------------------------------------------------------


@pytest.fixture(params=["python", "shell"])
def lister(request: pytest.FixtureRequest, workspace: Path) -> Harness:
    """list_files with each engine: Python's scandir and the `find` used for remote targets."""
    h = make_harness(workspace)
    h.registry.unregister("list_files")
    h.registry.register(ListFilesTool(engine=request.param))
    return h


def make_tree(root: Path) -> None:
    (root / "src" / "pkg" / "deep").mkdir(parents=True)
    (root / "src" / "main.py").write_text("print(1)\n")
    (root / "src" / "pkg" / "mod.py").write_text("x" * 2048)
    (root / "src" / "pkg" / "deep" / "hidden_by_depth.py").write_text("")
    (root / "README.md").write_text("# hi\n")
    (root / ".env.example").write_text("A=1\n")
    for skipped in ("node_modules/lib", ".git/objects", "__pycache__", ".venv/bin"):
        (root / skipped).mkdir(parents=True)
        (root / skipped / "junk").write_text("junk")
    (root / "link").symlink_to("src")


async def test_list_files_shows_a_bounded_tree(lister: Harness, workspace: Path) -> None:
    make_tree(workspace)
    result = await lister.call("list_files", {})
    assert not result.is_error, result.text
    lines = result.text.splitlines()
    assert lines[0] == "./ (depth 2): 6 folders, 3 files, 1 symlink"
    assert lines[1:] == [
        ".env.example  (4 B)",
        ".git/  (not listed)",
        ".venv/  (not listed)",
        "README.md  (5 B)",
        "__pycache__/  (not listed)",
        "link -> src",
        "node_modules/  (not listed)",
        "src/",
        "src/main.py  (9 B)",
        "src/pkg/",
    ]
    deeper = await lister.call("list_files", {"path": "src", "depth": 2})
    assert "pkg/mod.py  (2.0 KB)" in deeper.text and "pkg/deep/" in deeper.text
    assert "hidden_by_depth" not in deeper.text
    assert deeper.text.startswith("src/ (depth 2)")


async def test_list_files_caps_entries_shallowest_first(lister: Harness, workspace: Path) -> None:
    (workspace / "top.txt").write_text("")
    bulk = workspace / "bulk"
    bulk.mkdir()
    for i in range(1100):
        (bulk / f"f{i:04d}.txt").write_text("")
    result = await lister.call("list_files", {})
    assert len(result.text) <= 8000 and "full output" not in result.text
    header, *entries = result.text.splitlines()
    shown = len(entries)
    assert header == (
        f"./ (depth 2): 1 folder, 1101 files. Showing {shown}, shallowest first; "
        f"{1102 - shown} more not shown: list a subfolder or use a smaller depth"
    )
    # The top level is complete even though the alphabetically-earlier bulk/ is huge.
    assert entries[0] == "bulk/" and entries[-1] == "top.txt  (0 B)"
    assert entries[1] == "bulk/f0000.txt  (0 B)" and shown > 300
    assert result.details["entries"] == 1102 and result.details["shown"] == shown


def test_listing_entry_cap() -> None:
    scan = Scan([Entry(f"f{i}", "file", size=1) for i in range(1500)], complete=True)
    text, details = render_listing(scan, "x", 1, cap=1000, budget=10**9)
    assert details["shown"] == 1000 and "500 more not shown" in text.splitlines()[0]


async def test_list_files_errors(lister: Harness, workspace: Path) -> None:
    (workspace / "file.txt").write_text("x")
    (workspace / "docs").mkdir()
    not_dir = await lister.call("list_files", {"path": "file.txt"})
    assert not_dir.is_error and "use read_file" in not_dir.text
    missing = await lister.call("list_files", {"path": "doc"})
    assert missing.is_error and "NotFound" in missing.text and "docs" in missing.text
    empty = await lister.call("list_files", {"path": "docs"})
    assert not empty.is_error and "(empty folder)" in empty.text
    too_deep = await lister.call("list_files", {"depth": 50})
    assert too_deep.is_error and "depth" in too_deep.text


async def test_list_files_names_odd_characters(lister: Harness, workspace: Path) -> None:
    (workspace / "with space.txt").write_text("")
    (workspace / "tab\there.txt").write_text("")
    (workspace / "ünï.txt").write_text("")
    result = await lister.call("list_files", {})
    assert "with space.txt  (0 B)" in result.text
    assert "tab\there.txt  (0 B)" in result.text and "ünï.txt" in result.text


# -- contract and properties -----------------------------------------------------------------


def test_file_tools_declare_their_permissions_and_document_every_field(
    harness: Harness,
) -> None:
    expected = {
        "read_file": "read-only",
        "list_files": "read-only",
        "write_file": "workspace-write",
        "edit_file": "workspace-write",
    }
    for name, permission in expected.items():
        tool = harness.registry.get(name)
        assert tool is not None and tool.permission.value == permission
        for field_name, field in tool.Params.model_fields.items():
            assert field.description, f"{name}.{field_name}"


@settings(max_examples=60, deadline=None)
@given(
    lines=st.lists(
        st.text(
            alphabet=st.characters(exclude_characters="\n\r\x00\ufeff", codec="utf-8"),
            max_size=60,
        )
    ),
    limit=st.integers(min_value=1, max_value=7),
    budget=st.integers(min_value=20, max_value=400),
)
def test_paging_visits_every_line_exactly_once(lines: list[str], limit: int, budget: int) -> None:
    data = "".join(line + "\n" for line in lines).encode()
    seen: list[str] = []
    offset = 1
    while lines:
        page = page_text(data, offset, limit, budget, "f")
        body = page.text.rsplit("\n", 1)[0].split("\n")
        seen += [entry.split("\t", 1)[1] for entry in body]
        assert page.total_lines == len(lines)
        if page.next_offset is None:
            break
        assert page.next_offset == page.last + 1 > offset
        offset = page.next_offset
    assert seen == [line[:2000] for line in lines]
