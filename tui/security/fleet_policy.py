"""The policy of a fleet: every host judged by its own rules, a fan-out asked once.

A call that names one ``host`` is judged exactly as a call on a single target would be, by a
view of the policy for that host: its workspace and home, its sandbox facts (bwrap there or
only the rater), its approval mode and rule lists from ``[fleet]``, the grants scoped to it.
A fan-out (``hosts``) is judged host by host the same way; the hosts that would ask are put
to the person in one question that lists every host (with counts per group) and can be
allowed for all, for some, or denied. Blocked hosts are never opened; hosts whose connection
fails (a changed key, no answer) are reported, never asked about.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from tui.errors import PermissionDenied
from tui.events import ApprovalAnswer, ApprovalDecision, ApprovalResolved, HostChoiceView
from tui.security.access import ToolAccess
from tui.security.confinement import OUTSIDE_WARNING, Confinement, SandboxFacts
from tui.security.fleet_rules import FleetRules, HostRule
from tui.security.grant_rules import grant_rules
from tui.security.inventory import Inventory, PatternError
from tui.security.paths import PathGuard
from tui.security.permissions import ApprovalMode, PermissionMode
from tui.security.policy import DENIED, Authorization, CallInfo, SecurityPolicy
from tui.security.risk.context import RiskContext
from tui.security.risk.verdict import CommandRisk
from tui.security.rules import Rule
from tui.security.verdicts import Verdict, hook_verdict


@dataclass(frozen=True)
class HostFacts:
    """What opening a host learnt that judging a call there needs."""

    name: str
    actor: str
    workspace: Path
    home: str | None
    sandbox: SandboxFacts


HostOpener = Callable[[list[str]], Awaitable[dict[str, "HostFacts | str"]]]
"""Opens hosts (lazily, once) and returns each one's facts, or why it cannot be used."""


@dataclass
class HostPlan:
    """One host a fan-out runs on, and the walls it was approved with."""

    name: str
    how: str
    confinement: Confinement | None
    sandbox: str


@dataclass
class FanoutPlan:
    """What the policy decided for a fan-out, host by host, in inventory order."""

    pattern: str
    order: list[str] = field(default_factory=list)
    """Every host the pattern chose, in inventory order."""
    run: dict[str, HostPlan] = field(default_factory=dict)
    refused: dict[str, str] = field(default_factory=dict)
    """Hosts chosen by the pattern that do not run it, and why."""


@dataclass
class FleetAuthorization(Authorization):
    """An ``Authorization`` that also says where the call runs: one host, or a fan-out."""

    host: str | None = None
    actor: str | None = None
    plan: FanoutPlan | None = None
    backend: object | None = None
    """The host's backend for a call on another host than the default (an ExecutionBackend)."""
    view: SecurityPolicy | None = None
    """The policy as it judges that host (its paths resolve the call's paths)."""


class _HostGrants:
    """The grants seen from one host: unscoped ones, and those scoped to it or its groups;
    new ones are scoped to that host unless the answer names a wider pattern."""

    def __init__(self, policy: FleetPolicy, name: str) -> None:
        self.policy = policy
        self.name = name

    def rules(self) -> list[Rule]:
        inventory = self.policy.inventory
        return self.policy.grants.rules(lambda pattern: inventory.matches(pattern, self.name))

    def add(self, rule: Rule, scope: Any = "session", **kwargs: Any) -> Any:
        return self.policy.grants.add(rule, scope, hosts=kwargs.get("hosts") or self.name)


class HostPolicy(SecurityPolicy):
    """A policy view for one host (made by ``FleetPolicy.view``, never built directly)."""

    host_rule: HostRule
    host_name: str
    rules_from: str

    def verdict(
        self, tool: str, access: ToolAccess, needed: PermissionMode, risk: CommandRisk | None
    ) -> tuple[Verdict, str]:
        verdict, how = super().verdict(tool, access, needed, risk)
        if verdict is Verdict.ALLOW and how == "mode" and self.host_rule.always_ask:
            return Verdict.ASK, "host"
        return verdict, how

    def ask_reason(
        self, tool: str, access: ToolAccess, needed: PermissionMode, risk: CommandRisk | None
    ) -> str:
        if self.verdict(tool, access, needed, risk)[1] == "host":
            return f"every command asks there ({self.rules_from} always_ask)"
        return super().ask_reason(tool, access, needed, risk)


class FleetPolicy(SecurityPolicy):
    """The session's policy when commands run on a fleet (see the module's words).

    Set after construction (by the wiring): ``inventory``, ``fleet_rules``, ``opener``,
    ``default_host`` and ``default_facts``.
    """

    inventory: Inventory
    fleet_rules: FleetRules
    opener: HostOpener
    backend_of: Callable[[str], Awaitable[object]]
    default_host: str
    _host_paths: dict[str, tuple[PathGuard, RiskContext]]

    def setup(
        self,
        inventory: Inventory,
        rules: FleetRules,
        opener: HostOpener,
        backend_of: Callable[[str], Awaitable[object]],
        default_host: str,
    ) -> None:
        self.inventory = inventory
        self.fleet_rules = rules
        self.opener = opener
        self.backend_of = backend_of
        self.default_host = default_host
        self._host_paths = {}

    # -- views -------------------------------------------------------------------------------

    def view(self, name: str, facts: HostFacts | None) -> HostPolicy:
        """This policy as it judges calls on ``name`` (``facts`` None: the default target's)."""
        view = HostPolicy.__new__(HostPolicy)
        view.__dict__.update(self.__dict__)
        rule = self.fleet_rules.of(name)
        view.host_rule = rule
        view.host_name = name
        view.rules_from = self.fleet_rules.describe(name)
        view.approval_mode = rule.approval_mode or self.approval_mode
        view.allow_rules = [*self.allow_rules, *rule.allow]
        view.ask_rules = [*self.ask_rules, *rule.ask]
        view.deny_rules = [*self.deny_rules, *rule.deny]
        view.grants = _HostGrants(self, name)  # type: ignore[assignment]
        if facts is not None and name != self.default_host:
            view.paths, view.risk_context = self._paths_of(facts)
            view.sandbox = facts.sandbox
        return view

    def _paths_of(self, facts: HostFacts) -> tuple[PathGuard, RiskContext]:
        kept = self._host_paths.get(facts.name)
        if kept is None:
            guard: PathGuard = replace(
                self.paths,
                workspace=facts.workspace,
                home=facts.home,
                local=False,
                relative_base=None,
            )
            context = replace(
                self.risk_context,
                cwd=str(facts.workspace),
                home=facts.home,
                local=False,
                secrets=tuple(guard.forbidden),
            )
            kept = self._host_paths[facts.name] = (guard, context)
        return kept

    # -- judging -----------------------------------------------------------------------------

    def verdict(
        self, tool: str, access: ToolAccess, needed: PermissionMode, risk: CommandRisk | None
    ) -> tuple[Verdict, str]:
        if access.hosts is not None or access.host is not None:
            return Verdict.ASK, "fleet"  # judged per host when it runs: run it alone
        return self.view(self.default_host, None).verdict(tool, access, needed, risk)

    async def authorize(self, access: ToolAccess, call: CallInfo) -> Authorization:
        if access.hosts is not None:
            return await self._fanout(access, call)
        name = access.host or self.default_host
        if name not in self.inventory.hosts:
            raise PermissionDenied(self.unknown_host(name))
        if self.fleet_rules.of(name).blocked:
            raise PermissionDenied(
                f"{name} is blocked ({self.fleet_rules.describe(name)}, "
                "[fleet] blocked): nothing is run there"
            )
        facts = None
        if name != self.default_host:
            opened = (await self.opener([name]))[name]
            if isinstance(opened, str):
                raise PermissionDenied(f"{name}: {opened}")
            facts = opened
        view = self.view(name, facts)
        call.actor = facts.actor if facts is not None else call.actor
        done = await SecurityPolicy.authorize(view, access, call)
        if facts is None:
            return FleetAuthorization(**done.__dict__, host=name)
        return FleetAuthorization(
            **done.__dict__,
            host=name,
            actor=facts.actor,
            backend=await self.backend_of(name),
            view=view,
        )

    def unknown_host(self, name: str) -> str:
        known = ", ".join(list(self.inventory.hosts)[:20])
        return f"no host named {name!r} in the fleet (hosts: {known})"

    async def _fanout(self, access: ToolAccess, call: CallInfo) -> Authorization:
        pattern = access.hosts or ""
        try:
            names = self.inventory.select(pattern)
        except PatternError as error:
            raise PermissionDenied(str(error)) from None
        if not names:
            groups = ", ".join(g for g in self.inventory.groups if g not in ("all", "ungrouped"))
            raise PermissionDenied(
                f"the host pattern {pattern!r} matches no host (groups: {groups or 'none'}; "
                "'all' is every host)"
            )
        plan = FanoutPlan(pattern, order=names)
        for name in names:
            if self.fleet_rules.of(name).blocked:
                plan.refused[name] = f"blocked ({self.fleet_rules.describe(name)}): never touched"
        wanted = [name for name in names if name not in plan.refused]
        opened = await self.opener(wanted) if wanted else {}
        views: dict[str, HostPolicy] = {}
        asks: dict[str, str] = {}
        allowed: dict[str, str] = {}
        needed_max = PermissionMode.READ_ONLY
        risk: CommandRisk | None = None
        for name in wanted:
            facts = opened.get(name, "not opened")
            if isinstance(facts, str):
                plan.refused[name] = facts
                continue
            view = self.view(name, facts if name != self.default_host else None)
            try:
                needed, host_risk, _ = view.precheck(call.tool_name, access)
            except PermissionDenied as error:
                plan.refused[name] = error.msg
                continue
            risk = risk or host_risk
            needed_max = max(needed_max, needed)
            verdict, how = hook_verdict(
                view.verdict(call.tool_name, access, needed, host_risk),
                call.hook_permission,
                view.approval_mode,
            )
            if access.outside and view.sandbox.active:
                verdict, how = Verdict.ASK, "outside"
            views[name] = view
            if verdict is Verdict.ASK:
                asks[name] = (
                    OUTSIDE_WARNING
                    if how == "outside"
                    else view.ask_reason(call.tool_name, access, needed, host_risk)
                )
            else:
                allowed[name] = how
        if asks:
            answer = await self._ask_fanout(access, call, risk, names, plan, asks, allowed, views)
            chosen = set(asks) if answer.hosts is None else set(answer.hosts) & set(asks)
            for name in asks:
                if name in chosen:
                    allowed[name] = (
                        "approved_always"
                        if answer.decision is (ApprovalDecision.ALLOW_ALWAYS)
                        else "approved"
                    )
                else:
                    plan.refused[name] = "the person did not allow it on this host"
        for name in names:
            if name in allowed:
                view = views[name]
                how = allowed[name]
                outside = access.outside and view.sandbox.active
                walls = view.sandbox.call_confinement(view.approval_mode, how, outside=outside)
                plan.run[name] = HostPlan(
                    name,
                    how,
                    walls if view.sandbox.active else None,
                    view.where_label(walls if view.sandbox.active else None),
                )
        if not plan.run:
            why = "; ".join(f"{name}: {reason}" for name, reason in plan.refused.items())
            raise PermissionDenied(f"it runs on no host of {pattern!r}. {why}"[:4000])
        if access.is_acting:
            self.rate_limiter.record()
        return FleetAuthorization(
            how="fanout", permission=needed_max, risk=risk, plan=plan, actor=f"fleet:{pattern}"
        )

    async def _ask_fanout(
        self,
        access: ToolAccess,
        call: CallInfo,
        risk: CommandRisk | None,
        names: list[str],
        plan: FanoutPlan,
        asks: dict[str, str],
        allowed: dict[str, str],
        views: dict[str, HostPolicy],
    ) -> ApprovalAnswer:
        """One question for every host that asks; the answer names the hosts allowed."""
        first = views[next(iter(asks))]
        request = first.approval_request(access, call, risk, _fanout_reason(asks))
        choices = []
        for name in names:
            view = views.get(name)
            label = view.where_label(None) if view is not None else None
            if name in asks:
                choices.append(_choice(self.inventory, name, "ask", asks[name], label))
            elif name in allowed:
                why = f"runs unasked ({allowed[name]})"
                choices.append(_choice(self.inventory, name, "allowed", why, label))
            else:
                reason = plan.refused.get(name, "")
                choices.append(_choice(self.inventory, name, "refused", reason, label))
        request = request.model_copy(
            update={
                "hosts": choices,
                "host_pattern": plan.pattern,
                "actor": f"fleet:{plan.pattern}",
            }
        )
        asked = time.perf_counter()
        self._queue_changed(+1)
        try:
            async with self._approval_lock:
                answer = await self._wait_answer(request, call)
        finally:
            self._queue_changed(-1)
            call.approval_wait += time.perf_counter() - asked
        self._emit(
            ApprovalResolved(
                request_id=request.request_id,
                tool_call_id=call.tool_call_id,
                decision=answer.decision.value,
                message=answer.message,
                grant=answer.grant_hosts,
                loop_id=call.loop_id,
            )
        )
        # A no stops the whole fan-out, the hosts that would run unasked too: "some hosts" is
        # the answer that runs it on fewer.
        if answer.decision is ApprovalDecision.DENY:
            raise PermissionDenied(DENIED)
        if answer.decision is ApprovalDecision.DENY_WITH_MESSAGE:
            raise PermissionDenied(f"{DENIED} The user said: {answer.message}")
        if answer.decision is ApprovalDecision.ALLOW_ALWAYS:
            hosts = answer.grant_hosts or ":".join(answer.hosts or list(asks))
            for rule in grant_rules(call.tool_name, access, risk, answer.pattern, answer.rules):
                self.grants.add(rule, answer.scope, hosts=hosts)
        return answer


def _choice(
    inventory: Inventory, name: str, state: str, reason: str, sandbox: str | None
) -> HostChoiceView:
    return HostChoiceView(
        name=name,
        groups=list(inventory.groups_of(name)),
        state=state,  # type: ignore[arg-type]
        reason=reason,
        sandbox=sandbox,
    )


def _fanout_reason(asks: dict[str, str]) -> str:
    """Each distinct reason with how many hosts give it: "16 hosts: every command asks …"."""
    counts: dict[str, int] = {}
    for reason in asks.values():
        counts[reason] = counts.get(reason, 0) + 1
    return "; ".join(
        f"{count} host{'s' if count != 1 else ''}: {reason}" for reason, count in counts.items()
    )


def effective_mode(policy: SecurityPolicy, name: str) -> ApprovalMode:
    """The approval mode commands on ``name`` run under (the session's when unset)."""
    if isinstance(policy, FleetPolicy):
        return policy.fleet_rules.of(name).approval_mode or policy.approval_mode
    return policy.approval_mode


__all__ = [
    "FanoutPlan",
    "FleetAuthorization",
    "FleetPolicy",
    "HostFacts",
    "HostOpener",
    "HostPlan",
    "HostPolicy",
    "effective_mode",
]
