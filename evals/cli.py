"""``python -m evals``: pick tasks and harnesses, run them, print rows and totals, write the JSON.

nestor's tasks run as one ``nestor batch`` whose files are kept beside the JSON
(:meth:`~evals.batch.BatchFiles.beside`): the same ``--json`` again resumes, grading only the tasks
that ran since, and keeping the peers' rows that JSON already has (``--redo`` runs everything again).

Exit codes: 0 the run ended (solved or not), 1 the model or a harness could not be set up,
2 a usage mistake (an unknown harness or kind, no task selected, a broken task file),
130 interrupted (the rows so far are still printed and written).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import NoReturn

from evals.batch import BatchFiles
from evals.harnesses import HARNESSES, HarnessUnavailableError, create_harness
from evals.harnesses.base import BatchHarness, EvalContext, Harness
from evals.report import (
    Columns,
    Row,
    describe_run,
    earlier_rows,
    report_document,
    summarize,
    totals_markdown,
    totals_table,
    write_report,
)
from evals.runner import (
    BatchOptions,
    SetupError,
    per_kind,
    resolve_model,
    run_suite,
    select_tasks,
    with_time_limit,
)
from evals.tasks import EVALS_DIR, KINDS, REPOS_DIR, TASKS_DIR, Task, TaskFileError, load_tasks
from nestor.core.errors import NestorError

EXIT_OK = 0
EXIT_SETUP_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130

DEFAULT_WORK_DIR = EVALS_DIR / ".work"
DEFAULT_RESULTS_DIR = EVALS_DIR / "results"
_PROGRAM = "python -m evals"


class UsageError(Exception):
    """A mistake in the command line or the task selection."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def _interrupt(_signum: int, _frame: object) -> None:
    raise KeyboardInterrupt


def stop_on_termination() -> None:
    """Make SIGTERM and SIGHUP stop the run as Ctrl-C does.

    A terminated eval (``timeout``, a closed terminal) then kills the harness's process group and
    writes what was measured, instead of leaving the harness running as an orphan.
    """
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGHUP, _interrupt)


def main(
    argv: Sequence[str] | None = None, *, tasks_dir: Path = TASKS_DIR, repos_dir: Path = REPOS_DIR
) -> int:
    """Run the eval as the command line asks; return the exit code.

    Args:
        argv: The arguments (``sys.argv[1:]`` when None).
        tasks_dir: Where the task files are.
        repos_dir: Where the tasks' repositories are.

    """
    stop_on_termination()
    try:
        options = _parser().parse_args(argv)
        tasks = _selected_tasks(options, tasks_dir, repos_dir)
        if options.list:
            _print_tasks(tasks)
            return EXIT_OK
        names = _harness_names(options.harness)
    except UsageError as error:
        print(f"{_PROGRAM}: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    try:
        work_dir: Path = options.work_dir.resolve()
        work_dir.mkdir(parents=True, exist_ok=True)
        model_path = resolve_model(work_dir, _notify)
        harnesses = [create_harness(name) for name in names]
    except (NestorError, HarnessUnavailableError, OSError) as error:
        hint = f" ({error.hint})" if isinstance(error, NestorError) and error.hint else ""
        print(f"{_PROGRAM}: error: {error}{hint}", file=sys.stderr)
        return EXIT_SETUP_FAILED
    except KeyboardInterrupt:
        print(f"\n{_PROGRAM}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    context = EvalContext(model_path=model_path, work_dir=work_dir, threads=options.threads)
    json_path: Path = options.json or DEFAULT_RESULTS_DIR / f"{datetime.now(UTC):%Y%m%dT%H%M%SZ}.json"
    batch = BatchOptions(BatchFiles.beside(json_path), workers=options.workers, redo=options.redo)
    return run_and_report(
        tasks,
        harnesses,
        context,
        json_path=json_path,
        repos_dir=repos_dir,
        keep=options.keep,
        batch=batch,
        redo=options.redo,
    )


def run_and_report(
    tasks: Sequence[Task],
    harnesses: Sequence[Harness | BatchHarness],
    context: EvalContext,
    *,
    json_path: Path,
    repos_dir: Path = REPOS_DIR,
    keep: bool = False,
    batch: BatchOptions | None = None,
    redo: bool = False,
) -> int:
    """Run the suite, printing each row as it comes and the totals at the end; keep the JSON current.

    The JSON file is rewritten after every row, so a run that dies part-way leaves what it did, and
    the same ``json_path`` again runs only what is missing: the peers' rows it holds are kept
    (``redo`` runs them again; nestor's batch resumes on its own files). ``batch`` says how
    nestor's batch runs (None: its files beside ``json_path``, one worker).

    Returns:
        The exit code: 0, 1 when a harness could not be prepared, 130 when interrupted.

    """
    names = [harness.name for harness in harnesses]
    columns = Columns.fitting([task.id for task in tasks], names)
    setting = describe_run(
        started=datetime.now(UTC),
        model_path=context.model_path,
        threads=context.threads,
        context_window=context.context_window,
        harness_names=names,
    )
    rows: list[Row] = []
    peers = {harness.name for harness in harnesses if not isinstance(harness, BatchHarness)}
    wanted = {task.id for task in tasks}
    done = [] if redo else [r for r in earlier_rows(json_path) if r.harness in peers and r.task_id in wanted]

    def save(*, interrupted: bool = False) -> None:
        write_report(json_path, report_document(setting, rows, interrupted=interrupted))

    def on_row(row: Row) -> None:
        if not rows:
            print(columns.header())
        rows.append(row)
        print(columns.row(row), flush=True)
        save()

    print(
        f"{len(tasks)} tasks x {len(harnesses)} harnesses; model {context.model_path.name}, "
        f"{context.threads} threads",
        file=sys.stderr,
    )
    try:
        json_path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        print(f"{_PROGRAM}: error: cannot write the results: {error}", file=sys.stderr)
        return EXIT_SETUP_FAILED
    try:
        run_suite(
            tasks,
            harnesses,
            context,
            repos_dir=repos_dir,
            keep=keep,
            batch=batch or BatchOptions(BatchFiles.beside(json_path)),
            on_row=on_row,
            notify=_notify,
            done=done,
        )
    except SetupError as error:
        print(f"{_PROGRAM}: error: {error}", file=sys.stderr)
        return EXIT_SETUP_FAILED
    except KeyboardInterrupt:
        print(f"\ninterrupted after {len(rows)} rows", file=sys.stderr)
        _print_totals(rows, names)
        save(interrupted=True)
        print(f"results: {json_path}", file=sys.stderr)
        return EXIT_INTERRUPTED
    _print_totals(rows, names)
    save()
    print(f"results: {json_path}", file=sys.stderr)
    return EXIT_OK


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog=_PROGRAM, description="Run nestor's eval suite and peer harnesses on the same tasks."
    )
    parser.add_argument(
        "--harness",
        action="append",
        metavar="NAMES",
        help=f"comma-separated harnesses to run (default: all of {', '.join(HARNESSES)})",
    )
    parser.add_argument(
        "--task",
        action="extend",
        nargs="+",
        default=[],
        metavar="SUBSTR",
        help="tasks whose id contains SUBSTR",
    )
    parser.add_argument(
        "--kind",
        action="extend",
        nargs="+",
        default=[],
        choices=KINDS,
        metavar="KIND",
        help="tasks of this kind",
    )
    parser.add_argument(
        "--per-kind",
        type=_positive_int,
        metavar="N",
        help="of the selected tasks, N of each kind, spread over the repositories (a quicker run)",
    )
    parser.add_argument(
        "--time-limit",
        type=_positive_int,
        metavar="S",
        help="every task's time limit at most S seconds, for every harness alike (default: each "
        "task's own, 600 s unless its file says otherwise)",
    )
    parser.add_argument(
        "--json",
        type=Path,
        metavar="PATH",
        help="where to write the results (default: evals/results/<UTC time>.json); nestor's batch "
        "files go beside it, in NAME.batch/: the same --json again resumes the run",
    )
    parser.add_argument(
        "--threads",
        type=_positive_int,
        default=os.cpu_count() or 1,
        metavar="N",
        help="CPU threads for the model",
    )
    parser.add_argument(
        "--workers",
        type=_positive_int,
        default=1,
        metavar="N",
        help="nestor's tasks at once (nestor batch --workers; default 1: the embedded model answers one "
        "request at a time, and more would share each task's seconds)",
    )
    parser.add_argument(
        "--redo",
        action="store_true",
        help="run every task again even if the --json run already has it (nestor's: nestor batch --redo)",
    )
    parser.add_argument(
        "--work-dir",
        type=Path,
        default=DEFAULT_WORK_DIR,
        metavar="DIR",
        help="harnesses' homes, venvs, logs, model",
    )
    parser.add_argument("--list", action="store_true", help="list the selected tasks and exit")
    parser.add_argument(
        "--keep",
        action="store_true",
        help="keep each task's workspace (nestor's: the fresh copy its job's patch was graded in)",
    )
    return parser


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected at least 1, got {value}")
    return value


def _selected_tasks(options: argparse.Namespace, tasks_dir: Path, repos_dir: Path) -> list[Task]:
    try:
        tasks = load_tasks(tasks_dir, repos_dir)
    except TaskFileError as error:
        raise UsageError(str(error)) from None
    selected = select_tasks(tasks, options.task, options.kind)
    if options.per_kind:
        selected = per_kind(selected, options.per_kind)
    if options.time_limit:
        selected = with_time_limit(selected, options.time_limit)
    if not selected:
        raise UsageError(f"no task matches (of {len(tasks)} in {tasks_dir}); --list shows them")
    return selected


def _harness_names(values: list[str] | None) -> list[str]:
    if not values:
        return list(HARNESSES)
    names = [name.strip() for value in values for name in value.split(",") if name.strip()]
    if unknown := [name for name in names if name not in HARNESSES]:
        raise UsageError(f"unknown harness {', '.join(unknown)}; known: {', '.join(HARNESSES)}")
    return list(dict.fromkeys(names))


def _print_tasks(tasks: Sequence[Task]) -> None:
    width = max(len(task.id) for task in tasks)
    for task in tasks:
        print(f"{task.id.ljust(width)}  {task.kind.ljust(8)}  {task.repo}: {task.prompt.splitlines()[0]}")


def _print_totals(rows: Sequence[Row], names: Sequence[str]) -> None:
    totals = summarize(rows, names)
    print()
    print(totals_table(totals))
    print()
    print(totals_markdown(totals))


def _notify(message: str) -> None:
    print(message, file=sys.stderr, flush=True)
