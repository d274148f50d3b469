"""Shared fixtures: a real workspace on disk, the real policy, the real local backend."""

from __future__ import annotations

import collections
import gc
import itertools
import json
import os
import sys
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

pytest_plugins = ["tests.container_image"]
"""Podman images and containers, built once per session (only when a test asks for them)."""

_call_ids = itertools.count(1)

WORKERS_PER_CORE = 1.5
"""Test processes per processor for ``-n auto`` (every run's, from ``[tool.pytest.ini_options]``; a
run of one file stays in this process). Much of the suite waits on real processes (tmux, sshd,
podman, bubblewrap, Chromium, a scripted model server), so one process per core left the processors
idle half the time (a 2-core machine: 11 to 12 minutes, the processors 45 % busy); three on two
cores take about 8, and the app's own tests, which compute, still pass as they do alone. Two per
core kept both processors busy all the time (7 to 8 minutes), and then tests with a deadline (a
fresh prompt within 2 s of a Ctrl-C, Chromium starting) failed now and then.
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
    """The minute-long tests (``slow``) early: with each worker handed its next test when it
    is free (``--dist load --maxschedchunk 1``), they overlap each other and the many short
    tests fill in around them, instead of one starting last and holding up the end of the run.

    One of each file's first, then the rest spread over the first half of the run, one where a
    file's other tests end (a file's tests stay together, and with them its shared servers).
    Kept in a row, the sandbox corpus's twenty (each waiting out commands that only end at
    their timeout) had every worker waiting at once and the processors a third idle."""
    slow = [item for item in items if item.get_closest_marker("slow") is not None]
    if not slow:
        return
    rest = [item for item in items if item.get_closest_marker("slow") is None]
    by_file: dict[str, list[pytest.Item]] = {}
    for item in slow:
        by_file.setdefault(item.nodeid.split("::", 1)[0], []).append(item)
    rounds = itertools.zip_longest(*by_file.values())
    first = [item for item in next(rounds) if item is not None]
    later = [item for round_ in rounds for item in round_ if item is not None]
    ends = [i + 1 for i in range(len(rest) - 1) if rest[i].path != rest[i + 1].path]
    ends = [end for end in ends if end <= len(rest) // 2] or [len(rest)]
    step = max(1, len(ends) // max(1, len(later)))
    at = collections.Counter(ends[min(i * step, len(ends) - 1)] for i in range(len(later)))
    ordered = [*first]
    pending = iter(later)
    for i, item in enumerate(rest):
        ordered.extend(itertools.islice(pending, at[i]))
        ordered.append(item)
    ordered.extend(pending)
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
