"""Tool calls on a fleet: the ``host``/``hosts`` arguments, and where an approved call runs.

A session on a fleet gives its file and tmux tools a ``host`` argument and ``run_shell`` a
``hosts`` one; a session on one target shows neither, so its tools' schemas are unchanged.
The registry reads them here, on the one dispatch path: the policy judges the call by that
host's rules (``FleetPolicy``), and an approved call on another host than the default runs
with that host's backend and that host's view of the policy (its paths, its workspace).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from pydantic import Field, create_model

from tui.errors import InvalidArguments
from tui.security.access import ToolAccess
from tui.security.fleet_policy import FleetAuthorization, FleetPolicy
from tui.security.policy import Authorization
from tui.tools.base import Tool, ToolParams
from tui.tools.context import ToolContext

HOST_TOOLS = frozenset(
    {
        "read_file",
        "write_file",
        "edit_file",
        "list_files",
        "glob_search",
        "grep_search",
        "tmux_capture_pane",
        "tmux_send_keys",
        "tmux_create_session",
        "tmux_kill_session",
        "tmux_create_pane",
        "tmux_kill_pane",
    }
)
"""The tools that act on one host of a fleet when given ``host``."""

HOST_FIELD = (
    "One host of the fleet (its inventory name) to act on; default: the session's default host."
)
HOSTS_FIELD = (
    "Fan the command out to these fleet hosts: a host, a group, an Ansible pattern "
    "('web:&prod', 'web[0:4]', '!db*') or 'all'. Each host's exit code, duration and output "
    "come back (hosts that answered the same are grouped). Without it the command runs on "
    "the session's default host only."
)


def give_fleet_arguments(tool: Tool[Any]) -> None:
    """Add ``host`` (file and tmux tools) or ``hosts`` (``run_shell``) to ``tool``'s schema."""
    if tool.name == "run_shell":
        name, description = "hosts", HOSTS_FIELD
    elif tool.name in HOST_TOOLS:
        name, description = "host", HOST_FIELD
    else:
        return
    base = tool.Params
    extended: type[ToolParams] = create_model(  # type: ignore[call-overload]
        base.__name__,
        __base__=base,
        __doc__=base.__doc__,
        **{name: (str | None, Field(default=None, description=description))},
    )
    tool.__dict__["Params"] = extended


def with_fleet_arguments(access: ToolAccess, params: ToolParams, policy: object) -> ToolAccess:
    """``access`` with the call's ``host``/``hosts``, refused where there is no fleet."""
    host = getattr(params, "host", None)
    hosts = getattr(params, "hosts", None)
    if host is None and hosts is None:
        return access
    if not isinstance(policy, FleetPolicy):
        raise InvalidArguments(
            "host and hosts need a fleet: start agent-tui with --ssh given several times or "
            "with --inventory FILE"
        )
    return dataclasses.replace(access, host=host, hosts=hosts)


def on_its_host(ctx: ToolContext, authorization: Authorization) -> ToolContext:
    """The context the approved call runs with: its host's backend and policy view, or the
    fan-out's plan."""
    if not isinstance(authorization, FleetAuthorization):
        return ctx
    if authorization.plan is not None:
        return dataclasses.replace(ctx, fanout=authorization.plan)
    if authorization.backend is not None and authorization.view is not None:
        return dataclasses.replace(
            ctx,
            backend=authorization.backend,  # type: ignore[arg-type]
            policy=authorization.view,
            cwd=None,  # the default host's shell directory means nothing there
        )
    return ctx


def started_where(
    authorization: Authorization, ctx: ToolContext
) -> tuple[str, list[str], str | None]:
    """The actor, the fan-out's hosts and where its command runs, for ``ToolCallStarted``."""
    where = ctx.policy.where_label(authorization.confinement)
    if not isinstance(authorization, FleetAuthorization):
        return ctx.backend.actor, [], where
    plan = authorization.plan
    if plan is not None:
        labels = {host.sandbox for host in plan.run.values()}
        label = labels.pop() if len(labels) == 1 else "per host (see each host's row)"
        return authorization.actor or ctx.backend.actor, list(plan.run), label
    if authorization.view is not None:
        where = authorization.view.where_label(authorization.confinement)
    return authorization.actor or ctx.backend.actor, [], where


__all__ = [
    "HOST_TOOLS",
    "give_fleet_arguments",
    "on_its_host",
    "started_where",
    "with_fleet_arguments",
]
