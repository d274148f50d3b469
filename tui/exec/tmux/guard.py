"""Commands that would break the shared shell, refused before they are typed into it.

A pane's shell lives across tool calls and a person may be watching it. ``set -e`` makes the
next failing command close it, ``exit``/``logout`` close it now, ``exec`` replaces it (or
redirects its output away from the prompt markers), and raw ``tmux kill-*``/``new-session``
typed into the pane act on the very server the agent runs in. Models do all of these; the
remedy is always the same — run it in a child shell, or use the tmux tools.

The check reads the risk parser's segments (one per simple command, wrappers such as
``sudo`` and ``env`` already stripped), so quoting and compound commands cannot hide a
segment, and ``bash -lc 'set -e; …'`` stays allowed: it is one ``bash`` segment.
It errs towards refusing: ``( exit 1 )`` in a subshell is refused too, with the remedy.
"""

from __future__ import annotations

import shlex

from tui.exec.tmux_pane import ShellGuardError

_TMUX_GLOBAL_WITH_ARG = {"-L", "-S", "-f", "-c", "-T"}
_TMUX_FORBIDDEN = {"new-session", "kill-server", "kill-session", "kill-window", "kill-pane"}
_TMUX_NEW_PANE = {"new-window", "split-window"}
_TMUX_ALIASES = {
    "new": "new-session",
    "neww": "new-window",
    "splitw": "split-window",
    "killp": "kill-pane",
    "killw": "kill-window",
}
MANAGED_PANE_TOOLS = (
    "tmux_create_pane (a split or a window), tmux_create_session, tmux_kill_pane, tmux_kill_session"
)


def _words(text: str) -> list[str]:
    try:
        words = shlex.split(text, comments=False, posix=True)
    except ValueError:
        words = text.split()
    while words and "=" in words[0] and words[0].split("=", 1)[0].isidentifier():
        words.pop(0)
    return words


def _option(name: str) -> str:
    """A shell option's name as zsh compares them: case and underscores do not count."""
    return name.replace("_", "").lower()


def _sets_errexit(words: list[str]) -> bool:
    """``set -e``, ``set -o errexit`` (or zsh's ``ERR_EXIT``), ``setopt errexit``/``-e``,
    ``unsetopt noerrexit``: all turn on exit-on-error in the shell that runs them."""
    first, args = words[0], words[1:]
    if first in ("setopt", "unsetopt"):
        wanted = "errexit" if first == "setopt" else "noerrexit"
        for word in args:
            if word.startswith("-") and not word.startswith("--") and "e" in word[1:]:
                return first == "setopt"
            if _option(word) == wanted:
                return True
        return False
    for index, word in enumerate(args):
        if word == "--":
            return False
        if word == "-o" and index + 1 < len(args) and _option(args[index + 1]) == "errexit":
            return True
        if word.startswith("-") and not word.startswith("--") and "e" in word[1:]:
            return True
    return False


def _tmux_command(word: str) -> str:
    """The tmux command ``word`` names: itself, through an alias, or as tmux's unique prefix
    of one we refuse (an ambiguous prefix tmux would refuse too, so erring costs nothing)."""
    if word in _TMUX_ALIASES:
        return _TMUX_ALIASES[word]
    for name in sorted(_TMUX_FORBIDDEN | _TMUX_NEW_PANE):
        if name.startswith(word) and len(word) >= 3:
            return name
    return word


def _tmux_subcommand(words: list[str]) -> str:
    """The tmux command a ``tmux …`` line runs (``new-session`` when there is none)."""
    index = 1
    while index < len(words):
        word = words[index]
        if word in _TMUX_GLOBAL_WITH_ARG:
            index += 2
        elif word.startswith("-") and len(word) > 1:
            index += 1
        else:
            return _tmux_command(word)
    return "new-session"


def shared_shell_problem(command: str) -> str | None:
    """Why ``command`` must not be typed into a shared pane, or None when it may."""
    from tui.security.risk.assess import assess_command  # the rater loads on first use

    for segment in assess_command(command).segments:
        words = _words(segment.text)
        first = words[0] if words else ""
        program = segment.program or first
        if first == "exec":
            return (
                f"`{segment.text.strip()}` would replace (or redirect) the shared shell. "
                "Run the program normally, or in a child shell: bash -lc '…'"
            )
        if program in ("exit", "logout", "suspend"):
            return (
                f"`{segment.text.strip()}` would end the shared shell the person is watching. "
                "To end a program, send keys to it (tmux_send_keys C-c or C-d); to test an "
                "exit status, use a child shell: bash -c 'exit 3'"
            )
        if program in ("set", "setopt", "unsetopt") and first == program and _sets_errexit(words):
            return (
                f"`{segment.text.strip()}` would make the next failing command close the "
                "shared shell. Put the script in a child shell instead: bash -lc 'set -e; …' "
                "(zsh: zsh -c 'setopt errexit; …')"
            )
        tmux_words = words[words.index("tmux") :] if "tmux" in words else words
        subcommand = _tmux_subcommand(tmux_words) if program == "tmux" else ""
        if subcommand in _TMUX_NEW_PANE:
            return (
                f"`{segment.text.strip()}` would open a pane agent-tui does not manage, in the "
                "tmux server this shell runs in. Use the managed-pane tools instead: "
                + MANAGED_PANE_TOOLS
            )
        if subcommand in _TMUX_FORBIDDEN:
            return (
                f"`{segment.text.strip()}` would act on the tmux server this shell runs in. "
                f"Use the tmux tools instead: {MANAGED_PANE_TOOLS}"
            )
    return None


def check_shared_shell(command: str) -> None:
    """Raise ShellGuardError when ``command`` must not be typed into a shared pane."""
    problem = shared_shell_problem(command)
    if problem is not None:
        raise ShellGuardError(f"refused in the shared shell: {problem}")
