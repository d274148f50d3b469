"""Try the real app as a person would: in a tmux window, against the scripted model server.

    python tools/try_in_tmux.py [--keep]

Starts ``python -m tests.scripted_server`` with a short script, then ``python -m tui`` in a
window of a private tmux server (``new-session -d -x 200 -y 60``), with its own temporary
config and data folders and its own agent tmux socket. It walks what the unit tests cannot
see whole, printing the screen (``capture-pane -p``) under a heading after each step:

1. the first frame;
2. a take-over with leftover input: Ctrl+T, text typed without Enter, Ctrl+] to give back;
3. an approval of a scripted ``run_shell`` call: its keys waiting, then ``y``, and what it did;
4. a resize to 80x24, then a second approval at that size.

Every wait is for something on the screen, with a deadline; a step that times out prints the
screen it got and the walk goes on. Both tmux servers and the model server are stopped at the
end, also on failure or Ctrl+C. ``--keep`` leaves the temporary folder for a look.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEADLINE = 30.0
META = {"risk": "low", "mutation": True, "privesc": False, "why": "try the approval"}
"""Buddy's safety metadata, required by run_shell."""

SCRIPT = [
    {
        "tool_calls": [
            {
                "id": "call_first",
                "name": "run_shell",
                "arguments": json.dumps(
                    {
                        "command": "echo approved-by-you > approved.txt; pwd; cat approved.txt",
                        **META,
                    }
                ),
            }
        ]
    },
    {"text": "Wrote approved.txt."},
    {
        "tool_calls": [
            {
                "id": "call_second",
                "name": "run_shell",
                "arguments": json.dumps(
                    {
                        "command": "touch listed.txt && echo "
                        + " ".join(f"w{i}" for i in range(40)),
                        **META,
                    }
                ),
            }
        ]
    },
    {"text": "Touched listed.txt."},
]


class Walk:
    """The private tmux server the app runs in, and the screens seen so far."""

    def __init__(self, socket: str) -> None:
        self.socket = socket
        self.problems: list[str] = []

    def tmux(self, *args: str, check: bool = True) -> str:
        done = subprocess.run(
            ["tmux", "-L", self.socket, "-f", "/dev/null", *args],
            capture_output=True,
            text=True,
            env={k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE")},
            timeout=10,
        )
        if check and done.returncode != 0:
            raise RuntimeError(f"tmux {' '.join(args)}: {done.stderr.strip()}")
        return done.stdout

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "try")

    def show(self, heading: str) -> str:
        text = self.screen()
        size = self.tmux("display-message", "-p", "-t", "try", "#{pane_width}x#{pane_height}")
        print(f"\n===== {heading} ({size.strip()}) =====")
        print(text.rstrip("\n"))
        return text

    def wait_for(self, what: str, test: Callable[[str], bool], timeout: float = DEADLINE) -> bool:
        """Poll the screen until ``test`` holds; on timeout note it and go on."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            screen = self.screen()
            if test(screen):
                return True
            if "session failed" in screen:  # nothing after this can work: say so at once
                raise RuntimeError(f"the app could not build its session (waiting for {what})")
            time.sleep(0.05)
        self.problems.append(f"timed out waiting for {what}")
        print(f"\n!!! timed out waiting for {what}")
        return False

    def wait_still(self, timeout: float = 5.0) -> None:
        """Until two captures 0.3 s apart are the same (a redraw has settled)."""
        deadline = time.monotonic() + timeout
        last = self.screen()
        while time.monotonic() < deadline:
            time.sleep(0.3)
            now = self.screen()
            if now == last:
                return
            last = now

    def keys(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", "try", *keys)

    def type(self, text: str) -> None:
        self.tmux("send-keys", "-t", "try", "-l", "--", text)


@contextmanager
def model_server(folder: Path) -> Iterator[str]:
    script = folder / "script.json"
    script.write_text(json.dumps(SCRIPT), encoding="utf-8")
    port_file = folder / "port"
    process = subprocess.Popen(
        [
            *(sys.executable, "-m", "tests.scripted_server", "--script", str(script)),
            *("--port-file", str(port_file), "--log", str(folder / "requests.jsonl")),
        ],
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + DEADLINE
        while not port_file.exists():
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the scripted model server did not start")
            time.sleep(0.02)
        yield f"http://127.0.0.1:{port_file.read_text(encoding='utf-8').strip()}/v1"
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def kill_tmux_server(socket: str) -> None:
    """Stop the server on ``socket``, and the per-instance servers the app starts beside it
    (``socket-<id>``), and remove their socket files (a killed server leaves its file)."""
    folder = Path(os.environ.get("TMUX_TMPDIR") or "/tmp") / f"tmux-{os.getuid()}"
    for path in [folder / socket, *folder.glob(f"{socket}-*")]:
        subprocess.run(
            ["tmux", "-L", path.name, "kill-server"],
            capture_output=True,
            env={k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE")},
            timeout=10,
        )
        path.unlink(missing_ok=True)


def walk(walker: Walk, workspace: Path) -> None:
    has = lambda text: lambda screen: text in screen  # noqa: E731
    # The session is built after the first frame: take-over is offered once its pane is up.
    walker.wait_for("the session and its pane", lambda s: "Take pane" in s and "No pane" not in s)
    walker.wait_still()
    walker.show("1. first frame")

    walker.keys("C-t")
    walker.wait_for("the take-over", lambda s: "YOU" in s and "keyboard" in s)
    walker.type("echo leftover")
    walker.wait_for("the typed text in the mirror", has("echo leftover"))
    walker.show("2a. take-over: 'echo leftover' typed, no Enter")
    walker.keys("C-]")
    walker.wait_for("the pane given back", lambda s: "YOU HAVE" not in s)
    walker.wait_still()
    walker.show("2b. keyboard given back (the leftover is still at the pane's prompt)")

    walker.type("please write a file")
    walker.keys("Enter")
    walker.wait_for("the approval modal", has("Approve run_shell"))
    walker.show("3a. approval asked: its answer keys wait until typing has stopped")
    # The modal takes no key until 0.5 s after it appeared and after the last keystroke.
    walker.wait_for("the answer keys", has("allow once"))
    walker.wait_still()
    walker.show("3b. approval asked for the scripted run_shell, keys open")
    walker.keys("y")
    walker.wait_for("the answer", has("Wrote approved.txt."))
    walker.wait_still()
    walker.show("3c. after 'y'")
    made = workspace / "approved.txt"
    ran = made.read_text(encoding="utf-8") if made.exists() else "(approved.txt not written)"
    print(f"\n----- approved.txt: {ran!r}")
    if ran != "approved-by-you\n":
        walker.problems.append(f"approved.txt holds {ran!r}, not what was approved")

    walker.tmux("resize-window", "-t", "try", "-x", "80", "-y", "24")
    walker.wait_for("the resize", lambda s: max(map(len, s.splitlines()), default=0) <= 80)
    walker.wait_still()
    walker.show("4a. resized to 80x24")
    walker.type("now list the folder")
    walker.keys("Enter")
    walker.wait_for("the second approval", has("Approve run_shell"))
    walker.wait_for("the second approval's answer keys", has("allow once"))
    walker.wait_still()
    walker.show("4b. approval at 80x24 (a long command that asks)")
    walker.keys("y")
    walker.wait_for("the second answer", has("Touched listed.txt."))
    walker.wait_still()
    walker.show("4c. after 'y' at 80x24")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = parser.parse_args(argv)
    if shutil.which("tmux") is None:
        print("try_in_tmux: tmux is not installed", file=sys.stderr)
        return 2
    folder = Path(tempfile.mkdtemp(prefix="atui-try-"))
    workspace = folder / "project"
    workspace.mkdir()
    socket = f"atui-try-{os.getpid()}"
    agent_socket = f"{socket}-agent"
    walker = Walk(socket)
    try:
        with model_server(folder) as base_url:
            env = {
                "PYTHONPATH": str(ROOT),
                "AGENT_TUI_CONFIG_DIR": str(folder / "config"),
                "AGENT_TUI_DATA_DIR": str(folder / "data"),
                "AGENT_TUI_TMUX__SOCKET_NAME": agent_socket,
                "OPENAI_API_KEY": "sk-try-in-tmux",
                "TERM": "xterm-256color",
            }
            app = [sys.executable, "-m", "tui", "--provider", "openai", "--model", "scripted"]
            app += ["--base-url", base_url, "--approval-mode", "ask"]
            command = "env " + " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
            command += " " + shlex.join(app)
            walker.tmux("new-session", "-d", "-s", "try", "-x", "200", "-y", "60")
            walker.tmux("set-option", "-t", "try", "remain-on-exit", "on")
            walker.tmux("respawn-pane", "-k", "-t", "try", "-c", str(workspace), command)
            walk(walker, workspace)
    except Exception as error:  # show what the screen was when it broke, then clean up
        walker.problems.append(f"{type(error).__name__}: {error}")
        try:
            walker.show("the screen when it failed")
        except Exception:
            pass
    finally:
        kill_tmux_server(socket)
        kill_tmux_server(agent_socket)
        if args.keep:
            print(f"\nkept {folder}")
        else:
            shutil.rmtree(folder, ignore_errors=True)
    return summary(walker.problems)


def summary(problems: list[str]) -> int:
    """Print what went wrong (or that nothing did); the walk's exit status."""
    print("\n===== summary =====")
    for problem in problems:
        print(f"- {problem}")
    print("no step failed" if not problems else f"{len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
