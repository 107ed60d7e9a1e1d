"""env -S splits its string as GNU env does (checked against the env installed here)."""

from __future__ import annotations

import subprocess

import pytest

from nestor.permissions.env_split import split_env_string


@pytest.mark.parametrize(
    "text",
    ["a b", "a 'b c'", 'a "b c"', "a\\_b", '"a\\_b"', "a #c d", "a\\#b", "'a\\'b'", "a\\cb c", '"a\\tb"',
     "'a\\tb'", "'a\\\\b'", 'a"b"c', "a'b'c", "\\\\", '"x\\$y"'],
)  # fmt: skip
def test_the_words_are_the_ones_env_passes(text: str) -> None:
    done = subprocess.run(
        ["env", f"-Sprintf %s\\\\0 {text}"], capture_output=True, text=True, check=True, timeout=10
    )
    assert split_env_string(text) == done.stdout.split("\0")[:-1]


@pytest.mark.parametrize("text", ["${HOME} x", "a\\x", "'open", '"open'])
def test_a_string_env_expands_or_refuses_is_not_split(text: str) -> None:
    assert split_env_string(text) is None
