from __future__ import annotations

import pytest

from nestor.core.tokens import CHARS_PER_TOKEN, estimate_tokens


@pytest.mark.parametrize(
    ("text", "tokens"),
    [("", 0), ("a", 1), ("abcd", 1), ("abcde", 2), ("x" * 8, 2), ("x" * 9, 3), ("é" * 4, 1)],
)
def test_estimate_is_characters_over_four_rounded_up(text: str, tokens: int) -> None:
    assert estimate_tokens(text) == tokens


def test_estimate_counts_characters_not_bytes() -> None:
    text = "日本語" * 100
    assert estimate_tokens(text) == 75
    assert CHARS_PER_TOKEN == 4
