"""Programs told by an option to run a command, and programs that run what they build, are not judged."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from nestor.permissions.bash_commands import parse_command_line
from tests.permissions.bash_support import decide, leaves

RUNNING = [
    "tar --to-command='touch P' -xf a.tar",
    "tar --to-c='touch P' -xf a.tar",
    "tar --checkpoint=1 --checkpoint-action=exec='touch P' -cf b.tar a.txt",
    "echo | ssh -o ProxyCommand='touch P' -o BatchMode=yes x true",
    "echo | ssh -oProxyCommand='touch P' -o BatchMode=yes x true",
]


@pytest.mark.parametrize("command", RUNNING)
def test_an_option_naming_a_command_is_not_judged(command: str) -> None:
    assert parse_command_line(command).unresolved, command
    assert decide(command, allow=("bash(tar *)", "bash(ssh *)", "bash(echo *)")) != "allow"


@pytest.mark.parametrize("command", RUNNING)
def test_the_option_lines_really_run_the_command(command: str, tmp_path: Path) -> None:
    if shutil.which(command.split("| ")[-1].split()[0]) is None:
        pytest.skip("not installed here")
    (tmp_path / "a.txt").write_text("a")
    subprocess.run(["tar", "-cf", "a.tar", "a.txt"], cwd=tmp_path, check=True)
    assert leaves(command, tmp_path), command


@pytest.mark.parametrize(
    "command",
    [
        "tar -xIf zstd a.tar",
        "tar cIf zstd a.tar",
        "rsync -e 'rm f;' a h:b",
        "rsync --rsync-path='rm f' a h:b",
        "sort --compress-program=evil f",
        "man -P 'rm f' ls",
        "scp -S ./evil a h:b",
        "ssh -F ./config h",
        "zip -TT evil a.zip a",
        "parallel rm ::: f",
        "echo 'rm f' | at now",
        "tmux new -d 'rm f'",
        "ls | entr rm f",
        "rg --pre ./evil.sh needle",
        "rg --pre=sh needle .",
    ],
)
def test_more_command_running_options_and_runners_are_not_judged(command: str) -> None:
    assert parse_command_line(command).unresolved, command


@pytest.mark.parametrize(
    "command",
    [
        "tar -xzf a.tar",
        "tar xvf a.tar -C out",
        "rsync -avz a b",
        "sort -u f",
        "man ls",
        "ssh -o BatchMode=yes h ls",
        "rg -n --pre-glob '*.gz' needle",
    ],
)
def test_the_same_programs_otherwise_are_judged(command: str) -> None:
    assert not parse_command_line(command).unresolved, parse_command_line(command)
