"""Stops a model from retrying the same failing call for ever.

The same tool with the same arguments failing with the same error twice is not run a third
time; the model gets a fixed remediation error instead. A success of that tool clears its
record, because a success usually means the situation changed.
"""

from __future__ import annotations

from dataclasses import dataclass

from tui.errors import InvalidArguments

MAX_IDENTICAL_FAILURES = 2


@dataclass
class _Failure:
    error: str
    count: int


class FailureMemory:
    def __init__(self, limit: int = MAX_IDENTICAL_FAILURES) -> None:
        self.limit = limit
        self._failures: dict[tuple[str, str], _Failure] = {}

    def check(self, key: tuple[str, str]) -> None:
        """Raise instead of running a call that already failed identically ``limit`` times."""
        failure = self._failures.get(key)
        if failure is not None and failure.count >= self.limit:
            raise InvalidArguments(
                f"this exact {key[0]} call already failed {failure.count} times with the same "
                f"error, so it was not run again. The error was: {failure.error[:300]} — "
                "change the arguments or take a different approach"
            )

    def record_failure(self, key: tuple[str, str], error: str) -> None:
        failure = self._failures.get(key)
        if failure is not None and failure.error == error:
            failure.count += 1
        elif failure is None or not error.startswith("Error (InvalidArguments): this exact"):
            self._failures[key] = _Failure(error, 1)

    def record_success(self, tool_name: str) -> None:
        for key in [key for key in self._failures if key[0] == tool_name]:
            del self._failures[key]
