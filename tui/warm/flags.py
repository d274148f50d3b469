"""Whether a command line asks for a headless (``-p``) run: read first thing, before anything
else is imported, by the launcher, the warm-start client and the first request sent ahead."""

from __future__ import annotations


def prompt_flag(arg: str) -> bool:
    return arg in ("-p", "--prompt") or arg.startswith(("--prompt=", "-p"))


def headless(args: list[str]) -> bool:
    """``args`` (the command line without the program) holds ``-p``/``--prompt``."""
    return any(prompt_flag(arg) for arg in args)
