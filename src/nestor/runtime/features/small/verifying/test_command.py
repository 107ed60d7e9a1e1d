"""The command that runs a project's tests here and now, for any ecosystem the harness knows.

The tour says what the project documents (:func:`..gathering.project.find_test_command`: a
Makefile's ``test`` target first); to verify a change the harness needs the direct, quick one:
``package.json``'s ``test`` script through npm, ``cargo test`` offline, ``go test ./...``, pytest
for Python tests (run by the ``python`` on PATH, the user's environment), else ``tox`` or
``make test``. A ``make test`` may install a toolchain first, so it comes last.
"""

from __future__ import annotations

import re

from nestor.runtime.features.small.gathering.project import npm_test_script, python_tests, user_python
from nestor.runtime.features.small.gathering.reader import ProjectReader

PYTEST_OPTIONS = "-q -x --tb=short -p no:cacheprovider -p no:warnings"
"""Quiet, stop at the first failure, short tracebacks, no cache written into the project, and
no warnings summary: dozens of deprecation warnings would push the failure out of the output a
small model is shown."""


def runnable_test_command(reader: ProjectReader, *, every_failure: bool = False) -> str | None:
    """The command that runs the project's tests (see the module docstring); None when none is known.

    pytest stops at the first failure (a change's check needs no more), unless ``every_failure``.
    """
    if npm_test_script(reader) is not None:
        return "npm test --silent"
    if reader.read_text("Cargo.toml"):
        return "cargo test --offline --quiet"
    if reader.read_text("go.mod"):
        return "go test ./..."
    if python_tests(reader) is not None:
        options = PYTEST_OPTIONS.replace(" -x", "") if every_failure else PYTEST_OPTIONS
        return f"{user_python()} -m pytest {options}"
    if reader.read_text("tox.ini"):
        return "tox"
    makefile = reader.read_text("Makefile") or ""
    if re.search(r"^test\s*:", makefile, re.MULTILINE):
        return "make test"
    return None
