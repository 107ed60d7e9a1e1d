"""The command that runs a project's tests, for each ecosystem, as the harness runs it."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from nestor.runtime.features.small.gathering.reader import ProjectReader
from nestor.runtime.features.small.verifying.test_command import runnable_test_command

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


def test_each_ecosystem_gets_its_own_test_command(tmp_path: Path) -> None:
    def command(files: dict[str, str]) -> str | None:
        root = tmp_path / str(len(list(tmp_path.iterdir())))
        for name, text in files.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(text)
        return runnable_test_command(ProjectReader(root))

    # A JavaScript package with a test/ folder is not a Python project.
    node = {"package.json": json.dumps({"scripts": {"test": "node --test"}}), "test/a.test.js": ""}
    assert command(node) == "npm test --silent"
    placeholder = {
        "package.json": json.dumps({"scripts": {"test": 'echo "Error: no test specified" && exit 1'}})
    }
    assert command(placeholder) is None
    assert (
        command({"Cargo.toml": "[package]\nname = 'x'\n", "src/lib.rs": ""}) == "cargo test --offline --quiet"
    )
    assert command({"go.mod": "module x\n"}) == "go test ./..."
    python = command({"tests/test_a.py": "", "Makefile": "test:\n\ttox\n"})
    assert python is not None and python.endswith(
        "-m pytest -q -x --tb=short -p no:cacheprovider -p no:warnings"
    )
    assert command({"Makefile": "lint:\n\ttrue\ntest:\n\t./run-tests\n"}) == "make test"
    assert command({"README.md": "hi"}) is None
