"""Fixtures the CLI tests share."""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator

import pytest


@pytest.fixture
def cleanup_pids() -> Iterator[list[int]]:
    """Process groups a test started through nestor, killed at the end whatever happened."""
    groups: list[int] = []
    yield groups
    for group in groups:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(group, signal.SIGKILL)
