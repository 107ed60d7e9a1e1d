"""A line that links, moves or removes files, or changes directory, cannot have its paths judged early."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from nestor.permissions.bash_commands import parse_command_line
from nestor.permissions.bash_path_changes import moved_paths, unmoved, widest
from nestor.permissions.bash_redirects import FileAccess
from nestor.permissions.bash_words import Word
from tests.permissions.bash_support import decide


def words(line: str) -> list[Word]:
    return [Word(part, True) for part in line.split()]


# Each writes the project's .env through a name judged when the line is, before it runs.
WRITES_ENV = [
    "ln -s .env innocent; echo EVIL=1 >> innocent",
    "ln -s .env innocent && cat < innocent > /dev/null && echo EVIL=1 >> innocent",
    "for i in 1 2; do echo EVIL=1 >> innocent; ln -sf .env innocent; done",
    "cp -s .env innocent; echo EVIL=1 >> innocent",
    "mv .env innocent; echo EVIL=1 >> innocent; mv innocent .env",
    "tar xf links.tar; echo EVIL=1 >> y",  # the archive holds y -> .env
    "env -C sub sh -c 'echo EVIL=1 >> ../.env'",
    "env --chdir=sub bash -c 'echo EVIL=1 >> ../.env'",
    "cd sub && echo EVIL=1 >> ../.env",
]


@pytest.mark.parametrize("line", WRITES_ENV)
def test_a_line_that_moves_a_name_is_refused_under_a_rule_on_the_file(line: str, tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("SAFE=1\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "y").symlink_to(".env")
    subprocess.run(["tar", "cf", "links.tar", "y"], cwd=tmp_path, check=True)
    (tmp_path / "y").unlink()
    assert decide(line, deny=("edit(.env)",), yolo=True, root=tmp_path) == "deny"
    assert decide(line, allow=("bash",), ask=("edit(.env)",), root=tmp_path) == "ask"
    subprocess.run(["bash", "-c", line], cwd=tmp_path, capture_output=True, timeout=10, check=False)
    assert "EVIL" in (tmp_path / ".env").read_text(), "the line does not write .env: the case tests nothing"


def test_a_git_checkout_makes_the_links_a_repository_holds(tmp_path: Path) -> None:
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "core.hooksPath=/dev/null"]
    subprocess.run([*git, "init", "-q"], cwd=tmp_path, check=True)
    (tmp_path / ".env").write_text("SAFE=1\n")
    (tmp_path / "innocent").symlink_to(".env")
    subprocess.run([*git, "add", "innocent"], cwd=tmp_path, check=True)
    subprocess.run([*git, "commit", "-qm", "link"], cwd=tmp_path, check=True)
    (tmp_path / "innocent").unlink()
    line = "git checkout -- innocent; echo EVIL=1 >> innocent"
    assert decide(line, deny=("edit(.env)",), yolo=True, root=tmp_path) == "deny"
    subprocess.run(["bash", "-c", line], cwd=tmp_path, capture_output=True, timeout=10, check=False)
    assert "EVIL" in (tmp_path / ".env").read_text()


@pytest.mark.parametrize(
    ("line", "paths"),
    [
        ("git status > out.txt", ["out.txt"]),
        ("git log --oneline | head > log.txt", ["log.txt"]),
        ("ls > a; cat a > b", ["a", "b"]),
        ("cd sub && ls > /tmp/x", ["/tmp/x"]),
        ("git --no-pager diff > d.patch", ["d.patch"]),
    ],
)
def test_a_line_that_moves_no_name_keeps_its_paths(line: str, paths: list[str]) -> None:
    assert [access.path for access in parse_command_line(line).files] == paths


def test_which_commands_move_which_paths() -> None:
    assert moved_paths(words("cd sub")) == "relative"
    assert moved_paths(words("popd")) == "relative"
    for line in (
        "ln -s a b",
        "mv a b",
        "cp a b",
        "rm a",
        "tar xf a.tar",
        "git checkout x",
        "git -C x stash",
        "mount",
    ):
        assert moved_paths(words(line)) == "all", line
    for line in ("ls", "git status", "git -c color.ui=never log", "git", "cat a"):
        assert moved_paths(words(line)) == "", line
    assert widest("relative", "") == "relative" and widest("relative", "all") == "all"
    files = [FileAccess("a", "write"), FileAccess("/tmp/b", "read"), FileAccess(None, "read")]
    assert unmoved(files, "relative") == [FileAccess(None, "write"), FileAccess("/tmp/b", "read"), files[2]]
    assert unmoved(files, "all") == [FileAccess(None, "write"), FileAccess(None, "read"), files[2]]
    assert unmoved(files, "") == files
