"""The line tracer: which lines of the project a test run executes, read back from its output."""

import os
import subprocess
import sys
from pathlib import Path

from nestor.runtime.features.small.gathering.trace import read_executed_lines, traced_command

CODE = """def helper(x):
    if x > 0:
        return x
    return -x


def never():
    return 0
"""

TEST = """from helpers import helper


def test_helper():
    assert helper(2) == 3
"""


def test_the_lines_a_failing_test_runs_are_read_back_outside_the_tests(tmp_path: Path) -> None:
    (tmp_path / "helpers.py").write_text(CODE)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_it.py").write_text(TEST)
    (tmp_path / "pytest.ini").write_text("[pytest]\npythonpath = .\n")
    command = traced_command(f"{sys.executable} -m pytest -q -p no:cacheprovider", str(tmp_path / "trace"))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(["bash", "-c", command], cwd=tmp_path, capture_output=True, text=True, env=env)
    executed = read_executed_lines(done.stdout)
    assert executed is not None, done.stdout + done.stderr
    # The def line (the call), the if and the first return ran; the rest did not.
    assert executed.by_file["helpers.py"] == {1, 2, 3}
    assert not any(path.startswith("tests/") for path in executed.by_file)
    assert executed.ran_any("helpers.py", 1, 4) and not executed.ran_any("helpers.py", 7, 8)


def test_a_run_without_the_marker_reads_as_nothing() -> None:
    assert read_executed_lines("ERROR: file not found\n") is None
    assert read_executed_lines("NESTOR-TRACE:{not json\n") is None
