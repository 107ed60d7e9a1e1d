"""What ``nestor batch`` shows while it runs and at its end."""

from __future__ import annotations

import io
import time

from nestor.app.batch.job import JobHandle
from nestor.app.batch.report import summarize
from nestor.app.batch.runner import BatchState
from nestor.cli.batch_view import LogProgress, print_summary, progress_lines
from nestor.core.usage import Usage


def test_the_panel_counts_jobs_spending_and_names_the_slowest_running_one() -> None:
    slow = JobHandle("slow", started=time.monotonic() - 90, usage=Usage(input_tokens=1000, cost_usd=0.5))
    quick = JobHandle("quick", started=time.monotonic() - 2)
    finished = [
        {"id": "a", "status": "done", "tokens": 2000, "cost_usd": 1.0},
        {"id": "b", "status": "failed"},
    ]
    state = BatchState(
        total=5, running={"slow": slow, "quick": quick}, finished=finished, spent_usd=1.0, tokens=2000
    )
    state.budget_reached = True

    lines = progress_lines(state)

    assert lines[0] == "jobs: 2/5 ended (1 done, 1 failed), 2 running, 1 waiting"
    assert lines[1] == "spent: 3.0k tokens, $1.50"
    assert lines[2].startswith("slow running: slow (9") is False and lines[2].startswith(
        "slowest running: slow ("
    )
    assert lines[3] == "the batch's budget is spent: no new job starts"


def test_quiet_prints_each_ended_job_once_and_the_summary_counts_the_last_record_of_each() -> None:
    out = io.StringIO()
    log = LogProgress(out)
    record = {
        "id": "a",
        "status": "done",
        "stop_reason": "completed",
        "files_changed": ["x"],
        "tokens": 10,
        "duration_s": 1.0,
        "answer": "ok",
    }
    state = BatchState(total=1, finished=[record])
    log.update(state)
    log.update(state)
    assert out.getvalue() == "a: done (completed), 1 files changed, 10 tokens, 1.0 s: ok\n"

    summary = summarize([{"id": "a", "status": "failed", "tokens": 5}, record])
    table = io.StringIO()
    print_summary(summary, table)
    assert summary.counts["done"] == 1 and summary.counts["failed"] == 0 and summary.tokens == 10
    assert "1 jobs: 1 done; 10 tokens" in table.getvalue()
