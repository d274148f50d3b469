"""Notices a model going round in circles with calls that succeed, and says so.

Two patterns, beside the identical-failure suppression in ``failures``:

- **ping-pong**: the same two calls (tool and arguments) alternating, A B A B …, each
  returning the same result as the last time, for ``ping_pong_cycles`` cycles;
- **no progress**: the same call returning the same successful output
  ``no_progress_repeats`` times in a row.

What counts is the model's decisions, not its calls: the calls of one answer were chosen
together, before any of their results was seen (five identical runs of a flaky test sent at
once are one decision), so a call repeated within one answer is neither counted nor refused
(``begin_decision`` marks where an answer's calls start). Only a call made again after its
result was seen can repeat.

Both escalate as ZeroClaw's detector does, warn then block: the call that completes a
pattern runs and its result carries a note telling the model what to do instead; the next
call that would continue the same pattern is not run, and the model reads why. Anything
else the model does in between lifts the block. Outputs are compared, not just calls, so
polling a pane whose output changes, or a ``sleep`` then a check that sees something new,
never trips either detector.
"""

from __future__ import annotations

import hashlib
from collections import deque
from dataclasses import dataclass
from typing import Literal

from tui.config.sections.agent import DEFAULT_NO_PROGRESS_REPEATS, DEFAULT_PING_PONG_CYCLES
from tui.errors import ToolError
from tui.safe_text import excerpt
from tui.tools.result import ContentPart, ToolResult

Key = tuple[str, str]
"""``(tool name, canonical arguments JSON)``, as ``FailureMemory`` keys a call."""

LoopKind = Literal["ping_pong", "no_progress"]


class LoopDetected(ToolError):
    """The call was not run: it would have continued a loop the model was already told of."""

    title = "Loop detected"
    ends_turn = False

    def __init__(self, msg: str, loop: LoopKind) -> None:
        super().__init__(msg)
        self.loop = loop


class LoopStopped(LoopDetected):
    """The third stage (ZeroClaw's circuit breaker): the model was warned, then refused, and
    went on with the same loop: the call is not run and the turn ends, with a notice."""

    ends_turn = True


@dataclass(frozen=True)
class LoopWarning:
    """A pattern the call just completed: what the model reads and what the person sees."""

    loop: LoopKind
    note: str
    notice: str


@dataclass
class _Entry:
    key: Key
    outcome: str
    """A digest of the result: error flag and full text."""


@dataclass
class _Streak:
    key: Key
    outcome: str
    count: int


class LoopMemory:
    """The recent calls of one registry (one loop), and the two detectors over them.

    Args:
        ping_pong_cycles: A B cycles that trip the ping-pong detector; 0 turns it off.
        no_progress_repeats: identical successful outputs that trip the no-progress
            detector; 0 turns it off.
    """

    def __init__(
        self,
        ping_pong_cycles: int = DEFAULT_PING_PONG_CYCLES,
        no_progress_repeats: int = DEFAULT_NO_PROGRESS_REPEATS,
    ) -> None:
        self.ping_pong_cycles = max(0, ping_pong_cycles)
        self.no_progress_repeats = max(0, no_progress_repeats)
        self._history: deque[_Entry] = deque(maxlen=max(2 * self.ping_pong_cycles + 2, 8))
        self._streak: _Streak | None = None
        """The call made last, while it keeps returning the same successful output."""
        self._refused: set[tuple[str, frozenset[Key]]] = set()
        """Loops a call was already refused for: refusing one again stops the turn."""
        self._decision: set[Key] | None = None
        """Calls of the answer being run that were let through: their twins in it run
        unjudged and uncounted (the registry asks ``twin`` first). None between answers: a
        call from elsewhere (the person's ``!``, the CLI) is a decision of its own."""

    def begin_decision(self) -> None:
        """The calls from here on were sent together, in one answer of the model."""
        self._decision = set()

    def end_decision(self) -> None:
        self._decision = None

    def twin(self, key: Key) -> bool:
        """An identical call of the same answer was already let through (it ran or runs)."""
        return self._decision is not None and key in self._decision

    def claim(self, key: Key) -> None:
        """This call passed the checks: its twins in the same answer are not judged again."""
        if self._decision is not None:
            self._decision.add(key)

    def copy_settings(self) -> LoopMemory:
        """A fresh memory with the same thresholds (a sub-agent's)."""
        return LoopMemory(self.ping_pong_cycles, self.no_progress_repeats)

    # -- before a call ---------------------------------------------------------------------------

    def check(self, key: Key) -> None:
        """Raise ``LoopDetected`` instead of running a call that continues a known loop."""
        cycles = self._ping_pong()
        if cycles is not None and key == self._history[-2].key:
            first, second = self._history[-2].key[0], self._history[-1].key[0]
            raise self._refuse(
                frozenset({self._history[-2].key, self._history[-1].key}),
                f"this {key[0]} call was not run: it would continue a loop — {first} and "
                f"{second} have alternated {cycles} times with the same arguments and the same "
                f"results each time. {_PING_PONG_ADVICE}",
                "ping_pong",
            )
        streak = self._streak
        if (
            self.no_progress_repeats
            and streak is not None
            and streak.key == key
            and streak.count >= self.no_progress_repeats
        ):
            raise self._refuse(
                frozenset({key}),
                f"this exact {key[0]} call was not run: it returned the same output the last "
                f"{streak.count} times, and nothing else happened since. "
                f"{_NO_PROGRESS_ADVICE}",
                "no_progress",
            )

    def _refuse(self, calls: frozenset[Key], message: str, loop: LoopKind) -> LoopDetected:
        """The refusal; the second for the same loop stops the turn."""
        if (loop, calls) in self._refused:
            return LoopStopped(
                f"{message} The model was already refused for this loop and went on: the turn "
                "is stopped so the user can decide.",
                loop,
            )
        self._refused.add((loop, calls))
        return LoopDetected(message, loop)

    # -- after a call ----------------------------------------------------------------------------

    def record(self, key: Key, result: ToolResult) -> LoopWarning | None:
        """Remember a call that ran; a warning when it completed a loop."""
        text = result.text
        spilled = result.details.get("full_output_path")
        if isinstance(spilled, str) and spilled:  # named after the call: differs every time
            text = text.replace(spilled, "")
        digest = hashlib.sha256(
            f"{int(result.is_error)}\0{text}".encode("utf-8", "surrogatepass")
        ).hexdigest()
        self._history.append(_Entry(key, digest))
        repeats = self._count_repeat(key, digest, result.is_error)
        cycles = self._ping_pong()
        if cycles is not None:
            first, second = self._history[-2].key[0], self._history[-1].key[0]
            return LoopWarning(
                "ping_pong",
                f"[loop detected: {first} and {second} have alternated {cycles} times with the "
                f"same arguments and the same results each time; this is not making progress. "
                f"{_PING_PONG_ADVICE}]",
                f"loop detected: {excerpt(first, 80)} and {excerpt(second, 80)} alternated "
                f"{cycles} times with unchanged results; the model was told to change course",
            )
        if self.no_progress_repeats and repeats >= self.no_progress_repeats:
            return LoopWarning(
                "no_progress",
                f"[loop detected: this exact {key[0]} call returned the same output {repeats} "
                f"times; repeating it will not change anything. {_NO_PROGRESS_ADVICE}]",
                f"loop detected: {excerpt(key[0], 80)} returned the same output {repeats} times "
                "with the same arguments; the model was told to change course",
            )
        return None

    def _count_repeat(self, key: Key, digest: str, is_error: bool) -> int:
        """Runs of this call in a row with this same successful output. Only in a row: a
        ``sleep`` between looks at something that moves repeats itself, but is no loop (and
        two unchanged calls taking turns are the ping-pong detector's)."""
        streak = self._streak
        if is_error:  # failures are ``FailureMemory``'s to count
            self._streak = None
            return 0
        if streak is not None and streak.key == key and streak.outcome == digest:
            streak.count += 1
        else:
            streak = self._streak = _Streak(key, digest, 1)
        return streak.count

    def _ping_pong(self) -> int | None:
        """Cycles of the alternation ending the history, when there are enough to count."""
        if not self.ping_pong_cycles:
            return None
        entries = self._history
        if len(entries) < 2 or entries[-1].key == entries[-2].key:
            return None
        length = 2
        index = len(entries) - 3
        while (
            index >= 0
            and entries[index].key == entries[index + 2].key
            and entries[index].outcome == entries[index + 2].outcome
        ):
            length += 1
            index -= 1
        cycles = length // 2
        return cycles if cycles >= self.ping_pong_cycles else None


_PING_PONG_ADVICE = (
    "Do not make these two calls again the same way: use the results you already have, change "
    "the arguments, try a different approach, or tell the user what is in the way."
)
_NO_PROGRESS_ADVICE = (
    "If you are waiting for something to finish, wait for it in one call (run_shell with wait, "
    "or a longer sleep) before looking again; otherwise use the output you already have, change "
    "the arguments, or take a different approach."
)


def with_note(result: ToolResult, note: str) -> ToolResult:
    """The result with ``note`` after its content, where a truncated head cannot hide it."""
    content: str | list[ContentPart]
    if isinstance(result.content, str):
        content = f"{result.content.rstrip()}\n\n{note}"
    else:
        content = [*result.content, note]
    return ToolResult(content, result.details, result.is_error, result.child_loop_id)
