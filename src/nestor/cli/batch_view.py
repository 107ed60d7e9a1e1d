"""What ``nestor batch`` shows: a live progress panel (rich), log lines with ``--quiet``, the summary."""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING, Any, TextIO

from nestor.core.usage import format_cost, format_tokens

if TYPE_CHECKING:
    from rich.console import RenderableType

    from nestor.app.batch.report import Summary
    from nestor.app.batch.runner import BatchState

_ANSWER_WIDTH = 60


def progress_lines(state: BatchState) -> list[str]:
    """The progress panel's lines: jobs done, failed, running; tokens and cost; the slowest running job."""
    counts: dict[str, int] = {}
    for record in state.finished:
        counts[record.get("status", "error")] = counts.get(record.get("status", "error"), 0) + 1
    ended = ", ".join(f"{count} {status}" for status, count in sorted(counts.items())) or "none yet"
    waiting = state.total - len(state.finished) - len(state.running)
    lines = [
        f"jobs: {len(state.finished)}/{state.total} ended ({ended}), "
        f"{len(state.running)} running, {waiting} waiting",
        f"spent: {format_tokens(state.live_tokens())} tokens, {format_cost(state.live_cost())}",
    ]
    if state.running:
        slowest = min(state.running.values(), key=lambda handle: handle.started)
        lines.append(f"slowest running: {slowest.job_id} ({time.monotonic() - slowest.started:.0f} s)")
    if state.budget_reached:
        lines.append("the batch's budget is spent: no new job starts")
    if state.stopping:
        lines.append("stopping: the running jobs are being cancelled")
    return lines


class LiveProgress:
    """The progress panel, redrawn by rich four times a second (on stderr)."""

    def __init__(self) -> None:
        from rich.console import Console
        from rich.live import Live

        self._state: BatchState | None = None
        self._live = Live(console=Console(stderr=True), get_renderable=self._render, refresh_per_second=4)

    def __enter__(self) -> LiveProgress:
        self._live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._live.__exit__(None, None, None)

    def update(self, state: BatchState) -> None:
        """Show ``state`` (called after each job starts or ends)."""
        self._state = state

    def _render(self) -> RenderableType:
        from rich.text import Text

        return Text("\n".join(progress_lines(self._state)) if self._state else "starting...")


class LogProgress:
    """``--quiet``: one line on stderr per job that ends."""

    def __init__(self, out: TextIO = sys.stderr) -> None:
        self.out = out
        self._shown = 0

    def __enter__(self) -> LogProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def update(self, state: BatchState) -> None:
        """Print the jobs that ended since the last call."""
        for record in state.finished[self._shown :]:
            print(job_line(record), file=self.out, flush=True)
        self._shown = len(state.finished)


def job_line(record: dict[str, Any]) -> str:
    """One job's result on one line."""
    detail = record.get("error") or _one_line(record.get("answer") or "")
    return (
        f"{record['id']}: {record.get('status')} ({record.get('stop_reason')}), "
        f"{len(record.get('files_changed') or [])} files changed, "
        f"{format_tokens(record.get('tokens') or 0)} tokens, "
        f"{record.get('duration_s', 0):.1f} s: {detail}"
    )


def print_summary(summary: Summary, out: TextIO | None = None) -> None:
    """The summary table: one row per job, then the totals."""
    from rich.console import Console
    from rich.table import Table

    table = Table(box=None, pad_edge=False)
    for column in ("id", "status", "stop reason", "files", "tokens", "cost", "time", "answer or error"):
        table.add_column(column, no_wrap=column != "answer or error")
    for record in summary.records:
        table.add_row(
            str(record["id"]),
            str(record.get("status")),
            str(record.get("stop_reason")),
            str(len(record.get("files_changed") or [])),
            format_tokens(int(record.get("tokens") or 0)),
            format_cost(record.get("cost_usd")),
            f"{float(record.get('duration_s') or 0):.1f} s",
            _one_line(record.get("error") or record.get("answer") or ""),
        )
    console = Console(file=out or sys.stdout)
    console.print(table)
    counts = ", ".join(f"{count} {status}" for status, count in summary.counts.items() if count)
    console.print(
        f"{len(summary.records)} jobs: {counts or 'none'}; {format_tokens(summary.tokens)} tokens, "
        f"{format_cost(summary.cost_usd)}, {summary.duration_s:.1f} s of job time",
        highlight=False,
    )


def _one_line(text: str) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= _ANSWER_WIDTH else flat[: _ANSWER_WIDTH - 1] + "…"
