"""The fleet's inventory: ansible-core reads the files, patterns select as Ansible's do.

Ansible's own ``InventoryManager`` is the reference: every pattern here is asked of it and of
``Inventory.select`` over the same file, and the answers must be the same hosts in the same
order. Then what an inventory may not do to us: run a script, evaluate a template, print
over the screen.
"""

from __future__ import annotations

import asyncio
import os
import stat
from pathlib import Path

import pytest

from tui.config import load_settings
from tui.exec.backend import BackendError
from tui.exec.fleet.ansible_inventory import InventoryError, load_ansible_inventory
from tui.exec.streams import OutputCollector, wait_for_end
from tui.fleet_target import load_inventory
from tui.security.fleet_rules import FleetRules
from tui.security.inventory import Inventory, InventoryHost, PatternError
from tui.security.permissions import ApprovalMode
from tui.security.trust_review import review_layer
from tui.targets import TargetChoice, target_choice

INI = """\
[web]
web[01:06] ansible_host=10.0.0.1

[db]
db[a:c]

[lb]
lb1 ansible_port=2222 ansible_user=ops

[prod:children]
web
db

[edge:children]
lb
prod

[edge:vars]
ansible_user=deploy
"""

YAML = """\
all:
  children:
    web:
      hosts:
        web[1:3]:
          ansible_port: 2201
    db:
      hosts:
        db1:
          ansible_host: 10.0.0.9
      vars:
        ansible_user: pg
    prod:
      children:
        web:
        db:
"""

PATTERNS = [
    "all",
    "*",
    "web",
    "web01",
    "web0[1-3]",
    "web*",
    "web:db",
    "web,db",
    "prod:!db",
    "prod:&web",
    "edge:!prod",
    "web[0]",
    "web[1:3]",
    "web[2:]",
    "web[-1]",
    "~web0[24]",
    "~^db",
    "db*:lb1",
    "&web",
    "!web",
    "web[0:1]:db[0]",
    "nothing",
    "lb1:nothing",
]


@pytest.fixture
def ini(tmp_path: Path) -> Path:
    path = tmp_path / "hosts.ini"
    path.write_text(INI)
    (tmp_path / "host_vars").mkdir()
    (tmp_path / "host_vars" / "dbb.yml").write_text("ansible_host: 10.0.0.22\nansible_port: 22\n")
    return path


def ansible_select(path: Path, pattern: str) -> list[str]:
    """What ``ansible PATTERN --list-hosts`` would list (ansible-core's own matcher)."""
    from ansible.inventory.manager import InventoryManager
    from ansible.parsing.dataloader import DataLoader

    manager = InventoryManager(loader=DataLoader(), sources=[str(path)])
    return [host.name for host in manager.list_hosts(pattern)]


ORDERED = {"web0[1-3]", "web[0]", "web[1:3]", "web[2:]", "web[-1]", "~web0[24]", "web:db"}
"""Patterns whose order ansible-core keeps from run to run (its ``all`` and its groups with
children follow string hashes): their order must be the same too, not only their hosts."""


@pytest.mark.parametrize("pattern", PATTERNS)
def test_patterns_select_what_ansible_selects(ini: Path, pattern: str) -> None:
    inventory, _ = load_ansible_inventory(ini)
    ours, theirs = inventory.select(pattern), ansible_select(ini, pattern)
    assert sorted(ours) == sorted(theirs) and len(ours) == len(set(ours))
    if pattern in ORDERED:
        assert ours == theirs


def test_ini_hosts_groups_children_and_vars(ini: Path) -> None:
    inventory, said = load_ansible_inventory(ini)
    assert sorted(inventory.hosts) == sorted(
        [*(f"web0{n}" for n in range(1, 7)), "dba", "dbb", "dbc", "lb1"]
    )
    assert list(inventory.hosts) == [  # the file's order, every run
        *(f"web0{n}" for n in range(1, 7)),
        "dba",
        "dbb",
        "dbc",
        "lb1",
    ]
    web = inventory.hosts["web03"]
    assert (web.address, web.port, web.user) == ("10.0.0.1", None, "deploy")
    assert set(web.groups) == {"web", "prod", "edge"}
    # host_vars/ beside the file, as Ansible reads them; host vars beat group vars.
    assert inventory.hosts["dbb"].target == "deploy@10.0.0.22:22"
    assert inventory.hosts["dba"].target == "deploy@dba"  # an alias for ~/.ssh/config
    assert inventory.hosts["lb1"].target == "ops@lb1:2222"
    assert inventory.groups["prod"] == [*(f"web0{n}" for n in range(1, 7)), "dba", "dbb", "dbc"]
    assert said == []


def test_yaml_inventory(tmp_path: Path) -> None:
    path = tmp_path / "hosts.yml"
    path.write_text(YAML)
    inventory, _ = load_ansible_inventory(path)
    assert list(inventory.hosts) == ["web1", "web2", "web3", "db1"]
    assert inventory.hosts["web2"].target == "web2:2201"
    assert inventory.hosts["db1"].target == "pg@10.0.0.9"
    assert inventory.select("prod:!web[0]") == ["web2", "web3", "db1"]


def test_a_template_is_refused_never_evaluated(tmp_path: Path) -> None:
    canary = tmp_path / "ran"
    path = tmp_path / "hosts.yml"
    path.write_text(
        "all:\n  hosts:\n    h1:\n      ansible_user: \"{{ lookup('pipe', 'touch "
        f"{canary}') }}\"\n"
    )
    with pytest.raises(InventoryError, match="is a template"):
        load_ansible_inventory(path)
    assert not canary.exists()


def test_an_executable_inventory_is_never_run(tmp_path: Path) -> None:
    canary = tmp_path / "ran"
    script = tmp_path / "inventory.py"
    script.write_text(f'#!/bin/sh\ntouch {canary}\necho \'{{"all": {{"hosts": ["x"]}}}}\'\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    with pytest.raises(InventoryError, match="cannot read inventory"):
        load_ansible_inventory(script)
    assert not canary.exists()


def test_a_repository_ansible_cfg_is_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An ``ansible.cfg`` where agent-tui starts cannot enable a plugin of its own."""
    (tmp_path / "ansible.cfg").write_text("[inventory]\nenable_plugins = script, ini\n")
    canary = tmp_path / "ran"
    script = tmp_path / "inv.sh"
    script.write_text(f'#!/bin/sh\ntouch {canary}\necho \'{{"all": {{"hosts": ["x"]}}}}\'\n')
    script.chmod(0o755)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InventoryError):
        load_ansible_inventory(script)
    assert not canary.exists()


def test_missing_or_broken_files_say_so(tmp_path: Path) -> None:
    with pytest.raises(InventoryError, match="is not a file"):
        load_ansible_inventory(tmp_path / "nope.ini")
    broken = tmp_path / "broken.yml"
    broken.write_text("all:\n  hosts: [unclosed\n")
    with pytest.raises(InventoryError, match="cannot read inventory"):
        load_ansible_inventory(broken)
    bad_port = tmp_path / "port.ini"
    bad_port.write_text("h1 ansible_port=eighty\n")
    with pytest.raises(InventoryError, match="not a number"):
        load_ansible_inventory(bad_port)


def test_bad_patterns_are_errors() -> None:
    inventory = Inventory.from_hosts([InventoryHost("a", "a"), InventoryHost("b", "b")])
    with pytest.raises(PatternError, match="invalid host pattern"):
        inventory.select("~(")
    with pytest.raises(PatternError, match="no hosts matched"):
        inventory.select("all[5]")
    with pytest.raises(PatternError, match="empty"):
        inventory.select("  ")
    assert inventory.select("c") == []


async def test_ssh_flags_and_limit_make_the_inventory(tmp_path: Path) -> None:
    loaded = load_settings(tmp_path)
    hosts = ["ops@a.example:2200", "b.example", "c.example", "a.example", "b.example"]
    args = _Args(ssh=hosts, limit="*.example:!c*")
    choice = target_choice(args)
    assert choice.wants_fleet and choice.fleet_ssh == args.ssh
    inventory, _ = await load_inventory(choice, loaded.settings)
    # A second target on a known host is told apart; the same target twice is one host.
    assert list(inventory.hosts) == ["a.example", "b.example"]
    unlimited, _ = await load_inventory(TargetChoice(fleet_ssh=hosts), loaded.settings)
    assert list(unlimited.hosts) == ["a.example", "b.example", "c.example", "a.example#4"]
    assert inventory.hosts["a.example"].target == "ops@a.example:2200"
    with pytest.raises(BackendError, match="matches no host"):
        await load_inventory(TargetChoice(fleet_ssh=["a", "b"], limit="z*"), loaded.settings)
    one = target_choice(_Args(ssh=["only.example"]))
    assert not one.wants_fleet and one.ssh == "only.example"
    with pytest.raises(BackendError, match="needs \\[fleet\\] inventory"):
        await load_inventory(TargetChoice(inventory=""), loaded.settings)


class _Args:
    def __init__(self, **values: object) -> None:
        self.ssh = values.get("ssh")
        self.container = None
        self.inventory = values.get("inventory")
        self.limit = values.get("limit")


def test_rules_of_a_host_in_several_groups_take_the_strictest(ini: Path) -> None:
    from tui.config.sections.fleet import HostRules

    inventory, _ = load_ansible_inventory(ini)
    rules = FleetRules(
        inventory,
        groups={
            "prod": HostRules(approval_mode=ApprovalMode.AUTO_EDIT, deny=["run_shell(rm:*)"]),
            "edge": HostRules(approval_mode=ApprovalMode.ASK, always_ask=True),
            "db": HostRules(blocked=True),
        },
        hosts={"web02": HostRules(approval_mode=ApprovalMode.FULL_AUTO)},
        blocked=["lb*"],
    )
    web = rules.of("web01")
    assert web.approval_mode is ApprovalMode.ASK and web.always_ask
    assert [str(rule) for rule in web.deny] == ["run_shell(rm:*)"] and not web.blocked
    assert rules.of("web02").approval_mode is ApprovalMode.FULL_AUTO  # its own table wins
    assert rules.of("dbb").blocked and rules.of("lb1").blocked
    assert "[fleet.groups.prod]" in rules.describe("web01")


def test_a_workspace_file_may_only_tighten_the_fleet() -> None:
    base = {"fleet": {"blocked": ["db*"], "groups": {"prod": {"deny": ["run_shell(rm:*)"]}}}}
    layer = {
        "fleet": {
            "blocked": ["db*", "lb*"],
            "inventory": "hosts.ini",
            "forks": 50,
            "groups": {
                "prod": {"deny": [], "always_ask": True},
                "staging": {"approval_mode": "full-auto", "allow": ["run_shell"]},
                "qa": {"approval_mode": "read-only"},
            },
        }
    }
    review = review_layer(layer, base)
    held = {change.key for change in review.held}
    assert held == {
        "fleet.inventory",
        "fleet.groups.prod.deny",
        "fleet.groups.staging.approval_mode",
        "fleet.groups.staging.allow",
    }
    assert review.safe["fleet"]["blocked"] == ["db*", "lb*"]
    assert review.safe["fleet"]["groups"]["prod"]["always_ask"] is True
    assert review.safe["fleet"]["groups"]["qa"]["approval_mode"] == "read-only"


async def test_the_drain_ends_when_the_output_closes_even_with_a_cancel_event() -> None:
    """The exit status comes a moment before the output closes over SSH: the wait ends
    then, not after the drain timeout (it waited for the cancel event too)."""
    loop = asyncio.get_running_loop()
    ended, closed = loop.create_future(), loop.create_future()
    ended.set_result(None)
    loop.call_later(0.05, closed.set_result, None)

    async def kill() -> None:
        raise AssertionError("nothing to kill")

    started = loop.time()
    timed_out, cancelled = await wait_for_end(
        OutputCollector(None),
        ended,
        closed,
        timeout=60,
        cancel=asyncio.Event(),
        kill=kill,
        drain_timeout=5.0,
    )
    assert (timed_out, cancelled) == (False, False)
    assert loop.time() - started < 2.0


def test_the_user_env_is_left_as_it_was(ini: Path) -> None:
    before = {key: value for key, value in os.environ.items() if key.startswith("ANSIBLE_")}
    load_ansible_inventory(ini)
    after = {key: value for key, value in os.environ.items() if key.startswith("ANSIBLE_")}
    assert after == before
