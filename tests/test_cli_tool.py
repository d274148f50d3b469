"""``agent-tui tools`` and ``agent-tui tool NAME ARGS``: what one lists, the other runs.

The installed command in a subprocess, with its own config and data folders: the cron tools
keep their jobs in the data folder between runs, and ``skill`` reads the workspace's own
skills, as the agent does.
"""

from __future__ import annotations

import json
import re

from tests.test_headless_cli import Cli, cli

__all__ = ["cli"]  # fixtures used here by name


def listed(cli: Cli) -> list[str]:
    done = cli.run("tools")
    assert done.returncode == 0, done.stderr
    return [line.split()[0] for line in done.stdout.splitlines() if line.strip()]


def test_every_listed_tool_is_found_by_tool(cli: Cli) -> None:
    names = listed(cli)
    assert {"cron_add", "cron_list", "cron_remove", "skill", "run_shell"} <= set(names)
    for name in names:
        # An argument no tool has: each listed tool must be found, then refuse the argument.
        done = cli.run("tool", name, json.dumps({"no_such_argument": 1}))
        assert done.returncode == 1, (name, done.stdout)
        assert "NotFound" not in done.stderr, (name, done.stderr)
        assert "InvalidArguments" in done.stderr, (name, done.stderr)


def test_a_tool_switched_off_in_settings_is_neither_listed_nor_run(cli: Cli) -> None:
    config = cli.workspace.parent / "config"
    config.mkdir(parents=True, exist_ok=True)
    (config / "config.toml").write_text("[tools]\ncron_add = false\n", encoding="utf-8")

    assert "cron_add" not in listed(cli)
    done = cli.run("tool", "cron_add", json.dumps({"command": "true", "every_seconds": 3600}))
    assert done.returncode == 1 and "NotFound" in done.stderr, done.stderr


def test_cron_add_then_list_then_remove(cli: Cli) -> None:
    job = {"command": "echo from-cron", "every_seconds": 3600, "name": "nightly"}
    added = cli.run("tool", "cron_add", json.dumps(job), "--approval-mode", "full-auto")
    assert added.returncode == 0, added.stderr
    found = re.search(r"Scheduled job (\w+)", added.stdout)
    assert found, added.stdout
    job_id = found.group(1)

    listing = cli.run("tool", "cron_list")
    assert listing.returncode == 0, listing.stderr
    assert job_id in listing.stdout and "echo from-cron" in listing.stdout

    removed = cli.run(
        "tool", "cron_remove", json.dumps({"id": job_id}), "--approval-mode", "full-auto"
    )
    assert removed.returncode == 0, removed.stderr
    after = cli.run("tool", "cron_list")
    assert after.returncode == 0 and job_id not in after.stdout, after.stdout


def test_cron_add_still_needs_its_permission(cli: Cli) -> None:
    """Run from the CLI, a tool goes through the same policy: read-only refuses a job."""
    refused = cli.run("tool", "cron_add", json.dumps({"command": "true", "every_seconds": 3600}))
    assert refused.returncode == 1 and "PermissionDenied" in refused.stderr, refused.stderr
    assert "no scheduled jobs" in cli.run("tool", "cron_list").stdout.lower()


def test_skill_finds_the_workspace_skill(cli: Cli) -> None:
    folder = cli.workspace / ".agent-tui" / "skills" / "release"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(
        "---\nname: release\ndescription: Cut a release.\n---\nTag, then run make dist.\n",
        encoding="utf-8",
    )

    # A workspace's own skills are its author's text: offered once the workspace is trusted.
    untrusted = cli.run("tool", "skill", json.dumps({"name": "release"}))
    assert untrusted.returncode == 1 and "no skill named 'release'" in untrusted.stderr

    done = cli.run("--trust-workspace", "tool", "skill", json.dumps({"name": "release"}))

    assert done.returncode == 0, done.stderr
    assert "Tag, then run make dist." in done.stdout
    assert str(folder) in done.stdout


def test_a_call_by_hand_saves_no_session(cli: Cli) -> None:
    """``agent-tui tool`` opens a session as the app and ``-p`` do, but one that keeps no
    record: ``-c`` must never resume a tool run, and its scratch folder goes with it."""
    scratch = cli.workspace.parent / "tmp"
    scratch.mkdir()
    cli.env["TMPDIR"] = str(scratch)
    done = cli.run("tool", "cron_list")
    assert done.returncode == 0, done.stderr
    listing = cli.run("sessions")
    assert listing.returncode == 0 and "no saved sessions" in listing.stdout, listing.stdout
    assert not list(scratch.glob("agent-tui-tool-*"))
