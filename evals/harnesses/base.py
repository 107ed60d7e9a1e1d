"""What the runner needs of a harness: prepare once, run tasks, close.

A peer runs one task in a workspace (:class:`Harness`); nestor runs a jobs file of them all
through ``nestor batch`` (:class:`BatchHarness`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

from evals.tasks import Task


@dataclass(frozen=True, slots=True)
class EvalContext:
    """What every harness of one eval run shares.

    Attributes:
        model_path: The GGUF file every harness runs (the same weights for all).
        work_dir: A directory for this run's own files (venvs, logs, homes); kept between runs
            so a peer's venv is built once.
        threads: CPU threads the model may use.
        context_window: Tokens of context every harness's model gets.

    """

    model_path: Path
    work_dir: Path
    threads: int
    context_window: int = 16384


@dataclass(frozen=True, slots=True)
class HarnessResult:
    """What one harness produced for one task.

    Attributes:
        answer: The final answer text the harness gave (its last message).
        seconds: Wall time of the run.
        input_tokens: Prompt tokens the model evaluated over the run; None when unknown.
        output_tokens: Tokens the model generated over the run; None when unknown.
        error: Why the run failed (a time-out, a crash), or None.
        log: A path to the run's full output, for reading a failure afterwards.

    """

    answer: str
    seconds: float
    input_tokens: int | None = None
    output_tokens: int | None = None
    error: str | None = None
    log: Path | None = None


class Harness(Protocol):
    """A coding agent the eval can drive headless."""

    name: str

    def prepare(self, context: EvalContext) -> None:
        """Set everything up once (a venv, a model server); raise with a one-line cause if it cannot."""
        ...

    def run(self, task: Task, workspace: Path) -> HarnessResult:
        """Run ``task`` in ``workspace`` (a git repository the harness may change) to completion."""
        ...

    def close(self) -> None:
        """Stop what ``prepare`` started."""
        ...


@runtime_checkable
class BatchHarness(Protocol):
    """A harness that runs every task at once, as a ``nestor batch`` jobs file (see :mod:`evals.batch`)."""

    name: str

    def prepare(self, context: EvalContext) -> None:
        """Set everything up once; raise with a one-line cause if it cannot."""
        ...

    def run_batch(self, jobs: Path, results: Path, *, workers: int, redo: bool = False) -> int:
        """Run the jobs of ``jobs``, appending their results to ``results``; return the batch's exit code.

        ``results`` already holding a job skips it (the batch's resume) unless ``redo``.
        """
        ...

    def close(self) -> None:
        """Stop what ``prepare`` started."""
        ...
