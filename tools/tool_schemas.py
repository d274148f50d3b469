"""Write the built-in tools' parameter schemas to ``tui/tools/params_schemas.json``.

Run after changing any tool's parameters (``tests/test_tool_schemas.py`` says when):

    python tools/tool_schemas.py [--check]

``--check`` writes nothing and exits 1 when the file differs from what the models produce.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script, from a checkout

from tui.tools.ready_schemas import TABLE_PATH
from tui.tools.schema_table import generate, render


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare only; exit 1 on a change")
    args = parser.parse_args()
    text = render(generate())
    current = TABLE_PATH.read_text(encoding="utf-8") if TABLE_PATH.exists() else ""
    if args.check:
        if text != current:
            print(f"{TABLE_PATH} is out of date: run python tools/tool_schemas.py")
            return 1
        return 0
    if text != current:
        TABLE_PATH.write_text(text, encoding="utf-8")
        print(f"wrote {TABLE_PATH}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
