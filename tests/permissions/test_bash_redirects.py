"""A redirection to a file is a write of that file, one from a file a read: the file rules judge them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from nestor.permissions.bash_commands import parse_command_line
from nestor.permissions.bash_redirects import FileAccess
from tests.permissions.bash_support import decide as decide_line


def files(command: str) -> list[tuple[str | None, str]]:
    return [(access.path, access.action) for access in parse_command_line(command).files]


def decide(command: str, root: Path, **rules: Any) -> str:
    return decide_line(command, root=root, **rules)


def test_the_files_a_line_opens() -> None:
    assert files("ls > f 2>&1") == [("f", "write")]
    assert files("ls >> f 2>/dev/null &> g &>> h >| i") == [
        ("f", "write"),
        ("g", "write"),
        ("h", "write"),
        ("i", "write"),
    ]
    assert files("cat < in > out") == [("in", "read"), ("out", "write")]
    assert files("ls >& log") == [("log", "write")]
    assert files("cat <> f") == [("f", "read"), ("f", "write")]
    assert files("cat <<EOF > out\nx\nEOF") == [("out", "write")]
    assert files("{ ls; pwd; } > g") == [("g", "write")]
    assert files("while read l; do :; done < in") == [("in", "read")]
    assert files('ls > "$f"') == [(None, "write")]
    assert files("cd sub && ls > f") == [(None, "write")]  # the directory is only known when it runs
    assert files("cd sub && ls > /tmp/f") == [("/tmp/f", "write")]
    assert files("bash -c 'ls > f'") == [("f", "write")]


@pytest.mark.parametrize(
    "command",
    [
        "ls 2>&1",
        "ls >&2",
        "ls 2>&-",
        "ls > /dev/null",
        "ls &> /dev/null",
        "ls > /dev/stderr",
        "cat < /dev/stdin",
        "ls > /dev/fd/3",
        "ls > >(cat)",
        "cat <<< x",
        "cat <<EOF\nx\nEOF",
    ],
)
def test_what_opens_no_file_is_left_out(command: str) -> None:
    assert parse_command_line(command).files == ()


def test_a_redirection_to_a_network_device_is_not_judged() -> None:
    assert parse_command_line("ls > /dev/tcp/example.invalid/80").unresolved


# -- the red-team findings: a read-only allow rule wrote project files -----------------------------


@pytest.mark.parametrize(
    "command", ["ls > f", "git status >> app.py", "ls &> f", "{ ls; } > f", "cat < a > b"]
)
def test_an_allow_rule_for_a_command_does_not_cover_writing_a_file(command: str, tmp_path: Path) -> None:
    assert (
        decide(command, tmp_path, allow=("bash(ls *)", "bash(ls)", "bash(git status*)", "bash(cat *)"))
        == "ask"
    )


def test_writing_the_file_allowed_too_covers_the_line(tmp_path: Path) -> None:
    allow = ("bash(ls *)", "write(logs/**)")
    assert decide("ls -l > logs/out.txt", tmp_path, allow=allow) == "allow"
    assert decide("ls -l > other.txt", tmp_path, allow=allow) == "ask"
    assert decide("ls -l 2>/dev/null", tmp_path, allow=("bash(ls *)",)) == "allow"
    assert (
        decide("ls -l > ~/.bashrc", tmp_path, allow=("bash(ls *)", "edit")) == "ask"
    )  # a bare edit: the project


def test_a_write_rule_refuses_a_redirection_to_the_file_whatever_allows(tmp_path: Path) -> None:
    deny = ("edit(.env)",)
    assert decide("echo x > .env", tmp_path, allow=("bash",), deny=deny) == "deny"
    assert decide("echo x >> ./.env", tmp_path, deny=deny, yolo=True) == "deny"
    assert decide("bash -c 'echo x > .env'", tmp_path, deny=deny, yolo=True) == "deny"
    assert decide("echo x > .env", tmp_path, ask=("Write(.env)",), yolo=True) == "ask"
    assert decide("echo x > other", tmp_path, deny=deny, yolo=True) == "allow"


def test_a_redirection_follows_links_as_the_write_tool_does(tmp_path: Path) -> None:
    (tmp_path / "secret").write_text("")
    (tmp_path / "link").symlink_to(tmp_path / "secret")
    assert decide("echo x > link", tmp_path, deny=("edit(secret)",), yolo=True) == "deny"


def test_an_input_redirection_is_a_read(tmp_path: Path) -> None:
    deny = ("Read(secrets/**)",)
    assert decide("cat < secrets/key.txt", tmp_path, allow=("bash",), deny=deny) == "deny"
    assert (
        decide("cat < notes.txt", tmp_path, allow=("bash(cat*)",)) == "allow"
    )  # reading inside: the default
    assert decide("cat < /etc/hostname", tmp_path, allow=("bash(cat*)",)) == "ask"  # outside: asked


def test_a_file_not_known_before_the_line_runs_is_refused_under_a_file_deny_rule(tmp_path: Path) -> None:
    assert decide('echo x > "$f"', tmp_path, allow=("bash",), deny=("edit(.env)",)) == "deny"
    assert decide('echo x > "$f"', tmp_path, deny=("edit(.env)",), yolo=True) == "deny"
    assert decide('echo x > "$f"', tmp_path, allow=("bash",), ask=("edit(.env)",)) == "ask"
    assert decide('echo x > "$f"', tmp_path, deny=("edit",), yolo=True) == "deny"
    assert decide('echo x > "$f"', tmp_path, allow=("bash(echo *)", "edit")) == "ask"
    assert decide('echo x > "$f"', tmp_path, allow=("bash",)) == "allow"  # no file rule: a bare bash allow


def test_file_access_is_plain_data() -> None:
    assert FileAccess("f", "write") == FileAccess("f", "write")
