"""Option words are read as getopt_long reads them: clusters, attached and separate values, abbreviations."""

from __future__ import annotations

from nestor.permissions.bash_options import OptionSyntax, read_option
from nestor.permissions.bash_words import Word

SYNTAX = OptionSyntax("+ab:c::", "all bee= sea=? seal")


def read(*texts: str, static: bool = True) -> tuple[tuple[str, ...], str | None, int, bool]:
    words = [Word(text, True) for text in texts]
    if not static:
        words[-1] = Word(words[-1].text, False, single=False)
    option = read_option("prog", SYNTAX, words, 0)
    return option.names, option.value, option.consumed, bool(option.problem)


def test_short_options() -> None:
    assert read("-a") == (("-a",), None, 1, False)
    assert read("-ab", "v") == (("-a", "-b"), "v", 2, False)
    assert read("-abv") == (("-a", "-b"), "v", 1, False)
    assert read("-c", "v") == (("-c",), None, 1, False)  # an optional value is attached only
    assert read("-cv") == (("-c",), "v", 1, False)
    assert read("-x")[3]


def test_long_options() -> None:
    assert read("--bee", "v") == (("--bee",), "v", 2, False)
    assert read("--bee=v") == (("--bee",), "v", 1, False)
    assert read("--b", "v") == (("--bee",), "v", 2, False)  # an unambiguous abbreviation
    assert read("--sea", "v") == (("--sea",), None, 1, False)  # exact beats the longer "seal"
    assert read("--se")[3]  # ambiguous: sea or seal
    assert read("--nope")[3]


def test_a_value_that_may_be_several_words_leaves_the_command_unknown() -> None:
    assert read("--bee", "$V", static=False)[3]
    one_word = read_option("prog", SYNTAX, [Word("--bee", True), Word('"$V"', False)], 0)
    assert not one_word.problem and one_word.consumed == 2
