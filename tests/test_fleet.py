"""A fleet of twenty real OpenSSH servers driven from one session, through the real path.

Each host is its own ``sshd`` on its own loopback address (127.0.0.2 …) with its own host key;
the inventory is an Ansible INI file (groups, ``children``, ranges) read by ansible-core; two
hosts are reached only through an ``~/.ssh/config`` alias. Every call goes through the
registry, the fleet policy and each host's own bwrap sandbox, as the app's calls do.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncssh
import pytest

from tests.conftest import with_metadata
from tests.fleet_support import CACHE, DB, NAMES, WEB, FleetLab, known_hosts_lines, lab_for_module
from tests.sandbox_support import SKIP_REASON, bwrap_works
from tui.config import load_settings
from tui.events import (
    ApprovalAnswer,
    ApprovalDecision,
    ApprovalRequested,
    Event,
    FanoutHostUpdate,
    FleetHostState,
    ToolCallStarted,
    ToolOutputChunk,
)
from tui.exec.sandbox.remote import RemoteSandbox
from tui.fleet_target import open_fleet
from tui.security.approval import CallbackApprover
from tui.session import AgentSession
from tui.targets import TargetChoice
from tui.tools.context import ToolContext
from tui.tools.result import ToolResult
from tui.wiring import build_session

pytestmark = [
    pytest.mark.skipif(not bwrap_works(), reason=SKIP_REASON),
    pytest.mark.timeout(300),
]

Answer = Callable[[ApprovalRequested], Awaitable[ApprovalAnswer]]
DEADLINE = 30.0


@pytest.fixture(scope="module")
def lab() -> Iterator[FleetLab]:
    yield from lab_for_module(20)


@pytest.fixture(autouse=True)
def _home(lab: FleetLab, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """``~/.ssh/config`` is the lab's (its aliases); servers a test killed come back."""
    monkeypatch.setenv("HOME", str(lab.home))
    yield
    lab.revive()


async def _never(request: ApprovalRequested) -> ApprovalAnswer:
    raise AssertionError(f"nobody should be asked here: {request.reason}")


@dataclass
class Fleetside:
    """A session on the lab's fleet, built as ``agent-tui --inventory FILE`` builds one."""

    session: AgentSession
    events: list[Event] = field(default_factory=list)
    asked: list[ApprovalRequested] = field(default_factory=list)
    calls: int = 0

    @property
    def fleet(self) -> Any:
        assert self.session._fleet is not None
        return self.session._fleet

    async def call(self, tool: str, arguments: dict[str, Any]) -> ToolResult:
        self.calls += 1
        ctx = ToolContext(
            f"call{self.calls}",
            tool,
            self.session._backend,
            self.session._policy,
            on_update=self.events.append,
        )
        arguments = with_metadata(tool, arguments)
        return await self.session._registry.execute(tool, json.dumps(arguments), ctx)

    def updates(self, call: int | None = None) -> list[FanoutHostUpdate]:
        wanted = f"call{call or self.calls}"
        return [
            e for e in self.events if isinstance(e, FanoutHostUpdate) and e.tool_call_id == wanted
        ]

    def final(self, call: int | None = None) -> dict[str, FanoutHostUpdate]:
        return {u.host: u for u in self.updates(call) if u.status not in ("queued", "running")}


@pytest.fixture
async def open_fleet_session(
    lab: FleetLab, tmp_path: Path
) -> AsyncIterator[Callable[..., Awaitable[Fleetside]]]:
    made: list[Fleetside] = []

    async def make(
        config: str = "",
        answer: Answer = _never,
        *,
        limit: str | None = None,
        mode: str | None = None,
        known_hosts: Path | None = None,
    ) -> Fleetside:
        from tui.locations import config_dir

        config_dir().mkdir(parents=True, exist_ok=True)
        text = lab.config_toml(config)
        if known_hosts is not None:
            text = text.replace(str(lab.known_hosts), str(known_hosts))
        (config_dir() / "config.toml").write_text(text)
        here = tmp_path / f"here{len(made)}"
        here.mkdir()
        loaded = load_settings(here, overrides={"approval": {"mode": mode}})
        choice = TargetChoice(inventory=str(lab.inventory), tmux=False, limit=limit)
        target = await open_fleet(choice, loaded.settings, Path(lab.workspace), interactive=False)
        side = Fleetside(session=None)  # type: ignore[arg-type]

        async def asking(request: ApprovalRequested) -> ApprovalAnswer:
            side.asked.append(request)
            return await answer(request)

        side.session = build_session(
            target.workspace,
            loaded,
            approver_factory=lambda bus: CallbackApprover(asking),
            target=target,
        )
        side.session._bus.add_listener(side.events.append)
        made.append(side)
        return side

    yield make
    for side in made:
        await side.session.aclose()


async def _clean_workspace(side: Fleetside) -> None:
    """Files the writing tests leave: removed from outside any sandbox, on the default host."""
    from tui.security.confinement import OUTSIDE

    await side.session._backend.run("rm -rf ./w-* ./lock ./notes", confinement=OUTSIDE)


# -- the inventory and the hosts ------------------------------------------------------------


async def test_inventory_groups_ranges_and_aliases_reach_all_twenty_hosts(
    open_fleet_session: Callable[..., Awaitable[Fleetside]],
) -> None:
    side = await open_fleet_session()
    fleet = side.fleet
    assert list(fleet.inventory.hosts) == NAMES
    assert fleet.inventory.select("prod") == [*WEB, *DB]
    assert fleet.inventory.select("staging") == CACHE
    assert fleet.inventory.select("web[0:2]:&prod") == WEB[:3]
    # Lazily: only the default host is open before a call names the others.
    assert [name for name in NAMES if fleet.opened(name)] == ["web01"]
    result = await side.call("run_shell", {"command": "uname -s", "hosts": "all"})
    assert not result.is_error, result.text
    assert result.text.startswith("ran on 20 of 20 hosts matching 'all'")
    # Twenty identical answers are one group; db3 and db4 came through ~/.ssh/config aliases.
    assert "(20 hosts): exit 0" in result.text and result.text.count("Linux") == 1
    hosts = result.details["hosts"]
    assert {name: hosts[name]["status"] for name in NAMES} == dict.fromkeys(NAMES, "ok")
    for name in NAMES:
        saved = Path(hosts[name]["full_output_path"])
        assert saved.read_text() == "Linux\n" and name in saved.name
    # Every host got its own sandbox: the host list says the kernel stands behind it.
    states = {e.host: e for e in side.events if isinstance(e, FleetHostState)}
    assert {states[name].guard for name in NAMES} == {"kernel"}
    assert all(states[name].last_exit == 0 for name in NAMES)
    started = [e for e in side.events if isinstance(e, ToolCallStarted)][-1]
    assert started.hosts == NAMES and started.actor == "fleet:all"
    assert started.sandbox == "sandbox: read-only, no network"


async def test_limit_keeps_the_hosts_its_pattern_selects(
    open_fleet_session: Callable[..., Awaitable[Fleetside]],
) -> None:
    side = await open_fleet_session(limit="db:cache-[a:b]:!db4")
    assert list(side.fleet.inventory.hosts) == ["db1", "db2", "db3", "cache-a", "cache-b"]
    result = await side.call("run_shell", {"command": "echo hi", "hosts": "all"})
    assert result.text.startswith("ran on 5 of 5 hosts"), result.text


async def test_a_read_only_fan_out_lists_each_host_and_groups_the_same_answers(
    open_fleet_session: Callable[..., Awaitable[Fleetside]],
) -> None:
    side = await open_fleet_session()
    command = 'if [ "$(id -un)" = atui-test ]; then uname -s; else exit 3; fi; uptime >/dev/null'
    result = await side.call("run_shell", {"command": command, "hosts": "web:db"})
    assert result.text.startswith("ran on 16 of 16 hosts"), result.text
    rows = side.final()
    assert set(rows) == {*WEB, *DB} and {row.status for row in rows.values()} == {"ok"}
    assert all(row.duration_ms > 0 and row.output == "Linux\n" for row in rows.values())
    # The live stream names the host on each line.
    lines = "".join(e.text for e in side.events if isinstance(e, ToolOutputChunk))
    assert re.search(r"^web07 +\| Linux$", lines, re.MULTILINE), lines[:500]


# -- writing, and the person's answer per host ---------------------------------------------


async def test_one_approval_for_a_writing_fan_out_and_only_the_hosts_allowed_run_it(
    open_fleet_session: Callable[..., Awaitable[Fleetside]], lab: FleetLab
) -> None:
    async def some(request: ApprovalRequested) -> ApprovalAnswer:
        return ApprovalAnswer(
            decision=ApprovalDecision.ALLOW_ONCE, hosts=["web02", "db1", "cache-c"]
        )

    side = await open_fleet_session(answer=some)
    await _clean_workspace(side)
    result = await side.call(
        "run_shell", {"command": "mktemp w-XXXXXXXX >/dev/null && echo wrote", "hosts": "all"}
    )
    assert len(side.asked) == 1
    request = side.asked[0]
    assert request.host_pattern == "all" and [h.name for h in request.hosts] == NAMES
    assert {h.state for h in request.hosts} == {"ask"}
    groups: dict[str, int] = {}
    for host in request.hosts:
        for group in host.groups:
            groups[group] = groups.get(group, 0) + 1
    assert groups == {"web": 12, "prod": 16, "db": 4, "cache": 4, "staging": 4}
    assert request.segments and request.segments[0].text.startswith("mktemp")
    assert "20 hosts:" in request.reason
    rows = side.final()
    assert {name for name, row in rows.items() if row.status == "ok"} == {"web02", "db1", "cache-c"}
    refused = {name for name, row in rows.items() if row.status == "refused"}
    assert refused == set(NAMES) - {"web02", "db1", "cache-c"}
    assert "did not allow it on this host" in rows["web05"].output
    listing = await side.session._backend.run("ls -1 | grep -c '^w-'")
    assert listing.stdout.strip() == "3"
    assert "ran on 3 of 20 hosts" in result.text


async def test_a_no_runs_it_nowhere(
    open_fleet_session: Callable[..., Awaitable[Fleetside]],
) -> None:
    async def no(request: ApprovalRequested) -> ApprovalAnswer:
        return ApprovalAnswer.deny("not today")

    side = await open_fleet_session('[fleet.groups.staging]\napproval_mode = "full-auto"\n', no)
    await _clean_workspace(side)
    result = await side.call("run_shell", {"command": "mktemp w-XXXXXXXX", "hosts": "all"})
    assert result.is_error and "not today" in result.text
    # The staging hosts would have run it unasked: a no stops those too.
    assert [h.name for h in side.asked[0].hosts if h.state == "allowed"] == CACHE
    listing = await side.session._backend.run("ls -1 | grep -c '^w-' || true")
    assert listing.stdout.strip() == "0"


async def test_host_and_group_rules_blocked_hosts_and_scoped_grants(
    open_fleet_session: Callable[..., Awaitable[Fleetside]],
) -> None:
    config = (
        '[fleet]\nblocked = ["db4"]\n'
        "[fleet.groups.prod]\nalways_ask = true\n"
        '[fleet.groups.staging]\napproval_mode = "full-auto"\n'
        '[fleet.hosts.web12]\ndeny = ["run_shell(uname:*)"]\n'
    )
    answers: list[ApprovalAnswer] = [
        ApprovalAnswer(decision=ApprovalDecision.ALLOW_ALWAYS, grant_hosts="db"),
    ]

    async def answer(request: ApprovalRequested) -> ApprovalAnswer:
        return answers.pop(0)

    side = await open_fleet_session(config, answer)
    result = await side.call("run_shell", {"command": "uname -s", "hosts": "all"})
    request = side.asked[0]
    states = {h.name: h.state for h in request.hosts}
    # prod asks even for a read-only command; staging runs unasked; db4 is never touched;
    # web12's own deny list refuses it there.
    assert {n for n, s in states.items() if s == "ask"} == {*WEB[:11], *DB[:3]}
    assert {n for n, s in states.items() if s == "allowed"} == set(CACHE)
    assert states["db4"] == "refused" and states["web12"] == "refused"
    reasons = {h.name: h.reason for h in request.hosts}
    assert "blocked" in reasons["db4"] and "[fleet.hosts.web12]" not in reasons["web12"]
    assert "denied by the rule run_shell(uname:*)" in reasons["web12"]
    assert "always_ask" in request.reason
    assert side.fleet.opened("db4") is None and side.fleet.links["db4"].state == "blocked"
    rows = side.final()
    assert rows["db4"].status == "refused" and rows["web12"].status == "refused"
    assert sum(row.status == "ok" for row in rows.values()) == 18, result.text
    # The grant was scoped to the group db: db hosts no longer ask, web hosts still do.
    grants = [g for g in side.session._policy.grants.list() if g.hosts]
    assert [(str(g.rule), g.hosts) for g in grants] == [("run_shell(uname -s)", "db")]
    answers.append(ApprovalAnswer.allow_once())
    await side.call("run_shell", {"command": "uname -s", "hosts": "db:web01"})
    assert [h.name for h in side.asked[1].hosts if h.state == "ask"] == ["web01"]
    assert [h.name for h in side.asked[1].hosts if h.state == "allowed"] == DB[:3]


# -- failures: a dead host, a changed key, a hang ------------------------------------------


async def test_an_sshd_killed_mid_command_is_reported_and_the_others_finish(
    open_fleet_session: Callable[..., Awaitable[Fleetside]], lab: FleetLab
) -> None:
    side = await open_fleet_session(mode="full-auto")
    victim = "web03"
    call = asyncio.ensure_future(
        side.call("run_shell", {"command": "echo begun; sleep 3; echo done", "hosts": "web"})
    )
    deadline = time.monotonic() + DEADLINE
    while not any(
        isinstance(e, ToolOutputChunk) and e.text.startswith(f"{victim} ") for e in side.events
    ):
        assert time.monotonic() < deadline and not call.done(), "the victim never started"
        await asyncio.sleep(0.02)
    lab.kill(victim)
    result = await call
    rows = side.final()
    assert rows[victim].status == "dropped", result.text
    assert "lost the connection" in result.text
    assert {name for name, row in rows.items() if row.status == "ok"} == set(WEB) - {victim}
    assert all("begun\ndone" in rows[n].output for n in WEB if n != victim)
    host_state = [e for e in side.events if isinstance(e, FleetHostState) and e.host == victim]
    assert host_state[-1].state == "unreachable"
    # Back up: the next fan-out reconnects to it and says so, though the reconnect is made by
    # the sandbox's fresh look at the host's places, which runs first (as it does every
    # REFRESH seconds).
    opened = side.fleet.opened(victim)
    assert opened is not None and isinstance(opened.ssh.sandbox, RemoteSandbox)
    opened.ssh.sandbox.look_again()
    lab.revive()
    again = await side.call("run_shell", {"command": "echo back", "hosts": victim})
    assert side.final()[victim].status == "ok", again.text
    assert re.search(
        r"note \(web03\): reconnected to \S+ after the connection dropped", again.text
    ), again.text


async def test_a_host_whose_key_changed_is_refused_and_the_others_run(
    open_fleet_session: Callable[..., Awaitable[Fleetside]], lab: FleetLab, tmp_path: Path
) -> None:
    changed = "cache-b"
    others = [name for name in NAMES if name != changed]
    impostor = asyncssh.generate_private_key("ssh-ed25519")
    server = lab.servers[changed]
    algorithm, blob = impostor.export_public_key("openssh").decode().split()[:2]
    known = tmp_path / "known_hosts"
    known.write_text(
        known_hosts_lines(lab, others) + f"[{server.host}]:{server.port} {algorithm} {blob}\n"
    )
    side = await open_fleet_session(known_hosts=known)
    result = await side.call("run_shell", {"command": "echo ok", "hosts": "all"})
    rows = side.final()
    assert rows[changed].status == "refused" and "CHANGED" in rows[changed].output
    assert {n for n, row in rows.items() if row.status == "ok"} == set(others)
    assert "ran on 19 of 20 hosts" in result.text
    state = [e for e in side.events if isinstance(e, FleetHostState) and e.host == changed]
    assert state[-1].state == "unreachable" and "CHANGED" in state[-1].detail


async def test_a_host_that_hangs_past_the_timeout_is_reported_and_the_others_finish(
    open_fleet_session: Callable[..., Awaitable[Fleetside]],
) -> None:
    side = await open_fleet_session(mode="full-auto")
    await _clean_workspace(side)
    # The first host to make the folder hangs; the others see it there and answer at once.
    command = "if mkdir lock 2>/dev/null; then sleep 20; else echo quick; fi"
    started = time.monotonic()
    result = await side.call("run_shell", {"command": command, "hosts": "cache", "timeout": 2})
    assert time.monotonic() - started < 15
    rows = side.final()
    hung = [name for name, row in rows.items() if row.status == "timeout"]
    assert len(hung) == 1, result.text
    assert {n for n, row in rows.items() if row.status == "ok"} == set(CACHE) - set(hung)
    assert "TIMED OUT" in result.text and "still running after 2 s" in result.text


async def test_forks_bounds_the_hosts_worked_on_at_once(
    open_fleet_session: Callable[..., Awaitable[Fleetside]],
) -> None:
    side = await open_fleet_session("[fleet]\nforks = 3\n", mode="full-auto")
    await side.call("run_shell", {"command": "true", "hosts": "web[0:8]"})  # open them first
    command = "date +%s.%N; sleep 0.6; date +%s.%N"
    result = await side.call("run_shell", {"command": command, "hosts": "web[0:8]"})
    spans = []
    for row in side.final().values():
        begin, end = (float(line) for line in row.output.split())
        spans.append((begin, end))
    assert len(spans) == 9, result.text
    most = max(sum(1 for b, e in spans if b <= t < e) for t, _ in spans)
    assert most == 3, spans
    running = [e for e in side.events if isinstance(e, FleetHostState) and e.state == "running"]
    assert running


# -- file tools on a host, modes per group, a host the kernel does not guard -------------


async def test_file_tools_act_on_the_host_they_name(
    open_fleet_session: Callable[..., Awaitable[Fleetside]],
) -> None:
    side = await open_fleet_session(mode="auto-edit")
    await _clean_workspace(side)
    wrote = await side.call(
        "write_file", {"path": "notes/db2.txt", "content": "on db2\n", "host": "db2"}
    )
    assert not wrote.is_error, wrote.text
    assert side.fleet.opened("db2") is not None
    read = await side.call("read_file", {"path": "notes/db2.txt", "host": "cache-d"})
    assert "on db2" in read.text  # one file system under all the test hosts
    started = [e for e in side.events if isinstance(e, ToolCallStarted)]
    assert started[0].actor == "ssh:db2" and started[1].actor == "ssh:cache-d"
    unknown = await side.call("read_file", {"path": "x", "host": "nowhere"})
    assert unknown.is_error and "no host named 'nowhere'" in unknown.text


async def test_staging_edits_unasked_while_prod_asks(
    open_fleet_session: Callable[..., Awaitable[Fleetside]],
) -> None:
    async def yes(request: ApprovalRequested) -> ApprovalAnswer:
        return ApprovalAnswer.allow_once()

    config = '[fleet.groups.staging]\napproval_mode = "auto-edit"\n'
    side = await open_fleet_session(config, yes, mode="ask")
    await _clean_workspace(side)
    edit = {"path": "notes/staging.txt", "content": "x\n"}
    assert not (await side.call("write_file", {**edit, "host": "cache-b"})).is_error
    assert side.asked == []  # auto-edit on staging: a file edit in the workspace runs unasked
    assert not (await side.call("write_file", {**edit, "host": "web04"})).is_error
    assert len(side.asked) == 1 and side.asked[0].actor == "ssh:web04"
    assert "ask mode" in side.asked[0].reason


async def test_without_a_sandbox_every_host_says_only_the_rater_decides(
    open_fleet_session: Callable[..., Awaitable[Fleetside]],
) -> None:
    side = await open_fleet_session('[sandbox]\nmode = "off"\n')
    result = await side.call("run_shell", {"command": "echo plain", "hosts": "cache"})
    assert "(4 hosts): exit 0" in result.text
    states = {e.host: e for e in side.events if isinstance(e, FleetHostState)}
    assert {states[name].guard for name in CACHE} == {"rater"}
    queued = {u.host: u.sandbox for u in side.updates() if u.status == "queued"}
    assert queued == {name: f"no sandbox on {name}: the rater decides" for name in CACHE}
