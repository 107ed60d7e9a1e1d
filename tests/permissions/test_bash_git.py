"""git told to run a command (a config key, an option) makes the line unjudgeable; plain git is judged."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from nestor.permissions.bash_commands import parse_command_line
from nestor.permissions.bash_git import config_reason, git_subcommand
from nestor.permissions.bash_words import Word
from tests.permissions.bash_support import decide

RUNNING = [
    "git -c alias.x='!touch P' x",
    "git -c Alias.x='!touch P' x",
    "git -c core.fsmonitor='touch P' status",
    "git -c CORE.FSMONITOR='touch P' status",
    "git -c alias.x='-c core.fsmonitor=\"touch P\" status' x",
    "X='touch P' git --config-env=core.fsmonitor=X status",
    "X='touch P' git --config-env core.fsmonitor=X status",
    "printf '[core]\\n\\tfsmonitor = touch P\\n' > inc; git -c include.path=$PWD/inc status",
    "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.fsmonitor GIT_CONFIG_VALUE_0='touch P' git status",
    "export GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.fsmonitor GIT_CONFIG_VALUE_0='touch P'; git status",
    "env GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.fsmonitor GIT_CONFIG_VALUE_0='touch P' git status",
    "git -C . -c core.fsmonitor='touch P' --no-pager status",
    "git commit -q --allow-empty -m x; git commit -q --allow-empty -m y; git rebase --exec 'touch P' HEAD~1",
    "git commit -q --allow-empty -m x; git commit -q --allow-empty -m y; git rebase -x 'touch P' HEAD~1",
    "git commit -q --allow-empty -m x; git commit -q --allow-empty -m y; git rebase --exe 'touch P' HEAD~1",
]


@pytest.mark.parametrize("command", RUNNING)
def test_git_told_to_run_a_command_is_never_allowed_and_refused_under_a_deny_rule(command: str) -> None:
    assert parse_command_line(command).unresolved, command
    assert decide(command, allow=("bash(git *)", "bash(printf *)", "bash(env *)")) != "allow"
    assert decide(command, deny=("bash(touch *)",), yolo=True) != "allow"


@pytest.mark.parametrize("command", RUNNING)
def test_the_git_lines_really_run_the_command(
    command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "GIT_AUTHOR_NAME": "a",
        "GIT_AUTHOR_EMAIL": "a@b",
        "GIT_COMMITTER_NAME": "a",
        "GIT_COMMITTER_EMAIL": "a@b",
    }
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True, env=env)
    subprocess.run(
        ["bash", "-c", command], cwd=tmp_path, capture_output=True, timeout=20, check=False, env=env
    )
    assert (tmp_path / "P").exists(), command


@pytest.mark.parametrize(
    "command",
    [
        "git status",
        "git --no-pager log --oneline -5",
        "git -C sub diff --stat",
        "git -c color.ui=always -c user.name=x -c core.quotepath=off log",
        "git -c diff.noprefix=true diff",
        "git commit -m 'exec x'",
        "git rebase -i HEAD~3",
    ],
)
def test_plain_git_is_judged(command: str) -> None:
    assert not parse_command_line(command).unresolved, parse_command_line(command)
    assert decide(command, allow=("bash(git *)",)) == "allow"


@pytest.mark.parametrize(
    "command",
    [
        "git -c diff.x.textconv=evil diff",
        "git -c filter.x.clean=evil add .",
        "git -c credential.helper='!evil' fetch",
        "git -c gpg.program=evil commit -S -m x",
        "git -c core.sshCommand=evil fetch",
        "git -c core.hooksPath=hooks commit",
        "git -c diff.external=evil diff",
        "git -c merge.x.driver=evil merge y",
        "git -c hook.x.command=evil commit",
        "git --exec-path=. status",
        "git --bogus status",
        "git clone --upload-pack='evil' src dst",
        "git clone --template=./t src dst",
        "git clone -c core.fsmonitor=evil src dst",
        "git push --receive-pack=evil origin",
        "git submodule foreach 'evil'",
        "git bisect run evil",
        "git difftool -x evil",
        "git filter-branch --tree-filter evil",
        "git grep -O evil pattern",
        'git -c "$KEY" status',
        "git --git-dir=evil.git status",
        "git --work-tree x --git-dir x status",
    ],
)
def test_git_options_that_name_a_program_are_not_judged(command: str) -> None:
    assert parse_command_line(command).unresolved, command


def test_config_keys_are_judged_by_section_case_insensitively() -> None:
    assert not config_reason("color.ui=auto")
    assert not config_reason("COLOR.UI=auto")
    assert not config_reason("user.name=x")
    assert config_reason("core.pager=less")
    assert config_reason("pager.log=evil")
    assert config_reason("diff.x.command=evil")
    assert not config_reason("diff.renames=true")
    assert config_reason("novel.key=x")


def test_the_subcommand_is_found_past_gits_own_options() -> None:
    def words(line: str) -> list[Word]:
        return [Word(part, True) for part in line.split()]

    assert git_subcommand(words("git status")) == "status"
    assert git_subcommand(words("git -C sub -c color.ui=never --no-pager checkout x")) == "checkout"
    assert git_subcommand(words("git --no-pager -P stash pop")) == "stash"
    assert git_subcommand(words("git --git-dir=x status")) == ""  # not judged: another repository
    assert git_subcommand(words("git")) == ""
    assert git_subcommand(words("git -c core.pager=x log")) == ""  # not judged: no subcommand told
