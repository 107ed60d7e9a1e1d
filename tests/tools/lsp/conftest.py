"""Fixtures of the language-server tests: a project, a PATH on which pylsp is found, the manager."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from nestor.config.sections import LspServerConfig
from nestor.tools.base import ToolContext
from nestor.tools.lsp.manager import LspManager

HELPERS = "def helper(x):\n    return x + 1\n\n\nprint(helper(2))\n"
USES = "from helpers import helper\n\nvalue = helper(3)\n"
# Generous: the machine running the tests may be busy; a quiet one answers in well under a second.
SLOW_MACHINE = LspServerConfig(diagnostics_timeout_s=20, request_timeout_s=30)


def pylsp_bin(folder: Path) -> Path:
    """A folder holding only ``pylsp`` (the dev extra's), to put on PATH: detection finds it there."""
    folder.mkdir(parents=True, exist_ok=True)
    link = folder / "pylsp"
    if not link.exists():
        link.symlink_to(Path(sys.executable).parent / "pylsp")
    return folder


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A small Python project: ``helpers.py`` defines ``helper``, ``uses.py`` and itself use it."""
    root = tmp_path / "project"
    root.mkdir()
    (root / "pyproject.toml").write_text('[project]\nname = "demo"\n', encoding="utf-8")
    (root / "helpers.py").write_text(HELPERS, encoding="utf-8")
    (root / "uses.py").write_text(USES, encoding="utf-8")
    return root


@pytest.fixture
def ctx(project: Path) -> ToolContext:
    """A tool context on the project."""
    return ToolContext(project_root=project)


@pytest.fixture
async def lsp(project: Path, tmp_path: Path) -> AsyncIterator[LspManager]:
    """The project's language servers, with pylsp detected on PATH; shut down after the test."""
    manager = LspManager(
        {"pylsp": SLOW_MACHINE},
        root=project,
        trusted=True,
        env={"PATH": str(pylsp_bin(tmp_path / "bin"))},
        log_dir=tmp_path / "logs",
    )
    yield manager
    await manager.close()
