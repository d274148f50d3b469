"""Shared fixtures: a real workspace on disk, the real policy, the real local backend."""

from __future__ import annotations

import gc
import itertools
import json
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tui.events import Event
from tui.exec.backend import ExecutionBackend
from tui.exec.local import LocalBackend
from tui.security.permissions import ApprovalMode
from tui.security.policy import SecurityPolicy
from tui.security.settings import SecuritySettings
from tui.tools.builtin.catalog import builtin_tools
from tui.tools.context import ToolContext
from tui.tools.registry import ToolRegistry
from tui.tools.result import ToolResult

# The suite starts agent-tui and Python helpers hundreds of times: without byte-code caches
# each start compiles the package anew (0.3 s of processor time), so they are written here
# even where the environment asks Python not to (a checkout ignores ``__pycache__``).
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False

# The shells the tests start in tmux panes (as root here, as ``atui-test`` over SSH: see
# ``tests/sshd.py``) write no history file: test processes running side by side would rewrite
# the same ``~/.bash_history``, which every sandbox hides, while another's bwrap mounts over it.
# (agent-tui survives that too: ``test_a_pane_whose_sandbox_met_a_hidden_file_mid_rewrite_…``.)
os.environ["HISTFILE"] = "/dev/null"

# No warm processes (``tui.warm``) outside the tests that are about them: a test that runs the
# same ``-p`` command three times would otherwise leave one behind for ten minutes, and the
# tests of the ordinary start (sending ahead, what start-up imports) would meet a warm one.
os.environ["AGENT_TUI_AGENT__WARM_START"] = "false"

# Hypothesis keeps its examples outside the checkout: its ``.hypothesis`` folder appearing in
# the checkout's root mid-run changes that folder's time, which is on agent-tui's search path
# and so in a warm process's key; a warm-start test running across that moment would meet a
# changed key (as it should: it is how a changed install is told apart).
os.environ.setdefault(
    "HYPOTHESIS_STORAGE_DIRECTORY",
    os.path.join(tempfile.gettempdir(), f"agent-tui-tests-hypothesis-{os.getuid()}"),
)

pytest_plugins = ["tests.container_image"]
"""Podman images and containers, built once per session (only when a test asks for them)."""

_call_ids = itertools.count(1)

WORKERS_PER_CORE = 2
"""Test processes per processor for ``-n auto`` (every run's, from ``[tool.pytest.ini_options]``; a
run of one file stays in this process). Much of the suite waits on real processes (tmux, sshd,
podman, bubblewrap, Chromium, a scripted model server), so one process per core left the processors
idle half the time (a 2-core machine: 11 to 12 minutes). Handed out one test at a time in file
order (``--dist load``), every worker was often in the same file: two per core then had tests
with a deadline (a fresh prompt within 2 s of a Ctrl-C, Chromium starting) fail now and then, and
three on two cores left a fifth of the processors idle whenever that file mostly waited (6:45 on a
quiet 2-core machine). Each worker working through its own share of the files (``--dist
worksteal``, shares set by ``pytest_collection_modifyitems``) keeps the waiting files apart: four
on two cores keep both busy (idle 10 %, 5:48 on the same machine), with no deadline missed in
its runs so far.
``PYTEST_XDIST_AUTO_NUM_WORKERS`` or ``-n N`` overrides it; ``-n 0`` runs everything in this
process."""
MAX_WORKERS = 8


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """How many test processes ``-n auto`` starts: ``WORKERS_PER_CORE`` per processor this
    process may use (at least one), but no more than the run names test files, and none for a
    single file (a worker costs about 3 s of processor time to start, more than most files
    take to run)."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None  # xdist's own hook reads it
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    files = named_test_files(config)
    per_cores = max(1, int(WORKERS_PER_CORE * (cores or 1)))
    return 0 if files <= 1 else min(MAX_WORKERS, per_cores, files)


def pytest_collection_finish(session: pytest.Session) -> None:
    """What the imports built (every module, model and table: several hundred thousand
    objects) is set aside from the collector: each full collection would walk it again, and
    in the app's tests those took a fifth of the processor time."""
    gc.freeze()


@pytest.fixture(autouse=True)
def textual_style_caches() -> Iterator[None]:
    """Textual memoizes ``StylesCache.get_inner_outer`` with ``lru_cache`` on the instance, so
    the last 1,024 widgets' style caches and every line they rendered outlive their apps (in a
    test process, some 20,000 lines and 150,000 caches that each full collection walks).
    Emptied after each test that loaded Textual."""
    yield
    styles_cache = sys.modules.get("textual._styles_cache")
    if styles_cache is not None:
        styles_cache.StylesCache.get_inner_outer.cache_clear()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The minute-long tests (``slow``) dealt out evenly, at the head of each worker's share.

    ``--dist worksteal`` hands each worker one contiguous share of the run (the first quarter,
    the second, ...) and, when one runs dry, moves the tail of the longest queue to it. So each
    share starts with its part of the slow tests, dealt round-robin (a file's slow tests go to
    every worker, not one), and they run early, beside the other workers' short ones; a share
    is otherwise whole files in a row, and four workers are in four different corners of the
    suite at any moment: a file that mostly waits (real sshd, podman, model-server faults) no
    longer has every worker waiting on it at once. With ``-n 0`` the order is left alone."""
    lanes = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    slow = [item for item in items if item.get_closest_marker("slow") is not None]
    if not slow or lanes < 2:
        return
    rest = [item for item in items if item.get_closest_marker("slow") is None]
    share = len(items) / lanes
    ordered: list[pytest.Item] = []
    taken = 0
    for lane in range(lanes):
        ordered.extend(slow[lane::lanes])
        want = max(0, round((lane + 1) * share) - len(ordered))
        ordered.extend(rest[taken : taken + want])
        taken += want
    ordered.extend(rest[taken:])
    items[:] = ordered


def named_test_files(config: pytest.Config) -> int:
    """The test files a run's arguments name (a folder counts its ``test_*.py``)."""
    found: set[Path] = set()
    for arg in config.args:
        path = Path(arg.split("::", 1)[0])
        if not path.is_absolute():
            path = config.invocation_params.dir / path
        found.update(path.rglob("test_*.py") if path.is_dir() else [path])
    return len(found)


@pytest.fixture(autouse=True)
def isolated_dirs(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No test writes into the real user's config or data folders."""
    home = tmp_path_factory.mktemp("agent-home")
    monkeypatch.setenv("AGENT_TUI_CONFIG_DIR", str(home / "config"))
    monkeypatch.setenv("AGENT_TUI_DATA_DIR", str(home / "data"))


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root.resolve()


class Harness:
    """A registry wired exactly as the app wires it, plus the events each call produced."""

    def __init__(
        self,
        workspace: Path,
        policy: SecurityPolicy,
        registry: ToolRegistry,
        backend: ExecutionBackend,
    ) -> None:
        self.workspace = workspace
        self.policy = policy
        self.registry = registry
        self.backend = backend
        self.events: list[Event] = []
        policy.on_event = self.events.append

    def context(self, tool_name: str, call_id: str | None = None) -> ToolContext:
        return ToolContext(
            tool_call_id=call_id or f"call_{next(_call_ids)}",
            tool_name=tool_name,
            backend=self.backend,
            policy=self.policy,
            on_update=self.events.append,
        )

    async def call(
        self,
        name: str,
        arguments: dict[str, Any] | str | None = None,
        ctx: ToolContext | None = None,
        *,
        metadata: bool = True,
    ) -> ToolResult:
        """Call ``name`` through the real registry. A dict for one of the tools that require
        Buddy's safety metadata gets what a well-behaved model sends with it where it lacks
        it (``with_metadata``), so a test about something else need not spell it out;
        ``metadata=False`` sends the arguments exactly as given."""
        if isinstance(arguments, dict) and metadata:
            arguments = with_metadata(name, arguments)
        raw = (
            arguments if isinstance(arguments, str) or arguments is None else json.dumps(arguments)
        )
        return await self.registry.execute(name, raw, ctx or self.context(name))

    def kinds(self) -> list[str]:
        return [getattr(event, "kind", "?") for event in self.events]


METADATA_TOOLS = frozenset(
    {
        "run_shell",
        "tmux_send_keys",
        "tmux_create_session",
        "tmux_kill_session",
        "tmux_create_pane",
        "tmux_kill_pane",
    }
)
"""The tools whose schema requires Buddy's risk, mutation, privesc and why."""


def with_metadata(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """``arguments`` with the safety metadata a model sends for ``name`` where it is missing
    (risk low, no mutation, no privesc, a reason). The computed risk decides, never these."""
    if name not in METADATA_TOOLS:
        return arguments
    defaults = {"risk": "low", "mutation": False, "privesc": False, "why": "a test asks for it"}
    return {**defaults, **arguments}


def make_harness(
    workspace: Path,
    *,
    mode: ApprovalMode = ApprovalMode.FULL_AUTO,
    settings: SecuritySettings | None = None,
    backend: ExecutionBackend | None = None,
    **policy_kwargs: Any,
) -> Harness:
    """The app's wiring around ``workspace``; ``backend`` defaults to a LocalBackend there."""
    policy = SecurityPolicy(workspace, settings, approval_mode=mode, **policy_kwargs)
    backend = backend or LocalBackend(default_cwd=str(workspace))
    policy.follow_shell(backend.shell_cwd)  # as the session does
    return Harness(workspace, policy, ToolRegistry(builtin_tools(backend)), backend)


@pytest.fixture
def harness(workspace: Path) -> Iterator[Harness]:
    yield make_harness(workspace)
