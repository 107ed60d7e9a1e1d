"""Running the suite: every selected task through every harness, checked.

nestor (a :class:`~evals.harnesses.base.BatchHarness`) runs the tasks first, all as one
``nestor batch`` (see :mod:`evals.batch`): its progress display, and a resumed run skips the tasks
already graded. The peers run after it, one task at a time in a fresh workspace each, because the
model needs every core; their loop goes task by task and, for each task, harness by harness, so a
run stopped part-way still compares the peers on the same tasks.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evals.batch import BatchFiles, Grades, check_result, harness_result, latest_results, write_jobs
from evals.checks import CheckOutcome, check_outcome
from evals.harnesses.base import BatchHarness, EvalContext, Harness, HarnessResult
from evals.harnesses.nestor import NESTOR_HOME_NAME
from evals.report import Row
from evals.tasks import REPOS_DIR, Task, TaskFileError
from evals.workspace import prepare_workspace
from nestor.config.paths import resolve_data_dir
from nestor.core.errors import NestorError
from nestor.providers.local.weights import bundled_model_path, ensure_bundled_model

# Errors whose message says it all; any other is named too ("KeyError: 'x'").
_SELF_EXPLAINING_ERRORS = (RuntimeError, OSError, NestorError, TaskFileError)


class SetupError(RuntimeError):
    """A harness could not be prepared; the message is one line naming the harness."""


def select_tasks(
    tasks: Sequence[Task], substrings: Sequence[str] = (), kinds: Sequence[str] = ()
) -> list[Task]:
    """The tasks whose id contains any of ``substrings`` and whose kind is any of ``kinds`` (empty: all)."""
    return [
        task
        for task in tasks
        if (not substrings or any(text in task.id for text in substrings))
        and (not kinds or task.kind in kinds)
    ]


def per_kind(tasks: Sequence[Task], count: int) -> list[Task]:
    """``count`` tasks of each kind, spread over the repositories, in the suite's order.

    Kinds are taken in the order they first appear; the i-th kind starts with the i-th repository
    (in the order repositories first appear) and takes them in turn, so a small sample still covers
    every repository. A side-by-side run with slow peers uses it: the same tasks for everyone,
    chosen by rule, never by result.
    """
    repos = list(dict.fromkeys(task.repo for task in tasks))
    kinds = list(dict.fromkeys(task.kind for task in tasks))
    chosen: set[str] = set()
    for index, kind in enumerate(kinds):
        queues = {repo: [task for task in tasks if task.kind == kind and task.repo == repo] for repo in repos}
        order = repos[index % len(repos) :] + repos[: index % len(repos)]
        taken = 0
        while taken < count and any(queues.values()):
            for repo in order:
                if queues[repo] and taken < count:
                    chosen.add(queues[repo].pop(0).id)
                    taken += 1
    return [task for task in tasks if task.id in chosen]


def with_time_limit(tasks: Sequence[Task], seconds: float) -> list[Task]:
    """``tasks`` with each one's time limit at most ``seconds`` (every harness reads it from the task)."""
    return [dataclasses.replace(task, timeout_s=min(task.timeout_s, seconds)) for task in tasks]


def resolve_model(work_dir: Path, notify: Callable[[str], None]) -> Path:
    """The bundled model's file, joined from its installed parts once, into the nestor harness's data dir.

    A file already joined there, or else in the user's own nestor data dir, is used as it is.

    Raises:
        nestor.core.errors.ProviderError: The model's packages are missing or damaged, or the
            directory cannot be written.

    """
    eval_models = work_dir / NESTOR_HOME_NAME / "models"
    user_models = resolve_data_dir(os.environ) / "models"
    for models_dir in (eval_models, user_models):
        if bundled_model_path(models_dir).is_file():
            return ensure_bundled_model(models_dir, on_progress=notify)
    return ensure_bundled_model(eval_models, on_progress=notify)


@dataclass(frozen=True, slots=True)
class BatchOptions:
    """How a :class:`~evals.harnesses.base.BatchHarness` runs the tasks.

    Attributes:
        files: Where its batch's files are (None: a temp dir, so nothing is resumed).
        workers: Jobs at once (``nestor batch --workers``).
        redo: Run again the tasks the results already hold (``--redo``).

    """

    files: BatchFiles | None = None
    workers: int = 1
    redo: bool = False


def run_suite(
    tasks: Sequence[Task],
    harnesses: Sequence[Harness | BatchHarness],
    context: EvalContext,
    *,
    repos_dir: Path = REPOS_DIR,
    keep: bool = False,
    batch: BatchOptions | None = None,
    on_row: Callable[[Row], None] | None = None,
    notify: Callable[[str], None] | None = None,
    done: Sequence[Row] = (),
) -> list[Row]:
    """Prepare every harness, run every task through each, and close them all, whatever happens.

    Args:
        tasks: The tasks, in the order to run them.
        harnesses: The harnesses; the batch harnesses run first, then the others task by task.
        context: What the harnesses share (model, work dir, threads).
        repos_dir: Where the tasks' repositories are.
        keep: Keep each workspace (its path is in the row) instead of deleting it.
        batch: How the batch harnesses run (None: the defaults).
        on_row: Called with each row as soon as it is known.
        notify: Receives one-line progress messages (preparing a harness, a harness failing to close).
        done: Peer rows an earlier run of the same results measured: reported again, not run again.

    Returns:
        One row per task and harness: the batch harnesses' first, then task by task.

    Raises:
        SetupError: A harness's ``prepare`` failed (no task has run then), or a batch could not run.

    """
    tell = notify or _ignore
    attempted: list[Harness | BatchHarness] = []
    try:
        for harness in harnesses:
            tell(f"preparing {harness.name}...")
            attempted.append(harness)
            try:
                harness.prepare(context)
            except Exception as error:
                raise SetupError(f"{harness.name} could not be prepared: {_one_line(error)}") from error
        rows: list[Row] = []
        report = on_row or _ignore_row
        for harness in harnesses:
            if isinstance(harness, BatchHarness):
                rows += run_through_batch(
                    tasks, harness, batch or BatchOptions(), repos_dir=repos_dir, keep=keep, on_row=report
                )
        peers = [harness for harness in harnesses if not isinstance(harness, BatchHarness)]
        measured = {(row.task_id, row.harness): row for row in done}
        for task in tasks:
            for harness in peers:
                row = measured.get((task.id, harness.name)) or run_task(
                    task, harness, repos_dir=repos_dir, keep=keep
                )
                rows.append(row)
                report(row)
        return rows
    finally:
        for harness in attempted:
            try:
                harness.close()
            except Exception as error:
                tell(f"closing {harness.name} failed: {_one_line(error)}")


def run_through_batch(
    tasks: Sequence[Task],
    harness: BatchHarness,
    options: BatchOptions,
    *,
    repos_dir: Path = REPOS_DIR,
    keep: bool = False,
    on_row: Callable[[Row], None] = lambda _row: None,
) -> list[Row]:
    """Run ``tasks`` as one batch through ``harness``, then grade each result, in the tasks' order.

    The results of an earlier run with the same files are kept: their tasks are skipped (unless
    ``options.redo``), and their grades read back. Interrupted, the jobs that ended are graded all
    the same before the interrupt goes on.

    Raises:
        SetupError: The batch could not run (its exit code says neither done nor interrupted).
        KeyboardInterrupt: The run was interrupted (after grading what ended).

    """
    with tempfile.TemporaryDirectory(prefix="nestor-eval-batch-") as temp:
        files = options.files or BatchFiles(Path(temp) / "batch")
        unprepared = write_jobs(tasks, files.jobs, Path(temp) / "repos", repos_dir)
        interrupted = False
        if len(unprepared) < len(tasks):
            try:
                code = harness.run_batch(
                    files.jobs, files.results, workers=options.workers, redo=options.redo
                )
            except KeyboardInterrupt:
                code, interrupted = _INTERRUPTED, True
            if code not in _BATCH_ENDED:
                raise SetupError(f"{harness.name}: nestor batch exited with {code}; its message is above")
            interrupted = interrupted or code == _INTERRUPTED
        results = latest_results(files.results)
        grades = Grades(files.grades)
        rows: list[Row] = []
        for task in tasks:
            if task.id in unprepared:
                row = _unprepared_row(task, harness, unprepared[task.id])
            elif task.id in results:
                known = grades.get(results[task.id])
                row = known or _graded(task, harness, results[task.id], repos_dir, keep)
                if known is None:
                    grades.add(results[task.id], row)
            else:
                continue  # not run: the batch was interrupted first
            rows.append(row)
            on_row(row)
    if interrupted:
        raise KeyboardInterrupt
    return rows


def _graded(task: Task, harness: BatchHarness, record: dict[str, Any], repos_dir: Path, keep: bool) -> Row:
    """The row of a job's result, graded on a fresh workspace (kept with ``keep``)."""
    parent = Path(tempfile.mkdtemp(prefix=f"nestor-eval-{harness.name}-{task.id}-"))
    result = harness_result(record)
    try:
        try:
            outcome = check_result(task, record, parent, repos_dir)
        except Exception as error:
            outcome = CheckOutcome(solved=False, failures=(f"the check itself failed: {_one_line(error)}",))
        return _row(task, harness, result, outcome, parent / task.repo if keep else None)
    finally:
        if not keep:
            shutil.rmtree(parent, ignore_errors=True)


_INTERRUPTED = 130
_BATCH_ENDED = frozenset({0, 1, _INTERRUPTED})
"""``nestor batch``'s exit codes when it ran: every job done, some not, interrupted."""


def run_task(task: Task, harness: Harness, *, repos_dir: Path = REPOS_DIR, keep: bool = False) -> Row:
    """Run ``task`` through ``harness`` in a fresh workspace, check the outcome, and return its row.

    Nothing the harness or the check raises ends the run: it becomes the row's failure, so one
    broken task costs one row, not the hours of the rows after it.
    """
    parent = Path(tempfile.mkdtemp(prefix=f"nestor-eval-{harness.name}-{task.id}-"))
    try:
        try:
            workspace = prepare_workspace(task, parent, repos_dir)
        except (TaskFileError, OSError, subprocess.CalledProcessError) as error:
            return _unprepared_row(task, harness, _one_line(error))
        result = _run_harness(task, harness, workspace)
        try:
            outcome = check_outcome(task, workspace, result.answer)
        except Exception as error:
            outcome = CheckOutcome(solved=False, failures=(f"the check itself failed: {_one_line(error)}",))
        return _row(task, harness, result, outcome, workspace if keep else None)
    finally:
        if not keep:
            shutil.rmtree(parent, ignore_errors=True)


def _run_harness(task: Task, harness: Harness, workspace: Path) -> HarnessResult:
    started = time.monotonic()
    try:
        if not task.followups:
            return harness.run(task, workspace)
        return _run_in_turns(task, harness, workspace)
    except Exception as error:
        return HarnessResult(
            answer="", seconds=time.monotonic() - started, error=f"the harness raised {_one_line(error)}"
        )


def _run_in_turns(task: Task, harness: Harness, workspace: Path) -> HarnessResult:
    """A task with follow-ups through a harness that keeps no session between runs.

    Each follow-up is a run of its own whose prompt carries the earlier questions and answers:
    what the harness's own session would have shown its model. Seconds and tokens add up; the
    last answer counts, and the first error ends the task.
    """
    earlier: list[str] = []
    results: list[HarnessResult] = []
    for prompt in task.prompts:
        asked = "\n\n".join([*earlier, f"Now: {prompt}"]) if earlier else prompt
        result = harness.run(dataclasses.replace(task, prompt=asked, followups=()), workspace)
        results.append(result)
        if result.error is not None:
            break
        earlier.append(f"Earlier I asked: {prompt}\nYou answered: {result.answer}")
    return _summed(results)


def _summed(results: list[HarnessResult]) -> HarnessResult:
    def total(values: list[int | None]) -> int | None:
        return None if any(value is None for value in values) else sum(v for v in values if v is not None)

    last = results[-1]
    return HarnessResult(
        answer=last.answer,
        seconds=sum(result.seconds for result in results),
        input_tokens=total([result.input_tokens for result in results]),
        output_tokens=total([result.output_tokens for result in results]),
        error=last.error,
        log=last.log,
    )


def _unprepared_row(task: Task, harness: Harness | BatchHarness, why: str) -> Row:
    failure = f"could not prepare the workspace: {why}"
    return _row(task, harness, HarnessResult(answer="", seconds=0.0), CheckOutcome(False, (failure,)), None)


def _row(
    task: Task,
    harness: Harness | BatchHarness,
    result: HarnessResult,
    outcome: CheckOutcome,
    kept: Path | None,
) -> Row:
    failures = ((f"harness error: {result.error}",) if result.error else ()) + outcome.failures
    return Row(
        task_id=task.id,
        kind=task.kind,
        harness=harness.name,
        solved=outcome.solved and result.error is None,
        seconds=round(result.seconds, 2),
        input_tokens=result.input_tokens,
        output_tokens=result.output_tokens,
        failures=failures,
        answer=result.answer,
        log=str(result.log) if result.log is not None else None,
        workspace=str(kept) if kept is not None else None,
    )


def _one_line(error: BaseException) -> str:
    text = " ".join(str(error).split())
    if text and isinstance(error, _SELF_EXPLAINING_ERRORS):
        return text
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def _ignore(message: str) -> None:
    del message


def _ignore_row(row: Row) -> None:
    del row
