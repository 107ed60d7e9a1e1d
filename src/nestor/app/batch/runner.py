"""A batch's jobs on workers: as many at once as asked, the batch's budget, stopping, each result kept.

The driver takes the jobs in the file's order; each worker runs one job at a time through an
:class:`Executor` (this process's event loop, or Ray). A job's result is appended to the results
file the moment it ends, with its session tree's export written beside it and imported into the
user's session store when it ran elsewhere. Once the batch's cost reaches ``--max-cost-usd`` no
job starts; running jobs stop before their next model request (the kernel's budget stop, one
last turn to report). :meth:`Batch.stop` (Ctrl-C) cancels the running jobs, recorded as cancelled.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import quote

from nestor.app.batch.checkout import Packer
from nestor.app.batch.job import JobHandle, JobOptions, JobRun, run_job, unstarted_record
from nestor.app.batch.jobs import Job
from nestor.app.batch.results import ResultsFile
from nestor.core.errors import NestorError

if TYPE_CHECKING:
    from nestor.runtime.kernel.hooks import Hook


class Executor(Protocol):
    """Where jobs run: this process (:class:`LocalExecutor`) or a Ray cluster."""

    async def run(self, job: Job, handle: JobHandle, hooks: Callable[[], Sequence[Hook]]) -> JobRun:
        """Run ``job`` to its result (``record["attempts"]`` counts the tries, 1 when absent)."""
        ...


class LocalExecutor:
    """Jobs in this process's event loop, writing the user's session store directly.

    Args:
        options: What every job shares.
        packer: Packs each local repository once (its bundles in the batch's temp dir).

    """

    def __init__(self, options: JobOptions, packer: Packer) -> None:
        self.options = options
        self.packer = packer

    async def run(self, job: Job, handle: JobHandle, hooks: Callable[[], Sequence[Hook]]) -> JobRun:
        """Pack (once) and run ``job`` here; a repository that cannot be packed is the job's error."""
        try:
            source = await self.packer.source(job)
        except NestorError as error:
            return JobRun(unstarted_record(job, error))
        return await run_job(job, source, self.options, handle, hooks)


@dataclass
class BatchState:
    """What a progress display reads: the running jobs and the totals of the finished ones."""

    total: int
    running: dict[str, JobHandle] = field(default_factory=dict)
    finished: list[dict[str, Any]] = field(default_factory=list)
    spent_usd: float = 0.0
    tokens: int = 0
    budget_reached: bool = False
    stopping: bool = False

    def live_cost(self) -> float:
        """The finished jobs' cost and what the running ones spent so far."""
        return self.spent_usd + sum(handle.usage.cost_usd or 0.0 for handle in self.running.values())

    def live_tokens(self) -> int:
        """The finished jobs' tokens and the running ones' so far."""
        return self.tokens + sum(handle.usage.total_tokens for handle in self.running.values())


class Batch:
    """A batch run: its jobs, where they run, where their results go.

    Args:
        jobs: The jobs to run (those already recorded left out by the caller).
        results: The results file.
        executor: Where the jobs run.
        workers: How many jobs run at once.
        max_cost_usd: No job starts once the batch has spent this (None: no cap).
        sessions_dir: Where each job's session export is written.
        import_into: The session database the exports are imported into, for jobs that ran
            elsewhere (Ray); None when the jobs wrote it themselves.
        on_change: Called after a job starts or ends (a progress display's redraw).

    """

    def __init__(
        self,
        jobs: list[Job],
        results: ResultsFile,
        executor: Executor,
        *,
        workers: int,
        max_cost_usd: float | None,
        sessions_dir: Path,
        import_into: Path | None = None,
        on_change: Callable[[BatchState], None] = lambda _state: None,
    ) -> None:
        self.jobs = jobs
        self.results = results
        self.executor = executor
        self.workers = max(1, workers)
        self.max_cost_usd = max_cost_usd
        self.sessions_dir = sessions_dir
        self.import_into = import_into
        self.on_change = on_change
        self.state = BatchState(total=len(jobs))
        self._next = 0

    def stop(self) -> None:
        """Start no more jobs and cancel the running ones (each recorded as cancelled)."""
        self.state.stopping = True
        for handle in list(self.state.running.values()):
            handle.stop()

    async def run(self) -> BatchState:
        """Run the jobs to the end (or to the budget, or to :meth:`stop`); return the final state."""
        await asyncio.gather(*(self._worker() for _ in range(min(self.workers, len(self.jobs)))))
        return self.state

    def _spent(self) -> float:
        return self.state.live_cost()

    def _hooks(self) -> Sequence[Hook]:
        if self.max_cost_usd is None:
            return ()
        from nestor.runtime.tree.tree_usage import TreeCostHook

        return (TreeCostHook(self.max_cost_usd, self._spent),)

    def _over_budget(self) -> bool:
        if self.max_cost_usd is not None and self._spent() >= self.max_cost_usd:
            self.state.budget_reached = True
        return self.state.budget_reached

    async def _worker(self) -> None:
        while self._next < len(self.jobs) and not self.state.stopping and not self._over_budget():
            job = self.jobs[self._next]
            self._next += 1
            handle = JobHandle(job.id)
            self.state.running[job.id] = handle
            self.on_change(self.state)
            try:
                run = await self.executor.run(job, handle, self._hooks)
                # Recorded before it leaves the running jobs, so that its cost is never out of the sum.
                await asyncio.to_thread(self._record, run)
            finally:
                del self.state.running[job.id]
            self.on_change(self.state)

    def _record(self, run: JobRun) -> None:
        record = dict(run.record)
        record.setdefault("attempts", 1)
        if run.export is not None:
            record["session_export"] = str(self._write_export(record, run.export))
        self.results.append(record)
        self.state.finished.append(record)
        self.state.spent_usd += record.get("cost_usd") or 0.0
        self.state.tokens += record.get("tokens") or 0

    def _write_export(self, record: dict[str, Any], text: str) -> Path:
        path = self.sessions_dir / f"{quote(record['id'], safe='@+-._')}.json"  # ids differ, so do the names
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n", encoding="utf-8")
        if self.import_into is not None:
            self._import(self.import_into, record, path, text)
        return path

    def _import(self, database_path: Path, record: dict[str, Any], path: Path, text: str) -> None:
        from nestor.app.session_files import import_json
        from nestor.store import open_database

        try:
            database = open_database(database_path)
            try:
                import_json(database, text, str(path))
            finally:
                database.close()
        except NestorError as error:
            record["import_error"] = error.message


def sessions_dir_for(results: Path) -> Path:
    """Where a results file's session exports go: ``RESULTS.sessions/`` beside it."""
    return results.with_name(results.name + ".sessions")
