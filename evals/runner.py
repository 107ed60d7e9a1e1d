"""Running the suite: every selected task through every harness, each in a fresh workspace, checked.

Tasks run one at a time, because the model needs every core. The loop goes task by task and, for
each task, harness by harness, so a run stopped part-way still compares the harnesses on the same
tasks.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from evals.checks import CheckOutcome, check_outcome
from evals.harnesses.base import EvalContext, Harness, HarnessResult
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


def run_suite(
    tasks: Sequence[Task],
    harnesses: Sequence[Harness],
    context: EvalContext,
    *,
    repos_dir: Path = REPOS_DIR,
    keep: bool = False,
    on_row: Callable[[Row], None] | None = None,
    notify: Callable[[str], None] | None = None,
) -> list[Row]:
    """Prepare every harness, run every task through each, and close them all, whatever happens.

    Args:
        tasks: The tasks, in the order to run them.
        harnesses: The harnesses, in the order to run them on each task.
        context: What the harnesses share (model, work dir, threads).
        repos_dir: Where the tasks' repositories are.
        keep: Keep each workspace (its path is in the row) instead of deleting it.
        on_row: Called with each row as soon as it is known.
        notify: Receives one-line progress messages (preparing a harness, a harness failing to close).

    Returns:
        One row per task and harness, task by task.

    Raises:
        SetupError: A harness's ``prepare`` failed; no task has run then.

    """
    tell = notify or _ignore
    attempted: list[Harness] = []
    try:
        for harness in harnesses:
            tell(f"preparing {harness.name}...")
            attempted.append(harness)
            try:
                harness.prepare(context)
            except Exception as error:
                raise SetupError(f"{harness.name} could not be prepared: {_one_line(error)}") from error
        rows: list[Row] = []
        for task in tasks:
            for harness in harnesses:
                row = run_task(task, harness, repos_dir=repos_dir, keep=keep)
                rows.append(row)
                if on_row is not None:
                    on_row(row)
        return rows
    finally:
        for harness in attempted:
            try:
                harness.close()
            except Exception as error:
                tell(f"closing {harness.name} failed: {_one_line(error)}")


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
            failure = f"could not prepare the workspace: {_one_line(error)}"
            return _row(
                task, harness, HarnessResult(answer="", seconds=0.0), CheckOutcome(False, (failure,)), None
            )
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
        if not task.followups or getattr(harness, "keeps_sessions", False):
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


def _row(
    task: Task, harness: Harness, result: HarnessResult, outcome: CheckOutcome, kept: Path | None
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
