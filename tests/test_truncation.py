from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from tui.tools.truncation import TruncationRule, envelope, truncate


def test_short_text_is_untouched() -> None:
    cut = truncate("hello", TruncationRule.head(10), spill_name="x")
    assert cut.text == "hello" and cut.cut_chars == 0 and cut.full_output_path is None


def test_head_cut_says_how_much_and_saves_everything() -> None:
    text = "".join(f"line {i}\n" for i in range(5000))
    cut = truncate(text, TruncationRule.head(4000, keep_tail=1000), spill_name="call_1-stdout")
    assert cut.text.startswith("line 0\n")
    assert cut.text.endswith("line 4999\n")
    assert cut.cut_chars == len(text) - 5000
    assert f"[truncated {cut.cut_chars} chars from the middle" in cut.text
    assert cut.full_output_path is not None
    assert Path(cut.full_output_path).read_text() == text
    assert cut.full_output_path in cut.text


def test_tail_cut_keeps_the_end() -> None:
    text = "a" * 100 + "THE END"
    cut = truncate(text, TruncationRule.tail(7))
    assert cut.text == "[truncated 100 chars from start]\nTHE END"


def test_cut_never_splits_a_surrogate_pair() -> None:
    text = "x" * 9 + "\ud83d\ude00" + "y" * 20  # a pair as two code units, cut lands between
    cut = truncate(text, TruncationRule.head(10))
    assert not cut.text.split("\n[truncated")[0].endswith("\ud83d")


def test_multibyte_text_stays_valid_utf8() -> None:
    text = "é€😀" * 3000
    cut = truncate(text, TruncationRule.head(4000, keep_tail=1000), spill_name="u")
    cut.text.encode("utf-8")  # raises if anything was broken
    assert cut.text.count("😀") > 0


@given(st.text(), st.integers(min_value=0, max_value=200), st.integers(0, 50))
def test_head_keeps_plus_cut_equals_whole(text: str, limit: int, tail: int) -> None:
    cut = truncate(text, TruncationRule.head(limit, keep_tail=tail))
    if cut.cut_chars == 0:
        assert cut.text == text
    else:
        head, _, rest = cut.text.partition("\n[truncated ")
        kept_tail = rest.split("]\n", 1)[1]
        assert len(head) + len(kept_tail) + cut.cut_chars == len(text)
        assert text.startswith(head) and text.endswith(kept_tail)


def test_envelope_shape() -> None:
    data = json.loads(envelope("ok", now_ms=123))
    assert data == {"harness_timestamp": {"source": "harness", "unix_millis": 123}, "result": "ok"}
