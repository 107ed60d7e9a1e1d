"""``nestor batch``: many agent jobs at once, on this machine or on a Ray cluster; ``batch report``."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from typer.core import TyperGroup

if TYPE_CHECKING:
    from nestor.app.batch.jobs import Job
    from nestor.app.batch.results import ResultsFile
    from nestor.app.batch.runner import Batch, Executor
    from nestor.cli.batch_view import LiveProgress, LogProgress
    from nestor.cli.options import CommonOptions
    from nestor.config.settings import Settings


class _RunByDefault(TyperGroup):
    """``nestor batch JOBS ...`` is ``nestor batch run JOBS ...``; ``report`` is the other command."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h"):
            args = ["run", *args]
        return super().parse_args(ctx, args)


app = typer.Typer(
    cls=_RunByDefault,
    help="Run many agent jobs at once: `nestor batch JOBS.jsonl -o RESULTS.jsonl` (see `nestor batch run "
    "--help`), and `nestor batch report RESULTS.jsonl`.",
    no_args_is_help=True,
)

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@app.command("run")
def run_batch(
    ctx: typer.Context,
    jobs_file: Annotated[
        Path,
        typer.Argument(
            metavar="JOBS",
            help='A JSON Lines file, one job a line: {"id", "repo" (a folder, relative to this file, '
            'or a git URL), "ref"?, "prompt" (or "prompts": a list asked in turn in one session), '
            '"agent"?, "model"?, "budget"?: {"max_iterations", "max_tokens", "max_time_s", '
            '"max_cost_usd"}, "setup"?: a shell command run first}.',
        ),
    ],
    output: Annotated[
        Path, typer.Option("--output", "-o", help="The results file: one JSON line per job, appended.")
    ],
    workers: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="Jobs at once (default: the cores, 1 on the embedded model; on Ray: its CPUs / --job-cpus).",
        ),
    ] = None,
    max_cost_usd: Annotated[
        float | None,
        typer.Option(
            min=0,
            help="Once the batch spent this, no job starts, and running ones stop before their next "
            "request (on Ray they run on).",
        ),
    ] = None,
    redo: Annotated[bool, typer.Option("--redo", help="Run the jobs RESULTS already holds again.")] = False,
    retry_failed: Annotated[
        bool, typer.Option("--retry-failed", help="Run the failed and erroneous jobs of RESULTS again.")
    ] = False,
    filter_: Annotated[
        str | None, typer.Option("--filter", help="Only the jobs whose id matches this regular expression.")
    ] = None,
    limit: Annotated[int | None, typer.Option(min=1, help="At most this many jobs.")] = None,
    keep: Annotated[
        bool, typer.Option("--keep", help="Keep each job's checkout (its path in the result).")
    ] = False,
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="A line per finished job, no live panel.")
    ] = False,
    model: Annotated[
        str | None, typer.Option("--model", "-m", help="The model of the jobs that name none.")
    ] = None,
    yolo: Annotated[
        bool,
        typer.Option(
            "--yolo", help="Allow the tool calls the rules leave to the user (not deny or ask rules)."
        ),
    ] = False,
    ray: Annotated[
        str | None,
        typer.Option(
            "--ray",
            metavar="ADDRESS",
            help="Run each job as a Ray task: `auto` (RAY_ADDRESS or a running cluster), `local` (start "
            "one here), or a cluster's address (needs `pip install 'nestor[ray]'`).",
        ),
    ] = None,
    job_cpus: Annotated[float, typer.Option(min=0, help="With --ray: CPUs each job reserves.")] = 1.0,
    job_memory_mb: Annotated[
        int | None, typer.Option(min=1, help="With --ray: memory (MiB) each job reserves.")
    ] = None,
) -> None:
    """Run every job of JOBS, each in its own checkout of its repository, and append its result to -o.

    Each job runs the agent tree of `nestor run` (headless: tool calls the rules leave to the user
    are denied unless --yolo) in a clone of its repository at its ref, removed afterwards unless
    --keep. A result line holds id, status (done, failed, stopped, cancelled, error), stop_reason,
    answer, patch (against the base commit), files_changed, usage, tokens, cost_usd, duration_s,
    attempts, session_id and session_export (RESULTS.sessions/ID.json); the session is in your
    store (`nestor sessions show ID --tree`). Run again with the same -o to resume: jobs already
    recorded are skipped (cancelled ones run again). Ctrl-C cancels the running jobs and records them.
    Exit codes: 0 every job done, 1 some job did not end done (or did not start: the batch's
    budget), 2 usage error, 130 stopped by Ctrl-C.
    """
    from nestor.app.batch.jobs import read_jobs, select_jobs
    from nestor.app.batch.report import read_summary
    from nestor.app.batch.results import ResultsFile, skipped_ids
    from nestor.cli.batch_view import print_summary

    common = _common(ctx, model=model, yolo=yolo)
    settings = common.load_settings()
    jobs = read_jobs(jobs_file)
    results = ResultsFile(output)
    skipped = skipped_ids(results.records(), redo=redo, retry_failed=retry_failed)
    chosen = select_jobs(jobs, skipped, pattern=filter_, limit=limit)
    left = len([job for job in jobs if job.id in skipped])
    if left:
        print(
            f"nestor: {left} jobs already in {output} are skipped (--redo runs them again)", file=sys.stderr
        )
    if not chosen:
        print("nestor: no job to run", file=sys.stderr)
        raise typer.Exit(0)
    stopped = asyncio.run(
        _run(
            chosen,
            results,
            settings,
            common,
            workers,
            max_cost_usd,
            keep,
            quiet,
            ray,
            job_cpus,
            job_memory_mb,
        )
    )
    summary = read_summary(output)
    print_summary(summary)
    ran = {job.id for job in chosen}
    ended = [record for record in summary.records if record["id"] in ran]
    if stopped:
        raise typer.Exit(130)
    every_one_done = len(ended) == len(ran) and all(record.get("status") == "done" for record in ended)
    raise typer.Exit(0 if every_one_done else 1)


@app.command("report")
def report(
    results: Annotated[Path, typer.Argument(metavar="RESULTS", help="A results file of `nestor batch`.")],
    export_preds: Annotated[
        Path | None,
        typer.Option(
            "--export-preds", help="Write SWE-bench's predictions (instance_id, model_patch) to this file."
        ),
    ] = None,
) -> None:
    """Print a results file's summary table again; --export-preds writes SWE-bench's predictions."""
    from nestor.app.batch.report import read_summary, write_predictions
    from nestor.cli.batch_view import print_summary
    from nestor.core.errors import NestorError

    if not results.is_file():
        raise NestorError(f"{results} is not a file", hint="give the -o file of a `nestor batch` run")
    summary = read_summary(results)
    print_summary(summary)
    if export_preds is not None:
        written = write_predictions(summary, export_preds)
        print(f"wrote {written} predictions to {export_preds}", file=sys.stderr)


def _common(ctx: typer.Context, **given: object) -> CommonOptions:
    from nestor.cli.options import CommonOptions

    root = ctx.find_root().obj
    return CommonOptions.merge(root if isinstance(root, CommonOptions) else None, **given)


def _default_workers(settings: Settings, model: str | None) -> int:
    """The cores here, but 1 on the embedded model, which runs one request at a time."""
    from nestor.config.sections import BUNDLED_LOCAL_MODEL

    large = model or (
        settings.models.large.model if settings.models.large is not None else BUNDLED_LOCAL_MODEL
    )
    return 1 if large.startswith("local:") else os.cpu_count() or 1


async def _run(
    jobs: list[Job],
    results: ResultsFile,
    settings: Settings,
    common: CommonOptions,
    workers: int | None,
    max_cost_usd: float | None,
    keep: bool,
    quiet: bool,
    ray: str | None,
    job_cpus: float,
    job_memory_mb: int | None,
) -> bool:
    """Run the batch with its display and Ctrl-C handling; whether a signal stopped it."""
    import tempfile

    from nestor.app.batch.checkout import Packer
    from nestor.app.batch.job import JobOptions
    from nestor.app.batch.runner import Batch, LocalExecutor, sessions_dir_for
    from nestor.cli.batch_view import LiveProgress, LogProgress

    model = common.model
    if ray is not None and model is None and settings.models.large is not None:
        model = settings.models.large.model  # a worker reads its own config: the driver's model goes along
    options = JobOptions(yolo=common.yolo, keep=keep, model=model)
    with tempfile.TemporaryDirectory(prefix="nestor-batch-") as temp:
        packer = Packer(Path(temp))
        executor: Executor
        import_into = None
        if ray is not None:
            from nestor.app.batch.ray_backend import RayExecutor

            on_ray = RayExecutor(
                ray, options, packer, cpus=job_cpus, memory_mb=job_memory_mb, settings=settings
            )
            capacity = on_ray.connect()
            executor, import_into = on_ray, settings.database_path
        else:
            executor = LocalExecutor(options, packer)
            capacity = _default_workers(settings, common.model)
        display: LiveProgress | LogProgress = (
            LogProgress() if quiet or not sys.stderr.isatty() else LiveProgress()
        )
        batch = Batch(
            jobs,
            results,
            executor,
            workers=workers or capacity,
            max_cost_usd=max_cost_usd,
            sessions_dir=sessions_dir_for(results.path),
            import_into=import_into,
            on_change=display.update,
        )
        return await _with_signals(batch, display)


async def _with_signals(batch: Batch, display: LiveProgress | LogProgress) -> bool:
    """Run the batch; a first Ctrl-C cancels the running jobs (recorded), a second stops at once."""
    received: list[int] = []
    running = asyncio.ensure_future(batch.run())

    def stop(signum: int) -> None:
        received.append(signum)
        if len(received) == 1:
            print("nestor: stopping: the running jobs are cancelled (Ctrl-C again: at once)", file=sys.stderr)
            batch.stop()
        else:  # jobs still running now are not recorded: the next run does them
            running.cancel()

    loop = asyncio.get_running_loop()
    for signum in STOP_SIGNALS:
        loop.add_signal_handler(signum, stop, signum)
    try:
        with display:
            state = await running
    except asyncio.CancelledError:
        return True
    finally:
        for signum in STOP_SIGNALS:
            loop.remove_signal_handler(signum)
    if state.budget_reached:
        print(
            "nestor: the batch's budget (--max-cost-usd) is spent; the jobs left did not start",
            file=sys.stderr,
        )
    return bool(received)
