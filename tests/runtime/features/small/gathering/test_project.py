"""The project's test command as the harness runs it."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from nestor.runtime.features.small.gathering.project import project_files, runnable_test_command
from nestor.runtime.features.small.gathering.reader import ProjectReader
from tests.hostile_repos import ATTACKS, Attack, build

NOISY_TEST = """import warnings


def test_noisy():
    for n in range(80):
        warnings.warn(f"old API {n}", DeprecationWarning, stacklevel=1)
    assert 1 + 1 == 3, "the failure the model must see"
"""


def test_the_failure_stays_in_the_tail_of_a_run_full_of_warnings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The user's environment: the python on PATH is the one with pytest.
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_noisy.py").write_text(NOISY_TEST)
    command = runnable_test_command(ProjectReader(tmp_path))
    assert command is not None and "pytest" in command

    # As the harness runs it: the last 60 lines.
    shell = f"set -o pipefail; {command} 2>&1 | tail -n 60"
    finished = subprocess.run(
        ["bash", "-c", shell], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )

    assert finished.returncode != 0
    assert "the failure the model must see" in finished.stdout
    assert "assert 1 + 1 == 3" in finished.stdout


@pytest.mark.parametrize("attack", ATTACKS.values(), ids=ATTACKS.keys())
def test_the_file_list_of_a_hostile_repository_runs_none_of_its_commands(
    tmp_path: Path, attack: Attack
) -> None:
    directory, marker = build(attack, tmp_path)

    files = project_files(directory)

    assert not marker.exists(), marker.read_text()
    assert "a.txt" in files or "b.txt" in files
