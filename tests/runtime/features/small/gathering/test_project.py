"""The project's files, listed without running anything the repository holds."""

from pathlib import Path

import pytest

from nestor.runtime.features.small.gathering.project import project_files
from tests.hostile_repos import ATTACKS, Attack, build


@pytest.mark.parametrize("attack", ATTACKS.values(), ids=ATTACKS.keys())
def test_the_file_list_of_a_hostile_repository_runs_none_of_its_commands(
    tmp_path: Path, attack: Attack
) -> None:
    directory, marker = build(attack, tmp_path)

    files = project_files(directory)

    assert not marker.exists(), marker.read_text()
    assert "a.txt" in files or "b.txt" in files
