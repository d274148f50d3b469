"""Where the agent's commands run: this machine, a container or an SSH host, in tmux or not.

Part of the composition root: the command-line flags and the ``[ssh]``/``[tmux]`` settings
pick one backend here, and everything else only ever sees the ``ExecutionBackend`` contract.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from tui.config import Settings
from tui.exec.backend import BackendError, ExecutionBackend
from tui.exec.local import LocalBackend
from tui.exec.sandbox.sandbox import Sandbox
from tui.locations import config_dir, data_dir
from tui.security.confinement import OWN_COMMAND
from tui.security.environment import reduced_environment
from tui.security.hosts import HostPolicy

if TYPE_CHECKING:
    from tui.exec.fleet.fleet import Fleet

OWNER = "agent-tui"
"""The owner tag on the tmux sessions the app and headless runs create."""


@dataclass
class TargetChoice:
    """What the flags asked for (``target_choice``): the one place that knows whether the
    target is this machine or another, and so where the workspace and the settings are."""

    ssh: str | None = None
    container: str | None = None
    tmux: bool | None = None
    """None: tmux when the target has it and a person is watching (the app)."""
    fleet_ssh: list[str] = field(default_factory=list)
    """``--ssh`` given several times: a fleet of these hosts."""
    inventory: str | None = None
    """``--inventory FILE``: a fleet of the Ansible inventory's hosts (``""``: the file
    ``[fleet] inventory`` names)."""
    limit: str | None = None
    """``--limit PATTERN``: only these hosts of the fleet."""

    @property
    def wants_fleet(self) -> bool:
        return bool(self.fleet_ssh) or self.inventory is not None

    @property
    def remote(self) -> bool:
        """Commands run elsewhere: ``--workspace`` then names a folder there."""
        return bool(self.ssh or self.container) or self.wants_fleet

    def workspace(self, given: Path | None) -> Path:
        """The workspace ``--workspace`` names: a folder on the target as given (unset: this
        machine's cwd, which a remote target reads as its home), or this machine's, resolved."""
        if self.remote:
            return given if given else Path.cwd()
        return (given or Path.cwd()).resolve()

    def settings_folder(self, workspace: Path) -> Path:
        """Whose ``.agent-tui.toml`` applies: the workspace's, or for a remote target this
        machine's cwd (the remote folder is not read for settings)."""
        return Path.cwd() if self.remote else workspace


def target_choice(args: object) -> TargetChoice:
    """The ``TargetChoice`` the flags make (``--ssh``, ``--inventory``, ``--limit``,
    ``--container``, ``--tmux``): one ``--ssh`` is one host, several a fleet.

    Raises:
        ValueError: an ``--ssh`` target that is not ``[USER@]HOST[:PORT]``.
    """
    from tui.exec.ssh.target import SSHTarget

    hosts = list(getattr(args, "ssh", None) or [])
    for host in hosts:
        try:
            SSHTarget.parse(host)
        except ValueError as error:
            raise ValueError(f"--ssh: {error}") from None
    return TargetChoice(
        ssh=hosts[0] if len(hosts) == 1 else None,
        container=getattr(args, "container", None),
        tmux=getattr(args, "tmux", None),
        fleet_ssh=hosts if len(hosts) > 1 else [],
        inventory=getattr(args, "inventory", None),
        limit=getattr(args, "limit", None),
    )


@dataclass
class Target:
    backend: ExecutionBackend
    workspace: Path
    """The workspace on the target (a remote or in-container path for those)."""
    local_paths: bool
    home: str | None = None
    notices: list[str] = field(default_factory=list)
    """What opening the target found that the person should hear at once (a tmux pane reused
    with an earlier agent's jobs still running in it)."""
    sandbox: Sandbox | None = None
    """This machine's sandbox: the hooks and MCP servers run in it whatever the target."""
    commands: Sandbox | None = None
    """The sandbox the target's commands run in: this machine's, a remote host's, or none."""
    unsandboxed: str | None = None
    """Why a remote or container target's commands are not confined, in the person's words."""
    fleet: Fleet | None = None
    """Every host, when commands run on a fleet (the backend is then its first host's)."""


def remote_sandbox(
    settings: Settings, workspace: Path, host: ExecutionBackend, name: str
) -> Sandbox:
    """The sandbox of the commands on an SSH host: that host's bwrap and places."""
    from tui.exec.sandbox.remote import RemoteSandbox

    security = settings.security
    return RemoteSandbox(
        workspace=workspace,
        mode=settings.sandbox.mode,
        patterns=(*security.forbidden_paths, *security.extra_forbidden_paths),
        host=host,
        host_name=name,
    )


def make_sandbox(settings: Settings, workspace: Path) -> Sandbox:
    """The sandbox of a session on this machine, from ``[sandbox]`` and ``[security]``."""
    security = settings.security
    own_config = config_dir()
    return Sandbox(
        workspace=workspace.resolve(),
        mode=settings.sandbox.mode,
        patterns=(
            *security.forbidden_paths,
            *security.extra_forbidden_paths,
            str(own_config / "config.toml"),
        ),
        own_dirs=(own_config, data_dir()),
        readable_again=(own_config / "skills",),
        writable=tuple(settings.sandbox.writable),
        edit_network=settings.sandbox.network == "proxy",
        hosts=HostPolicy.from_lists(security.allowed_hosts, security.blocked_hosts),
    )


async def open_target(
    choice: TargetChoice, settings: Settings, workspace: Path, *, interactive: bool
) -> Target:
    """Build the backend and, for a remote target, find its home and workspace.

    Raises:
        BackendError: the host or container cannot be reached, with what to do about it.
    """
    host: ExecutionBackend
    local_paths = True
    home: str | None = None
    notices: list[str] = []
    # Built for every target: hooks and MCP servers run on this machine whatever the target.
    sandbox = make_sandbox(settings, workspace)
    # The settings' mode until the session's policy takes over: the shared pane started below
    # must start in the walls the session will use, not be restarted at its first command.
    sandbox.approval_mode = lambda: settings.approval.mode
    said = await sandbox.start()
    commands: Sandbox | None = None
    ssh_host = choice.ssh or None
    if ssh_host is not None:
        from tui.exec.ssh.backend import SSHBackend

        ssh_settings = settings.ssh.model_copy(update={"host": ssh_host})
        probe = SSHBackend.from_settings(ssh_settings)
        try:
            home = await target_home(probe)
        finally:
            await probe.close()
        local_paths = False
        workspace = remote_workspace(workspace, home)
        ssh = SSHBackend.from_settings(ssh_settings, default_cwd=str(workspace))
        host = ssh
        remote = remote_sandbox(settings, workspace, ssh, ssh_host)
        remote.approval_mode = sandbox.approval_mode
        notices.append(await remote.start() or "")
        if remote.active:
            ssh.sandbox = commands = remote
            unsandboxed = None
        else:
            unsandboxed = f"no sandbox on {ssh_host}: the rater decides ({remote.unavailable})"
    elif choice.container:
        from tui.exec.container.backend import ContainerBackend

        container = ContainerBackend(choice.container, default_cwd=str(workspace))
        host = container
        home = await target_home(host)
        local_paths = False
        inside = remote_sandbox(settings, workspace, container, f"container {choice.container}")
        inside.approval_mode = sandbox.approval_mode
        said_inside = await inside.start()
        if inside.active:
            container.sandbox = commands = inside
            unsandboxed = None
            notices.append(f"{said_inside}; the container's own boundary holds around it")
        else:
            unsandboxed = (
                f"no sandbox inside container {choice.container} ({inside.unavailable}): the "
                "container's own boundary holds, and within it the rater decides"
            )
            notices.append(unsandboxed)
    else:
        if said:
            notices.append(said)
        unsandboxed = None
        commands = sandbox
        host = LocalBackend(default_cwd=str(workspace), sandbox=sandbox)
    notices = [notice for notice in notices if notice]
    use_tmux = choice.tmux
    if use_tmux is None:
        use_tmux = interactive and await has_tmux(host)
    if not use_tmux:
        return Target(host, workspace, local_paths, home, notices, sandbox, commands, unsandboxed)
    backend = await open_tmux(host, settings, workspace, notices)
    return Target(backend, workspace, local_paths, home, notices, sandbox, commands, unsandboxed)


async def open_tmux(
    host: ExecutionBackend,
    settings: Settings,
    workspace: Path,
    notices: list[str],
    *,
    socket_suffix: str = "",
) -> ExecutionBackend:
    """The agent's tmux session on ``host`` (its own per instance, or the one configured);
    ``socket_suffix`` gives a fleet host a tmux server of its own (two inventory names can be
    one machine)."""
    from tui.exec.tmux.backend import TmuxBackend
    from tui.exec.tmux.instances import open_instance

    tmux = settings.tmux
    base = (tmux.socket_name or "agent-tui") + socket_suffix
    # The panes' shells live on past any one command: give them the reduced environment,
    # never this process's own (API keys must not reach the shared shell).
    env = reduced_environment(settings.security.env_allowlist, settings.security.env_passthrough)
    # A tmux server of its own per instance and run (``instances`` says why), or the session
    # the person named, to share, on the base socket; dead instances' leftovers are swept.
    instance = await open_instance(
        host, base, env, owner=OWNER, workspace=str(workspace), fixed=tmux.session
    )
    socket_name, chosen, swept = instance.socket, instance.choice, instance.notices
    backend = TmuxBackend(
        host,
        socket_name=socket_name,
        session=chosen.name,
        owner=OWNER,
        history_limit=tmux.history_limit,
        default_cwd=str(workspace),
        env=env,
        max_sessions=tmux.max_sessions,
        max_panes=tmux.max_panes,
        allow_user_pane_capture=tmux.allow_user_pane_capture,
        workspace=str(workspace),
        own_session=not tmux.session,
        keep_session=tmux.keep_session,
        take_turns=bool(tmux.session),
    )
    notices += [*swept, *([chosen.notice] if chosen.notice else [])]
    notices += await backend.start()
    return backend


def remote_workspace(workspace: Path, home: str) -> Path:
    """``--workspace`` names a folder on the host; unset (this machine's cwd) means home."""
    if workspace == Path.cwd().resolve():
        return Path(home)
    return workspace


async def target_home(backend: ExecutionBackend) -> str:
    result = await backend.run('printf %s "$HOME"', timeout=30, confinement=OWN_COMMAND)
    if result.exit_code != 0 or not result.stdout.startswith("/"):
        raise BackendError(
            f"{backend.actor}: could not read the home folder "
            f"({(result.stderr or result.stdout).strip() or 'no output'})"
        )
    return result.stdout.strip()


async def has_tmux(backend: ExecutionBackend) -> bool:
    if not backend.SUPPORTS_SPAWN:
        return False
    if isinstance(backend, LocalBackend):
        return shutil.which("tmux") is not None
    result = await backend.run("command -v tmux", timeout=30, confinement=OWN_COMMAND)
    return result.exit_code == 0
