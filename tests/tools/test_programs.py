"""The programs nestor runs for itself are never a repository's."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from nestor.tools.programs import find_program


def plant(directory: Path, name: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    program = directory / name
    program.write_text("#!/bin/sh\ntouch pwned\n")
    program.chmod(0o755)
    return program


def test_relative_path_entries_are_skipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plant(tmp_path / "bin", "rg")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", f"bin{os.pathsep}.{os.pathsep}{os.pathsep}{os.environ['PATH']}")

    found = find_program("rg")

    assert found is None or not Path(found).resolve().is_relative_to(tmp_path)


def test_entries_inside_a_folder_to_avoid_are_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    inside = plant(tmp_path / "repo" / ".venv" / "bin", "git")
    outside = plant(tmp_path / "tools", "git")
    monkeypatch.setenv("PATH", f"{inside.parent}{os.pathsep}{outside.parent}")

    assert find_program("git") == str(inside)
    assert find_program("git", outside=tmp_path / "repo") == str(outside)
    assert find_program("git", outside=tmp_path) is None


def test_by_default_nothing_inside_the_directory_nestor_runs_in_is_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The third red team: a repository's .venv/bin/bwrap became the sandbox, its rg ran unsandboxed.
    planted = plant(tmp_path / "repo" / ".venv" / "bin", "bwrap")
    monkeypatch.setenv("PATH", str(planted.parent))
    monkeypatch.chdir(tmp_path / "repo")

    assert find_program("bwrap") is None
    monkeypatch.chdir(tmp_path)
    assert find_program("bwrap", outside=tmp_path / "elsewhere") == str(planted)
