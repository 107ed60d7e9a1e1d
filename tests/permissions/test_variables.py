"""Setting a variable that decides what commands run makes a line unjudgeable."""

from __future__ import annotations

from pathlib import Path

import pytest

from nestor.permissions.bash_commands import parse_command_line
from nestor.permissions.variables import assignment_problem, runs_code
from tests.permissions.bash_support import leaves


@pytest.mark.parametrize(
    "command",
    [
        "PATH=. ls",
        "PATH+=:. ls",
        "export PATH=.:$PATH; ls",
        "LD_PRELOAD=./x.so ls",
        "BASH_ENV=./x.sh bash -c ls",
        "GIT_CONFIG_COUNT=1 git status",
        "GIT_SSH_COMMAND='rm x' git fetch",
        "for PATH in .; do ls; done",
        ": ${LD_PRELOAD:=./x.so}",
        "env 'BASH_FUNC_ls%%=() { rm x; }' bash -c ls",
        "PS4='$(rm x)'; set -x; ls",
    ],
)
def test_a_line_setting_what_runs_is_not_judged(command: str) -> None:
    assert parse_command_line(command).unresolved, command


def test_other_variables_are_judged() -> None:
    assert not parse_command_line("LANG=C CI=1 pytest -q").unresolved
    assert not parse_command_line("export NODE_ENV=test; npm test").unresolved
    assert runs_code("GIT_CONFIG_KEY_0") and not runs_code("GIT_AUTHOR_NAME")
    assert assignment_problem("PATH=.") and not assignment_problem("HOME2=.")


def test_a_function_from_the_environment_really_runs(tmp_path: Path) -> None:
    command = "env 'BASH_FUNC_ls%%=() { touch P; }' bash -c ls"
    assert leaves(command, tmp_path)
    assert parse_command_line(command).unresolved
