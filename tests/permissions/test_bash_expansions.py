"""Expansions that evaluate a variable's value run code the parser never saw: such lines are not judged."""

from __future__ import annotations

from pathlib import Path

import pytest

from nestor.permissions.bash_commands import parse_command_line
from nestor.permissions.bash_expansions import literal_arithmetic, parameter_reason
from tests.permissions.bash_support import decide, leaves

# What a careful user allows: read-only commands and harmless builtins.
ALLOW = (
    "bash(ls *)",
    "bash(true *)",
    "bash(echo *)",
    "bash(: *)",
    "bash(printf *)",
    "bash(cat *)",
    "bash(read *)",
)
P = "a[$(touch P)]"  # a value that runs "touch P" wherever bash evaluates it as arithmetic

# Each line runs "touch P" though no command of it says so (checked with bash below).
EVALUATING = [
    "x='$(touch P)'; ls ${x@P}",
    f"x='{P}'; ls $((x))",
    "x='$(touch P)'; true ${x@P}",
    f"x='{P}'; : $(($x + 1))",
    f"x='{P}'; ((x)); true",
    f"x='{P}'; : $[x]",
    f"x='{P}'; a=(1); echo ${{a[x]}}",
    f"x='{P}'; a=(1); echo ${{a[$x]}}",
    f"x='{P}'; a=(); echo ${{#a[x]}}",
    f"x='{P}'; [[ $x -eq 1 ]]; true",
    f"x='{P}'; [[ 1 -lt x ]]; true",
    f"x='{P}'; [[ -v $x ]]; true",
    f"x='{P}'; [ -v \"$x\" ]; true",
    f"x='{P}'; test -v \"$x\"; true",
    f"x='{P}'; echo ${{!x}}",
    f"x='{P}'; s=abc; echo ${{s:x}}",
    f"x='{P}'; s=abc; echo ${{s:0:x}}",
    f"x='{P}'; set -- 1 2; echo ${{@:x}}",
    f"x='{P}'; a[x]=1",
    f"x='{P}'; a=([x]=1)",
    f"x='{P}'; for ((i=x; i<0; i++)); do :; done",
    f"x='{P}'; let y=x+1",
    f"x='{P}'; declare -i n; n=$x",
    f"declare -n r='{P}'; echo $r",
    f"printf -v '{P}' x",
    f"read '{P}' <<< x",
    f"x='{P}'; f() {{ local \"$x\"=1; }}; f",
    "mapfile -C 'touch P' -c 1 arr <<< $'a\\nb'",
    "compgen -C 'touch P' x",
    "hash -p /usr/bin/touch ls; ls P",
    "eval 'touch P'",
    "echo 'touch P' > s.sh; source s.sh",
    "echo 'touch P' > s.sh; . ./s.sh",
    "x='$(touch P)'; PS4=$x; set -x; true",
    f"cat <<EOF\n${{a[$(echo 0)]}} $((x))\nEOF\nx='{P}'; echo \"${{x@P}}\"",
    "x='$(touch P)'; echo \"${x@P}\"",
    "x='$(touch P)'; echo ${y:-${x@P}}",
]


@pytest.mark.parametrize("command", EVALUATING)
def test_an_evaluating_expansion_is_never_allowed_by_a_pattern(command: str) -> None:
    assert parse_command_line(command).unresolved, command
    assert decide(command, allow=ALLOW) != "allow"


@pytest.mark.parametrize("command", EVALUATING)
def test_an_evaluating_expansion_is_refused_under_a_deny_rule_even_with_yolo(command: str) -> None:
    assert decide(command, allow=(), deny=("bash(touch *)",), yolo=True) != "allow"
    assert decide(command, allow=("bash",), deny=("bash(touch *)",)) != "allow"


@pytest.mark.parametrize("command", EVALUATING)
def test_the_evaluating_lines_really_run_the_hidden_command(command: str, tmp_path: Path) -> None:
    assert leaves(command, tmp_path), command


@pytest.mark.parametrize(
    "command",
    [
        "echo $((1 + 2 * 3))",
        "echo $(( 0x1f | 8#17 ))",
        "((1 < 2)) && ls",
        "echo ${a[0]} ${a[@]} ${#a[*]} ${!a[@]} ${!pre*}",
        "echo ${x:-default} ${x#pre} ${x/a/b} ${x@Q} ${x:1:2} ${x: -1}",
        "[[ $# -gt 0 && ${#x} -le 3 ]] && ls",
        '[ "$x" -eq 1 ] && ls',  # test and [ compare integers without evaluating them
        "[[ -v HOME ]] && ls",
        'read -r line < f; echo "$line"',
        "printf -v out '%s' x",
        "declare -a names=(a b); echo ${names[1]}",
    ],
)
def test_expansions_that_evaluate_nothing_are_judged(command: str) -> None:
    assert not parse_command_line(command).unresolved, parse_command_line(command)


def test_literal_arithmetic_is_numbers_and_operators_only() -> None:
    assert literal_arithmetic("1 + 2 * (3 - 0x1f) % 16#ff")
    assert literal_arithmetic("$# > 0 && ${#x} < 3")
    assert not literal_arithmetic("x + 1")
    assert not literal_arithmetic("$x")
    assert not literal_arithmetic("a[0]")
    assert not literal_arithmetic("$(id)")


def test_parameter_expansions_are_read_by_their_operator() -> None:
    assert parameter_reason("${x@P}")
    assert not parameter_reason("${x@Q}")
    assert parameter_reason("${!x}")
    assert not parameter_reason("${!x*}")
    assert parameter_reason("${x:i}")
    assert not parameter_reason("${x:-i}")
    assert parameter_reason("${a[i]}")
