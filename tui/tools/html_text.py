"""HTML turned into readable text: what a model reads of a web page.

The web tools (``fetch_url``, ``http_request``) and the OpenAPI adapter both show HTML bodies
this way, so it lives in the tools core. The stdlib parser is enough: scripts and styles are
dropped, block elements become line breaks, headings and list items keep a marker, and a
link keeps its target as ``[href]``.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

_SKIP = {"script", "style", "noscript", "template", "svg", "head"}
_BLOCK = {
    "p", "div", "section", "article", "header", "footer", "nav", "main", "aside", "form",
    "table", "tr", "ul", "ol", "dl", "dt", "dd", "blockquote", "pre", "hr", "br", "figure",
    "h1", "h2", "h3", "h4", "h5", "h6", "li", "title", "td", "th",
}  # fmt: skip
_VOID = {
    "br",
    "hr",
    "img",
    "input",
    "meta",
    "link",
    "area",
    "base",
    "col",
    "embed",
    "source",
    "wbr",
}


class _TextExtractor(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.skip_depth = 0
        self.pre_depth = 0
        self.title: str | None = None
        self._in_title = False
        self._href: str | None = None
        self._link_text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title" and self.skip_depth <= 1:
            self._in_title = True
        if tag in _SKIP:
            if tag not in _VOID:
                self.skip_depth += 1
            return
        if self.skip_depth:
            return
        if tag in _BLOCK:
            self.parts.append("\n")
        if tag in ("h1", "h2", "h3", "h4", "h5", "h6"):
            self.parts.append("#" * int(tag[1]) + " ")
        elif tag == "li":
            self.parts.append("- ")
        elif tag == "pre":
            self.pre_depth += 1
        elif tag == "a":
            self._href = dict(attrs).get("href")
            self._link_text = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        if tag in _SKIP:
            self.skip_depth = max(0, self.skip_depth - 1)
            return
        if self.skip_depth:
            return
        if tag == "pre":
            self.pre_depth = max(0, self.pre_depth - 1)
        if tag == "a" and self._href:
            text = "".join(self._link_text).strip()
            href = self._href
            if text and href and not href.startswith(("#", "javascript:")) and href != text:
                self.parts.append(f" [{href}]")
            self._href = None
        if tag in _BLOCK and tag not in ("li", "td", "th", "dd", "dt"):
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title = (self.title or "") + data
        if self.skip_depth:
            return
        if not self.pre_depth:
            data = re.sub(r"\s+", " ", data)
        self.parts.append(data)
        if self._href is not None:
            self._link_text.append(data)


def html_to_text(html: str) -> str:
    """Readable text from HTML: no scripts or styles, line breaks at block elements."""
    parser = _TextExtractor()
    try:
        parser.feed(html)
        parser.close()
    except Exception:
        pass
    text = "".join(parser.parts)
    lines = [line.strip() if "\t" not in line else line.rstrip() for line in text.split("\n")]
    out = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
    title = (parser.title or "").strip()
    if title and not out.startswith(title):
        out = f"Title: {title}\n\n{out}"
    return out
