"""Headless ``text`` output prints the diff of each file change, plain when not a terminal."""

from __future__ import annotations

from collections.abc import Callable

from tests.test_headless_cli import Cli, ServerProcess, cli, headless, model_server
from tests.test_loop import call as tool_call
from tests.test_loop import tools_step

__all__ = ["cli", "model_server"]  # the fixtures, used by name


def test_text_output_prints_the_edit_diff_on_stderr(
    cli: Cli, model_server: Callable[..., ServerProcess]
) -> None:
    (cli.workspace / "app.py").write_text("import os\n\nRETRIES = 3\nprint(RETRIES)\n")
    edit = {"path": "app.py", "old_string": "RETRIES = 3", "new_string": "RETRIES = 5"}
    server = model_server(
        [tools_step(tool_call("call_edit", "edit_file", edit)), {"text": "Raised it."}]
    )
    done = cli.run(*headless(server, "raise retries", "--approval-mode", "full-auto"))

    assert done.returncode == 0, done.stderr
    assert done.stdout == "Raised it.\n"  # the diff never pollutes the answer
    assert "✓ edit_file: Edited app.py: replaced 1 occurrence" in done.stderr
    assert "@@ -1,4 +1,4 @@\n 1  1  import os\n" in done.stderr
    assert " 3    -RETRIES = 3\n    3 +RETRIES = 5\n" in done.stderr
    assert "\x1b" not in done.stderr  # a pipe gets no colour
