"""Fixtures for runtime tests."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx2
import pytest

from tests.runtime.support import Harness


@pytest.fixture
def harness(tmp_path: Path) -> Iterator[Harness]:
    h = Harness(tmp_path)
    yield h
    h.database.close()


@pytest.fixture
async def client() -> AsyncIterator[httpx2.AsyncClient]:
    """One HTTP client for the real providers of a test, closed after it."""
    async with httpx2.AsyncClient() as http:
        yield http
