"""Round trip of ``true`` through SSHBackend, next to bare asyncssh and OpenSSH ControlMaster.

All talk to the same throwaway sshd (``tests/sshd.py``) in the same run, interleaved call by
call (in a rotating order) so machine noise hits them alike:

* ``asyncssh``: ``conn.run("true")`` on one open connection, the floor for our backend;
* ``backend``: ``SSHBackend.run("true")``, which adds the process-group wrapper, streaming
  decoders and the timeout/cancel supervision;
* ``backend+env``: the same with the environment the policy gives ``run_shell`` (the
  remote environment is scrubbed and the policy's variables set), for information;
* ``openssh-cm``: the ``ssh`` client multiplexed over a ControlMaster socket, what a person
  would script by hand (one process spawn per command).

The figure that matters is backend / asyncssh (target ≤ 1.3).

    python bench/ssh.py [--calls 100]      (needs root and openssh-server)
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script: make ``tests`` and ``tui`` importable
    sys.path.insert(0, str(ROOT))

import asyncssh

from tests.sshd import SshdUnavailable, SshServer
from tui.exec.ssh.backend import SSHBackend
from tui.security.environment import reduced_environment
from tui.security.settings import DEFAULT_ENV_ALLOWLIST

Call = Callable[[], Awaitable[None]]


def openssh_argv(server: SshServer, control_dir: Path) -> list[str]:
    return [
        "ssh",
        "-p",
        str(server.port),
        "-i",
        str(server.client_key),
        "-o",
        f"UserKnownHostsFile={server.known_hosts}",
        "-o",
        "BatchMode=yes",
        "-o",
        "ControlMaster=auto",
        "-o",
        f"ControlPath={control_dir}/cm-%C",
        "-o",
        "ControlPersist=60",
        "-F",
        "/dev/null",
        f"{server.user}@{server.host}",
    ]


async def timed(call: Call) -> float:
    started = time.perf_counter()
    await call()
    return time.perf_counter() - started


async def main(calls: int) -> None:
    try:
        server = SshServer.start()
    except SshdUnavailable as exc:
        raise SystemExit(f"cannot start the test sshd: {exc}") from None
    control_dir = Path(tempfile.mkdtemp(prefix="atui-cm-"))
    argv = openssh_argv(server, control_dir)
    conn = await asyncssh.connect(
        server.host,
        server.port,
        username=server.user,
        client_keys=[str(server.client_key)],
        known_hosts=str(server.known_hosts),
        config=None,
    )
    backend = SSHBackend(
        server.target,
        identity_file=str(server.client_key),
        known_hosts=str(server.known_hosts),
        ssh_config=[],
    )

    async def bare() -> None:
        result = await conn.run("true", check=False)
        assert result.exit_status == 0

    async def ours() -> None:
        result = await backend.run("true")
        assert result.exit_code == 0, result

    policy_env = reduced_environment(DEFAULT_ENV_ALLOWLIST, [])

    async def ours_with_env() -> None:
        result = await backend.run("true", env=policy_env, timeout=120)
        assert result.exit_code == 0, result

    async def openssh() -> None:
        process = await asyncio.create_subprocess_exec(
            *argv,
            "true",
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
        )
        _, err = await process.communicate()
        assert process.returncode == 0, err

    contenders: dict[str, Call] = {
        "asyncssh": bare,
        "backend": ours,
        "backend+env": ours_with_env,
        "openssh-cm": openssh,
    }
    samples: dict[str, list[float]] = {name: [] for name in contenders}
    try:
        for call in contenders.values():  # connect, start the master, warm caches
            for _ in range(5):
                await call()
        names = list(contenders)
        for index in range(calls):
            shift = index % len(names)
            for name in names[shift:] + names[:shift]:
                samples[name].append(await timed(contenders[name]))
    finally:
        await backend.close()
        conn.close()
        stop = await asyncio.create_subprocess_exec(
            *argv[:-1], "-O", "exit", argv[-1], stderr=asyncio.subprocess.DEVNULL
        )
        await stop.wait()
        server.cleanup()
        shutil.rmtree(control_dir, ignore_errors=True)

    medians = {name: statistics.median(values) * 1000 for name, values in samples.items()}
    print(f"{calls} calls each, interleaved")
    for name, values in samples.items():
        ms = sorted(v * 1000 for v in values)
        p90 = ms[int(len(ms) * 0.9) - 1]
        print(f"  {name:<12} median {medians[name]:6.2f} ms   p90 {p90:6.2f} ms")
    ratio = medians["backend"] / medians["asyncssh"]
    verdict = "ok" if ratio <= 1.3 else "OVER TARGET"
    print(f"backend / asyncssh = {ratio:.2f} (target <= 1.3: {verdict})")
    print(f"backend / openssh-cm = {medians['backend'] / medians['openssh-cm']:.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=100)
    args = parser.parse_args()
    asyncio.run(main(args.calls))
