"""Builtins that run, define or evaluate code, or take a variable's name that may hold a subscript."""

from __future__ import annotations

import pytest

from nestor.permissions.bash_builtins import builtin_reason, name_reason
from nestor.permissions.bash_commands import parse_command_line
from nestor.permissions.bash_words import Word


def words(*texts: str) -> list[Word]:
    return [Word(text, True) for text in texts]


@pytest.mark.parametrize(
    "command",
    [
        "eval ls",
        "source x.sh",
        ". x.sh",
        "trap 'rm x' EXIT",
        "let x=1",
        "alias ls=rm",
        "enable -f x.so ls",
        "hash -p /bin/rm ls",
        "declare -i n=1",
        "typeset -n r=x",
        "local -ri n",
        "export PATH=.:$PATH",
        "declare -x LD_PRELOAD=./x.so",
        "readonly BASH_ENV=./x",
        "read PATH",
        "read -r -a 'a[$i]'",
        "printf -v PS4 '%s' x",
        "printf -v'a[x]' x",
        "mapfile -C 'rm x' arr",
        "readarray -t 'a[$(rm x)]'",
        "unset 'a[$i]'",
        "getopts ab 'a[$i]'",
        "wait -p 'a[$i]'",
        "compgen -C 'rm x' w",
        'declare "$name=1"',
        "builtin declare -i n=1",
        "command eval ls",
    ],
)
def test_builtins_that_run_or_evaluate_code_make_a_line_unjudgeable(command: str) -> None:
    assert parse_command_line(command).unresolved, command


@pytest.mark.parametrize(
    "command",
    [
        "declare -a names=(a b)",
        "export LANG=C",
        "local x=1",
        "read -r line",
        "read -p 'name? ' -t 5 name",
        "printf -v out '%s' x",
        "mapfile -t lines",
        "unset x y",
        "getopts ab opt",
        "hash -r",
        "test -f x",
        "export -n X",
    ],
)
def test_ordinary_builtins_are_judged(command: str) -> None:
    assert not parse_command_line(command).unresolved, parse_command_line(command)


def test_a_name_must_be_plain() -> None:
    assert not name_reason(Word("x", True))
    assert not name_reason(Word("a[0]", True))
    assert name_reason(Word("a[i]", True))
    assert name_reason(Word("$n", False))
    assert name_reason(Word("PATH", True))
    assert not builtin_reason(words("read", "-d", "", "-r", "x"))
