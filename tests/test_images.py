"""Images in a message: ``@shot.png`` and a pasted image path attach the image, sent in each wire
format's own image part (the recorded request bodies are read back), with a placeholder naming
it and its size in the chat. The real app in a Pilot, the scripted model server."""

from __future__ import annotations

import base64
import struct
import zlib
from pathlib import Path
from typing import Any

import pytest

from tests.scripted_server import ScriptedServer
from tests.test_ui_app import send, until
from tui.config import load_settings
from tui.image_info import image_info
from tui.ui.app import AgentApp
from tui.ui.chat.panel import NoticeLine
from tui.ui.prompt.mentions import attach_mentions, pasted_images
from tui.wiring import build_session

pytestmark = pytest.mark.timeout(60)


def png(width: int, height: int) -> bytes:
    """A real PNG of one grey colour (decodable by any image library)."""
    row = b"\x00" + b"\x80" * width
    raw = zlib.compress(row * height)

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", raw) + chunk(b"IEND", b"")


def session_for(workspace: Path, server: ScriptedServer, provider: str) -> Any:
    url = server.base_url if provider == "anthropic" else server.openai_base_url
    loaded = load_settings(
        workspace,
        overrides={
            "provider": {"name": provider, "model": "scripted", "base_url": url, "api_key": "k"}
        },
        env={},
    )
    return build_session(workspace, loaded)


def sent_images(body: dict[str, Any], provider: str) -> list[tuple[str, str]]:
    """(mime type, base64) of every image in the request's last user message."""
    found: list[tuple[str, str]] = []
    if provider == "openai":
        user = [m for m in body["messages"] if m["role"] == "user"][-1]
        for part in user["content"]:
            if part["type"] == "image_url":
                head, data = part["image_url"]["url"].split(",", 1)
                found.append((head.removeprefix("data:").removesuffix(";base64"), data))
    elif provider == "openai-responses":
        user = [i for i in body["input"] if i.get("role") == "user"][-1]
        for part in user["content"]:
            if part["type"] == "input_image":
                head, data = part["image_url"].split(",", 1)
                found.append((head.removeprefix("data:").removesuffix(";base64"), data))
    else:
        user = [m for m in body["messages"] if m["role"] == "user"][-1]
        for part in user["content"]:
            if part["type"] == "image":
                found.append((part["source"]["media_type"], part["source"]["data"]))
    return found


def sent_text(body: dict[str, Any], provider: str) -> str:
    key = "input" if provider == "openai-responses" else "messages"
    user = [m for m in body[key] if m.get("role") == "user"][-1]
    content = user["content"]
    if isinstance(content, str):
        return content
    return "\n".join(p.get("text", "") for p in content if "text" in p)


def chat_text(app: AgentApp) -> str:
    return "\n".join(getattr(w, "source", None) or str(w.render()) for w in app.chat.children)


@pytest.mark.parametrize("provider", ["openai", "openai-responses", "anthropic"])
async def test_an_image_is_sent_in_each_wire_format(
    workspace: Path, tmp_path: Path, provider: str
) -> None:
    shot = png(32, 16)
    (workspace / "shot.png").write_bytes(shot)
    dropped = tmp_path / "My Screens" / "error 2.png"
    dropped.parent.mkdir()
    other = png(8, 8)
    dropped.write_bytes(other)
    with ScriptedServer([{"text": "A grey rectangle."}]) as server:
        app = AgentApp(session_for(workspace, server, provider), cursor_blink=False)
        async with app.run_test(size=(120, 40)) as pilot:
            await send(pilot, app, f"what is in @shot.png and '{dropped}'?")
            await until(pilot, lambda: server.requests, "the request")
            await until(pilot, lambda: "A grey rectangle." in chat_text(app), "the answer")
            shown = chat_text(app)
    body = server.requests[0].body
    images = sent_images(body, provider)
    assert sorted(images) == sorted(
        [
            ("image/png", base64.b64encode(other).decode()),
            ("image/png", base64.b64encode(shot).decode()),
        ]
    )
    text = sent_text(body, provider)
    assert "[image #1: error 2.png, 8x8 px, " in text and "[image #2: shot.png, 32x16 px" in text
    assert "[image #2: shot.png, 32x16 px" in shown  # the chat's placeholder, with the size


async def test_what_cannot_be_attached_is_said(workspace: Path) -> None:
    (workspace / "fake.png").write_text("not an image at all")
    (workspace / "huge.png").write_bytes(png(4, 4) + b"\x00" * (6 * 1024 * 1024))

    async def read(raw: str) -> bytes:
        return (workspace / raw).read_bytes()

    attached = await attach_mentions("see @huge.png and @fake.png", read)
    assert attached.images == []
    assert any("huge.png not attached" in note and "5 MB" in note for note in attached.notes)
    assert "fake.png" in attached.text and "```fake.png" in attached.text  # text: attached as text


def test_pasted_paths_are_found_in_each_spelling() -> None:
    text = (
        "look: /tmp/a.png '/home/me/My Shot.PNG' \"/x/y z.jpeg\" /x/My\\ Pic.jpg "
        "file:///tmp/z%20q.webp ~/s.gif @mention.png notes.png http://x/y.png"
    )
    assert pasted_images(text) == [
        "/tmp/a.png",
        "/home/me/My Shot.PNG",
        "/x/y z.jpeg",
        "/x/My Pic.jpg",
        "/tmp/z q.webp",
        "~/s.gif",
    ]


def test_image_headers_give_type_and_pixels() -> None:
    assert image_info(png(640, 480)) is not None
    info = image_info(png(640, 480))
    assert info is not None and (info.mime_type, info.width, info.height) == ("image/png", 640, 480)
    gif = b"GIF89a" + struct.pack("<HH", 3, 5) + b"\x00" * 20
    info = image_info(gif)
    assert info is not None and (info.width, info.height) == (3, 5)
    jpeg = (
        b"\xff\xd8\xff\xe0\x00\x04ab\xff\xc0\x00\x11\x08" + struct.pack(">HH", 7, 9) + b"\x00" * 8
    )
    info = image_info(jpeg)
    assert info is not None and (info.mime_type, info.width, info.height) == ("image/jpeg", 9, 7)
    assert image_info(b"plain text") is None


async def test_a_secret_image_path_is_refused(workspace: Path, tmp_path: Path) -> None:
    ssh = Path.home() / ".ssh"
    with ScriptedServer([{"text": "ok"}]) as server:
        app = AgentApp(session_for(workspace, server, "anthropic"), cursor_blink=False)
        async with app.run_test(size=(120, 40)) as pilot:
            await send(pilot, app, f"see '{ssh}/id_rsa.png'")
            await until(pilot, lambda: server.requests, "the request")
            notes = "\n".join(str(n.render()) for n in app.chat.query(NoticeLine))
    assert "id_rsa.png not attached" in notes
    assert sent_images(server.requests[0].body, "anthropic") == []
