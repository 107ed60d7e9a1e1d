"""Fixtures of the eval tests: the small suite and an eval context with a stand-in model file."""

from __future__ import annotations

from pathlib import Path

import pytest

from evals.harnesses.base import EvalContext
from tests.evals.support import make_suite


@pytest.fixture
def suite(tmp_path: Path) -> tuple[Path, Path]:
    return make_suite(tmp_path)


@pytest.fixture
def context(tmp_path: Path) -> EvalContext:
    model = tmp_path / "models" / "unused.gguf"
    model.parent.mkdir()
    model.write_bytes(b"GGUF")
    return EvalContext(model_path=model, work_dir=tmp_path / "work", threads=1)
