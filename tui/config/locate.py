"""Where in a TOML text a key was written, so that an error names the file's line.

tomllib keeps no positions and tomlkit keeps no line numbers. For a valid text a small scanner
(``key_lines``) records the line of every key path; for a text that does not parse, the line
comes from the parser's message and ``key_near_line`` guesses the key from a scan of the lines.
"""

from __future__ import annotations

import bisect
import re
import tomllib
from pathlib import Path

from tui.config.errors import ConfigIssue
from tui.config.keys import KeyPath


class _KeyLocator:
    """A small scanner over a *valid* TOML text recording the line of every key.

    tomllib keeps no positions and tomlkit keeps no line numbers, but the grammar needed to
    find keys — headers, dotted and quoted keys, strings, arrays, inline tables — is small.
    Array elements are recorded by index so ``grants[2].rule`` points at its own line.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.lines: dict[KeyPath, int] = {}
        self._newlines = [i for i, char in enumerate(text) if char == "\n"]
        self._aot: dict[KeyPath, int] = {}

    def run(self) -> dict[KeyPath, int]:
        table: KeyPath = ()
        while True:
            self._skip(newlines=True)
            if self.pos >= len(self.text):
                return self.lines
            start = self.pos
            if self.text.startswith("[[", self.pos):
                self.pos += 2
                keys = self._key()
                self._expect("]]")
                base = (*self._resolve(keys[:-1]), keys[-1])
                index = self._aot.get(base, 0)
                self._aot[base] = index + 1
                table = (*base, index)
                self._mark(table, start)
            elif self.text[self.pos] == "[":
                self.pos += 1
                keys = self._key()
                self._expect("]")
                table = self._resolve(keys)
                self._mark(table, start)
            else:
                self._key_value(table)

    def _line(self, pos: int) -> int:
        return bisect.bisect_left(self._newlines, pos) + 1

    def _mark(self, path: KeyPath, pos: int) -> None:
        line = self._line(pos)
        for end in range(1, len(path) + 1):
            self.lines.setdefault(path[:end], line)
        self.lines[path] = line

    def _resolve(self, keys: tuple[str, ...]) -> KeyPath:
        """Header keys through arrays of tables mean their latest element."""
        out: KeyPath = ()
        for key in keys:
            out = (*out, key)
            if out in self._aot:
                out = (*out, self._aot[out] - 1)
        return out

    def _skip(self, *, newlines: bool) -> None:
        text = self.text
        while self.pos < len(text):
            char = text[self.pos]
            if char in " \t" or (newlines and char in "\r\n"):
                self.pos += 1
            elif char == "#":
                end = text.find("\n", self.pos)
                self.pos = len(text) if end < 0 else end
            else:
                return

    def _expect(self, token: str) -> None:
        self._skip(newlines=False)
        if not self.text.startswith(token, self.pos):
            raise ValueError(f"expected {token!r} at {self.pos}")
        self.pos += len(token)

    def _key(self) -> tuple[str, ...]:
        keys: list[str] = []
        while True:
            self._skip(newlines=False)
            char = self.text[self.pos]
            if char in "\"'":
                start = self.pos
                self._string()
                keys.append(tomllib.loads(f"k = {self.text[start : self.pos]}")["k"])
            else:
                match = re.compile(r"[A-Za-z0-9_-]+").match(self.text, self.pos)
                if match is None:
                    raise ValueError(f"no key at {self.pos}")
                keys.append(match.group())
                self.pos = match.end()
            self._skip(newlines=False)
            if self.pos < len(self.text) and self.text[self.pos] == ".":
                self.pos += 1
                continue
            return tuple(keys)

    def _key_value(self, table: KeyPath) -> None:
        start = self.pos
        path = (*table, *self._key())
        self._mark(path, start)
        self._expect("=")
        self._value(path)

    def _value(self, path: KeyPath) -> None:
        self._skip(newlines=False)
        char = self.text[self.pos]
        if char == "[":
            self._array(path)
        elif char == "{":
            self._inline_table(path)
        elif char in "\"'":
            self._string()
        else:
            match = re.compile(r"[^,\]}\r\n#]*").match(self.text, self.pos)
            self.pos = match.end() if match else self.pos

    def _array(self, path: KeyPath) -> None:
        self.pos += 1
        index = 0
        while True:
            self._skip(newlines=True)
            if self.text[self.pos] == "]":
                self.pos += 1
                return
            self._mark((*path, index), self.pos)
            self._value((*path, index))
            self._skip(newlines=True)
            if self.text[self.pos] == ",":
                self.pos += 1
                index += 1
            elif self.text[self.pos] != "]":
                raise ValueError(f"unexpected {self.text[self.pos]!r} in an array")

    def _inline_table(self, path: KeyPath) -> None:
        self.pos += 1
        while True:
            self._skip(newlines=False)
            if self.text[self.pos] == "}":
                self.pos += 1
                return
            self._key_value(path)
            self._skip(newlines=False)
            if self.text[self.pos] == ",":
                self.pos += 1
            elif self.text[self.pos] != "}":
                raise ValueError(f"unexpected {self.text[self.pos]!r} in an inline table")

    def _string(self) -> None:
        text = self.text
        quote = text[self.pos]
        if text.startswith(quote * 3, self.pos):
            self.pos += 3
            while not text.startswith(quote * 3, self.pos):
                if self.pos >= len(text):
                    raise ValueError("unterminated string")
                self.pos += 2 if quote == '"' and text[self.pos] == "\\" else 1
            self.pos += 3
            while self.pos < len(text) and text[self.pos] == quote:  # """a"""" ends in a quote
                self.pos += 1
            return
        self.pos += 1
        while text[self.pos] != quote:
            self.pos += 2 if quote == '"' and text[self.pos] == "\\" else 1
        self.pos += 1


def key_lines(text: str) -> dict[KeyPath, int]:
    """The 1-based line of every key path in a valid TOML text (best effort: on anything it
    cannot follow it returns what it found so far, and callers fall back to a shorter path)."""
    locator = _KeyLocator(text)
    try:
        return locator.run()
    except (ValueError, IndexError, tomllib.TOMLDecodeError):
        return locator.lines


_TOML_POSITION = re.compile(r"\s*\((?:at line (\d+), column (\d+)|at end of document)\)\s*$")


def syntax_issue(path: Path, text: str, exc: tomllib.TOMLDecodeError) -> ConfigIssue:
    raw = str(exc)
    match = _TOML_POSITION.search(raw)
    reason = raw[: match.start()] if match else raw
    if match and match.group(1):
        line, column = int(match.group(1)), int(match.group(2))
        reason = f"{reason} (column {column})"
    else:
        line = max(1, text.count("\n") + (0 if text.endswith("\n") else 1))
    return ConfigIssue(str(path), line, _key_near_line(text, line), f"TOML syntax error: {reason}")


_HEADER_LINE = re.compile(r"^\s*\[\[?\s*([^\[\]]+?)\s*\]\]?\s*(?:#.*)?$")


_KEY_LINE = re.compile(r"""^\s*([A-Za-z0-9_\-."' ]+?)\s*=""")


def _key_near_line(text: str, line: int) -> str:
    """A best guess at the key a broken line was setting: the text is not valid TOML, so
    this is a line scan, not a parse."""
    lines = text.splitlines()
    if not 1 <= line <= len(lines):
        return ""
    current = lines[line - 1]
    header = _HEADER_LINE.match(current)
    if header:
        return f"[{header.group(1)}]"
    section = ""
    for previous in reversed(lines[: line - 1]):
        found = _HEADER_LINE.match(previous)
        if found:
            section = found.group(1)
            break
    key = _KEY_LINE.match(current)
    if key is None:
        return f"[{section}]" if section else ""
    name = key.group(1).strip()
    return f"[{section}].{name}" if section else name
