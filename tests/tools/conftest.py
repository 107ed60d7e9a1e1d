"""Fixtures shared by the file tools' tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from nestor.tools.base import ToolContext


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    """A tool context whose project is an empty directory (``tmp_path`` itself stays outside it)."""
    project = tmp_path / "project"
    project.mkdir()
    return ToolContext(project_root=project)
