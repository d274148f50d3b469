"""Checkpoints of the workspace around each turn, so ``/undo`` can put files back.

Before a turn's first tool call and after its last, the workspace's files are snapshotted into
a *shadow* git store in agent-tui's data folder (``checkpoints/<workspace>/store``), never the
workspace's own ``.git``: the person's history, index and refs are not touched, and sandboxed
commands cannot see or change the store (the data folder is hidden from them). What the
workspace's ``.gitignore`` files ignore is not snapshotted, nor is a file over ``MAX_FILE_BYTES``.

A turn that changed files is listed (``/undo list``); ``/undo`` puts back the files the last
such turn changed — their bytes and modes as they were before it, files it created removed —
and ``/undo N`` rewinds to before turn N (undoing every later turn's file changes too).
Whatever else a turn did — commands' effects outside the snapshotted files (ignored files,
other folders, databases, services, remote hosts), files written outside the workspace — is
named in the report as not restorable. ``/diff`` shows what the session changed.

git runs with no system or global config, no hooks and no fsmonitor, on its own store: a
repository's ``.gitattributes`` cannot make it run a filter program (none is configured).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import shutil
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tui.events import Event, ToolCallStarted
from tui.safe_text import one_line

MAX_FILE_BYTES = 20 * 1024 * 1024
MAX_FILES = 50_000
"""A workspace with more files than this (not ignored) is not checkpointed: say so, once."""
GIT_TIMEOUT = 120.0
EFFECT_TOOLS = frozenset({"python_repl", "http_request", "browser", "tmux_send_keys"})
"""Tools whose effects are not files in the workspace (beside every command a call ran)."""
FILE_TOOLS = frozenset({"write_file", "edit_file", "notebook_edit"})


class CheckpointError(Exception):
    """git failed, or the workspace cannot be checkpointed; the message says why."""


@dataclass
class Turn:
    """One turn that changed files."""

    number: int
    prompt: str
    before: str
    after: str
    changed: list[str]
    effects: list[str] = field(default_factory=list)
    """What it did that no checkpoint restores (commands, calls outside files)."""
    at: float = 0.0


def store_for(data_dir: Path, workspace: Path) -> Path:
    digest = hashlib.sha256(str(workspace).encode("utf-8", "surrogateescape")).hexdigest()[:16]
    return data_dir / "checkpoints" / f"{workspace.name or 'root'}-{digest}"


class Checkpoints:
    """The checkpoints of one session's turns in one local workspace.

    Args:
        workspace: The workspace (on this machine).
        folder: This workspace's checkpoint folder (``store_for``).
        session_id: Whose ledger (each session lists its own turns).
    """

    def __init__(self, workspace: Path, folder: Path, session_id: str) -> None:
        self.workspace = workspace.resolve()
        self.folder = folder
        self.store = folder / "store"
        self.ledger_path = folder / "sessions" / f"{session_id}.json"
        self.session_id = session_id
        self.turns: list[Turn] = self._load()
        self.disabled: str | None = None
        self._lock = asyncio.Lock()
        self._pending: asyncio.Task[str | None] | None = None
        self._prompt = ""
        self._effects: list[str] = []
        self._count = max((turn.number for turn in self.turns), default=0)

    # -- the turn's edges -----------------------------------------------------------------

    def turn_starts(self, prompt: str) -> None:
        """Snapshot now, in the background; ``ready`` waits for it before a tool runs."""
        self._prompt = one_line(prompt, 120)
        self._effects = []
        self._pending = asyncio.ensure_future(self._snapshot_or_none())

    async def ready(self) -> None:
        """Wait for the turn's first snapshot (a tool call is about to change things)."""
        if self._pending is not None:
            await asyncio.shield(self._pending)

    async def turn_ends(self) -> Turn | None:
        """Snapshot again; the turn is recorded when files changed (returned)."""
        pending, self._pending = self._pending, None
        if pending is None:
            return None
        before = await pending
        after = await self._snapshot_or_none()
        if before is None or after is None or before == after:
            return None
        try:
            changed = await self._changed(before, after)
        except CheckpointError as error:
            self.disabled = str(error)
            return None
        if not changed:
            return None
        self._count += 1
        turn = Turn(self._count, self._prompt, before, after, changed, self._effects, time.time())
        self.turns.append(turn)
        await asyncio.to_thread(self._save)
        return turn

    def observe(self, event: Event) -> None:
        """A bus listener: what the turn does beyond the snapshotted files."""
        if not isinstance(event, ToolCallStarted) or self._pending is None:
            return
        if event.command:
            self._effects.append(f"{event.tool_name}: {one_line(event.command, 160)}")
        elif event.tool_name in EFFECT_TOOLS or "__" in event.tool_name:
            self._effects.append(f"{event.tool_name} call")
        elif event.tool_name in FILE_TOOLS:
            path = str(event.arguments.get("path") or event.arguments.get("file_path") or "")
            full = Path(os.path.normpath(self.workspace / os.path.expanduser(path)))
            if path and not full.is_relative_to(self.workspace):
                self._effects.append(f"{event.tool_name}: {full} (outside the workspace)")

    # -- what the person asks ---------------------------------------------------------------

    async def undo(self, number: int | None = None) -> str:
        """Put back the files of turn ``number`` and every later turn (None: the last turn).

        Raises:
            CheckpointError: no such turn, or git failed.
        """
        if not self.turns:
            raise CheckpointError("no turn of this session changed files yet")
        turn = self.turns[-1] if number is None else self._turn(number)
        later = [t for t in self.turns if t.number >= turn.number]
        async with self._lock:
            current = await self._snapshot()
            paths = sorted({path for t in later for path in t.changed})
            present = set(await self._paths(turn.before, paths))
            await self._checkout(turn.before, [p for p in paths if p in present])
            removed = [p for p in paths if p not in present]
            await asyncio.to_thread(self._remove, removed)
            self.turns = [t for t in self.turns if t.number < turn.number]
            self._save()
        touched_since = await self._changed(later[-1].after, current)
        lines = [
            f"undid turn {turn.number}"
            + (f" and the {len(later) - 1} after it" if len(later) > 1 else "")
            + f" ({turn.prompt!r}): {len(paths)} file(s) put back as they were"
        ]
        lines += [f"  restored {p}" for p in paths if p in present]
        lines += [f"  removed {p} (the turn created it)" for p in removed]
        overwritten = sorted(set(touched_since) & set(paths))
        if overwritten:
            lines.append(f"  also lost: your own later edits to {', '.join(overwritten)}")
        effects = [effect for t in later for effect in t.effects]
        if effects:
            lines.append(
                "not restorable (outside the checkpointed files — ignored files, other "
                "folders, databases, services, remote hosts):"
            )
            lines += [f"  {effect}" for effect in effects]
        return "\n".join(lines)

    def listing(self) -> str:
        """``/undo list``: the turns that changed files, newest last."""
        if not self.turns:
            return "no turn of this session changed files yet"
        lines = ["turns that changed files (/undo N rewinds to before turn N):"]
        for turn in self.turns:
            stamp = time.strftime("%H:%M", time.localtime(turn.at))
            files = ", ".join(turn.changed[:4]) + (" …" if len(turn.changed) > 4 else "")
            effects = f"; ran {len(turn.effects)} command(s) or call(s)" if turn.effects else ""
            lines.append(
                f"  {turn.number}. {stamp} {turn.prompt!r}: {len(turn.changed)} file(s) "
                f"({files}){effects}"
            )
        return "\n".join(lines)

    async def diff(self) -> str:
        """``/diff``: what the session changed, from before its first turn to now."""
        if not self.turns:
            return ""
        async with self._lock:
            now = await self._snapshot()
        base = self.turns[0].before
        stat = await self._git("diff", "--stat", "--no-color", base, now)
        body = await self._git("diff", "--no-color", "--no-ext-diff", "--no-textconv", base, now)
        return f"{stat}\n{body}" if body.strip() else ""

    # -- git --------------------------------------------------------------------------------

    def _turn(self, number: int) -> Turn:
        for turn in self.turns:
            if turn.number == number:
                return turn
        known = ", ".join(str(t.number) for t in self.turns)
        raise CheckpointError(f"no turn {number} with file changes (turns: {known})")

    async def _snapshot_or_none(self) -> str | None:
        if self.disabled is not None:
            return None
        try:
            async with self._lock:
                return await self._snapshot()
        except CheckpointError as error:
            self.disabled = str(error)
            return None

    async def _snapshot(self) -> str:
        """The workspace's files as a commit in the store (its id)."""
        if not (self.store / "HEAD").exists():
            await asyncio.to_thread(self.store.mkdir, parents=True, exist_ok=True)
            await self._git("init", "-q", work_tree=False)
        untracked = await self._git("ls-files", "-z", "--others", "--exclude-standard")
        names = [name for name in untracked.split("\0") if name]
        if len(names) > MAX_FILES:
            raise CheckpointError(
                f"{len(names)} files are not ignored here (over {MAX_FILES}): checkpoints "
                "(and /undo) are off for this workspace"
            )
        big = await asyncio.to_thread(self._too_big, names)
        if big:
            await asyncio.to_thread(self._exclude, big)
        await self._git("add", "-A", "--ignore-errors", "--", ".")
        tree = (await self._git("write-tree")).strip()
        parent = (await self._git("rev-parse", "-q", "--verify", self._ref, check=False)).strip()
        args = ["commit-tree", tree, "-m", f"agent-tui checkpoint {self.session_id}"]
        if parent:
            if (await self._git("rev-parse", f"{parent}^{{tree}}")).strip() == tree:
                return parent
            args[2:2] = ["-p", parent]
        commit = (await self._git(*args)).strip()
        await self._git("update-ref", self._ref, commit)
        return commit

    @property
    def _ref(self) -> str:
        return f"refs/agent-tui/{self.session_id}"

    async def _changed(self, before: str, after: str) -> list[str]:
        out = await self._git("diff-tree", "-r", "-z", "--name-only", "--no-renames", before, after)
        return [name for name in out.split("\0") if name]

    async def _paths(self, commit: str, paths: list[str]) -> list[str]:
        if not paths:
            return []
        out = await self._git("ls-tree", "-r", "-z", "--name-only", commit, "--", *paths)
        return [name for name in out.split("\0") if name]

    async def _checkout(self, commit: str, paths: list[str]) -> None:
        if not paths:
            return
        index = str(self.folder / "restore.index")
        await self._git("read-tree", commit, index=index)
        await self._git("checkout-index", "-f", "-q", "--", *paths, index=index)

    def _remove(self, paths: list[str]) -> None:
        """Delete what the turn created, only inside the workspace, never through a link."""
        root = str(self.workspace)
        for relative in paths:
            target = self.workspace / relative
            parent = os.path.realpath(target.parent)
            if not (parent == root or parent.startswith(root + os.sep)):
                continue
            if target.is_symlink() or target.is_file():
                target.unlink()
            elif target.is_dir():
                shutil.rmtree(target, ignore_errors=True)
            folder = target.parent
            while folder != self.workspace and folder.is_dir() and not any(folder.iterdir()):
                folder.rmdir()
                folder = folder.parent

    def _too_big(self, names: list[str]) -> list[str]:
        big = []
        for name in names:
            try:
                if (self.workspace / name).lstat().st_size > MAX_FILE_BYTES:
                    big.append(name)
            except OSError:
                continue
        return big

    def _exclude(self, names: list[str]) -> None:
        info = self.store / "info"
        info.mkdir(parents=True, exist_ok=True)
        with (info / "exclude").open("a", encoding="utf-8") as out:
            for name in names:
                out.write("/" + "".join(f"\\{c}" if c in "*?[\\!#" else c for c in name) + "\n")

    async def _git(
        self,
        *args: str,
        index: str | None = None,
        work_tree: bool = True,
        check: bool = True,
    ) -> str:
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.folder),
            "LC_ALL": "C",
            "GIT_DIR": str(self.store),
            "GIT_INDEX_FILE": index or str(self.store / "index"),
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_AUTHOR_NAME": "agent-tui",
            "GIT_AUTHOR_EMAIL": "agent-tui@localhost",
            "GIT_COMMITTER_NAME": "agent-tui",
            "GIT_COMMITTER_EMAIL": "agent-tui@localhost",
            "GIT_TERMINAL_PROMPT": "0",
        }
        if work_tree:
            env["GIT_WORK_TREE"] = str(self.workspace)
        options = ["-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false"]
        options += ["-c", "core.autocrlf=false", "-c", "core.symlinks=true", "-c", "gc.auto=0"]
        try:
            process = await asyncio.create_subprocess_exec(
                "git",
                *options,
                *args,
                cwd=str(self.workspace),
                env=env,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
            )
        except OSError as error:
            raise CheckpointError(f"git cannot run ({error}): checkpoints are off") from None
        try:
            out, err = await asyncio.wait_for(process.communicate(), GIT_TIMEOUT)
        except TimeoutError:
            process.kill()
            await process.wait()
            raise CheckpointError(f"git {args[0]} took over {GIT_TIMEOUT:g} s") from None
        if check and process.returncode != 0:
            reason = one_line(err.decode("utf-8", "replace"), 300)
            raise CheckpointError(f"git {args[0]} failed: {reason}")
        return out.decode("utf-8", "surrogateescape")

    # -- the ledger ---------------------------------------------------------------------------

    def _load(self) -> list[Turn]:
        try:
            data = json.loads(self.ledger_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return []
        turns = []
        for item in data if isinstance(data, list) else []:
            try:
                turns.append(Turn(**item))
            except TypeError:
                continue
        return turns

    def _save(self) -> None:
        self.ledger_path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.ledger_path.with_suffix(".tmp")
        payload: list[dict[str, Any]] = [asdict(turn) for turn in self.turns]
        temporary.write_text(json.dumps(payload), encoding="utf-8")
        temporary.replace(self.ledger_path)
