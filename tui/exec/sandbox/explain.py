"""Say when a command failed because of the sandbox, so the model knows it may ask to go out.

A failed command's own error ("Read-only file system", "Could not resolve host") reads like
a broken machine; the note beside it names the wall it met and the way past it that a person
decides (``outside_sandbox``), so the model neither retries blindly nor works around it.
"""

from __future__ import annotations

from collections.abc import Sequence

from tui.exec.sandbox.proxy import Refusal
from tui.security.confinement import Confinement

ASK_OUTSIDE = (
    "if the task really needs it, call run_shell again with outside_sandbox=true and say why "
    "in `why`: the user is asked, in every mode"
)

_WRITE_REFUSED = ("Read-only file system", "EROFS")
_NETWORK_REFUSED = (
    "Network is unreachable",
    "Could not resolve host",
    "Temporary failure in name resolution",
    "Name or service not known",
    "getaddrinfo",
    "ENETUNREACH",
    "No address associated with hostname",
    "Failed to connect to",
    "Couldn't connect to server",
    "Connection refused",
    "ECONNREFUSED",
)


def sandbox_notes(
    walls: Confinement, output: str, refusals: Sequence[Refusal], *, failed: bool
) -> list[str]:
    """Notes for a command's result: which wall it most likely met, and what to do.

    Args:
        walls: The walls it ran in.
        output: What it printed (the walls' own errors are looked for there).
        refusals: Connections the proxy refused while it ran.
        failed: It exited non-zero (only then is a bare "Permission denied" worth a note).
    """
    notes: list[str] = []
    if walls.outside:
        return notes
    if any(marker in output for marker in _WRITE_REFUSED):
        where = (
            "only a private /tmp is writable"
            if walls.files == "read-only"
            else "only the workspace (minus .git/hooks, .git/config and agent settings) and a "
            "private /tmp are writable"
        )
        notes.append(f"the sandbox ({walls.label}) refused a write: {where}; {ASK_OUTSIDE}")
    for refusal in refusals[:5]:
        notes.append(f"the sandbox's proxy refused {refusal.host}:{refusal.port}: {refusal.reason}")
    if walls.network == "none" and any(marker in output for marker in _NETWORK_REFUSED):
        notes.append(f"the sandbox ({walls.label}) has no network in this mode; {ASK_OUTSIDE}")
    if failed and "Permission denied" in output and not notes:
        notes.append(
            "if that was a secret place (~/.ssh, cloud credentials, agent-tui's own data): the "
            "sandbox hides those in every mode"
        )
    return notes
