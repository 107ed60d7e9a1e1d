"""The results file: whole lines appended, a torn last line skipped, resume's choice of jobs."""

from __future__ import annotations

from pathlib import Path

from nestor.app.batch.results import ResultsFile, read_records, skipped_ids


def test_a_torn_last_line_is_skipped_and_the_next_append_starts_a_line_of_its_own(tmp_path: Path) -> None:
    results = ResultsFile(tmp_path / "deep" / "results.jsonl")
    results.append({"id": "a", "status": "done"})
    with results.path.open("ab") as handle:  # a machine that lost power mid-write
        handle.write(b'{"id": "b", "sta')

    assert read_records(results.path) == [{"id": "a", "status": "done"}]
    results.append({"id": "c", "status": "done"})
    assert [record["id"] for record in read_records(results.path)] == ["a", "c"]


def test_resume_runs_cancelled_jobs_again_and_failed_ones_only_when_asked() -> None:
    records = [
        {"id": "done", "status": "done"},
        {"id": "failed", "status": "failed"},
        {"id": "error", "status": "error"},
        {"id": "stopped", "status": "stopped"},
        {"id": "cancelled", "status": "cancelled"},
        {"id": "later", "status": "failed"},
        {"id": "later", "status": "done"},
    ]

    assert skipped_ids(records, redo=False, retry_failed=False) == {
        "done",
        "failed",
        "error",
        "stopped",
        "later",
    }
    assert skipped_ids(records, redo=False, retry_failed=True) == {"done", "stopped", "later"}
    assert skipped_ids(records, redo=True, retry_failed=False) == set()
