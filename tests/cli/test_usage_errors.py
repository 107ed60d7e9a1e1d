"""Usage mistakes are usage errors: one line naming the command or flag, exit code 2, never "unexpected"."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.support import clean_env, nestor

EXIT_USAGE = 2


def usage_error(args: list[str], tmp_path: Path) -> str:
    """Run ``nestor ARGS`` and return its error line, checking it is a clean usage error."""
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    done = nestor(args, cwd=project, env=clean_env(tmp_path / "home"), stdin="")
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == EXIT_USAGE, done.stderr
    assert "Traceback" not in done.stderr and "error: unexpected" not in done.stderr, done.stderr
    assert len(lines) == 2 and lines[0].startswith("error: ") and lines[1].startswith("hint: "), done.stderr
    assert "--help" in lines[1]
    return lines[0]


@pytest.mark.parametrize(
    ("group", "commands"),
    [
        ([], "run, undo, models, acp, trust, sessions, agents"),
        (["sessions"], "list, show, export, import, delete, fork"),
        (["agents"], "list, show, validate, create, delete"),
    ],
)
def test_unknown_command_lists_the_commands(group: list[str], commands: str, tmp_path: Path) -> None:
    line = usage_error([*group, "frobnicate"], tmp_path)
    assert "no such command 'frobnicate'" in line and commands in line


@pytest.mark.parametrize(
    ("args", "argument"),
    [
        (["sessions", "show"], "session_id"),
        (["sessions", "export"], "session_id"),
        (["sessions", "delete"], "session_id"),
        (["agents", "show"], "name"),
        (["agents", "delete"], "name"),
    ],
)
def test_missing_argument_names_it(args: list[str], argument: str, tmp_path: Path) -> None:
    line = usage_error(args, tmp_path)
    assert f"missing argument '{argument}'" in line and " ".join(args) in line


def test_bad_choice_lists_the_choices(tmp_path: Path) -> None:
    line = usage_error(["run", "-o", "xml", "hi"], tmp_path)
    assert "'--output-format'" in line and "'xml'" in line and "'text', 'json', 'stream-json'" in line


@pytest.mark.parametrize(
    "args",
    [
        ["run", "--max-time", "abc", "hi"],
        ["run", "--max-time", "-5", "hi"],
        ["run", "--max-time", "nan", "hi"],
        ["run", "--max-tokens", "many", "hi"],
        ["run", "--max-tokens", "-1", "hi"],
        ["run", "--max-tokens", "1.5", "hi"],
        ["run", "--max-iterations", "x", "hi"],
        ["run", "--max-iterations", "0", "hi"],
        ["sessions", "list", "--limit", "ten"],
        ["sessions", "list", "--limit", "0"],
    ],
)
def test_bad_number_names_the_flag_and_the_value(args: list[str], tmp_path: Path) -> None:
    flag, value = args[-3:-1] if args[-1] == "hi" else args[-2:]
    line = usage_error(args, tmp_path)
    assert f"'{flag}'" in line and f"'{value}'" in line


@pytest.mark.parametrize(
    "args",
    [["run", "--nope", "hi"], ["--nope"], ["sessions", "list", "--nope"], ["agents", "create", "--nope"]],
)
def test_unknown_option(args: list[str], tmp_path: Path) -> None:
    assert "no such option: --nope" in usage_error(args, tmp_path)


def test_unknown_option_suggests_the_close_one(tmp_path: Path) -> None:
    assert "did you mean --yolo" in usage_error(["run", "--yol", "hi"], tmp_path)


@pytest.mark.parametrize("args", [["--model"], ["run", "hi", "-o"], ["sessions", "export", "x", "--output"]])
def test_option_without_its_value(args: list[str], tmp_path: Path) -> None:
    assert f"option '{args[-1]}' requires an argument" in usage_error(args, tmp_path)


def test_extra_argument(tmp_path: Path) -> None:
    assert "unexpected extra argument" in usage_error(["models", "surplus"], tmp_path)


def test_group_without_a_command_prints_its_help(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    done = nestor(["sessions"], cwd=project, env=clean_env(tmp_path / "home"))
    assert done.returncode == EXIT_USAGE
    assert "Commands:" in done.stderr and "error: unexpected" not in done.stderr


@pytest.mark.parametrize("args", [["-C", "/nonexistent", "models"], ["run", "--dir", "/nonexistent", "hi"]])
def test_a_missing_project_directory(args: list[str], tmp_path: Path) -> None:
    assert "'/nonexistent' does not exist" in usage_error(args, tmp_path)


def test_a_file_as_the_project_directory(tmp_path: Path) -> None:
    afile = tmp_path / "afile"
    afile.write_text("")
    assert f"'{afile}' is a file" in usage_error(["-C", str(afile), "models"], tmp_path)
