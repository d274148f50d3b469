"""Warm start (``tui.warm``): real ``agent-tui -p`` commands, real warm processes, the scripted
model server on loopback. Each test turns warm start on for its own data folder only (the
suite turns it off everywhere else: ``tests/conftest.py``) and ends the warm process it made."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.scripted_server import ScriptedServer
from tests.test_headless_cli import Cli
from tui.locations import data_dir
from tui.warm.place import FOLDER, SWITCH, warm_folder
from tui.warm.wire import address, decode_request, encode_request

DEADLINE = 60
META = {"risk": "low", "mutation": False, "privesc": False, "why": "test"}


def wait_for(condition: Callable[[], object], what: str, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (not yet reaped by its parent) has ended all the same
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def processes_running(text: str, *, inside: bool = False) -> list[int]:
    """Processes whose command line holds ``text``; with ``inside``, only those the sandbox
    started (bubblewrap's own process may still be setting up its parent-death signal)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            continue
        if inside and cmdline.split(b" ", 1)[0].endswith(b"bwrap"):
            continue
        if text.encode() in cmdline and alive(int(entry.name)):
            found.append(int(entry.name))
    return found


def warm_processes_in(folder: Path) -> list[int]:
    """Warm processes started from ``folder`` (their working folder), whatever their state."""
    found = []
    for pid in processes_running("serve_warm"):
        try:
            if Path(f"/proc/{pid}/cwd").resolve() == folder.resolve():
                found.append(pid)
        except OSError:
            continue
    return found


@dataclass
class Home:
    root: Path
    workspace: Path
    server: ScriptedServer
    extra_env: dict[str, str]

    @property
    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI", "ANTHROPIC"))}
        env.pop(SWITCH, None)
        env.pop("AGENT_TUI_PROVIDER__API_KEY", None)
        env.update(
            OPENAI_API_KEY="test-key",
            AGENT_TUI_CONFIG_DIR=str(self.root / "config"),
            AGENT_TUI_DATA_DIR=str(self.root / "data"),
            **self.extra_env,
        )
        return env

    @property
    def folder(self) -> Path:
        return self.root / "data" / FOLDER

    @property
    def cli(self) -> Cli:
        return Cli(self.workspace, self.env)

    def run(
        self, prompt: str, *extra: str, stdin: str | None = None, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        args = self.server.headless_args(prompt, *extra)
        return self.cli.run(*args, timeout=DEADLINE, input=stdin, env=env)

    def start(self, prompt: str, *extra: str) -> subprocess.Popen[str]:
        return self.cli.start(*self.server.headless_args(prompt, *extra))

    def status(self) -> dict[str, int] | None:
        found = sorted(self.folder.glob("*.json"))
        if not found:
            return None
        try:
            loaded: dict[str, int] = json.loads(found[0].read_text())
        except (OSError, ValueError):
            return None
        return loaded

    def runs(self) -> int:
        status = self.status()
        return -1 if status is None else status["runs"]

    def listing(self) -> list[str]:
        """The warm folder's files (a key that changed under a test leaves a second stem)."""
        if not self.folder.exists():
            return []
        return sorted(f"{p.name} {p.stat().st_mtime:.3f}" for p in self.folder.iterdir())

    def sockets(self) -> list[Path]:
        return sorted(self.folder.glob("*.sock"))

    def serving(self) -> bool:
        for path in self.sockets():
            with socket.socket(socket.AF_UNIX) as probe, address(str(path)) as where:
                try:
                    probe.connect(where)
                except OSError:
                    continue
                return True
        return False

    def warmed(self) -> int:
        """Two ordinary runs (the second starts a warm process); the warm process's pid."""
        self.server.add({"text": "one"}, {"text": "two"})
        for expected in ("one", "two"):
            done = self.run("hello")
            assert (done.returncode, done.stdout.strip()) == (0, expected), done.stderr
        wait_for(self.serving, "the warm process to listen")
        status = self.status()
        assert status is not None and status["runs"] == 0
        return status["pid"]


@pytest.fixture
def home(tmp_path: Path) -> Iterator[Home]:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    with ScriptedServer() as server:
        place = Home(tmp_path, workspace, server, {})
        try:
            yield place
        finally:
            status = place.status()
            if status is not None and alive(status["pid"]):
                os.kill(status["pid"], signal.SIGKILL)
            for pid in warm_processes_in(workspace):
                os.kill(pid, signal.SIGKILL)


def shell_call(command: str) -> dict[str, object]:
    arguments = json.dumps({"command": command, **META})
    return {"tool_calls": [{"id": "call_1", "name": "run_shell", "arguments": arguments}]}


def test_the_third_run_of_a_kind_is_handed_to_a_warm_process(home: Home) -> None:
    pid = home.warmed()
    home.server.add({"text": "three"})
    done = home.run("hello")
    assert (done.returncode, done.stdout.strip()) == (0, "three"), done.stderr
    assert home.runs() == 1, home.listing()
    assert alive(pid)
    # The run is the ordinary one, prompt and all: the request carries the third prompt.
    assert "hello" in json.dumps(home.server.requests[-1].body["messages"])


def test_a_warm_run_has_its_own_exit_status_streams_and_input(home: Home) -> None:
    home.warmed()
    cold = home.run("x", "--approval-mode", "bogus", env={**home.env, SWITCH: "false"})
    warm = home.run("x", "--approval-mode", "bogus")
    assert home.runs() == 1, home.listing()
    assert (warm.returncode, warm.stdout, warm.stderr) == (
        cold.returncode,
        cold.stdout,
        cold.stderr,
    )
    assert warm.returncode == 2 and "bogus" in warm.stderr
    home.server.add({"text": "piped"})
    done = home.run("summarise this", stdin="a line piped in\n")
    assert (done.returncode, done.stdout.strip()) == (0, "piped"), done.stderr
    assert home.runs() == 2, home.listing()
    assert "a line piped in" in json.dumps(home.server.requests[-1].body["messages"])


def test_killing_the_typed_command_ends_the_warm_run_and_its_commands(home: Home) -> None:
    pid = home.warmed()
    marker = "sleep 300; echo warm-kill"  # two commands: bash stays, with this command line
    home.server.add(shell_call(marker))  # the run ends before it asks again
    client = home.start("sleep")
    wait_for(lambda: processes_running(marker, inside=True), "the sandboxed command to start")
    assert home.runs() == 1, home.listing()
    client.kill()
    client.wait(timeout=DEADLINE)
    wait_for(lambda: not processes_running(marker), "the run's command to end")
    assert alive(pid)  # the warm process itself serves on
    home.server.add({"text": "after"})
    done = home.run("again")
    assert (done.returncode, done.stdout.strip()) == (0, "after"), done.stderr


def test_a_signal_to_the_typed_command_reaches_the_run_as_it_would_unwarmed(home: Home) -> None:
    home.warmed()
    codes = []
    for turned in ("false", ""):
        marker = f"sleep 300; echo warm-term-{turned or 'on'}"
        home.server.add(shell_call(marker))
        home.extra_env = {SWITCH: turned} if turned else {}
        client = home.start("sleep")
        wait_for(
            lambda m=marker: processes_running(m, inside=True),  # type: ignore[misc]
            "the sandboxed command to start",
        )
        client.send_signal(signal.SIGTERM)
        codes.append(client.wait(timeout=DEADLINE))
        wait_for(lambda m=marker: not processes_running(m), "the run's command to end")  # type: ignore[misc]
    assert home.runs() == 1, home.listing()  # the second was handed over, the first not
    assert codes[0] == codes[1], codes


def test_another_environment_is_never_handed_to_a_warm_process(home: Home) -> None:
    home.warmed()
    home.server.add({"text": "elsewhere"})
    done = home.run("hello", env={**home.env, "SOME_SETTING": "1"})
    assert (done.returncode, done.stdout.strip()) == (0, "elsewhere"), done.stderr
    assert home.runs() == 0, home.listing()


def test_warm_start_off_in_the_environment_starts_nothing(home: Home) -> None:
    home.extra_env = {SWITCH: "false"}
    home.server.add({"text": "1"}, {"text": "2"}, {"text": "3"})
    for _ in range(3):
        assert home.run("hello").returncode == 0
    assert not home.folder.exists() or not list(home.folder.iterdir())
    # The variable is that run's alone: the next run without it may start one as usual.
    home.extra_env = {}
    home.warmed()


def test_warm_start_off_in_the_config_ends_warm_processes_and_starts_none(home: Home) -> None:
    pid = home.warmed()
    config = home.root / "config"
    config.mkdir(exist_ok=True)
    (config / "config.toml").write_text("[agent]\nwarm_start = false\n")
    home.server.add({"text": "1"}, {"text": "2"}, {"text": "3"})
    assert home.run("hello").returncode == 0  # handed over: its settings end the process
    wait_for(lambda: not alive(pid), "the warm process to end")
    for _ in range(2):
        assert home.run("hello").returncode == 0
    assert not home.sockets()
    (config / "config.toml").write_text("[agent]\nwarm_start = true\n")
    home.server.add({"text": "4"}, {"text": "5"}, {"text": "6"})
    for _ in range(3):  # the first turns it on again; the next two start one as always
        assert home.run("hello").returncode == 0
    wait_for(home.serving, "a warm process once it is on again")


def test_a_folder_others_could_write_is_not_used(home: Home) -> None:
    home.folder.mkdir(parents=True)
    home.folder.chmod(0o777)
    home.server.add({"text": "1"}, {"text": "2"}, {"text": "3"})
    for _ in range(3):
        assert home.run("hello").returncode == 0
    assert not list(home.folder.iterdir())


def test_a_removed_socket_ends_the_warm_process(home: Home) -> None:
    pid = home.warmed()
    for path in home.sockets():
        path.unlink()
    wait_for(lambda: not alive(pid), "the warm process to end")
    assert home.status() is None  # its pid is not left behind to name another process


def test_runs_at_the_same_time_are_each_served(home: Home) -> None:
    home.warmed()
    home.server.add({"text": "same"}, {"text": "same"}, {"text": "same"})
    clients = [home.start("hello") for _ in range(3)]
    outputs = [client.communicate(timeout=DEADLINE) for client in clients]
    assert [client.returncode for client in clients] == [0, 0, 0], outputs
    assert [out.strip() for out, _ in outputs] == ["same"] * 3
    assert home.runs() == 3, home.listing()


@pytest.mark.parametrize("xdg", [None, "", "  ", "/tmp/xdg-data"])
def test_the_warm_folder_is_in_the_data_folder_platformdirs_names(
    xdg: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AGENT_TUI_DATA_DIR", raising=False)
    if xdg is None:
        monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    else:
        monkeypatch.setenv("XDG_DATA_HOME", xdg)
    assert warm_folder(dict(os.environ)) == str(data_dir() / FOLDER)


def test_a_request_crosses_the_wire_unchanged() -> None:
    environ = {"PLAIN": "x", "EMPTY": "", "EQUALS": "a=b", "ODD": "caf\udce9"}
    argv = ["agent-tui", "-p", "", "two words", "a=b"]
    assert decode_request(encode_request(argv, "/some dir", environ)) == (
        argv,
        "/some dir",
        environ,
    )
    assert decode_request(["run", "/", "2", "only-one"]) is None
    assert decode_request(["run", "/", "0"]) is None
    assert decode_request(["exit", "0"]) is None
    assert decode_request(["run", "/", "1", "agent-tui", "NOEQUALS"]) is None


FORGOTTEN = ("seen", "refused", "json", "lock")
"""The files of a key, all removed once no run has had it for a day."""


def test_keys_no_run_had_for_a_day_are_forgotten(home: Home) -> None:
    home.folder.mkdir(parents=True, mode=0o700)
    old = time.time() - 2 * 86400
    stale = [f"{letter * 32}.{kind}" for letter, kind in zip("abcd", FORGOTTEN, strict=True)]
    for name in stale:
        (home.folder / name).touch()
        os.utime(home.folder / name, (old, old))
    recent = "e" * 32 + ".seen"
    (home.folder / recent).touch()
    home.server.add({"text": "1"})
    assert home.run("hello").returncode == 0
    names = {path.name for path in home.folder.iterdir()}
    assert recent in names
    assert not names & set(stale), names


def test_the_warm_process_holds_no_key_and_each_run_brings_its_own(home: Home) -> None:
    pid = home.warmed()
    environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    assert b"OPENAI_API_KEY=" in environ  # the name counts for the key, the value is not there
    assert not [entry for entry in environ if b"test-key" in entry]
    home.server.add({"text": "other key"})
    done = home.run("hello", env={**home.env, "OPENAI_API_KEY": "another-key"})
    assert (done.returncode, done.stdout.strip()) == (0, "other key"), done.stderr
    assert home.runs() == 1, home.listing()
    assert home.server.requests[-1].headers["authorization"] == "Bearer another-key"


def test_the_key_follows_what_could_make_a_fork_differ(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The installed code, the environment and the folder change the key; a secret's value
    (which a run brings itself) and a shell's own counters do not."""
    import tui
    from tui.warm.place import key

    package = tmp_path / "tui"
    (package / "warm").mkdir(parents=True)
    for name in ("__init__.py", "warm/place.py"):
        (package / name).write_text("# a module\n")
    monkeypatch.setattr(tui, "__file__", str(package / "__init__.py"))  # a copy to change
    environ = {"PATH": "/usr/bin", "OPENAI_API_KEY": "one", "SHLVL": "1"}
    base = key(sys.path[1:], "/work", environ)
    assert key(sys.path[1:], "/work", dict(environ)) == base
    assert key(sys.path[1:], "/work", {**environ, "OPENAI_API_KEY": "two", "SHLVL": "3"}) == base
    assert key(sys.path[1:], "/work", {**environ, "LANG": "C"}) != base
    assert key(sys.path[1:], "/elsewhere", environ) != base
    assert key([*sys.path[1:], "/more"], "/work", environ) != base
    module = package / "warm" / "place.py"
    stamp = module.stat()
    os.utime(module, ns=(stamp.st_atime_ns, stamp.st_mtime_ns + 1_000_000_000))
    assert key(sys.path[1:], "/work", environ) != base
    os.utime(module, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    assert key(sys.path[1:], "/work", environ) == base
    module.write_text("# a module, edited\n")
    assert key(sys.path[1:], "/work", environ) != base


def test_a_warm_process_that_never_answers_leaves_the_run_to_the_ordinary_start(
    home: Home,
) -> None:
    """Until the warm side names the run's process group, nothing of the run has started:
    a socket that takes the request and closes means one ordinary run, not none or two."""
    pid = home.warmed()
    (path,) = home.sockets()
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: not alive(pid), "the warm process to die")
    path.unlink()
    taken: list[bytes] = []
    with socket.socket(socket.AF_UNIX) as fake, address(str(path)) as where:
        fake.bind(where)
        fake.listen(1)

        def answer_nothing() -> None:
            conn, _ = fake.accept()
            with conn:
                taken.append(conn.recv(65536))

        listener = threading.Thread(target=answer_nothing)
        listener.start()
        before = len(home.server.requests)
        home.server.add({"text": "ordinary"})
        for seen in home.folder.glob("*.seen"):
            seen.unlink()  # so this run does not start another warm process
        done = home.run("hello")
        listener.join(timeout=DEADLINE)
    assert (done.returncode, done.stdout.strip()) == (0, "ordinary"), done.stderr
    assert taken and taken[0], home.listing()  # the request did reach the fake
    assert len(home.server.requests) == before + 1
