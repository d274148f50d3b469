"""``time``: Buddy's machine-readable fields beside the text, through the real registry."""

from __future__ import annotations

import email.utils
import time

from tests.conftest import Harness


async def test_time_gives_unix_millis_and_rfc_2822_utc(harness: Harness) -> None:
    before = int(time.time() * 1000)
    result = await harness.call("time", {"timezone": "Asia/Tokyo"})
    after = int(time.time() * 1000)
    assert not result.is_error
    millis = result.details["unix_millis"]
    assert before <= millis <= after
    assert result.details["unix_seconds"] == millis // 1000
    rfc = result.details["rfc_2822_utc"]
    assert rfc.endswith(" +0000")  # UTC whatever zone was asked for
    parsed = email.utils.parsedate_to_datetime(rfc)
    assert int(parsed.timestamp()) == millis // 1000
    assert f"RFC 2822 (UTC): {rfc}" in result.text and f"millis: {millis}" in result.text
    assert result.details["iso_8601_millis_utc"].endswith("Z")
