"""The facts of a tour, read from the project's files."""

from pathlib import Path

from nestor.runtime.features.small.acting.tour import tour_facts
from nestor.runtime.features.small.gathering.reader import ProjectReader


def _project(root: Path) -> Path:
    (root / "src" / "signet").mkdir(parents=True)
    (root / "src" / "signet" / "__init__.py").write_text("")
    (root / "src" / "signet" / "signer.py").write_text('"""Signing values. More text."""\n\nX = 1\n')
    (root / "src" / "signet" / "encoding.py").write_text("def b64(x):\n    return x\n")
    (root / "tests" / "unit").mkdir(parents=True)
    (root / "tests" / "unit" / "test_signer.py").write_text("def test_sign():\n    pass\n")
    (root / "docs").mkdir()
    (root / "docs" / "index.rst").write_text("Signet\n")
    (root / "README.md").write_text("# signet\n")
    (root / "pyproject.toml").write_text('[project]\nname = "signet"\n\n[tool.pytest.ini_options]\n')
    return root


def test_the_layout_says_what_each_directory_holds_and_how_to_run_the_tests(tmp_path: Path) -> None:
    facts = tour_facts(ProjectReader(_project(tmp_path)))
    layout, tests = facts.split("**Tests**")
    lines = layout.splitlines()
    # Code first, with its modules and their docstrings' first sentence; then tests; then docs.
    assert lines[1].startswith("- `src/signet/`: the `signet` package's code (`signer.py`, `encoding.py`)")
    assert "`signer.py`: Signing values;" not in lines[1] and lines[1].endswith("`signer.py`: Signing values")
    assert lines[2] == "- `tests/unit/`: the tests (`test_signer.py`)"
    assert lines[3] == "- `docs/`: documentation (`index.rst`)"
    assert lines[4] == "- at the top: `README.md`, `pyproject.toml`"
    assert tests.strip() == (
        "The tests are in `tests/`. "
        "Run them with `python -m pytest` (configured in `pyproject.toml`, line 4)."
    )


def test_a_project_that_does_not_say_how_to_test_it_is_told_so(tmp_path: Path) -> None:
    (tmp_path / "main.go").write_text("package main\n")
    assert "No file of the project says how to run its tests." in tour_facts(ProjectReader(tmp_path))
