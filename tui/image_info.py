"""What an image file is, from its first bytes: its type and its size in pixels.

The four formats every model API takes (PNG, JPEG, GIF, WebP), read from their headers alone —
no image library, and never the extension's word for it, so a ``.png`` that is really text is
not sent as an image. Used for what a message attaches and what the chat says of it.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".webp")


@dataclass(frozen=True)
class ImageInfo:
    mime_type: str
    width: int | None = None
    height: int | None = None

    def describe(self, size: int) -> str:
        """``1280x720 px, 245 KB`` (pixels left out when the header does not say)."""
        pixels = f"{self.width}x{self.height} px, " if self.width and self.height else ""
        return f"{pixels}{human_bytes(size)}"


def human_bytes(size: int) -> str:
    if size < 1024:
        return f"{size} B"
    if size < 1024 * 1024:
        return f"{size / 1024:.0f} KB"
    return f"{size / (1024 * 1024):.1f} MB"


def image_info(data: bytes) -> ImageInfo | None:
    """The image ``data`` holds, or None when it is none of the four formats."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        if len(data) >= 24 and data[12:16] == b"IHDR":
            width, height = struct.unpack(">II", data[16:24])
            return ImageInfo("image/png", width, height)
        return ImageInfo("image/png")
    if data[:6] in (b"GIF87a", b"GIF89a"):
        if len(data) >= 10:
            width, height = struct.unpack("<HH", data[6:10])
            return ImageInfo("image/gif", width, height)
        return ImageInfo("image/gif")
    if data.startswith(b"\xff\xd8\xff"):
        width, height = _jpeg_size(data)
        return ImageInfo("image/jpeg", width, height)
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        width, height = _webp_size(data)
        return ImageInfo("image/webp", width, height)
    return None


def _jpeg_size(data: bytes) -> tuple[int | None, int | None]:
    index = 2
    while index + 9 < len(data):
        if data[index] != 0xFF:
            index += 1
            continue
        marker = data[index + 1]
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:
            index += 2
            continue
        length = struct.unpack(">H", data[index + 2 : index + 4])[0]
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            height, width = struct.unpack(">HH", data[index + 5 : index + 9])
            return width, height
        index += 2 + length
    return None, None


def _webp_size(data: bytes) -> tuple[int | None, int | None]:
    chunk = data[12:16]
    if chunk == b"VP8X" and len(data) >= 30:
        width = 1 + int.from_bytes(data[24:27], "little")
        height = 1 + int.from_bytes(data[27:30], "little")
        return width, height
    if chunk == b"VP8L" and len(data) >= 25:
        bits = int.from_bytes(data[21:25], "little")
        return 1 + (bits & 0x3FFF), 1 + ((bits >> 14) & 0x3FFF)
    if chunk == b"VP8 " and len(data) >= 30:
        width, height = struct.unpack("<HH", data[26:30])
        return width & 0x3FFF, height & 0x3FFF
    return None, None
