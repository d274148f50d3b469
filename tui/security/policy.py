"""The security policy: the one gate every tool call passes before it runs.

Order matters and is fixed: hard refusals (bad paths, denied commands, the permission ceiling,
deny rules) come before anything that could allow; then allow rules and grants; then ask rules;
then the approval mode. Only then, if the answer is "ask", is a person asked — so nobody is
ever asked to approve something the policy would refuse anyway.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from tui.errors import LimitReached, PermissionDenied
from tui.events import (
    ApprovalAnswer,
    ApprovalDecision,
    ApprovalRequested,
    ApprovalResolved,
    ApprovalsWaiting,
    Event,
    RiskSegmentView,
)
from tui.locations import config_dir, tool_output_dir
from tui.security.access import ToolAccess
from tui.security.approval import (
    ApprovalBroker,
    ApprovalUnavailable,
    Approver,
    NoApprover,
)
from tui.security.confinement import (
    OUTSIDE_WARNING,
    Confinement,
    SandboxFacts,
)
from tui.security.environment import reduced_environment
from tui.security.grant_rules import grant_rules, suggest_pattern
from tui.security.grants import GrantStore
from tui.security.hosts import HostPolicy
from tui.security.offline import needs_no_network
from tui.security.paths import ALLOW_SETTING, Checked, PathGuard
from tui.security.permissions import ApprovalMode, PermissionMode
from tui.security.preview import call_preview
from tui.security.ratelimit import RateLimiter
from tui.security.reasons import mode_reason, rule_reason, secret_reason
from tui.security.risk.context import RiskContext
from tui.security.risk.verdict import CommandRisk, Risk, max_risk
from tui.security.risk_gates import asks_for_risk, high_risk_refusal, risk_reason
from tui.security.rules import covers_all, first_match, parse_rules
from tui.security.settings import SecuritySettings
from tui.security.trust import control_file
from tui.security.verdicts import Verdict, call_subjects, claimed_risk, hook_verdict

DENIED = "Command execution denied by user."
"""What the model reads when the person says no to one call (Buddy's words, kept exactly so a
model or a prompt written for Buddy recognises it); their message, if any, follows."""

_MODE_FLAG = {
    PermissionMode.WORKSPACE_WRITE: "--approval-mode auto-edit (or ask)",
    PermissionMode.DANGER_FULL_ACCESS: "--approval-mode ask (or full-auto)",
}


@dataclass
class Authorization:
    """How a call got through, for the tool-event panel and the transcript."""

    how: str
    """``mode``, ``rule``, ``grant``, ``approved`` or ``approved_always``."""
    permission: PermissionMode
    risk: CommandRisk | None = None
    paths: dict[str, Path] = field(default_factory=dict)
    secrets: tuple[Path, ...] = ()
    """Secret paths the person approved reading in this one call (the tool's own
    ``resolve_path`` lets exactly these through, for this call only)."""
    confinement: Confinement | None = None
    """The sandbox walls the call's command runs in (None: the backend's own default)."""

    @property
    def risk_level(self) -> Risk | None:
        return self.risk.risk if self.risk else None


@dataclass
class CallInfo:
    """Who is asking: enough for the approval prompt and the events."""

    tool_name: str
    tool_call_id: str
    arguments: dict[str, object]
    actor: str = "local"
    loop_id: str = "main"
    cancel: asyncio.Event | None = None
    approval_wait: float = 0.0
    """Seconds this call spent waiting for a person (its turn in the queue included); set
    by the policy, so the call's duration can leave it out and show it apart."""
    cwd: str | None = None
    """Where the call runs and relative paths start: the shared shell's directory."""
    hook_permission: Literal["allow", "ask"] | None = None
    """A PreToolUse hook's ``permissionDecision`` (see ``hook_verdict``)."""
    hook_reason: str = ""
    preview: Callable[[], Awaitable[str | None]] | None = None
    """The diff the call would make (``Tool.preview``), read only when a person is asked."""
    approved_diff: str | None = None
    """The diff a person saw and allowed: the tool refuses to make a different change."""


class SecurityPolicy:
    """Judges calls, resolves paths and builds command environments for one workspace."""

    def __init__(
        self,
        workspace: Path,
        settings: SecuritySettings | None = None,
        *,
        approval_mode: ApprovalMode = ApprovalMode.ASK,
        approver: Approver | None = None,
        grants: GrantStore | None = None,
        extra_readable: list[Path] | None = None,
        on_event: Callable[[Event], None] | None = None,
        local_paths: bool = True,
        target_home: str | None = None,
        sandbox: SandboxFacts | None = None,
    ) -> None:
        self.settings = settings or SecuritySettings()
        self.approval_mode = approval_mode
        self.sandbox = sandbox or SandboxFacts()
        self.approver: Approver = approver or NoApprover()
        self.paths = PathGuard(
            workspace=workspace,
            forbidden=[
                *self.settings.forbidden_paths,
                *self.settings.extra_forbidden_paths,
                # agent-tui's own user config: it can hold the provider API key.
                str(config_dir() / "config.toml"),
            ],
            workspace_only=self.settings.workspace_only,
            # The saved full output of truncated results must stay readable: the truncation
            # marker tells the model to page through it with read_file.
            allowed_roots=[
                *self.settings.allowed_roots,
                str(tool_output_dir()),
                *(str(p) for p in extra_readable or []),
            ],
            local=local_paths,
            home=target_home,
            allowed_secrets=list(self.settings.allowed_secret_paths),
        )
        self.grants = grants or GrantStore(self.paths.workspace)
        self.allow_rules = parse_rules(self.settings.allow)
        self.ask_rules = parse_rules(self.settings.ask)
        self.deny_rules = parse_rules(self.settings.deny)
        self.command_denylist = parse_rules(
            [f"run_shell({pattern})" for pattern in self.settings.command_denylist]
        )
        self.rate_limiter = RateLimiter(self.settings.max_actions_per_hour)
        self.hosts = HostPolicy.from_lists(self.settings.allowed_hosts, self.settings.blocked_hosts)
        self.on_event = on_event
        # Commands start in the workspace; a local one's git config can be read to check.
        self.risk_context = RiskContext(
            cwd=str(self.paths.workspace),
            home=target_home
            if target_home is not None
            else (str(Path.home()) if local_paths else None),
            local=local_paths,
            secrets=tuple(self.paths.forbidden),
        )
        self._env: dict[str, str] | None = None
        self._approval_lock = asyncio.Lock()
        self._asking = 0
        """Calls inside ``_ask``: the one on screen and those waiting their turn."""

    @property
    def workspace(self) -> Path:
        return self.paths.workspace

    @property
    def ceiling(self) -> PermissionMode:
        if self.approval_mode is ApprovalMode.READ_ONLY:
            return PermissionMode.READ_ONLY
        return self.settings.permission_ceiling

    def resolve_path(
        self,
        raw: str,
        *,
        write: bool = False,
        allowance: tuple[Path, ...] = (),
        base: str | None = None,
    ) -> Path:
        """A checked path; ``allowance`` is the secrets approved for the calling tool call,
        ``base`` the directory the call was approved in (None: where the shell is now)."""
        return self.paths.resolve(raw, write=write, allowance=allowance, base=base)

    def follow_shell(self, cwd: Callable[[], str | None]) -> None:
        """Judge relative paths against ``cwd()`` (a shared shell's directory) when it answers.

        A person or the model may ``cd`` in a watched tmux shell; a relative path then means
        what it would mean typed there, and the approval says where that is.
        """
        self.paths.relative_base = cwd

    def elsewhere(self, cwd: str | None) -> bool:
        """True when ``cwd`` is known and is not the workspace itself."""
        if cwd is None:
            return False
        here = str(self.workspace)
        if os.path.normpath(cwd) == here:
            return False
        return not self.paths.local or os.path.realpath(cwd) != here

    def secret_reads(self, access: ToolAccess) -> dict[str, Checked]:
        """The call's read paths that are secrets (neither allowed nor approved yet)."""
        checked = {raw: self.paths.check(raw) for raw in access.read_paths}
        return {raw: item for raw, item in checked.items() if item.secret is not None}

    def check_url(self, url: str) -> None:
        """Refuse a web request whose host ``[security]`` forbids (raises PermissionDenied)."""
        self.hosts.check(url)

    def command_env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """The environment for a command, built once per policy: walking ``os.environ`` costs
        a quarter of a millisecond, a fifth of a whole ``true`` command."""
        if self._env is None:
            self._env = reduced_environment(
                self.settings.env_allowlist, self.settings.env_passthrough
            )
        return {**self._env, **extra} if extra else dict(self._env)

    # -- judging -----------------------------------------------------------------------------

    def required_permission(
        self, access: ToolAccess, risk: CommandRisk | None, paths: dict[str, Path]
    ) -> PermissionMode:
        needed = access.permission
        if risk is not None:
            effective = max_risk(risk.risk, claimed_risk(access.claimed_risk))
            if effective in ("high", "unknown"):
                # An unknown program could do anything: it needs what "high" needs.
                needed = max(needed, PermissionMode.DANGER_FULL_ACCESS)
            elif not risk.read_only or effective != "low":
                needed = max(needed, PermissionMode.WORKSPACE_WRITE)
        for raw in access.write_paths:
            if not self.paths.inside_workspace(paths[raw]):
                needed = max(needed, PermissionMode.DANGER_FULL_ACCESS)
        return needed

    def precheck(
        self, tool: str, access: ToolAccess
    ) -> tuple[PermissionMode, CommandRisk | None, dict[str, Path]]:
        """Every hard refusal, with nobody asked. Raises PermissionDenied."""
        paths = {raw: self.paths.resolve(raw, write=True) for raw in access.write_paths}
        secrets = self.secret_reads(access)
        if secrets and (
            self.approval_mode is ApprovalMode.READ_ONLY or isinstance(self.approver, NoApprover)
        ):
            who = "read-only mode" if self.approval_mode is ApprovalMode.READ_ONLY else "no one"
            raise PermissionDenied(
                "; ".join(item.secret or raw for raw, item in secrets.items())
                + f". Reading a secret needs the user's approval, and {who} can give it "
                f"here; the user can list the path in {ALLOW_SETTING} to allow it"
            )
        for raw in access.read_paths:
            paths.setdefault(raw, self.paths.check(raw).path)
        risk: CommandRisk | None = None
        if access.command is not None:
            if "\x00" in access.command:
                raise PermissionDenied("the command contains a NUL byte")
            from tui.security.risk.assess import assess_command  # the rater loads on first use

            risk = assess_command(access.command, self.risk_context)
            self._check_command_lists(tool, access.command, risk)
            blocked = high_risk_refusal(self.settings, tool, access, risk, self.allow_rules)
            if blocked is not None:
                raise PermissionDenied(blocked)
        needed = self.required_permission(access, risk, paths)
        if needed > self.ceiling:
            flag = _MODE_FLAG.get(needed, "a wider --approval-mode")
            raise PermissionDenied(
                f"{tool} needs {needed.value} permission"
                + (f" (computed risk: {risk.risk})" if risk else "")
                + f", above this session's limit of {self.ceiling.value}. "
                f"Do it another way, or ask the user to rerun with {flag}"
                + (
                    " or raise [security].permission_ceiling"
                    if self.approval_mode is not ApprovalMode.READ_ONLY
                    else ""
                )
            )
        subjects = call_subjects(access, risk)
        rule = first_match(self.deny_rules, tool, subjects)
        if rule is not None:
            raise PermissionDenied(f"{tool} is denied by the rule {rule} in [security].deny")
        if access.is_acting and (wait := self.rate_limiter.check()) is not None:
            raise LimitReached(
                f"rate limit reached: {self.settings.max_actions_per_hour} acting calls per hour "
                f"([security].max_actions_per_hour); the next is possible in {wait:.0f} s"
            )
        return needed, risk, paths

    def _check_command_lists(self, tool: str, command: str, risk: CommandRisk) -> None:
        segments = [s.text for s in risk.segments]
        rule = first_match(self.command_denylist, "run_shell", [command, *segments])
        if rule is not None:
            raise PermissionDenied(
                f"the command matches {rule.content!r} in [security].command_denylist"
            )
        allowed = self.settings.command_allowlist
        if allowed is not None:
            outside = sorted(
                {s.program or s.text for s in risk.segments if (s.program or "") not in allowed}
            )
            if outside:
                raise PermissionDenied(
                    f"{', '.join(outside)} not in [security].command_allowlist "
                    f"({', '.join(allowed) or 'empty'})"
                )

    def verdict(
        self, tool: str, access: ToolAccess, needed: PermissionMode, risk: CommandRisk | None
    ) -> tuple[Verdict, str]:
        if self.secret_reads(access):
            # Asked in every mode, before any allow rule or grant: a key is read only when
            # the person says so for this call (or lists it in allowed_secret_paths).
            return Verdict.ASK, "secret"
        subjects = call_subjects(access, risk)
        segments = [s.text.strip() for s in risk.segments] if risk else []
        whole = access.command if access.command is not None else access.subject
        parts = segments or ([access.subject] if access.subject else [])
        if covers_all(self.allow_rules, tool, whole, parts):
            return Verdict.ALLOW, "rule"
        if covers_all(self.grants.rules(), tool, whole, parts):
            return Verdict.ALLOW, "grant"
        if first_match(self.ask_rules, tool, subjects) is not None:
            return Verdict.ASK, "rule"
        if risk is not None and risk.reads_secret:
            # A secret read is never let through by a mode, not even full-auto: only a rule or
            # grant that covers it, or the person, once they have seen which secret it reads.
            return Verdict.ASK, "secret"
        mode = self.approval_mode
        if needed == PermissionMode.READ_ONLY or mode is ApprovalMode.FULL_AUTO:
            if asks_for_risk(self.settings, access, risk):
                return Verdict.ASK, "risk"
            return Verdict.ALLOW, "mode"
        if (
            mode is ApprovalMode.AUTO_EDIT
            and needed == PermissionMode.WORKSPACE_WRITE
            and access.command is None
            and self.control_write(access) is None
        ):
            return Verdict.ALLOW, "mode"
        return Verdict.ASK, "mode"

    def ask_reason(
        self, tool: str, access: ToolAccess, needed: PermissionMode, risk: CommandRisk | None
    ) -> str:
        """Why ``verdict`` said ASK, in the order it decides: secret, ask rule, mode."""
        secrets = self.secret_reads(access)
        if secrets:
            found = [item.secret or raw for raw, item in secrets.items()]
            return secret_reason(self.approval_mode, found)
        rule = first_match(self.ask_rules, tool, call_subjects(access, risk))
        if rule is not None:
            return rule_reason(rule)
        if risk is not None and risk.reads_secret:
            places = [place for segment in risk.segments for place in segment.secrets]
            return secret_reason(self.approval_mode, list(dict.fromkeys(places)))
        if self.approval_mode is ApprovalMode.FULL_AUTO and risk is not None:
            return risk_reason(access, risk)
        control = self.control_write(access)
        return mode_reason(self.approval_mode, access, needed, risk, control)

    def control_write(self, access: ToolAccess) -> str | None:
        """Why one of the call's writes changes what runs later (see ``control_file``)."""
        for raw in access.write_paths:
            reason = control_file(self.paths.resolve(raw))
            if reason is not None:
                return reason
        return None

    async def authorize(self, access: ToolAccess, call: CallInfo) -> Authorization:
        """Let the call through or raise PermissionDenied with what the model should read."""
        tool = call.tool_name
        needed, risk, paths = self.precheck(tool, access)
        secrets = tuple(item.path for item in self.secret_reads(access).values())
        verdict, how = hook_verdict(
            self.verdict(tool, access, needed, risk), call.hook_permission, self.approval_mode
        )
        outside = access.outside and self.sandbox.active
        if outside:
            verdict, how = self._outside_verdict(access)
        if verdict is Verdict.ASK:
            if outside:
                reason = OUTSIDE_WARNING + (
                    f"; the model says why: {access.why}" if access.why else ""
                )
            elif how == "hook":
                reason = "a PreToolUse hook asks for the user's approval" + (
                    f": {call.hook_reason}" if call.hook_reason else ""
                )
            else:
                reason = self.ask_reason(tool, access, needed, risk)
            asked = time.perf_counter()
            try:
                how = await self._ask(
                    access, call, risk, reason, forced=call.hook_permission == "ask" or outside
                )
            finally:
                call.approval_wait += time.perf_counter() - asked
        if access.is_acting:
            self.rate_limiter.record()
        confinement = self.walls(how, outside=outside, risk=risk)
        return Authorization(
            how=how,
            permission=needed,
            risk=risk,
            paths=paths,
            secrets=secrets,
            confinement=confinement if self.sandbox.active else None,
        )

    def walls(self, how: str, *, outside: bool, risk: CommandRisk | None) -> Confinement:
        """The sandbox one call gets: its mode's column (``call_confinement``), without the
        network for a command that needs none where each command has a sandbox of its own."""
        walls = self.sandbox.call_confinement(self.approval_mode, how, outside=outside)
        if (
            self.sandbox.per_command
            and walls.network != "none"
            and not walls.outside
            and risk is not None
            and needs_no_network(risk)
        ):
            return walls.offline()
        return walls

    def _outside_verdict(self, access: ToolAccess) -> tuple[Verdict, str]:
        """Going outside the sandbox is a person's yes every time: no mode, rule or grant
        answers it, and with nobody to ask it is refused."""
        if isinstance(self.approver, NoApprover):
            raise PermissionDenied(
                "running a command outside the sandbox needs a person's yes, and no one can "
                "give it here: run it inside the sandbox (drop outside_sandbox), or ask the user "
                "to run it themselves"
            )
        return Verdict.ASK, "outside"

    def where_label(self, confinement: Confinement | None) -> str:
        """Where a command runs, for the modal and the tool block."""
        if not self.sandbox.active:
            return self.sandbox.absent
        return (confinement or self.sandbox.mode_confinement(self.approval_mode)).label

    # -- asking ------------------------------------------------------------------------------

    def approval_request(
        self, access: ToolAccess, call: CallInfo, risk: CommandRisk | None, reason: str = ""
    ) -> ApprovalRequested:
        secret_views = [
            RiskSegmentView(
                text=raw, risk="high", reasons=[f"reads a secret: {item.path}", item.secret or ""]
            )
            for raw, item in self.secret_reads(access).items()
        ]
        return ApprovalRequested(
            request_id=ApprovalBroker.next_id(),
            tool_call_id=call.tool_call_id,
            tool_name=call.tool_name,
            arguments=dict(call.arguments),
            command=access.command,
            risk=(
                "high"
                if secret_views
                else max_risk(risk.risk, claimed_risk(access.claimed_risk))
                if risk
                else None
            ),
            segments=[
                *(
                    RiskSegmentView(text=s.text, risk=s.risk, reasons=list(s.reasons))
                    for s in (risk.segments if risk else ())
                ),
                *secret_views,
            ],
            claimed_risk=access.claimed_risk,
            why=access.why,
            actor=call.actor,
            cwd=call.cwd,
            cwd_elsewhere=self.elsewhere(call.cwd),
            sandbox=self.where_label(
                self.walls("approved", outside=access.outside and self.sandbox.active, risk=risk)
            )
            if access.command is not None
            else None,
            outside=access.outside and self.sandbox.active,
            suggested_pattern=suggest_pattern(call.tool_name, access, risk),
            always_rules=[str(rule) for rule in grant_rules(call.tool_name, access, risk, None)],
            reason=reason,
            loop_id=call.loop_id,
        )

    async def _ask(
        self,
        access: ToolAccess,
        call: CallInfo,
        risk: CommandRisk | None,
        reason: str = "",
        *,
        forced: bool = False,
    ) -> str:
        request = self.approval_request(access, call, risk, reason)
        # The diff shows the file's current content: never for a secret place, whose content
        # would land in the prompt, the event stream and the saved transcript.
        secret = any(self.paths.check(raw).secret for raw in access.write_paths)
        diff = None if secret else await call_preview(call)
        if diff is not None:
            request = request.model_copy(update={"diff": diff})
        # One prompt at a time: a person answers questions in order, never two at once.
        self._queue_changed(+1)
        try:
            async with self._approval_lock:
                # A grant given while this call waited its turn may already cover it (not
                # when a hook asked for a person: then only a person answers).
                verdict, how = self.verdict(
                    call.tool_name, access, PermissionMode.DANGER_FULL_ACCESS, risk
                )
                if verdict is Verdict.ALLOW and not forced:
                    return how
                answer = await self._wait_answer(request, call)
                call.approved_diff = request.diff
        finally:
            self._queue_changed(-1)
        self._emit(
            ApprovalResolved(
                request_id=request.request_id,
                tool_call_id=call.tool_call_id,
                decision=answer.decision.value,
                message=answer.message,
                grant=None,
                loop_id=call.loop_id,
            )
        )
        return self._apply_answer(answer, access, call, risk)

    async def _wait_answer(self, request: ApprovalRequested, call: CallInfo) -> ApprovalAnswer:
        asking = asyncio.ensure_future(self.approver(request))
        if call.cancel is None:
            waiters: set[asyncio.Future[object]] = {asking}  # type: ignore[arg-type]
        else:
            waiters = {asking, asyncio.ensure_future(call.cancel.wait())}  # type: ignore[arg-type]
        try:
            done, _ = await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiter in waiters:
                if not waiter.done():
                    waiter.cancel()
        if asking not in done:
            raise PermissionDenied("the call was cancelled while waiting for approval")
        try:
            return asking.result()
        except ApprovalUnavailable as unavailable:
            raise PermissionDenied(str(unavailable)) from None

    def _apply_answer(
        self, answer: ApprovalAnswer, access: ToolAccess, call: CallInfo, risk: CommandRisk | None
    ) -> str:
        if answer.decision is ApprovalDecision.DENY:
            raise PermissionDenied(DENIED)
        if answer.decision is ApprovalDecision.DENY_WITH_MESSAGE:
            raise PermissionDenied(f"{DENIED} The user said: {answer.message}")
        if answer.decision is ApprovalDecision.ALLOW_ALWAYS:
            for rule in grant_rules(call.tool_name, access, risk, answer.pattern, answer.rules):
                self.grants.add(rule, answer.scope)
            return "approved_always"
        return "approved"

    def _queue_changed(self, delta: int) -> None:
        self._asking += delta
        self._emit(ApprovalsWaiting(count=max(0, self._asking - 1), loop_id="policy"))

    def _emit(self, event: Event) -> None:
        if self.on_event is not None:
            self.on_event(event)
