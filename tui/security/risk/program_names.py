"""Program names: the rule-table key a name stands for, and the fixed label of each program
that has one."""

from __future__ import annotations

import re

from tui.security.risk.tables.programs import ALIASES, LABELS, VERSIONED
from tui.security.risk.tables.wrappers import WRAPPER_RISK
from tui.security.risk.verdict import Risk


def basename(value: str) -> str:
    stripped = value.rstrip("/")
    return stripped.rsplit("/", 1)[-1] if stripped else value


def program_key(value: str) -> str:
    """The rule-table name: basename, lower case (macOS file systems ignore case), unversioned."""
    low = basename(value).lower()
    match = VERSIONED.match(low)
    if match:
        low = match.group(1)
    if low.startswith("mkfs"):
        return "mkfs"
    return ALIASES.get(low, low)


def _labels() -> dict[str, tuple[Risk, str]]:
    table: dict[str, tuple[Risk, str]] = {}
    for risk, reason, names in LABELS:
        for name in names.split():
            table[name] = (risk, reason.replace("{}", name))
    return table


SIMPLE: dict[str, tuple[Risk, str]] = _labels()
"""Program → its fixed label and reason, whatever its arguments."""
KEY_RISK: dict[str, Risk] = {name: risk for name, (risk, _) in SIMPLE.items()}
KEY_RISK.update({name: risk for name, (risk, _) in WRAPPER_RISK.items() if risk == "high"})
"""Program → its fixed label; a high one named in an unparsable region is assumed to run."""

_SYSTEM_BIN = re.compile(r"^/(usr/(local/)?)?s?bin/|^/opt/homebrew/bin/|^/bin/")


def unvetted_path(name: str) -> bool:
    """``./ls`` is the repository's own ``ls``, not the system's: any file outside the system
    program folders may be anything, whatever its name."""
    return "/" in name and not _SYSTEM_BIN.match(name)


# -- files -----------------------------------------------------------------------------------
