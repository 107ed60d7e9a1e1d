from __future__ import annotations

import time

from nestor.core.ids import new_id, new_session_id


def test_ids_are_unique_and_sort_by_creation_time() -> None:
    first = new_session_id()
    time.sleep(0.002)
    later = [new_session_id() for _ in range(100)]
    assert first.startswith("ses_")
    assert len(set(later)) == 100
    assert all(first < other for other in later)


def test_prefix() -> None:
    assert new_id("task").startswith("task_")
