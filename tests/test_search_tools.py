"""glob_search and grep_search on real trees, through the real registry, policy and backend.

Most tests run twice: with ripgrep and with the pure-Python fallback, which must agree.
"""

from __future__ import annotations

import os
import re
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Harness, make_harness
from tui.security.permissions import ApprovalMode
from tui.security.settings import SecuritySettings
from tui.tools.builtin.search.glob_search import GlobSearchTool
from tui.tools.builtin.search.globs import glob_regex
from tui.tools.builtin.search.grep_search import GrepSearchTool
from tui.tools.builtin.search.ripgrep import SearchEngine

HAVE_RG = shutil.which("rg") is not None
ENGINES = [
    pytest.param("rg", marks=pytest.mark.skipif(not HAVE_RG, reason="ripgrep not installed")),
    "python",
]


def with_engine(workspace: Path, engine: SearchEngine, **kwargs: Any) -> Harness:
    h = make_harness(workspace, **kwargs)
    for name in ("glob_search", "grep_search"):
        h.registry.unregister(name)
    h.registry.register(GlobSearchTool(engine=engine))
    h.registry.register(GrepSearchTool(engine=engine))
    return h


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest) -> SearchEngine:
    value: SearchEngine = request.param
    return value


@pytest.fixture
def h(workspace: Path, engine: SearchEngine) -> Harness:
    return with_engine(workspace, engine)


def write(root: Path, rel: str, text: str = "") -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def make_project(root: Path) -> None:
    write(root, "app.py", "import os\n\ndef main():\n    return load_config()\n")
    write(root, "src/config.py", "def load_config():\n    # TODO: cache\n    return {}\n")
    write(root, "src/util/strings.py", "def slug(s):\n    return s.lower()  # todo later\n")
    write(root, "src/util/strings_test.py", "from strings import slug\n")
    write(root, "docs/guide.md", "Call load_config() first.\nTODO: write more\n")
    write(root, ".github/workflows/ci.yml", "run: pytest  # load_config smoke\n")
    write(root, "build/out.py", "load_config = None\n")
    write(root, "debug.log", "load_config failed\n")
    write(root, "keep.log", "load_config kept\n")
    write(root, ".gitignore", "*.log\n!keep.log\nbuild/\n/top_only.txt\n")
    write(root, "top_only.txt", "load_config top\n")
    write(root, "src/top_only.txt", "load_config nested\n")
    write(root, "src/gen/.gitignore", "*.py\n")
    write(root, "src/gen/made.py", "load_config generated\n")
    for junk in (
        "node_modules/pkg/index.js",
        ".venv/lib/site.py",
        "__pycache__/app.py",
        ".git/config",
    ):
        write(root, junk, "load_config junk\n")
    (root / "blob.bin").write_bytes(b"load_config\x00\x01\x02")


# -- glob_search -----------------------------------------------------------------------------


async def test_glob_recursive_respects_gitignore_and_skips(h: Harness, workspace: Path) -> None:
    make_project(workspace)
    result = await h.call("glob_search", {"pattern": "**/*.py"})
    assert not result.is_error, result.text
    assert result.text.splitlines() == [
        "4 files match `**/*.py` under . (sorted by path)",
        "app.py",
        "src/config.py",
        "src/util/strings.py",
        "src/util/strings_test.py",
    ]


async def test_glob_hidden_files_and_negated_ignores(h: Harness, workspace: Path) -> None:
    make_project(workspace)
    yml = await h.call("glob_search", {"pattern": "**/*.{yml,yaml}"})
    assert ".github/workflows/ci.yml" in yml.text
    logs = await h.call("glob_search", {"pattern": "*.log"})
    assert logs.text.splitlines()[1:] == ["keep.log"]
    txt = await h.call("glob_search", {"pattern": "**/top_only.txt"})
    assert txt.text.splitlines()[1:] == ["src/top_only.txt"]


async def test_glob_top_level_only_pattern_hints_at_recursion(h: Harness, workspace: Path) -> None:
    make_project(workspace)
    result = await h.call("glob_search", {"pattern": "*.md"})
    assert not result.is_error
    assert "`**/*.md` would match 1 file at any depth" in result.text
    assert "No files match `*.md` under ." in result.text


async def test_glob_literal_prefix_and_path(h: Harness, workspace: Path) -> None:
    make_project(workspace)
    prefixed = await h.call("glob_search", {"pattern": "src/util/*_test.py"})
    assert prefixed.text.splitlines()[1:] == ["src/util/strings_test.py"]
    assert "under src/util" in prefixed.text
    in_path = await h.call("glob_search", {"pattern": "**/s*.py", "path": "src"})
    assert in_path.text.splitlines()[1:] == ["src/util/strings.py", "src/util/strings_test.py"]


async def test_glob_sort_by_mtime(h: Harness, workspace: Path) -> None:
    now = time.time()
    for age, name in [(30, "old.txt"), (10, "new.txt"), (20, "mid.txt")]:
        path = write(workspace, name, "x")
        os.utime(path, (now - age, now - age))
    result = await h.call("glob_search", {"pattern": "*.txt", "sort": "mtime"})
    assert result.text.splitlines()[1:] == ["new.txt", "mid.txt", "old.txt"]
    assert "most recently modified first" in result.text


async def test_glob_caps_at_1000(h: Harness, workspace: Path) -> None:
    for i in range(1005):
        write(workspace, f"many/f{i:04d}.txt")
    result = await h.call("glob_search", {"pattern": "many/*.txt"})
    first = result.text.splitlines()[0]
    assert first == (
        "1005 files match `many/*.txt` under many (sorted by path); showing the first 1000, "
        "5 more not shown: narrow the pattern or the path"
    )
    assert result.details["matches"] == 1005 and result.details["shown"] == 1000
    # The registry cut the long list; the whole capped list is saved for paging.
    saved = Path(result.details["full_output_path"])
    lines = saved.read_text().splitlines()
    assert len(lines) == 1001 and lines[-1] == "many/f0999.txt"


async def test_glob_does_not_follow_symlinked_folders(h: Harness, workspace: Path) -> None:
    write(workspace, "real/a.py")
    (workspace / "alias").symlink_to("real")
    result = await h.call("glob_search", {"pattern": "**/*.py"})
    assert result.text.splitlines()[1:] == ["real/a.py"]


async def test_glob_errors(h: Harness, workspace: Path) -> None:
    write(workspace, "file.txt")
    missing = await h.call("glob_search", {"pattern": "*.py", "path": "nowhere"})
    assert missing.is_error and "NotFound" in missing.text
    not_dir = await h.call("glob_search", {"pattern": "*.py", "path": "file.txt"})
    assert not_dir.is_error and "must be a folder" in not_dir.text
    bad = await h.call("glob_search", {"pattern": "src/{a,b"})
    assert bad.is_error and "InvalidArguments" in bad.text and "'}'" in bad.text
    empty = await h.call("glob_search", {"pattern": ""})
    assert empty.is_error and "pattern" in empty.text
    extra = await h.call("glob_search", {"pattern": "*", "bogus": True})
    assert extra.is_error and "bogus: unknown argument" in extra.text


async def test_glob_escapes_are_refused(
    workspace: Path, engine: SearchEngine, tmp_path: Path
) -> None:
    write(tmp_path, "outside/secret.py")
    (workspace / "link").symlink_to(tmp_path / "outside")
    h = with_engine(workspace, engine, settings=SecuritySettings(workspace_only=True))
    for args in [
        {"pattern": "../outside/*.py"},
        {"pattern": f"{tmp_path}/outside/*.py"},
        {"pattern": "*.py", "path": ".."},
        {"pattern": "link/*.py"},
    ]:
        result = await h.call("glob_search", args)
        assert result.is_error and "PermissionDenied" in result.text, args
        assert "secret.py" not in result.text.split("outside the workspace")[-1]


# -- grep_search -----------------------------------------------------------------------------


async def test_grep_content_with_line_numbers(h: Harness, workspace: Path) -> None:
    make_project(workspace)
    result = await h.call("grep_search", {"pattern": r"load_config\(\)"})
    assert not result.is_error, result.text
    assert result.text == (
        "3 matching lines in 3 files for `load_config\\(\\)` under .:\n\n"
        "app.py\n4:    return load_config()\n\n"
        "docs/guide.md\n1:Call load_config() first.\n\n"
        "src/config.py\n1:def load_config():"
    )


async def test_grep_skips_ignored_binary_and_junk(h: Harness, workspace: Path) -> None:
    make_project(workspace)
    result = await h.call(
        "grep_search", {"pattern": "load_config", "output_mode": "files_with_matches"}
    )
    assert result.text.splitlines() == [
        "6 files under . contain `load_config`:",
        ".github/workflows/ci.yml",
        "app.py",
        "docs/guide.md",
        "keep.log",
        "src/config.py",
        "src/top_only.txt",
    ]
    names = result.text.splitlines()[1:]
    for hidden in (
        "build/out.py",
        "debug.log",
        "src/gen/made.py",
        "blob.bin",
        "node_modules/pkg/index.js",
        ".venv/lib/site.py",
        "__pycache__/app.py",
        ".git/config",
    ):
        assert hidden not in names, hidden
    assert {"keep.log", ".github/workflows/ci.yml", "src/top_only.txt"} <= set(names)
    # The root-anchored /top_only.txt only ignores the top-level one.
    assert "top_only.txt" not in names


async def test_grep_context_and_separators(h: Harness, workspace: Path) -> None:
    write(
        workspace,
        "f.txt",
        "".join(f"l{i}\n" for i in range(1, 21)).replace("l5\n", "hit\n").replace("l15\n", "hit\n"),
    )
    result = await h.call("grep_search", {"pattern": "^hit$", "context": 2})
    assert result.text.split("\n\n", 1)[1] == (
        "f.txt\n3-l3\n4-l4\n5:hit\n6-l6\n7-l7\n--\n13-l13\n14-l14\n15:hit\n16-l16\n17-l17"
    )


async def test_grep_modes_and_flags(h: Harness, workspace: Path) -> None:
    make_project(workspace)
    counts = await h.call(
        "grep_search", {"pattern": "todo", "case_insensitive": True, "output_mode": "count"}
    )
    assert counts.text.splitlines() == [
        "3 matching lines in 3 files under .:",
        "docs/guide.md: 1",
        "src/config.py: 1",
        "src/util/strings.py: 1",
    ]
    sensitive = await h.call("grep_search", {"pattern": "todo", "output_mode": "count"})
    assert sensitive.text.splitlines()[1:] == ["src/util/strings.py: 1"]
    literal = await h.call(
        "grep_search",
        {"pattern": "load_config()", "fixed_strings": True, "output_mode": "files_with_matches"},
    )
    assert literal.text.splitlines()[1:] == ["app.py", "docs/guide.md", "src/config.py"]


async def test_grep_glob_filters(h: Harness, workspace: Path) -> None:
    make_project(workspace)
    py = await h.call(
        "grep_search",
        {"pattern": "load_config", "glob": "*.py", "output_mode": "files_with_matches"},
    )
    assert py.text.splitlines()[1:] == ["app.py", "src/config.py"]
    assert "in files matching `*.py`" in py.text
    anchored = await h.call(
        "grep_search",
        {"pattern": "def", "glob": "util/*.py", "path": "src", "output_mode": "files_with_matches"},
    )
    assert anchored.text.splitlines()[1:] == ["src/util/strings.py"]
    excluded = await h.call(
        "grep_search",
        {
            "pattern": "load_config",
            "glob": "!*.{md,yml,log,txt}",
            "output_mode": "files_with_matches",
        },
    )
    assert excluded.text.splitlines()[1:] == ["app.py", "src/config.py"]


async def test_grep_max_results_says_more_exist(h: Harness, workspace: Path) -> None:
    write(workspace, "a.txt", "".join(f"match {i}\n" for i in range(50)))
    write(workspace, "b.txt", "match b\n")
    result = await h.call("grep_search", {"pattern": "match", "max_results": 10})
    lines = result.text.splitlines()
    assert lines[0] == (
        "10 matching lines in 1 file for `match` under . (more exist: narrow the pattern, path "
        "or glob, or raise max_results):"
    )
    assert lines[-1] == "10:match 9" and result.details["more"] is True
    files = await h.call(
        "grep_search", {"pattern": "match", "max_results": 1, "output_mode": "files_with_matches"}
    )
    assert files.text.splitlines()[1:] == ["a.txt"] and "more exist" in files.text


async def test_grep_no_match_is_not_an_error(h: Harness, workspace: Path) -> None:
    write(workspace, "a.txt", "hello\n")
    result = await h.call("grep_search", {"pattern": "absent", "glob": "*.txt"})
    assert not result.is_error
    assert result.text == "No matches for `absent` under . in files matching `*.txt`."


async def test_grep_invalid_regex_is_an_argument_error(h: Harness, workspace: Path) -> None:
    write(workspace, "a.txt", "x\n")
    result = await h.call("grep_search", {"pattern": "foo(bar"})
    assert result.is_error and "Error (InvalidArguments)" in result.text
    assert "unclosed group" in result.text or "missing )" in result.text
    glob = await h.call("grep_search", {"pattern": "x", "glob": "[abc"})
    assert glob.is_error and "InvalidArguments" in glob.text


async def test_grep_single_file_unicode_and_long_lines(h: Harness, workspace: Path) -> None:
    write(workspace, "u.txt", "naïve café ✓\n" + "é" * 100 + "needle" + "x" * 2000 + "\n")
    accents = await h.call("grep_search", {"pattern": "café", "path": "u.txt"})
    assert accents.text.endswith("u.txt\n1:naïve café ✓")
    long = await h.call("grep_search", {"pattern": "needle", "path": "u.txt"})
    line = long.text.splitlines()[-1]
    assert line.startswith("2:" + "é" * 100 + "needle") and len(line) < 700
    assert "omitted" in line


async def test_grep_crlf_files(h: Harness, workspace: Path) -> None:
    (workspace / "w.txt").write_bytes(b"one\r\ntwo\r\n")
    result = await h.call("grep_search", {"pattern": "two"})
    assert result.text.endswith("w.txt\n2:two")


async def test_grep_missing_path_and_escapes(
    workspace: Path, engine: SearchEngine, tmp_path: Path
) -> None:
    write(tmp_path, "outside/secret.txt", "password\n")
    h = with_engine(workspace, engine, settings=SecuritySettings(workspace_only=True))
    missing = await h.call("grep_search", {"pattern": "x", "path": "nope"})
    assert missing.is_error and "NotFound" in missing.text
    for path in ["..", "../outside/secret.txt", str(tmp_path / "outside")]:
        result = await h.call("grep_search", {"pattern": "password", "path": path})
        assert result.is_error and "PermissionDenied" in result.text, path
        assert "password\n" not in result.text


async def test_grep_refuses_protected_paths(
    workspace: Path, engine: SearchEngine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    write(home, ".ssh/id_ed25519", "PRIVATE KEY\n")
    monkeypatch.setenv("HOME", str(home))
    h = with_engine(workspace, engine)
    (workspace / "innocent").symlink_to(home / ".ssh")
    for path in ["~/.ssh", "innocent", "innocent/id_ed25519"]:
        result = await h.call("grep_search", {"pattern": "PRIVATE", "path": path})
        assert result.is_error and "protected path" in result.text, path
        glob = await h.call("glob_search", {"pattern": "*", "path": path})
        assert glob.is_error and "protected path" in glob.text, path


async def test_searches_run_in_ask_mode(workspace: Path, engine: SearchEngine) -> None:
    write(workspace, "a.txt", "x\n")
    h = with_engine(workspace, engine, mode=ApprovalMode.ASK)
    assert not (await h.call("grep_search", {"pattern": "x"})).is_error
    assert not (await h.call("glob_search", {"pattern": "*"})).is_error


# -- both engines agree ----------------------------------------------------------------------

AGREEMENT_CASES: list[dict[str, Any]] = [
    {"pattern": "load_config"},
    {"pattern": "load_config", "context": 1},
    {"pattern": "return", "output_mode": "count"},
    {"pattern": "TODO", "case_insensitive": True, "output_mode": "files_with_matches"},
    {"pattern": "def \\w+", "glob": "**/*.py"},
    {"pattern": "o", "max_results": 3, "context": 1},
    {"pattern": "s", "path": "src"},
    {"pattern": "load_config", "glob": "src/gen/*.py"},
    {"pattern": "load_config", "glob": "!src/**"},
    {"pattern": "o", "glob": "!*.{md,py}", "output_mode": "count"},
    {"pattern": "return", "path": "src/config.py", "context": 5},
]
GLOB_AGREEMENT = ["**/*", "*", "src/**", "**/*.{py,md}", "**/.*", "**/[a-c]*", "*/*/*.py"]


@pytest.mark.skipif(not HAVE_RG, reason="ripgrep not installed")
@pytest.mark.parametrize("args", AGREEMENT_CASES)
async def test_ripgrep_and_python_agree(workspace: Path, args: dict[str, Any]) -> None:
    make_project(workspace)
    rg = await with_engine(workspace, "rg").call("grep_search", args)
    py = await with_engine(workspace, "python").call("grep_search", args)
    assert rg.text == py.text
    assert rg.details["engine"] == "ripgrep" and py.details["engine"] == "python"


@pytest.mark.skipif(not HAVE_RG, reason="ripgrep not installed")
@pytest.mark.parametrize("pattern", GLOB_AGREEMENT)
async def test_glob_engines_agree(workspace: Path, pattern: str) -> None:
    make_project(workspace)
    rg = await with_engine(workspace, "rg").call("glob_search", {"pattern": pattern})
    py = await with_engine(workspace, "python").call("glob_search", {"pattern": pattern})
    assert not rg.is_error and rg.text == py.text


async def test_a_path_glob_wins_over_gitignore_like_ripgrep(h: Harness, workspace: Path) -> None:
    make_project(workspace)
    named = await h.call("grep_search", {"pattern": "load_config", "glob": "made.py"})
    assert "No matches" in named.text
    pathed = await h.call("grep_search", {"pattern": "load_config", "glob": "src/gen/*.py"})
    assert pathed.text.endswith("src/gen/made.py\n1:load_config generated")
    pruned = await h.call(
        "grep_search",
        {"pattern": "load_config", "glob": "!src/**", "output_mode": "files_with_matches"},
    )
    assert not [name for name in pruned.text.splitlines()[1:] if name.startswith("src/")]


async def test_auto_engine_falls_back_without_ripgrep(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(workspace, "a.txt", "needle\n")
    monkeypatch.setattr(shutil, "which", lambda name, *args, **kwargs: None)
    h = make_harness(workspace)
    grep = await h.call("grep_search", {"pattern": "needle"})
    assert not grep.is_error and grep.details["engine"] == "python"
    glob = await h.call("glob_search", {"pattern": "*.txt"})
    assert glob.details["engine"] == "python" and "a.txt" in glob.text


@pytest.mark.skipif(not HAVE_RG, reason="ripgrep not installed")
async def test_auto_engine_uses_ripgrep_when_present(harness: Harness, workspace: Path) -> None:
    write(workspace, "a.txt", "needle\n")
    grep = await harness.call("grep_search", {"pattern": "needle"})
    assert grep.details["engine"] == "ripgrep"


# -- glob translation ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("glob", "path", "expected"),
    [
        ("*.py", "a.py", True),
        ("*.py", "d/a.py", False),
        ("**/*.py", "a.py", True),
        ("**/*.py", "d/e/a.py", True),
        ("src/**", "src/a/b", True),
        ("src/**", "src", False),
        ("a/**/b", "a/b", True),
        ("a/**/b", "a/x/y/b", True),
        ("?.txt", "ab.txt", False),
        ("[!a]*.txt", "b.txt", True),
        ("[!a]*.txt", "a.txt", False),
        ("*.{ts,tsx}", "x.tsx", True),
        ("{src,lib}/*.go", "lib/m.go", True),
        ("a+b(c).txt", "a+b(c).txt", True),
        (r"\*.txt", "*.txt", True),
        (r"\*.txt", "a.txt", False),
    ],
)
def test_glob_regex(glob: str, path: str, expected: bool) -> None:
    assert (re.fullmatch(glob_regex(glob), path) is not None) is expected
