"""awk and sed programs that run commands make a line unjudgeable; plain text processing is judged."""

from __future__ import annotations

from pathlib import Path

import pytest

from nestor.permissions.bash_commands import parse_command_line
from tests.permissions.bash_support import decide, leaves

RUNNING = [
    "echo a | awk 'BEGIN{system(\"touch P\")}'",
    "echo a | awk '{print | \"touch P\"}'",
    "echo a | awk 'BEGIN{\"touch P\" | getline}'",
    "echo a | awk '{print > \"P\"}'",
    'echo a | awk \'{printf "x" > "P"}\'',
    "echo a | awk -F: -v x=1 '{ if ($1 > 0) print; system(\"touch P\") }'",
    "echo a | sed 'e touch P'",
    "echo a | sed '1e touch P'",
    "echo a | sed 's/a/touch P/e'",
    "echo a | sed -n 's/a/touch P/ep'",
    "echo a | sed -e p -e 'e touch P'",
    "echo a | sed --expr='e touch P'",
    "echo a | sed -n -- 'e touch P'",
    "echo a | sed '/a/{e touch P\n}'",
    "echo a | sed 'y/a/b/;e touch P'",
    "echo 'e touch P' > s.sed; echo a | sed -f s.sed",
]


def _allowed(command: str) -> bool:
    return decide(command, allow=("bash(echo *)", "bash(awk *)", "bash(sed *)")) == "allow"


@pytest.mark.parametrize("command", RUNNING)
def test_a_text_tool_running_a_command_is_not_judged(command: str) -> None:
    assert parse_command_line(command).unresolved, command
    assert not _allowed(command)


@pytest.mark.parametrize("command", RUNNING)
def test_the_text_tool_lines_really_run_the_command(command: str, tmp_path: Path) -> None:
    assert leaves(command, tmp_path), command


@pytest.mark.parametrize(
    "command",
    [
        "awk '{print $1}' f",
        "awk -F, '$3 > 100 { n++ } END { print n }' f",
        "awk '/a|b/ { print ($1 > 2) }' f",
        "awk '{ x = a || b; print x }' f",
        "sed -n '1,5p' f",
        "sed 's/exec/run/g; /^e/d' f",
        "sed -E 's#a|b#c#2' f",
        "sed -i.bak 's/x/y/' f",
        "sed --sandbox 'e rm x' f",
    ],
)
def test_plain_text_processing_is_judged(command: str) -> None:
    assert not parse_command_line(command).unresolved, parse_command_line(command)
    assert _allowed(command)


def test_a_file_named_like_an_option_is_seen_through_a_glob(tmp_path: Path) -> None:
    """GNU sed reads options after its operands: a file named ``--expression=e ...`` is one."""
    (tmp_path / "--expression=e touch P").write_text("")
    (tmp_path / "a.txt").write_text("a")
    assert leaves("sed -n p * > /dev/null", tmp_path)
    assert parse_command_line("sed -n p *").unresolved
    assert not parse_command_line("sed -n p -- *").unresolved
