"""Try the app on a fleet as a person would: six real sshd hosts, an inventory, in tmux.

    python tools/try_fleet_in_tmux.py [--keep]

Starts six ``sshd`` hosts (``tests/fleet_support.py``), the scripted model server with a
fan-out, and ``python -m tui --inventory FILE`` in a window of a private tmux server, then
prints the screen after each step (``tools/try_in_tmux.py`` does the same for one target):

1. the first frame at 200x60: the host list and the grid of hosts' panes;
2. the fan-out's approval (hosts, counts per group), the hosts form (``h``), one unticked;
3. after it ran: per-host rows, host list, the grid;
4. f7 on the first host: its pane full-size;
5. the same at 80x24.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.fleet_support import start_lab  # noqa: E402
from tools import try_in_tmux  # noqa: E402
from tools.try_in_tmux import Walk, kill_tmux_server, model_server, summary  # noqa: E402

FANOUT = {
    "tool_calls": [
        {
            "id": "call_fan",
            "name": "run_shell",
            "arguments": json.dumps(
                {
                    "command": "mktemp w-XXXXXX >/dev/null && uname -s && echo fan-$((6*7))",
                    "hosts": "all",
                    "why": "one marker file per host",
                }
            ),
        }
    ]
}


def walk(walker: Walk) -> None:
    has = lambda text: lambda screen: text in screen  # noqa: E731
    walker.wait_for("the host list and grid", lambda s: "hosts (6)" in s and "fleet" in s)
    walker.wait_still()
    walker.show("1. first frame: host list beside the tools, the grid of hosts' panes")
    walker.type("make a marker file on every host")
    walker.keys("Enter")
    walker.wait_for("the fan-out approval", has("Approve run_shell"))
    walker.wait_for("its answer keys", has("some hosts"))
    walker.wait_still()
    walker.show("2a. one approval for the fan-out: the hosts, counts per group")
    walker.keys("h")
    walker.wait_for("the hosts form", has("Allow on some hosts"))
    walker.keys("Down", "Space")
    walker.wait_still()
    walker.show("2b. h: every asked host ticked, the second one unticked")
    walker.keys("Enter")
    walker.wait_for("the answer", has("Done on the fleet."))
    walker.wait_still()
    walker.show("3. after it ran: rows per host, host list, grid")
    walker.keys("F7")
    walker.wait_for("a host full-size", has("host web01"))
    walker.wait_still()
    walker.show("4. f7: the default host's pane full-size")
    walker.keys("F7")
    walker.tmux("resize-window", "-t", "try", "-x", "80", "-y", "24")
    walker.wait_for("the resize", lambda s: max(map(len, s.splitlines()), default=0) <= 80)
    walker.wait_still()
    walker.show("5a. 80x24")
    walker.keys("F6")
    walker.wait_still()
    walker.show("5b. 80x24, the mirror tab: the grid")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = parser.parse_args(argv)
    try_in_tmux.SCRIPT[:] = [FANOUT, {"text": "Done on the fleet."}]
    folder = Path(tempfile.mkdtemp(prefix="atui-try-fleet-"))
    lab = start_lab(6)
    socket = f"atui-tryfleet-{os.getpid()}"
    walker = Walk(socket)
    try:
        config = folder / "config"
        config.mkdir()
        (config / "config.toml").write_text(lab.config_toml())
        with model_server(folder) as base_url:
            env = {
                "PYTHONPATH": str(ROOT),
                "HOME": str(lab.home),
                "AGENT_TUI_CONFIG_DIR": str(config),
                "AGENT_TUI_DATA_DIR": str(folder / "data"),
                "OPENAI_API_KEY": "sk-try-in-tmux",
                "TERM": "xterm-256color",
            }
            app = [sys.executable, "-m", "tui", "--provider", "openai", "--model", "scripted"]
            app += ["--base-url", base_url, "--approval-mode", "ask"]
            app += ["--inventory", str(lab.inventory), "--workspace", lab.workspace]
            command = "env " + " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
            command += " " + shlex.join(app)
            walker.tmux("new-session", "-d", "-s", "try", "-x", "200", "-y", "60")
            walker.tmux("set-option", "-t", "try", "remain-on-exit", "on")
            walker.tmux("respawn-pane", "-k", "-t", "try", "-c", str(folder), command)
            walk(walker)
    except Exception as error:
        walker.problems.append(f"{type(error).__name__}: {error}")
        try:
            walker.show("the screen when it failed")
        except Exception:
            pass
    finally:
        kill_tmux_server(socket)
        lab.cleanup()
        if args.keep:
            print(f"\nkept {folder}")
        else:
            shutil.rmtree(folder, ignore_errors=True)
    return summary(walker.problems)


if __name__ == "__main__":
    raise SystemExit(main())
