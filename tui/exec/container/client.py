"""The engine's command-line client aimed at one container: exec lines, signals, diagnoses.

Why it is built this way:

* Environment values never go on a command line (readable by every local user in ``ps``):
  the exec client gets them in its own environment and ``-e NAME`` makes the engine copy
  them. Host-specific variables (PATH, HOME, …) are not forwarded: the container's apply.
* A timeout or cancel kills the command's group *inside* the container with a second exec
  (``kill -SIG -PGID``), since killing the local client leaves it running there.
* An exec that failed before anything ran gets one ``inspect``, which turns it into an error
  that says what to do ("start it with ``podman start NAME``").
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Mapping

from tui.exec.backend import BackendError
from tui.exec.container.engine import capture, container_status, run_quietly

HOST_ONLY_ENV = frozenset(
    {
        "PATH",
        "HOME",
        "USER",
        "LOGNAME",
        "SHELL",
        "PWD",
        "OLDPWD",
        "TMPDIR",
        "VIRTUAL_ENV",
        "PYTHONPATH",
        "GOPATH",
        "CARGO_HOME",
        "RUSTUP_HOME",
    }
)
"""Variables describing the host, not the container: the container keeps its own values."""


class EngineClient:
    """Builds and runs ``ENGINE exec`` (and ``inspect``) for one container.

    Args:
        container: Name or id of the container.
        user: ``--user`` for every exec; None uses the container's default user.
        keep_container_env: Variable names never forwarded: the container's values apply.
        engine_env: Extra variables for the engine client itself (``DOCKER_HOST``), never
            seen by the command.
    """

    def __init__(
        self,
        container: str,
        *,
        user: str | None,
        keep_container_env: Iterable[str],
        engine_env: Mapping[str, str] | None,
    ) -> None:
        self.container = container
        self._user = user
        self._keep = frozenset(keep_container_env)
        self._engine_env = dict(engine_env or {})

    def client_env(self, forwarded: Mapping[str, str] | None = None) -> dict[str, str] | None:
        """The engine client's environment; None (inherit ours) when nothing is added."""
        if not self._engine_env and not forwarded:
            return None
        return {**os.environ, **self._engine_env, **(forwarded or {})}

    def exec_argv(
        self,
        engine: str,
        inner: list[str],
        env: Mapping[str, str] | None,
        *,
        interactive: bool,
    ) -> tuple[list[str], dict[str, str] | None]:
        """``ENGINE exec [-i] [-u USER] [-e NAME…] CONTAINER inner…`` and the client's env."""
        forwarded = {k: v for k, v in (env or {}).items() if k not in self._keep}
        argv = [engine, "exec"]
        if interactive:
            argv.append("-i")
        if self._user is not None:
            argv += ["-u", self._user]
        for name in forwarded:
            argv += ["-e", name]
        argv.append(self.container)
        argv += inner
        return argv, self.client_env(forwarded)

    async def signal_inside(self, engine: str, pgid: int, signal_name: str) -> None:
        """``kill -SIG -PGID`` in the container; an already empty group is not an error."""
        await capture(self._kill_argv(engine, pgid, signal_name), env=self.client_env())

    def kill_from_thread(self, engine: str, pgid: int) -> None:
        """SIGKILL the group from a daemon thread: it happens even if the loop is closing."""
        threading.Thread(
            target=run_quietly,
            args=(self._kill_argv(engine, pgid, "KILL"), self.client_env()),
            name="container-kill",
            daemon=True,
        ).start()

    def _kill_argv(self, engine: str, pgid: int, signal_name: str) -> list[str]:
        script = f"kill -{signal_name} -{pgid} 2>/dev/null; exit 0"
        argv = [engine, "exec"]
        if self._user is not None:
            argv += ["-u", self._user]
        return [*argv, self.container, "sh", "-c", script]

    async def status(self, engine: str) -> str | None:
        """The container's state as ``engine`` reports it (``running`` …), None if missing."""
        status, _ = await container_status(engine, self.container, env=self.client_env())
        return status

    def no_cwd_error(self, workdir: str | None) -> BackendError:
        """The working directory is missing in the container: how to fix that."""
        return BackendError(
            f"Working directory {workdir!r} does not exist in container "
            f"{self.container} (or cannot be entered). Mount it at the same path "
            f"(-v {workdir}:{workdir}) or pass a directory that exists there."
        )

    async def raise_if_down(self, engine: str, *, during: bool) -> None:
        """Raise BackendError saying what to do unless the container is running.

        Args:
            engine: The engine to ask.
            during: The command was running when it happened (its words say "stopped").
        """
        status, why = await container_status(engine, self.container, env=self.client_env())
        if status == "running":
            return
        name = self.container
        if status is None:
            raise BackendError(
                f"container {name} does not exist ({engine}: {why}): create it, "
                "or point the session at another container."
            )
        when = " while the command ran" if during else ""
        if status == "paused":
            raise BackendError(
                f"container {name} is paused{when}: resume it with `{engine} unpause {name}`"
            )
        stopped = "stopped" if during else "is not running"
        raise BackendError(
            f"container {name} {stopped}{when} (status: {status}): "
            f"start it with `{engine} start {name}`"
        )


__all__ = ["HOST_ONLY_ENV", "EngineClient"]
