"""libtmux imported from inside the running app, where ``sys.stdout`` is Textual's print
capture with no ``encoding``: a plain import raises there, the loader's does not."""

from __future__ import annotations

import subprocess
import sys

CAPTURED = """
import sys

class Capture:  # what Textual puts in sys.stdout while an app runs: no .encoding
    def write(self, text): return len(text)
    def flush(self): pass

real = sys.stdout
sys.stdout = Capture()
try:
    {import_line}
    outcome = "imported"
except AttributeError as error:
    outcome = f"failed: {{error}}"
restored = sys.stdout.__class__.__name__
sys.stdout = real
print(outcome, restored)
"""


def run(import_line: str) -> str:
    code = CAPTURED.format(import_line=import_line)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return done.stdout.strip()


def test_a_plain_import_fails_under_the_capture() -> None:
    assert run("import libtmux").startswith("failed: ")


def test_the_loader_imports_it_and_puts_the_capture_back() -> None:
    line = "from tui.exec.tmux.sessions import load_libtmux; load_libtmux()"
    assert run(line) == "imported Capture"
