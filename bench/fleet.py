"""``uname -a; uptime`` on a fleet of 20 real sshd hosts: agent-tui vs Ansible vs parallel-ssh.

All three reach the same twenty OpenSSH servers (``tests/fleet_support.py``: 127.0.0.2 …
127.0.0.21, one host key each, one login user) in the same run, with 20 hosts at once:

* ``agent-tui``: ``run_shell`` with ``hosts="all"`` through the real dispatch path (registry,
  fleet policy, per-host sandbox probe and bwrap, fan-out), in a session built as the CLI
  builds it from ``--inventory``;
* ``ansible``: ``ansible all -m shell -a CMD -f 20`` (ansible-core, OpenSSH, its default
  ControlPersist);
* ``parallel-ssh``: Debian's ``parallel-ssh -p 20`` (pssh), one OpenSSH process per host.

Cold: every tool opens its connections (ours also probes each host's sandbox). Warm: our
fan-out over the kept connections, 100 times in a row, against Ansible's second run (its
ControlPersist masters still up) and parallel-ssh again (it keeps nothing). Ratios are
baseline / ours: above 1 means agent-tui is faster.

    python bench/fleet.py [--hosts 20] [--fanouts 100] [--rounds 3]
    (needs root, openssh-server, bubblewrap, ansible-core and pssh)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script: make ``tests`` and ``tui`` importable
    sys.path.insert(0, str(ROOT))

from tests.fleet_support import NAMES, FleetLab, start_lab
from tests.sshd import DEFAULT_USER, SshdUnavailable

COMMAND = "uname -a; uptime"


def bench_inventory(lab: FleetLab) -> Path:
    """Every host with its address and port inline: OpenSSH (Ansible's, pssh's) reads the
    user's real ~/.ssh/config, so the aliases of the tests are not used here."""
    lines = ["[all]"]
    for name, server in lab.servers.items():
        lines.append(f"{name} ansible_host={server.host} ansible_port={server.port}")
    lines += ["", "[all:vars]", f"ansible_user={DEFAULT_USER}"]
    path = lab.root / "bench-hosts.ini"
    path.write_text("\n".join(lines) + "\n")
    return path


def ssh_options(lab: FleetLab) -> list[str]:
    return [
        "-o",
        f"UserKnownHostsFile={lab.known_hosts}",
        "-o",
        "StrictHostKeyChecking=yes",
        "-o",
        "BatchMode=yes",
        "-i",
        str(lab.client_key),
    ]


def run_ansible(lab: FleetLab, inventory: Path, control_dir: Path, config: Path) -> float:
    env = {
        **os.environ,
        "ANSIBLE_CONFIG": str(config),
        "ANSIBLE_SSH_CONTROL_PATH_DIR": str(control_dir),
        "ANSIBLE_SSH_COMMON_ARGS": " ".join(ssh_options(lab)[:6]),
        "ANSIBLE_PRIVATE_KEY_FILE": str(lab.client_key),
        "ANSIBLE_PYTHON_INTERPRETER": "/usr/bin/python3",
        "ANSIBLE_NOCOLOR": "1",
    }
    started = time.perf_counter()
    done = subprocess.run(
        ["ansible", "all", "-i", str(inventory), "-m", "shell", "-a", COMMAND, "-f", "20"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    took = time.perf_counter() - started
    ok = done.stdout.count("CHANGED") + done.stdout.count("| SUCCESS")
    if done.returncode != 0 or ok != len(lab.servers):
        raise RuntimeError(f"ansible failed ({ok} ok):\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return took


def stop_masters(control_dir: Path) -> None:
    """Ask each ControlPersist master Ansible left in ``control_dir`` to exit."""
    for socket_path in control_dir.iterdir():
        subprocess.run(
            ["ssh", "-o", f"ControlPath={socket_path}", "-O", "exit", "master"],
            capture_output=True,
            check=False,
        )


def run_pssh(lab: FleetLab, pssh: str) -> float:
    hosts = lab.root / "pssh-hosts"
    hosts.write_text("".join(f"{DEFAULT_USER}@{s.host}:{s.port}\n" for s in lab.servers.values()))
    argv = [pssh, "-h", str(hosts), "-p", "20", "-t", "60", "-i"]
    for option in ssh_options(lab):
        argv += ["-x", option]
    started = time.perf_counter()
    done = subprocess.run([*argv, COMMAND], capture_output=True, text=True, check=False)
    took = time.perf_counter() - started
    ok = done.stdout.count("[SUCCESS]")
    if ok != len(lab.servers):
        raise RuntimeError(f"parallel-ssh failed ({ok} ok):\n{done.stdout[-2000:]}")
    return took


class Ours:
    """A session on the fleet, built as ``agent-tui --inventory FILE`` builds one."""

    def __init__(self, lab: FleetLab, inventory: Path) -> None:
        self.lab = lab
        self.inventory = inventory
        self.session: Any = None
        self.calls = 0

    async def open(self) -> None:
        from tui.config import load_settings
        from tui.fleet_target import open_fleet
        from tui.targets import TargetChoice
        from tui.wiring import build_session

        config = Path(os.environ["AGENT_TUI_CONFIG_DIR"]) / "config.toml"
        config.write_text(self.lab.config_toml("[fleet]\nforks = 20\n"))
        here = Path(tempfile.mkdtemp(prefix="atui-bench-ws-"))
        loaded = load_settings(here)
        choice = TargetChoice(inventory=str(self.inventory), tmux=False)
        target = await open_fleet(
            choice, loaded.settings, Path(self.lab.workspace), interactive=False
        )
        self.session = build_session(
            target.workspace,
            loaded,
            target=target,
        )

    async def fanout(self) -> float:
        from tui.tools.context import ToolContext

        session = self.session
        self.calls += 1
        ctx = ToolContext(f"bench-{self.calls}", "run_shell", session._backend, session._policy)
        arguments = json.dumps({"command": COMMAND, "hosts": "all"})
        started = time.perf_counter()
        result = await session._registry.execute("run_shell", arguments, ctx)
        took = time.perf_counter() - started
        ran = result.details.get("hosts", {})
        ok = sum(1 for host in ran.values() if host["status"] == "ok")
        if result.is_error or ok != len(self.lab.servers):
            raise RuntimeError(f"agent-tui fan-out failed ({ok} ok): {result.text[:2000]}")
        return took

    async def close(self) -> None:
        if self.session is not None:
            await self.session.aclose()
            self.session = None


async def ours_cold(lab: FleetLab, inventory: Path) -> tuple[float, Ours]:
    """Session start (inventory, the first host) and the first fan-out (the other hosts
    opened, probed and run on), timed together."""
    ours = Ours(lab, inventory)
    started = time.perf_counter()
    await ours.open()
    await ours.fanout()
    return time.perf_counter() - started, ours


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--hosts", type=int, default=20)
    parser.add_argument("--fanouts", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    pssh = shutil.which("parallel-ssh") or shutil.which("pssh")
    if shutil.which("ansible") is None or pssh is None:
        print("needs ansible-core (pip) and pssh (apt-get install pssh)", file=sys.stderr)
        return 2
    scratch = Path(tempfile.mkdtemp(prefix="atui-bench-"))
    os.environ.setdefault("AGENT_TUI_CONFIG_DIR", str(scratch / "config"))
    os.environ.setdefault("AGENT_TUI_DATA_DIR", str(scratch / "data"))
    Path(os.environ["AGENT_TUI_CONFIG_DIR"]).mkdir(parents=True, exist_ok=True)
    try:
        lab = start_lab(min(args.hosts, len(NAMES)))
    except SshdUnavailable as error:
        print(f"cannot start sshd: {error}", file=sys.stderr)
        return 2
    try:
        return asyncio.run(measure(lab, pssh, args, scratch))
    finally:
        lab.cleanup()
        shutil.rmtree(scratch, ignore_errors=True)


async def measure(lab: FleetLab, pssh: str, args: argparse.Namespace, scratch: Path) -> int:
    inventory = bench_inventory(lab)
    config = scratch / "ansible.cfg"
    config.write_text("[defaults]\nhost_key_checking = True\n")
    cold: dict[str, list[float]] = {"agent-tui": [], "ansible": [], "parallel-ssh": []}
    warm_ansible: list[float] = []
    kept: Ours | None = None
    for round_ in range(args.rounds):
        # Interleaved, each cold: machine noise hits all three alike.
        control = Path(tempfile.mkdtemp(prefix="cp-", dir=scratch))
        cold["ansible"].append(
            await asyncio.to_thread(run_ansible, lab, inventory, control, config)
        )
        warm_ansible.append(await asyncio.to_thread(run_ansible, lab, inventory, control, config))
        stop_masters(control)
        cold["parallel-ssh"].append(await asyncio.to_thread(run_pssh, lab, pssh))
        took, ours = await ours_cold(lab, inventory)
        cold["agent-tui"].append(took)
        if round_ < args.rounds - 1:
            await ours.close()
        else:
            kept = ours
    assert kept is not None
    warm: list[float] = []
    started = time.perf_counter()
    for _ in range(args.fanouts):
        warm.append(await kept.fanout())
    total = time.perf_counter() - started
    await kept.close()
    report(lab, cold, warm_ansible, warm, total, args)
    return 0


def report(
    lab: FleetLab,
    cold: dict[str, list[float]],
    warm_ansible: list[float],
    warm: list[float],
    total: float,
    args: argparse.Namespace,
) -> None:
    median = {name: statistics.median(times) for name, times in cold.items()}
    hosts = len(lab.servers)
    print(f"`{COMMAND}` on {hosts} real sshd hosts, 20 at once, {args.rounds} rounds (median)")
    print("cold (connections opened; agent-tui also probes each host's sandbox):")
    for name, value in median.items():
        print(f"  {name:<13} {value * 1000:8.0f} ms")
    print(f"  ratio ansible / agent-tui:      {median['ansible'] / median['agent-tui']:.2f}x")
    print(f"  ratio parallel-ssh / agent-tui: {median['parallel-ssh'] / median['agent-tui']:.2f}x")
    ours = statistics.median(warm)
    ansible = statistics.median(warm_ansible)
    pssh = median["parallel-ssh"]
    print(f"warm: {args.fanouts} sequential fan-outs over kept connections")
    print(
        f"  agent-tui     {ours * 1000:8.1f} ms per fan-out (median; total {total:.2f} s, "
        f"p90 {statistics.quantiles(warm, n=10)[-1] * 1000:.1f} ms)"
    )
    print(f"  ansible       {ansible * 1000:8.0f} ms (second run, ControlPersist masters up)")
    print(f"  parallel-ssh  {pssh * 1000:8.0f} ms (keeps nothing: every run is cold)")
    print(f"  ratio ansible / agent-tui:      {ansible / ours:.1f}x")
    print(f"  ratio parallel-ssh / agent-tui: {pssh / ours:.1f}x")


if __name__ == "__main__":
    raise SystemExit(main())
