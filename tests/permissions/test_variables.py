"""Setting a variable that decides what commands run makes a line unjudgeable."""

from __future__ import annotations

from pathlib import Path

import pytest

from nestor.permissions.bash_commands import parse_command_line
from nestor.permissions.variables import assignment_problem, runs_code
from tests.permissions.bash_support import decide, leaves


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


# Each points a program at a config, a repository or code of the line's choosing (G8).
CONFIG_LOCATORS = [
    "HOME=. git status --short",
    "XDG_CONFIG_HOME=. git status",
    "XDG_CONFIG_DIRS=. git status",
    "GIT_DIR=evil.git git status",
    "GIT_COMMON_DIR=evil git status",
    "GIT_WORK_TREE=x git status",
    "GIT_TRACE=.env git status",
    "env HOME=. git status",
    "sudo HOME=. git status",
    "export HOME=.; git status",
    "declare -x XDG_CONFIG_HOME=.; git status",
    "read HOME <<< .; git status",
    ": ${HOME:=.}; git status",
    "RIPGREP_CONFIG_PATH=rc rg x",
    "TAR_OPTIONS=--to-command=x tar xf a.tar",
    "npm_config_script_shell=./x npm ls",
    "PYTHONPATH=. python -m json.tool f",
    "KUBECONFIG=k kubectl get pods",
    "PWD=secrets; cat < ~+/key.txt",  # the directory ~+ names in a redirection
    "for OLDPWD in secrets; do cat < ~-/key.txt; done",
]


@pytest.mark.parametrize("command", CONFIG_LOCATORS)
def test_a_line_choosing_a_programs_config_is_not_judged(command: str) -> None:
    assert parse_command_line(command).unresolved, command
    programs = ("git", "rg", "tar", "npm", "python", "kubectl", "cat")
    assert decide(command, allow=tuple(f"bash({name} *)" for name in programs)) == "ask"


def test_home_really_chooses_the_config_git_runs(tmp_path: Path) -> None:
    import subprocess

    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    (tmp_path / ".gitconfig").write_text('[core]\n\tfsmonitor = "touch P; false"\n')
    assert leaves("HOME=. git status --short", tmp_path)
    assert decide("HOME=. git status --short", allow=("bash(git status*)",)) == "ask"


def test_other_variables_are_judged() -> None:
    assert not parse_command_line("LANG=C CI=1 pytest -q").unresolved
    assert not parse_command_line("export NODE_ENV=test; npm test").unresolved
    assert runs_code("GIT_CONFIG_KEY_0") and not runs_code("GIT_AUTHOR_NAME")
    assert not parse_command_line("GIT_AUTHOR_NAME=x GIT_TERMINAL_PROMPT=0 git commit -m x").unresolved
    assert assignment_problem("PATH=.") and not assignment_problem("HOME2=.")


def test_a_function_from_the_environment_really_runs(tmp_path: Path) -> None:
    command = "env 'BASH_FUNC_ls%%=() { touch P; }' bash -c ls"
    assert leaves(command, tmp_path)
    assert parse_command_line(command).unresolved
